#!/usr/bin/env bash
# The C API (capi/, package kernel-args-capi, library `kargs`; header include/kargs.h).
#
#   scripts/capi-check.sh          # regenerate include/kargs.h, then every check below
#   scripts/capi-check.sh --check  # the same, but fail when the committed include/kargs.h is
#                                  # not what cbindgen makes now (CI: .ci/steps/36-capi.sh)
#
# 1. Checks for gcc, g++, clang and clang's sanitizer runtimes (scripts/c-tools.sh, shared
#    with scripts/c-guest-check.sh) and cbindgen $CBINDGEN_VERSION; what is missing is
#    installed (apt-get, cargo install) only under KARGS_INSTALL=1 (CI sets it), otherwise the
#    script names it and stops.
# 2. The header: cbindgen (capi/cbindgen.toml) into the scratch directory; written to
#    include/kargs.h, or with --check compared with it.
# 3. The host libraries: `cargo build -p kernel-args-capi --release` gives target/release/
#    libkargs.a and libkargs.so; the native libraries a static link needs, from rustc
#    (--print native-static-libs).
# 4. thumbv7em-none-eabihf: the static library, with `cargo rustc --crate-type staticlib`
#    (`cargo build` works too, but warns that it drops the cdylib, which that target cannot
#    have); its code size: the C API's functions linked with --gc-sections by rust-lld.
# 5. capi/c/tests/capi_vectors.c (its table from capi/examples/c_vectors.rs, generated into the
#    scratch directory, never committed) and capi/c/tests/host_call_test.c (declarations and the
#    host call) as C99 with gcc and clang, -Wall -Wextra -Werror -pedantic, AddressSanitizer +
#    UBSan without recovery, linked with libkargs.a; capi_vectors once more with gcc against
#    libkargs.so. The header alone as C++17 with g++ and clang++, and
#    kargs_guest.h included before kargs.h (capi_vectors.c includes them the other way round).
#
# Shares target/ with the other steps (CARGO_TARGET_DIR is honoured); scratch files go to
# target/capi-check/.
set -euo pipefail
cd "$(dirname "$0")/.."
CBINDGEN_VERSION=0.29.4
check=0
case "${1:-}" in
    "") ;;
    --check) check=1 ;;
    *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac
target="${CARGO_TARGET_DIR:-target}"
mkdir -p "$target"
target="$(cd "$target" && pwd)"
out="$target/capi-check"
rm -rf "$out"
mkdir -p "$out"
t_start=$(date +%s)
phase() { echo "capi: $*"; }

# 1. Tools.
source scripts/c-tools.sh
c_tools capi "$out"
if [ "$(cbindgen --version 2>/dev/null || true)" != "cbindgen $CBINDGEN_VERSION" ]; then
    install_cargo_tool capi cbindgen --locked --version "$CBINDGEN_VERSION"
fi
phase "$(gcc --version | head -1); $(clang --version | head -1); $(cbindgen --version)"
t_tools=$(date +%s)

# 2. The header.
cbindgen --quiet --config capi/cbindgen.toml --crate kernel-args-capi --output "$out/kargs.h" capi
if [ "$check" = 1 ]; then
    if ! diff -u include/kargs.h "$out/kargs.h" > "$out/kargs.h.diff"; then
        cat "$out/kargs.h.diff" >&2
        echo "capi: include/kargs.h is out of date: cbindgen makes the file above from capi/ (diff:" >&2
        echo "capi: committed -> generated). Run scripts/capi-check.sh (without --check) and commit" >&2
        echo "capi: include/kargs.h." >&2
        exit 1
    fi
    phase "include/kargs.h is what cbindgen $CBINDGEN_VERSION makes from capi/"
else
    cp "$out/kargs.h" include/kargs.h
    phase "wrote include/kargs.h ($(wc -l < include/kargs.h) lines)"
fi

# 3. The host libraries.
cargo build -p kernel-args-capi --release
host_dir="$target/release"
for lib in libkargs.a libkargs.so; do
    [ -f "$host_dir/$lib" ] || { echo "capi: cargo build did not make $host_dir/$lib" >&2; exit 1; }
done
# What a static link needs besides libkargs.a, as rustc says (-lgcc_s -lutil ... on Linux).
cargo rustc -q -p kernel-args-capi --release --crate-type staticlib -- --print native-static-libs \
    2> "$out/native-static-libs.log" || { cat "$out/native-static-libs.log" >&2; exit 1; }
read -r -a native_libs <<< "$(sed -n 's/^note: native-static-libs: //p' "$out/native-static-libs.log" | tail -1)"
if [ ${#native_libs[@]} -eq 0 ]; then
    echo "capi: rustc printed no native-static-libs" >&2
    cat "$out/native-static-libs.log" >&2
    exit 1
fi
exports="$(nm -D --defined-only "$host_dir/libkargs.so" | awk '$2 == "T" { print $3 }' | sort | xargs)"
phase "host: libkargs.a $(wc -c < "$host_dir/libkargs.a") bytes, libkargs.so $(wc -c < "$host_dir/libkargs.so") bytes" \
    "(exports: $exports); link the .a with: ${native_libs[*]}"
t_host=$(date +%s)

# 4. thumbv7em-none-eabihf.
cargo rustc -p kernel-args-capi --release --target thumbv7em-none-eabihf --crate-type staticlib
arm_lib="$target/thumbv7em-none-eabihf/release/libkargs.a"
tools="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin"
if [ -x "$tools/rust-lld" ] && [ -x "$tools/llvm-size" ]; then
    # The code a firmware pays: the functions linked from the archive with --gc-sections, the
    # whole API and kargs_parse alone (no message formatting).
    all=(-e kargs_parse -u kargs_error_message -u kargs_check_args_region -u kargs_check_launch_shape
         -u kargs_abi_error_name -u kargs_error_kind_name -u kargs_declaration_parse
         -u kargs_declaration_check -u kargs_host_call)
    "$tools/rust-lld" -flavor gnu --gc-sections "${all[@]}" -o "$out/kargs-all.elf" "$arm_lib"
    "$tools/rust-lld" -flavor gnu --gc-sections -e kargs_parse -o "$out/kargs-parse.elf" "$arm_lib"
    sizes() { "$tools/llvm-size" -A "$1" | awk '$1 == ".text" { t = $2 } $1 == ".rodata" { r = $2 }
        END { printf ".text %d + .rodata %d bytes", t, r }'; }
    phase "thumbv7em: libkargs.a $(wc -c < "$arm_lib") bytes; linked: all nine functions $(sizes "$out/kargs-all.elf")," \
        "kargs_parse alone $(sizes "$out/kargs-parse.elf")"
else
    phase "thumbv7em: libkargs.a $(wc -c < "$arm_lib") bytes (no rust-lld/llvm-size: rustup component add llvm-tools for the linked sizes)"
fi
t_arm=$(date +%s)

# 5. The C tests.
cargo run -q -p kernel-args-capi --example c_vectors -- "$out/capi_vectors.h"
warn=(-Wall -Wextra -Werror -pedantic)
san=(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g -O1)
# include/kargs.h: the committed header (--check has just shown it is the generated one).
inc=(-Iinclude -I"$out")
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" UBSAN_OPTIONS="print_stacktrace=1"
for cc in gcc clang; do
    for test in capi_vectors host_call_test; do
        bin="$out/$test-$cc"
        phase "$test: $cc -std=c99, AddressSanitizer + UBSan, libkargs.a"
        "$cc" -std=c99 "${warn[@]}" "${san[@]}" "${inc[@]}" "capi/c/tests/$test.c" \
            "$host_dir/libkargs.a" "${native_libs[@]}" -o "$bin"
        "$bin"
    done
done
phase "capi_vectors: gcc -std=c99, AddressSanitizer + UBSan, libkargs.so"
gcc -std=c99 "${warn[@]}" "${san[@]}" "${inc[@]}" capi/c/tests/capi_vectors.c \
    -L"$host_dir" -Wl,-rpath,"$host_dir" -lkargs -o "$out/capi_vectors-shared"
# (ldd's whole output first: `ldd | grep -q` can fail under pipefail when grep stops early.)
loaded="$(ldd "$out/capi_vectors-shared")"
if ! grep -qF "$host_dir/libkargs.so" <<< "$loaded"; then
    echo "capi: capi_vectors-shared does not load $host_dir/libkargs.so" >&2
    exit 1
fi
"$out/capi_vectors-shared" | tail -1
# The header as C++ (its own extern "C" and enum forms), and both headers in the other order.
for cxx in g++ clang++; do
    printf '#include "kargs.h"\n#include "kargs_guest.h"\nint main() { return kargs_abi_error_name(KARGS_ABI_OK)[0] != 79; }\n' \
        | "$cxx" -x c++ -std=c++17 "${warn[@]}" -Iinclude -fsyntax-only -
done
for cc in gcc clang; do
    printf '#include "kargs_guest.h"\n#include "kargs.h"\nint main(void) { return KARGS_MAX_KERNEL_ARGS != 128u; }\n' \
        | "$cc" -x c -std=c99 "${warn[@]}" -Iinclude -fsyntax-only -
done
phase "kargs.h as C++17 (g++, clang++) and after kargs_guest.h (gcc, clang): no warning"
t_end=$(date +%s)
phase "ok in $((t_end - t_start))s (tools $((t_tools - t_start))s, header and host $((t_host - t_tools))s," \
    "thumbv7em $((t_arm - t_host))s, C tests $((t_end - t_arm))s)"
