#!/usr/bin/env bash
# Assembles every fenced fixture module and kernel broken on purpose (cuda-backend/kernels/fenced/,
# which the rewriter's golden-file test holds equal to its output), every unfenced one, and each
# fixture as KernelRegistry::register fences it with its declaration (the bounds proofs; made
# here by the `fence` example) with NVIDIA's ptxas from CUDA 12.9, for sm_52 and for sm_90 (the
# H200): the fenced PTX is valid for real hardware.
# Nothing runs on a GPU here. ptxas comes from the pinned PyPI wheel nvidia-cuda-nvcc-cu12
# (40 MB), unpacked into the target directory once; no CUDA install is needed.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
version=12.9.86
dir="$target/ptxas-$version"
ptxas="$dir/nvidia/cuda_nvcc/bin/ptxas"
if [ ! -x "$ptxas" ]; then
    rm -rf "$dir"
    python3 -m pip download --no-deps --only-binary=:all: -q -d "$dir/wheel" "nvidia-cuda-nvcc-cu12==$version"
    python3 -m zipfile -e "$dir"/wheel/*.whl "$dir"
    chmod +x "$ptxas"
fi
"$ptxas" --version | tail -1
count=0
for ptx in cuda-backend/kernels/*.ptx cuda-backend/kernels/fenced/*.ptx \
    cuda-backend/kernels/broken/*.ptx cuda-backend/kernels/fenced/broken/*.ptx; do
    for arch in sm_52 sm_90; do
        "$ptxas" -arch="$arch" "$ptx" -o "$dir/check.cubin"
        count=$((count + 1))
    done
done
# The fixtures as registered: each with its declaration (integration/tests/fence.rs has the same).
while IFS='|' read -r file entry declaration; do
    cargo run -q -p kernel-args-cuda --example fence -- "cuda-backend/kernels/$file" "$entry" "$declaration" \
        > "$dir/declared-$file"
    for arch in sm_52 sm_90; do
        "$ptxas" -arch="$arch" "$dir/declared-$file" -o "$dir/check.cubin"
        count=$((count + 1))
    done
done <<'FIXTURES'
vector_add.ptx|vector_add|vector_add(a: &[f32; n], b: &[f32; n], out: &mut [f32; n], n: u32)
grid_stride.ptx|saxpy_grid_stride|saxpy(a: f32, x: &[f32; n], y: &mut [f32; n], n: u32)
block_sum.ptx|block_sum|block_sum(input: &[f32; n], out: &mut [f32; grid.x], n: u32)
transpose.ptx|transpose|transpose(input: &[f32; rows * cols], out: &mut [f32; rows * cols], rows: u32, cols: u32)
histogram.ptx|histogram|histogram(data: &[u8; n], bins: &mut [u32; 256], n: u32)
local_array.ptx|local_array|local_array(idx: &[i32; block.x], out: &mut [f32; block.x])
FIXTURES
[ "$count" -ge 68 ] || { echo "ptxas-check: only $count assemblies" >&2; exit 1; }
echo "ptxas-check: $count assemblies (fixtures and broken kernels, fenced and unfenced, and the fixtures as registered, sm_52 and sm_90)"
