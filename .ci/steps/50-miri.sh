#!/usr/bin/env bash
# Miri over the crates that hold the project's pointer handling: core (no unsafe, but it makes
# and offsets host pointers into guest memory), the CUDA backend's parameter storage, and the C
# API's exported functions (capi/src/ffi.rs), called from Rust with raw pointers by its tests
# (every conformance vector; about 4 minutes under Miri). Uses the dated nightly that also
# builds the fuzz targets.
set -euo pipefail
NIGHTLY="${KARGS_NIGHTLY:-nightly-2026-05-20}"
rustup toolchain install "$NIGHTLY" --profile minimal --component miri,rust-src
cargo "+$NIGHTLY" miri setup
for crate in kernel-args-core kernel-args-cuda kernel-args-capi; do
    t0=$(date +%s)
    cargo "+$NIGHTLY" miri test -p "$crate"
    echo "miri: $crate in $(( $(date +%s) - t0 ))s"
done
