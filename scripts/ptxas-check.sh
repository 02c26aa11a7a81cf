#!/usr/bin/env bash
# Assembles every PTX module of cuda-backend/kernels/ with NVIDIA's ptxas from CUDA 12.9, for
# sm_52 and for sm_90 (the H200): the fixtures, the kernels broken on purpose and the attack
# kernels as nvcc (or a hand) wrote them, and every one of them as the fence rewrote it
# (kernels/fenced/, which the rewriter's golden-file test holds equal to its output): the fenced
# PTX is valid for real hardware. Then NVIDIA's disassembler lists each fenced module's sm_90
# SASS and scripts/sass-check.py holds its memory instructions to the accesses the fence
# clamped, so what the hardware would run is checked, not only the PTX.
# Nothing runs on a GPU here; scripts/nvidia-tools.sh brings ptxas and nvdisasm.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
# shellcheck source=scripts/nvidia-tools.sh
. scripts/nvidia-tools.sh
ptxas="$PTXAS"
nvdisasm="$NVDISASM"
dir="$target/ptxas-check"
mkdir -p "$dir"
"$ptxas" --version | tail -1
"$nvdisasm" --version | tail -1
count=0
for ptx in cuda-backend/kernels/*.ptx cuda-backend/kernels/broken/*.ptx cuda-backend/kernels/attacks/*.ptx \
    cuda-backend/kernels/fenced/*.ptx cuda-backend/kernels/fenced/broken/*.ptx cuda-backend/kernels/fenced/attacks/*.ptx; do
    case "$ptx" in
        # Tensor cores: sm_70 and up.
        */wmma_load.ptx | */wmma_shared_overrun.ptx) archs="sm_90" ;;
        *) archs="sm_52 sm_90" ;;
    esac
    for arch in $archs; do
        "$ptxas" -arch="$arch" "$ptx" -o "$dir/check.cubin" 2>"$dir/check.log" || { cat "$dir/check.log"; exit 1; }
        count=$((count + 1))
    done
done
[ "$count" -ge 86 ] || { echo "ptxas-check: only $count assemblies" >&2; exit 1; }
echo "ptxas-check: $count assemblies (fixtures, broken and attack kernels, unfenced and fenced, sm_52 and sm_90)"
# The SASS of every fenced module, held to the fence's accesses.
checked=0
for ptx in cuda-backend/kernels/fenced/*.ptx cuda-backend/kernels/fenced/broken/*.ptx cuda-backend/kernels/fenced/attacks/*.ptx; do
    "$ptxas" -v -arch=sm_90 "$ptx" -o "$dir/sass.cubin" 2>"$dir/sass.log"
    "$nvdisasm" -c "$dir/sass.cubin" >"$dir/sass.txt" 2>/dev/null
    python3 scripts/sass-check.py "$ptx" "$dir/sass.cubin" "$dir/sass.log" "$dir/sass.txt"
    checked=$((checked + 1))
done
[ "$checked" -ge 22 ] || { echo "ptxas-check: only $checked fenced modules' SASS checked" >&2; exit 1; }
echo "ptxas-check: the SASS of $checked fenced modules holds no memory instruction the fence did not clamp"
# The check can fail: block_sum's SASS (shared accesses) held to vector_add's PTX (none).
"$ptxas" -v -arch=sm_90 cuda-backend/kernels/fenced/block_sum.ptx -o "$dir/sass.cubin" 2>"$dir/sass.log"
"$nvdisasm" -c "$dir/sass.cubin" 2>/dev/null | sed 's/\.text\.block_sum:/.text.vector_add:/' >"$dir/sass.txt" 2>/dev/null
if python3 scripts/sass-check.py cuda-backend/kernels/fenced/vector_add.ptx "$dir/sass.cubin" "$dir/sass.log" \
    "$dir/sass.txt" >/dev/null; then
    echo "ptxas-check: sass-check.py passed SASS with accesses the PTX does not have" >&2
    exit 1
fi
