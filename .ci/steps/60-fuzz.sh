#!/usr/bin/env bash
# Fuzzing: build every cargo-fuzz target in fuzz/, run the fuzz crate's own unit tests (the
# input layout; the specification model's are the test kit's, run by 10-test.sh), replay each
# target's committed corpus, then fuzz each target for FUZZ_SECONDS (60 by default) from that
# corpus. A crash fails the step and is left in fuzz/artifacts/<target>/ (how to reproduce it:
# fuzz/README.md).
set -euo pipefail
NIGHTLY="${KARGS_NIGHTLY:-nightly-2026-05-20}"
CARGO_FUZZ_VERSION=0.13.2
FUZZ_SECONDS="${FUZZ_SECONDS:-60}"

rustup toolchain install "$NIGHTLY" --profile minimal --component rust-src
# libfuzzer-sys compiles libFuzzer from C++ source.
if ! command -v c++ >/dev/null; then
    apt-get update && apt-get install -y --no-install-recommends g++
fi
if [ "$(cargo fuzz --version 2>/dev/null || true)" != "cargo-fuzz $CARGO_FUZZ_VERSION" ]; then
    cargo "+$NIGHTLY" install cargo-fuzz --locked --version "$CARGO_FUZZ_VERSION"
fi

cd fuzz
fuzz() { cargo "+$NIGHTLY" fuzz "$@"; }
fuzz build
cargo "+$NIGHTLY" test --lib
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for target in $(fuzz list); do
    corpus="corpus/$target"
    if [ ! -d "$corpus" ] || [ -z "$(ls -A "$corpus")" ]; then
        echo "fuzz: $target has no committed corpus in fuzz/$corpus" >&2
        exit 1
    fi
    echo "fuzz: $target: replaying $(ls "$corpus" | wc -l) corpus files"
    fuzz run "$target" "$corpus" -- -runs=0 -timeout=10
    # New inputs go to a scratch directory; the committed corpus is only read.
    mkdir -p "$scratch/$target"
    echo "fuzz: $target: ${FUZZ_SECONDS}s"
    log="$scratch/$target.log"
    if ! fuzz run "$target" "$scratch/$target" "$corpus" -- \
        -max_total_time="$FUZZ_SECONDS" -timeout=10 -print_final_stats=1 >"$log" 2>&1; then
        tail -n 80 "$log"
        exit 1
    fi
    grep -E '^(stat::|#[0-9]+ *DONE)' "$log"
done
