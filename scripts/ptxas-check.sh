#!/usr/bin/env bash
# Assembles every fenced fixture module and kernel broken on purpose (cuda-backend/kernels/fenced/,
# which the rewriter's golden-file test holds equal to its output) and every unfenced one with NVIDIA's ptxas from
# CUDA 12.9, for sm_52 and for sm_90 (the H200): the fenced PTX is valid for real hardware.
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
[ "$count" -ge 56 ] || { echo "ptxas-check: only $count assemblies" >&2; exit 1; }
echo "ptxas-check: $count assemblies (fixtures and broken kernels, fenced and unfenced, sm_52 and sm_90)"
