/*
 * The C check of the kernel-args C API (include/kargs.h, libkargs from capi/).
 * scripts/capi-check.sh builds it as C99 with gcc and with clang
 * (-Wall -Wextra -Werror -pedantic, AddressSanitizer + UBSan, no recovery), links it with the
 * static library (and once with the shared one) and runs it:
 *
 * 1. every conformance vector of tests/vectors/argv.json through kargs_parse: an accepted one
 *    gives exactly its arguments (tag, value bits, byte offset, window, host_ptr ==
 *    memory + guest_offset), a refused one its ABI code, name, kind, record and byte, and
 *    kernel-args-core's details and message; every message through every buffer size
 *    (snprintf semantics, nothing written past the NUL); guest memory is mapped PROT_NONE,
 *    so any access to it would crash;
 * 2. every output capacity below each accepted vector's count (the record cap), capacities
 *    above KARGS_MAX_KERNEL_ARGS, guard entries after each array;
 * 3. NULL where a pointer is needed (a typed error) and where NULL is allowed; nothing stale
 *    after a success or an error; argv inside guest memory (written with kargs_guest.h);
 *    an argv longer than the cap is not read at all;
 * 4. argument regions and launch shapes against kernel-args' outcomes and messages;
 * 5. the ABI names against kernel-args' AbiError and kargs_guest.h, the kind names.
 *
 * The expectations come from capi/examples/c_vectors.rs (capi_vectors.h, generated each
 * run from the JSON and the Rust crates): none from the library under test.
 *
 * kargs.h and kargs_guest.h are included together on purpose: they share their ABI, tag and
 * cap macros token for token.
 */
#define _DEFAULT_SOURCE /* mmap's MAP_ANONYMOUS and MAP_NORESERVE */
#include "kargs.h"
#include "kargs_guest.h"
#include "capi_vectors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"

#define SENTINEL 0xa5
#define GUARD 4 /* sentinel entries (or bytes) after every array given to the library */

/* The sizes the header documents. */
typedef char check_arg_size[sizeof(kargs_arg) == 32 ? 1 : -1];
typedef char check_error_size[sizeof(kargs_error) == 176 ? 1 : -1];

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        perror("malloc");
        exit(2);
    }
    return p;
}

/* A guest memory of `len` bytes that may not be touched: PROT_NONE, so a read or write by
 * the library would crash. NULL for 0 bytes. */
static unsigned char *guest_memory(uint64_t len)
{
    void *p;
    if (len == 0) return NULL;
    p = mmap(NULL, (size_t)len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }
    return (unsigned char *)p;
}

static void free_guest_memory(unsigned char *p, uint64_t len)
{
    if (p) munmap(p, (size_t)len);
}

/* argv at its exact size, so AddressSanitizer sees the C side's reads past it. */
static unsigned char *copy_bytes(const unsigned char *bytes, size_t len)
{
    unsigned char *p;
    if (len == 0) return NULL;
    p = (unsigned char *)xmalloc(len);
    memcpy(p, bytes, len);
    return p;
}

static int all_bytes(const void *p, size_t n, int value)
{
    const unsigned char *b = (const unsigned char *)p;
    size_t i;
    for (i = 0; i < n; i++)
        if (b[i] != (unsigned char)value) return 0;
    return 1;
}

static int is_zero_arg(const kargs_arg *a)
{
    return a->tag == 0 && a->bits == 0 && a->host_ptr == NULL && a->byte_offset == 0 &&
           a->guest_offset == 0 && a->len == 0;
}

static int is_zero_error(const kargs_error *e)
{
    return e->abi_code == 0 && e->kind == 0 && e->record_index == 0 && e->byte_offset == 0 &&
           e->detail[0] == 0 && e->detail[1] == 0 && e->detail[2] == 0;
}

/* An array of `cap` entries plus GUARD, all sentinel bytes. */
static kargs_arg *out_array(size_t cap)
{
    kargs_arg *out = (kargs_arg *)xmalloc((cap + GUARD) * sizeof *out);
    memset(out, SENTINEL, (cap + GUARD) * sizeof *out);
    return out;
}

static void check_guard(const kargs_arg *out, size_t cap, const char *what)
{
    CHECK(all_bytes(out + cap, GUARD * sizeof *out, SENTINEL), "%s: written past entry %zu", what, cap);
}

/* The message of `err`: the same through every buffer size, cut with snprintf's contract. */
static void check_message(const kargs_error *err, const char *expected, const char *what)
{
    size_t len = strlen(expected), cap, n;
    char *buf = (char *)xmalloc(len + 2 + GUARD);
    CHECK(kargs_error_message(err, NULL, 0) == len, "%s: length with a NULL buffer", what);
    CHECK(kargs_error_message(err, NULL, 64) == len, "%s: length with a NULL buffer, cap 64", what);
    for (cap = 0; cap <= len + 2; cap++) {
        size_t kept = cap ? (cap - 1 < len ? cap - 1 : len) : 0;
        memset(buf, SENTINEL, len + 2 + GUARD);
        n = kargs_error_message(err, buf, cap);
        CHECK(n == len, "%s: cap %zu: returned %zu, the message is %zu bytes", what, cap, n, len);
        if (cap > 0) {
            CHECK(memcmp(buf, expected, kept) == 0 && buf[kept] == '\0',
                  "%s: cap %zu: not the message's first %zu bytes and a NUL", what, cap, kept);
            CHECK(all_bytes(buf + kept + 1, len + 2 + GUARD - kept - 1, SENTINEL),
                  "%s: cap %zu: written past the NUL", what, cap);
        } else {
            CHECK(all_bytes(buf, len + 2 + GUARD, SENTINEL), "%s: cap 0: something was written", what);
        }
    }
    memset(buf, SENTINEL, len + 2 + GUARD);
    kargs_error_message(err, buf, len + 1);
    CHECK(strcmp(buf, expected) == 0, "%s: message \"%s\", expected \"%s\"", what, buf, expected);
    free(buf);
}

/* 1. Every vector, with memory NULL (when empty) or PROT_NONE, out_cap the record cap. */
static void check_vector(const cv_vector *v, unsigned char *memory)
{
    unsigned char *argv = copy_bytes(v->bytes, v->len);
    kargs_arg *out = out_array(KARGS_MAX_KERNEL_ARGS);
    kargs_error err;
    size_t n = 12345, k;
    int32_t rc;
    memset(&err, SENTINEL, sizeof err);
    rc = kargs_parse(argv, v->len, memory, (size_t)v->mem_len, out, KARGS_MAX_KERNEL_ARGS, &n, &err);
    if (v->accepted) {
        CHECK(rc == 0 && n == v->nargs, "%s: rc %d, %zu arguments; expected 0 and %zu", v->name, rc, n,
              v->nargs);
        CHECK(is_zero_error(&err), "%s: err is not all zeros after a success", v->name);
        for (k = 0; k < n && k < v->nargs; k++) {
            const kargs_arg *a = &out[k];
            const cv_arg *e = &v->args[k];
            unsigned char *host = e->tag == KARGS_TAG_PTR && memory ? memory + e->guest_offset : NULL;
            CHECK(a->tag == e->tag && a->byte_offset == e->byte_offset && a->bits == e->bits &&
                      a->guest_offset == e->guest_offset && a->len == e->len && a->host_ptr == host,
                  "%s: argument %zu: tag 0x%02x byte %u bits 0x%016llx window %u+%u host %p; expected "
                  "0x%02x %u 0x%016llx %u+%u %p",
                  v->name, k, a->tag, a->byte_offset, (unsigned long long)a->bits, a->guest_offset,
                  a->len, (void *)a->host_ptr, e->tag, e->byte_offset, (unsigned long long)e->bits,
                  e->guest_offset, e->len, (void *)host);
        }
        CHECK(all_bytes(out + v->nargs, (KARGS_MAX_KERNEL_ARGS - v->nargs) * sizeof *out, SENTINEL),
              "%s: entries past the arguments were written", v->name);
        check_message(&err, "no error", v->name);
    } else {
        CHECK(rc == v->code && err.abi_code == v->code && n == 0,
              "%s: rc %d, err.abi_code %d, %zu arguments; expected %d and 0", v->name, rc, err.abi_code, n,
              v->code);
        CHECK(strcmp(kargs_abi_error_name(rc), v->code_name) == 0, "%s: %s, expected %s", v->name,
              kargs_abi_error_name(rc), v->code_name);
        CHECK(strcmp(kargs_error_kind_name(err.kind), v->kind) == 0, "%s: kind %s, expected %s", v->name,
              kargs_error_kind_name(err.kind), v->kind);
        CHECK(err.record_index == v->record_index && err.byte_offset == v->byte_offset,
              "%s: record %u byte %u, expected %u %u", v->name, err.record_index, err.byte_offset,
              v->record_index, v->byte_offset);
        CHECK(err.detail[0] == v->detail[0] && err.detail[1] == v->detail[1] &&
                  err.detail[2] == v->detail[2],
              "%s: detail %llu %llu %llu, expected %llu %llu %llu", v->name,
              (unsigned long long)err.detail[0], (unsigned long long)err.detail[1],
              (unsigned long long)err.detail[2], (unsigned long long)v->detail[0],
              (unsigned long long)v->detail[1], (unsigned long long)v->detail[2]);
        /* Entries written before the refused record are reset; the others untouched. */
        for (k = 0; k < KARGS_MAX_KERNEL_ARGS; k++)
            CHECK(is_zero_arg(&out[k]) || all_bytes(&out[k], sizeof out[k], SENTINEL),
                  "%s: entry %zu holds something after an error", v->name, k);
        check_message(&err, v->message, v->name);
    }
    check_guard(out, KARGS_MAX_KERNEL_ARGS, v->name);
    free(out);
    free(argv);
}

static void check_vectors(void)
{
    size_t i;
    for (i = 0; i < CV_VECTOR_COUNT; i++) {
        const cv_vector *v = &cv_vectors[i];
        unsigned char *memory = guest_memory(v->mem_len);
        check_vector(v, memory);
        if (v->mem_len == 0) {
            /* A non-NULL empty memory: host pointers are the base itself. */
            unsigned char *base = (unsigned char *)xmalloc(1);
            check_vector(v, base);
            free(base);
        }
        free_guest_memory(memory, v->mem_len);
    }
    printf("capi_vectors: %u vectors (%u accepted, %u refused) through kargs_parse\n", CV_VECTOR_COUNT,
           CV_ACCEPTED, CV_REFUSED);
}

/* 2. Every capacity below an accepted vector's count: the record cap, then nothing left. */
static void check_out_cap(void)
{
    size_t i, cap, k;
    unsigned long caps = 0;
    char expected[128];
    for (i = 0; i < CV_VECTOR_COUNT; i++) {
        const cv_vector *v = &cv_vectors[i];
        unsigned char *memory, *argv;
        if (!v->accepted) continue;
        memory = guest_memory(v->mem_len);
        argv = copy_bytes(v->bytes, v->len);
        for (cap = 0; cap < v->nargs; cap++) {
            kargs_arg *out = out_array(cap);
            kargs_error err;
            size_t n = 99;
            int32_t rc = kargs_parse(argv, v->len, memory, (size_t)v->mem_len, cap ? out : NULL, cap, &n, &err);
            caps++;
            CHECK(rc == KARGS_ABI_KERNEL_ARGS_UNSUPPORTED && n == 0 &&
                      err.kind == KARGS_ERROR_KIND_TOO_MANY_RECORDS && err.record_index == cap &&
                      err.byte_offset == v->args[cap].byte_offset && err.detail[0] == cap,
                  "%s cap %zu: rc %d n %zu kind %u record %u byte %u", v->name, cap, rc, n, err.kind,
                  err.record_index, err.byte_offset);
            for (k = 0; k < cap; k++)
                CHECK(is_zero_arg(&out[k]), "%s cap %zu: entry %zu not reset", v->name, cap, k);
            check_guard(out, cap, v->name);
            snprintf(expected, sizeof expected, "too many records: record %zu at byte %u is past the cap of %zu",
                     cap, v->args[cap].byte_offset, cap);
            check_message(&err, expected, v->name);
            free(out);
        }
        /* A capacity above the cap: KARGS_MAX_KERNEL_ARGS entries are all that is touched. */
        {
            kargs_arg *out = out_array(KARGS_MAX_KERNEL_ARGS);
            size_t n = 99;
            int32_t rc = kargs_parse(argv, v->len, memory, (size_t)v->mem_len, out, SIZE_MAX, &n, NULL);
            CHECK(rc == 0 && n == v->nargs, "%s, out_cap SIZE_MAX: rc %d n %zu", v->name, rc, n);
            check_guard(out, KARGS_MAX_KERNEL_ARGS, v->name);
            free(out);
        }
        free(argv);
        free_guest_memory(memory, v->mem_len);
    }
    printf("capi_vectors: %lu record caps below the vectors' counts\n", caps);
}

/* 3. NULLs, stale state, argv inside memory, an argv too long to read. */
static void check_null_error(int32_t rc, const kargs_error *err, uint64_t function, uint64_t position,
                             uint64_t len, const char *message)
{
    CHECK(rc == KARGS_ABI_INTERNAL && err->abi_code == KARGS_ABI_INTERNAL &&
              err->kind == KARGS_ERROR_KIND_NULL_ARGUMENT && err->detail[0] == function &&
              err->detail[1] == position && err->detail[2] == len,
          "%s: rc %d kind %u detail %llu %llu %llu", message, rc, err->kind,
          (unsigned long long)err->detail[0], (unsigned long long)err->detail[1],
          (unsigned long long)err->detail[2]);
    CHECK(strcmp(kargs_error_kind_name(err->kind), "null_argument") == 0, "%s", message);
    check_message(err, message, message);
}

static void check_nulls(void)
{
    static const unsigned char one_u32[] = {0x05, 1, 0, 0, 0};
    static const unsigned char empty_window[] = {0x07, 0, 0, 0, 0, 0, 0, 0, 0};
    static const unsigned char one_byte_window[] = {0x07, 0, 0, 0, 0, 1, 0, 0, 0};
    unsigned char memory[64];
    kargs_arg *out = out_array(4);
    kargs_error err;
    size_t n;
    int32_t rc;
    int32_t dims[3] = {1, 1, 1};

    n = 7;
    rc = kargs_parse(NULL, 5, memory, sizeof memory, out, 4, &n, &err);
    CHECK(n == 0, "argv NULL: out_len %zu", n);
    check_null_error(rc, &err, KARGS_FUNCTION_PARSE, 0, 5,
                     "kargs_parse: argv is NULL but argv_len is 5 (NULL is allowed only with 0)");
    rc = kargs_parse(one_u32, sizeof one_u32, NULL, 64, out, 4, &n, &err);
    check_null_error(rc, &err, KARGS_FUNCTION_PARSE, 2, 64,
                     "kargs_parse: memory is NULL but memory_len is 64 (NULL is allowed only with 0)");
    rc = kargs_parse(one_u32, sizeof one_u32, memory, sizeof memory, NULL, 3, &n, &err);
    check_null_error(rc, &err, KARGS_FUNCTION_PARSE, 4, 3,
                     "kargs_parse: out is NULL but out_cap is 3 (NULL is allowed only with 0)");
    rc = kargs_parse(one_u32, sizeof one_u32, memory, sizeof memory, out, 4, NULL, &err);
    check_null_error(rc, &err, KARGS_FUNCTION_PARSE, 6, 0, "kargs_parse: out_len is NULL");
    CHECK(all_bytes(out, 4 * sizeof *out, SENTINEL), "out_len NULL: entries were written");
    /* Without err the code is the same. */
    CHECK(kargs_parse(one_u32, sizeof one_u32, memory, sizeof memory, out, 4, NULL, NULL) == KARGS_ABI_INTERNAL,
          "out_len NULL, err NULL");

    /* NULL where it is allowed. */
    n = 7;
    rc = kargs_parse(NULL, 0, NULL, 0, NULL, 0, &n, &err);
    CHECK(rc == 0 && n == 0 && is_zero_error(&err), "all NULL and empty: rc %d n %zu", rc, n);
    rc = kargs_parse(one_u32, sizeof one_u32, NULL, 0, NULL, 0, &n, &err);
    CHECK(rc == KARGS_ABI_KERNEL_ARGS_UNSUPPORTED && err.kind == KARGS_ERROR_KIND_TOO_MANY_RECORDS &&
              err.detail[0] == 0 && err.record_index == 0 && n == 0,
          "out NULL, cap 0, one record: rc %d kind %u", rc, err.kind);
    check_message(&err, "too many records: record 0 at byte 0 is past the cap of 0", "cap 0");
    rc = kargs_parse(empty_window, sizeof empty_window, NULL, 0, out, 4, &n, &err);
    CHECK(rc == 0 && n == 1 && out[0].tag == KARGS_TAG_PTR && out[0].host_ptr == NULL && out[0].len == 0,
          "an empty window in a NULL memory: rc %d n %zu host %p", rc, n, (void *)out[0].host_ptr);
    rc = kargs_parse(one_byte_window, sizeof one_byte_window, NULL, 0, out, 4, &n, &err);
    CHECK(rc == KARGS_ABI_INVALID_POINTER && err.kind == KARGS_ERROR_KIND_WINDOW_OUT_OF_BOUNDS && n == 0,
          "a 1-byte window in a NULL memory: rc %d", rc);
    check_message(&err,
                  "pointer window at guest offset 0 of 1 bytes at byte 0 (record 0) is outside guest memory "
                  "of 0 bytes",
                  "NULL memory");

    /* The launch shape's arrays. */
    rc = kargs_check_launch_shape(NULL, dims, 0, 0, &err);
    check_null_error(rc, &err, KARGS_FUNCTION_CHECK_LAUNCH_SHAPE, 0, 0, "kargs_check_launch_shape: grid is NULL");
    rc = kargs_check_launch_shape(dims, NULL, 0, 0, &err);
    check_null_error(rc, &err, KARGS_FUNCTION_CHECK_LAUNCH_SHAPE, 1, 0, "kargs_check_launch_shape: block is NULL");
    CHECK(kargs_check_launch_shape(dims, dims, 0, 0, NULL) == 0, "shape without err");

    /* kargs_error_message without an error, and with one this library did not write. */
    check_message(NULL, "kargs_error_message: err is NULL", "err NULL");
    memset(&err, 0, sizeof err);
    err.abi_code = KARGS_ABI_INVALID_ARGS;
    err.kind = 250;
    check_message(&err, "invalid kargs_error: kind 250, abi_code -9", "kind 250");
    err.kind = KARGS_ERROR_KIND_UNKNOWN_TAG;
    err.detail[0] = KARGS_TAG_I32; /* a known tag cannot be an unknown one */
    check_message(&err, "invalid kargs_error: kind 3, abi_code -9", "unknown tag 0x01");
    err.detail[0] = 0x42;
    err.record_index = 3;
    err.byte_offset = 17;
    check_message(&err, "unknown tag 0x42 at byte 17 (record 3)", "a kargs_error made in C");
    err.abi_code = KARGS_ABI_INVALID_POINTER; /* not the kind's code */
    check_message(&err, "invalid kargs_error: kind 3, abi_code -2", "code and kind disagree");
    free(out);
}

static void check_stale_state(void)
{
    static const unsigned char good[] = {0x05, 7, 0, 0, 0, 0x01, 0xf9, 0xff, 0xff, 0xff};
    static const unsigned char bad[] = {0x05, 7, 0, 0, 0, 0x01, 0xf9, 0xff, 0xff, 0xff, 0x42};
    kargs_arg out[2 + GUARD];
    kargs_error err;
    size_t n;
    int32_t rc;
    memset(out, SENTINEL, sizeof out);
    rc = kargs_parse(bad, sizeof bad, NULL, 0, out, sizeof out / sizeof out[0], &n, &err);
    CHECK(rc == KARGS_ABI_INVALID_ARGS && n == 0 && err.record_index == 2 && err.byte_offset == 10 &&
              is_zero_arg(&out[0]) && is_zero_arg(&out[1]),
          "a refused argv's first records are reset: rc %d", rc);
    rc = kargs_parse(good, sizeof good, NULL, 0, out, 2, &n, &err);
    CHECK(rc == 0 && n == 2 && is_zero_error(&err) && out[0].bits == 7 && out[1].bits == UINT64_MAX - 6,
          "success after an error: rc %d n %zu", rc, n);
    CHECK((int32_t)out[1].bits == -7 && (int64_t)out[1].bits == -7, "i32 sign extension");
    rc = kargs_parse(bad, sizeof bad, NULL, 0, out, 2, &n, &err);
    CHECK(rc == KARGS_ABI_KERNEL_ARGS_UNSUPPORTED && n == 0 && is_zero_arg(&out[0]) && is_zero_arg(&out[1]),
          "an error after a success: rc %d n %zu", rc, n);
}

/* argv written by the guest into its own memory, as a host receives it. */
static void check_argv_inside_memory(void)
{
    unsigned char *memory = (unsigned char *)xmalloc(256);
    kargs_builder b;
    kargs_arg out[KARGS_MAX_KERNEL_ARGS];
    kargs_error err;
    uint32_t start = 0, len = 0;
    size_t n;
    int32_t rc;
    memset(memory, 0, 256);
    kargs_init(&b, memory + 100, 64);
    CHECK(kargs_push_ptr(&b, 0, 64) == KARGS_OK && kargs_push_ptr(&b, 192, 64) == KARGS_OK &&
              kargs_push_f32(&b, 1.5f) == KARGS_OK && kargs_push_u64(&b, UINT64_C(1) << 40) == KARGS_OK,
          "kargs_guest.h refused a push");
    rc = kargs_check_args_region(100, (int32_t)kargs_len(&b), 256, &start, &len, &err);
    CHECK(rc == 0 && start == 100 && len == kargs_len(&b) && is_zero_error(&err), "region: rc %d", rc);
    rc = kargs_parse(memory + start, len, memory, 256, out, KARGS_MAX_KERNEL_ARGS, &n, &err);
    CHECK(rc == 0 && n == 4, "argv inside memory: rc %d n %zu", rc, n);
    CHECK(out[0].host_ptr == memory && out[1].host_ptr == memory + 192 && out[1].len == 64 &&
              out[1].byte_offset == 9,
          "host pointers into the memory");
    CHECK(out[2].tag == KARGS_TAG_F32 && out[2].bits == kargs_f32_to_bits(1.5f) && out[2].byte_offset == 18,
          "f32 bits");
    CHECK(out[3].tag == KARGS_TAG_U64 && out[3].bits == UINT64_C(1) << 40 && out[3].host_ptr == NULL, "u64");
    free(memory);
}

/* An argv longer than KARGS_MAX_KERNEL_ARGS_BYTES is refused without reading a byte: its
 * pointer here is an inaccessible page. */
static void check_too_long_is_not_read(void)
{
    unsigned char *argv = guest_memory(4096);
    kargs_arg out[1];
    kargs_error err;
    size_t n = 5;
    int32_t rc = kargs_parse(argv, 5000, NULL, 0, out, 1, &n, &err);
    CHECK(rc == KARGS_ABI_KERNEL_ARGS_UNSUPPORTED && err.kind == KARGS_ERROR_KIND_BUFFER_TOO_LONG &&
              err.detail[0] == 5000 && err.detail[1] == KARGS_MAX_KERNEL_ARGS_BYTES && n == 0,
          "5000 bytes: rc %d kind %u", rc, err.kind);
    check_message(&err, "argv buffer is 5000 bytes, over the cap of 4096 bytes", "5000 bytes");
    rc = kargs_parse(argv, SIZE_MAX, NULL, 0, out, 1, &n, &err);
    CHECK(rc == KARGS_ABI_KERNEL_ARGS_UNSUPPORTED && err.detail[0] == SIZE_MAX, "SIZE_MAX bytes: rc %d", rc);
    free_guest_memory(argv, 4096);
}

/* 4. Regions and shapes. */
static void check_regions_and_shapes(void)
{
    size_t i;
    for (i = 0; i < CV_REGION_COUNT; i++) {
        const cv_region *c = &cv_regions[i];
        uint32_t start = 77, len = 77;
        kargs_error err;
        int32_t rc;
        memset(&err, SENTINEL, sizeof err);
        rc = kargs_check_args_region(c->args_ptr, c->args_len, c->memory_len, &start, &len, &err);
        CHECK(rc == c->code && err.abi_code == c->code && start == c->start && len == c->len &&
                  strcmp(kargs_error_kind_name(err.kind), c->kind) == 0,
              "region %d %d %llu: rc %d start %u len %u kind %s", c->args_ptr, c->args_len,
              (unsigned long long)c->memory_len, rc, start, len, kargs_error_kind_name(err.kind));
        if (rc != 0)
            CHECK((int64_t)err.detail[0] == c->args_ptr && (int64_t)err.detail[1] == c->args_len &&
                      err.detail[2] == c->memory_len,
                  "region %d %d: details", c->args_ptr, c->args_len);
        check_message(&err, c->message, c->message);
        CHECK(kargs_check_args_region(c->args_ptr, c->args_len, c->memory_len, NULL, NULL, NULL) == c->code,
              "region without outputs");
    }
    for (i = 0; i < CV_SHAPE_COUNT; i++) {
        const cv_shape *c = &cv_shapes[i];
        kargs_error err;
        int32_t rc;
        memset(&err, SENTINEL, sizeof err);
        rc = kargs_check_launch_shape(c->grid, c->block, c->shared_mem, c->max_shared_mem_bytes, &err);
        CHECK(rc == c->code && err.abi_code == c->code && strcmp(kargs_error_kind_name(err.kind), c->kind) == 0,
              "shape %zu: rc %d kind %s, expected %d %s", i, rc, kargs_error_kind_name(err.kind), c->code,
              c->kind);
        if (rc != 0)
            CHECK(err.detail[0] == c->dimension && (int64_t)err.detail[1] == c->value && err.detail[2] == c->bound,
                  "shape %zu: details %llu %lld %llu", i, (unsigned long long)err.detail[0],
                  (long long)err.detail[1], (unsigned long long)err.detail[2]);
        check_message(&err, c->message, c->message);
    }
    printf("capi_vectors: %u argument regions, %u launch shapes\n", CV_REGION_COUNT, CV_SHAPE_COUNT);
}

/* 5. Names. */
static void check_names(void)
{
    static const int32_t unknown[] = {1, -11, 100, INT32_MIN, INT32_MAX};
    static const struct { uint32_t kind; const char *name; } kinds[] = {
        {KARGS_ERROR_KIND_NONE, "none"},
        {KARGS_ERROR_KIND_BUFFER_TOO_LONG, "buffer_too_long"},
        {KARGS_ERROR_KIND_TOO_MANY_RECORDS, "too_many_records"},
        {KARGS_ERROR_KIND_UNKNOWN_TAG, "unknown_tag"},
        {KARGS_ERROR_KIND_TRUNCATED_RECORD, "truncated_record"},
        {KARGS_ERROR_KIND_WINDOW_OUT_OF_BOUNDS, "window_out_of_bounds"},
        {KARGS_ERROR_KIND_REGION_NEGATIVE_POINTER, "region_negative_pointer"},
        {KARGS_ERROR_KIND_REGION_NEGATIVE_LENGTH, "region_negative_length"},
        {KARGS_ERROR_KIND_REGION_END_OVERFLOWS, "region_end_overflows"},
        {KARGS_ERROR_KIND_REGION_PAST_MEMORY, "region_past_memory"},
        {KARGS_ERROR_KIND_DIMENSION_TOO_SMALL, "dimension_too_small"},
        {KARGS_ERROR_KIND_DIMENSION_TOO_LARGE, "dimension_too_large"},
        {KARGS_ERROR_KIND_NULL_ARGUMENT, "null_argument"},
    };
    /* Each ABI macro, in AbiError's order (-1 down to -10). */
    static const int32_t macros[] = {
        KARGS_ABI_NOT_AVAILABLE, KARGS_ABI_INVALID_POINTER, KARGS_ABI_INVALID_KERNEL,
        KARGS_ABI_MALFORMED_PTX, KARGS_ABI_LAUNCH_FAILED, KARGS_ABI_QUOTA_EXCEEDED,
        KARGS_ABI_INTERNAL, KARGS_ABI_INVALID_DIMENSIONS, KARGS_ABI_INVALID_ARGS,
        KARGS_ABI_KERNEL_ARGS_UNSUPPORTED};
    size_t i;
    CHECK(sizeof macros / sizeof macros[0] == CV_ABI_CODE_COUNT, "ABI macro count");
    for (i = 0; i < CV_ABI_CODE_COUNT; i++) {
        int32_t code = cv_abi_codes[i].code;
        CHECK(macros[i] == code, "KARGS_ABI macro %zu is %d, AbiError says %d", i, macros[i], code);
        CHECK(strcmp(kargs_abi_error_name(code), cv_abi_codes[i].name) == 0, "%d: %s, expected %s", code,
              kargs_abi_error_name(code), cv_abi_codes[i].name);
        CHECK(strcmp(kargs_error_name(code), cv_abi_codes[i].name) == 0, "kargs_guest.h's name of %d", code);
    }
    CHECK(strcmp(kargs_abi_error_name(KARGS_ABI_OK), "Ok") == 0, "0");
    for (i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
        CHECK(strcmp(kargs_abi_error_name(unknown[i]), "Unknown") == 0, "%d", unknown[i]);
    for (i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        CHECK(strcmp(kargs_error_kind_name(kinds[i].kind), kinds[i].name) == 0, "kind %u: %s, expected %s",
              kinds[i].kind, kargs_error_kind_name(kinds[i].kind), kinds[i].name);
    CHECK(strcmp(kargs_error_kind_name(6), "unknown") == 0 && strcmp(kargs_error_kind_name(UINT32_MAX), "unknown") == 0,
          "unknown kinds");
    CHECK(KARGS_MAX_KERNEL_ARGS == 128u && KARGS_MAX_KERNEL_ARGS_BYTES == 4096u &&
              KARGS_DEFAULT_MAX_SHARED_MEM_BYTES == 232448u && KARGS_ERROR_MESSAGE_MAX == 256u,
          "limits");
}

int main(void)
{
    check_vectors();
    check_out_cap();
    check_nulls();
    check_stale_state();
    check_argv_inside_memory();
    check_too_long_is_not_read();
    check_regions_and_shapes();
    check_names();
    printf("capi_vectors: %lu checks, %lu failed\n", checks, failures);
    return failures ? 1 : 0;
}
