/*
 * guest_e2e.c: a C host (kargs_host_call behind a wasm runtime's import binding) held to the
 * expectations demo/tests/guest_e2e.rs holds the wasmtime and wasmi hosts to, test by test, with
 * the C vector_add guest (capi/c/examples/vector_add.c). The runtime is the one it is linked
 * with (capi/c/examples/runtime.h): wasm3/runtime.c (wasm3) or wamr/runtime.c (WAMR). Prints
 * each check and exits with status 1 if any failed.
 *
 *   scripts/wasm3-example.sh          # builds wasm3, libkargs, the guest and this; runs it
 *   scripts/wamr-example.sh           # the same with WAMR
 *   wasm3_e2e vector_add.wasm         # or wamr_e2e
 *
 * License: MIT OR Apache-2.0, like the rest of kernel-args.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dry_run.h"
#include "runtime.h"
#include "kargs.h"

/* ---- The checks ---------------------------------------------------------------------------- */

static unsigned checks, failures;

static void report(int ok, const char *fmt, va_list ap)
{
    checks++;
    if (!ok) failures++;
    fputs(ok ? "ok    " : "FAIL  ", stdout);
    vprintf(fmt, ap);
    fputc('\n', stdout);
}

static void expect(int ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(ok, fmt, ap);
    va_end(ap);
}

/* want == got, or a failure that shows both. */
static void expect_eq(int64_t got, int64_t want, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(got == want, fmt, ap);
    va_end(ap);
    if (got != want) printf("      got %" PRId64 ", want %" PRId64 "\n", got, want);
}

static void expect_str(const char *got, const char *want, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(strcmp(got, want) == 0, fmt, ap);
    va_end(ap);
    if (strcmp(got, want) != 0) printf("      got \"%s\"\n      want \"%s\"\n", got, want);
}

/* ---- The guest ----------------------------------------------------------------------------- */

/* The guest's own codes (capi/c/examples/vector_add.c). */
#define CAPACITY 4096
#define THREADS_PER_BLOCK 256
#define ERR_BAD_COUNT (-100)
/* Wire sizes (docs/wire-format.md): a pointer record is a tag and two u32, a u32 record a tag
 * and one. */
#define PTR_RECORD 9u
#define U32_RECORD 5u

/* A guest whose launcher answers `answer`, the capability granted or not; NULL (a failed
 * check) when the runtime refuses. */
static runtime_guest *open_guest(int enabled, int32_t answer)
{
    const char *error = NULL;
    runtime_guest *g = runtime_open(enabled, answer, &error);
    if (!g) expect(0, "load and link the guest: %s", error ? error : "?");
    return g;
}

/* Calls an export that must not trap; a trap or a missing export is a failed check (and the
 * answer INT32_MIN, which no check expects). */
static uint64_t call(runtime_guest *g, const char *name, const char *signature, const uint64_t *args,
                     uint32_t argc)
{
    uint64_t result = 0;
    const char *r = runtime_call(g, name, signature, args, argc, &result);
    if (r) {
        expect(0, "call %s: %s", name, r);
        return (uint32_t)INT32_MIN;
    }
    return result;
}

static int32_t run(runtime_guest *g, int32_t n)
{
    uint64_t arg = (uint32_t)n;
    return (int32_t)(uint32_t)call(g, "run_vector_add", "i(i)", &arg, 1);
}

static int32_t call_i32(runtime_guest *g, const char *name, int32_t n)
{
    uint64_t arg = (uint32_t)n;
    return (int32_t)(uint32_t)call(g, name, "i(i)", &arg, 1);
}

static int32_t send(runtime_guest *g, const char *name)
{
    return (int32_t)(uint32_t)call(g, name, "i()", NULL, 0);
}

static float out_at(runtime_guest *g, int32_t i)
{
    uint64_t arg = (uint32_t)i;
    uint32_t bits = (uint32_t)call(g, "out_at", "f(i)", &arg, 1);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static int32_t launch_raw(runtime_guest *g, const kargs_call *c)
{
    uint64_t args[10];
    args[0] = (uint64_t)c->kernel_id;
    args[1] = (uint32_t)c->grid[0];
    args[2] = (uint32_t)c->grid[1];
    args[3] = (uint32_t)c->grid[2];
    args[4] = (uint32_t)c->block[0];
    args[5] = (uint32_t)c->block[1];
    args[6] = (uint32_t)c->block[2];
    args[7] = (uint32_t)c->shared_mem;
    args[8] = (uint32_t)c->args_ptr;
    args[9] = (uint32_t)c->args_len;
    return (int32_t)(uint32_t)call(g, "launch_raw", LAUNCH_TYPE, args, 10);
}

static uint32_t guest_memory_len(runtime_guest *g)
{
    uint32_t len = 0;
    runtime_memory(g, &len);
    return len;
}

/* The guest's copy of the last argv it sent (LAST_ARGV), read from its memory: its length, and
 * the bytes copied to `out` (up to `cap`). */
static uint32_t guest_argv(runtime_guest *g, uint8_t *out, uint32_t cap)
{
    uint32_t len = 0;
    uint8_t *memory = runtime_memory(g, &len);
    uint32_t ptr = (uint32_t)send(g, "last_argv_ptr");
    uint32_t n = (uint32_t)send(g, "last_argv_len");
    if (!memory || (uint64_t)ptr + n > len) {
        expect(0, "the guest's last argv (%" PRIu32 ", %" PRIu32 ") lies in its memory", ptr, n);
        return 0;
    }
    memcpy(out, memory + ptr, n < cap ? n : cap);
    return n;
}

/* The last call's message: the Rust host's ("InvalidArgs -9: unknown tag 0xff at byte 32
 * (record 4)"), empty after a success. */
static const char *message(runtime_guest *g)
{
    return runtime_host(g)->message;
}

/* The record holds the vector_add launch of n elements: kernel 1, grid ceil(n / 256) (at
 * least 1), block 256, windows a, b and out of 4n bytes at the guest's own offsets, then n. */
static void expect_vector_add(runtime_guest *g, int32_t n)
{
    const launch_record *r = &runtime_host(g)->record;
    uint32_t a = (uint32_t)send(g, "a_ptr"), b = (uint32_t)send(g, "b_ptr");
    uint32_t out = (uint32_t)send(g, "out_ptr");
    uint32_t windows[3];
    int32_t blocks = (n + THREADS_PER_BLOCK - 1) / THREADS_PER_BLOCK;
    size_t i;
    windows[0] = a;
    windows[1] = b;
    windows[2] = out;
    expect(runtime_host(g)->recorded, "n = %d: the launch is recorded", n);
    if (!runtime_host(g)->recorded) return;
    expect_eq(r->kernel_id, VECTOR_ADD_KERNEL_ID, "n = %d: kernel id", n);
    if (blocks == 0) blocks = 1;
    expect(r->grid[0] == (uint32_t)blocks && r->grid[1] == 1 && r->grid[2] == 1 &&
               r->block[0] == THREADS_PER_BLOCK && r->block[1] == 1 && r->block[2] == 1 &&
               r->shared_mem == 0,
           "n = %d: grid [%" PRIu32 ", %" PRIu32 ", %" PRIu32 "], block [%" PRIu32 ", %" PRIu32
           ", %" PRIu32 "], shared %" PRIu32 " (want [%d, 1, 1], [%d, 1, 1], 0)",
           n, r->grid[0], r->grid[1], r->grid[2], r->block[0], r->block[1], r->block[2],
           r->shared_mem, blocks, THREADS_PER_BLOCK);
    expect_eq((int64_t)r->n_args, 4, "n = %d: four arguments", n);
    if (r->n_args != 4) return;
    for (i = 0; i < 3; i++) {
        const recorded_arg *w = &r->args[i];
        expect(w->tag == KARGS_TAG_PTR && w->guest_offset == windows[i] &&
                   w->len == 4u * (uint32_t)n && w->byte_offset == i * PTR_RECORD && w->bits == 0,
               "n = %d: argument %zu is the window (%" PRIu32 ", %" PRIu32 ") at byte %" PRIu32,
               n, i, w->guest_offset, w->len, w->byte_offset);
    }
    expect(r->args[3].tag == KARGS_TAG_U32 && r->args[3].bits == (uint64_t)n &&
               r->args[3].byte_offset == 3 * PTR_RECORD,
           "n = %d: argument 3 is u32 %" PRIu64, n, r->args[3].bits);
}

/* No record, and the error: code, kind, record index and byte offset. */
static void expect_refused(runtime_guest *g, const char *export, int32_t code, int32_t got,
                           uint32_t kind, uint32_t index, uint32_t offset)
{
    const kargs_error *e = &runtime_host(g)->error;
    expect_eq(got, code, "%s answers %d (%s)", export, code, kargs_abi_error_name(code));
    expect(!runtime_host(g)->recorded, "%s: no launch recorded (nothing stale)", export);
    expect(e->abi_code == code && e->kind == kind &&
               e->record_index == index && e->byte_offset == offset,
           "%s: error %s, record %" PRIu32 ", byte %" PRIu32 ": %s", export,
           kargs_error_kind_name(e->kind), e->record_index, e->byte_offset, message(g));
}

/* ---- The tests (std-adapter/tests/guest_e2e.rs, test by test) ------------------------------ */

static void the_import_links_with_its_signature(void)
{
    /* The guest imports wasi_cuda_launch from IMPORT_MODULE with exactly this type. */
    const char *r = runtime_link(IMPORT_MODULE, "i(iiiiiiiiii)");
    expect(r != NULL, "an i32 kernel id does not link: %s", r ? r : "it did");
    r = runtime_link("wasi:cuda/host@0.1.0", LAUNCH_TYPE);
    expect(r != NULL, "another import module does not link: %s", r ? r : "it did");
    r = runtime_link(IMPORT_MODULE, LAUNCH_TYPE);
    expect(r == NULL, "%s %s links as %s%s%s", IMPORT_MODULE, LAUNCH_IMPORT, LAUNCH_TYPE,
           r ? ": " : "", r ? r : "");
}

static void the_guest_exports_the_demo_interface(void)
{
    static const char *const interface[][2] = {
        {"run_vector_add", "i(i)"}, {"first_mismatch", "i(i)"}, {"out_at", "f(i)"},
        {"a_ptr", "i()"}, {"b_ptr", "i()"}, {"out_ptr", "i()"}, {"capacity", "i()"},
        {"last_argv_ptr", "i()"}, {"last_argv_len", "i()"}, {"launch_raw", LAUNCH_TYPE},
        {"send_ptr_past_memory", "i()"}, {"send_unknown_tag", "i()"},
        {"send_too_many_args", "i()"}, {"send_args_region_past_memory", "i()"},
        {"send_bad_dimensions", "i()"},
    };
    runtime_guest *g = open_guest(1, KARGS_ABI_NOT_AVAILABLE);
    size_t i;
    uint32_t mem;
    if (!g) return;
    for (i = 0; i < sizeof interface / sizeof interface[0]; i++) {
        const char *r = runtime_find(g, interface[i][0], interface[i][1]);
        expect(r == NULL, "export %s: %s", interface[i][0], r ? r : interface[i][1]);
    }
    mem = guest_memory_len(g);
    expect(mem > 0 && mem % 65536 == 0, "the guest has a memory: %" PRIu32 " bytes", mem);
    runtime_close(g);
}

static void the_guests_argv_arrives_intact(void)
{
    runtime_guest *g = open_guest(1, KARGS_ABI_NOT_AVAILABLE);
    uint8_t bytes[KARGS_MAX_KERNEL_ARGS_BYTES];
    kargs_arg reparsed[KARGS_MAX_KERNEL_ARGS];
    size_t n_reparsed = 0, i;
    uint32_t len, mem = 0;
    uint8_t *memory;
    int same = 1;
    if (!g) return;
    expect_eq(run(g, 1000), KARGS_ABI_NOT_AVAILABLE, "run_vector_add(1000) answers -1 (dry run)");
    expect_vector_add(g, 1000);
    expect_eq(runtime_host(g)->record.result, KARGS_ABI_NOT_AVAILABLE, "the record holds the answer, -1");
    expect_str(message(g), "NotAvailable -1: the host's launch callback refused the launch",
               "the error says the launcher refused");
    expect(runtime_host(g)->error.kind == KARGS_ERROR_KIND_LAUNCH_CALLBACK &&
               (int64_t)runtime_host(g)->error.detail[0] == KARGS_ABI_NOT_AVAILABLE,
           "the error is the callback's: %s", kargs_error_kind_name(runtime_host(g)->error.kind));
    expect_eq((int64_t)runtime_host(g)->launches, 1, "the dry run was handed one launch");
    expect_eq((int64_t)runtime_host(g)->bad_host_ptrs, 0, "every host_ptr is memory + guest_offset");

    /* What the guest encoded, from its memory: 3 windows and a u32, parsed again (a copy,
     * against the same memory) to the same records. */
    len = guest_argv(g, bytes, sizeof bytes);
    expect_eq(len, 3 * PTR_RECORD + U32_RECORD, "the guest's argv is %u bytes",
              3 * PTR_RECORD + U32_RECORD);
    memory = runtime_memory(g, &mem);
    expect_eq(kargs_parse(bytes, len, memory, mem, reparsed, KARGS_MAX_KERNEL_ARGS, &n_reparsed,
                          NULL), 0, "the guest's bytes parse");
    same = n_reparsed == runtime_host(g)->record.n_args;
    for (i = 0; same && i < n_reparsed; i++) {
        const recorded_arg *r = &runtime_host(g)->record.args[i];
        same = reparsed[i].tag == r->tag && reparsed[i].bits == r->bits &&
               reparsed[i].guest_offset == r->guest_offset && reparsed[i].len == r->len &&
               reparsed[i].byte_offset == r->byte_offset;
    }
    expect(same, "they are the records the host recorded");

    /* Nothing ran, so out still holds the guest's sentinel. */
    expect_eq(call_i32(g, "first_mismatch", 1000), 0, "first_mismatch(1000) is 0: nothing ran");
    expect(isnan(out_at(g, 0)), "out_at(0) is the NaN sentinel");
    runtime_close(g);
}

static void every_count_gives_its_launch(void)
{
    static const int32_t counts[] = {0, 1, 255, 256, 257, 1000, CAPACITY};
    runtime_guest *g = open_guest(1, KARGS_ABI_NOT_AVAILABLE);
    size_t i;
    uint8_t bytes[KARGS_MAX_KERNEL_ARGS_BYTES];
    if (!g) return;
    for (i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        expect_eq(run(g, counts[i]), KARGS_ABI_NOT_AVAILABLE, "run_vector_add(%d) answers -1",
                  counts[i]);
        expect_vector_add(g, counts[i]);
        expect_eq(guest_argv(g, bytes, sizeof bytes), 3 * PTR_RECORD + U32_RECORD,
                  "n = %d: the guest sent %u bytes", counts[i], 3 * PTR_RECORD + U32_RECORD);
    }
    runtime_close(g);
}

static void a_launcher_that_succeeds_gives_the_guest_zero(void)
{
    runtime_guest *g = open_guest(1, 0);
    size_t i, empty = 0;
    if (!g) return;
    expect_eq(run(g, 16), 0, "run_vector_add(16) answers 0 when the launcher succeeds");
    expect(runtime_host(g)->error.abi_code == 0 && message(g)[0] == '\0', "no error after a success");
    expect_vector_add(g, 16);
    expect_eq(runtime_host(g)->record.result, 0, "the record holds the answer, 0");
    expect_eq(run(g, 0), 0, "run_vector_add(0) answers 0: an empty vector is still one block");
    expect_vector_add(g, 0);
    for (i = 0; i < 3 && runtime_host(g)->recorded; i++) empty += runtime_host(g)->record.args[i].len == 0;
    expect_eq((int64_t)empty, 3, "three zero-length windows");
    expect_eq((int64_t)runtime_host(g)->launches, 2, "the launcher was handed two launches");
    runtime_close(g);
}

static void a_pointer_past_memory_is_an_invalid_pointer(void)
{
    runtime_guest *g = open_guest(1, KARGS_ABI_NOT_AVAILABLE);
    const kargs_error *e;
    uint32_t mem;
    if (!g) return;
    mem = guest_memory_len(g);
    /* a and b (two 9-byte records), then the out window at the end of memory: record 2, byte
     * 18, 4 * 16 bytes. */
    expect_refused(g, "send_ptr_past_memory", KARGS_ABI_INVALID_POINTER,
                   send(g, "send_ptr_past_memory"), KARGS_ERROR_KIND_WINDOW_OUT_OF_BOUNDS, 2,
                   2 * PTR_RECORD);
    e = &runtime_host(g)->error;
    expect(e->detail[0] == mem && e->detail[1] == 64 && e->detail[2] == mem,
           "the window (%" PRIu64 ", %" PRIu64 ") against a memory of %" PRIu64 " bytes",
           e->detail[0], e->detail[1], e->detail[2]);
    expect_eq((int64_t)runtime_host(g)->launches, 0, "the launcher was not called");
    runtime_close(g);
}

static void an_unknown_tag_is_invalid_args(void)
{
    runtime_guest *g = open_guest(1, KARGS_ABI_NOT_AVAILABLE);
    uint8_t bytes[KARGS_MAX_KERNEL_ARGS_BYTES];
    const char *whole = "unknown tag 0xff at byte 32 (record 4)";
    char small[8];
    size_t n;
    uint32_t len, at;
    if (!g) return;
    expect_refused(g, "send_unknown_tag", KARGS_ABI_INVALID_ARGS, send(g, "send_unknown_tag"),
                   KARGS_ERROR_KIND_UNKNOWN_TAG, 4, 3 * PTR_RECORD + U32_RECORD);
    expect_eq((int64_t)runtime_host(g)->error.detail[0], 0xff, "the tag is 0xff");
    expect_str(message(g), "InvalidArgs -9: unknown tag 0xff at byte 32 (record 4)",
               "the message is std-adapter's");
    /* The bad record is the last 5 bytes of what the guest sent. */
    len = guest_argv(g, bytes, sizeof bytes);
    at = runtime_host(g)->error.byte_offset;
    expect(len == at + U32_RECORD && bytes[at] == 0xff,
           "byte %" PRIu32 " of the guest's %" PRIu32 "-byte argv is the 0xff", at, len);
    /* kargs_error_message: snprintf's contract. */
    n = kargs_error_message(&runtime_host(g)->error, small, sizeof small);
    expect(n == strlen(whole) && strcmp(small, "unknown") == 0,
           "kargs_error_message into 8 bytes: \"%s\", returns the whole length %zu", small, n);
    n = kargs_error_message(&runtime_host(g)->error, NULL, 0);
    expect_eq((int64_t)n, (int64_t)strlen(whole),
              "kargs_error_message(err, NULL, 0) is the length");
    runtime_close(g);
}

static void one_hundred_twenty_nine_args_are_unsupported(void)
{
    runtime_guest *g = open_guest(1, KARGS_ABI_NOT_AVAILABLE);
    uint8_t bytes[KARGS_MAX_KERNEL_ARGS_BYTES];
    if (!g) return;
    expect_refused(g, "send_too_many_args", KARGS_ABI_KERNEL_ARGS_UNSUPPORTED,
                   send(g, "send_too_many_args"), KARGS_ERROR_KIND_TOO_MANY_RECORDS,
                   KARGS_MAX_KERNEL_ARGS, KARGS_MAX_KERNEL_ARGS * U32_RECORD);
    expect_eq((int64_t)runtime_host(g)->error.detail[0], KARGS_MAX_KERNEL_ARGS, "the cap is 128");
    expect_eq(guest_argv(g, bytes, sizeof bytes), (KARGS_MAX_KERNEL_ARGS + 1) * U32_RECORD,
              "the guest sent 129 u32 records");
    runtime_close(g);
}

static void an_args_region_past_memory_is_an_invalid_pointer(void)
{
    runtime_guest *g = open_guest(1, KARGS_ABI_NOT_AVAILABLE);
    const kargs_error *e;
    uint32_t mem;
    if (!g) return;
    mem = guest_memory_len(g);
    expect_refused(g, "send_args_region_past_memory", KARGS_ABI_INVALID_POINTER,
                   send(g, "send_args_region_past_memory"), KARGS_ERROR_KIND_REGION_PAST_MEMORY,
                   0, 0);
    e = &runtime_host(g)->error;
    expect((int64_t)e->detail[0] == (int64_t)mem - 8 && (int64_t)e->detail[1] == 32 &&
               e->detail[2] == mem,
           "args_ptr %" PRId64 " (8 bytes before the end), args_len %" PRId64 ", memory %" PRIu64,
           (int64_t)e->detail[0], (int64_t)e->detail[1], e->detail[2]);
    runtime_close(g);
}

static void bad_dimensions_are_invalid_dimensions(void)
{
    runtime_guest *g = open_guest(1, KARGS_ABI_NOT_AVAILABLE);
    const kargs_error *e;
    if (!g) return;
    expect_refused(g, "send_bad_dimensions", KARGS_ABI_INVALID_DIMENSIONS,
                   send(g, "send_bad_dimensions"), KARGS_ERROR_KIND_DIMENSION_TOO_LARGE, 0, 0);
    e = &runtime_host(g)->error;
    expect(e->detail[0] == KARGS_DIMENSION_BLOCK_X && e->detail[1] == 2048 && e->detail[2] == 1024,
           "block.x 2048, at most 1024");
    expect_str(message(g), "InvalidDimensions -8: block.x is 2048, must be at most 1024",
               "the message is std-adapter's");
    runtime_close(g);
}

static void a_disabled_capability_is_not_available_and_records_nothing(void)
{
    runtime_guest *g = open_guest(0, KARGS_ABI_NOT_AVAILABLE);
    if (!g) return;
    expect_eq(run(g, 64), KARGS_ABI_NOT_AVAILABLE, "disabled: run_vector_add(64) answers -1");
    expect(!runtime_host(g)->recorded, "disabled: no launch recorded");
    expect_eq((int64_t)runtime_host(g)->launches, 0, "disabled: the launcher was not called");
    expect_str(message(g), "NotAvailable -1: the wasi-cuda capability is disabled for this guest",
               "disabled: the message says so");
    runtime_close(g);
}

static void a_failed_launch_after_a_good_one_leaves_no_stale_args(void)
{
    static const struct {
        const char *export;
        int32_t code;
    } bad[] = {
        {"send_unknown_tag", KARGS_ABI_INVALID_ARGS},
        {"send_bad_dimensions", KARGS_ABI_INVALID_DIMENSIONS},
        {"send_args_region_past_memory", KARGS_ABI_INVALID_POINTER},
        {"send_ptr_past_memory", KARGS_ABI_INVALID_POINTER},
        {"send_too_many_args", KARGS_ABI_KERNEL_ARGS_UNSUPPORTED},
    };
    runtime_guest *g = open_guest(1, KARGS_ABI_NOT_AVAILABLE);
    size_t i;
    if (!g) return;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        expect_eq(run(g, 64), KARGS_ABI_NOT_AVAILABLE, "run_vector_add(64) answers -1");
        expect(runtime_host(g)->recorded && runtime_host(g)->record.n_args == 4, "its launch is recorded");
        expect_eq(send(g, bad[i].export), bad[i].code, "then %s answers %d", bad[i].export,
                  bad[i].code);
        expect(!runtime_host(g)->recorded, "%s left no launch behind", bad[i].export);
        expect(runtime_host(g)->error.abi_code == bad[i].code && runtime_host(g)->code == bad[i].code,
               "%s: the error is its own: %s", bad[i].export, message(g));
    }
    expect_eq(run(g, 8), KARGS_ABI_NOT_AVAILABLE, "a good launch afterwards answers -1");
    expect_vector_add(g, 8);
    expect(runtime_host(g)->error.kind == KARGS_ERROR_KIND_LAUNCH_CALLBACK,
           "and its error is the launcher's answer, nothing of the refused calls: %s", message(g));
    runtime_close(g);
}

static void raw_calls_get_codes_never_traps(void)
{
    runtime_guest *g = open_guest(1, KARGS_ABI_NOT_AVAILABLE);
    kargs_call base = {1, {1, 1, 1}, {32, 1, 1}, 0, 0, 0};
    struct {
        kargs_call call;
        int32_t code;
    } cases[13];
    int32_t mem;
    size_t i;
    if (!g) return;
    mem = (int32_t)guest_memory_len(g);
    for (i = 0; i < 13; i++) cases[i].call = base;
    cases[0].call.args_ptr = -1, cases[0].call.args_len = 4, cases[0].code = -2;
    cases[1].call.args_ptr = 0, cases[1].call.args_len = -1, cases[1].code = -2;
    cases[2].call.args_ptr = INT32_MIN, cases[2].call.args_len = INT32_MIN, cases[2].code = -2;
    cases[3].call.args_ptr = INT32_MAX, cases[3].call.args_len = 1, cases[3].code = -2;
    cases[4].call.args_ptr = mem, cases[4].call.args_len = 1, cases[4].code = -2;
    cases[5].call.args_ptr = mem + 1, cases[5].call.args_len = 0, cases[5].code = -2;
    /* No arguments: nothing is read, and vector_add's declaration takes four. */
    cases[6].code = -9;
    cases[7].call.args_ptr = mem, cases[7].call.args_len = 0, cases[7].code = -9;
    cases[8].call.grid[0] = 0, cases[8].code = -8;
    cases[9].call.shared_mem = -1, cases[9].code = -8;
    cases[10].call.shared_mem = 227 * 1024 + 1, cases[10].code = -8;
    /* Every dimension in range, but past the default threads quota (2^32). */
    cases[11].call.kernel_id = INT64_MIN;
    cases[11].call.grid[1] = cases[11].call.grid[2] = 65535;
    cases[11].call.block[0] = 1024;
    cases[11].code = -6;
    cases[12].call.kernel_id = INT64_MIN;
    cases[12].call.grid[1] = 65535, cases[12].call.grid[2] = 64;
    cases[12].call.block[0] = 1024;
    cases[12].call.shared_mem = 227 * 1024;
    cases[12].code = -3;
    for (i = 0; i < 13; i++) {
        const kargs_call *c = &cases[i].call;
        expect_eq(launch_raw(g, c), cases[i].code,
                  "launch_raw(%" PRId64 ", grid [%d, %d, %d], block [%d, %d, %d], shared %d, "
                  "args (%d, %d)) answers %d",
                  c->kernel_id, c->grid[0], c->grid[1], c->grid[2], c->block[0], c->block[1],
                  c->block[2], c->shared_mem, c->args_ptr, c->args_len, cases[i].code);
    }
    /* The largest shape within the quota, for an unknown kernel id: InvalidKernel, and nothing
     * recorded. */
    expect(!runtime_host(g)->recorded && runtime_host(g)->error.kind == KARGS_ERROR_KIND_UNKNOWN_KERNEL &&
               (int64_t)runtime_host(g)->error.detail[0] == INT64_MIN,
           "kernel id INT64_MIN is unknown (an i64 arrives whole): %s", message(g));
    expect_eq((int64_t)runtime_host(g)->launches, 0, "the launcher was handed no launch");
    runtime_close(g);
}

/* Writes `value` little-endian at `p`. */
static uint8_t *put_le(uint8_t *p, uint64_t value, int bytes)
{
    int i;
    for (i = 0; i < bytes; i++) p[i] = (uint8_t)(value >> (8 * i));
    return p + bytes;
}

/* The four ways through a kernel's declaration, each written into the guest's own memory and
 * sent with launch_raw as a malicious guest would: refused with InvalidArgs before the
 * launcher runs, naming the record and the parameter. */
static void a_guest_reaches_only_what_the_kernel_declares(void)
{
    runtime_guest *g = open_guest(1, KARGS_ABI_NOT_AVAILABLE);
    uint32_t a, b, out, mem, len;
    uint8_t *memory;
    size_t i;
    if (!g) return;
    a = (uint32_t)send(g, "a_ptr"), b = (uint32_t)send(g, "b_ptr"), out = (uint32_t)send(g, "out_ptr");
    {
        /* tag of the first record (0x06: a raw u64; 0x07: a window), a's and b's offsets, n's
         * record (0x05: u32 n; 0x07: a window), the record and the parameter refused. */
        const struct {
            uint8_t first_tag;
            uint32_t b_offset, n;
            uint8_t n_tag;
            uint32_t record;
            uint32_t kind;
            const char *why;
        } cases[] = {
            {0x06, 0, 16, 0x05, 0, KARGS_ERROR_KIND_DECLARATION_TYPE,
             "InvalidArgs -9: record 0 at byte 0: a: the kernel takes &[f32; n], the argv has u64"},
            {0x07, 0, 1u << 20, 0x05, 0, KARGS_ERROR_KIND_DECLARATION_WINDOW_TOO_SHORT,
             "InvalidArgs -9: record 0 at byte 0: a: 64-byte window, the kernel touches n * 4 = "
             "4194304 bytes"},
            {0x07, 2, 16, 0x05, 1, KARGS_ERROR_KIND_DECLARATION_MISALIGNED, NULL},
            {0x07, 0, 16, 0x07, 3, KARGS_ERROR_KIND_DECLARATION_TYPE,
             "InvalidArgs -9: record 3 at byte 27: n: the kernel takes u32, the argv has ptr"},
        };
        for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            uint8_t argv[64], *p = argv;
            kargs_call call = {VECTOR_ADD_KERNEL_ID, {1, 1, 1}, {16, 1, 1}, 0, 0, 0};
            *p++ = cases[i].first_tag;
            p = cases[i].first_tag == 0x06 ? put_le(p, 0x7f0000001000u, 8)
                                           : put_le(put_le(p, a, 4), 64, 4);
            *p++ = 0x07, p = put_le(put_le(p, b + cases[i].b_offset, 4), 64, 4);
            *p++ = 0x07, p = put_le(put_le(p, out, 4), 64, 4);
            *p++ = cases[i].n_tag;
            p = cases[i].n_tag == 0x05 ? put_le(p, cases[i].n, 4) : put_le(put_le(p, 0, 4), 4, 4);
            len = (uint32_t)(p - argv);
            memory = runtime_memory(g, &mem);
            memcpy(memory + mem - len, argv, len);
            call.args_ptr = (int32_t)(mem - len);
            call.args_len = (int32_t)len;
            expect_eq(launch_raw(g, &call), KARGS_ABI_INVALID_ARGS, "malicious argv %zu: -9", i);
            expect(runtime_host(g)->error.kind == cases[i].kind && runtime_host(g)->error.record_index == cases[i].record,
                   "malicious argv %zu: %s at record %" PRIu32, i,
                   kargs_error_kind_name(runtime_host(g)->error.kind), runtime_host(g)->error.record_index);
            if (cases[i].why) expect_str(message(g), cases[i].why, "malicious argv %zu: the message", i);
            expect(!runtime_host(g)->recorded, "malicious argv %zu: nothing recorded", i);
        }
    }
    expect_eq((int64_t)runtime_host(g)->launches, 0, "no malicious argv reached the launcher");
    expect_eq(run(g, 16), KARGS_ABI_NOT_AVAILABLE, "the guest's own launch of 16 still runs");
    expect_eq((int64_t)runtime_host(g)->launches, 1, "and reaches the launcher");
    runtime_close(g);
}

static void guest_accessors_and_codes(void)
{
    runtime_guest *g = open_guest(1, KARGS_ABI_NOT_AVAILABLE);
    if (!g) return;
    expect_eq(send(g, "capacity"), CAPACITY, "capacity() is %d", CAPACITY);
    expect_eq(run(g, CAPACITY + 1), ERR_BAD_COUNT, "run_vector_add(%d) is the guest's -100",
              CAPACITY + 1);
    expect_eq(run(g, -1), ERR_BAD_COUNT, "run_vector_add(-1) is the guest's -100");
    expect(!runtime_host(g)->recorded && runtime_host(g)->launches == 0,
           "the guest refused before calling the host");
    expect_eq(run(g, CAPACITY), KARGS_ABI_NOT_AVAILABLE, "run_vector_add(%d) answers -1", CAPACITY);
    expect_vector_add(g, CAPACITY);
    expect(isnan(out_at(g, CAPACITY + 1)) && isnan(out_at(g, CAPACITY)) && isnan(out_at(g, -1)),
           "out_at out of range is NaN");
    expect_eq(call_i32(g, "first_mismatch", CAPACITY + 1), ERR_BAD_COUNT,
              "first_mismatch(%d) is the guest's -100", CAPACITY + 1);
    expect_eq(call_i32(g, "first_mismatch", 0), -1, "first_mismatch(0) is -1: nothing to compare");
    expect_eq(call_i32(g, "first_mismatch", 1), 0, "first_mismatch(1) is 0: nothing ran");
    runtime_close(g);
}

static void the_runner_reports_traps_and_wrong_calls_as_errors(void)
{
    runtime_guest *g = open_guest(1, KARGS_ABI_NOT_AVAILABLE);
    uint64_t result = 0, arg = 1;
    const char *r;
    if (!g) return;
    r = runtime_call(g, "no_such_export", "i()", NULL, 0, &result);
    expect(r != NULL, "a missing export is an error: %s", r ? r : "it was found");
    r = runtime_call(g, "run_vector_add", "i()", NULL, 0, &result);
    expect(r != NULL, "run_vector_add as () -> i32 is an error: %s", r ? r : "it ran");
    r = runtime_call(g, "run_vector_add", "f(i)", &arg, 1, &result);
    expect(r != NULL, "run_vector_add as (i32) -> f32 is an error: %s", r ? r : "it ran");
    runtime_close(g);
}

/* ---- main ---------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    uint32_t wasm_len = 0;
    uint8_t *bytes;
    if (argc != 2) {
        fprintf(stderr, "usage: %s GUEST.wasm (the C guest, capi/c/examples/vector_add.c)\n",
                argv[0]);
        return 2;
    }
    bytes = read_module(argv[1], &wasm_len);
    if (!bytes) {
        fprintf(stderr, "%s: cannot read %s\n", argv[0], argv[1]);
        return 2;
    }
    /* The module's bytes must outlive every module loaded from them. */
    if (runtime_start(bytes, wasm_len) != 0) return 2;
    printf("%s host, guest %s (%" PRIu32 " bytes)\n", runtime_name(), argv[1], wasm_len);

    the_import_links_with_its_signature();
    the_guest_exports_the_demo_interface();
    the_guests_argv_arrives_intact();
    every_count_gives_its_launch();
    a_launcher_that_succeeds_gives_the_guest_zero();
    a_pointer_past_memory_is_an_invalid_pointer();
    an_unknown_tag_is_invalid_args();
    one_hundred_twenty_nine_args_are_unsupported();
    an_args_region_past_memory_is_an_invalid_pointer();
    bad_dimensions_are_invalid_dimensions();
    a_disabled_capability_is_not_available_and_records_nothing();
    a_failed_launch_after_a_good_one_leaves_no_stale_args();
    raw_calls_get_codes_never_traps();
    a_guest_reaches_only_what_the_kernel_declares();
    guest_accessors_and_codes();
    the_runner_reports_traps_and_wrong_calls_as_errors();

    runtime_stop();
    free(bytes);
    printf("%s e2e: %u checks, %u failed\n", runtime_name(), checks, failures);
    return failures ? 1 : 0;
}
