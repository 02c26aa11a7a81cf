#!/usr/bin/env bash
# kernel-args-core on a Cortex-M4: the firmware in firmware/ (its own workspace, for
# thumbv7em-none-eabihf), booted on QEMU's mps2-an386 board with semihosting
# (firmware/README.md):
#
# - `cargo run --release` in firmware/: every conformance vector of tests/vectors/argv.json
#   parsed and checked on the target; launch calls through the no_std host pipeline (no
#   allocation, counted); the demo guest on wasmi with the forwarding launcher, checked as the
#   host's end-to-end tests check; the stack high-water marks of a 128-argument parse and of
#   one launch call (stack painting); QEMU exits non-zero when any check fails;
# - its format and lints (it is outside the workspace that 10-test.sh checks);
# - scripts/firmware-size.sh --check: flash and RAM of the baseline, parser, pipeline and main
#   binaries (with and without wasmi), failing when the parser's or the pipeline's code size is
#   over its budget or either reaches a panic path;
# - scripts/firmware-instructions.sh: instructions per parse of 16 arguments, counted by QEMU
#   (it checks its own method: one instruction per block, a small empty region, two runs equal).
#
# Installs qemu-system-arm (Debian's package) when missing, and rustup's llvm-tools component
# (llvm-size, llvm-nm) when the toolchain lacks it. Builds into the shared target/.
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR="$PWD/target"

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
if ! command -v qemu-system-arm >/dev/null; then
    echo "firmware: installing qemu-system-arm"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends qemu-system-arm >/dev/null
fi
qemu-system-arm --version | head -1
if [ ! -x "$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin/llvm-size" ]; then
    rustup component add llvm-tools
fi
rustup target add thumbv7em-none-eabihf >/dev/null

(
    cd firmware
    timeout 300 cargo run --release
    cargo fmt --check
    cargo clippy --release --all-targets -- -D warnings
    cargo clippy --release --all-targets --no-default-features -- -D warnings
)
scripts/firmware-size.sh --check
scripts/firmware-instructions.sh
