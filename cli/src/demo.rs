//! `kargs demo`: run the bundled wasm guest on wasmtime through the real `wasi_cuda_launch`
//! host function, and show what the host lowered and what came of the launch.
//!
//! The guest (`std-adapter/guest/`, a `no_std` Rust module built for `wasm32-unknown-unknown`)
//! lays out `a`, `b` and `out` in its linear memory, encodes the argv of
//! `vector_add(const float *a, const float *b, float *out, unsigned n)` with the core's
//! `ArgvBuilder` and calls the import. The host checks the region and the shape, parses the
//! argv against the guest's memory and hands it to the launcher [`choose_launcher`] picked:
//!
//! ```text
//! kargs demo: the bundled vector_add guest (4101 bytes of wasm32) on wasmtime
//! guest: run_vector_add(1024): out[i] = a[i] + b[i] with a[i] = i, b[i] = 2i + 1
//! launcher: dry run (this kargs has no CUDA backend)
//!
//! wasi_cuda_launch(kernel 1, grid [4, 1, 1], block [256, 1, 1], shared memory 0 bytes, argv 32 bytes)
//!
//! index  type  value or window
//!     0  ptr   [1048588, +4096)  a
//!     1  ptr   [1064972, +4096)  b
//!     2  ptr   [1081356, +4096)  out
//!     3  u32   1024              n
//!
//! outcome: dry run, no CUDA device was found: nothing ran; the table above is
//!          what a device would have been given.
//! host:    NotAvailable -1: no CUDA device: dry run, the launch was recorded but not run
//! ```
//!
//! Exit status: 0 when the kernel ran and every `out[i]` is right, or on a dry run; 1 when the
//! launch was refused or the result is wrong; 2 when the guest could not be run at all.

use std::fmt::Write;

use clap::Args;
use kernel_args::guest::{CAPACITY, GUEST_WASM, GuestRunner, VECTOR_ADD_KERNEL_ID};
use kernel_args::{AbiError, Arg, DryRunLauncher, LaunchHost, LaunchRecord, Launcher, LoweredArgSnapshot};

use crate::{Output, Status};

/// `kargs demo [--n N]`
#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// Elements in each vector (0 to 4096, the guest's buffer capacity).
    #[arg(long, short, value_name = "N", default_value_t = 1024,
          value_parser = clap::value_parser!(i32).range(0..=CAPACITY as i64))]
    n: i32,
}

/// The launcher the demo runs the guest with, and a line that says what it is.
pub(crate) struct LauncherChoice {
    /// Runs (or records) the launch.
    pub(crate) launcher: Box<dyn Launcher>,
    /// Printed after `launcher: `.
    pub(crate) description: String,
}

/// Picks the launcher. The CUDA backend plugs in here, behind kargs's `cuda` feature: return
/// its launcher (with [`VECTOR_ADD_KERNEL_ID`] registered) when a device is present, and fall
/// through to the dry run, with the reason in the description, when `CudaLauncher::new`
/// answers `NotAvailable`.
#[cfg(not(feature = "cuda"))]
pub(crate) fn choose_launcher() -> LauncherChoice {
    LauncherChoice {
        launcher: Box::new(DryRunLauncher::new()),
        description: "dry run (this kargs has no CUDA backend)".to_owned(),
    }
}

// cuda (issue 4, owned by the cuda-backend): the CUDA launcher where a device is present.
#[cfg(feature = "cuda")]
pub(crate) fn choose_launcher() -> LauncherChoice {
    use kernel_args_cuda::{CudaLauncher, CudaOptions, KernelRegistry, kernels};

    let mut registry = KernelRegistry::new();
    let launcher = registry
        .register(VECTOR_ADD_KERNEL_ID, kernels::VECTOR_ADD_PTX, kernels::VECTOR_ADD_ENTRY)
        .and_then(|()| CudaLauncher::new(registry, CudaOptions::default()));
    match launcher {
        Ok(launcher) => {
            let device = launcher.device();
            let description = format!(
                "CUDA device {} {} (compute capability {}.{}, driver {}), {:?} pointers",
                device.ordinal,
                device.name,
                device.compute_capability.0,
                device.compute_capability.1,
                device.driver_version,
                launcher.pointer_mode()
            );
            LauncherChoice { launcher: Box::new(launcher), description }
        }
        Err(e) => LauncherChoice {
            launcher: Box::new(DryRunLauncher::new()),
            description: format!("dry run ({e})"),
        },
    }
}

/// Runs `kargs demo`.
pub(crate) fn run(args: &DemoArgs) -> Output {
    let LauncherChoice { launcher, description } = choose_launcher();
    match demo(args.n, launcher, &description) {
        Ok(output) => output,
        Err(e) => Output {
            stdout: String::new(),
            stderr: format!("error: the demo guest could not be run: {e:#}\n"),
            status: Status::Usage,
        },
    }
}

fn demo(n: i32, launcher: Box<dyn Launcher>, description: &str) -> wasmtime_error::Result<Output> {
    let mut guest = GuestRunner::new(LaunchHost::new(launcher))?;
    let answer = guest.run_vector_add(n)?;

    let mut out = String::new();
    let _ = writeln!(
        out,
        "kargs demo: the bundled vector_add guest ({} bytes of wasm32) on wasmtime",
        GUEST_WASM.len()
    );
    let _ = writeln!(out, "guest: run_vector_add({n}): out[i] = a[i] + b[i] with a[i] = i, b[i] = 2i + 1");
    let _ = writeln!(out, "launcher: {description}");
    out.push('\n');

    let Some(launch) = guest.host().last_launch().cloned() else {
        // Refused before the launcher: say why, from the host's own record.
        let message = guest.host().last_error_message().unwrap_or_else(|| format!("guest answered {answer}"));
        let _ = writeln!(out, "outcome: refused by the host before any launch: {message}");
        return Ok(Output::stdout(out, Status::Rejected));
    };
    out.push_str(&lowered(&launch));
    out.push('\n');

    let status = match AbiError::try_from(answer) {
        Err(_) if answer == 0 => match guest.first_mismatch(n)? {
            None => {
                let last =
                    if n > 0 { format!(" (out[{}] = {})", n - 1, guest.out(n - 1)?) } else { String::new() };
                let _ = writeln!(out, "outcome: launched; out[i] == a[i] + b[i] for all {n} elements{last}");
                if let Ok(outcome) = launch.result() {
                    let _ = writeln!(
                        out,
                        "         pointers {:?}, signature check {:?}",
                        outcome.pointer_mode, outcome.signature
                    );
                }
                Status::Accepted
            }
            Some(i) => {
                let i = i as i32;
                let _ = writeln!(
                    out,
                    "outcome: launched, but out[{i}] = {} where a[{i}] + b[{i}] = {}",
                    guest.out(i)?,
                    3.0 * i as f32 + 1.0
                );
                Status::Rejected
            }
        },
        Ok(AbiError::NotAvailable) => {
            let message = guest.host().last_error_message().unwrap_or_default();
            let _ =
                writeln!(out, "outcome: dry run, no CUDA device was found: nothing ran; the table above is");
            let _ = writeln!(out, "         what a device would have been given.");
            let _ = writeln!(out, "host:    {message}");
            Status::Accepted
        }
        Ok(_) | Err(_) => {
            let message =
                guest.host().last_error_message().unwrap_or_else(|| format!("guest answered {answer}"));
            let _ = writeln!(out, "outcome: the launch failed: {message}");
            Status::Rejected
        }
    };
    Ok(Output::stdout(out, status))
}

/// The host call and the argv table, from the host's pointer-free record.
fn lowered(launch: &LaunchRecord) -> String {
    let snapshot = launch.snapshot();
    let shape = snapshot.shape();
    let argv_bytes: usize = snapshot.args().iter().map(|a| a.tag().wire_size()).sum();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "wasi_cuda_launch(kernel {}, grid {:?}, block {:?}, shared memory {} bytes, argv {argv_bytes} bytes)",
        snapshot.kernel_id(),
        shape.grid,
        shape.block,
        shape.shared_mem_bytes
    );
    out.push('\n');
    let rows: Vec<(String, &str)> = snapshot.args().iter().map(|a| (value(a), a.tag().name())).collect();
    let width = rows.iter().map(|(v, _)| v.len()).max().unwrap_or(0).max("value or window".len());
    let _ = writeln!(out, "index  type  value or window");
    let names = if snapshot.kernel_id() == VECTOR_ADD_KERNEL_ID && rows.len() == 4 {
        ["a", "b", "out", "n"].as_slice()
    } else {
        &[]
    };
    for (i, (value, tag)) in rows.iter().enumerate() {
        let name = names.get(i).copied().unwrap_or("");
        let _ = writeln!(out, "{i:>5}  {tag:<4}  {value:<width$}  {name}");
    }
    out.lines().map(|l| format!("{}\n", l.trim_end())).collect()
}

/// An argument's value, or a pointer's window as `[offset, +len)`.
fn value(arg: &LoweredArgSnapshot) -> String {
    match *arg {
        Arg::I32(v) => v.to_string(),
        Arg::I64(v) => v.to_string(),
        Arg::U32(v) => v.to_string(),
        Arg::U64(v) => v.to_string(),
        Arg::F32(v) => format!("{:?} (bits {:#010x})", v.to_f32(), v.0),
        Arg::F64(v) => format!("{:?} (bits {:#018x})", v.to_f64(), v.0),
        Arg::Ptr(range) => format!("[{}, +{})", range.guest_offset, range.len),
    }
}

/// wasmtime's error type, through kernel-args's re-export (one wasmtime for the whole tool).
mod wasmtime_error {
    pub(crate) use kernel_args::wasmtime_host::wasmtime::Result;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dry_run_shows_the_lowered_argv() {
        let output = run(&DemoArgs { n: 1000 });
        assert_eq!(output.status, Status::Accepted);
        let text = output.stdout;
        assert!(text.contains("grid [4, 1, 1], block [256, 1, 1]"), "{text}");
        assert!(text.contains("argv 32 bytes"), "{text}");
        assert!(text.contains("u32   1000"), "{text}");
        assert_eq!(text.matches("ptr   [").count(), 3, "{text}");
        assert!(text.contains("+4000)"), "{text}");
        assert!(text.contains("dry run, no CUDA device was found"), "{text}");
    }

    #[test]
    fn zero_elements_is_one_empty_block() {
        let text = run(&DemoArgs { n: 0 }).stdout;
        assert!(text.contains("grid [1, 1, 1]"), "{text}");
        assert_eq!(text.matches("+0)").count(), 3, "{text}");
    }

    #[test]
    fn a_launcher_that_fails_is_reported() {
        struct Refuses;
        impl Launcher for Refuses {
            fn launch(
                &mut self,
                _: &kernel_args::LaunchRequest<'_, '_>,
            ) -> Result<kernel_args::LaunchOutcome, kernel_args::HostError> {
                Err(kernel_args::HostError::msg(AbiError::InvalidKernel, "no kernel 1 registered"))
            }
        }
        let output = demo(16, Box::new(Refuses), "refuses").unwrap();
        assert_eq!(output.status, Status::Rejected);
        assert!(output.stdout.contains("the launch failed: InvalidKernel -3: no kernel 1 registered"));
        assert!(output.stdout.contains("u32   16"));
    }

    #[test]
    fn a_launcher_that_succeeds_without_running_is_caught() {
        // Claims success but writes nothing: `out` still holds the guest's NaN sentinel.
        struct Lies;
        impl Launcher for Lies {
            fn launch(
                &mut self,
                _: &kernel_args::LaunchRequest<'_, '_>,
            ) -> Result<kernel_args::LaunchOutcome, kernel_args::HostError> {
                Ok(kernel_args::LaunchOutcome {
                    pointer_mode: kernel_args::PointerMode::Direct,
                    signature: kernel_args::SignatureCheck::Skipped,
                })
            }
        }
        let output = demo(8, Box::new(Lies), "lies").unwrap();
        assert_eq!(output.status, Status::Rejected);
        assert!(
            output.stdout.contains("outcome: launched, but out[0] = NaN where a[0] + b[0] = 1"),
            "{}",
            output.stdout
        );
    }
}
