/*
 * dry_run.h: the per-guest state of a C host's wasi_cuda_launch on kernel-args' C API
 * (include/kargs.h), the same whatever wasm runtime calls it.
 *
 * The whole of a host call is kargs_host_call: the capability, the argument region, the launch
 * shape, the argv, the kernel and its declaration, in the order kernel-args' own host checks
 * them. dry_run_call runs it on one call and hands each checked launch to a dry run (there is no
 * device here) that keeps a pointer-free record of it. A runtime's binding (wasm3/wasm3_host.c,
 * wamr/wamr_host.c) only reads the call's ten arguments and the guest's memory and calls
 * dry_run_call.
 *
 * Used by the example (host.c) and by the end-to-end checks
 * (capi/c/tests/guest_e2e.c); scripts/wasm3-example.sh and scripts/wamr-example.sh build and run
 * them. docs/c-embedding.md walks through it.
 *
 * License: MIT OR Apache-2.0, like the rest of kernel-args.
 */
#ifndef KARGS_EXAMPLE_DRY_RUN_H
#define KARGS_EXAMPLE_DRY_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "kargs.h"

/* The names a guest imports wasi_cuda_launch with (std-adapter/src/host.rs); its type is
 * (i64 kernel_id, i32 grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_mem, args_ptr,
 * args_len) -> i32. */
#define IMPORT_MODULE "wasi:cuda/host@0.2.0"
#define LAUNCH_IMPORT "wasi_cuda_launch"

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
typedef struct dry_run_host {
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
} dry_run_host;

/* Makes `host` a host with the capability granted or not, whose kernel 1 is vector_add (its
 * declaration parsed here) and whose dry run answers `answer` (0, or a negative ABI code).
 * Returns 0, or the kargs_declaration_parse code (the message in host->message). */
int32_t dry_run_init(dry_run_host *host, int enabled, int32_t answer);

/* One wasi_cuda_launch: `call` as the guest passed it, `memory` and `memory_len` the guest's
 * memory now (it may have grown and moved since the last call; NULL and 0 for none). Returns the
 * ABI code for the guest; never traps. Nothing of the previous call survives this one. */
int32_t dry_run_call(dry_run_host *host, uint8_t *memory, size_t memory_len,
                     const kargs_call *call);

#endif /* KARGS_EXAMPLE_DRY_RUN_H */
