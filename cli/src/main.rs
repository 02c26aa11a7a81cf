//! `kargs`: decode and encode wasi-cuda kernel-argument (argv) buffers.
//!
//! A tool for guest authors ("what does my argv look like to the host?") and the project's
//! black-box conformance surface: `kargs decode --json` runs the same parser as the host, and
//! the conformance vectors in `tests/vectors/` are run through it.
//!
//! ```text
//! $ kargs encode i32:-7 ptr:64:128
//! 01f9ffffff074000000080000000
//! $ kargs decode 01f9ffffff074000000080000000
//! ```
//!
//! Exit status: 0 when the argv is accepted (or encoded), 1 when it is rejected (or cannot be
//! encoded within the host's caps), 2 on a usage error (bad hex, a malformed argument, an
//! out-of-range `--mem-len`, ...) or when the output cannot be written.
//!
//! Results (a table, hex, JSON) go to stdout; diagnostics (a rejected argv, a usage error) to
//! stderr, coloured on a terminal (`--color`, `NO_COLOR`: the `style` module).
//!
//! Each subcommand is one module with a `clap::Args` struct and a `run` function that returns
//! an [`Output`]; adding a subcommand is a variant in [`Command`] and an arm in [`main`].

mod decode;
#[cfg(feature = "demo")]
mod demo;
mod encode;
mod hex;
mod input;
mod json;
mod number;
mod style;
mod value;

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use style::{ColorChoice, Paint};

/// Decode and encode wasi-cuda kernel-argument (argv) buffers.
#[derive(Debug, Parser)]
#[command(
    name = "kargs",
    version,
    after_help = "Exit status: 0 accepted (or encoded), 1 rejected (or over a cap), 2 usage error.\n\n\
                  Examples:\n  kargs encode i32:-7 f32:1.5 ptr:64:128\n  \
                  kargs decode --mem-len 256 01f9ffffff030000c03f074000000080000000\n  \
                  echo '07 40000000 80000000' | kargs decode --json -"
)]
struct Cli {
    /// Colour diagnostics: auto (when stderr is a terminal and NO_COLOR is unset), always, never.
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value_t = ColorChoice::Auto)]
    color: ColorChoice,

    #[command(subcommand)]
    command: Command,
}

/// The subcommands; one module each.
#[derive(Debug, Subcommand)]
enum Command {
    /// Parse an argv buffer as the host would and print its arguments or the first error.
    Decode(decode::DecodeArgs),
    /// Encode typed arguments into an argv buffer and print it as hex.
    Encode(encode::EncodeArgs),
    /// Run the bundled wasm guest's vector_add launch on wasmi (or wasmtime: `--runtime
    /// wasmtime`, with the `wasmtime` feature) through the host function and show what the host
    /// lowered and the launch's outcome (a dry run without a CUDA device). Only with the `demo`
    /// feature (a default one), the one part that needs a wasm runtime.
    #[cfg(feature = "demo")]
    Demo(demo::DemoArgs),
    /// Run the bundled wasm guest's vector_add launch (not in this build: it needs the `demo`
    /// feature, a default one: `cargo install --path cli --locked` from a clone).
    #[cfg(not(feature = "demo"))]
    #[command(disable_help_flag = true)]
    Demo {
        /// Whatever was given; the subcommand is not in this build.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
        rest: Vec<String>,
    },
}

/// How a subcommand ended; each maps to one exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    /// 0: the argv was accepted or encoded.
    Accepted,
    /// 1: the argv was rejected (or could not be encoded within the host's caps).
    Rejected,
    /// 2: the command line or its input was not usable, or output could not be written.
    Usage,
}

impl From<Status> for ExitCode {
    fn from(status: Status) -> ExitCode {
        ExitCode::from(match status {
            Status::Accepted => 0,
            Status::Rejected => 1,
            Status::Usage => 2,
        })
    }
}

/// What a subcommand produced: text for stdout and stderr, and its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Output {
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    pub(crate) status: Status,
}

impl Output {
    /// A result printed on stdout.
    pub(crate) fn stdout(stdout: String, status: Status) -> Output {
        Output { stdout, stderr: String::new(), status }
    }

    /// A diagnostic printed on stderr.
    pub(crate) fn stderr(stderr: String, status: Status) -> Output {
        Output { stdout: String::new(), stderr, status }
    }

    /// A usage error: `error: {message}` on stderr, exit status 2, in clap's own style.
    pub(crate) fn usage(message: impl std::fmt::Display) -> Output {
        Output {
            stdout: String::new(),
            stderr: format!("error: {message}\n\nFor more information, try '--help'.\n"),
            status: Status::Usage,
        }
    }
}

fn main() -> ExitCode {
    let json = wants_json(std::env::args_os().skip(1));
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // `--help` and `--version` are not errors; clap prints them and exits 0.
        Err(error) if !error.use_stderr() => error.exit(),
        Err(error) => {
            let message = clap_message(&error.to_string());
            let _ = error.print();
            let stdout = if json { json::usage_line(&message) } else { String::new() };
            return emit(Output { stdout, stderr: String::new(), status: Status::Usage }).into();
        }
    };
    let paint = Paint::for_stderr(cli.color);
    let output = match cli.command {
        Command::Decode(args) => decode::run(&args, paint),
        Command::Encode(args) => encode::run(&args, paint),
        #[cfg(feature = "demo")]
        Command::Demo(args) => demo::run(&args),
        #[cfg(not(feature = "demo"))]
        Command::Demo { .. } => Output::usage(
            "`kargs demo` is not in this build of kargs: it needs the `demo` feature (a default one), \
             as in `cargo install --path cli --locked` from a clone of kernel-args",
        ),
    };
    let output = match output.status {
        // A usage error under `--json`: the object too, so a script reading stdout sees why.
        Status::Usage if json && output.stdout.is_empty() => {
            Output { stdout: json::usage_line(&clap_message(&output.stderr)), ..output }
        }
        _ => output,
    };
    emit(output).into()
}

/// Whether the command line asks for JSON: a `--json` before any `--`.
fn wants_json(args: impl Iterator<Item = std::ffi::OsString>) -> bool {
    args.take_while(|a| a != "--").any(|a| a == "--json")
}

/// The message of a diagnostic in clap's style (`error: <message>`, then an excerpt or `Usage:`
/// lines): its first line without the `error: ` prefix.
fn clap_message(diagnostic: &str) -> String {
    let first = diagnostic.trim_start().lines().next().unwrap_or_default();
    first.strip_prefix("error: ").unwrap_or(first).to_owned()
}

/// Writes an [`Output`]. A reader that goes away early (`kargs decode ... | head`) is not an
/// error; any other write failure is reported and turns the status into 2.
fn emit(output: Output) -> Status {
    let stdout = std::io::stdout().lock().write_all(output.stdout.as_bytes());
    // Nothing useful can be done if stderr itself cannot be written.
    let _ = std::io::stderr().lock().write_all(output.stderr.as_bytes());
    match stdout {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            let _ = writeln!(std::io::stderr(), "error: cannot write to stdout: {e}");
            Status::Usage
        }
        _ => output.status,
    }
}
