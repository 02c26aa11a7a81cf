#!/usr/bin/env bash
# The C API in a C wasm runtime: wasm3 runs the C vector_add guest, with wasi_cuda_launch checked
# by libkargs' kargs_host_call (capi/c/examples/wasm3/; docs/c-embedding.md walks through it).
#
#   scripts/wasm3-example.sh            # CI: .ci/steps/37-wasm3.sh
#
# 1. Tools and the guest: `scripts/c-guest-check.sh --wasm-only` checks for gcc, g++, clang,
#    lld and clang's sanitizer runtimes (its step 1; installed only under KARGS_INSTALL=1) and builds
#    capi/c/examples/vector_add.c for wasm32 with the clang invocation of its step 5.
# 2. wasm3's C sources: the crate wasm3-sys 0.3.0 (wasm3 0.4.7), pinned by
#    capi/c/examples/wasm3/sources/Cargo.lock: `cargo fetch --locked` downloads it into Cargo's
#    registry, `cargo metadata` says where. Never built with cargo (its build script runs
#    bindgen); nothing of it is committed.
# 3. libkargs: `cargo build -p kernel-args-capi --release` (target/release/libkargs.a and
#    libkargs.so), and the native libraries the static one needs, as rustc prints them.
# 4. wasm3's core (source/m3_*.c without the WASI, uvwasi, libc and tracer bindings, which this
#    host does not use), the host (wasm3_host.c and ../dry_run.c on kargs_host_call, m3_call.c,
#    runtime.c), the example (../host.c) and the end-to-end checks (capi/c/tests/guest_e2e.c)
#    with gcc -std=c99 -O2,
#    linked with libkargs.a, and run: the example and every check must hold (exit status 0).
# 5. The same with gcc's AddressSanitizer and UBSan, no recovery: the host's files with every
#    check; wasm3's with every check but UBSan's `alignment`, which wasm3 0.4.7 itself trips
#    (m3_compile.c reads 8-byte constants at 4-byte-aligned addresses of its code stream).
# 6. The checks linked with libkargs.so instead, and run.
#
# Shares target/ with the other steps (CARGO_TARGET_DIR is honoured); scratch files go to
# target/wasm3-example/.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 0 ] || { echo "usage: $0" >&2; exit 2; }
target="${CARGO_TARGET_DIR:-target}"
mkdir -p "$target"
target="$(cd "$target" && pwd)"
out="$target/wasm3-example"
rm -rf "$out"
mkdir -p "$out"
t_start=$(date +%s)
name=wasm3
phase() { echo "$name: $*"; }
# shellcheck source=c-host-lib.sh
. scripts/c-host-lib.sh

# 1. Tools and the guest.
scripts/c-guest-check.sh --wasm-only "$out/guest"
guest="$out/guest/vector_add.wasm"
t_guest=$(date +%s)

# 2. wasm3's sources.
sources=capi/c/examples/wasm3/sources/Cargo.toml
cargo fetch --locked --manifest-path "$sources"
wasm3="$(cargo metadata --format-version 1 --locked --offline --manifest-path "$sources" | python3 -c '
import json, os, sys
packages = [p for p in json.load(sys.stdin)["packages"] if p["name"] == "wasm3-sys"]
if len(packages) != 1:
    sys.exit("wasm3: cargo metadata lists %d wasm3-sys packages, not 1" % len(packages))
print(os.path.join(os.path.dirname(packages[0]["manifest_path"]), "wasm3", "source"))
')"
[ -f "$wasm3/wasm3.h" ] || { echo "wasm3: no wasm3.h in $wasm3" >&2; exit 1; }
# (wasm3's files have CRLF line ends.)
version="$(tr -d '\r' < "$wasm3/wasm3.h" | sed -n 's/^#define M3_VERSION  *"\(.*\)"$/\1/p')"
phase "wasm3 $version, from $wasm3"
# The interpreter: wasm3's CMakeLists.txt list less the API bindings (m3_api_*.c).
core=(m3_bind m3_code m3_compile m3_core m3_emit m3_env m3_exec m3_info m3_module m3_parse)
t_sources=$(date +%s)

# 3. libkargs.
build_libkargs
t_lib=$(date +%s)

# wasm3's defines, for wasm3 and for m3_call.c (which reads its structs): no log output (else
# m3_CallWithArgs prints every result to stderr, as wasm3-sys's build also turns off); the rest
# are m3_config.h's defaults, as wasm3's own CMake build leaves them.
defines=(-Dd_m3LogOutput=0)
warn=(-Wall -Wextra -Werror -pedantic)
# Compiles wasm3's core and the host into $1 with the flags after it (wasm3's own flags, then
# `--`, then the host's extra flags); every compiler runs in the background, all must succeed.
compile() {
    local dir="$1"; shift
    local wasm3_flags=() host_flags=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do wasm3_flags+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    host_flags=("$@")
    mkdir -p "$dir"
    local pids=() f
    for f in "${core[@]}"; do
        gcc -std=c99 "${defines[@]}" "${wasm3_flags[@]}" -I"$wasm3" -c "$wasm3/$f.c" -o "$dir/$f.o" &
        pids+=($!)
    done
    # The host: kargs.h and wasm3.h, wasm3's headers as system headers (its internal ones, which
    # m3_call.c includes, are not -pedantic clean).
    for f in capi/c/examples/wasm3/{wasm3_host,m3_call,runtime}.c \
        capi/c/examples/{host,dry_run}.c capi/c/tests/guest_e2e.c; do
        gcc -std=c99 "${defines[@]}" "${warn[@]}" "${host_flags[@]}" -Iinclude -Icapi/c/examples \
            -Icapi/c/examples/wasm3 -Icapi/c/tests -isystem "$wasm3" -c "$f" \
            -o "$dir/$(basename "$f" .c).o" &
        pids+=($!)
    done
    local failed=0 pid
    for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
    [ "$failed" = 0 ] || { echo "wasm3: compiling into $dir failed" >&2; exit 1; }
}
# The objects of program $2 (host: the example; wasm3_e2e: the checks, guest_e2e.c) in
# directory $1.
objects() {
    local f program="$2"
    [ "$2" = wasm3_e2e ] && program=guest_e2e
    for f in "${core[@]}" wasm3_host m3_call runtime dry_run "$program"; do echo "$1/$f.o"; done
}

# 4. -O2, static: the example, then the checks.
compile "$out/O2" -O2 -- -O2
for program in host wasm3_e2e; do
    mapfile -t objs < <(objects "$out/O2" "$program")
    gcc "${objs[@]}" "$lib_dir/libkargs.a" "${native_libs[@]}" -o "$out/O2/$program"
done
phase "the example (gcc -O2, libkargs.a): $out/O2/host"
"$out/O2/host" "$guest" || { echo "wasm3: the example failed" >&2; exit 1; }
phase "the checks (gcc -O2, libkargs.a): $out/O2/wasm3_e2e"
run_host "$out/O2/wasm3_e2e" all
t_run=$(date +%s)

# 5. Sanitized.
san=(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g -O1)
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" UBSAN_OPTIONS="print_stacktrace=1"
compile "$out/san" "${san[@]}" -fno-sanitize=alignment -- "${san[@]}"
for program in host wasm3_e2e; do
    mapfile -t objs < <(objects "$out/san" "$program")
    gcc "${san[@]}" "${objs[@]}" "$lib_dir/libkargs.a" "${native_libs[@]}" -o "$out/san/$program"
done
phase "the example and the checks under AddressSanitizer and UBSan (wasm3: all but alignment)"
"$out/san/host" "$guest" > "$out/san/host.log" 2>&1 || { cat "$out/san/host.log"; exit 1; }
tail -1 "$out/san/host.log"
run_host "$out/san/wasm3_e2e" summary
t_san=$(date +%s)

# 6. libkargs.so.
mapfile -t objs < <(objects "$out/O2" wasm3_e2e)
gcc "${objs[@]}" -L"$lib_dir" -Wl,-rpath,"$lib_dir" -lkargs -lm -o "$out/O2/wasm3_e2e-shared"
expect_shared_libkargs "$out/O2/wasm3_e2e-shared"
phase "the checks linked with libkargs.so"
run_host "$out/O2/wasm3_e2e-shared" summary
t_end=$(date +%s)
phase "ok in $((t_end - t_start))s (tools and guest $((t_guest - t_start))s, sources" \
    "$((t_sources - t_guest))s, libkargs $((t_lib - t_sources))s, -O2 $((t_run - t_lib))s," \
    "sanitized $((t_san - t_run))s, shared $((t_end - t_san))s)"
