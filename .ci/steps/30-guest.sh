#!/usr/bin/env bash
# The wasm demo guest lives outside the workspace (scripts/build-guest.sh builds it for wasm32;
# 25-package.sh checks the committed module), so the workspace-wide fmt and clippy do not see it:
# check it here.
# Then the std adapter without its default features (no wasmtime, no guest), which 10-test
# does not build.
set -euo pipefail
guest=std-adapter/guest/Cargo.toml
rustup target add wasm32-unknown-unknown >/dev/null 2>&1 || true
cargo fmt --manifest-path "$guest" --check
cargo clippy --manifest-path "$guest" --target wasm32-unknown-unknown -- -D warnings
cargo test -p kernel-args --no-default-features
cargo clippy -p kernel-args --all-targets --no-default-features -- -D warnings
