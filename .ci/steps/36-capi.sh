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

# The link lines of docs/c-embedding.md and capi/README.md as written, in a scratch directory
# that has the paths they name (include/, target/release/) and the host they build (my_host.c,
# host.c: a smallest host that parses one argv); each binary must start and answer.
root="$PWD"
links="$root/target/doc-links"
rm -rf "$links"
mkdir -p "$links/target"
ln -s "$root/include" "$links/include"
ln -s "$(cd "${CARGO_TARGET_DIR:-target}" && pwd)/release" "$links/target/release"
cat > "$links/my_host.c" <<'C'
#include <stdio.h>
#include "kargs.h"
int main(void)
{
    /* One u32 record (tag 0x05, value 7), no guest memory needed. */
    const uint8_t argv[] = {0x05, 7, 0, 0, 0};
    kargs_arg args[1];
    size_t n = 0;
    kargs_error err;
    int32_t rc = kargs_parse(argv, sizeof argv, NULL, 0, args, 1, &n, &err);
    printf("kargs_parse: %d, %zu argument, u32 %llu\n", (int)rc, n, (unsigned long long)args[0].bits);
    return rc == 0 && n == 1 && args[0].bits == 7 ? 0 : 1;
}
C
cp "$links/my_host.c" "$links/host.c"
(
    cd "$links"
    cc -std=c99 -Iinclude my_host.c -Ltarget/release -lkargs -Wl,-rpath,"$PWD/target/release" -o my_host
    ./my_host
    cc -std=c99 -Iinclude my_host.c target/release/libkargs.a -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
    ./a.out
    cc host.c -Iinclude target/release/libkargs.a -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
    ./a.out
)
cargo rustc -p kernel-args-capi --release --target thumbv7em-none-eabihf --crate-type staticlib
echo "capi: the docs' link lines build hosts that start (shared and static), and the thumbv7em archive"
