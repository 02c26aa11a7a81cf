/*
 * The native check of include/kargs_guest.h (scripts/c-guest-check.sh builds and runs it as
 * C99 and as C++17, with gcc and clang, under AddressSanitizer and UBSan):
 *
 * 1. every accepted vector of tests/vectors/argv.json, encoded through the header's typed
 *    pushes, gives exactly the vector's bytes, into a buffer of exactly that size (three
 *    ways: typed values, raw float bits, windows from pointers);
 * 2. every buffer too small, for every vector and every capacity below its length: each
 *    refusal is KARGS_BUFFER_TOO_SMALL exactly where the record does not fit, writes nothing
 *    (not a byte, not a field of the builder), and the builder goes on: later records that
 *    fit are appended, the same as a model of ArgvBuilder;
 * 3. the record cap (128) for every push function, the byte cap (4096), the 32-bit address
 *    checks of the window pushes, and the order of the checks;
 * 4. the ABI error names against std-adapter/src/error.rs and the caps against
 *    core/src/limits.rs.
 *
 * The table comes from capi/c/tests/gen_vectors.py (kargs_vectors.h, generated each run).
 * Buffers are malloc'ed at their exact size, so AddressSanitizer sees any write past them.
 */
#include "kargs_guest.h"
#include "kargs_vectors.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define SENTINEL 0xa5u

/* How a vector's arguments are pushed. */
enum mode { TYPED, BITS, WINDOWS, MODES };
static const char *const mode_names[MODES] = {"typed", "bits", "windows"};

static size_t wire_size(unsigned tag)
{
    switch (tag) {
    case KARGS_TAG_I32:
    case KARGS_TAG_F32:
    case KARGS_TAG_U32: return KARGS_WIRE_SIZE_32;
    default: return KARGS_WIRE_SIZE_64;
    }
}

static kargs_status push(kargs_builder *b, const kv_arg *a, enum mode mode)
{
    switch (a->tag) {
    case KARGS_TAG_I32: return kargs_push_i32(b, (int32_t)a->s);
    case KARGS_TAG_I64: return kargs_push_i64(b, a->s);
    case KARGS_TAG_F32:
        return mode == BITS ? kargs_push_f32_bits(b, (uint32_t)a->u)
                            : kargs_push_f32(b, kargs_f32_from_bits((uint32_t)a->u));
    case KARGS_TAG_F64:
        return mode == BITS ? kargs_push_f64_bits(b, a->u)
                            : kargs_push_f64(b, kargs_f64_from_bits(a->u));
    case KARGS_TAG_U32: return kargs_push_u32(b, (uint32_t)a->u);
    case KARGS_TAG_U64: return kargs_push_u64(b, a->u);
    case KARGS_TAG_PTR:
        /* A guest offset as a pointer: never dereferenced, only its address is encoded. */
        return mode == WINDOWS ? kargs_push_window(b, (const void *)(uintptr_t)a->off, a->len)
                               : kargs_push_ptr(b, a->off, a->len);
    default: abort();
    }
}

/* A buffer of exactly `cap` bytes (at least one allocated), filled with SENTINEL. */
static unsigned char *sentinel_buffer(size_t cap)
{
    unsigned char *buf = (unsigned char *)malloc(cap ? cap : 1);
    if (!buf) {
        perror("malloc");
        exit(2);
    }
    memset(buf, (int)SENTINEL, cap ? cap : 1);
    return buf;
}

static int all_sentinel(const unsigned char *p, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (p[i] != SENTINEL) return 0;
    return 1;
}

static int same_builder(const kargs_builder *x, const kargs_builder *y)
{
    return x->buf == y->buf && x->cap == y->cap && x->len == y->len && x->count == y->count;
}

/* 1. Every accepted vector encodes to exactly its bytes. */
static void check_vectors(void)
{
    size_t v, k;
    int mode;
    for (v = 0; v < KV_VECTOR_COUNT; v++) {
        const kv_vector *vec = &kv_vectors[v];
        for (mode = 0; mode < MODES; mode++) {
            unsigned char *buf = sentinel_buffer(vec->len);
            kargs_builder b;
            kargs_init(&b, buf, vec->len);
            for (k = 0; k < vec->nargs; k++) {
                kargs_status st = push(&b, &vec->args[k], (enum mode)mode);
                CHECK(st == KARGS_OK, "%s (%s): argument %zu refused: %s", vec->name,
                      mode_names[mode], k, kargs_status_name(st));
            }
            CHECK(kargs_finish(&b) == vec->len && kargs_count(&b) == vec->nargs,
                  "%s (%s): %zu bytes and %zu records, expected %zu and %zu", vec->name,
                  mode_names[mode], kargs_finish(&b), kargs_count(&b), vec->len, vec->nargs);
            CHECK(kargs_bytes(&b) == buf, "%s: kargs_bytes is not the buffer", vec->name);
            CHECK(kargs_finish(&b) != vec->len || memcmp(buf, vec->bytes, vec->len) == 0,
                  "%s (%s): the bytes differ from the vector's", vec->name, mode_names[mode]);
            free(buf);
        }
    }
}

/* 2. Every capacity below a vector's length: refusals exactly where ArgvBuilder refuses,
 *    nothing half-written, and the builder keeps going. */
static void check_buffer_too_small(void)
{
    size_t v, k, cap;
    unsigned long refusals = 0;
    unsigned char *expected = (unsigned char *)malloc(KARGS_MAX_ENCODED_BYTES);
    if (!expected) exit(2);
    for (v = 0; v < KV_VECTOR_COUNT; v++) {
        const kv_vector *vec = &kv_vectors[v];
        for (cap = 0; cap < vec->len; cap++) {
            int mode = (int)(cap % MODES);
            unsigned char *buf = sentinel_buffer(cap);
            size_t model_len = 0, model_count = 0, offset = 0, first_refusal = vec->nargs;
            kargs_builder b;
            kargs_init(&b, buf, cap);
            for (k = 0; k < vec->nargs; offset += wire_size(vec->args[k].tag), k++) {
                size_t size = wire_size(vec->args[k].tag);
                int fits = model_len + size <= cap;
                kargs_builder before = b;
                kargs_status st = push(&b, &vec->args[k], (enum mode)mode);
                if (fits) {
                    CHECK(st == KARGS_OK, "%s cap %zu: argument %zu (%zu bytes at %zu) refused: %s",
                          vec->name, cap, k, size, model_len, kargs_status_name(st));
                    memcpy(expected + model_len, vec->bytes + offset, size);
                    model_len += size;
                    model_count++;
                } else {
                    refusals++;
                    if (first_refusal == vec->nargs) first_refusal = k;
                    CHECK(st == KARGS_BUFFER_TOO_SMALL, "%s cap %zu: argument %zu: %s", vec->name,
                          cap, k, kargs_status_name(st));
                    CHECK(same_builder(&b, &before), "%s cap %zu: a refusal changed the builder",
                          vec->name, cap);
                    /* Nothing written past the records so far: the refused record's bytes
                     * would start at model_len. */
                    CHECK(all_sentinel(buf + model_len, cap - model_len),
                          "%s cap %zu: argument %zu was half-written", vec->name, cap, k);
                }
                CHECK(kargs_len(&b) == model_len && kargs_count(&b) == model_count,
                      "%s cap %zu after argument %zu: len %zu count %zu, model %zu %zu", vec->name,
                      cap, k, kargs_len(&b), kargs_count(&b), model_len, model_count);
            }
            CHECK(first_refusal < vec->nargs, "%s cap %zu: nothing was refused", vec->name, cap);
            CHECK(memcmp(buf, expected, model_len) == 0, "%s cap %zu: the records written differ",
                  vec->name, cap);
            CHECK(all_sentinel(buf + model_len, cap - model_len),
                  "%s cap %zu: bytes written past the argv", vec->name, cap);
            /* Stopping at the first refusal (`||`, like `?`) leaves exactly the vector's
             * prefix: the records before the refused one. */
            offset = 0;
            for (k = 0; k < first_refusal; k++) offset += wire_size(vec->args[k].tag);
            CHECK(memcmp(buf, vec->bytes, offset) == 0, "%s cap %zu: the prefix differs",
                  vec->name, cap);
            free(buf);
        }
    }
    free(expected);
    printf("vectors_test: %lu buffer-too-small refusals checked\n", refusals);
}

/* Pushes record `i` of a run of one type, `which` naming the push function. */
enum push_fn { P_I32, P_I64, P_F32, P_F32_BITS, P_F64, P_F64_BITS, P_U32, P_U64, P_PTR, P_WINDOW,
               P_WINDOW_N, PUSH_FNS };
static const char *const push_names[PUSH_FNS] = {
    "i32", "i64", "f32", "f32_bits", "f64", "f64_bits", "u32", "u64", "ptr", "window", "window_n"};
static const size_t push_sizes[PUSH_FNS] = {5, 9, 5, 5, 9, 9, 5, 9, 9, 9, 9};

static kargs_status push_fn(kargs_builder *b, enum push_fn which, uint32_t i)
{
    switch (which) {
    case P_I32: return kargs_push_i32(b, -(int32_t)i);
    case P_I64: return kargs_push_i64(b, -(int64_t)i);
    case P_F32: return kargs_push_f32(b, (float)i);
    case P_F32_BITS: return kargs_push_f32_bits(b, i);
    case P_F64: return kargs_push_f64(b, (double)i);
    case P_F64_BITS: return kargs_push_f64_bits(b, i);
    case P_U32: return kargs_push_u32(b, i);
    case P_U64: return kargs_push_u64(b, i);
    case P_PTR: return kargs_push_ptr(b, i, i);
    case P_WINDOW: return kargs_push_window(b, (const void *)(uintptr_t)i, i);
    case P_WINDOW_N: return kargs_push_window_n(b, (const void *)(uintptr_t)i, i, 1);
    default: abort();
    }
}

/* 3a. The record cap, for every push function, with room in the buffer and without. */
static void check_record_cap(void)
{
    int which;
    uint32_t i;
    for (which = 0; which < PUSH_FNS; which++) {
        size_t full = KARGS_MAX_KERNEL_ARGS * push_sizes[which];
        size_t caps[2];
        int c;
        caps[0] = KARGS_MAX_ENCODED_BYTES + 16; /* room for more */
        caps[1] = full;                         /* exactly full: the record cap comes first */
        for (c = 0; c < 2; c++) {
            unsigned char *buf = sentinel_buffer(caps[c]);
            kargs_builder b, before;
            kargs_status st;
            int w;
            kargs_init(&b, buf, caps[c]);
            for (i = 0; i < KARGS_MAX_KERNEL_ARGS; i++) {
                st = push_fn(&b, (enum push_fn)which, i);
                CHECK(st == KARGS_OK, "%s: record %u refused: %s", push_names[which], (unsigned)i,
                      kargs_status_name(st));
            }
            CHECK(kargs_len(&b) == full && kargs_count(&b) == KARGS_MAX_KERNEL_ARGS,
                  "%s: 128 records: len %zu count %zu", push_names[which], kargs_len(&b),
                  kargs_count(&b));
            before = b;
            /* Record 129, of every type: refused, nothing written. */
            for (w = 0; w < PUSH_FNS; w++) {
                st = push_fn(&b, (enum push_fn)w, 7);
                CHECK(st == KARGS_TOO_MANY_ARGS, "%s then %s: record 129: %s", push_names[which],
                      push_names[w], kargs_status_name(st));
                CHECK(same_builder(&b, &before), "%s: a refusal changed the builder",
                      push_names[which]);
            }
            CHECK(all_sentinel(buf + full, caps[c] - full), "%s: record 129 was half-written",
                  push_names[which]);
            /* The argv still reads as 128 records: their tags are where they should be. */
            for (i = 0; i < KARGS_MAX_KERNEL_ARGS; i++) {
                unsigned char tag = buf[i * push_sizes[which]];
                CHECK(tag >= KARGS_TAG_I32 && tag <= KARGS_TAG_PTR, "%s: record %u has tag 0x%02x",
                      push_names[which], (unsigned)i, tag);
            }
            free(buf);
        }
    }
}

/* 3b. The byte cap: unreachable through pushes while the record cap holds (128 * 9 = 1152),
 *     so the builder is put in a state with 4092 bytes written. White-box. */
static void check_byte_cap(void)
{
    unsigned char *buf = sentinel_buffer(KARGS_MAX_KERNEL_ARGS_BYTES + 16);
    kargs_builder b, before;
    kargs_status st;

    kargs_init(&b, buf, KARGS_MAX_KERNEL_ARGS_BYTES + 16);
    b.len = KARGS_MAX_KERNEL_ARGS_BYTES - 4; /* 4092: an i32 would end at 4097 */
    before = b;
    st = kargs_push_i32(&b, 1);
    CHECK(st == KARGS_TOO_MANY_BYTES, "i32 to 4097 bytes: %s", kargs_status_name(st));
    st = kargs_push_ptr(&b, 0, 0);
    CHECK(st == KARGS_TOO_MANY_BYTES, "ptr to 4101 bytes: %s", kargs_status_name(st));
    CHECK(same_builder(&b, &before) && all_sentinel(buf + b.len, 20), "byte cap: half-written");

    b.len = KARGS_MAX_KERNEL_ARGS_BYTES - 5; /* 4091: a u32 ends exactly at 4096 */
    st = kargs_push_u32(&b, 0x01020304u);
    CHECK(st == KARGS_OK && b.len == KARGS_MAX_KERNEL_ARGS_BYTES, "u32 to exactly 4096: %s",
          kargs_status_name(st));
    CHECK(buf[4091] == 0x05 && buf[4092] == 0x04 && buf[4095] == 0x01, "u32 at 4091: wrong bytes");
    st = kargs_push_u32(&b, 0);
    CHECK(st == KARGS_TOO_MANY_BYTES, "past 4096: %s", kargs_status_name(st));

    /* Order: the record cap before the byte cap, the byte cap before the buffer's size. */
    b.len = KARGS_MAX_KERNEL_ARGS_BYTES - 4;
    b.count = KARGS_MAX_KERNEL_ARGS;
    st = kargs_push_i32(&b, 1);
    CHECK(st == KARGS_TOO_MANY_ARGS, "record cap first: %s", kargs_status_name(st));
    b.count = 0;
    b.cap = KARGS_MAX_KERNEL_ARGS_BYTES;
    st = kargs_push_i32(&b, 1);
    CHECK(st == KARGS_TOO_MANY_BYTES, "byte cap before the buffer: %s", kargs_status_name(st));
    free(buf);
}

/* 3c. Windows from pointers: the encoding, the 32-bit checks, their order. */
static void check_windows(void)
{
    unsigned char *buf = sentinel_buffer(60);
    kargs_builder b, before;
    kargs_status st;
    static const unsigned char window[] = {0x07, 0x40, 0, 0, 0, 0x80, 0, 0, 0};
    static const unsigned char top[] = {0x07, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    static const unsigned char floats[] = {0x07, 0x10, 0, 0, 0, 0x10, 0, 0, 0};

    kargs_init(&b, buf, 60);
    st = kargs_push_window(&b, (const void *)(uintptr_t)0x40, 0x80);
    CHECK(st == KARGS_OK && memcmp(buf, window, 9) == 0, "window [64, 192): %s",
          kargs_status_name(st));
    /* The encoder does not check windows against a memory: the host does. */
    st = kargs_push_window(&b, (const void *)(uintptr_t)UINT32_MAX, UINT32_MAX);
    CHECK(st == KARGS_OK && memcmp(buf + 9, top, 9) == 0, "window at the top: %s",
          kargs_status_name(st));
    st = kargs_push_window_n(&b, (const void *)(uintptr_t)0x10, 4, sizeof(float));
    CHECK(st == KARGS_OK && memcmp(buf + 18, floats, 9) == 0, "4 floats at 16: %s",
          kargs_status_name(st));
    st = kargs_push_window_n(&b, (const void *)(uintptr_t)0x10, 0x3fffffffu, 4);
    CHECK(st == KARGS_OK && kargs_len(&b) == 36, "0xfffffffc bytes: %s", kargs_status_name(st));
    st = kargs_push_window_n(&b, (const void *)(uintptr_t)0x10, SIZE_MAX, 0);
    CHECK(st == KARGS_OK && kargs_len(&b) == 45 && buf[41] == 0 && buf[44] == 0,
          "elements of size 0: %s", kargs_status_name(st));

    before = b;
    st = kargs_push_window_n(&b, (const void *)(uintptr_t)0x10, 0x40000000u, 4);
    CHECK(st == KARGS_ADDRESS_OUT_OF_RANGE, "4 GiB of floats: %s", kargs_status_name(st));
    st = kargs_push_window_n(&b, (const void *)(uintptr_t)0x10, SIZE_MAX, 2);
    CHECK(st == KARGS_ADDRESS_OUT_OF_RANGE, "SIZE_MAX * 2 bytes: %s", kargs_status_name(st));
#if SIZE_MAX > 0xffffffffu
    st = kargs_push_window(&b, (const void *)((uintptr_t)UINT32_MAX + 1), 0);
    CHECK(st == KARGS_ADDRESS_OUT_OF_RANGE, "an address past 32 bits: %s", kargs_status_name(st));
    st = kargs_push_window(&b, (const void *)(uintptr_t)0, (size_t)UINT32_MAX + 1);
    CHECK(st == KARGS_ADDRESS_OUT_OF_RANGE, "a 4 GiB window: %s", kargs_status_name(st));
#endif
    CHECK(same_builder(&b, &before) && all_sentinel(buf + 45, 60 - 45),
          "an address refusal wrote something");

    /* Order: the address check first (ArgvBuilder::slice converts before it appends)... */
    b.count = KARGS_MAX_KERNEL_ARGS;
    st = kargs_push_window_n(&b, (const void *)(uintptr_t)0x10, 0x40000000u, 4);
    CHECK(st == KARGS_ADDRESS_OUT_OF_RANGE, "address before the record cap: %s",
          kargs_status_name(st));
    /* ...then the record cap, before the buffer's size (60 bytes: one more window fits). */
    st = kargs_push_window(&b, (const void *)(uintptr_t)0x10, 4);
    CHECK(st == KARGS_TOO_MANY_ARGS, "record cap: %s", kargs_status_name(st));
    b.count = 5;
    st = kargs_push_window(&b, (const void *)(uintptr_t)0x10, 4);
    CHECK(st == KARGS_OK && kargs_len(&b) == 54, "window fits: %s", kargs_status_name(st));
    st = kargs_push_window(&b, (const void *)(uintptr_t)0x10, 4);
    CHECK(st == KARGS_BUFFER_TOO_SMALL, "buffer full: %s", kargs_status_name(st));
    st = kargs_push_u32(&b, 1);
    CHECK(st == KARGS_OK && kargs_len(&b) == 59, "a smaller record still fits: %s",
          kargs_status_name(st));
    free(buf);

    /* A NULL buffer is an empty one. */
    kargs_init(&b, NULL, 100);
    st = kargs_push_u32(&b, 1);
    CHECK(st == KARGS_BUFFER_TOO_SMALL && kargs_len(&b) == 0 && b.cap == 0, "NULL buffer: %s",
          kargs_status_name(st));
}

/* 3d. Float bits survive both float paths, including signalling NaNs and -0.0. */
static void check_float_bits(void)
{
    static const uint32_t f32s[] = {0x00000000u, 0x80000000u, 0x7f800001u, 0xff800001u,
                                    0x7fc0deadu, 0xffbfffffu, 0x00000001u, 0x7f7fffffu};
    static const uint64_t f64s[] = {UINT64_C(0x8000000000000000), UINT64_C(0x7ff0000000000001),
                                    UINT64_C(0xfff7ffffffffffff), UINT64_C(0x7ff8dead0000beef)};
    unsigned char buf[16];
    kargs_builder b;
    size_t i;
    int k;
    for (i = 0; i < sizeof f32s / sizeof f32s[0]; i++) {
        kargs_init(&b, buf, sizeof buf);
        CHECK(kargs_f32_to_bits(kargs_f32_from_bits(f32s[i])) == f32s[i], "f32 bits 0x%08x",
              (unsigned)f32s[i]);
        CHECK(kargs_push_f32(&b, kargs_f32_from_bits(f32s[i])) == KARGS_OK && buf[0] == 0x03,
              "push f32");
        for (k = 0; k < 4; k++)
            CHECK(buf[1 + k] == (unsigned char)(f32s[i] >> (8 * k)), "f32 0x%08x byte %d",
                  (unsigned)f32s[i], k);
    }
    for (i = 0; i < sizeof f64s / sizeof f64s[0]; i++) {
        kargs_init(&b, buf, sizeof buf);
        CHECK(kargs_f64_to_bits(kargs_f64_from_bits(f64s[i])) == f64s[i], "f64 bits");
        CHECK(kargs_push_f64(&b, kargs_f64_from_bits(f64s[i])) == KARGS_OK && buf[0] == 0x04,
              "push f64");
        for (k = 0; k < 8; k++)
            CHECK(buf[1 + k] == (unsigned char)(f64s[i] >> (8 * k)), "f64 byte %d", k);
    }
}

/* 4. Names and caps against the Rust sources. */
static void check_names_and_caps(void)
{
    size_t i;
    static const int unknown[] = {1, -11, -100, -101, 100, INT_MIN, INT_MAX};
    for (i = 0; i < KV_ABI_CODE_COUNT; i++)
        CHECK(strcmp(kargs_error_name(kv_abi_codes[i].code), kv_abi_codes[i].name) == 0,
              "code %d: header says %s, std-adapter/src/error.rs says %s", kv_abi_codes[i].code,
              kargs_error_name(kv_abi_codes[i].code), kv_abi_codes[i].name);
    CHECK(kv_abi_codes[0].code == KARGS_ABI_NOT_AVAILABLE &&
              kv_abi_codes[1].code == KARGS_ABI_INVALID_POINTER &&
              kv_abi_codes[2].code == KARGS_ABI_INVALID_KERNEL &&
              kv_abi_codes[3].code == KARGS_ABI_MALFORMED_PTX &&
              kv_abi_codes[4].code == KARGS_ABI_LAUNCH_FAILED &&
              kv_abi_codes[5].code == KARGS_ABI_QUOTA_EXCEEDED &&
              kv_abi_codes[6].code == KARGS_ABI_INTERNAL &&
              kv_abi_codes[7].code == KARGS_ABI_INVALID_DIMENSIONS &&
              kv_abi_codes[8].code == KARGS_ABI_INVALID_ARGS &&
              kv_abi_codes[9].code == KARGS_ABI_KERNEL_ARGS_UNSUPPORTED,
          "the KARGS_ABI_* constants are not AbiError's codes in order");
    CHECK(strcmp(kargs_error_name(0), "Ok") == 0, "code 0: %s", kargs_error_name(0));
    for (i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
        CHECK(strcmp(kargs_error_name(unknown[i]), "Unknown") == 0, "code %d: %s", unknown[i],
              kargs_error_name(unknown[i]));
    CHECK(strcmp(kargs_status_name(KARGS_OK), "Ok") == 0 &&
              strcmp(kargs_status_name(KARGS_BUFFER_TOO_SMALL), "BufferTooSmall") == 0 &&
              strcmp(kargs_status_name(KARGS_TOO_MANY_ARGS), "TooManyArgs") == 0 &&
              strcmp(kargs_status_name(KARGS_TOO_MANY_BYTES), "TooManyBytes") == 0 &&
              strcmp(kargs_status_name(KARGS_ADDRESS_OUT_OF_RANGE), "AddressOutOfRange") == 0 &&
              strcmp(kargs_status_name(5), "Unknown") == 0 &&
              strcmp(kargs_status_name(-1), "Unknown") == 0,
          "status names");
    CHECK(KARGS_MAX_KERNEL_ARGS == KV_MAX_KERNEL_ARGS, "MAX_KERNEL_ARGS: header %u, core %u",
          KARGS_MAX_KERNEL_ARGS, KV_MAX_KERNEL_ARGS);
    CHECK(KARGS_MAX_KERNEL_ARGS_BYTES == KV_MAX_KERNEL_ARGS_BYTES,
          "MAX_KERNEL_ARGS_BYTES: header %u, core %u", KARGS_MAX_KERNEL_ARGS_BYTES,
          KV_MAX_KERNEL_ARGS_BYTES);
    CHECK(KARGS_MAX_ENCODED_BYTES == KV_MAX_KERNEL_ARGS * 9u, "KARGS_MAX_ENCODED_BYTES");
}

int main(void)
{
    check_vectors();
    check_buffer_too_small();
    check_record_cap();
    check_byte_cap();
    check_windows();
    check_float_bits();
    check_names_and_caps();
    printf("vectors_test (%s): %u accepted vectors of %u encoded exactly; %lu checks, %lu failed\n",
#ifdef __cplusplus
           "C++",
#else
           "C",
#endif
           KV_VECTOR_COUNT, KV_ALL_VECTORS, checks, failures);
    return failures == 0 ? 0 : 1;
}
