//! What a command produced and how it ended: an [`Output`] (stdout, stderr, a [`Status`]), and
//! [`main`], which parses the command line, runs the command and writes its output. `kargs` and
//! `kargs-demo` (demo/, which compiles this file as its own) end the same way.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

use crate::json;

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

/// A binary's `main`: parses the command line as `P` and runs `run` with it, then writes what it
/// produced ([`emit`]). `--help` and `--version` print and exit 0; a usage error (clap's, or
/// one `run` reports) under `--json` is also one JSON line on stdout, so that a script reading
/// stdout sees why.
pub(crate) fn main<P: Parser>(run: impl FnOnce(P) -> Output) -> ExitCode {
    let json = wants_json(std::env::args_os().skip(1));
    let parsed = match P::try_parse() {
        Ok(parsed) => parsed,
        // `--help` and `--version` are not errors; clap prints them and exits 0.
        Err(error) if !error.use_stderr() => error.exit(),
        Err(error) => {
            let message = clap_message(&error.to_string());
            let _ = error.print();
            let stdout = if json { json::usage_line(&message) } else { String::new() };
            return emit(Output { stdout, stderr: String::new(), status: Status::Usage }).into();
        }
    };
    let output = run(parsed);
    let output = match output.status {
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
