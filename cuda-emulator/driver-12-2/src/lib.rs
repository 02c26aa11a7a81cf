//! `libkargs_emulated_cuda_12_2.so`: the emulated CUDA 12.2 driver, loaded with `dlopen` in
//! place of `libcuda.so.1`. It reports version 12020 and, like a driver older than 12.4, has
//! no `cuFuncGetParamInfo` and no `cuFuncGetParamCount`; otherwise it is
//! `libkargs_emulated_cuda.so` (the `kargs_emu_*` control API included), with its own state.

#![deny(missing_docs)]

kernel_args_cuda_emulator::export_driver_api!(cuda_12_2);
