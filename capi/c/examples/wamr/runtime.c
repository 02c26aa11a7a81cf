/*
 * runtime.c: ../runtime.h on the WAMR host (wamr_host.c).
 *
 * License: MIT OR Apache-2.0, like the rest of kernel-args.
 */
#include "runtime.h"

#include <stdio.h>
#include <string.h>

#include "wamr_host.h"
#include "wasm_export.h"

static const uint8_t *wasm_bytes;
static uint32_t wasm_len;

const char *runtime_name(void)
{
    static char name[32];
    uint32_t major, minor, patch;
    wasm_runtime_get_version(&major, &minor, &patch);
    snprintf(name, sizeof name, "WAMR %u.%u.%u", (unsigned)major, (unsigned)minor,
             (unsigned)patch);
    return name;
}

int runtime_start(const uint8_t *wasm, uint32_t len)
{
    wasm_bytes = wasm;
    wasm_len = len;
    if (wamr_host_start() != 0) {
        fprintf(stderr, "WAMR does not start\n");
        return -1;
    }
    return 0;
}

void runtime_stop(void)
{
    wamr_host_stop();
}

runtime_guest *runtime_open(int enabled, int32_t answer, const char **error)
{
    return guest_open(wasm_bytes, wasm_len, enabled, answer, error);
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
    wasm_function_inst_t f;
    return wamr_find(g, name, type, &f);
}

const char *runtime_call(runtime_guest *g, const char *name, const char *type, const uint64_t *args,
                     uint32_t argc, uint64_t *result)
{
    return wamr_call(g, name, type, args, argc, result);
}

uint8_t *runtime_memory(runtime_guest *g, uint32_t *len)
{
    return wamr_memory(g, len);
}

const char *runtime_link(const char *module_name, const char *type)
{
    /* WAMR links a module's imports from its process-wide registrations when it loads the
     * module: the host's own registration is set aside while the other one is tried. */
    static char signature[32], why[KARGS_ERROR_MESSAGE_MAX + 512];
    static NativeSymbol other[1];
    const char *close = strchr(type, ')');
    const char *result = NULL;
    if (!close || type[1] != '(' || strlen(type) + 1 > sizeof signature) return "bad type";
    /* m3_call.h's "R(P...)" as WAMR's "(P...)R" (no letter for no result). */
    snprintf(signature, sizeof signature, "%.*s%s", (int)(close - type), type + 1,
             type[0] == 'v' ? "" : (char[]){type[0], '\0'});
    other[0].symbol = LAUNCH_IMPORT;
    other[0].func_ptr = wamr_host_launch_ptr();
    other[0].signature = signature;
    other[0].attachment = NULL;
    wamr_host_unregister();
    if (!wasm_runtime_register_natives(module_name, other, 1)) {
        result = "wasm_runtime_register_natives failed";
    } else {
        const char *error = NULL;
        runtime_guest *g = guest_open(wasm_bytes, wasm_len, 1, 0, &error);
        if (!g) {
            snprintf(why, sizeof why, "%s", error);
            result = why;
        }
        guest_close(g);
        wasm_runtime_unregister_natives(module_name, other);
    }
    if (wamr_host_register() != 0 && !result) result = "wamr_host_register failed";
    return result;
}
