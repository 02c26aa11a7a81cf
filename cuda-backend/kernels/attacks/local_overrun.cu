// An attack on the sandbox (the fence's tests): an index into a thread's own array that the
// guest chooses, which nvcc puts in local memory. Unfenced, an index past the array reaches
// past the thread's local memory (an illegal address on a GPU); fenced, it stays inside it.
extern "C" __global__ void local_overrun(unsigned* out, unsigned n) {
    volatile unsigned scratch[8];
    for (unsigned i = 0; i < 8; i++) {
        scratch[i] = i;
    }
    scratch[n] = n;
    out[threadIdx.x] = scratch[threadIdx.x % 8];
}
