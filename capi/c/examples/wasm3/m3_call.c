/*
 * m3_call.c: typed calls into a guest on wasm3 0.4.7 (m3_call.h says why this file exists).
 *
 * The only file of the example that includes wasm3's internal headers: m3_env.h for the
 * runtime's value stack and a function's type, m3_bind.h for the signature parser that
 * m3_LinkRawFunction uses. Compiled with the same defines as wasm3 itself
 * (scripts/wasm3-example.sh), since those headers' structs depend on them.
 *
 * License: MIT OR Apache-2.0, like the rest of kernel-args.
 */
#include "m3_call.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "m3_bind.h"
#include "m3_env.h"

/* The most arguments a call takes here (wasi_cuda_launch's launch_raw export has 10). */
#define MAX_ARGS 16

M3Result m3call_find(IM3Runtime runtime, const char *name, const char *signature,
                     IM3Function *function)
{
    IM3FuncType expected = NULL;
    M3Result result;
    *function = NULL;
    result = m3_FindFunction(function, runtime, name);
    if (result) return result;
    result = SignatureToFuncType(&expected, signature);
    if (result) return result;
    if (!AreFuncTypesEqual(expected, (*function)->funcType)) {
        *function = NULL;
        result = "export signature mismatch";
    }
    m3Free(expected);
    return result;
}

M3Result m3call(IM3Runtime runtime, const char *name, const char *signature,
                const uint64_t *args, uint32_t argc, uint64_t *result)
{
    /* m3_CallWithArgs parses each argument with strtoul/strtoull (base 10) into its slot: the
     * bits written in decimal arrive exactly, negative values and float bits included. */
    char text[MAX_ARGS][24];
    const char *argv[MAX_ARGS];
    IM3Function function;
    IM3FuncType type;
    M3Result r;
    uint32_t i;

    *result = 0;
    r = m3call_find(runtime, name, signature, &function);
    if (r) return r;
    type = function->funcType;
    if (argc > MAX_ARGS || argc != type->numArgs) return m3Err_argumentCountMismatch;
    for (i = 0; i < argc; i++) {
        switch (type->argTypes[i]) {
        case c_m3Type_i32:
        case c_m3Type_f32:
            snprintf(text[i], sizeof text[i], "%" PRIu32, (uint32_t)args[i]);
            break;
        default:
            snprintf(text[i], sizeof text[i], "%" PRIu64, args[i]);
            break;
        }
        argv[i] = text[i];
    }
    r = m3_CallWithArgs(function, argc, argv);
    if (r) return r;

    /* The result is in the first slot of the runtime's stack, where the arguments were. */
    switch (type->returnType) {
    case c_m3Type_i32:
    case c_m3Type_f32: {
        uint32_t bits;
        memcpy(&bits, runtime->stack, sizeof bits);
        *result = bits;
        break;
    }
    case c_m3Type_i64:
    case c_m3Type_f64:
        memcpy(result, runtime->stack, sizeof *result);
        break;
    default:
        break;
    }
    return m3Err_none;
}
