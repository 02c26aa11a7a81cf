/*
 * kargs_guest.h: the wasi-cuda kernel-argument (argv) encoder for C and C++ guests.
 *
 * One freestanding header (C99 or C++17; no libc, no allocation, no global state) for guest
 * code that launches a GPU kernel through the wasi-cuda `wasi_cuda_launch` import. It
 * encodes a kernel's parameters into a buffer the caller owns, in the wire format of
 * docs/wire-format.md (one tag byte, then the value, little-endian, no padding), exactly as
 * the Rust guest's `kernel_args_core::ArgvBuilder` does (core/src/encode.rs): the same
 * records, the same caps, the same refusals. It also declares the import (wasm32 only) and
 * names the ABI's error codes.
 *
 *   tag   type   value bytes (after the tag)           push function
 *   0x01  i32    4                                     kargs_push_i32
 *   0x02  i64    8                                     kargs_push_i64
 *   0x03  f32    4: the IEEE-754 bits                  kargs_push_f32, kargs_push_f32_bits
 *   0x04  f64    8: the IEEE-754 bits                  kargs_push_f64, kargs_push_f64_bits
 *   0x05  u32    4                                     kargs_push_u32
 *   0x06  u64    8                                     kargs_push_u64
 *   0x07  ptr    4: guest offset, 4: byte length       kargs_push_ptr, kargs_push_window,
 *                                                      kargs_push_window_n
 *
 * Example: a guest that launches vector_add(const float *a, const float *b, float *out,
 * unsigned n) (capi/c/examples/vector_add.c is the whole guest):
 *
 *   #include "kargs_guest.h"
 *
 *   static float a[1024], b[1024], out[1024];
 *
 *   int32_t launch_vector_add(uint32_t n)
 *   {
 *       unsigned char buf[64];                 // 4 records: 3 * 9 + 5 bytes
 *       kargs_builder argv;
 *       if (n > 1024) return -100;             // the guest's own codes lie below -10
 *       kargs_init(&argv, buf, sizeof buf);
 *       // Each push returns KARGS_OK (0) or a refusal, so `||` stops at the first refusal,
 *       // like `?` on the Rust builder. On wasm32 a pointer's address is its guest offset.
 *       if (kargs_push_window_n(&argv, a, n, sizeof a[0]) ||
 *           kargs_push_window_n(&argv, b, n, sizeof b[0]) ||
 *           kargs_push_window_n(&argv, out, n, sizeof out[0]) ||
 *           kargs_push_u32(&argv, n))
 *           return -101;
 *       return kargs_launch(1, n ? (int32_t)((n + 255) / 256) : 1, 1, 1, 256, 1, 1, 0, &argv);
 *       // 0, or a negative ABI code: kargs_error_name(rc) names it ("InvalidPointer", ...).
 *   }
 *
 * Build a guest with clang (14 or later) and lld:
 *
 *   clang --target=wasm32-unknown-unknown -nostdlib -ffreestanding -O2 -Iinclude \
 *         -Wl,--no-entry -o guest.wasm guest.c
 *
 * Error contract (the same as ArgvBuilder's):
 *
 * - Every push returns KARGS_OK (0) when the record was appended, or a kargs_status > 0 that
 *   says why it was refused, checked in this order (a push that fails several checks reports
 *   the first):
 *     KARGS_ADDRESS_OUT_OF_RANGE  (windows from a pointer only) the address or the byte
 *                                 length does not fit in 32 bits: only off wasm32, or a
 *                                 length of 4 GiB or more;
 *     KARGS_TOO_MANY_ARGS         128 records (MAX_KERNEL_ARGS) are already written: a host
 *                                 would refuse the argv;
 *     KARGS_TOO_MANY_BYTES        the argv would pass 4096 bytes (MAX_KERNEL_ARGS_BYTES).
 *                                 128 records take at most 1152 bytes
 *                                 (KARGS_MAX_ENCODED_BYTES), so with the record cap in force
 *                                 this cannot happen; it is checked all the same;
 *     KARGS_BUFFER_TOO_SMALL      the caller's buffer has no room for the whole record.
 * - A refused push writes nothing: no byte of the buffer and no field of the builder changes.
 *   The builder stays usable: a later push that fits succeeds, and kargs_len/kargs_finish
 *   still give the records written before the refusal. The refused record's 0-based index is
 *   kargs_count() (unchanged by the refusal); the bytes it would have needed in all are
 *   kargs_len() + its wire size.
 * - Nothing is ever written outside [buf, buf + cap), and only bytes [0, kargs_len()) are
 *   written at all.
 * - The encoder never produces an argv a host refuses for its shape (the caps above). The
 *   host still checks every window against the guest's memory (InvalidPointer, -2) and the
 *   argument count and sizes against the kernel (InvalidArgs, -9).
 *
 * Floats are carried as their raw bits: kargs_push_f32_bits/kargs_push_f64_bits send any bit
 * pattern (every NaN payload, -0.0); kargs_push_f32/kargs_push_f64 take the float's object
 * representation without any conversion (float and double must be IEEE-754 binary32 and
 * binary64, which the header checks by size). The ABI codes wasi_cuda_launch returns are the
 * KARGS_ABI_* constants below (std-adapter/src/error.rs); kargs_error_name() names them.
 *
 * Checked by scripts/c-guest-check.sh: every valid conformance vector of tests/vectors/argv.json
 * encoded through this header (C99 and C++17, gcc and clang, AddressSanitizer and UBSan), every
 * refusal, and a C guest (capi/c/examples/vector_add.c) run on the wasmtime host.
 *
 * License: MIT OR Apache-2.0, like the rest of kernel-args.
 */
#ifndef KARGS_GUEST_H
#define KARGS_GUEST_H

/* Freestanding headers only (C99 4p6): no libc is needed or linked. */
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Caps (core/src/limits.rs; docs/wire-format.md "Caps") ---------------------------- */

/* Records per argv (MAX_KERNEL_ARGS). */
#define KARGS_MAX_KERNEL_ARGS 128u
/* Bytes per argv (MAX_KERNEL_ARGS_BYTES). */
#define KARGS_MAX_KERNEL_ARGS_BYTES 4096u
/* The longest argv the record cap allows: 128 records of 9 bytes. A buffer of this size holds
 * any argv the encoder can produce. */
#define KARGS_MAX_ENCODED_BYTES 1152u
/* The largest wasm32 linear memory (MAX_GUEST_MEMORY_BYTES): 65 536 pages of 64 KiB. */
#define KARGS_MAX_GUEST_MEMORY_BYTES 4294967296ull

/* ---- Record tags and sizes (docs/wire-format.md "Records"; frozen ABI) ---------------- */

#define KARGS_TAG_I32 0x01u
#define KARGS_TAG_I64 0x02u
#define KARGS_TAG_F32 0x03u
#define KARGS_TAG_F64 0x04u
#define KARGS_TAG_U32 0x05u
#define KARGS_TAG_U64 0x06u
#define KARGS_TAG_PTR 0x07u

/* Wire size of a record, tag byte included. */
#define KARGS_WIRE_SIZE_32 5u /* i32, f32, u32 */
#define KARGS_WIRE_SIZE_64 9u /* i64, f64, u64 */
#define KARGS_WIRE_SIZE_PTR 9u

/* ---- ABI error codes (std-adapter/src/error.rs; wit/wasi-cuda.wit abi-error) ---------- */

/* What wasi_cuda_launch returns: 0, or one of these. */
#define KARGS_ABI_OK 0
#define KARGS_ABI_NOT_AVAILABLE (-1)            /* capability disabled or no CUDA device */
#define KARGS_ABI_INVALID_POINTER (-2)          /* a pointer or region outside linear memory */
#define KARGS_ABI_INVALID_KERNEL (-3)           /* unknown kernel id */
#define KARGS_ABI_MALFORMED_PTX (-4)            /* the driver refused the kernel's PTX */
#define KARGS_ABI_LAUNCH_FAILED (-5)            /* the driver refused or failed the launch */
#define KARGS_ABI_QUOTA_EXCEEDED (-6)           /* a host resource quota was exceeded */
#define KARGS_ABI_INTERNAL (-7)                 /* a host-side fault, not the guest's doing */
#define KARGS_ABI_INVALID_DIMENSIONS (-8)       /* grid, block or shared memory out of range */
#define KARGS_ABI_INVALID_ARGS (-9)             /* argv malformed or not the kernel's params */
#define KARGS_ABI_KERNEL_ARGS_UNSUPPORTED (-10) /* the argv exceeds a cap the host enforces */

/* The ABI name of a code ("InvalidPointer" for -2, as AbiError::name() spells it), "Ok" for
 * 0, and "Unknown" for anything else (a guest's own codes, say). Never NULL. */
static inline const char *kargs_error_name(int code)
{
    switch (code) {
    case KARGS_ABI_OK: return "Ok";
    case KARGS_ABI_NOT_AVAILABLE: return "NotAvailable";
    case KARGS_ABI_INVALID_POINTER: return "InvalidPointer";
    case KARGS_ABI_INVALID_KERNEL: return "InvalidKernel";
    case KARGS_ABI_MALFORMED_PTX: return "MalformedPtx";
    case KARGS_ABI_LAUNCH_FAILED: return "LaunchFailed";
    case KARGS_ABI_QUOTA_EXCEEDED: return "QuotaExceeded";
    case KARGS_ABI_INTERNAL: return "Internal";
    case KARGS_ABI_INVALID_DIMENSIONS: return "InvalidDimensions";
    case KARGS_ABI_INVALID_ARGS: return "InvalidArgs";
    case KARGS_ABI_KERNEL_ARGS_UNSUPPORTED: return "KernelArgsUnsupported";
    default: return "Unknown";
    }
}

/* ---- The encoder ---------------------------------------------------------------------- */

/* Why a push was refused (EncodeError in core/src/error.rs). Positive, so that they never
 * look like an ABI code. */
typedef enum kargs_status {
    KARGS_OK = 0,
    KARGS_BUFFER_TOO_SMALL = 1,    /* the caller's buffer has no room for the record */
    KARGS_TOO_MANY_ARGS = 2,       /* KARGS_MAX_KERNEL_ARGS records are already written */
    KARGS_TOO_MANY_BYTES = 3,      /* the argv would pass KARGS_MAX_KERNEL_ARGS_BYTES */
    KARGS_ADDRESS_OUT_OF_RANGE = 4 /* a window's address or length does not fit in 32 bits */
} kargs_status;

/* "Ok", "BufferTooSmall", "TooManyArgs", "TooManyBytes", "AddressOutOfRange" (the Rust
 * variants' names), or "Unknown". Never NULL. */
static inline const char *kargs_status_name(int status)
{
    switch (status) {
    case KARGS_OK: return "Ok";
    case KARGS_BUFFER_TOO_SMALL: return "BufferTooSmall";
    case KARGS_TOO_MANY_ARGS: return "TooManyArgs";
    case KARGS_TOO_MANY_BYTES: return "TooManyBytes";
    case KARGS_ADDRESS_OUT_OF_RANGE: return "AddressOutOfRange";
    default: return "Unknown";
    }
}

/* An argv being written into a caller's buffer. Set up with kargs_init; read with the
 * accessors. INVARIANT (kept by every function here): len <= cap, len <= 4096 and
 * count <= 128, and bytes [0, len) of buf are `count` complete records. */
typedef struct kargs_builder {
    unsigned char *buf; /* the caller's buffer */
    size_t cap;         /* its size in bytes */
    size_t len;         /* bytes written */
    size_t count;       /* records written */
} kargs_builder;

/* A builder that writes into buf[0, cap), starting at its first byte. Nothing is written
 * until the first push. A NULL buf is an empty buffer (cap 0). */
static inline void kargs_init(kargs_builder *b, void *buf, size_t cap)
{
    b->buf = (unsigned char *)buf;
    b->cap = buf ? cap : 0;
    b->len = 0;
    b->count = 0;
}

/* Bytes written so far. */
static inline size_t kargs_len(const kargs_builder *b) { return b->len; }

/* Records written so far; also the index the next record gets. */
static inline size_t kargs_count(const kargs_builder *b) { return b->count; }

/* The argv's bytes: the start of the caller's buffer. */
static inline const unsigned char *kargs_bytes(const kargs_builder *b) { return b->buf; }

/* The finished argv's length in bytes, to pass as args_len with kargs_bytes() as args_ptr.
 * The builder stays usable (pushing more extends the same argv). */
static inline size_t kargs_finish(const kargs_builder *b) { return b->len; }

/* float and double must be IEEE-754 binary32 and binary64 (all targets clang and gcc support
 * for wasm32 and the usual hosts). A negative array size stops compilation otherwise. */
typedef char kargs_check_float_is_32_bits[sizeof(float) == 4 ? 1 : -1];
typedef char kargs_check_double_is_64_bits[sizeof(double) == 8 ? 1 : -1];

/* The bits of a float, unchanged (no conversion: any NaN payload is kept). */
static inline uint32_t kargs_f32_to_bits(float v)
{
    uint32_t bits;
#if defined(__GNUC__) || defined(__clang__)
    __builtin_memcpy(&bits, &v, sizeof bits);
#else
    /* Copying an object's representation through unsigned char is defined in C and C++. */
    const unsigned char *src = (const unsigned char *)&v;
    unsigned char *dst = (unsigned char *)&bits;
    size_t i;
    for (i = 0; i < sizeof bits; i++) dst[i] = src[i];
#endif
    return bits;
}

/* The bits of a double, unchanged. */
static inline uint64_t kargs_f64_to_bits(double v)
{
    uint64_t bits;
#if defined(__GNUC__) || defined(__clang__)
    __builtin_memcpy(&bits, &v, sizeof bits);
#else
    const unsigned char *src = (const unsigned char *)&v;
    unsigned char *dst = (unsigned char *)&bits;
    size_t i;
    for (i = 0; i < sizeof bits; i++) dst[i] = src[i];
#endif
    return bits;
}

/* The float whose bits these are. */
static inline float kargs_f32_from_bits(uint32_t bits)
{
    float v;
#if defined(__GNUC__) || defined(__clang__)
    __builtin_memcpy(&v, &bits, sizeof v);
#else
    const unsigned char *src = (const unsigned char *)&bits;
    unsigned char *dst = (unsigned char *)&v;
    size_t i;
    for (i = 0; i < sizeof v; i++) dst[i] = src[i];
#endif
    return v;
}

/* The double whose bits these are. */
static inline double kargs_f64_from_bits(uint64_t bits)
{
    double v;
#if defined(__GNUC__) || defined(__clang__)
    __builtin_memcpy(&v, &bits, sizeof v);
#else
    const unsigned char *src = (const unsigned char *)&bits;
    unsigned char *dst = (unsigned char *)&v;
    size_t i;
    for (i = 0; i < sizeof v; i++) dst[i] = src[i];
#endif
    return v;
}

/* Appends one record: `tag`, then the low `value_bytes` (4 or 8) bytes of `value`,
 * little-endian. Checks in ArgvBuilder's order; writes nothing unless every check passes. */
static inline kargs_status kargs_impl_record(kargs_builder *b, unsigned tag, uint64_t value,
                                             size_t value_bytes)
{
    size_t end, i;
    unsigned char *dst;
    if (b->count >= KARGS_MAX_KERNEL_ARGS) return KARGS_TOO_MANY_ARGS;
    /* b->len <= 4096 and value_bytes <= 8: no overflow. */
    end = b->len + 1 + value_bytes;
    if (end > KARGS_MAX_KERNEL_ARGS_BYTES) return KARGS_TOO_MANY_BYTES;
    if (end > b->cap) return KARGS_BUFFER_TOO_SMALL;
    dst = b->buf + b->len;
    dst[0] = (unsigned char)tag;
    for (i = 0; i < value_bytes; i++) dst[1 + i] = (unsigned char)(value >> (8 * i));
    b->len = end;
    b->count += 1;
    return KARGS_OK;
}

/* Appends an i32 (tag 0x01). */
static inline kargs_status kargs_push_i32(kargs_builder *b, int32_t v)
{
    /* int32_t -> uint32_t is defined (modulo 2^32): the two's-complement bits. */
    return kargs_impl_record(b, KARGS_TAG_I32, (uint32_t)v, 4);
}

/* Appends an i64 (tag 0x02). */
static inline kargs_status kargs_push_i64(kargs_builder *b, int64_t v)
{
    return kargs_impl_record(b, KARGS_TAG_I64, (uint64_t)v, 8);
}

/* Appends an f32 given as raw bits (tag 0x03; any NaN payload is kept). */
static inline kargs_status kargs_push_f32_bits(kargs_builder *b, uint32_t bits)
{
    return kargs_impl_record(b, KARGS_TAG_F32, bits, 4);
}

/* Appends an f32 (tag 0x03): its bits, unchanged. */
static inline kargs_status kargs_push_f32(kargs_builder *b, float v)
{
    return kargs_push_f32_bits(b, kargs_f32_to_bits(v));
}

/* Appends an f64 given as raw bits (tag 0x04; any NaN payload is kept). */
static inline kargs_status kargs_push_f64_bits(kargs_builder *b, uint64_t bits)
{
    return kargs_impl_record(b, KARGS_TAG_F64, bits, 8);
}

/* Appends an f64 (tag 0x04): its bits, unchanged. */
static inline kargs_status kargs_push_f64(kargs_builder *b, double v)
{
    return kargs_push_f64_bits(b, kargs_f64_to_bits(v));
}

/* Appends a u32 (tag 0x05). */
static inline kargs_status kargs_push_u32(kargs_builder *b, uint32_t v)
{
    return kargs_impl_record(b, KARGS_TAG_U32, v, 4);
}

/* Appends a u64 (tag 0x06). */
static inline kargs_status kargs_push_u64(kargs_builder *b, uint64_t v)
{
    return kargs_impl_record(b, KARGS_TAG_U64, v, 8);
}

/* Appends a pointer window (tag 0x07): `len` bytes at `guest_offset` in the guest's linear
 * memory. The host checks the window against the memory when it parses the argv. */
static inline kargs_status kargs_push_ptr(kargs_builder *b, uint32_t guest_offset, uint32_t len)
{
    return kargs_impl_record(b, KARGS_TAG_PTR, (uint64_t)guest_offset | ((uint64_t)len << 32), 8);
}

/* Appends a pointer window covering the `len` bytes at `p`, for guest code: on wasm32 a
 * pointer's address is its offset in linear memory (NULL is offset 0). Refused with
 * KARGS_ADDRESS_OUT_OF_RANGE where the address or `len` does not fit in 32 bits (only
 * possible off wasm32), before any other check, as ArgvBuilder::slice does. */
static inline kargs_status kargs_push_window(kargs_builder *b, const void *p, size_t len)
{
    uintptr_t addr = (uintptr_t)p;
    if (addr > (uintptr_t)UINT32_MAX || len > (size_t)UINT32_MAX) return KARGS_ADDRESS_OUT_OF_RANGE;
    return kargs_push_ptr(b, (uint32_t)addr, (uint32_t)len);
}

/* Appends a window over `n` elements of `elem_size` bytes at `p` (an array and its element
 * count: kargs_push_window_n(&argv, a, n, sizeof a[0])). A byte length past 32 bits is
 * KARGS_ADDRESS_OUT_OF_RANGE, found without overflowing. */
static inline kargs_status kargs_push_window_n(kargs_builder *b, const void *p, size_t n,
                                               size_t elem_size)
{
    if (elem_size != 0 && n > (size_t)UINT32_MAX / elem_size) return KARGS_ADDRESS_OUT_OF_RANGE;
    return kargs_push_window(b, p, n * elem_size);
}

/* ---- The import (wasm32 guests only) -------------------------------------------------- */

#if defined(__wasm32__)
/* Launches kernel `kernel_id` over a grid of grid_x * grid_y * grid_z blocks of
 * block_x * block_y * block_z threads, with `shared_mem` bytes of dynamic shared memory and
 * the argv at args_ptr/args_len in this guest's linear memory. Returns 0 or a negative
 * KARGS_ABI_* code. The same signature as the Rust guest's import
 * (std-adapter/guest/src/lib.rs): (i64, i32 x 9) -> i32. */
__attribute__((import_module("wasi:cuda/host@0.2.0"), import_name("wasi_cuda_launch")))
int32_t wasi_cuda_launch(int64_t kernel_id, int32_t grid_x, int32_t grid_y, int32_t grid_z,
                         int32_t block_x, int32_t block_y, int32_t block_z, int32_t shared_mem,
                         int32_t args_ptr, int32_t args_len);

/* wasi_cuda_launch with the builder's argv as args_ptr/args_len. */
static inline int32_t kargs_launch(int64_t kernel_id, int32_t grid_x, int32_t grid_y,
                                   int32_t grid_z, int32_t block_x, int32_t block_y,
                                   int32_t block_z, int32_t shared_mem, const kargs_builder *b)
{
    return wasi_cuda_launch(kernel_id, grid_x, grid_y, grid_z, block_x, block_y, block_z,
                            shared_mem, (int32_t)(uintptr_t)b->buf, (int32_t)b->len);
}
#endif /* __wasm32__ */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KARGS_GUEST_H */
