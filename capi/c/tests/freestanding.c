/*
 * Every function of include/kargs_guest.h, in one freestanding translation unit:
 * scripts/c-guest-check.sh compiles it with -ffreestanding -fno-builtin (gcc and clang, -O0
 * and -O2, C99 and C++17) and fails if the object references any symbol (memcpy, memset, a
 * libc function, a compiler runtime helper): the header needs nothing but the compiler.
 */
#include "kargs_guest.h"

#ifdef __cplusplus
extern "C" {
#endif
int kargs_use_every_function(unsigned char *buf, size_t cap, int code);
#ifdef __cplusplus
}
#endif

int kargs_use_every_function(unsigned char *buf, size_t cap, int code)
{
    kargs_builder b;
    int refused;
    kargs_init(&b, buf, cap);
    refused = kargs_push_i32(&b, -1) || kargs_push_i64(&b, -1) || kargs_push_f32(&b, 1.5f) ||
              kargs_push_f32_bits(&b, 0x7fc0deadu) || kargs_push_f64(&b, -2.5) ||
              kargs_push_f64_bits(&b, UINT64_C(0x7ff8000000000001)) || kargs_push_u32(&b, 1u) ||
              kargs_push_u64(&b, UINT64_MAX) || kargs_push_ptr(&b, 64u, 128u) ||
              kargs_push_window(&b, buf, cap) || kargs_push_window_n(&b, buf, cap, 4);
    return refused + (int)kargs_finish(&b) + (int)kargs_len(&b) + (int)kargs_count(&b) +
           (kargs_bytes(&b) == buf) + (int)kargs_f32_from_bits(kargs_f32_to_bits(1.0f)) +
           (int)kargs_f64_from_bits(kargs_f64_to_bits(1.0)) + kargs_error_name(code)[0] +
           kargs_status_name(code)[0];
}
