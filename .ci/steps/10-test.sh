#!/usr/bin/env bash
# The README's test command, then formatting and lints over the whole workspace.
set -euo pipefail
cargo test --workspace
cargo fmt --all --check
cargo clippy --workspace --all-targets -- -D warnings
# kargs-demo as `cargo run -p kernel-args-demo` builds it (wasmi only, without the wasmtime
# feature the workspace turns on): the demo on wasmi, and `--runtime wasmtime` naming its feature.
cargo test -p kernel-args-demo --test cli
