// The fence's tests: a tensor-core load from a kernel's pointer parameter, as nvcc writes it
// (a generic `wmma.load`, which reaches a whole 16x16 fragment from one address). The fence
// refuses it by name.
#include <mma.h>
using namespace nvcuda;

extern "C" __global__ void wmma_load(const half* a, const half* b, float* out) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(acc, fa, fb, acc);
    wmma::store_matrix_sync(out, acc, 16, wmma::mem_row_major);
}
