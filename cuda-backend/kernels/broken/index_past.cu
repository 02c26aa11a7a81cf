// Broken on purpose (the fence's tests, cuda-emulator/tests/fence.rs): an off-by-one, `<=` for
// `<`, so thread n writes one element past `out`'s n.
extern "C" __global__ void index_past(const float* a, float* out, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) {
        out[i] = a[i < n ? i : 0] * 2.0f;
    }
}
