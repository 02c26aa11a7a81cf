#!/usr/bin/env bash
# C and C++ guests (include/kargs_guest.h): the header against every conformance vector as C99
# and C++17 with gcc and clang under AddressSanitizer and UBSan, freestanding, and the C
# vector_add guest (capi/c/examples/vector_add.c) built for wasm32 and run on the wasmtime host
# and on the wasmi host with the Rust guest's end-to-end expectations
# (demo/tests/guest_e2e.rs, KARGS_REQUIRE_C_GUEST=1: it must not skip; the script checks
# that both runtimes ran it). Installs clang, lld and clang's sanitizer runtimes with apt when
# missing. Shares target/ with 10-test.sh: the e2e test is built with the workspace's features,
# so neither runtime is compiled again; only the test itself is.
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/c-guest-check.sh

# README.md's C guest lines as written ("C guests"): the guest into target/, then the end-to-end
# tests with it (everything is built already: only the tests run).
mkdir -p target
clang --target=wasm32-unknown-unknown -nostdlib -ffreestanding -O2 -Iinclude -Wl,--no-entry \
      -o target/vector_add.wasm capi/c/examples/vector_add.c
KARGS_C_GUEST_WASM=$PWD/target/vector_add.wasm cargo test --workspace --test guest_e2e
