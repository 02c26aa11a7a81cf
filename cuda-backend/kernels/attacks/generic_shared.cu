// An attack on the sandbox (the fence's tests): a generic pointer that is shared memory for odd
// threads and the guest's buffer for even ones, indexed by the guest. Unfenced, the odd threads'
// store past the tile is an illegal address on a GPU; fenced, the generic address is clamped
// into the shared window (odd threads) or the fence (even threads).
extern "C" __global__ void generic_shared(unsigned* out, unsigned n) {
    __shared__ unsigned tile[16];
    tile[threadIdx.x % 16] = 0;
    __syncthreads();
    unsigned* p = (threadIdx.x & 1) ? tile : out;
    p[n] = n;
    __syncthreads();
    out[threadIdx.x] = tile[threadIdx.x % 16];
}
