//! `libkargs_emulated_cuda.so`: the emulated CUDA 12.8 driver, the default, loaded with `dlopen`
//! in place of `libcuda.so.1`. Like the drivers GPU machines run (550 to 580), it exports
//! `cuFuncGetParamInfo` (CUDA 12.4) but not `cuFuncGetParamCount` (CUDA 13.2), and reports
//! version 12080; it exports the `kargs_emu_*` control API for tests. Everything is in
//! `kernel-args-cuda-emulator`; its device is named "kernel-args emulated CUDA device (CPU, not
//! a GPU)".

#![deny(missing_docs)]

kernel_args_cuda_emulator::export_driver_api!(cuda_12_8);
