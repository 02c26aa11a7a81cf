/*
 * wamr_host.c: wasi_cuda_launch for WAMR on kargs_host_call (see wamr_host.h).
 *
 * License: MIT OR Apache-2.0, like the rest of kernel-args.
 */
#include "wamr_host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* WAMR's operand stack for each guest's execution environment. */
#define STACK_BYTES (64 * 1024)
/* The most parameters an export wamr_find checks may have. */
#define MAX_PARAMS 16

int32_t wamr_host_launch(wasm_exec_env_t exec_env, int64_t kernel_id, int32_t grid_x,
                         int32_t grid_y, int32_t grid_z, int32_t block_x, int32_t block_y,
                         int32_t block_z, int32_t shared_mem, int32_t args_ptr, int32_t args_len)
{
    wasm_module_inst_t instance = wasm_runtime_get_module_inst(exec_env);
    /* The guest's own host: its module instance's custom data (guest_open sets it). A
     * registration's attachment would be one for every guest. */
    dry_run_host *host = wasm_runtime_get_custom_data(instance);
    wasm_memory_inst_t memory = wasm_runtime_get_default_memory(instance);
    uint8_t *base = NULL;
    size_t len = 0;
    kargs_call call;

    call.kernel_id = kernel_id;
    call.grid[0] = grid_x;
    call.grid[1] = grid_y;
    call.grid[2] = grid_z;
    call.block[0] = block_x;
    call.block[1] = block_y;
    call.block[2] = block_z;
    call.shared_mem = shared_mem;
    call.args_ptr = args_ptr;
    call.args_len = args_len;
    /* The memory now: it may have grown (and moved) since the last call. */
    if (memory) {
        base = wasm_memory_get_base_address(memory);
        len = (size_t)(wasm_memory_get_cur_page_count(memory) *
                       wasm_memory_get_bytes_per_page(memory));
    }
    return dry_run_call(host, base, len, &call);
}

/* The registration: WAMR keeps (and sorts) the array until it is unregistered. */
static NativeSymbol natives[1];

void *wamr_host_launch_ptr(void)
{
    /* NativeSymbol holds the function as a void *: POSIX lets a function pointer convert to one,
     * ISO C does not, so the bits are copied rather than cast. */
    int32_t (*f)(wasm_exec_env_t, int64_t, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t,
                 int32_t, int32_t, int32_t) = wamr_host_launch;
    void *p;
    typedef char same_size[sizeof f == sizeof p ? 1 : -1];
    (void)sizeof(same_size);
    memcpy(&p, &f, sizeof p);
    return p;
}

int wamr_host_start(void)
{
    RuntimeInitArgs init;
    memset(&init, 0, sizeof init);
    init.mem_alloc_type = Alloc_With_System_Allocator;
    if (!wasm_runtime_full_init(&init)) return -1;
    /* An unlinked import is an error guest_open reports; WAMR's own warnings would repeat it. */
    wasm_runtime_set_log_level(WASM_LOG_LEVEL_ERROR);
    if (wamr_host_register() != 0) {
        wasm_runtime_destroy();
        return -1;
    }
    return 0;
}

void wamr_host_stop(void)
{
    wamr_host_unregister();
    wasm_runtime_destroy();
}

int wamr_host_register(void)
{
    natives[0].symbol = LAUNCH_IMPORT;
    natives[0].func_ptr = wamr_host_launch_ptr();
    natives[0].signature = WAMR_LAUNCH_SIGNATURE;
    natives[0].attachment = NULL;
    return wasm_runtime_register_natives(IMPORT_MODULE, natives,
                                         sizeof natives / sizeof natives[0])
               ? 0
               : -1;
}

void wamr_host_unregister(void)
{
    wasm_runtime_unregister_natives(IMPORT_MODULE, natives);
}

int wamr_unlinked_imports(wasm_module_t module, char *out, size_t cap)
{
    int32_t i, count = wasm_runtime_get_import_count(module);
    int unlinked = 0;
    if (cap) out[0] = '\0';
    for (i = 0; i < count; i++) {
        wasm_import_t import;
        wasm_runtime_get_import_type(module, i, &import);
        if (import.kind != WASM_IMPORT_EXPORT_KIND_FUNC || import.linked) continue;
        if (unlinked++ == 0 && cap) snprintf(out, cap, "%s.%s", import.module_name, import.name);
    }
    return unlinked;
}

guest *guest_open(const uint8_t *wasm, uint32_t wasm_len, int enabled, int32_t answer,
                  const char **error)
{
    static char why[KARGS_ERROR_MESSAGE_MAX + 512];
    char unlinked[200];
    int n;
    guest *g = calloc(1, sizeof *g);
    *error = why;
    if (!g || !(g->wasm = malloc(wasm_len ? wasm_len : 1))) {
        free(g);
        snprintf(why, sizeof why, "out of memory");
        return NULL;
    }
    if (dry_run_init(&g->host, enabled, answer) != 0) {
        snprintf(why, sizeof why, "%s", g->host.message);
        goto fail;
    }
    memcpy(g->wasm, wasm, wasm_len);
    g->module = wasm_runtime_load(g->wasm, wasm_len, g->error, sizeof g->error);
    if (!g->module) {
        snprintf(why, sizeof why, "wasm_runtime_load: %s", g->error);
        goto fail;
    }
    /* WAMR leaves an import without a native function of its module, name and type unlinked,
     * and traps only when the guest calls it; a host refuses such a guest up front. */
    n = wamr_unlinked_imports(g->module, unlinked, sizeof unlinked);
    if (n) {
        snprintf(why, sizeof why, "import %s is not linked (no native function of that module, "
                 "name and type)%s", unlinked, n > 1 ? ", nor are others" : "");
        goto fail;
    }
    /* No app heap: the guest manages its own memory. */
    g->instance = wasm_runtime_instantiate(g->module, STACK_BYTES, 0, g->error, sizeof g->error);
    if (!g->instance) {
        snprintf(why, sizeof why, "wasm_runtime_instantiate: %s", g->error);
        goto fail;
    }
    wasm_runtime_set_custom_data(g->instance, &g->host);
    g->exec_env = wasm_runtime_create_exec_env(g->instance, STACK_BYTES);
    if (!g->exec_env) {
        snprintf(why, sizeof why, "wasm_runtime_create_exec_env failed");
        goto fail;
    }
    *error = NULL;
    return g;
fail:
    guest_close(g);
    return NULL;
}

void guest_close(guest *g)
{
    if (!g) return;
    if (g->exec_env) wasm_runtime_destroy_exec_env(g->exec_env);
    if (g->instance) wasm_runtime_deinstantiate(g->instance);
    if (g->module) wasm_runtime_unload(g->module);
    free(g->wasm);
    free(g);
}

/* A type letter of m3_call.h's notation as WAMR's value kind; -1 for none. */
static int kind_of(char c)
{
    switch (c) {
    case 'i': return WASM_I32;
    case 'I': return WASM_I64;
    case 'f': return WASM_F32;
    case 'F': return WASM_F64;
    default: return -1;
    }
}

const char *wamr_find(guest *g, const char *name, const char *signature,
                      wasm_function_inst_t *function)
{
    wasm_function_inst_t f = wasm_runtime_lookup_function(g->instance, name);
    wasm_valkind_t params[MAX_PARAMS], results[1];
    uint32_t n_params, n_results, i;
    const char *p;
    int want_result = kind_of(signature[0]);
    *function = NULL;
    if (signature[0] == '\0' || signature[1] != '(') return "bad signature";
    if (!f) return "no such export";
    n_params = wasm_func_get_param_count(f, g->instance);
    n_results = wasm_func_get_result_count(f, g->instance);
    if (n_params > MAX_PARAMS || n_results > 1) return "export signature mismatch";
    wasm_func_get_param_types(f, g->instance, params);
    wasm_func_get_result_types(f, g->instance, results);
    if (want_result < 0 ? n_results != 0 || signature[0] != 'v'
                        : n_results != 1 || results[0] != want_result)
        return "export signature mismatch";
    for (p = signature + 2, i = 0; *p && *p != ')'; p++, i++)
        if (i >= n_params || kind_of(*p) != params[i]) return "export signature mismatch";
    if (i != n_params || *p != ')') return "export signature mismatch";
    *function = f;
    return NULL;
}

const char *wamr_call(guest *g, const char *name, const char *signature, const uint64_t *args,
                      uint32_t argc, uint64_t *result)
{
    wasm_function_inst_t f;
    wasm_valkind_t params[MAX_PARAMS], results[1];
    uint32_t cells[2 * MAX_PARAMS], n_cells = 0, i;
    const char *why = wamr_find(g, name, signature, &f);
    *result = 0;
    if (why) return why;
    if (argc != wasm_func_get_param_count(f, g->instance)) return "argument count mismatch";
    wasm_func_get_param_types(f, g->instance, params);
    wasm_func_get_result_types(f, g->instance, results);
    /* The arguments as WAMR's 32-bit cells: an i64 or f64 takes two, low half first. */
    for (i = 0; i < argc; i++) {
        cells[n_cells++] = (uint32_t)args[i];
        if (params[i] == WASM_I64 || params[i] == WASM_F64)
            cells[n_cells++] = (uint32_t)(args[i] >> 32);
    }
    if (!wasm_runtime_call_wasm(g->exec_env, f, n_cells, cells)) {
        const char *exception = wasm_runtime_get_exception(g->instance);
        snprintf(g->error, sizeof g->error, "[trap] %s", exception ? exception : "?");
        wasm_runtime_clear_exception(g->instance);
        return g->error;
    }
    if (wasm_func_get_result_count(f, g->instance) == 1) {
        *result = cells[0];
        if (results[0] == WASM_I64 || results[0] == WASM_F64) *result |= (uint64_t)cells[1] << 32;
    }
    return NULL;
}

uint8_t *wamr_memory(guest *g, uint32_t *len)
{
    wasm_memory_inst_t memory = wasm_runtime_get_default_memory(g->instance);
    *len = 0;
    if (!memory) return NULL;
    *len = (uint32_t)(wasm_memory_get_cur_page_count(memory) *
                      wasm_memory_get_bytes_per_page(memory));
    return wasm_memory_get_base_address(memory);
}
