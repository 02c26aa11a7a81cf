// Reductions: shared-memory trees, warp shuffles and votes, atomics.

extern "C" __global__ void block_reduce_sum(const float* in, float* partial, int n) {
    __shared__ float sdata[256];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x * 2 + threadIdx.x;
    float sum = 0.0f;
    if (i < n) sum += in[i];
    if (i + blockDim.x < n) sum += in[i + blockDim.x];
    sdata[tid] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) partial[blockIdx.x] = sdata[0];
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset /= 2) {
        v += __shfl_down_sync(0xffffffffu, v, offset);
    }
    return v;
}

extern "C" __global__ void warp_reduce_atomic(const float* in, float* total, int n) {
    float v = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        v += in[i];
    }
    v = warp_sum(v);
    if ((threadIdx.x & 31) == 0) atomicAdd(total, v);
}

extern "C" __global__ void count_positive_ballot(const float* in, unsigned* count, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    bool positive = i < n && in[i] > 0.0f;
    unsigned mask = __ballot_sync(0xffffffffu, positive);
    if ((threadIdx.x & 31) == 0) atomicAdd(count, __popc(mask));
}

extern "C" __global__ void any_nan(const float* in, int* flag, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    bool bad = i < n && in[i] != in[i];
    if (__any_sync(0xffffffffu, bad) && (threadIdx.x & 31) == 0) *flag = 1;
}

extern "C" __global__ void histogram_shared(const unsigned char* data, unsigned* bins, int n) {
    __shared__ unsigned local[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        atomicAdd(&local[data[i]], 1u);
    }
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x) atomicAdd(&bins[b], local[b]);
}

extern "C" __global__ void dot_product(const float* a, const float* b, float* result, int n) {
    __shared__ float warp_sums[32];
    float v = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        v += a[i] * b[i];
    }
    v = warp_sum(v);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (int)(blockDim.x >> 5) ? warp_sums[lane] : 0.0f;
        v = warp_sum(v);
        if (lane == 0) atomicAdd(result, v);
    }
}

extern "C" __global__ void max_int_atomic(const int* in, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicMax(out, in[i]);
}
