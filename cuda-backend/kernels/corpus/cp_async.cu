// Asynchronous copies (cp.async, compute_80 and up): a block stages its slice in shared
// memory, then writes it out reversed.

#include <cuda_pipeline.h>

extern "C" __global__ void async_reverse(const int4* in, int4* out, int n) {
    __shared__ int4 stage[128];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) __pipeline_memcpy_async(&stage[threadIdx.x], &in[i], sizeof(int4));
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncthreads();
    int j = blockIdx.x * blockDim.x + (blockDim.x - 1 - threadIdx.x);
    if (j < n) out[j] = stage[threadIdx.x];
}
