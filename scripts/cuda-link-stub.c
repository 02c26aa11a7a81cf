/*
 * The link stub for building kernel-args-cuda's `cuda` feature on a machine without CUDA.
 *
 * cust 0.3.2's build script (find_cuda_helper) panics unless CUDA_LIBRARY_PATH names a
 * directory with lib64/, and then links `-lcuda`, so the linker needs some libcuda.so to find.
 * kernel-args-cuda does not call the driver through the linker: it loads libcuda.so.1 with
 * dlopen when a launcher is made. So this stub deliberately defines no driver function at all:
 * if anything ever started calling the driver through the linker, the link would fail with an
 * undefined cu* symbol instead of silently producing a binary bound to a fake driver. And since
 * nothing refers to it, the linker (--as-needed) does not record it as a dependency.
 *
 * Built by scripts/cuda-link-stub.sh; never committed as a binary.
 */
int kernel_args_cuda_link_stub(void) { return 0; }
