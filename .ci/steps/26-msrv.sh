#!/usr/bin/env bash
# The crates whose manifest claims a rust-version below the pinned toolchain's build with that
# version (the others say 1.95, wasmtime 48's, and build with the pinned toolchain everywhere
# else in CI):
#
# - kernel-args-core: for the host, thumbv7em-none-eabihf and wasm32-unknown-unknown, with and
#   without `defmt`.
#
# They are built as packaged (`cargo package`), with the dependency versions that the
# MSRV-aware resolver picks for that version today, not the workspace's Cargo.lock (which has
# the newest versions, some of them needing more: heapless 0.9.4 says 1.88): what someone on
# the MSRV gets. Target directory: $CARGO_TARGET_DIR/msrv, apart from the main build.
set -euo pipefail
cd "$(dirname "$0")/../.."
MSRV=1.87
target="$(mkdir -p "${CARGO_TARGET_DIR:-target}" && cd "${CARGO_TARGET_DIR:-target}" && pwd)/msrv"
for manifest in core/Cargo.toml; do
    if ! grep -qx "rust-version = \"$MSRV\"" "$manifest"; then
        echo "msrv: $manifest does not claim rust-version $MSRV, which this step checks" >&2
        exit 1
    fi
done
rustup toolchain install "$MSRV" --profile minimal \
    --target thumbv7em-none-eabihf --target wasm32-unknown-unknown

# The packages (kernel-args and kernel-args-cuda only so that the CLI's optional dependencies
# resolve; they are not built here), in a workspace of their own.
export CARGO_TARGET_DIR="$target"
cargo package -p kernel-args-core --no-verify --allow-dirty
src="$target/src"
rm -rf "$src"
mkdir -p "$src"
for crate in kernel-args-core; do
    mkdir -p "$src/$crate"
    tar -xzf "$(ls "$target/package/$crate"-[0-9]*.crate | tail -1)" -C "$src/$crate" --strip-components=1
done
cat > "$src/Cargo.toml" <<'TOML'
[workspace]
resolver = "3"
members = ["kernel-args-core"]
TOML

cd "$src"
cargo "+$MSRV" generate-lockfile
for target_flag in "" --target=thumbv7em-none-eabihf --target=wasm32-unknown-unknown; do
    for features in "" --features=defmt; do
        echo "msrv: kernel-args-core $target_flag $features with $MSRV"
        cargo "+$MSRV" build --locked -p kernel-args-core $target_flag $features
    done
done
