/*
 * The C vector_add guest: the Rust demo guest (std-adapter/guest/src/lib.rs) in C, on
 * include/kargs_guest.h. A freestanding wasm32 module with the same exports, the same
 * behaviour and the same guest codes, so that the host's end-to-end expectations
 * (std-adapter/tests/guest_e2e.rs) hold for it unchanged: that test runs them for this guest
 * too, on the wasmtime host and on the wasmi host, when KARGS_C_GUEST_WASM names the built
 * module (scripts/c-guest-check.sh builds this and runs it).
 *
 *   clang --target=wasm32-unknown-unknown -nostdlib -ffreestanding -O2 -Iinclude \
 *         -Wl,--no-entry -o vector_add.wasm capi/c/examples/vector_add.c
 *
 * It keeps three f32 buffers (a, b, out) of CAPACITY elements in its linear memory and
 * launches
 *
 *   vector_add(const float *a, const float *b, float *out, unsigned n)   // out[i] = a[i] + b[i]
 *
 * with four records: three pointer windows of 4 * n bytes and the u32 element count. The
 * send_* exports make deliberately bad calls, so the host's answers can be tested against a
 * real C module.
 *
 * Return values: 0 or a negative wasi-cuda ABI code from the host, or one of this guest's
 * codes (ERR_BAD_COUNT, ERR_ENCODE), which lie below the ABI's range.
 */
#include "kargs_guest.h"

#if !defined(__wasm32__)
#error "the C vector_add guest is built for wasm32 (scripts/c-guest-check.sh does this)"
#endif

/* Bit-exact float results: no contraction of a * b + c into a fused multiply-add. */
#pragma STDC FP_CONTRACT OFF

#define EXPORT(name) __attribute__((export_name(#name)))

/* Elements in each of a, b and out. */
#define CAPACITY 4096
/* The kernel id the guest launches vector_add with. */
#define VECTOR_ADD_KERNEL_ID 1
/* Threads per block of the vector_add launch. */
#define THREADS_PER_BLOCK 256
/* Guest code: the element count is negative or larger than CAPACITY. */
#define ERR_BAD_COUNT (-100)
/* Guest code: the argv could not be encoded (cannot happen for the sizes used here). */
#define ERR_ENCODE (-101)
/* Written into out before each launch, so an element no kernel wrote is visible (a NaN). */
#define OUT_SENTINEL 0x7fc0deadu

/* The buffers hold f32 bits: the kernel sees floats, the guest compares bits. */
static uint32_t A[CAPACITY];
static uint32_t B[CAPACITY];
static uint32_t OUT[CAPACITY];

/* A copy of the last argv sent, for the host's tests to compare with what it recorded. */
static unsigned char LAST_ARGV[KARGS_MAX_KERNEL_ARGS_BYTES];
static uint32_t LAST_ARGV_LEN;

/* Grid, block and shared memory of a launch. */
typedef struct shape {
    int32_t grid_x, block_x, shared_mem;
} shape;

/* One block of THREADS_PER_BLOCK threads per 256 elements (at least one block). */
static shape vector_add_shape(uint32_t n)
{
    shape s;
    uint32_t blocks = (n + THREADS_PER_BLOCK - 1) / THREADS_PER_BLOCK;
    s.grid_x = blocks ? (int32_t)blocks : 1;
    s.block_x = THREADS_PER_BLOCK;
    s.shared_mem = 0;
    return s;
}

/* The guest's linear-memory offset of p (on wasm32 an address is that offset). */
static int32_t offset_of(const void *p)
{
    return (int32_t)(uintptr_t)p;
}

/* The linear memory's size in bytes (wrapping to 0 at 4 GiB, like the Rust guest). */
static uint32_t memory_bytes(void)
{
    return (uint32_t)__builtin_wasm_memory_size(0) * 65536u;
}

EXPORT(launch_raw)
int32_t launch_raw(int64_t kernel_id, int32_t grid_x, int32_t grid_y, int32_t grid_z,
                   int32_t block_x, int32_t block_y, int32_t block_z, int32_t shared_mem,
                   int32_t args_ptr, int32_t args_len)
{
    return wasi_cuda_launch(kernel_id, grid_x, grid_y, grid_z, block_x, block_y, block_z,
                            shared_mem, args_ptr, args_len);
}

/* Sends the argv at `argv` (len bytes) from where it lies in linear memory, keeping a copy in
 * LAST_ARGV. */
static int32_t launch(shape s, const unsigned char *argv, uint32_t len)
{
    uint32_t i, kept = len < sizeof LAST_ARGV ? len : (uint32_t)sizeof LAST_ARGV;
    for (i = 0; i < kept; i++) LAST_ARGV[i] = argv[i];
    LAST_ARGV_LEN = kept;
    return launch_raw(VECTOR_ADD_KERNEL_ID, s.grid_x, 1, 1, s.block_x, 1, 1, s.shared_mem,
                      offset_of(argv), (int32_t)len);
}

/* n as an element count, if 0 <= n <= CAPACITY; -1 otherwise. */
static int32_t count(int32_t n)
{
    return n >= 0 && n <= CAPACITY ? n : -1;
}

/* a[i] = i, b[i] = 2i + 1, out[i] = sentinel for i < n. */
static void fill(uint32_t n)
{
    uint32_t i;
    for (i = 0; i < n; i++) {
        float x = (float)i;
        A[i] = kargs_f32_to_bits(x);
        B[i] = kargs_f32_to_bits(2.0f * x + 1.0f);
        OUT[i] = OUT_SENTINEL;
    }
}

/* The vector_add argv for the first n elements: a, b, out, n. */
static kargs_status vector_add_argv(kargs_builder *argv, uint32_t n)
{
    kargs_status st;
    if ((st = kargs_push_window_n(argv, A, n, sizeof A[0])) ||
        (st = kargs_push_window_n(argv, B, n, sizeof B[0])) ||
        (st = kargs_push_window_n(argv, OUT, n, sizeof OUT[0])))
        return st;
    return kargs_push_u32(argv, n);
}

/* Fills a and b for n elements, builds the vector_add argv and launches it. */
EXPORT(run_vector_add)
int32_t run_vector_add(int32_t n)
{
    unsigned char buf[64];
    kargs_builder argv;
    if (count(n) < 0) return ERR_BAD_COUNT;
    fill((uint32_t)n);
    kargs_init(&argv, buf, sizeof buf);
    if (vector_add_argv(&argv, (uint32_t)n)) return ERR_ENCODE;
    return launch(vector_add_shape((uint32_t)n), buf, (uint32_t)kargs_finish(&argv));
}

/* The index of the first out[i] (i < n) that is not bit for bit a[i] + b[i], or -1 when all
 * are (so -1 after a real launch means the kernel ran correctly). */
EXPORT(first_mismatch)
int32_t first_mismatch(int32_t n)
{
    int32_t i;
    if (count(n) < 0) return ERR_BAD_COUNT;
    for (i = 0; i < n; i++) {
        float want = kargs_f32_from_bits(A[i]) + kargs_f32_from_bits(B[i]);
        if (OUT[i] != kargs_f32_to_bits(want)) return i;
    }
    return -1;
}

/* out[i], or NaN when i is out of range. */
EXPORT(out_at)
float out_at(int32_t i)
{
    return count(i) >= 0 && i < CAPACITY ? kargs_f32_from_bits(OUT[i]) : __builtin_nanf("");
}

EXPORT(a_ptr) int32_t a_ptr(void) { return offset_of(A); }
EXPORT(b_ptr) int32_t b_ptr(void) { return offset_of(B); }
EXPORT(out_ptr) int32_t out_ptr(void) { return offset_of(OUT); }
EXPORT(capacity) int32_t capacity(void) { return CAPACITY; }
EXPORT(last_argv_ptr) int32_t last_argv_ptr(void) { return offset_of(LAST_ARGV); }
EXPORT(last_argv_len) int32_t last_argv_len(void) { return (int32_t)LAST_ARGV_LEN; }

/* vector_add over 16 elements whose out window starts at the end of linear memory: the host
 * must answer InvalidPointer (-2). */
EXPORT(send_ptr_past_memory)
int32_t send_ptr_past_memory(void)
{
    const uint32_t n = 16;
    unsigned char buf[64];
    kargs_builder argv;
    fill(n);
    kargs_init(&argv, buf, sizeof buf);
    if (kargs_push_window_n(&argv, A, n, sizeof A[0]) ||
        kargs_push_window_n(&argv, B, n, sizeof B[0]) ||
        kargs_push_ptr(&argv, memory_bytes(), 4 * n) ||
        kargs_push_u32(&argv, n))
        return ERR_ENCODE;
    return launch(vector_add_shape(n), buf, (uint32_t)kargs_finish(&argv));
}

/* The vector_add argv followed by a record with the unknown tag 0xff: the host must answer
 * InvalidArgs (-9). */
EXPORT(send_unknown_tag)
int32_t send_unknown_tag(void)
{
    const uint32_t n = 16;
    unsigned char buf[64];
    kargs_builder argv;
    uint32_t len;
    fill(n);
    kargs_init(&argv, buf, sizeof buf);
    if (vector_add_argv(&argv, n)) return ERR_ENCODE;
    len = (uint32_t)kargs_finish(&argv);
    buf[len] = 0xff; /* the encoder cannot write a bad tag: by hand */
    buf[len + 1] = buf[len + 2] = buf[len + 3] = buf[len + 4] = 0;
    return launch(vector_add_shape(n), buf, len + 5);
}

/* 129 u32 records, one more than the ABI allows (the encoder refuses the 129th, so it is
 * written by hand): the host must answer KernelArgsUnsupported (-10). */
EXPORT(send_too_many_args)
int32_t send_too_many_args(void)
{
    unsigned char buf[(KARGS_MAX_KERNEL_ARGS + 1) * KARGS_WIRE_SIZE_32];
    kargs_builder argv;
    uint32_t i, len;
    kargs_init(&argv, buf, sizeof buf);
    for (i = 0; i < KARGS_MAX_KERNEL_ARGS; i++)
        if (kargs_push_u32(&argv, i)) return ERR_ENCODE;
    if (kargs_push_u32(&argv, KARGS_MAX_KERNEL_ARGS) != KARGS_TOO_MANY_ARGS) return ERR_ENCODE;
    len = (uint32_t)kargs_finish(&argv);
    buf[len] = KARGS_TAG_U32;
    buf[len + 1] = KARGS_MAX_KERNEL_ARGS;
    buf[len + 2] = buf[len + 3] = buf[len + 4] = 0;
    return launch(vector_add_shape(1), buf, len + KARGS_WIRE_SIZE_32);
}

/* An argument region that starts 8 bytes before the end of linear memory and is 32 bytes
 * long: the host must answer InvalidPointer (-2) without reading it. */
EXPORT(send_args_region_past_memory)
int32_t send_args_region_past_memory(void)
{
    shape s = vector_add_shape(16);
    int32_t args_ptr = (int32_t)(memory_bytes() - 8u);
    return launch_raw(VECTOR_ADD_KERNEL_ID, s.grid_x, 1, 1, s.block_x, 1, 1, 0, args_ptr, 32);
}

/* A valid vector_add argv with a block of 2048 threads: the host must answer
 * InvalidDimensions (-8). */
EXPORT(send_bad_dimensions)
int32_t send_bad_dimensions(void)
{
    const uint32_t n = 16;
    unsigned char buf[64];
    kargs_builder argv;
    shape s;
    fill(n);
    kargs_init(&argv, buf, sizeof buf);
    if (vector_add_argv(&argv, n)) return ERR_ENCODE;
    s = vector_add_shape(n);
    s.block_x = 2048;
    return launch(s, buf, (uint32_t)kargs_finish(&argv));
}
