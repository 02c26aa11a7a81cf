#!/usr/bin/env bash
# Regenerates the PTX fixtures in cuda-backend/kernels/ (and kernels/broken/, attacks/ and corpus/)
# from their .cu sources.
#
# Needs nvcc (Debian's nvidia-cuda-toolkit, non-free, has nvcc 11.8; it runs without a GPU).
# CI never runs this: the generated .ptx files are committed beside their sources, and the
# tests read them. compute_52 is nvcc 11.8's default virtual architecture; the driver JIT-compiles
# the PTX for whatever GPU it finds (any newer architecture included).
set -euo pipefail
cd "$(dirname "$0")/../cuda-backend/kernels"
# nvcc 11.8 takes gcc up to 11 as its host compiler (it preprocesses the source); Debian 12's
# gcc is 12, so clang 14 (which nvcc 11.8 takes) stands in where it is installed. The PTX is
# the same either way.
ccbin=()
if command -v clang-14 >/dev/null && ! gcc --version 2>/dev/null | grep -E ' ([5-9]|10|11)\.' >/dev/null; then
    ccbin=(-ccbin clang-14)
fi
# broken/: kernels wrong on purpose, which the fence's tests launch (integration/tests/fence_emulated.rs);
# attacks/: kernels hostile on purpose (the .cu ones; the .ptx files without a .cu beside them are
# written by hand). wmma_load and wmma_shared_overrun need tensor cores: compute_70.
# corpus/: kernels written the way CUDA users write them, compiled for the H200 (sm_90), as a
# CUDA project builds for its GPU; scripts/corpus-table.py measures the fence on them.
for cu in *.cu broken/*.cu attacks/*.cu corpus/*.cu; do
    arch=compute_52
    case "$cu" in
        attacks/wmma_load.cu | attacks/wmma_shared_overrun.cu) arch=compute_70 ;;
        corpus/*) arch=sm_90 ;;
    esac
    nvcc "${ccbin[@]}" --ptx -arch="$arch" -o "${cu%.cu}.ptx" "$cu"
    echo "${cu%.cu}.ptx <- $cu ($(nvcc --version | tail -1))"
done
