#!/usr/bin/env bash
# Instructions per call, counted with callgrind (load-independent, unlike wall-clock time), of the
# benchmark's loop modes (perf/benches/parse_build/main.rs):
#   ours   the direct-mode lowering: the argv parsed into LaunchArgs, the parameter storage
#          filled from it with each window's host pointer, the void** table;
#   heap   the heap-allocating reference of the same lowering;
#   floor  an unchecked decoder that writes the same slots and table;
#   host   the whole host call up to cuLaunchKernel (LaunchHost::call, the kernel's declaration
#          checked, a launcher doing the direct-mode CudaLauncher's work);
#   undecl the same host call for a kernel registered without a declaration (a trusted guest).
# Each figure is (Ir of 3*ITER iterations - Ir of ITER iterations) / (2*ITER), so the program's
# setup cancels out.
# Usage: scripts/callgrind-parse-build.sh [SIZE...]   (default: 1 4 16 128 largest)
#        scripts/callgrind-parse-build.sh --check        (16 mixed arguments only: CI's guard,
#        docs/performance.md: fails unless heap/ours >= 5, ours/floor <= 1.5 and host/undecl
#        <= 1.15)
set -euo pipefail
check=false
if [ "${1:-}" = "--check" ]; then
    check=true
    shift
    set -- 16
fi
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
iters=10000
bin="$(cargo bench --no-run -q -p kernel-args-perf --bench parse_build --message-format=json 2>/dev/null \
    | sed -n 's/.*"executable":"\([^"]*parse_build[^"]*\)".*/\1/p' | tail -1)"
[ -x "$bin" ] || { echo "callgrind: no parse_build benchmark binary" >&2; exit 1; }
ir() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" loop "$@" 2>&1 \
        | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
printf '%-8s %8s %8s %8s %10s %11s %8s %8s %12s\n' \
    args ours heap floor heap/ours ours/floor host undecl host/undecl
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1 4 16 128 largest)
ratio() { awk "BEGIN { printf \"%.2f\", $1 / $2 }"; }
for size in "${sizes[@]}"; do
    for which in ours heap floor host host_undeclared; do
        one=$(ir "$which" "$size" "$iters")
        three=$(ir "$which" "$size" $((3 * iters)))
        declare "$which=$(( (three - one) / (2 * iters) ))"
    done
    printf '%-8s %8d %8d %8d %10s %11s %8d %8d %12s\n' "$size" "$ours" "$heap" "$floor" \
        "$(ratio "$heap" "$ours")" "$(ratio "$ours" "$floor")" "$host" "$host_undeclared" \
        "$(ratio "$host" "$host_undeclared")"
done
if $check; then
    # The figures of the last (only) size, 16.
    if ! awk "BEGIN { exit !($heap >= 5 * $ours && 2 * $ours <= 3 * $floor && 100 * $host <= 115 * $host_undeclared) }"; then
        echo "callgrind: at 16 mixed arguments heap/ours must be >= 5, ours/floor <= 1.5, host/undecl <= 1.15" >&2
        exit 1
    fi
    echo "callgrind: guards at 16 mixed arguments hold (heap/ours >= 5, ours/floor <= 1.5, host/undecl <= 1.15)"
fi
