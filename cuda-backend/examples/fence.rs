//! Prints a PTX module with its fence (`kernel_args_cuda::fence`), or why it cannot have one:
//! `cargo run -p kernel-args-cuda --example fence -- kernels/vector_add.ptx`.

use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: fence FILE.ptx");
        return ExitCode::from(2);
    };
    let ptx = match std::fs::read_to_string(&path) {
        Ok(ptx) => ptx,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::from(2);
        }
    };
    match kernel_args_cuda::fence::fence_ptx(&ptx) {
        Ok(fenced) => {
            print!("{}", fenced.ptx());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{path}: {e}");
            ExitCode::from(1)
        }
    }
}
