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
# - the same firmware's defmt log (written to a host file through semihosting), decoded with
#   defmt-print (installed here, pinned) and checked line by line: the crates' defmt::Format
#   impls run on the target, not only compile;
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

. scripts/install.sh
command -v qemu-system-arm >/dev/null || install_debian firmware qemu-system-arm
qemu-system-arm --version | head -1
if [ ! -x "$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin/llvm-size" ]; then
    rustup component add llvm-tools
fi
rustup target add thumbv7em-none-eabihf >/dev/null

# defmt-print, the host tool that decodes the firmware's defmt log (installed once per target
# directory; about two minutes to build).
DEFMT_PRINT_VERSION=1.2.0
tools="$CARGO_TARGET_DIR/tools"
if [ "$("$tools/bin/defmt-print" --version 2>/dev/null | head -1)" != "defmt-print $DEFMT_PRINT_VERSION" ]; then
    echo "firmware: installing defmt-print $DEFMT_PRINT_VERSION"
    cargo install --quiet --locked defmt-print --version "$DEFMT_PRINT_VERSION" --root "$tools"
fi

(
    cd firmware
    # The main firmware writes its defmt log to target/kargs-firmware.defmt (src/defmt_log.rs),
    # relative to QEMU's working directory, this one.
    mkdir -p target
    rm -f target/kargs-firmware.defmt
    # The README's command as written (README.md, firmware/README.md), from the repository root.
    (cd .. && timeout 300 sh -c 'cd firmware && cargo run --release') | tee target/kargs-firmware.txt
    # The log decoded on the host with the ELF's defmt table: every line the firmware logs,
    # each value through the crates' own defmt::Format.
    "$tools/bin/defmt-print" -e "$CARGO_TARGET_DIR/thumbv7em-none-eabihf/release/kernel-args-firmware" \
        < target/kargs-firmware.defmt | tee target/kargs-firmware.defmt.txt
    decoded=target/kargs-firmware.defmt.txt
    expect() {
        if ! grep -qxF -- "$1" "$decoded"; then
            echo "error: the decoded defmt log lacks the line: $1" >&2
            exit 1
        fi
    }
    # The vectors' line as the firmware printed it (semihosting text), the same through defmt.
    expect "INFO  $(grep '^vectors: ' target/kargs-firmware.txt)"
    expect "INFO  defmt: parsed 4 arguments: [Ptr(GuestWindow { guest_offset: 0, len: 16 }), Ptr(GuestWindow { guest_offset: 16, len: 16 }), Ptr(GuestWindow { guest_offset: 32, len: 16 }), U32(4)]"
    expect "WARN  defmt: refused: ArgvError { kind: UnknownTag { tag: 66 }, index: 1, offset: 5 }"
    expect "INFO  defmt: declared Declaration(vector_add(a: &[f32; n], b: &[f32; n], out: &mut [f32; n], n: u32))"
    expect "INFO  defmt: launch answered -1, recorded LaunchSnapshot { kernel_id: 1, shape: LaunchShape { grid: [1, 1, 1], block: [4, 1, 1], shared_mem_bytes: 0 }, args: [Ptr(GuestRange { guest_offset: 0, len: 16 }), Ptr(GuestRange { guest_offset: 16, len: 16 }), Ptr(GuestRange { guest_offset: 32, len: 16 }), U32(4)] }"
    expect "WARN  defmt: call answered -9: InvalidArgs -9: record 0 at byte 0: a: 16-byte window, the kernel touches n * 4 = 20 bytes"
    expect "INFO  firmware: ok"
    echo "firmware: the defmt log decodes on the host ($(wc -l < "$decoded") lines, every expected one)"
    cargo fmt --check
    cargo clippy --release --all-targets -- -D warnings
    cargo clippy --release --all-targets --no-default-features -- -D warnings
)
scripts/firmware-size.sh --check
scripts/firmware-instructions.sh
