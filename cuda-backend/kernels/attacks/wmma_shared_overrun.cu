// The fence's tests: a tensor-core fragment loaded from a shared tile at an element offset the
// caller gives, as tiled kernels index their tiles (a whole 16x16 fragment from one address).
// With an offset past the tile it reaches past the block's shared memory; the fence keeps it in
// the shared window.
#include <mma.h>
using namespace nvcuda;

extern "C" __global__ void wmma_shared_overrun(const half* a, float* out, int skew) {
    __shared__ __align__(32) half tile[256];
    for (int i = threadIdx.x; i < 256; i += 32) {
        tile[i] = a[i];
    }
    __syncwarp();
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    wmma::load_matrix_sync(fa, tile + skew, 16);
    wmma::load_matrix_sync(fb, tile, 16);
    wmma::mma_sync(acc, fa, fb, acc);
    wmma::store_matrix_sync(out, acc, 16, wmma::mem_row_major);
}
