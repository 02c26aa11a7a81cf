#!/usr/bin/env bash
# The C API in WAMR, the other C wasm runtime (capi/c/examples/wamr/): WAMR 2.4.3, built with
# its own CMake files from the sources in the crate wamrx-sys 0.3.0 (fetched with
# `cargo fetch --locked` from capi/c/examples/wamr/sources/, never built with cargo, nothing
# committed), runs the C vector_add guest with a wasi_cuda_launch on libkargs' kargs_host_call:
# the example, then the end-to-end checks the wasm3 host passes (capi/c/tests/guest_e2e.c):
# with gcc -O2 and libkargs.a, under AddressSanitizer and UBSan (WAMR with its own
# sanitizer option), and with libkargs.so. Installs cmake with apt when missing, and gcc, clang
# and lld with the lines 35-c-guest.sh runs. Shares target/ with the other steps.
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/wamr-example.sh
