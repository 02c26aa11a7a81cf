/*
 * A C host for wasi-cuda guests, on kernel-args' C API (include/kargs.h, libkargs), on wasm3 or
 * on WAMR: the runtime is the one it is linked with (runtime.h; wasm3/runtime.c or
 * wamr/runtime.c).
 *
 * The runtime runs the C vector_add guest (capi/c/examples/vector_add.c). Its binding
 * (wasm3/wasm3_host.c, a raw function; wamr/wamr_host.c, a registered native) hands each
 * `wasi_cuda_launch` to dry_run.c, which makes the call with kargs_host_call: it checks it as
 * kernel-args' own host does (the capability, the argument region, the launch shape, the argv,
 * the kernel and its declaration) and hands a checked launch to the host's callback, here a dry
 * run that records it (there is no device).
 *
 * This program runs the guest's vector_add of 1000 elements and prints the launch the host was
 * handed; then sends, as a malicious guest would, a count past the guest's windows, and prints
 * the host's refusal. Exit status 0 when both went as described.
 *
 *   scripts/wasm3-example.sh          # builds wasm3, libkargs, the guest and this; runs it
 *   scripts/wamr-example.sh           # the same with WAMR
 *   host vector_add.wasm
 *
 * The end-to-end checks of the same hosts are capi/c/tests/guest_e2e.c. docs/c-embedding.md
 * walks through both.
 *
 * License: MIT OR Apache-2.0, like the rest of kernel-args.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dry_run.h"
#include "kargs.h"
#include "runtime.h"

/* Calls the guest's export `name` of type `signature` (an i32 result); INT32_MIN when the
 * runtime refuses. */
static int32_t call_i32(runtime_guest *g, const char *name, const char *signature, uint64_t *args,
                        uint32_t argc)
{
    uint64_t result = 0;
    const char *r = runtime_call(g, name, signature, args, argc, &result);
    if (r) {
        fprintf(stderr, "call %s: %s\n", name, r);
        return INT32_MIN;
    }
    return (int32_t)(uint32_t)result;
}

static void print_launch(const launch_record *r)
{
    size_t i;
    printf("  kernel %" PRId64 ", grid [%" PRIu32 ", %" PRIu32 ", %" PRIu32 "], block [%" PRIu32
           ", %" PRIu32 ", %" PRIu32 "], %zu arguments:\n",
           r->kernel_id, r->grid[0], r->grid[1], r->grid[2], r->block[0], r->block[1], r->block[2],
           r->n_args);
    for (i = 0; i < r->n_args; i++) {
        const recorded_arg *a = &r->args[i];
        if (a->tag == KARGS_TAG_PTR)
            printf("    %zu: window [%" PRIu32 ", +%" PRIu32 ")\n", i, a->guest_offset, a->len);
        else
            printf("    %zu: tag 0x%02x, bits %" PRIu64 "\n", i, a->tag, a->bits);
    }
}

int main(int argc, char **argv)
{
    const char *error = NULL;
    uint8_t *bytes;
    uint32_t len = 0, mem = 0;
    runtime_guest *g;
    dry_run_host *host;
    int32_t rc;
    int ok = 1;
    if (argc != 2) {
        fprintf(stderr, "usage: %s GUEST.wasm (the C guest, capi/c/examples/vector_add.c)\n",
                argv[0]);
        return 2;
    }
    bytes = read_module(argv[1], &len);
    if (!bytes || runtime_start(bytes, len) != 0) {
        fprintf(stderr, "%s: cannot read %s or start the runtime\n", argv[0], argv[1]);
        return 2;
    }
    /* The dry run answers -1 (NotAvailable: no device); the capability is granted. */
    g = runtime_open(1, KARGS_ABI_NOT_AVAILABLE, &error);
    if (!g) {
        fprintf(stderr, "%s: %s\n", argv[0], error);
        return 2;
    }
    host = runtime_host(g);
    printf("%s, guest %s (%" PRIu32 " bytes)\n", runtime_name(), argv[1], len);

    {
        uint64_t n = 1000;
        rc = call_i32(g, "run_vector_add", "i(i)", &n, 1);
    }
    printf("run_vector_add(1000) answered %" PRId32 " (%s); the host was handed:\n", rc,
           kargs_abi_error_name(rc));
    if (host->recorded) print_launch(&host->record);
    ok = ok && rc == KARGS_ABI_NOT_AVAILABLE && host->recorded && host->record.n_args == 4;

    {
        /* vector_add's own windows (64 bytes each), with n = 2^20: the declaration says the
         * kernel touches n * 4 bytes through each. */
        uint64_t raw[10] = {VECTOR_ADD_KERNEL_ID, 1, 1, 1, 256, 1, 1, 0, 0, 0};
        uint8_t argv_bytes[3 * 9 + 5] = {0};
        uint32_t offset, i;
        int b;
        uint8_t *memory;
        for (i = 0; i < 3; i++) {
            static const char *const exports[3] = {"a_ptr", "b_ptr", "out_ptr"};
            offset = (uint32_t)call_i32(g, exports[i], "i()", NULL, 0);
            argv_bytes[9 * i] = KARGS_TAG_PTR;
            for (b = 0; b < 4; b++) argv_bytes[9 * i + 1 + b] = (uint8_t)(offset >> (8 * b));
            argv_bytes[9 * i + 5] = 64; /* len 64, little-endian */
        }
        argv_bytes[27] = KARGS_TAG_U32;
        argv_bytes[30] = 0x10; /* n = 0x00100000 = 2^20, little-endian */
        /* At the end of the guest's memory, as the guest could have written it. */
        memory = runtime_memory(g, &mem);
        memcpy(memory + mem - sizeof argv_bytes, argv_bytes, sizeof argv_bytes);
        raw[8] = mem - sizeof argv_bytes;
        raw[9] = sizeof argv_bytes;
        rc = call_i32(g, "launch_raw", LAUNCH_TYPE, raw, 10);
    }
    printf("launch_raw with n = 2^20 answered %" PRId32 ": %s\n", rc, host->message);
    ok = ok && rc == KARGS_ABI_INVALID_ARGS && !host->recorded &&
         host->error.kind == KARGS_ERROR_KIND_DECLARATION_WINDOW_TOO_SHORT;

    runtime_close(g);
    runtime_stop();
    free(bytes);
    printf("%s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
