// A module that includes the C++ standard headers nvcc ships (libcu++'s cuda/std) and uses
// them the way library code does.

#include <cuda/std/cstdint>
#include <cuda/std/limits>
#include <cuda/std/utility>
#include <cuda/std/tuple>

extern "C" __global__ void clamp_to_int16(const int32_t* in, int16_t* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int32_t lo = cuda::std::numeric_limits<int16_t>::min();
        int32_t hi = cuda::std::numeric_limits<int16_t>::max();
        int32_t v = in[i];
        out[i] = static_cast<int16_t>(v < lo ? lo : (v > hi ? hi : v));
    }
}

extern "C" __global__ void minmax_pairs(const float* in, float* out, int pairs) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < pairs) {
        cuda::std::pair<float, float> p(in[2 * i], in[2 * i + 1]);
        if (p.first > p.second) cuda::std::swap(p.first, p.second);
        auto t = cuda::std::make_tuple(p.first, p.second);
        out[2 * i] = cuda::std::get<0>(t);
        out[2 * i + 1] = cuda::std::get<1>(t);
    }
}
