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
//! `--json` prints the same report as one JSON object (the guest, the launcher, the launch as
//! the host lowered it with its arguments in `kargs decode --json`'s shape, and the outcome with
//! its ABI code); see [`JsonDemo`].
//!
//! Exit status: 0 when the kernel ran and every `out[i]` is right, or on a dry run; 1 when the
//! launch was refused or the result is wrong; 2 when the guest could not be run at all.

use std::fmt::Write;

use clap::Args;
use kernel_args::guest::{CAPACITY, GUEST_WASM, GuestRunner, VECTOR_ADD_KERNEL_ID};
use kernel_args::{
    AbiError, Arg, DryRunLauncher, LaunchHost, LaunchOutcome, LaunchRecord, Launcher, LoweredArgSnapshot,
    PointerMode, SignatureCheck,
};
use serde::Serialize;

use crate::json::JsonArg;
use crate::{Output, Status};

/// `kargs demo [--n N] [--json]`
#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// Elements in each vector (0 to 4096, the guest's buffer capacity).
    #[arg(long, short, value_name = "N", default_value_t = 1024,
          value_parser = clap::value_parser!(i32).range(0..=CAPACITY as i64))]
    n: i32,
    /// Print one JSON object (the guest, the launcher, the lowered launch, the outcome)
    /// instead of the table.
    #[arg(long)]
    json: bool,
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

// The CUDA launcher where the driver reports a device: the system's libcuda, or the driver
// library named by KARGS_CUDA_DRIVER (the emulated driver of cuda-emulator/ in CI).
#[cfg(feature = "cuda")]
pub(crate) fn choose_launcher() -> LauncherChoice {
    use kernel_args_cuda::{CudaDevice, CudaOptions, DRIVER_ENV, KernelRegistry, kernels};

    let options = CudaOptions::from_env();
    let library = match &options.driver_library {
        Some(path) => format!(", driver library {} (from {DRIVER_ENV})", path.display()),
        None => String::new(),
    };
    let mut registry = KernelRegistry::new();
    let device = registry
        .register(VECTOR_ADD_KERNEL_ID, kernels::VECTOR_ADD_PTX, kernels::VECTOR_ADD_ENTRY)
        .and_then(|()| CudaDevice::open(registry, options));
    match device {
        Ok(device) => {
            let info = device.info();
            let description = format!(
                "CUDA device {} {} (compute capability {}.{}, driver {}{library}), {:?} pointers",
                info.ordinal,
                info.name,
                info.compute_capability.0,
                info.compute_capability.1,
                info.driver_version,
                device.pointer_mode()
            );
            LauncherChoice { launcher: Box::new(device.launcher()), description }
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
        Ok(report) => {
            let stdout = if args.json { report.json() } else { report.text() };
            Output::stdout(stdout, report.status())
        }
        Err(e) => Output {
            stdout: String::new(),
            stderr: format!("error: the demo guest could not be run: {e:#}\n"),
            status: Status::Usage,
        },
    }
}

/// What the demo saw, before it is printed as text or JSON.
struct Report {
    /// The guest's element count.
    n: i32,
    /// What the launcher is (printed after `launcher: `).
    launcher: String,
    /// The host's record of what it handed the launcher; `None` when the host refused the call
    /// before any launcher ran.
    launch: Option<LaunchRecord>,
    outcome: Outcome,
}

/// How the guest's launch ended.
enum Outcome {
    /// Refused by the host before any launcher ran.
    Refused { code: i32, message: String },
    /// The kernel ran and every `out[i]` is right; `last` is `out[n - 1]` (none when `n` is 0).
    Launched { last: Option<f32>, outcome: Option<LaunchOutcome> },
    /// The kernel ran, but `out[index]` is `got`, not `expected`.
    WrongResult { index: i32, got: f32, expected: f32 },
    /// No CUDA device: the dry run recorded the launch.
    DryRun { message: String },
    /// The launcher refused or failed with `code`.
    Failed { code: i32, message: String },
}

fn demo(n: i32, launcher: Box<dyn Launcher>, description: &str) -> wasmtime_error::Result<Report> {
    let mut guest = GuestRunner::new(LaunchHost::new(launcher))?;
    let answer = guest.run_vector_add(n)?;
    let host = guest.host();
    let message = || host.last_error_message().unwrap_or_else(|| format!("guest answered {answer}"));
    let launch = host.last_launch().cloned();
    let outcome = match (&launch, AbiError::try_from(answer)) {
        (None, _) => Outcome::Refused { code: answer, message: message() },
        (Some(_), Err(_)) if answer == 0 => match guest.first_mismatch(n)? {
            None => Outcome::Launched {
                last: if n > 0 { Some(guest.out(n - 1)?) } else { None },
                outcome: launch.as_ref().and_then(|l| l.result().ok()),
            },
            Some(i) => {
                let index = i as i32;
                Outcome::WrongResult { index, got: guest.out(index)?, expected: 3.0 * index as f32 + 1.0 }
            }
        },
        (Some(_), Ok(AbiError::NotAvailable)) => Outcome::DryRun { message: message() },
        (Some(_), _) => Outcome::Failed { code: answer, message: message() },
    };
    Ok(Report { n, launcher: description.to_owned(), launch, outcome })
}

impl Report {
    /// The exit status: 0 when the kernel ran right or on a dry run, 1 otherwise.
    fn status(&self) -> Status {
        match self.outcome {
            Outcome::Launched { .. } | Outcome::DryRun { .. } => Status::Accepted,
            Outcome::Refused { .. } | Outcome::WrongResult { .. } | Outcome::Failed { .. } => {
                Status::Rejected
            }
        }
    }

    /// The table and the outcome, for people.
    fn text(&self) -> String {
        let n = self.n;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "kargs demo: the bundled vector_add guest ({} bytes of wasm32) on wasmtime",
            GUEST_WASM.len()
        );
        let _ =
            writeln!(out, "guest: run_vector_add({n}): out[i] = a[i] + b[i] with a[i] = i, b[i] = 2i + 1");
        let _ = writeln!(out, "launcher: {}", self.launcher);
        out.push('\n');
        if let Some(launch) = &self.launch {
            out.push_str(&lowered(launch));
            out.push('\n');
        }
        match &self.outcome {
            Outcome::Refused { message, .. } => {
                let _ = writeln!(out, "outcome: refused by the host before any launch: {message}");
            }
            Outcome::Launched { last, outcome } => {
                let last = last.map(|v| format!(" (out[{}] = {v})", n - 1)).unwrap_or_default();
                let _ = writeln!(out, "outcome: launched; out[i] == a[i] + b[i] for all {n} elements{last}");
                if let Some(outcome) = outcome {
                    let _ = writeln!(
                        out,
                        "         pointers {:?}, signature check {:?}",
                        outcome.pointer_mode, outcome.signature
                    );
                }
            }
            Outcome::WrongResult { index: i, got, expected } => {
                let _ = writeln!(
                    out,
                    "outcome: launched, but out[{i}] = {got} where a[{i}] + b[{i}] = {expected}"
                );
            }
            Outcome::DryRun { message } => {
                let _ = writeln!(
                    out,
                    "outcome: dry run, no CUDA device was found: nothing ran; the table above is"
                );
                let _ = writeln!(out, "         what a device would have been given.");
                let _ = writeln!(out, "host:    {message}");
            }
            Outcome::Failed { message, .. } => {
                let _ = writeln!(out, "outcome: the launch failed: {message}");
            }
        }
        out
    }

    /// One JSON object, for tools (see [`JsonDemo`]).
    fn json(&self) -> String {
        let launch = self.launch.as_ref().map(|launch| {
            let snapshot = launch.snapshot();
            let mut offset = 0;
            let args = snapshot
                .args()
                .iter()
                .enumerate()
                .map(|(index, arg)| {
                    let json = JsonArg::new(index, offset, arg);
                    offset += arg.tag().wire_size();
                    json
                })
                .collect();
            JsonLaunch {
                kernel_id: snapshot.kernel_id(),
                grid: snapshot.shape().grid,
                block: snapshot.shape().block,
                shared_mem_bytes: snapshot.shape().shared_mem_bytes,
                argv_bytes: snapshot.args().iter().map(|a| a.tag().wire_size()).sum(),
                args,
            }
        });
        let error = |code: i32, message: &str| JsonError {
            code,
            name: AbiError::try_from(code).map(AbiError::name).ok(),
            message: message.to_owned(),
        };
        let outcome = match &self.outcome {
            Outcome::Refused { code, message } => JsonOutcome::Refused(error(*code, message)),
            Outcome::Launched { last, outcome } => JsonOutcome::Launched {
                last: last.map(|v| format!("{v:?}")),
                pointer_mode: outcome.map(|o| match o.pointer_mode {
                    PointerMode::Direct => "direct",
                    PointerMode::Staged => "staged",
                }),
                signature: outcome.map(|o| match o.signature {
                    SignatureCheck::Ptx => "ptx",
                    SignatureCheck::Driver => "driver",
                    SignatureCheck::Skipped => "skipped",
                }),
            },
            Outcome::WrongResult { index, got, expected } => JsonOutcome::WrongResult {
                index: *index,
                got: format!("{got:?}"),
                expected: format!("{expected:?}"),
            },
            Outcome::DryRun { message } => JsonOutcome::DryRun(error(AbiError::NotAvailable.code(), message)),
            Outcome::Failed { code, message } => JsonOutcome::Failed(error(*code, message)),
        };
        let report = JsonDemo {
            guest: JsonGuest { wasm_bytes: GUEST_WASM.len(), n: self.n },
            launcher: &self.launcher,
            launch,
            outcome,
        };
        // Serializing these plain structs cannot fail; the fallback keeps the output valid JSON.
        let mut line = serde_json::to_string(&report)
            .unwrap_or_else(|e| format!("{{\"internal_error\":{:?}}}", e.to_string()));
        line.push('\n');
        line
    }
}

/// `kargs demo --json`: one object.
///
/// ```text
/// {"guest":{"wasm_bytes":4101,"n":16},"launcher":"dry run (...)",
///  "launch":{"kernel_id":1,"grid":[1,1,1],"block":[256,1,1],"shared_mem_bytes":0,"argv_bytes":32,
///            "args":[{"index":0,"offset":0,"type":"ptr","guest_offset":1048588,"len":64},...]},
///  "outcome":{"result":"dry_run","code":-1,"name":"NotAvailable","message":"NotAvailable -1: ..."}}
/// ```
///
/// `launch` is `null` when the host refused the call before any launcher ran; `args` are in the
/// shape of `kargs decode --json`. `outcome.result` is `launched` (with `pointer_mode`,
/// `signature` and `last`, `out[n - 1]`), `wrong_result` (`index`, `got`, `expected`),
/// `dry_run`, `failed` or `refused` (each with the ABI `code`, its `name` and the host's
/// `message`). Floats are Rust's shortest round-trip spelling, as strings.
#[derive(Serialize)]
struct JsonDemo<'a> {
    guest: JsonGuest,
    launcher: &'a str,
    launch: Option<JsonLaunch>,
    outcome: JsonOutcome,
}

#[derive(Serialize)]
struct JsonGuest {
    wasm_bytes: usize,
    n: i32,
}

#[derive(Serialize)]
struct JsonLaunch {
    kernel_id: i64,
    grid: [u32; 3],
    block: [u32; 3],
    shared_mem_bytes: u32,
    argv_bytes: usize,
    args: Vec<JsonArg>,
}

#[derive(Serialize)]
struct JsonError {
    code: i32,
    name: Option<&'static str>,
    message: String,
}

#[derive(Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
enum JsonOutcome {
    Launched { pointer_mode: Option<&'static str>, signature: Option<&'static str>, last: Option<String> },
    WrongResult { index: i32, got: String, expected: String },
    DryRun(JsonError),
    Failed(JsonError),
    Refused(JsonError),
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
        let output = run(&DemoArgs { n: 1000, json: false });
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
        let text = run(&DemoArgs { n: 0, json: false }).stdout;
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
        let report = demo(16, Box::new(Refuses), "refuses").unwrap();
        assert_eq!(report.status(), Status::Rejected);
        let text = report.text();
        assert!(text.contains("the launch failed: InvalidKernel -3: no kernel 1 registered"));
        assert!(text.contains("u32   16"));
        let json = parse(&report.json());
        assert_eq!(json["outcome"]["result"], "failed");
        assert_eq!(
            (json["outcome"]["code"].as_i64(), json["outcome"]["name"].as_str()),
            (Some(-3), Some("InvalidKernel"))
        );
        assert_eq!(json["launch"]["args"][3]["value"], 16);
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
        let report = demo(8, Box::new(Lies), "lies").unwrap();
        assert_eq!(report.status(), Status::Rejected);
        let text = report.text();
        assert!(text.contains("outcome: launched, but out[0] = NaN where a[0] + b[0] = 1"), "{text}");
        let json = parse(&report.json());
        assert_eq!(
            json["outcome"],
            serde_json::json!({"result": "wrong_result", "index": 0, "got": "NaN", "expected": "1.0"})
        );
    }

    /// Checks the line is one JSON object and returns it.
    fn parse(line: &str) -> serde_json::Value {
        assert_eq!(line.matches('\n').count(), 1, "one line: {line}");
        serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    #[test]
    fn json_dry_run_has_the_launch_and_the_reason() {
        let output = run(&DemoArgs { n: 16, json: true });
        assert_eq!(output.status, Status::Accepted);
        let json = parse(&output.stdout);
        assert_eq!(json["guest"], serde_json::json!({"wasm_bytes": GUEST_WASM.len(), "n": 16}));
        assert_eq!(json["launcher"], "dry run (this kargs has no CUDA backend)");
        let launch = &json["launch"];
        assert_eq!(launch["kernel_id"], VECTOR_ADD_KERNEL_ID);
        assert_eq!(
            (launch["grid"].clone(), launch["block"].clone()),
            (serde_json::json!([1, 1, 1]), serde_json::json!([256, 1, 1]))
        );
        assert_eq!(launch["argv_bytes"], 32);
        let args = launch["args"].as_array().unwrap();
        assert_eq!(args.len(), 4);
        // Three 9-byte pointer records of 64 bytes each, then the u32: offsets follow the wire.
        for (i, arg) in args.iter().take(3).enumerate() {
            assert_eq!((arg["index"].as_u64(), arg["offset"].as_u64()), (Some(i as u64), Some(9 * i as u64)));
            assert_eq!((arg["type"].as_str(), arg["len"].as_u64()), (Some("ptr"), Some(64)));
        }
        assert_eq!(args[3], serde_json::json!({"index": 3, "offset": 27, "type": "u32", "value": 16}));
        assert_eq!(json["outcome"]["result"], "dry_run");
        assert_eq!(json["outcome"]["code"], -1);
        assert_eq!(json["outcome"]["name"], "NotAvailable");
        assert!(json["outcome"]["message"].as_str().unwrap().contains("no CUDA device"), "{json}");
    }

    #[test]
    fn json_of_a_refused_call_has_no_launch() {
        let report = Report {
            n: 4,
            launcher: "dry run".to_owned(),
            launch: None,
            outcome: Outcome::Refused { code: -8, message: "InvalidDimensions -8: grid.x is 0".to_owned() },
        };
        assert_eq!(report.status(), Status::Rejected);
        let json = parse(&report.json());
        assert!(json["launch"].is_null(), "{json}");
        assert_eq!(
            json["outcome"],
            serde_json::json!({"result": "refused", "code": -8, "name": "InvalidDimensions",
                               "message": "InvalidDimensions -8: grid.x is 0"})
        );
        assert!(report.text().contains("refused by the host before any launch: InvalidDimensions -8"));
    }

    #[test]
    fn json_names_the_pointer_mode_and_signature_of_a_launch() {
        // The launched outcome needs a device; its rendering does not.
        let outcome = LaunchOutcome { pointer_mode: PointerMode::Staged, signature: SignatureCheck::Ptx };
        let report = Report {
            n: 16,
            launcher: "CUDA device 0".to_owned(),
            launch: None,
            outcome: Outcome::Launched { last: Some(46.0), outcome: Some(outcome) },
        };
        assert_eq!(report.status(), Status::Accepted);
        let json = parse(&report.json());
        assert_eq!(
            json["outcome"],
            serde_json::json!({"result": "launched", "pointer_mode": "staged", "signature": "ptx", "last": "46.0"})
        );
        assert!(report.text().contains("out[15] = 46)"), "{}", report.text());
        assert!(report.text().contains("pointers Staged, signature check Ptx"), "{}", report.text());
    }
}
