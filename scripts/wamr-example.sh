#!/usr/bin/env bash
# The C API in WAMR (the WebAssembly Micro Runtime): WAMR runs the C vector_add guest, with
# wasi_cuda_launch checked by libkargs' kargs_host_call (capi/c/examples/wamr/; the binding is
# wamr_host.c, the rest is shared with the wasm3 host that docs/c-embedding.md walks through).
#
#   scripts/wamr-example.sh             # CI: .ci/steps/38-wamr.sh
#
# 1. Tools and the guest: `scripts/c-guest-check.sh --wasm-only` checks for gcc, g++, clang,
#    lld and clang's sanitizer runtimes (its step 1) and builds capi/c/examples/vector_add.c
#    for wasm32; cmake is needed too. What is missing is installed with apt-get only under
#    KARGS_INSTALL=1 (CI sets it); otherwise the script names the packages and stops.
# 2. WAMR's C sources: the crate wamrx-sys 0.3.0 (WAMR 2.4.3), pinned by
#    capi/c/examples/wamr/sources/Cargo.lock: `cargo fetch --locked` downloads it into Cargo's
#    registry, `cargo metadata` says where. Its wasm-micro-runtime/ tree is copied into the
#    target directory (WAMR's CMake build writes core/version.h into its source tree); never
#    built with cargo (its build script runs bindgen), nothing of it is committed.
# 3. libkargs: `cargo build -p kernel-args-capi --release` (target/release/libkargs.a and
#    libkargs.so), and the native libraries the static one needs, as rustc prints them.
# 4. WAMR's static library (the `vmlib` target of its own CMakeLists.txt, libiwasm.a) as an
#    embedder builds it: the fast interpreter alone (no AOT, no JIT), no libc-builtin or WASI
#    imports (the guest imports wasi_cuda_launch only), no SIMD (it would download SIMDe),
#    software bounds checks. Then the host (wamr_host.c, ../dry_run.c, runtime.c), the example
#    (../host.c) and the end-to-end checks (capi/c/tests/guest_e2e.c, the checks the wasm3 host
#    passes) with gcc -std=c99 -O2 -Wall -Wextra -Werror -pedantic, linked with
#    libkargs.a, and run: the example and every check must hold (exit status 0).
# 5. The same with AddressSanitizer and UBSan, no recovery: WAMR built with its own sanitizer
#    option (WAMR_BUILD_SANITIZER=asan,ubsan, which leaves out UBSan's `alignment` check), the
#    host's files with every check.
# 6. The checks linked with libkargs.so instead, and run.
#
# Shares target/ with the other steps (CARGO_TARGET_DIR is honoured); scratch files go to
# target/wamr-example/.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 0 ] || { echo "usage: $0" >&2; exit 2; }
target="${CARGO_TARGET_DIR:-target}"
mkdir -p "$target"
target="$(cd "$target" && pwd)"
out="$target/wamr-example"
rm -rf "$out"
mkdir -p "$out"
t_start=$(date +%s)
name=wamr
phase() { echo "$name: $*"; }
# shellcheck source=c-host-lib.sh
. scripts/c-host-lib.sh

# 1. Tools and the guest.
scripts/c-guest-check.sh --wasm-only "$out/guest"
guest="$out/guest/vector_add.wasm"
# shellcheck source=install.sh
. scripts/install.sh
command -v cmake >/dev/null || install_debian wamr cmake
phase "$(cmake --version | head -1)"
t_guest=$(date +%s)

# 2. WAMR's sources.
sources=capi/c/examples/wamr/sources/Cargo.toml
cargo fetch --locked --manifest-path "$sources"
crate="$(cargo metadata --format-version 1 --locked --offline --manifest-path "$sources" | python3 -c '
import json, os, sys
packages = [p for p in json.load(sys.stdin)["packages"] if p["name"] == "wamrx-sys"]
if len(packages) != 1:
    sys.exit("wamr: cargo metadata lists %d wamrx-sys packages, not 1" % len(packages))
print(os.path.dirname(packages[0]["manifest_path"]))
')"
[ -f "$crate/wasm-micro-runtime/core/iwasm/include/wasm_export.h" ] || {
    echo "wamr: no wasm-micro-runtime/core/iwasm/include/wasm_export.h in $crate" >&2
    exit 1
}
wamr="$out/wasm-micro-runtime"
cp -R "$crate/wasm-micro-runtime" "$wamr"
chmod -R u+w "$wamr"
version="$(sed -n 's/^set *(WAMR_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\))$/\2/p' \
    "$wamr/build-scripts/version.cmake" | paste -sd.)"
phase "WAMR $version, from $crate"
t_sources=$(date +%s)

# 3. libkargs.
build_libkargs
t_lib=$(date +%s)

# WAMR's configuration (step 4), then its libiwasm.a in $1 with the CMake options after it.
wamr_options=(
    -DCMAKE_BUILD_TYPE=Release -DWAMR_BUILD_PLATFORM=linux -DWAMR_BUILD_TARGET=X86_64
    -DWAMR_BUILD_INTERP=1 -DWAMR_BUILD_FAST_INTERP=1 -DWAMR_BUILD_AOT=0 -DWAMR_BUILD_JIT=0
    -DWAMR_BUILD_FAST_JIT=0 -DWAMR_BUILD_LIBC_BUILTIN=0 -DWAMR_BUILD_LIBC_WASI=0
    -DWAMR_BUILD_SIMD=0 -DWAMR_BUILD_LIB_SIMDE=0 -DWAMR_DISABLE_HW_BOUND_CHECK=1
)
build_wamr() {
    local dir="$1"; shift
    cmake -S "$wamr" -B "$dir/wamr" "${wamr_options[@]}" "$@" > "$dir/wamr-cmake.log" 2>&1 \
        || { cat "$dir/wamr-cmake.log" >&2; exit 1; }
    cmake --build "$dir/wamr" --target vmlib -j "$(nproc)" > "$dir/wamr-build.log" 2>&1 \
        || { tail -40 "$dir/wamr-build.log" >&2; exit 1; }
    [ -f "$dir/wamr/libiwasm.a" ] || { echo "wamr: no $dir/wamr/libiwasm.a" >&2; exit 1; }
}
warn=(-Wall -Wextra -Werror -pedantic)
# The host's files, into $1 with the flags after it. wasm_export.h as a system header: it is
# WAMR's, not held to -pedantic here.
compile_host() {
    local dir="$1"; shift
    local pids=() f failed=0 pid
    for f in capi/c/examples/wamr/{wamr_host,runtime}.c capi/c/examples/{host,dry_run}.c \
        capi/c/tests/guest_e2e.c; do
        gcc -std=c99 "${warn[@]}" "$@" -Iinclude -Icapi/c/examples -Icapi/c/examples/wamr \
            -Icapi/c/tests -isystem "$wamr/core/iwasm/include" -c "$f" \
            -o "$dir/$(basename "$f" .c).o" &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
    [ "$failed" = 0 ] || { echo "wamr: compiling into $dir failed" >&2; exit 1; }
}
# The objects of program $2 (host: the example; wamr_e2e: the checks) in directory $1.
objects() {
    local f program="$2"
    [ "$2" = wamr_e2e ] && program=guest_e2e
    for f in wamr_host runtime dry_run "$program"; do echo "$1/$f.o"; done
}
# WAMR's static library needs these (its platform layer: threads, clocks, mmap, dlopen).
wamr_libs=(-lpthread -lm -ldl)

# 4. -O2, static: the example, then the checks.
mkdir -p "$out/O2"
build_wamr "$out/O2"
compile_host "$out/O2" -O2
for program in host wamr_e2e; do
    mapfile -t objs < <(objects "$out/O2" "$program")
    gcc "${objs[@]}" "$out/O2/wamr/libiwasm.a" "$lib_dir/libkargs.a" "${native_libs[@]}" \
        "${wamr_libs[@]}" -o "$out/O2/$program"
done
phase "the example (gcc -O2, libkargs.a): $out/O2/host"
"$out/O2/host" "$guest" || { echo "wamr: the example failed" >&2; exit 1; }
phase "the checks (gcc -O2, libkargs.a): $out/O2/wamr_e2e"
run_host "$out/O2/wamr_e2e" all
t_run=$(date +%s)

# 5. Sanitized.
san=(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g -O1)
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" UBSAN_OPTIONS="print_stacktrace=1"
mkdir -p "$out/san"
build_wamr "$out/san" -DWAMR_BUILD_SANITIZER=asan,ubsan
compile_host "$out/san" "${san[@]}"
for program in host wamr_e2e; do
    mapfile -t objs < <(objects "$out/san" "$program")
    gcc "${san[@]}" "${objs[@]}" "$out/san/wamr/libiwasm.a" "$lib_dir/libkargs.a" \
        "${native_libs[@]}" "${wamr_libs[@]}" -o "$out/san/$program"
done
phase "the example and the checks under AddressSanitizer and UBSan (WAMR: all but alignment)"
"$out/san/host" "$guest" > "$out/san/host.log" 2>&1 || { cat "$out/san/host.log"; exit 1; }
tail -1 "$out/san/host.log"
run_host "$out/san/wamr_e2e" summary
t_san=$(date +%s)

# 6. libkargs.so.
mapfile -t objs < <(objects "$out/O2" wamr_e2e)
gcc "${objs[@]}" "$out/O2/wamr/libiwasm.a" -L"$lib_dir" -Wl,-rpath,"$lib_dir" -lkargs \
    "${wamr_libs[@]}" -o "$out/O2/wamr_e2e-shared"
expect_shared_libkargs "$out/O2/wamr_e2e-shared"
phase "the checks linked with libkargs.so"
run_host "$out/O2/wamr_e2e-shared" summary
t_end=$(date +%s)
phase "ok in $((t_end - t_start))s (tools and guest $((t_guest - t_start))s, sources" \
    "$((t_sources - t_guest))s, libkargs $((t_lib - t_sources))s, -O2 $((t_run - t_lib))s," \
    "sanitized $((t_san - t_run))s, shared $((t_end - t_san))s)"
