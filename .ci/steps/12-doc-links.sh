#!/usr/bin/env bash
# Every link between the docs, to the repository's files and to headings, checked offline by
# lychee (scripts/doc-links.sh). The files and Rust items the docs name as inline code are
# checked by integration/tests/doc_references.rs in 10-test.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/doc-links.sh
