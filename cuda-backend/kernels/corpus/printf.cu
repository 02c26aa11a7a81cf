// Device-side printf, as kernels are debugged: a float (promoted to double), ints, a long, a
// char and a string literal.

#include <cstdio>

extern "C" __global__ void report_first(const float* in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0 && n > 0) {
        printf("first element %f of %d\n", in[0], n);
        printf("%s: n=%u (%#x), %ld bytes, '%c', %.2e\n", "report_first", n, n, (long)n * (long)sizeof(float),
               'a' + n % 26, (double)in[n - 1]);
    }
}
