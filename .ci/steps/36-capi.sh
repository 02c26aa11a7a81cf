#!/usr/bin/env bash
# The C API (capi/, libkargs; include/kargs.h): the committed header against what cbindgen
# makes from capi/ now (a stale header fails, with the command that regenerates it), the host
# static and shared libraries, the thumbv7em-none-eabihf static library and its linked code
# size, and capi/c/tests/capi_vectors.c (every conformance vector through kargs_parse against
# kernel-args-core's outcome, the region and shape checks, NULLs, capacities, message
# truncation) as C99 with gcc and clang under AddressSanitizer and UBSan, against the static
# and the shared library. Installs gcc, g++, clang and clang's sanitizer runtimes with apt when
# missing (as 35-c-guest.sh), and cbindgen 0.29.4 with cargo. Shares target/ with the other
# steps.
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/capi-check.sh --check
