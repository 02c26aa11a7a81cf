#!/usr/bin/env bash
# README.md's install line for kargs, as written, from this clone (into a root under the target
# directory, so nothing outside the repository changes), and the installed kargs run; then
# README.md's first command as written, `cargo run -p kernel-args-demo` (the demo on wasmi, as a
# newcomer builds it: without the wasmtime feature the workspace turns on), its report read as
# JSON.
set -euo pipefail
cd "$(dirname "$0")/../.."
target="$(mkdir -p "${CARGO_TARGET_DIR:-target}" && cd "${CARGO_TARGET_DIR:-target}" && pwd)"
export CARGO_TARGET_DIR="$target"
root="$target/install"
rm -rf "$root"
CARGO_INSTALL_ROOT="$root" cargo install --path cli --locked
[ "$("$root/bin/kargs" encode i32:-7 ptr:64:128)" = 01f9ffffff074000000080000000 ]
cargo run -p kernel-args-demo -- --json | python3 -c '
import json, sys
report = json.load(sys.stdin)
assert report["runtime"] == "wasmi", report
assert report["outcome"]["result"] == "dry_run", report
print("install: kargs-demo ran on", report["runtime"])
'
