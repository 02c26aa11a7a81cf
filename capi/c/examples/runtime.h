/*
 * runtime.h: what the example (host.c) and the end-to-end checks (capi/c/tests/guest_e2e.c) need
 * of a wasm runtime's host, so that one program of each serves every C runtime. wasm3/runtime.c
 * implements it on the wasm3 host (wasm3/wasm3_host.c), wamr/runtime.c on the WAMR host
 * (wamr/wamr_host.c); scripts/wasm3-example.sh and scripts/wamr-example.sh link each program
 * with one of them. The hosts themselves (the part an embedder copies) are *_host.c and
 * dry_run.c; this interface is only how the programs here drive them.
 *
 * Types are written in the notation of wasm3's m3_call.h: the result (`v` for none), then the
 * parameters in parentheses, `i` i32, `I` i64, `f` f32, `F` f64.
 *
 * License: MIT OR Apache-2.0, like the rest of kernel-args.
 */
#ifndef KARGS_EXAMPLE_RUNTIME_H
#define KARGS_EXAMPLE_RUNTIME_H

#include <stdint.h>

#include "dry_run.h"

/* wasi_cuda_launch's type, (i64, i32 x 9) -> i32. */
#define LAUNCH_TYPE "i(Iiiiiiiiii)"

/* A guest: a module instance with wasi_cuda_launch linked to its own dry_run_host. */
typedef struct guest runtime_guest;

/* The runtime and its version, as the checks' first line prints it ("wasm3 0.4.7"). */
const char *runtime_name(void);

/* Starts the runtime for the module `wasm` (which must outlive runtime_stop); 0, or -1 with a
 * message on stderr. */
int runtime_start(const uint8_t *wasm, uint32_t wasm_len);
void runtime_stop(void);

/* A fresh guest whose dry run answers `answer`, the capability granted or not; NULL with
 * *error set when the runtime refuses. */
runtime_guest *runtime_open(int enabled, int32_t answer, const char **error);
void runtime_close(runtime_guest *g);
dry_run_host *runtime_host(runtime_guest *g);

/* NULL when the guest exports a function `name` of type `type`, else why not. */
const char *runtime_find(runtime_guest *g, const char *name, const char *type);

/* Calls the export `name` of type `type` with `argc` arguments given as their bits; the
 * result's bits in *result. NULL, or why not (no such export, another type, a trap with the
 * runtime's details). */
const char *runtime_call(runtime_guest *g, const char *name, const char *type, const uint64_t *args,
                     uint32_t argc, uint64_t *result);

/* The guest's memory now, and its length. */
uint8_t *runtime_memory(runtime_guest *g, uint32_t *len);

/* A module's bytes from the file at `path` (malloc'd; NULL when it cannot be read). In
 * dry_run.c, which every program here links. */
uint8_t *read_module(const char *path, uint32_t *len);

/* Loads the module in a fresh guest with wasi_cuda_launch offered as import module `module`
 * with type `type`, instead of as the host offers it: NULL when the guest's imports link, else
 * the runtime's refusal. */
const char *runtime_link(const char *module, const char *type);

#endif /* KARGS_EXAMPLE_RUNTIME_H */
