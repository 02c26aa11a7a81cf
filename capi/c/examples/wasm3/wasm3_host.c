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

/* The dry run, as kargs_host_call's callback: records the checked launch (without host
 * pointers), checks what a device that reads host memory would use (host_ptr is memory +
 * guest_offset, inside memory), and answers what it was told to. */
static int32_t dry_run_launch(void *ctx, const kargs_launch *launch)
{
    wasm3_host *host = ctx;
    launch_record *record = &host->record;
    size_t i;
    host->launches++;
    record->kernel_id = launch->kernel_id;
    memcpy(record->grid, launch->grid, sizeof record->grid);
    memcpy(record->block, launch->block, sizeof record->block);
    record->shared_mem = launch->shared_mem_bytes;
    record->n_args = launch->args_len;
    for (i = 0; i < launch->args_len; i++) {
        const kargs_arg *a = &launch->args[i];
        record->args[i].tag = a->tag;
        record->args[i].bits = a->bits;
        record->args[i].guest_offset = a->guest_offset;
        record->args[i].len = a->len;
        record->args[i].byte_offset = a->byte_offset;
        if (a->tag == KARGS_TAG_PTR &&
            (a->host_ptr != host->memory + a->guest_offset ||
             (uint64_t)a->guest_offset + a->len > host->memory_len))
            host->bad_host_ptrs++;
    }
    host->recorded = 1;
    return host->answer;
}

int32_t wasm3_host_init(wasm3_host *host, int enabled, int32_t answer)
{
    int32_t rc;
    memset(host, 0, sizeof *host);
    rc = kargs_declaration_parse(VECTOR_ADD_DECLARATION, strlen(VECTOR_ADD_DECLARATION),
                                 &host->vector_add, &host->error, host->message,
                                 sizeof host->message);
    if (rc != 0) return rc;
    host->kernels[0].id = VECTOR_ADD_KERNEL_ID;
    host->kernels[0].declaration = &host->vector_add;
    host->kargs.kernels = host->kernels;
    host->kargs.kernels_len = 1;
    host->kargs.launch = dry_run_launch;
    host->kargs.ctx = host;
    host->kargs.max_shared_mem_bytes = 0; /* KARGS_DEFAULT_MAX_SHARED_MEM_BYTES */
    host->kargs.enabled = enabled ? 1 : 0;
    host->kargs.trusted = 0;
    host->answer = answer;
    return 0;
}

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
    wasm3_host *host = cookie;
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
     * memory. Nothing of the previous call survives this one. */
    memory = m3_GetMemory(runtime, &memory_len, 0);
    host->recorded = 0;
    host->memory = memory;
    host->memory_len = memory_len;
    rc = kargs_host_call(&host->kargs, memory, memory_len, &call, &host->error, host->message,
                         sizeof host->message);
    if (host->recorded) host->record.result = rc;
    host->code = rc;
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
    if (wasm3_host_init(&g->host, enabled, answer) != 0) {
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
