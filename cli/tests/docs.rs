//! The `kargs` commands the READMEs show, run as written: every line of a `sh` block in
//! README.md and cli/README.md that runs `kargs` (or `cargo run -p kernel-args-cli -- ...`, which
//! runs the same binary) goes through `sh` with `kargs` as this build's binary, and must exit 0
//! and print something. A `demo` line runs only where this build has what it needs (the `demo`
//! feature; `--runtime wasmtime`: the `wasmtime` feature); `cargo install` lines are not run.

use std::path::Path;
use std::process::Command;

/// The lines of `sh` blocks in `markdown` that run kargs, with `cargo run -p kernel-args-cli --`
/// spelled `kargs`, and trailing `# comments` removed.
fn kargs_lines(markdown: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut in_sh = false;
    for line in markdown.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            in_sh = !in_sh && trimmed == "```sh";
            continue;
        }
        if !in_sh {
            continue;
        }
        let command = trimmed.replace("cargo run -p kernel-args-cli -- ", "kargs ");
        // A comment starts with ` #` outside quotes; the commands here quote no `#`.
        let command = command.split(" #").next().unwrap_or_default().trim().to_owned();
        if command.starts_with("kargs ") {
            lines.push(command);
        }
    }
    lines
}

fn runs_here(command: &str) -> bool {
    if command.starts_with("kargs demo") {
        return cfg!(feature = "demo") && (cfg!(feature = "wasmtime") || !command.contains("wasmtime"));
    }
    true
}

#[test]
fn the_readmes_kargs_commands_run_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut ran = 0;
    for file in ["README.md", "cli/README.md"] {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let lines = kargs_lines(&text);
        assert!(!lines.is_empty(), "{file} shows no kargs command");
        for command in lines.iter().filter(|c| runs_here(c)) {
            let out = Command::new("sh")
                .arg("-c")
                .arg(format!("kargs() {{ \"$KARGS\" \"$@\"; }}\n{command}"))
                .env("KARGS", env!("CARGO_BIN_EXE_kargs"))
                .env_remove("KARGS_CUDA_DRIVER")
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success() && !stdout.trim().is_empty(),
                "{file}: `{command}` exited {:?}\n--- stdout\n{stdout}\n--- stderr\n{}",
                out.status.code(),
                String::from_utf8_lossy(&out.stderr)
            );
            ran += 1;
        }
    }
    assert!(ran >= 6, "ran {ran} commands");
}
