#!/usr/bin/env bash
# Builds the emulated CUDA driver (cuda-emulator/) and prints the KARGS_CUDA_DRIVER to export:
#
#   eval "$(scripts/cuda-emulator.sh)"   # then the CUDA tests and `kargs-demo` use it
#
# Three libraries are built into ${CARGO_TARGET_DIR:-target}/debug: libkargs_emulated_cuda.so
# (a CUDA 12.8 driver, the one exported: cuFuncGetParamInfo without cuFuncGetParamCount, as GPU
# machines' drivers are), and beside it libkargs_emulated_cuda_13_2.so (13.2: both) and
# libkargs_emulated_cuda_12_2.so (12.2: neither), which the tests find next to the first; export
# KARGS_CUDA_DRIVER as one of those to run the launch tests against it. The device is
# a CPU that interprets the kernels' PTX; its name says so. Nothing it reports is a GPU's result.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
cargo build -q -p kernel-args-cuda-emulator-driver -p kernel-args-cuda-emulator-driver-12-2 \
    -p kernel-args-cuda-emulator-driver-13-2 >&2
target="${CARGO_TARGET_DIR:-$root/target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac
echo "export KARGS_CUDA_DRIVER=$target/debug/libkargs_emulated_cuda.so"
