// Tensor cores: one 16x16x16 tile per warp, loaded straight from the kernel's pointer
// parameters, as wmma::load_matrix_sync is used in tensor-core samples (compute_70 and up).

#include <mma.h>
#include <cuda_fp16.h>

using namespace nvcuda;

extern "C" __global__ void wmma_gemm_16(const half* a, const half* b, float* c, int tiles) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    if (warp >= tiles) return;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    wmma::load_matrix_sync(fa, a + warp * 256, 16);
    wmma::load_matrix_sync(fb, b + warp * 256, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(c + warp * 256, fc, 16, wmma::mem_row_major);
}
