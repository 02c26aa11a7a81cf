#!/usr/bin/env bash
# Instructions per parse + build (ours in one pass and in two, the heap reference, the unchecked floor), and per
# whole host call up to cuLaunchKernel (host: LaunchHost::call with the direct-mode launcher's work), counted with
# callgrind: load-independent, unlike wall-clock time. Each figure is
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
printf '%-8s %12s %14s %12s %12s %10s %11s %10s\n' args ours ours_two_pass heap floor heap/ours ours/floor host
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1 4 16 128 largest)
for size in "${sizes[@]}"; do
    for which in ours ours_two_pass heap floor host; do
        base=$(ir "$which" "$size" 0)
        full=$(ir "$which" "$size" "$iters")
        declare "$which=$(( (full - base) / iters ))"
    done
    printf '%-8s %12d %14d %12d %12d %10s %11s %10d\n' "$size" "$ours" "$ours_two_pass" "$heap" "$floor" \
        "$(awk "BEGIN { printf \"%.2f\", $heap / $ours }")" "$(awk "BEGIN { printf \"%.2f\", $ours / $floor }")" "$host"
done
if $check; then
    # $size, $ours, $heap and $floor are those of the last (only) size, 16.
    if ! awk "BEGIN { exit !($heap >= 5 * $ours && 2 * $ours <= 3 * $floor) }"; then
        echo "callgrind: at 16 mixed arguments heap/ours must be >= 5 and ours/floor <= 1.5" >&2
        exit 1
    fi
    echo "callgrind: goals at 16 mixed arguments hold (heap/ours >= 5, ours/floor <= 1.5)"
fi
