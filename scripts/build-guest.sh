#!/usr/bin/env bash
# Builds the demo guest (std-adapter/guest/, a no_std crate outside the workspace) for
# wasm32-unknown-unknown and puts the module where the std adapter bundles it from
# (kernel_args::guest::GUEST_WASM): std-adapter/kernel_args_demo_guest.wasm, which is committed,
# so that building kernel-args needs neither the wasm32 target nor files outside its package.
#
#   scripts/build-guest.sh           # rebuild and update the committed module
#   scripts/build-guest.sh --check   # fail when a fresh build differs from the committed bytes
#
# Run it after changing std-adapter/guest/ or anything of core the guest uses; CI runs --check
# (.ci/steps/25-package.sh). The build is reproducible: the pinned toolchain
# (rust-toolchain.toml, picked up from the repository root), the guest's own Cargo.lock
# (--locked), no flags from the environment, and no name section (`strip = true` in the guest's
# release profile: the symbol hashes depend on where the checkout is), so neither the checkout's
# path nor the target directory reaches the bytes. Target directory:
# ${CARGO_TARGET_DIR:-target}/guest.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
guest_target=wasm32-unknown-unknown
committed=std-adapter/kernel_args_demo_guest.wasm
target_dir="${CARGO_TARGET_DIR:-$root/target}/guest"
check=false
case "${1:-}" in
    --check) check=true ;;
    "") ;;
    *) echo "usage: scripts/build-guest.sh [--check]" >&2; exit 2 ;;
esac

if [ ! -d "$(rustc --print target-libdir --target "$guest_target")" ]; then
    echo "build-guest: the $guest_target target is not installed for $(rustc -V); run:" >&2
    echo "    rustup target add $guest_target" >&2
    exit 1
fi
# Flags meant for the host build would change the module's bytes.
env -u RUSTFLAGS -u CARGO_ENCODED_RUSTFLAGS -u CARGO_BUILD_RUSTFLAGS -u CARGO_BUILD_TARGET \
    -u RUSTC_WRAPPER -u RUSTC_WORKSPACE_WRAPPER -u CARGO_TARGET_DIR -u CARGO_BUILD_TARGET_DIR \
    cargo build --locked --release --target "$guest_target" \
    --manifest-path std-adapter/guest/Cargo.toml --target-dir "$target_dir"
built="$target_dir/$guest_target/release/kernel_args_demo_guest.wasm"

if $check; then
    if ! cmp -s "$built" "$committed"; then
        echo "build-guest: $committed ($(wc -c <"$committed") bytes) is not what" \
            "std-adapter/guest/ builds ($(wc -c <"$built") bytes): run scripts/build-guest.sh" \
            "and commit the module" >&2
        exit 1
    fi
    echo "build-guest: $committed is what std-adapter/guest/ builds ($(wc -c <"$built") bytes," \
        "sha256 $(sha256sum "$built" | cut -d' ' -f1))"
else
    cp "$built" "$committed"
    echo "build-guest: wrote $committed ($(wc -c <"$committed") bytes)"
fi
