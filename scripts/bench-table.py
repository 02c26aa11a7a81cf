#!/usr/bin/env python3
"""Turns criterion's estimates into the Markdown table of docs/performance.md.

For every benchmark under the criterion directory (default: $CRITERION_HOME, else
$CARGO_TARGET_DIR/criterion, else target/criterion) it prints the median time with its 95%
confidence interval, the throughput in MiB/s (every benchmark's throughput is its argv's
length in bytes) and the time per argument (every benchmark's parameter is its number of
arguments). Run it after `cargo bench -p kernel-args-perf`.

Usage: scripts/bench-table.py [CRITERION_DIR] [GROUP...]
"""

import json
import os
import pathlib
import sys


def criterion_dir() -> pathlib.Path:
    if os.environ.get("CRITERION_HOME"):
        return pathlib.Path(os.environ["CRITERION_HOME"])
    return pathlib.Path(os.environ.get("CARGO_TARGET_DIR", "target")) / "criterion"


def fmt_ns(ns: float) -> str:
    return f"{ns / 1000:.2f} µs" if ns >= 1000 else f"{ns:.1f} ns"


def main() -> int:
    args = sys.argv[1:]
    root = pathlib.Path(args.pop(0)) if args and not args[0].isidentifier() else criterion_dir()
    groups = set(args)
    rows = []
    for bench in sorted(root.glob("**/new/benchmark.json")):
        meta = json.loads(bench.read_text())
        if groups and meta["group_id"] not in groups:
            continue
        est = json.loads((bench.parent / "estimates.json").read_text())["median"]
        median = est["point_estimate"]
        lo, hi = est["confidence_interval"]["lower_bound"], est["confidence_interval"]["upper_bound"]
        nbytes = (meta.get("throughput") or {}).get("Bytes")
        nargs = int(meta["value_str"]) if meta.get("value_str", "").isdigit() else None
        rows.append((meta["group_id"], meta["function_id"] or "", nargs, nbytes, median, lo, hi))
    if not rows:
        print(f"no criterion estimates under {root}", file=sys.stderr)
        return 1
    order = {"parse": 0, "parse_into": 1, "reject": 2, "encode": 3, "build": 4, "parse_build": 5}
    rows.sort(key=lambda r: (order.get(r[0], 9), r[0], r[1].split("/")[-1], r[2] or 0, r[1]))
    print("| benchmark | args | bytes | median (95% CI) | MiB/s | per arg |")
    print("|---|---:|---:|---|---:|---:|")
    for group, function, nargs, nbytes, median, lo, hi in rows:
        mibs = f"{nbytes / (median * 1e-9) / 2**20:.0f}" if nbytes else "–"
        per_arg = fmt_ns(median / nargs) if nargs else "–"
        name = f"{group}/{function}"
        print(
            f"| `{name}` | {nargs if nargs is not None else '–'} | {nbytes or '–'} "
            f"| {fmt_ns(median)} ({fmt_ns(lo)} – {fmt_ns(hi)}) | {mibs} | {per_arg} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
