//! Prints a PTX module with its fence (`kernel_args_cuda::fence`), checked, or why it cannot
//! have one: `cargo run -p kernel-args-cuda --example fence -- kernels/vector_add.ptx`; with
//! `--aligned` before the file, the fence's aligned form (`FencedModule::aligned_ptx`). On
//! stderr: how many address operands are clamped and how many are proven by their declarations.

use std::process::ExitCode;

use kernel_args_cuda::fence::fence_ptx;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (aligned, path) = match args.as_slice() {
        [flag, path] if flag == "--aligned" => (true, path),
        [path] => (false, path),
        _ => {
            eprintln!("usage: fence [--aligned] FILE.ptx");
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
    match fence_ptx(&ptx) {
        Ok(fenced) => {
            print!("{}", if aligned { fenced.aligned_ptx() } else { fenced.ptx() });
            eprintln!(
                "{path}: {} address operands clamped, {} proven by their declarations, {} backward \
                 branches counted against the budget, {} asserts made the fence's exit, {} calls \
                 inlined, {} read-only tables moved to constant memory, {} unnamed module-scope items \
                 dropped, {} bytes of module variables at the fence's start, at least {} bytes of dynamic shared \
                 memory for each launch, a fence of at least {} bytes",
                fenced.accesses(),
                fenced.by_declaration(),
                fenced.counted_branches(),
                fenced.asserts(),
                fenced.inlined(),
                fenced.tables(),
                fenced.dropped(),
                fenced.variables().len(),
                fenced.dynamic_shared_min(),
                fenced.fence_min_len()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{path}: {e}");
            ExitCode::from(1)
        }
    }
}
