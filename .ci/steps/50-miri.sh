#!/usr/bin/env bash
# Miri over the crates that hold the project's pointer handling: core (no unsafe, but it makes
# and offsets host pointers into guest memory), the CUDA backend's parameter storage (the
# module with its unsafe that Miri can reach), and the C
# API's exported functions (capi/src/ffi.rs), called from Rust with raw pointers by its tests
# (every conformance vector). Uses the dated nightly that also builds the fuzz targets.
#
# Miri interprets on one thread, so the C API's tests run beside the other two crates', on the
# second core, with a target directory of their own (cargo holds its lock on a target
# directory for the whole of `cargo miri test`). Each crate's output is printed whole.
set -euo pipefail
cd "$(dirname "$0")/../.."
NIGHTLY="${KARGS_NIGHTLY:-nightly-2026-05-20}"
rustup toolchain install "$NIGHTLY" --profile minimal --component miri,rust-src
cargo "+$NIGHTLY" miri setup
target="${CARGO_TARGET_DIR:-target}"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
miri() {
    local crate="$1" dir="$2" t0
    shift 2
    t0=$(date +%s)
    CARGO_TARGET_DIR="$dir" cargo "+$NIGHTLY" miri test -p "$crate" "$@" || return 1
    echo "miri: $crate $* in $(( $(date +%s) - t0 ))s"
}
miri kernel-args-capi "$target/miri-capi" > "$scratch/capi.log" 2>&1 &
capi=$!
miri kernel-args-core "$target"
# The CUDA backend's unsafe is in storage.rs (its tests and its doctest run here) and driver/
# (whose tests need the cuda feature and a driver library, which Miri cannot call). The rest of
# the crate (the fence, the registry, the signature reader) is safe code that 10-test runs
# natively; under Miri the whole crate took 1165 s of this step's 1786 s on the 2-core machine.
miri kernel-args-cuda "$target" --lib -- storage::
miri kernel-args-cuda "$target" --doc -- storage
# The zero-allocation tests of the core and of the parameter storage (the latter's counting
# allocator is the crate's one `unsafe`); a few argvs each under Miri.
miri kernel-args-perf "$target" --test alloc_core --test alloc_cuda
if wait "$capi"; then
    cat "$scratch/capi.log"
else
    cat "$scratch/capi.log"
    echo "miri: kernel-args-capi FAILED (log above)" >&2
    exit 1
fi
