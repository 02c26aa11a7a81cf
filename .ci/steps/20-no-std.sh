#!/usr/bin/env bash
# core (the parser) and kernel-args without std (the host pipeline: error table, checks, host
# call, Launcher, dry run, record; and the wasmi binding) need neither std nor alloc: each must
# build for a microcontroller and for wasm32, with and without defmt. (defmt is only checked on
# the host: it does not link in host tests.) What runs on a real Cortex-M is 27-firmware.
set -euo pipefail
for target in thumbv7em-none-eabihf wasm32-unknown-unknown; do
    cargo build -p kernel-args-core --target "$target"
    cargo build -p kernel-args-core --target "$target" --features defmt
    for features in "" defmt wasmi wasmi,defmt; do
        cargo build -p kernel-args --no-default-features --features "$features" --target "$target"
    done
done
cargo check -p kernel-args-core --features defmt
cargo clippy -p kernel-args-core --target thumbv7em-none-eabihf --features defmt -- -D warnings
cargo clippy -p kernel-args --no-default-features --features wasmi,defmt --target thumbv7em-none-eabihf -- -D warnings
