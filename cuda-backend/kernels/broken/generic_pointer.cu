// Broken on purpose (the fence's tests): a pointer read from memory (a table of pointers the
// guest wrote) and stored through; nvcc emits a generic store.
extern "C" __global__ void generic_pointer(float* const* table, float value) {
    float* p = table[threadIdx.x];
    *p = value;
}
