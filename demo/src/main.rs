//! `kargs-demo`: run the bundled wasm guest on wasmi (or on wasmtime, `--runtime wasmtime`, in a
//! build with the `wasmtime` feature) through the real `wasi_cuda_launch` host function, and show
//! what the host lowered and what came of the launch.
//!
//! The guest (`std-adapter/guest/`, a `no_std` Rust module built for `wasm32-unknown-unknown`)
//! lays out `a`, `b` and `out` in its linear memory, encodes the argv of
//! `vector_add(const float *a, const float *b, float *out, unsigned n)` with the core's
//! `ArgvBuilder` and calls the import. The host checks the region and the shape, parses the
//! argv against the guest's memory and hands it to the launcher [`launcher::choose_launcher`]
//! picked:
//!
//! ```text
//! kargs-demo: the bundled vector_add guest (3088 bytes of wasm32) on wasmi
//! guest: run_vector_add(1024): out[i] = a[i] + b[i] with a[i] = i, b[i] = 2i + 1
//! launcher: dry run: this kargs-demo is built without the `cuda` feature, so it launches on no machine (from a clone: eval "$(scripts/cuda-link-stub.sh)" && cargo run -p kernel-args-demo --features cuda)
//!
//! wasi_cuda_launch(kernel 1, grid [4, 1, 1], block [256, 1, 1], shared memory 0 bytes, argv 32 bytes)
//!
//! index  type  value or window
//!     0  ptr   [1048588, +4096)  a
//!     1  ptr   [1064972, +4096)  b
//!     2  ptr   [1081356, +4096)  out
//!     3  u32   1024              n
//!
//! outcome: dry run (the launcher line says why): nothing ran; the table above is
//!          what a device would have been given.
//! host:    NotAvailable -1: no CUDA device: dry run, the launch was recorded but not run
//! ```
//!
//! `--json` prints the same report as one JSON object (the runtime, the guest, the launcher,
//! the launch as the host lowered it with its arguments in `kargs decode --json`'s shape, and
//! the outcome with its ABI code); see [`render::JsonDemo`].
//!
//! Both runtimes serve the guest with the same host function (`kernel_args::LaunchHost::call`
//! behind each binding) and run it through the same runner (`kernel_args_demo::guest::Guest`), so
//! the launch, its table and its outcome are the same on either; only the runtime's name in the
//! first line (and in the JSON) differs.
//!
//! Exit status: 0 when the kernel ran and every `out[i]` is right, or on a dry run; 1 when the
//! launch was refused or the result is wrong; 2 when the guest could not be run at all.
//!
//! One module per step: [`launcher`] picks the launcher, [`report`] runs the guest into a
//! [`report::Report`], and [`render`] prints it as text or JSON. The argv's JSON and text forms
//! and how the binary ends are `kargs`'s own files (`cli/src/`), compiled here too.

mod launcher;
mod render;
mod report;

// kargs's: an argument's JSON form and its value as text (most of each is kargs decode's).
#[path = "../../cli/src/json.rs"]
#[allow(dead_code)]
mod json;
#[path = "../../cli/src/number.rs"]
#[allow(dead_code)]
mod number;
#[path = "../../cli/src/output.rs"]
#[allow(dead_code)]
mod output;
#[path = "../../cli/src/value.rs"]
#[allow(dead_code)]
mod value;

use std::process::ExitCode;

use clap::{Parser, ValueEnum};
use kernel_args::guest::CAPACITY;
use kernel_args_demo::guest::Runtime;
use output::{Output, Status};

/// Run the bundled wasm guest's vector_add launch through the wasi_cuda_launch host function
/// and show what the host lowered and the launch's outcome (a dry run without a CUDA device).
#[derive(Debug, Parser)]
#[command(
    name = "kargs-demo",
    version,
    after_help = "Exit status: 0 the kernel ran right (or a dry run), 1 refused or wrong, 2 usage error."
)]
pub(crate) struct DemoArgs {
    /// Elements in each vector (0 to 4096, the guest's buffer capacity; decimal or 0x hex).
    #[arg(long = "elements", short = 'n', visible_alias = "n", value_name = "N", default_value_t = 1024,
          value_parser = parse_elements)]
    n: i32,
    /// The wasm runtime that runs the guest (wasmtime only in a build with the `wasmtime`
    /// feature).
    #[arg(long, value_enum, value_name = "RUNTIME", default_value_t = DemoRuntime::Wasmi)]
    runtime: DemoRuntime,
    /// Print one JSON object (the runtime, the guest, the launcher, the lowered launch, the
    /// outcome) instead of the table.
    #[arg(long)]
    json: bool,
}

/// `--elements`: 0 to the guest's capacity, decimal or `0x` hex.
fn parse_elements(text: &str) -> Result<i32, String> {
    let n = crate::number::unsigned_up_to(CAPACITY as u64)(text)?;
    i32::try_from(n).map_err(|_| format!("{n} is not in 0..={CAPACITY}"))
}

/// `--runtime`: the runtimes the demo runs the guest on (kernel-args's [`Runtime`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum DemoRuntime {
    /// wasmi, an interpreter (the runtime of firmware-style hosts).
    Wasmi,
    /// wasmtime, compiling the guest with Cranelift (with the `wasmtime` feature).
    Wasmtime,
}

impl From<DemoRuntime> for Runtime {
    fn from(runtime: DemoRuntime) -> Runtime {
        match runtime {
            DemoRuntime::Wasmtime => Runtime::Wasmtime,
            DemoRuntime::Wasmi => Runtime::Wasmi,
        }
    }
}

fn main() -> ExitCode {
    output::main(|args: DemoArgs| run(&args))
}

/// Runs the demo.
pub(crate) fn run(args: &DemoArgs) -> Output {
    if args.runtime == DemoRuntime::Wasmtime && !cfg!(feature = "wasmtime") {
        return Output::usage(
            "`--runtime wasmtime` is not in this build: it needs the `wasmtime` feature \
             (from a clone: cargo run -p kernel-args-demo --features wasmtime); without it the demo \
             runs on wasmi",
        );
    }
    let launcher::LauncherChoice { launcher, description } = launcher::choose_launcher();
    match report::run(args.runtime.into(), args.n, launcher, &description) {
        Ok(report) => {
            let stdout = if args.json { render::json(&report) } else { render::text(&report) };
            Output::stdout(stdout, report.status())
        }
        Err(e) => Output {
            stdout: String::new(),
            stderr: format!("error: the demo guest could not be run: {e:#}\n"),
            status: Status::Usage,
        },
    }
}

/// Checks the line is one JSON object and returns it.
#[cfg(test)]
fn parse_json_line(line: &str) -> serde_json::Value {
    assert_eq!(line.matches('\n').count(), 1, "one line: {line}");
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

#[cfg(test)]
mod tests {
    use kernel_args::guest::{GUEST_WASM, VECTOR_ADD_KERNEL_ID};

    use super::*;

    #[test]
    fn dry_run_shows_the_lowered_argv() {
        let output = run(&DemoArgs { n: 1000, runtime: DemoRuntime::Wasmi, json: false });
        assert_eq!(output.status, Status::Accepted);
        let text = output.stdout;
        assert!(text.contains("grid [4, 1, 1], block [256, 1, 1]"), "{text}");
        assert!(text.contains("argv 32 bytes"), "{text}");
        assert!(text.contains("u32   1000"), "{text}");
        assert_eq!(text.matches("ptr   [").count(), 3, "{text}");
        assert!(text.contains("+4000)"), "{text}");
        assert!(text.contains("outcome: dry run (the launcher line says why)"), "{text}");
        assert!(text.contains("\nlauncher: dry run: this "), "{text}");
    }

    #[test]
    fn zero_elements_is_one_empty_block() {
        let text = run(&DemoArgs { n: 0, runtime: DemoRuntime::Wasmi, json: false }).stdout;
        assert!(text.contains("grid [1, 1, 1]"), "{text}");
        assert_eq!(text.matches("+0)").count(), 3, "{text}");
    }

    #[test]
    fn json_dry_run_has_the_launch_and_the_reason() {
        let output = run(&DemoArgs { n: 16, runtime: DemoRuntime::Wasmi, json: true });
        assert_eq!(output.status, Status::Accepted);
        let json = parse_json_line(&output.stdout);
        assert_eq!(json["runtime"], "wasmi");
        assert_eq!(json["guest"], serde_json::json!({"wasm_bytes": GUEST_WASM.len(), "n": 16}));
        let launcher = json["launcher"].as_str().unwrap();
        assert!(launcher.starts_with("dry run: this "), "{launcher}");
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
    #[cfg(not(feature = "wasmtime"))]
    fn wasmtime_is_a_usage_error_that_names_its_feature() {
        let output = run(&DemoArgs { n: 4, runtime: DemoRuntime::Wasmtime, json: false });
        assert_eq!(output.status, Status::Usage);
        assert!(output.stderr.contains("it needs the `wasmtime` feature"), "{}", output.stderr);
    }

    #[test]
    #[cfg(feature = "wasmtime")]
    fn wasmi_runs_the_same_launch_as_wasmtime() {
        for (n, json) in [(1000, false), (0, false), (16, true), (CAPACITY as i32, true)] {
            let on = |runtime| run(&DemoArgs { n, runtime, json });
            let (wasmtime, wasmi) = (on(DemoRuntime::Wasmtime), on(DemoRuntime::Wasmi));
            assert_eq!(wasmi.status, Status::Accepted, "{}", wasmi.stderr);
            assert_eq!((wasmi.status, &wasmi.stderr), (wasmtime.status, &wasmtime.stderr));
            if json {
                let (mut a, mut b) = (parse_json_line(&wasmtime.stdout), parse_json_line(&wasmi.stdout));
                assert_eq!((a["runtime"].as_str(), b["runtime"].as_str()), (Some("wasmtime"), Some("wasmi")));
                a["runtime"] = serde_json::Value::Null;
                b["runtime"] = serde_json::Value::Null;
                assert_eq!(a, b, "n = {n}");
                assert_eq!(b["outcome"]["code"], -1);
            } else {
                let (first_a, rest_a) = wasmtime.stdout.split_once('\n').unwrap();
                let (first_b, rest_b) = wasmi.stdout.split_once('\n').unwrap();
                assert!(first_a.ends_with(" on wasmtime"), "{first_a}");
                assert!(first_b.ends_with(" on wasmi"), "{first_b}");
                assert_eq!(first_a.strip_suffix("wasmtime"), first_b.strip_suffix("wasmi"));
                assert_eq!(rest_a, rest_b, "n = {n}");
                assert!(rest_b.contains("outcome: dry run (the launcher line says why)"), "{rest_b}");
            }
        }
    }
}
