//! `libkargs_emulated_cuda_13_2.so`: the emulated CUDA 13.2 driver, loaded with `dlopen` in
//! place of `libcuda.so.1`. It reports version 13020 and exports `cuFuncGetParamCount` (CUDA
//! 13.2) beside `cuFuncGetParamInfo`, so the launcher takes the parameter count from the driver
//! instead of probing; otherwise it is `libkargs_emulated_cuda.so` (the `kargs_emu_*` control
//! API included), with its own state.

#![deny(missing_docs)]

kernel_args_cuda_emulator::export_driver_api!(cuda_13_2);
