/*
 * wamr_host.h: wasi_cuda_launch for WAMR (the WebAssembly Micro Runtime, 2.x) on kernel-args'
 * C API (include/kargs.h).
 *
 * Registers the per-guest host of ../dry_run.h (kargs_host_call and a dry run) with WAMR as a
 * native function: the binding takes the call's ten arguments as WAMR passes them, finds the
 * guest's host in its module instance's custom data and the guest's memory with
 * wasm_runtime_get_default_memory, and calls dry_run_call.
 *
 * Used by the example (../host.c) and by the end-to-end checks (capi/c/tests/guest_e2e.c with
 * runtime.c); scripts/wamr-example.sh builds and runs both.
 * docs/c-embedding.md walks through it.
 *
 * License: MIT OR Apache-2.0, like the rest of kernel-args.
 */
#ifndef KARGS_EXAMPLE_WAMR_HOST_H
#define KARGS_EXAMPLE_WAMR_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "dry_run.h"
#include "kargs.h"
#include "wasm_export.h"

/* wasi_cuda_launch's type (dry_run.h) in WAMR's signature notation: the parameters, then the
 * result; `I` i64, `i` i32. Every parameter is a plain integer (no `*` or `$`), so WAMR neither
 * translates nor checks the argument region: kargs_host_call does. */
#define WAMR_LAUNCH_SIGNATURE "(Iiiiiiiiii)i"

/* Starts WAMR (the system allocator, so that AddressSanitizer sees every allocation; warnings
 * off) and registers wasi_cuda_launch under IMPORT_MODULE, once per process, before any guest is
 * loaded: WAMR links a module's imports when it loads it. Returns 0, or -1 when WAMR does not
 * start. */
int wamr_host_start(void);

/* Unregisters wasi_cuda_launch and stops WAMR; no guest may be open. */
void wamr_host_stop(void);

/* The registration alone, for a host that registers other natives under IMPORT_MODULE for a
 * while (the end-to-end checks' link test): 0, or -1 when WAMR refuses. */
int wamr_host_register(void);
void wamr_host_unregister(void);

/* wasi_cuda_launch as WAMR calls a native function of WAMR_LAUNCH_SIGNATURE: the execution
 * environment, then the wasm arguments. The guest's dry_run_host is its module instance's custom
 * data. Never traps: every failure is an ABI code for the guest. */
int32_t wamr_host_launch(wasm_exec_env_t exec_env, int64_t kernel_id, int32_t grid_x,
                         int32_t grid_y, int32_t grid_z, int32_t block_x, int32_t block_y,
                         int32_t block_z, int32_t shared_mem, int32_t args_ptr, int32_t args_len);

/* wamr_host_launch as NativeSymbol's func_ptr (a void *) holds it. */
void *wamr_host_launch_ptr(void);

/* A WAMR module instance with wasi_cuda_launch linked to its own host. */
typedef struct guest {
    uint8_t *wasm; /* the guest's copy of the module's bytes, which WAMR keeps until unload */
    wasm_module_t module;
    wasm_module_inst_t instance;
    wasm_exec_env_t exec_env;
    dry_run_host host;
    /* WAMR's last error (load, instantiation, a trap), for the caller to print. */
    char error[256];
} guest;

/* Loads `wasm` (copied: WAMR's loader writes into the buffer it is given) and instantiates it
 * with wasi_cuda_launch linked to a host made by dry_run_init(enabled, answer). A module with an
 * import left unlinked (no native function of its module, name and type) is refused here,
 * not when the guest first calls it. NULL with *error set (valid until the next guest_open)
 * when WAMR refuses. */
guest *guest_open(const uint8_t *wasm, uint32_t wasm_len, int enabled, int32_t answer,
                  const char **error);
void guest_close(guest *g);

/*
 * Finds the export `name` and checks that its type is `signature`, in the notation of wasm3's
 * m3_call.h: the result (`v` for none), then the parameters in parentheses, `i` i32, `I` i64,
 * `f` f32, `F` f64; "i(i)" is (i32) -> i32. Returns NULL and the function in *function, or why
 * not: no such export, or one of another type ("export signature mismatch").
 */
const char *wamr_find(guest *g, const char *name, const char *signature,
                      wasm_function_inst_t *function);

/*
 * Calls the export `name` of type `signature` (checked as wamr_find does) with `argc` arguments given as their bits, and writes the result's bits to *result (zero-extended;
 * 0 for no result). Returns NULL, or why not: no such export, another type, or a trap (WAMR's
 * exception text, kept in g->error; the exception is cleared so the guest can be called again).
 */
const char *wamr_call(guest *g, const char *name, const char *signature, const uint64_t *args,
                      uint32_t argc, uint64_t *result);

/* The guest's memory now, and its length in bytes (NULL and 0 for a module without one). */
uint8_t *wamr_memory(guest *g, uint32_t *len);

/* Each function import of `module` that WAMR did not link: writes the first as
 * "module.name" to `out` and returns how many there are. */
int wamr_unlinked_imports(wasm_module_t module, char *out, size_t cap);

#endif /* KARGS_EXAMPLE_WAMR_HOST_H */
