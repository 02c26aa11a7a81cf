#!/usr/bin/env bash
# Code size of core's parser on a microcontroller: thumbv7em-none-eabihf, release,
# opt-level = "z", fat LTO, panic = "abort".
#
# Builds a throwaway no_std staticlib (under $CARGO_TARGET_DIR/parser-size, never committed)
# whose only export is `kargs_parse`: parse_argv_into::<N> over a shared guest memory,
# answering 0 or the ABI error code. With fat LTO the Rust code of the library is one object
# holding exactly what `kargs_parse` reaches; its .text is the parser's code size. Reports
# the size for N = 128 and N = 16 and the symbols, and fails when the parser exceeds the
# budget (8 KiB) or reaches a panic path (any `panic`/`fmt` symbol).
#
# Needs llvm-size/llvm-nm (Debian: llvm) or arm-none-eabi-size/-nm (binutils-arm-none-eabi).
# Usage: scripts/parser-size.sh
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$repo/target}"
work="$target/parser-size"
budget=8192
if command -v llvm-size >/dev/null; then size=llvm-size; nm=llvm-nm
elif command -v arm-none-eabi-size >/dev/null; then size=arm-none-eabi-size; nm=arm-none-eabi-nm
else echo "parser-size: need llvm-size or arm-none-eabi-size" >&2; exit 2; fi

mkdir -p "$work/src"
cat > "$work/Cargo.toml" <<TOML
[package]
name = "kargs-parser-size"
version = "0.0.0"
edition = "2024"
publish = false

[lib]
crate-type = ["staticlib"]

[features]
n16 = []

[dependencies]
kernel-args-core = { path = "$repo/core" }

[profile.release]
opt-level = "z"
lto = "fat"
codegen-units = 1
panic = "abort"
debug = false

[workspace]
TOML
cat > "$work/src/lib.rs" <<'RUST'
//! Size harness: nothing but the parser behind one exported symbol.
#![no_std]

use kernel_args_core::{GuestMemory, ParsedArgv, parse_argv_into};

#[cfg(not(feature = "n16"))]
const N: usize = 128;
#[cfg(feature = "n16")]
const N: usize = 16;

/// Parses `buf` against `memory` into `out`: 0, or the ABI error code.
#[unsafe(no_mangle)]
pub fn kargs_parse<'m>(buf: &[u8], memory: &'m [u8], out: &mut ParsedArgv<'m, N>) -> i32 {
    match parse_argv_into(buf, &GuestMemory::shared(memory), out) {
        Ok(()) => 0,
        Err(e) => e.code().code(),
    }
}

#[panic_handler]
fn halt(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {}
}
RUST

status=0
for variant in 128 16; do
    features=(); [ "$variant" = 16 ] && features=(--features n16)
    cargo build -q --release --manifest-path "$work/Cargo.toml" --target thumbv7em-none-eabihf \
        --target-dir "$work/target" "${features[@]}"
    lib="$work/target/thumbv7em-none-eabihf/release/libkargs_parser_size.a"
    objdir="$work/obj-$variant"; rm -rf "$objdir"; mkdir -p "$objdir"
    (cd "$objdir" && ar x "$lib")  # the LTO object plus compiler-builtins
    # The LTO object is the one that defines kargs_parse.
    obj=$(for o in "$objdir"/*.o; do
        "$nm" --defined-only "$o" 2>/dev/null | grep ' kargs_parse$' >/dev/null && echo "$o"; done | head -1)
    text=$("$size" -A "$obj" | awk '$1 ~ /^\.text/ { s += $2 } END { print s + 0 }')
    echo "N = $variant: parser .text = $text bytes (budget $budget)"
    "$nm" --size-sort --print-size --defined-only --demangle "$obj" | grep -i ' [tT] ' | sed 's/^/    /'
    if "$nm" --demangle "$obj" | grep -Eiq 'panic|core::fmt'; then
        echo "N = $variant: FAIL: the parser reaches a panic or formatting path" >&2; status=1
    fi
    if [ "$text" -gt "$budget" ]; then echo "N = $variant: FAIL: over budget" >&2; status=1; fi
done
exit $status
