// Broken on purpose (the fence's tests): each thread writes the element before its own, so
// thread 0 writes out[-1].
extern "C" __global__ void negative_index(float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i - 1] = (float)i;
    }
}
