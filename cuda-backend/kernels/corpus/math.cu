// The math library compiled without fast math: tanhf inline, sinf and powf with their slow
// paths (sinf's reduces large arguments with a table, __cudart_i2opi_f).

extern "C" __global__ void gelu_precise(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float x = in[i];
        out[i] = 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
    }
}

extern "C" __global__ void trig_pow(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = sinf(in[i]) + powf(fabsf(in[i]), 1.5f) + expf(-in[i]);
}
