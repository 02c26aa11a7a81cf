/*
 * The host call from C: kargs_declaration_parse, kargs_declaration_check and kargs_host_call
 * through the committed header, as a C host calls them: the callback reached exactly when every
 * check passes, with the checked launch (host pointers into the call's memory); each refusal
 * with its kind and the Rust host's message. Built as C99 with gcc and clang under
 * AddressSanitizer and UBSan by scripts/capi-check.sh. (The Rust side of the same checks,
 * under Miri: capi/tests/host_call.rs.)
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "kargs.h"

#define VECTOR_ADD "vector_add(a: &[f32; n], b: &[f32; n], out: &mut [f32; n], n: u32)"

typedef struct seen {
    unsigned calls;
    int32_t answer;
    kargs_launch launch;
    kargs_arg args[KARGS_MAX_KERNEL_ARGS];
} seen;

static int32_t record(void *ctx, const kargs_launch *launch)
{
    seen *s = ctx;
    s->calls++;
    s->launch = *launch;
    memcpy(s->args, launch->args, launch->args_len * sizeof *launch->args);
    return s->answer;
}

static void put32(uint8_t *p, uint32_t v)
{
    int i;
    for (i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* vector_add's argv at byte 512 of `memory`, `out`'s window `out_len` bytes; its length. */
static int32_t write_argv(uint8_t *memory, uint32_t out_len)
{
    uint8_t *p = memory + 512;
    uint32_t i, offsets[3] = {0, 64, 128}, lens[3] = {64, 64, 0};
    lens[2] = out_len;
    for (i = 0; i < 3; i++, p += 9) {
        p[0] = KARGS_TAG_PTR;
        put32(p + 1, offsets[i]);
        put32(p + 5, lens[i]);
    }
    p[0] = KARGS_TAG_U32;
    put32(p + 1, 16);
    return 3 * 9 + 5;
}

static void check_sizes_and_names(void)
{
    CHECK(sizeof(kargs_arg) == 32, "kargs_arg is %zu bytes", sizeof(kargs_arg));
    CHECK(sizeof(kargs_declaration) == KARGS_DECLARATION_SIZE, "kargs_declaration is %zu bytes",
          sizeof(kargs_declaration));
    CHECK(strcmp(kargs_error_kind_name(KARGS_ERROR_KIND_DECLARATION_WINDOW_TOO_SHORT),
                 "declaration_window_too_short") == 0, "a declaration kind's name");
    CHECK(strcmp(kargs_error_kind_name(KARGS_ERROR_KIND_UNKNOWN_KERNEL), "unknown_kernel") == 0,
          "unknown_kernel");
}

static void check_declarations(void)
{
    static kargs_declaration decl;
    kargs_error err;
    char msg[KARGS_ERROR_MESSAGE_MAX];
    kargs_arg args[4];
    uint32_t grid[3] = {1, 1, 1}, block[3] = {16, 1, 1};
    const char *bad = "k(a: &[f32; m], n: u32)";
    int32_t rc = kargs_declaration_parse(bad, strlen(bad), &decl, &err, msg, sizeof msg);
    CHECK(rc == KARGS_ABI_INTERNAL && err.kind == KARGS_ERROR_KIND_DECLARATION_SYNTAX &&
              err.detail[0] == 13,
          "a bad declaration: rc %d, kind %u, column %llu", rc, err.kind,
          (unsigned long long)err.detail[0]);
    CHECK(strcmp(msg, "column 13: `m` is not a parameter of this kernel") == 0, "msg: %s", msg);
    /* The struct alone gives the same message: the name is in its text. */
    {
        char again[KARGS_ERROR_MESSAGE_MAX];
        size_t len = kargs_error_message(&err, again, sizeof again);
        CHECK(len == strlen(msg) && strcmp(again, msg) == 0 && strcmp((const char *)err.text, "m") == 0,
              "kargs_error_message of the syntax error: %s", again);
    }
    rc = kargs_declaration_check(&decl, NULL, 0, grid, block, &err, NULL, 0);
    CHECK(rc == KARGS_ABI_INTERNAL && err.kind == KARGS_ERROR_KIND_INVALID_DECLARATION,
          "a failed parse leaves the storage refused: %d", rc);

    rc = kargs_declaration_parse(VECTOR_ADD, strlen(VECTOR_ADD), &decl, &err, msg, sizeof msg);
    CHECK(rc == 0 && err.kind == KARGS_ERROR_KIND_NONE && msg[0] == '\0', "vector_add parses");
    memset(args, 0, sizeof args);
    args[0].tag = args[1].tag = args[2].tag = KARGS_TAG_PTR;
    args[0].len = args[1].len = 64, args[2].len = 16;
    args[1].guest_offset = 64, args[2].guest_offset = 128;
    args[1].byte_offset = 9, args[2].byte_offset = 18, args[3].byte_offset = 27;
    args[3].tag = KARGS_TAG_U32, args[3].bits = 16;
    rc = kargs_declaration_check(&decl, args, 4, grid, block, &err, msg, sizeof msg);
    CHECK(rc == KARGS_ABI_INVALID_ARGS && err.kind == KARGS_ERROR_KIND_DECLARATION_WINDOW_TOO_SHORT &&
              err.record_index == 2 && err.byte_offset == 18 && err.detail[2] == 64,
          "out's window is short: rc %d, kind %s", rc, kargs_error_kind_name(err.kind));
    CHECK(strcmp(msg, "record 2 at byte 18: out: 16-byte window, the kernel touches n * 4 = 64 bytes") == 0,
          "msg: %s", msg);
    /* The struct alone, copied, gives the same message: it holds the name and the expression. */
    {
        kargs_error copy = err;
        char again[KARGS_ERROR_MESSAGE_MAX];
        size_t len = kargs_error_message(&copy, again, sizeof again);
        CHECK(len == strlen(msg) && strcmp(again, msg) == 0, "kargs_error_message: %s", again);
        CHECK(strcmp((const char *)copy.text, "out") == 0 &&
                  strcmp((const char *)copy.text + strlen("out") + 1, "n * 4") == 0,
              "text: the parameter's name, then its extent");
    }
    args[2].len = 64;
    rc = kargs_declaration_check(&decl, args, 4, grid, block, &err, msg, sizeof msg);
    CHECK(rc == 0 && err.abi_code == 0, "64-byte windows fit n = 16: %d", rc);
}

static void check_host_call(void)
{
    static kargs_declaration decl;
    static uint8_t memory[1024];
    kargs_kernel kernels[2];
    kargs_host host;
    kargs_call call;
    kargs_error err;
    char msg[KARGS_ERROR_MESSAGE_MAX + 64];
    seen s;
    int32_t rc;

    memset(&s, 0, sizeof s);
    kargs_declaration_parse(VECTOR_ADD, strlen(VECTOR_ADD), &decl, NULL, NULL, 0);
    kernels[0].id = 7, kernels[0].declaration = &decl;
    kernels[1].id = 8, kernels[1].declaration = NULL;
    memset(&host, 0, sizeof host);
    host.kernels = kernels, host.kernels_len = 2, host.launch = record, host.ctx = &s;
    host.enabled = 1;
    memset(&call, 0, sizeof call);
    call.kernel_id = 7, call.grid[0] = call.grid[1] = call.grid[2] = 1;
    call.block[0] = 16, call.block[1] = call.block[2] = 1;
    call.args_ptr = 512, call.args_len = write_argv(memory, 64);

    rc = kargs_host_call(&host, memory, sizeof memory, &call, &err, msg, sizeof msg);
    CHECK(rc == 0 && err.abi_code == 0 && msg[0] == '\0' && s.calls == 1, "a good call: %d %s", rc, msg);
    CHECK(s.launch.kernel_id == 7 && s.launch.args_len == 4 && s.launch.block[0] == 16,
          "the callback saw the launch");
    CHECK(s.args[2].host_ptr == memory + 128 && s.args[2].len == 64 && s.args[3].bits == 16,
          "host pointers into the call's memory");

    call.args_len = write_argv(memory, 16);
    rc = kargs_host_call(&host, memory, sizeof memory, &call, &err, msg, sizeof msg);
    CHECK(rc == KARGS_ABI_INVALID_ARGS && err.kind == KARGS_ERROR_KIND_DECLARATION_WINDOW_TOO_SHORT &&
              s.calls == 1, "a count past the window: %d", rc);
    CHECK(strcmp(msg, "InvalidArgs -9: record 2 at byte 18: out: 16-byte window, the kernel "
                      "touches n * 4 = 64 bytes") == 0, "msg: %s", msg);
    call.args_len = write_argv(memory, 64);

    call.kernel_id = 8;
    rc = kargs_host_call(&host, memory, sizeof memory, &call, &err, msg, sizeof msg);
    CHECK(rc == KARGS_ABI_INVALID_KERNEL && err.kind == KARGS_ERROR_KIND_UNDECLARED_KERNEL,
          "an undeclared kernel, untrusted: %d", rc);
    host.trusted = 1;
    rc = kargs_host_call(&host, memory, sizeof memory, &call, &err, msg, sizeof msg);
    CHECK(rc == 0 && s.calls == 2, "trusted: it launches");
    host.trusted = 0;
    call.kernel_id = 9;
    rc = kargs_host_call(&host, memory, sizeof memory, &call, &err, msg, sizeof msg);
    CHECK(rc == KARGS_ABI_INVALID_KERNEL && err.kind == KARGS_ERROR_KIND_UNKNOWN_KERNEL &&
              (int64_t)err.detail[0] == 9, "an unknown kernel");
    CHECK(strcmp(msg, "InvalidKernel -3: no kernel is registered with id 9") == 0, "msg: %s", msg);
    call.kernel_id = 7;

    s.answer = KARGS_ABI_LAUNCH_FAILED;
    rc = kargs_host_call(&host, memory, sizeof memory, &call, &err, msg, sizeof msg);
    CHECK(rc == KARGS_ABI_LAUNCH_FAILED && err.kind == KARGS_ERROR_KIND_LAUNCH_CALLBACK &&
              (int64_t)err.detail[0] == KARGS_ABI_LAUNCH_FAILED, "the callback's code: %d", rc);
    s.answer = 0;

    rc = kargs_host_call(&host, NULL, 0, &call, &err, msg, sizeof msg);
    CHECK(rc == KARGS_ABI_INVALID_POINTER && err.kind == KARGS_ERROR_KIND_NO_MEMORY, "no memory");
    host.enabled = 0;
    rc = kargs_host_call(&host, memory, sizeof memory, &call, &err, msg, sizeof msg);
    CHECK(rc == KARGS_ABI_NOT_AVAILABLE && err.kind == KARGS_ERROR_KIND_CAPABILITY_DISABLED,
          "disabled");
    host.enabled = 1;
    rc = kargs_host_call(NULL, memory, sizeof memory, &call, &err, msg, sizeof msg);
    CHECK(rc == KARGS_ABI_INTERNAL && err.kind == KARGS_ERROR_KIND_NULL_ARGUMENT, "NULL host");
    CHECK(strcmp(msg, "kargs_host_call: host is NULL") == 0, "msg: %s", msg);
    CHECK(s.calls == 3, "the callback ran for the good calls alone: %u", s.calls);

    /* The quotas: threads per launch (16 here), and a device's count of launches in flight. */
    host.max_threads_per_launch = 15;
    rc = kargs_host_call(&host, memory, sizeof memory, &call, &err, msg, sizeof msg);
    CHECK(rc == KARGS_ABI_QUOTA_EXCEEDED && err.kind == KARGS_ERROR_KIND_QUOTA &&
              err.detail[0] == KARGS_QUOTA_THREADS_PER_LAUNCH && err.detail[1] == 16 &&
              err.detail[2] == 15, "16 threads over a quota of 15: %d", rc);
    host.max_threads_per_launch = 16;
    kargs_in_flight device = {1, 0};
    host.in_flight_device = &device;
    rc = kargs_host_call(&host, memory, sizeof memory, &call, &err, msg, sizeof msg);
    CHECK(rc == 0 && s.calls == 4 && device.now == 0, "at both quotas, the place given back: %d", rc);
    device.max = 0;
    rc = kargs_host_call(&host, memory, sizeof memory, &call, &err, msg, sizeof msg);
    CHECK(rc == KARGS_ABI_QUOTA_EXCEEDED && err.detail[0] == KARGS_QUOTA_IN_FLIGHT_PER_DEVICE && s.calls == 4,
          "a device count of none: %d", rc);
    CHECK(strcmp(msg, "QuotaExceeded -6: launches in flight on this device would be 1, the quota is 0") == 0,
          "msg: %s", msg);
}

int main(void)
{
    check_sizes_and_names();
    check_declarations();
    check_host_call();
    printf("host_call_test: %lu checks, %lu failed\n", checks, failures);
    return failures ? 1 : 0;
}
