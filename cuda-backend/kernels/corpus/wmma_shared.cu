// Tensor cores through shared memory, as tiled tensor-core kernels are written: tiles of A and
// B staged in __shared__ arrays and wmma::load_matrix_sync from there (compute_70 and up).

#include <mma.h>
#include <cuda_fp16.h>

using namespace nvcuda;

// One warp per block computes the 16x16 tile (blockIdx.y, blockIdx.x) of C = A B, A m x k and
// B k x n row-major, k a multiple of 16, walking k through two shared tiles.
extern "C" __global__ void wmma_gemm_shared(const half* a, const half* b, float* c, int n, int k) {
    __shared__ __align__(32) half sa[16 * 16];
    __shared__ __align__(32) half sb[16 * 16];
    int tile_row = blockIdx.y * 16;
    int tile_col = blockIdx.x * 16;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int kk = 0; kk < k; kk += 16) {
        for (int i = threadIdx.x; i < 256; i += 32) {
            int r = i / 16;
            int col = i % 16;
            sa[i] = a[(tile_row + r) * k + kk + col];
            sb[i] = b[(kk + r) * n + tile_col + col];
        }
        __syncwarp();
        wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> fb;
        wmma::load_matrix_sync(fa, sa, 16);
        wmma::load_matrix_sync(fb, sb, 16);
        wmma::mma_sync(acc, fa, fb, acc);
        __syncwarp();
    }
    wmma::store_matrix_sync(c + tile_row * n + tile_col, acc, n, wmma::mem_row_major);
}

// One 16x16x16 product whose A and B fragments come from shared copies or straight from global
// memory, as the argument says: nvcc cannot tell which, so its loads are generic.
extern "C" __global__ void wmma_tile_either(const half* a, const half* b, float* c, int from_shared) {
    __shared__ __align__(32) half sa[256];
    __shared__ __align__(32) half sb[256];
    for (int i = threadIdx.x; i < 256; i += 32) {
        sa[i] = a[i];
        sb[i] = b[i];
    }
    __syncwarp();
    const half* pa = from_shared ? sa : a;
    const half* pb = from_shared ? sb : b;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    wmma::load_matrix_sync(fa, pa, 16);
    wmma::load_matrix_sync(fb, pb, 16);
    wmma::mma_sync(acc, fa, fb, acc);
    wmma::store_matrix_sync(c, acc, 16, wmma::mem_row_major);
}
