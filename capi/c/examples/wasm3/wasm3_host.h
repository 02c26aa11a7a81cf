/*
 * wasm3_host.h: wasi_cuda_launch for wasm3 on kernel-args' C API (include/kargs.h).
 *
 * The whole of a host call is kargs_host_call: the capability, the argument region, the launch
 * shape, the argv, the kernel and its declaration, in the order kernel-args' own host checks
 * them; this file links it into a wasm3 runtime as a raw function, and hands each checked launch
 * to a dry run (there is no device here) that keeps a pointer-free record of it.
 *
 * Used by the example (host.c) and by the end-to-end checks (capi/c/tests/wasm3_e2e.c);
 * scripts/wasm3-example.sh builds and runs both. docs/c-embedding.md walks through it.
 *
 * License: MIT OR Apache-2.0, like the rest of kernel-args.
 */
#ifndef KARGS_EXAMPLE_WASM3_HOST_H
#define KARGS_EXAMPLE_WASM3_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "kargs.h"
#include "wasm3.h"

/* The names and the type a guest imports wasi_cuda_launch with (std-adapter/src/host.rs). */
#define IMPORT_MODULE "wasi:cuda/host@0.2.0"
#define LAUNCH_IMPORT "wasi_cuda_launch"
/* (i64 kernel_id, i32 grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_mem, args_ptr,
 * args_len) -> i32, in wasm3's notation: the result, then the parameters. */
#define LAUNCH_SIGNATURE "i(Iiiiiiiiii)"

/* The guest's kernel (capi/c/examples/vector_add.c) and what it does with its arguments. */
#define VECTOR_ADD_KERNEL_ID 1
#define VECTOR_ADD_DECLARATION "vector_add(a: &[f32; n], b: &[f32; n], out: &mut [f32; n], n: u32)"

/* An argument as the host records it: no host pointer, only what the guest sent (a window is
 * its guest offset and length), so a record stays meaningful after guest memory moves. */
typedef struct recorded_arg {
    uint8_t tag;           /* KARGS_TAG_* */
    uint64_t bits;         /* a scalar's value bits (kargs_arg.bits) */
    uint32_t guest_offset; /* KARGS_TAG_PTR: the window */
    uint32_t len;
    uint32_t byte_offset; /* where the record starts in the argv */
} recorded_arg;

/* A launch every check let through: what the launcher was handed, and what it answered. */
typedef struct launch_record {
    int64_t kernel_id;
    uint32_t grid[3], block[3], shared_mem;
    size_t n_args;
    recorded_arg args[KARGS_MAX_KERNEL_ARGS];
    int32_t result;
} launch_record;

/* The per-guest state of wasi_cuda_launch. */
typedef struct wasm3_host {
    /* What kargs_host_call checks against: the kernels and the capability. */
    kargs_declaration vector_add;
    kargs_kernel kernels[1];
    kargs_host kargs;
    /* The dry run: what it answers, the launches it was handed, the host pointers it found
     * outside the call's memory (always 0), and the call's memory to check them against. */
    int32_t answer;
    uint64_t launches;
    uint64_t bad_host_ptrs;
    const uint8_t *memory;
    size_t memory_len;
    /* The last call: its record (valid while `recorded`), its answer, and on failure why. */
    int recorded;
    launch_record record;
    int32_t code;
    kargs_error error;
    char message[KARGS_ERROR_MESSAGE_MAX + 64];
} wasm3_host;

/* Makes `host` a host with the capability granted or not, whose kernel 1 is vector_add (its
 * declaration parsed here) and whose dry run answers `answer` (0, or a negative ABI code).
 * Returns 0, or the kargs_declaration_parse code. */
int32_t wasm3_host_init(wasm3_host *host, int enabled, int32_t answer);

/* wasi_cuda_launch as wasm3 calls a raw function linked with m3_LinkRawFunctionEx, `cookie` the
 * wasm3_host. Never traps: every failure is an ABI code for the guest. */
const void *wasm3_host_launch(IM3Runtime runtime, uint64_t *sp, void *mem, void *cookie);

/* A wasm3 runtime with a guest loaded and wasi_cuda_launch linked to its own host. */
typedef struct guest {
    IM3Runtime runtime;
    wasm3_host host;
} guest;

/* Loads `wasm` (which must outlive the guest) into a fresh runtime of `environment` and links
 * wasi_cuda_launch to a host made by wasm3_host_init(enabled, answer). NULL with *error set
 * when wasm3 refuses. */
guest *guest_open(IM3Environment environment, const uint8_t *wasm, uint32_t wasm_len, int enabled,
                  int32_t answer, const char **error);
void guest_close(guest *g);

#endif
