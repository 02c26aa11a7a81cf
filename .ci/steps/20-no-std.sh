#!/usr/bin/env bash
# core is no_std without alloc: it must build for a microcontroller and for wasm32, with and
# without defmt. (defmt is only checked on the host: it does not link in host tests.)
set -euo pipefail
for target in thumbv7em-none-eabihf wasm32-unknown-unknown; do
    cargo build -p kernel-args-core --target "$target"
    cargo build -p kernel-args-core --target "$target" --features defmt
done
cargo check -p kernel-args-core --features defmt
cargo clippy -p kernel-args-core --target thumbv7em-none-eabihf --features defmt -- -D warnings
