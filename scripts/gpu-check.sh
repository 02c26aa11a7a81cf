#!/usr/bin/env bash
# GPU validation of the CUDA backend, in two halves:
#
#   scripts/gpu-check.sh [BUNDLE_DIR]
#       Here (x86-64 Linux with Rust; no GPU or CUDA needed): builds the link stub and the
#       `cuda`-feature test binaries (kernel-args-cuda's unit tests, the launch tests of
#       kernel-args-integration, kernel-args-demo's cuda_demo), and puts them in BUNDLE_DIR (default: $CARGO_TARGET_DIR or target, then
#       /gpu-check) with the PTX fixtures and run.sh. Prints how to run the bundle.
#
#   bash BUNDLE_DIR/run.sh
#       On the GPU machine: needs only the CUDA driver (libcuda.so.1) and bash; no Rust. Runs
#       every test binary and `kargs-demo --n 4096`, then prints the GPU and driver, each binary's result and every
#       SKIPPED line, and writes the same to BUNDLE_DIR/results.txt. Exits non-zero when a test
#       fails, or when a device is present but a test that needs one was skipped for a reason
#       other than the device lacking pageable memory access (direct mode). The tests that
#       need the emulated driver (integration/tests/emulator.rs, fault_matrix.rs, most of
#       the stalled stream of deadline.rs) skip there: they run in CI.
#
# The test binaries embed the PTX (include_str!), so the .ptx files in the bundle are for
# reference. What the tests check on a device: vector_add (the wasm guest's kernel, 3 pointers
# + u32) on 1M+3 elements, fenced and unfenced, every element against a CPU reference, in the
# staged and in the direct pointer mode, with the fenced and unfenced launch's wall-clock time
# printed (the fence's cost on the GPU); (fence) six fixtures computing the same bytes fenced
# and unfenced in both modes, six kernels broken on purpose and eight attack kernels (shared
# and local overruns, a generic pointer into shared memory, a trap among them) caught by their
# fence (the launch answers LaunchFailed naming the fence, host memory around the guest's
# unchanged, no fault, the next launch right); aliasing windows staged as one buffer; every scalar type bit-exact on
# the device; signature mismatches (size, count, by-value struct) refused with guest memory
# untouched; malformed PTX and unknown entries mapped to their codes; dynamic shared memory
# past 48 KiB opted in up to the device's limit; (kernel-args-demo's cuda_demo and `kargs-demo`) the wasm
# guest's vector_add through wasmtime and wasi_cuda_launch, every element checked; and
# (tenants) 8 threads x 4 wasmtime stores x 10,000 launches on one shared device, every
# element checked, with the launch rate printed; (budget) fenced kernels that never end, with
# and without bar.sync, stopped at their guest's budget of backward branches with every
# thread's count where the budget put it, the budget's exact edge, a block whose stopped
# threads leave its barrier, and another tenant's launches beside; (deadline) launches past their
# deadline answered so with their results complete, (corpus_driver) every fenced entry of the
# kernel corpus computing the same bytes as unfenced, and a failing assert fenced setting the
# flag, and a kernel that never ends ended by its
# budget on a device with a deadline; (gpu-probe, scripts/gpu-probe.c) whether the driver's
# context reset or destroy stops a running kernel, whether killing the process does, and
# whether a context recovers from a kernel's fault. Without a device, the same binaries check the no-device path
# (NotAvailable). The whole run takes seconds.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
target="${CARGO_TARGET_DIR:-$root/target}"
bundle="${1:-$target/gpu-check}"

eval "$(scripts/cuda-link-stub.sh)"   # exports CUDA_LIBRARY_PATH for cust's build script

rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/kernels"

# Stripped and gzipped, the binaries that embed wasmtime (~45 MB each as built) make a bundle
# of a few tens of MB, quick to copy to a GPU machine; run.sh unpacks them.
pack() {
    strip -o "$2" "$1" 2>/dev/null || cp "$1" "$2"
    gzip -6 -f "$2"
}

# Builds the test executables of `cargo test ARGS --no-run` and copies them into the bundle,
# found from cargo's JSON messages (the file names carry a hash).
bundle_tests() {
    cargo test "$@" --no-run --message-format=json \
        | grep '"reason":"compiler-artifact"' | grep '"test":true' | grep '"executable":"' \
        | grep -v '"kind":\["bin"\]' \
        | sed -E 's/.*"target":\{[^}]*"name":"([^"]*)".*"executable":"([^"]*)".*/\1\t\2/' \
        | while IFS=$'\t' read -r name exe; do
            pack "$exe" "$bundle/bin/$name"
            echo "bundled $name <- ${exe#"$root"/}"
        done
}

# The backend's unit tests, and its launch tests (integration/tests/cuda.rs and the others, many
# tenants in tenants.rs; the docs test reads the repository's files and stays here).
bundle_tests -p kernel-args-cuda --features cuda --lib
# The kernel corpus, fenced and unfenced, through the driver's C entry points (corpus_driver).
bundle_tests -p kernel-args-integration --features cuda --test cuda --test declarations --test emulator \
    --test fault_matrix --test fence --test tenants --test budget --test deadline --test corpus_driver
# The wasm guest's vector_add through kargs-demo's host on the GPU (only that test of
# kernel-args-demo: its other tests read files of the repository).
if grep -qE '^cuda *=' demo/Cargo.toml 2>/dev/null && [ -f demo/tests/cuda_demo.rs ]; then
    bundle_tests -p kernel-args-demo --features cuda --test cuda_demo
    # And the kargs-demo binary itself, for the demo on the device (run.sh runs it).
    kargs="$(cargo build -p kernel-args-demo --features cuda --message-format=json \
        | grep '"reason":"compiler-artifact"' | grep -o '"executable":"[^"]*/kargs-demo"' | cut -d'"' -f4 | tail -1)"
    pack "$kargs" "$bundle/kargs-demo"
    echo "bundled kargs-demo <- ${kargs#"$root"/}"
fi
cp cuda-backend/kernels/*.ptx cuda-backend/kernels/*.cu "$bundle/kernels/"
# The driver's own behaviour the backend relies on (stopping a kernel, going on after a fault):
# scripts/gpu-probe.c, any C compiler, no CUDA headers.
"${CC:-cc}" -O1 -Wall -Wextra -o "$bundle/gpu-probe" scripts/gpu-probe.c -ldl
echo "bundled gpu-probe <- scripts/gpu-probe.c"

cat > "$bundle/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs the bundled kernel-args CUDA tests on this machine (needs libcuda.so.1, no Rust).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
results="$here/results.txt"
# The binaries travel gzipped; unpack them where this machine lets us write.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"
for packed in "$here"/bin/*.gz; do
    gunzip -c "$packed" > "$work/bin/$(basename "$packed" .gz)"
done
[ -f "$here/kargs-demo.gz" ] && gunzip -c "$here/kargs-demo.gz" > "$work/kargs-demo"
chmod +x "$work"/bin/* "$work"/kargs-demo 2>/dev/null
# cuda_demo runs this kargs-demo (the path cargo gave it is on the machine that built it).
export KARGS_DEMO_BIN="$work/kargs-demo"
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(uname -srm)"
    if command -v nvidia-smi >/dev/null 2>&1; then
        nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/gpu: /'
        nvidia-smi -q 2>/dev/null | grep -m1 'CUDA Version' | sed 's/^ */driver /'
    else
        echo "gpu: nvidia-smi not found"
    fi
} > "$results"
status=0
for bin in "$work"/bin/*; do
    name="$(basename "$bin")"
    log="$here/$name.log"
    "$bin" --test-threads=1 > "$log" 2>&1
    rc=$?
    summary="$(grep -E '^test result:' "$log" | tail -1)"
    echo "$name: exit $rc; ${summary:-no test summary}" >> "$results"
    # The tests write these lines past the harness's capture, so they may follow a
    # "test name ... " prefix on the same line.
    grep -oE '(SKIPPED [a-z_0-9]+: .*|[a-z_0-9]+: (device|[0-9]+ elements|[0-9]+ launches|[0-9]+ entries|a failing|\||this driver|Direct:?|Staged:?|resident) .*|no_device_is_not_available: .*)' \
        "$log" >> "$results"
    [ "$rc" -eq 0 ] || { status=1; grep -E -A15 'panicked|FAILED' "$log" | head -60 >> "$results"; }
done
# What the driver does about a kernel that runs too long and a kernel's fault (informative: each
# line says what happened; scripts/gpu-probe.c). Only where a GPU is present.
if [ -x "$here/gpu-probe" ] && grep -q '^gpu: ' "$results" && ! grep -q 'nvidia-smi not found' "$results"; then
    timeout 120 "$here/gpu-probe" > "$here/gpu-probe.log" 2>&1
    echo "gpu-probe: exit $?" >> "$results"
    grep '^probe ' "$here/gpu-probe.log" >> "$results"
fi
# `kargs-demo` on the whole buffers: launched and checked on a device, a dry run without.
if [ -x "$work/kargs-demo" ]; then
    "$work/kargs-demo" --n 4096 > "$here/kargs-demo.log" 2>&1
    rc=$?
    echo "kargs-demo --n 4096: exit $rc" >> "$results"
    grep -E '^(launcher:|outcome:|host:|         pointers )' "$here/kargs-demo.log" >> "$results"
    [ "$rc" -eq 0 ] || status=1
    if grep -q '^gpu: ' "$results" && ! grep -q 'nvidia-smi not found' "$results" \
        && ! grep -q '^outcome: launched; out' "$here/kargs-demo.log"; then
        echo "FAIL: kargs-demo did not launch on a machine with a GPU" >> "$results"
        status=1
    fi
fi
# On a machine with a device, a GPU test may only skip for the direct mode's missing
# pageable memory access, and the no-device test skips by design.
if grep -q '^gpu: ' "$results" && ! grep -q 'nvidia-smi not found' "$results"; then
    if grep '^SKIPPED' "$results" | grep -v -e 'no_device_is_not_available' \
        -e 'CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS' -e 'needs the emulated driver' | grep . >/dev/null; then
        echo "FAIL: a GPU test was skipped on a machine with a GPU" >> "$results"
        status=1
    fi
fi
echo "overall: $([ "$status" -eq 0 ] && echo PASS || echo FAIL)" >> "$results"
cat "$results"
exit "$status"
RUN
chmod +x "$bundle/run.sh"

size="$(du -sh "$bundle" | cut -f1)"
rel="${bundle#"$root"/}"
cat <<EOF

Bundle ready: $rel ($size). Copy it to a machine with the CUDA driver (no Rust needed) and
run it there:

    bash $rel/run.sh

Here (no GPU), the same run checks the no-device path:  bash $rel/run.sh
Results: $rel/results.txt (record them in docs/gpu-validation.md).
EOF
