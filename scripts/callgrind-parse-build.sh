#!/usr/bin/env bash
# Instructions per parse + build (ours, the heap reference, the unchecked floor), and per whole host call up to
# cuLaunchKernel (LaunchHost::call with a launcher doing the direct-mode CudaLauncher's work: host_1, whose
# parameter storage is the host's argv sink, so the argv is parsed once; host_2, which parses the request itself,
# so the argv is parsed twice), counted with callgrind: load-independent, unlike wall-clock time. Each figure is
# (Ir of ITER iterations - Ir of 0 iterations) / ITER, so the program's setup cancels out.
# Usage: scripts/callgrind-parse-build.sh [SIZE...]   (default: 1 4 16 128 largest)
#        scripts/callgrind-parse-build.sh --check        (16 mixed arguments only; fails unless
#        heap/ours >= 5 and ours/floor <= 1.5, the goals of docs/performance.md: CI's guard)
set -euo pipefail
check=false
if [ "${1:-}" = "--check" ]; then
    check=true
    shift
    set -- 16
fi
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
iters=20000
cargo build --release -q -p kernel-args-cuda --example parse_build_loop
bin="$target/release/examples/parse_build_loop"
ir() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$@" 2>&1 \
        | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
printf '%-8s %10s %10s %10s %10s %11s %10s %10s %9s\n' \
    args ours heap floor heap/ours ours/floor host_1 host_2 host_2/1
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1 4 16 128 largest)
ratio() { awk "BEGIN { printf \"%.2f\", $1 / $2 }"; }
for size in "${sizes[@]}"; do
    for which in ours heap floor host_one_pass host_two_pass; do
        base=$(ir "$which" "$size" 0)
        full=$(ir "$which" "$size" "$iters")
        declare "$which=$(( (full - base) / iters ))"
    done
    printf '%-8s %10d %10d %10d %10s %11s %10d %10d %9s\n' "$size" "$ours" "$heap" "$floor" \
        "$(ratio "$heap" "$ours")" "$(ratio "$ours" "$floor")" "$host_one_pass" "$host_two_pass" \
        "$(ratio "$host_two_pass" "$host_one_pass")"
done
if $check; then
    # $size, $ours, $heap and $floor are those of the last (only) size, 16.
    if ! awk "BEGIN { exit !($heap >= 5 * $ours && 2 * $ours <= 3 * $floor) }"; then
        echo "callgrind: at 16 mixed arguments heap/ours must be >= 5 and ours/floor <= 1.5" >&2
        exit 1
    fi
    echo "callgrind: goals at 16 mixed arguments hold (heap/ours >= 5, ours/floor <= 1.5)"
fi
