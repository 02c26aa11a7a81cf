// Broken on purpose (the fence's tests): counters indexed by the thread times a stride the
// kernel never bounds, so atomics land past the counters' end.
extern "C" __global__ void atomic_past_end(unsigned* counters, unsigned stride) {
    atomicAdd(counters + threadIdx.x * stride, 1u);
}
