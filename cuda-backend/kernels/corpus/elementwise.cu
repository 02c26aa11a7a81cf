// Element-wise kernels written the way CUDA users write them: signed `int` indices computed
// from blockIdx/blockDim/threadIdx, grid-stride loops, 128-bit vector loads and stores.

extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}

extern "C" __global__ void saxpy_grid_stride(int n, float alpha, const float* x, float* y) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        y[i] = alpha * x[i] + y[i];
    }
}

extern "C" __global__ void scale_float4(const float4* in, float4* out, float s, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 v = in[i];
        v.x *= s;
        v.y *= s;
        v.z *= s;
        v.w *= s;
        out[i] = v;
    }
}

extern "C" __global__ void relu_inplace(float* x, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        x[i] = x[i] > 0.0f ? x[i] : 0.0f;
    }
}

extern "C" __global__ void fill_u8(unsigned char* p, unsigned char value, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        p[i] = value;
    }
}

// A 2D grid over a row-major matrix with a pitch in elements.
extern "C" __global__ void add_bias_2d(float* m, const float* bias, int rows, int cols, int pitch) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < rows && col < cols) {
        m[row * pitch + col] += bias[col];
    }
}

// A C++ template, instantiated twice: mangled entry names.
template <typename T>
__global__ void axpby(const T* x, T* y, T a, T b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + b * y[i];
    }
}
template __global__ void axpby<float>(const float*, float*, float, float, int);
template __global__ void axpby<double>(const double*, double*, double, double, int);
