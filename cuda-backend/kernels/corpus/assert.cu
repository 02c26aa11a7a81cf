// Device-side assert, as CUDA code checks its invariants.

#include <cassert>

extern "C" __global__ void checked_copy(const int* in, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        assert(in[i] >= 0);
        out[i] = in[i];
    }
}
