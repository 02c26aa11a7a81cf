#!/usr/bin/env bash
# The CUDA backend's `cuda` feature on a machine without a GPU and without CUDA:
#
# - Debian's libcuda1 (the NVIDIA driver library, non-free; ~3 MB) so that the driver is
#   really loaded at run time and `cuInit` really answers "no device";
# - the link stub (scripts/cuda-link-stub.sh, from a committed C file) that cust's build
#   script and `-lcuda` need in place of a CUDA installation;
# - clippy and the tests with `--features cuda`: the tests that need a device print SKIPPED
#   with the reason, the no-device and no-driver-library tests assert NotAvailable.
#
# nvcc is never needed here: the PTX fixtures are committed (scripts/build-ptx.sh made them).
# Miri over this crate runs in 50-miri.sh: `cargo +nightly miri test -p kernel-args-cuda`.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

# contrib and non-free for libcuda1, in whichever format the machine's apt sources are.
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    sed -i -E '/^Components:/ { / contrib( |$)/! s/$/ contrib/; / non-free( |$)/! s/$/ non-free/ }' \
        /etc/apt/sources.list.d/debian.sources
fi
if [ -f /etc/apt/sources.list ]; then
    sed -i -E '/^deb /{ / contrib( |$)/! s/$/ contrib/; / non-free( |$)/! s/$/ non-free/ }' /etc/apt/sources.list
fi
if ! dpkg -s libcuda1 >/dev/null 2>&1; then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends libcuda1 >/dev/null
fi
ls -l /usr/lib/x86_64-linux-gnu/libcuda.so.1

eval "$(scripts/cuda-link-stub.sh)"
echo "CUDA_LIBRARY_PATH=$CUDA_LIBRARY_PATH"

cargo clippy -p kernel-args-cuda --features cuda --all-targets -- -D warnings
cargo test -p kernel-args-cuda --features cuda
if grep -qE '^cuda *=' cli/Cargo.toml; then
    # kargs demo with the CUDA launcher: lints, the GPU end-to-end test (skips, printed, here),
    # and the demo itself, which must fall back to the dry run with the driver's reason.
    cargo clippy -p kargs --features cuda --all-targets -- -D warnings
    cargo test -p kargs --features cuda --test cuda_demo
    cargo run -q -p kargs --features cuda -- demo --n 64 | tee /tmp/kargs-demo.txt
    grep -q '^launcher: dry run (NotAvailable' /tmp/kargs-demo.txt
fi

# The cuda-feature binaries must not depend on the driver library at load time (it is
# dlopen'ed), or a machine without it could not even start them.
for bin in $(cargo test -p kernel-args-cuda --features cuda --no-run --message-format=json 2>/dev/null \
        | grep -o '"executable":"[^"]*"' | cut -d'"' -f4); do
    if readelf -d "$bin" | grep -q 'NEEDED.*libcuda'; then
        echo "error: $bin links libcuda at load time" >&2
        exit 1
    fi
done
echo "cuda-feature test binaries load libcuda at run time only"
