//! Prints a PTX file as the front end reads it: `cargo run -p kernel-args-ptx --example reprint --
//! kernel.ptx`. The output is the canonical text a consumer that rewrote nothing would print;
//! an error names the line and column the front end stops at.

fn main() -> std::process::ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: reprint FILE.ptx");
        return std::process::ExitCode::from(2);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("reprint: {path}: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    match kernel_args_ptx::parse(&text) {
        Ok(module) => {
            print!("{module}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("reprint: {path}: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
