// A __device__ variable: module-scope global memory that every launch of the module shares.

__device__ unsigned long long launches_seen;

extern "C" __global__ void count_launch(unsigned long long* out) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        unsigned long long before = atomicAdd(&launches_seen, 1ull);
        *out = before;
    }
}
