#!/usr/bin/env bash
# The README's test command, then formatting and lints over the whole workspace.
set -euo pipefail
cargo test --workspace
cargo fmt --all --check
cargo clippy --workspace --all-targets -- -D warnings
