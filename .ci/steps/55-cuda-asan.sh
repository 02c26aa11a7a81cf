#!/usr/bin/env bash
# The CUDA launch path under AddressSanitizer (and LeakSanitizer): Miri cannot follow a call
# into a C library, so the tests that drive the launcher into the emulated driver (the fault
# matrix, the emulator's faults and recovery, the launch tests, the declarations' four holes and
# the padded table of an unknown signature, the fenced launches with their flag's copies, the
# budget's stopped threads, the launch deadline) run
# with the launcher
# instrumented. The emulated driver itself is the ordinary build of 40-cuda.sh; its
# allocations go through the sanitizer's malloc all the same.
set -euo pipefail
NIGHTLY="${KARGS_NIGHTLY:-nightly-2026-05-20}"
rustup toolchain install "$NIGHTLY" --profile minimal --component rust-src
host="$(rustc -vV | sed -n 's/^host: //p')"

eval "$(scripts/cuda-link-stub.sh)"
eval "$(scripts/cuda-emulator.sh)"
export KARGS_CUDA_REQUIRE_DEVICE=1
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
# --target keeps the sanitizer off build scripts and proc macros.
RUSTFLAGS="-Zsanitizer=address" cargo "+$NIGHTLY" test -p kernel-args-integration --features cuda \
    --target "$host" --test fault_matrix --test emulator --test cuda --test declarations --test fence --test budget \
    --test deadline
