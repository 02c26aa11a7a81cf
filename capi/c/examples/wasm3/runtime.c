/*
 * runtime.c: ../runtime.h on the wasm3 host (wasm3_host.c).
 *
 * License: MIT OR Apache-2.0, like the rest of kernel-args.
 */
#include "runtime.h"

#include <stdio.h>

#include "m3_call.h"
#include "wasm3.h"
#include "wasm3_host.h"

/* wasm3's value stack for the runtime runtime_link checks in. */
#define STACK_BYTES (64 * 1024)

static const uint8_t *wasm_bytes;
static uint32_t wasm_len;
static IM3Environment environment;

const char *runtime_name(void)
{
    return "wasm3 " M3_VERSION;
}

int runtime_start(const uint8_t *wasm, uint32_t len)
{
    wasm_bytes = wasm;
    wasm_len = len;
    environment = m3_NewEnvironment();
    if (!environment) fprintf(stderr, "m3_NewEnvironment failed\n");
    return environment ? 0 : -1;
}

void runtime_stop(void)
{
    m3_FreeEnvironment(environment);
}

runtime_guest *runtime_open(int enabled, int32_t answer, const char **error)
{
    return guest_open(environment, wasm_bytes, wasm_len, enabled, answer, error);
}

void runtime_close(runtime_guest *g)
{
    guest_close(g);
}

dry_run_host *runtime_host(runtime_guest *g)
{
    return &g->host;
}

const char *runtime_find(runtime_guest *g, const char *name, const char *type)
{
    IM3Function f;
    return m3call_find(g->runtime, name, type, &f);
}

const char *runtime_call(runtime_guest *g, const char *name, const char *type, const uint64_t *args,
                     uint32_t argc, uint64_t *result)
{
    static char why[512];
    M3ErrorInfo info;
    M3Result r = m3call(g->runtime, name, type, args, argc, result);
    if (!r) return NULL;
    m3_GetErrorInfo(g->runtime, &info);
    snprintf(why, sizeof why, "%s%s%s", r, info.message && *info.message ? ": " : "",
             info.message ? info.message : "");
    return why;
}

uint8_t *runtime_memory(runtime_guest *g, uint32_t *len)
{
    *len = 0;
    return m3_GetMemory(g->runtime, len, 0);
}

const char *runtime_link(const char *module_name, const char *type)
{
    IM3Runtime runtime = m3_NewRuntime(environment, STACK_BYTES, NULL);
    IM3Module module = NULL;
    dry_run_host host;
    M3Result r = "m3_NewRuntime failed";
    if (runtime) r = m3_ParseModule(environment, &module, wasm_bytes, wasm_len);
    if (runtime && !r) {
        r = m3_LoadModule(runtime, module); /* the runtime owns the module from here on */
        if (r) m3_FreeModule(module);
    }
    if (!r && dry_run_init(&host, 1, 0) != 0) r = "dry_run_init failed";
    /* wasm3 refuses the link of a function whose module, name or type is not the import's. */
    if (!r) r = m3_LinkRawFunctionEx(module, module_name, LAUNCH_IMPORT, type, wasm3_host_launch,
                                     &host);
    if (runtime) m3_FreeRuntime(runtime);
    return r;
}
