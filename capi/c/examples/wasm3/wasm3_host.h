/*
 * wasm3_host.h: wasi_cuda_launch for wasm3 on kernel-args' C API (include/kargs.h).
 *
 * Links the per-guest host of ../dry_run.h (kargs_host_call and a dry run) into a wasm3 runtime
 * as a raw function: the binding reads the call's ten arguments from wasm3's stack and the
 * guest's memory with m3_GetMemory, and calls dry_run_call.
 *
 * Used by the example (../host.c) and by the end-to-end checks (capi/c/tests/guest_e2e.c with
 * runtime.c); scripts/wasm3-example.sh builds and runs both.
 * docs/c-embedding.md walks through it.
 *
 * License: MIT OR Apache-2.0, like the rest of kernel-args.
 */
#ifndef KARGS_EXAMPLE_WASM3_HOST_H
#define KARGS_EXAMPLE_WASM3_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "dry_run.h"
#include "kargs.h"
#include "wasm3.h"

/* wasi_cuda_launch's type (dry_run.h) in wasm3's notation: the result, then the parameters. */
#define LAUNCH_SIGNATURE "i(Iiiiiiiiii)"

/* wasi_cuda_launch as wasm3 calls a raw function linked with m3_LinkRawFunctionEx, `cookie` the
 * dry_run_host. Never traps: every failure is an ABI code for the guest. */
const void *wasm3_host_launch(IM3Runtime runtime, uint64_t *sp, void *mem, void *cookie);

/* A wasm3 runtime with a guest loaded and wasi_cuda_launch linked to its own host. */
typedef struct guest {
    IM3Runtime runtime;
    dry_run_host host;
} guest;

/* Loads `wasm` (which must outlive the guest) into a fresh runtime of `environment` and links
 * wasi_cuda_launch to a host made by dry_run_init(enabled, answer). NULL with *error set
 * when wasm3 refuses. */
guest *guest_open(IM3Environment environment, const uint8_t *wasm, uint32_t wasm_len, int enabled,
                  int32_t answer, const char **error);
void guest_close(guest *g);

#endif
