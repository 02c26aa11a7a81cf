//! `libkargs_emulated_cuda.so`: the emulated CUDA 12.9 driver, loaded with `dlopen` in place of
//! `libcuda.so.1`. It exports the driver entry points the launcher calls (`cuFuncGetParamInfo`
//! and `cuFuncGetParamCount` included), reports version 12090, and exports the `kargs_emu_*`
//! control API for tests. Everything is in `kernel-args-cuda-emulator`; its device is named
//! "kernel-args emulated CUDA device (CPU, not a GPU)".

#![deny(missing_docs)]

kernel_args_cuda_emulator::export_driver_api!(cuda_12_9);
