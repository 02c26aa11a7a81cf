/*
 * m3_call.h: calling a guest's export with typed arguments and reading its result, on wasm3
 * 0.4.7 (the version in the crate wasm3-sys 0.3.0; capi/c/examples/wasm3/sources/).
 *
 * wasm3 0.4.7's public API calls an export with its arguments as decimal strings
 * (m3_CallWithArgs) and has no call that hands back the result: the result stays in the first
 * slot of the runtime's value stack, which only wasm3's internal headers describe. This file
 * (m3_call.c) is the one place that reads them, so that host.c needs only wasm3.h. wasm3 0.5
 * has m3_CallV and m3_GetResultsV for this; with it, m3_call.c shrinks to those two calls.
 *
 * Not part of kernel-args: a helper of the wasm3 example (scripts/wasm3-example.sh builds it).
 * License: MIT OR Apache-2.0, like the rest of kernel-args.
 */
#ifndef KARGS_EXAMPLE_M3_CALL_H
#define KARGS_EXAMPLE_M3_CALL_H

#include <stdint.h>

#include "wasm3.h"

/*
 * Finds the export `name` of the module loaded in `runtime` and checks that its wasm type is
 * `signature`, in wasm3's notation (m3_LinkRawFunction's): the result type, then the
 * parameters in parentheses, `i` i32, `I` i64, `f` f32, `F` f64, `v` no result; "i(i)" is
 * (i32) -> i32, "i(Iiiiiiiiii)" is wasi_cuda_launch's (i64, i32 x 9) -> i32.
 *
 * Returns NULL (m3Err_none) and the function in *function, or a wasm3 error: no such
 * function, or one of another type ("export signature mismatch").
 */
M3Result m3call_find(IM3Runtime runtime, const char *name, const char *signature,
                     IM3Function *function);

/*
 * Calls the export `name` (checked against `signature` as m3call_find does) with `argc`
 * arguments, each given as its bits (an i32 or f32 in the low 32 bits), and writes the
 * result's bits to *result (an i32 or f32 in the low 32 bits, zero-extended; 0 for no result).
 *
 * Returns NULL (m3Err_none), or a wasm3 error: the lookup's, an argument count that is not the
 * signature's, or a trap ("[trap] ...": m3_GetErrorInfo has the details).
 */
M3Result m3call(IM3Runtime runtime, const char *name, const char *signature,
                const uint64_t *args, uint32_t argc, uint64_t *result);

#endif /* KARGS_EXAMPLE_M3_CALL_H */
