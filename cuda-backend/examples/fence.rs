//! Prints a PTX module with its fence (`kernel_args_cuda::fence`), or why it cannot have one:
//! `cargo run -p kernel-args-cuda --example fence -- kernels/vector_add.ptx` fences every access
//! (`fence_ptx`); with an entry and its declaration,
//! `... -- kernels/vector_add.ptx vector_add "vector_add(a: &[f32; n], b: &[f32; n], out: &mut [f32; n], n: u32)"`,
//! it fences as `KernelRegistry::register` does (`fence_declared_ptx`: the entry's accesses proven
//! inside their windows are left as they are) and says on stderr how many were proven.

use std::process::ExitCode;

use kernel_args::Declaration;
use kernel_args_cuda::fence::{fence_declared_ptx, fence_ptx};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (path, declared) = match args.as_slice() {
        [path] => (path, None),
        [path, entry, declaration] => match Declaration::parse(declaration) {
            Ok(declaration) => (path, Some((entry, declaration))),
            Err(e) => {
                eprintln!("the declaration does not parse: {e}");
                return ExitCode::from(2);
            }
        },
        _ => {
            eprintln!("usage: fence FILE.ptx [ENTRY DECLARATION]");
            return ExitCode::from(2);
        }
    };
    let ptx = match std::fs::read_to_string(path) {
        Ok(ptx) => ptx,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::from(2);
        }
    };
    let fenced = match &declared {
        None => fence_ptx(&ptx),
        Some((entry, declaration)) => fence_declared_ptx(&ptx, entry, declaration),
    };
    match fenced {
        Ok(fenced) => {
            print!("{}", fenced.ptx());
            if declared.is_some() {
                eprintln!("{path}: {} accesses proven, {} fenced", fenced.proven(), fenced.accesses());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{path}: {e}");
            ExitCode::from(1)
        }
    }
}
