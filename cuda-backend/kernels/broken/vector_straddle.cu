// Broken on purpose (the fence's tests): a 16-byte vector store at an index the kernel never
// bounds; at the last slot of a buffer that ends mid-vector it straddles the end.
extern "C" __global__ void vector_straddle(float4* out, int index) {
    out[index + threadIdx.x] = make_float4(1.0f, 2.0f, 3.0f, 4.0f);
}
