//! The bundled PTX kernels (`cuda-backend/kernels/`, made by nvcc from the `.cu` sources
//! beside them), for hosts and tools that launch the demo guest's kernel.
//!
//! ```
//! use kernel_args_cuda::{KernelRegistry, Sandbox, kernels};
//!
//! let mut registry = KernelRegistry::new();
//! registry.register(1, kernels::VECTOR_ADD_PTX, kernels::VECTOR_ADD_ENTRY, Sandbox::fenced(kernels::VECTOR_ADD_DECLARATION)?)?;
//! assert_eq!(registry.get(1).unwrap().signature().unwrap().param_sizes(), [8, 8, 8, 4]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

/// `vector_add(const float *a, const float *b, float *out, unsigned n)`: `out[i] = a[i] + b[i]`
/// for `i < n`, one thread per element (the wasm demo guest's kernel).
pub const VECTOR_ADD_PTX: &str = include_str!("../kernels/vector_add.ptx");

/// The entry name of the `extern "C"` vector_add in [`VECTOR_ADD_PTX`].
pub const VECTOR_ADD_ENTRY: &str = "vector_add";

/// What vector_add does with its parameters (`docs/declarations.md`): reads `n` floats of `a`
/// and `b`, writes `n` of `out`.
pub const VECTOR_ADD_DECLARATION: &str = "vector_add(a: &[f32; n], b: &[f32; n], out: &mut [f32; n], n: u32)";
