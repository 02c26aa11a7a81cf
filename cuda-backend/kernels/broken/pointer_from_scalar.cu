// Broken on purpose (the fence's tests): an address taken as a number and written through, as a
// kernel that trusts a value it was given would; nvcc cannot know its space, so the store is a
// generic one.
extern "C" __global__ void pointer_from_scalar(unsigned long long address, float value) {
    *reinterpret_cast<float*>(address + 4ull * threadIdx.x) = value;
}
