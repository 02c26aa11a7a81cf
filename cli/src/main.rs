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
mod encode;
mod hex;
mod input;
mod json;
mod number;
mod output;
mod style;
mod value;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use output::{Output, Status};
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
}

fn main() -> ExitCode {
    output::main(|cli: Cli| {
        let paint = Paint::for_stderr(cli.color);
        match cli.command {
            Command::Decode(args) => decode::run(&args, paint),
            Command::Encode(args) => encode::run(&args, paint),
        }
    })
}
