// Data-dependent indices: gathers, scatters, sparse matrices and embedding lookups.

extern "C" __global__ void gather(const float* src, const int* idx, float* dst, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[idx[i]];
}

extern "C" __global__ void scatter_add(const float* src, const int* idx, float* dst, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&dst[idx[i]], src[i]);
}

extern "C" __global__ void spmv_csr(int rows, const int* row_ptr, const int* cols, const float* vals,
                                    const float* x, float* y) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows) {
        float sum = 0.0f;
        for (int j = row_ptr[row]; j < row_ptr[row + 1]; ++j) sum += vals[j] * x[cols[j]];
        y[row] = sum;
    }
}

// An encoder as in GPT training code: token and position embeddings summed.
extern "C" __global__ void embedding_forward(float* out, const int* tokens, const float* wte,
                                             const float* wpe, int BT, int T, int C) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < BT * C) {
        int bt = idx / C;
        int c = idx % C;
        int t = bt % T;
        int token = tokens[bt];
        out[idx] = wte[token * C + c] + wpe[t * C + c];
    }
}

extern "C" __global__ void bincount(const int* values, int* counts, int n, int bins) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int v = values[i];
        if (v >= 0 && v < bins) atomicAdd(&counts[v], 1);
    }
}
