#!/usr/bin/env bash
# Builds the link stub that lets `cargo build -p kernel-args-cuda --features cuda` build and
# link where CUDA is not installed, and prints the CUDA_LIBRARY_PATH to export.
#
#   eval "$(scripts/cuda-link-stub.sh)"        # sets CUDA_LIBRARY_PATH for this shell
#   scripts/cuda-link-stub.sh /some/dir        # builds into /some/dir/lib64/libcuda.so
#
# Default directory: ${CARGO_TARGET_DIR:-target}/cuda-link-stub. Needs a C compiler (cc).
# See scripts/cuda-link-stub.c for why the stub defines no driver function.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-${CARGO_TARGET_DIR:-$root/target}/cuda-link-stub}"
mkdir -p "$out/lib64"
out="$(cd "$out" && pwd)"
cc -shared -fPIC -O2 -Wl,-soname,libkernel_args_cuda_link_stub.so \
    -o "$out/lib64/libcuda.so" "$root/scripts/cuda-link-stub.c"
echo "export CUDA_LIBRARY_PATH=$out"
