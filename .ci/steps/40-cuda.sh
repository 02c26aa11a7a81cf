#!/usr/bin/env bash
# The CUDA backend's `cuda` feature, on a machine without a GPU:
#
# - the emulated CUDA driver (cuda-emulator/), built here as the drivers ship:
#   libkargs_emulated_cuda.so, a 12.8 driver (cuFuncGetParamInfo without cuFuncGetParamCount,
#   as every H200 driver from 550 to 580), named by KARGS_CUDA_DRIVER: every launch test runs
#   against it, in both pointer modes; then the launch tests again against the 13.2 one (both
#   entry points) and the 12.2 one (neither). KARGS_CUDA_REQUIRE_DEVICE=1 makes a test that
#   cannot launch fail instead of skipping;
# - Debian's libcuda1 (the NVIDIA driver library, non-free) so that the real driver is loaded
#   at run time too and `cuInit` really answers "no device" (the no-device tests, and
#   `kargs-demo` falling back to the dry run);
# - the link stub (scripts/cuda-link-stub.sh, from a committed C file) that cust's build
#   script and `-lcuda` need in place of a CUDA installation.
#
# nvcc is never needed here: the PTX fixtures are committed (scripts/build-ptx.sh made them).
# The fault matrix under AddressSanitizer runs in 55-cuda-asan.sh.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

# libcuda1 is in Debian's contrib and non-free components.
. scripts/install.sh
if ! dpkg -s libcuda1 >/dev/null 2>&1; then
    enable_debian_nonfree cuda
    install_debian cuda libcuda1
fi
ls -l /usr/lib/x86_64-linux-gnu/libcuda.so.1

# Every entry point the driver layer looks up (cuda-backend/src/driver/sys.rs, `driver_table!`) is
# compared with the dynamic symbols of Debian's libcuda.so.1 (driver 535, CUDA 12.2), so a name
# or version suffix the real driver lacks fails here rather than on a GPU. The required entries
# must all be there; the optional ones are newer than this driver (cuFuncGetParamInfo, CUDA 12.4;
# cuFuncGetParamCount, CUDA 13.2) and are reported.
exports=$(nm -D --defined-only /usr/lib/x86_64-linux-gnu/libcuda.so.1 | awk '{print $3}')
table() {
    awk -v block="$1" '
        /^driver_table! \{/ { inside = 1 }
        inside && $1 == "required" && $2 == "{" { current = "required" }
        inside && $1 == "optional" && $2 == "{" { current = "optional" }
        inside && current == block && match($0, /"cu[A-Za-z0-9_]+"/) { print substr($0, RSTART + 1, RLENGTH - 2) }
        inside && /^}/ { inside = 0 }
    ' cuda-backend/src/driver/sys.rs
}
required=$(table required)
optional=$(table optional)
[ "$(echo "$required" | wc -w)" -ge 20 ] || { echo "error: read too few required entries from driver/sys.rs" >&2; exit 1; }
missing=0
for name in $required; do
    if ! grep -qx "$name" <<< "$exports"; then
        echo "error: driver/sys.rs looks up $name, which libcuda.so.1 (driver 535) does not export" >&2
        missing=1
    fi
done
[ "$missing" -eq 0 ] || exit 1
for name in $optional; do
    if grep -qx "$name" <<< "$exports"; then state="exported"; else state="not exported (newer than this driver)"; fi
    echo "driver symbols: optional $name: $state"
done
echo "driver symbols: all $(echo "$required" | wc -w) required entry points are exported by libcuda.so.1"


# README.md's line as written (its "CUDA" section), then its demo line below.
eval "$(scripts/cuda-link-stub.sh)"; eval "$(scripts/cuda-emulator.sh)"
echo "CUDA_LIBRARY_PATH=$CUDA_LIBRARY_PATH"
echo "KARGS_CUDA_DRIVER=$KARGS_CUDA_DRIVER"
export KARGS_CUDA_REQUIRE_DEVICE=1

log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo clippy -p kernel-args-cuda -p kernel-args-integration --features cuda --all-targets -- -D warnings
# The backend's unit tests and its launch tests (integration/), many tenants on one device among
# them, and the kernel corpus fenced and unfenced through the driver library's C entry points
# (integration/tests/corpus_driver.rs, the test scripts/gpu-check.sh runs on a GPU).
cargo test -p kernel-args-cuda -p kernel-args-integration --features cuda 2>&1 | tee "$log"
cargo clippy -p kernel-args-demo --features cuda --all-targets -- -D warnings
# The wasm guest through the CUDA launcher.
cargo test -p kernel-args-demo --features cuda --test cuda_demo 2>&1 | tee -a "$log"
# The launch tests against the other drivers as they ship: 13.2 (the parameter count from the
# driver) and 12.2 (no parameter info: the PTX's signature).
for other in libkargs_emulated_cuda_13_2.so libkargs_emulated_cuda_12_2.so; do
    echo "cuda: the launch tests against $other"
    KARGS_CUDA_DRIVER="$(dirname "$KARGS_CUDA_DRIVER")/$other" \
        cargo test -p kernel-args-integration --features cuda --test cuda --test declarations --test emulator \
        --test tenants --test fence --test checked --test budget --test deadline 2>&1 | tee -a "$log"
    KARGS_CUDA_DRIVER="$(dirname "$KARGS_CUDA_DRIVER")/$other" \
        cargo test -p kernel-args-demo --features cuda --test cuda_demo 2>&1 | tee -a "$log"
done
if grep -q 'SKIPPED' "$log"; then
    echo "error: a CUDA test skipped against the emulated driver" >&2
    exit 1
fi

# README.md's demo line as written, then kargs-demo on the emulated device checking every
# element, on both runtimes...
cargo run -p kernel-args-demo --features cuda | tee /tmp/kargs-demo.txt
grep -q '^outcome: launched; out\[i\] == a\[i\] + b\[i\] for all .* elements' /tmp/kargs-demo.txt
for runtime in wasmtime wasmi; do
    cargo run -q -p kernel-args-demo --features cuda -- --n 4096 --runtime "$runtime" | tee /tmp/kargs-demo.txt
    grep -q "^kargs-demo: the bundled vector_add guest (.*) on $runtime\$" /tmp/kargs-demo.txt
    grep -q '^launcher: CUDA device 0 kernel-args emulated CUDA device (CPU, not a GPU)' /tmp/kargs-demo.txt
    grep -q '^outcome: launched; out\[i\] == a\[i\] + b\[i\] for all 4096 elements' /tmp/kargs-demo.txt
done
# ...and with the system's driver and no GPU it falls back to the dry run with the reason.
for runtime in wasmtime wasmi; do
    KARGS_CUDA_DRIVER= cargo run -q -p kernel-args-demo --features cuda -- --n 64 --runtime "$runtime" \
        | tee /tmp/kargs-demo.txt
    grep -q '^launcher: dry run: this machine has no CUDA device kargs-demo can use (the CUDA driver library .* cannot be used' /tmp/kargs-demo.txt
done

# The cuda-feature binaries must not depend on the driver library at load time (it is
# dlopen'ed), or a machine without it could not even start them.
for bin in $(cargo test -p kernel-args-cuda -p kernel-args-integration --features cuda --no-run --message-format=json 2>/dev/null \
        | grep -o '"executable":"[^"]*"' | cut -d'"' -f4); do
    if readelf -d "$bin" | grep 'NEEDED.*libcuda' >/dev/null; then
        echo "error: $bin links libcuda at load time" >&2
        exit 1
    fi
done
echo "cuda-feature test binaries load libcuda at run time only"
