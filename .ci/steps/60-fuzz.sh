#!/usr/bin/env bash
# Fuzzing: build every cargo-fuzz target in fuzz/, run the fuzz crate's own unit tests (the
# input layout; the specification model's are the test kit's, run by 10-test.sh), replay each
# target's committed corpus, then fuzz each target for FUZZ_SECONDS (60 by default) from that
# corpus. Targets run FUZZ_JOBS at a time (2 by default: one a core on the 2-core CI machine;
# each fuzzer is one process), each with its own log, printed in target order. A crash fails the
# step and is left in fuzz/artifacts/<target>/ (how to reproduce it: fuzz/README.md).
set -euo pipefail
# The date fuzz/README.md's commands name; its setup and build lines run below as written
# (integration/tests/docs.rs holds the README to them).
NIGHTLY=nightly-2026-05-20
FUZZ_SECONDS="${FUZZ_SECONDS:-60}"
FUZZ_JOBS="${FUZZ_JOBS:-2}"

rustup toolchain install nightly-2026-05-20 --profile minimal --component rust-src
# libfuzzer-sys compiles libFuzzer from C++ source.
. scripts/install.sh
command -v c++ >/dev/null || install_debian fuzz g++
if [ "$(cargo fuzz --version 2>/dev/null || true)" != "cargo-fuzz 0.13.2" ]; then
    may_install_or_stop fuzz cargo-fuzz "cargo +$NIGHTLY install cargo-fuzz --locked --version 0.13.2"
    cargo +nightly-2026-05-20 install cargo-fuzz --locked --version 0.13.2
fi

cd fuzz
fuzz() { cargo "+$NIGHTLY" fuzz "$@"; }
cargo +nightly-2026-05-20 fuzz build
cargo "+$NIGHTLY" test --lib
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# One target: replay its corpus, then fuzz it. Everything it prints goes to $scratch/$1.log.
one() {
    local target="$1" corpus="corpus/$1"
    if [ ! -d "$corpus" ] || [ -z "$(ls -A "$corpus")" ]; then
        echo "fuzz: $target has no committed corpus in fuzz/$corpus"
        return 1
    fi
    echo "fuzz: $target: replaying $(ls "$corpus" | wc -l) corpus files"
    fuzz run "$target" "$corpus" -- -runs=0 -timeout=10 || return 1
    # New inputs go to a scratch directory; the committed corpus is only read.
    mkdir -p "$scratch/$target"
    echo "fuzz: $target: ${FUZZ_SECONDS}s"
    fuzz run "$target" "$scratch/$target" "$corpus" -- \
        -max_total_time="$FUZZ_SECONDS" -timeout=10 -print_final_stats=1
}
# The build is done, so the runs only start fuzzers (cargo-fuzz's build check takes cargo's
# lock briefly, then it runs the binary without it).
targets=$(fuzz list)
declare -A pid_of
for target in $targets; do
    while [ "$(jobs -rp | wc -l)" -ge "$FUZZ_JOBS" ]; do sleep 1; done
    one "$target" >"$scratch/$target.log" 2>&1 &
    pid_of[$target]=$!
done
failed=0
for target in $targets; do
    if wait "${pid_of[$target]}"; then
        grep -E '^(fuzz:|stat::|#[0-9]+[[:space:]]*DONE)' "$scratch/$target.log"
    else
        tail -n 80 "$scratch/$target.log"
        echo "fuzz: $target FAILED (log above)"
        failed=1
    fi
done
[ "$failed" = 0 ]
