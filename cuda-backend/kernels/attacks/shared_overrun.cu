// An attack on the sandbox (the fence's tests): a shared-memory index the guest chooses. On a
// GPU, unfenced, an index past the tile is an illegal address: a sticky error that loses every
// tenant's context. Fenced, the store lands inside the block's shared window and the flag is set.
extern "C" __global__ void shared_overrun(unsigned* out, unsigned n) {
    __shared__ unsigned tile[16];
    tile[threadIdx.x % 16] = threadIdx.x;
    __syncthreads();
    if (threadIdx.x == 0) {
        tile[n] = n;
    }
    __syncthreads();
    out[threadIdx.x] = tile[threadIdx.x % 16];
}
