// An attack on the sandbox (the fence's tests): `__trap()` on a value the guest chooses. On a GPU
// a trap is a sticky launch failure that loses every tenant's context; fenced, it sets the flag
// and the thread leaves.
extern "C" __global__ void trap_on(unsigned* out, unsigned n) {
    if (n > 63) {
        __trap();
    }
    out[threadIdx.x] = n;
}
