// Lookup tables in global memory that the kernels only read, as CUDA code declares them:
// `__device__ const` arrays with initializers (nvcc places them in .global).

__device__ const unsigned char nibble_bits[16] = {0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4};

__device__ const float window_weights[8] = {0.05f, 0.1f, 0.15f, 0.2f, 0.2f, 0.15f, 0.1f, 0.05f};

extern "C" __global__ void popcount_bytes(const unsigned char* in, unsigned char* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned char b = in[i];
        out[i] = nibble_bits[b & 15] + nibble_bits[b >> 4];
    }
}

extern "C" __global__ void weighted_window(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i + 8 <= n) {
        float acc = 0.0f;
        for (int k = 0; k < 8; ++k) acc += window_weights[k] * in[i + k];
        out[i] = acc;
    }
}
