/*
 * wasm3_host.c: wasi_cuda_launch for wasm3 on kargs_host_call (see wasm3_host.h).
 *
 * License: MIT OR Apache-2.0, like the rest of kernel-args.
 */
#include "wasm3_host.h"

#include <stdlib.h>
#include <string.h>

/* wasm3's value stack for each runtime. */
#define STACK_BYTES (64 * 1024)

/* Reads argument `index` of a raw call: one 64-bit slot each, the value in the slot's first
 * bytes (what m3_api_defs.h's m3ApiGetArg does). */
static int32_t arg_i32(const uint64_t *sp, int index)
{
    int32_t v;
    memcpy(&v, &sp[index], sizeof v);
    return v;
}

static int64_t arg_i64(const uint64_t *sp, int index)
{
    int64_t v;
    memcpy(&v, &sp[index], sizeof v);
    return v;
}

const void *wasm3_host_launch(IM3Runtime runtime, uint64_t *sp, void *mem, void *cookie)
{
    dry_run_host *host = cookie;
    kargs_call call;
    uint32_t memory_len = 0;
    uint8_t *memory;
    int32_t rc;
    (void)mem; /* the memory's base; m3_GetMemory gives its length too */

    call.kernel_id = arg_i64(sp, 0);
    call.grid[0] = arg_i32(sp, 1);
    call.grid[1] = arg_i32(sp, 2);
    call.grid[2] = arg_i32(sp, 3);
    call.block[0] = arg_i32(sp, 4);
    call.block[1] = arg_i32(sp, 5);
    call.block[2] = arg_i32(sp, 6);
    call.shared_mem = arg_i32(sp, 7);
    call.args_ptr = arg_i32(sp, 8);
    call.args_len = arg_i32(sp, 9);

    /* The memory now: it may have grown (and moved) since the last call. wasm3 0.4.7 gives a
     * module without a memory a 0-byte one (NULL, 0), which kargs_host_call takes for no
     * memory. */
    memory = m3_GetMemory(runtime, &memory_len, 0);
    rc = dry_run_call(host, memory, memory_len, &call);
    memcpy(&sp[0], &rc, sizeof rc); /* m3ApiReturn */
    return m3Err_none;
}

guest *guest_open(IM3Environment environment, const uint8_t *wasm, uint32_t wasm_len, int enabled,
                  int32_t answer, const char **error)
{
    guest *g = calloc(1, sizeof *g);
    IM3Module module = NULL;
    M3Result r = NULL;
    *error = NULL;
    if (!g) {
        *error = "out of memory";
        return NULL;
    }
    if (dry_run_init(&g->host, enabled, answer) != 0) {
        *error = g->host.message;
        free(g);
        return NULL;
    }
    g->runtime = m3_NewRuntime(environment, STACK_BYTES, NULL);
    if (!g->runtime) {
        *error = "m3_NewRuntime failed";
        free(g);
        return NULL;
    }
    r = m3_ParseModule(environment, &module, wasm, wasm_len);
    if (!r) {
        r = m3_LoadModule(g->runtime, module); /* the runtime owns the module from here on */
        if (r) m3_FreeModule(module);
    }
    if (!r)
        r = m3_LinkRawFunctionEx(module, IMPORT_MODULE, LAUNCH_IMPORT, LAUNCH_SIGNATURE,
                                 wasm3_host_launch, &g->host);
    if (r) {
        *error = r;
        m3_FreeRuntime(g->runtime);
        free(g);
        return NULL;
    }
    return g;
}

void guest_close(guest *g)
{
    if (!g) return;
    m3_FreeRuntime(g->runtime);
    free(g);
}
