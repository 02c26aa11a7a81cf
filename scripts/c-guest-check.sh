#!/usr/bin/env bash
# C and C++ guests: checks include/kargs_guest.h natively and as a wasm guest on wasmtime and wasmi.
#
#   scripts/c-guest-check.sh            # everything (CI: .ci/steps/35-c-guest.sh)
#   scripts/c-guest-check.sh --no-cargo # the C checks only: no Rust build, no wasm runtime
#   scripts/c-guest-check.sh --wasm-only DIR  # step 1, then the C99 -O2 guest of step 5 into
#                                             # DIR/vector_add.wasm, nothing else (for
#                                             # scripts/wasm3-example.sh: the same tools, the
#                                             # same clang invocation)
#
# 1. Checks for clang, lld (wasm-ld), clang's sanitizer runtimes (libclang-rt-N-dev), gcc and
#    g++ (scripts/c-tools.sh); what is missing is installed with apt-get only under
#    KARGS_INSTALL=1 (CI sets it), otherwise the script names the packages and stops.
# 2. Generates the vectors table from tests/vectors/argv.json, std-adapter/src/error.rs and
#    core/src/limits.rs (capi/c/tests/gen_vectors.py; into $out, never committed).
# 3. capi/c/tests/vectors_test.c as C99 and as C++17, with gcc and with clang
#    (-Wall -Wextra -Werror -pedantic, AddressSanitizer + UBSan, no recovery): every accepted
#    vector encoded exactly, every refusal with nothing half-written.
# 4. capi/c/tests/freestanding.c: every function of the header compiled -ffreestanding
#    (gcc and clang, -O0 and -O2, C99 and C++17) references no symbol at all (no libc).
# 5. The C guest capi/c/examples/vector_add.c for wasm32-unknown-unknown, as C99 and as
#    C++17, at -O2 and -O0 (-nostdlib: wasm-ld refuses any undefined symbol), warnings as
#    errors.
# 6. demo/tests/guest_e2e.rs (the end-to-end expectations, for every runtime and every
#    guest) with the C build, the C++ build and the -O0 build as the C guest, each on the
#    wasmtime host and on the wasmi host (KARGS_REQUIRE_C_GUEST=1: a missing module fails
#    instead of skipping; the Rust guest runs beside it). It is built with the workspace's
#    features (wasmi among them, through kernel-args-demo), so it reuses 10-test's
#    build of wasmtime and wasmi in target/.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo_too=1
wasm_only=""
usage="usage: $0 [--no-cargo | --wasm-only DIR]"
case "${1:-}" in
    "") ;;
    --no-cargo) cargo_too=0 ;;
    --wasm-only) wasm_only="${2:?$usage}" ;;
    *) echo "$usage" >&2; exit 2 ;;
esac
root="$(pwd)"
target="${CARGO_TARGET_DIR:-target}"
mkdir -p "$target"
if [ -n "$wasm_only" ]; then
    # The caller's directory: created if missing, never emptied.
    mkdir -p "$wasm_only"
    out="$(cd "$wasm_only" && pwd)"
else
    out="$(cd "$target" && pwd)/c-guest"
    rm -rf "$out"
    mkdir -p "$out"
fi
t_start=$(date +%s)
phase() { echo "c-guest: $*"; }

# 1. Tools.
source scripts/c-tools.sh
c_tools c-guest "$out" lld
phase "$(gcc --version | head -1); $(clang --version | head -1); $(wasm-ld --version | head -1)"
t_tools=$(date +%s)

warn=(-Wall -Wextra -Werror -pedantic)
# The C guest for wasm32 (-nostdlib: wasm-ld refuses any undefined symbol), warnings as errors:
# step 5, and the whole of --wasm-only.
wasm=(--target=wasm32-unknown-unknown -nostdlib -ffreestanding "${warn[@]}" -Iinclude -Wl,--no-entry)
guest_c99_O2() { clang -std=c99 "${wasm[@]}" -O2 -o "$1" capi/c/examples/vector_add.c; }
if [ -n "$wasm_only" ]; then
    guest_c99_O2 "$out/vector_add.wasm"
    phase "guest: $out/vector_add.wasm, $(wc -c < "$out/vector_add.wasm") bytes (C99 -O2)"
    exit 0
fi

# 2. The generated table.
python3 capi/c/tests/gen_vectors.py "$out/kargs_vectors.h"

# 3. The vectors, natively: C99 and C++17, gcc and clang, sanitized.
san=(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g -O1)
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" UBSAN_OPTIONS="print_stacktrace=1"
for cc in gcc clang; do
    case "$cc" in gcc) cxx=g++ ;; clang) cxx=clang++ ;; esac
    for lang in c99 c++17; do
        case "$lang" in
            c99) compiler=("$cc" -std=c99) ;;
            c++17) compiler=("$cxx" -x c++ -std=c++17) ;;
        esac
        bin="$out/vectors_test-$cc-$lang"
        phase "vectors_test: ${compiler[*]}"
        "${compiler[@]}" "${warn[@]}" "${san[@]}" -Iinclude -I"$out" capi/c/tests/vectors_test.c -o "$bin"
        "$bin"
    done
done
t_native=$(date +%s)

# 4. Freestanding: no symbol from anywhere.
for cc in gcc clang; do
    case "$cc" in gcc) cxx=g++ ;; clang) cxx=clang++ ;; esac
    for opt in -O0 -O2; do
        for compiler in "$cc -std=c99" "$cxx -x c++ -std=c++17"; do
            # shellcheck disable=SC2086 # the compiler and its language flags, split on purpose
            $compiler "${warn[@]}" -ffreestanding -fno-builtin $opt -Iinclude -c \
                capi/c/tests/freestanding.c -o "$out/freestanding.o"
            undefined="$(nm -u "$out/freestanding.o")"
            if [ -n "$undefined" ]; then
                echo "c-guest: $compiler $opt: the header needs symbols: $undefined" >&2
                exit 1
            fi
        done
    done
done
phase "freestanding: gcc and clang, -O0 and -O2, C99 and C++17: no undefined symbols"

# 5. The C guest for wasm32 (C99 and C++17; -O0 too, where nothing is inlined).
guest_c99_O2 "$out/vector_add.wasm"
clang++ -x c++ -std=c++17 "${wasm[@]}" -O2 -o "$out/vector_add_cxx.wasm" capi/c/examples/vector_add.c
clang -std=c99 "${wasm[@]}" -O0 -o "$out/vector_add_O0.wasm" capi/c/examples/vector_add.c
phase "guest: $(wc -c < "$out/vector_add.wasm") bytes (C99 -O2), $(wc -c < "$out/vector_add_cxx.wasm") (C++17 -O2), $(wc -c < "$out/vector_add_O0.wasm") (C99 -O0)"
t_guest=$(date +%s)

# 6. On wasmtime and on wasmi.
if [ "$cargo_too" = 1 ]; then
    # The workspace's features (`--workspace`, as 10-test's `cargo test --workspace`), so that
    # every dependency is the build already in target/: only the test itself is compiled.
    cargo test --workspace --test guest_e2e --no-run
    for module in vector_add.wasm vector_add_cxx.wasm vector_add_O0.wasm; do
        phase "guest_e2e on wasmtime and wasmi: $module"
        log="$out/guest_e2e-$module.log"
        # One test at a time, so that the line each run prints (`case: <guest> on <runtime>`)
        # stays whole; the lines are kept in the log and counted, not shown.
        KARGS_C_GUEST_WASM="$out/$module" KARGS_REQUIRE_C_GUEST=1 \
            cargo test -q --workspace --test guest_e2e -- --nocapture --test-threads=1 2>&1 \
            | tee "$log" | { grep -v 'case: ' || true; }
        # Every runtime ran the C guest.
        runs=""
        for runtime in wasmtime wasmi; do
            count=$(grep "case: the C guest .* on $runtime\$" "$log" | grep -vc ' against ' || true)
            if [ "$count" = 0 ]; then
                echo "c-guest: $module did not run on $runtime" >&2
                exit 1
            fi
            runs="$runs${runs:+, }$count on $runtime"
        done
        phase "$module: runs of the C guest: $runs"
    done
else
    phase "--no-cargo: guest_e2e not run"
fi
t_end=$(date +%s)
phase "ok in $((t_end - t_start))s (tools $((t_tools - t_start))s, native $((t_native - t_tools))s," \
    "freestanding and guest $((t_guest - t_native))s, wasmtime and wasmi $((t_end - t_guest))s)"
