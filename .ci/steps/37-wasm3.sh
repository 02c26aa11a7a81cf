#!/usr/bin/env bash
# The C API in a C wasm runtime (capi/c/examples/wasm3/, docs/c-embedding.md): wasm3 0.4.7,
# compiled from the C sources in the crate wasm3-sys 0.3.0 (fetched with `cargo fetch --locked`
# from capi/c/examples/wasm3/sources/, never built with cargo, nothing committed), runs the C
# vector_add guest with a wasi_cuda_launch on libkargs' kargs_host_call: the example, then the
# end-to-end checks the wasmtime and wasmi hosts are held to (capi/c/tests/guest_e2e.c,
# mirroring demo/tests/guest_e2e.rs): with gcc -O2 and libkargs.a, under AddressSanitizer and UBSan
# (wasm3 itself without UBSan's alignment check, which it trips), and with libkargs.so.
# Installs gcc, clang, lld and clang's sanitizer runtimes with apt when missing, with the very
# lines 35-c-guest.sh runs (scripts/c-guest-check.sh --wasm-only: its step 1, then its wasm32
# build of the guest). Shares target/ with the other steps.
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/wasm3-example.sh
