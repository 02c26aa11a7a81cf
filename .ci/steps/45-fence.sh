#!/usr/bin/env bash
# The PTX fence (cuda-backend/src/fence/): its unit and golden-file tests, the checker's, and the
# emulator's fenced runs (integration/tests/fence_emulated.rs) run in 10-test.sh's `cargo test
# --workspace`; here NVIDIA's ptxas (CUDA 12.9, from its PyPI wheel) assembles every fixture,
# broken and attack kernel, fenced and unfenced, for sm_52 and sm_90, so the rewritten PTX is
# known to be valid for real hardware, and NVIDIA's disassembler lists each fenced module's
# sm_90 SASS, whose memory instructions scripts/sass-check.py holds to the fence's accesses; and
# the fence's table on the kernel corpus (what it accepts, its SASS and registers per entry) and
# the lines of where its aligned form's cost is are regenerated and held equal to
# docs/performance.md's.
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/ptxas-check.sh
# README.md's line that shows a module fenced, as written.
cargo run -p kernel-args-cuda --example fence -- cuda-backend/kernels/vector_add.ptx > "${CARGO_TARGET_DIR:-target}/vector_add.fenced.ptx"
cmp "${CARGO_TARGET_DIR:-target}/vector_add.fenced.ptx" cuda-backend/kernels/fenced/vector_add.ptx
scripts/corpus-table.sh
