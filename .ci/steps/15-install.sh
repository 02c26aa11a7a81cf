#!/usr/bin/env bash
# The README's install lines for kargs, as written, from this clone (each into a root of its own
# under the target directory, so nothing outside the repository changes), and each installed
# kargs run: the default (decode, encode, demo on wasmi) and --no-default-features (decode and
# encode, no wasm runtime). The wasmtime and cuda lines would build wasmtime in release mode
# (minutes); 10-test.sh and 40-cuda.sh build and test those features.
set -euo pipefail
cd "$(dirname "$0")/../.."
target="$(mkdir -p "${CARGO_TARGET_DIR:-target}" && cd "${CARGO_TARGET_DIR:-target}" && pwd)"
export CARGO_TARGET_DIR="$target"
root="$target/install"
rm -rf "$root"
CARGO_INSTALL_ROOT="$root/minimal" cargo install --path cli --locked --no-default-features
CARGO_INSTALL_ROOT="$root/default" cargo install --path cli --locked
[ "$("$root/minimal/bin/kargs" encode i32:-7 ptr:64:128)" = 01f9ffffff074000000080000000 ]
if "$root/minimal/bin/kargs" demo >/dev/null 2>&1; then
    echo "install: the --no-default-features kargs ran demo, which needs the demo feature" >&2
    exit 1
fi
"$root/default/bin/kargs" demo --json | python3 -c '
import json, sys
report = json.load(sys.stdin)
assert report["runtime"] == "wasmi", report
print("install: kargs demo ran on", report["runtime"])
'
