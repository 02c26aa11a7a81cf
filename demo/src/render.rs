//! A [`Report`] printed for people ([`text`]: the host call, the argv table, the outcome) or
//! for tools ([`json`]: one [`JsonDemo`] object on one line).

use std::fmt::Write;

use kernel_args::guest::{GUEST_WASM, VECTOR_ADD_KERNEL_ID};
use kernel_args::{AbiError, LaunchRecord, LaunchSnapshot, PointerMode, SignatureCheck};
use kernel_args_core::F32Bits;
use serde::Serialize;

use crate::json::{JsonArg, JsonError};
use crate::report::{Outcome, Report};
use crate::value;

/// The table and the outcome, for people.
pub(super) fn text(report: &Report) -> String {
    let n = report.n;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "kargs-demo: the bundled vector_add guest ({} bytes of wasm32) on {}",
        GUEST_WASM.len(),
        report.runtime
    );
    let _ = writeln!(out, "guest: run_vector_add({n}): out[i] = a[i] + b[i] with a[i] = i, b[i] = 2i + 1");
    let _ = writeln!(out, "launcher: {}", report.launcher);
    out.push('\n');
    if let Some(launch) = &report.launch {
        out.push_str(&lowered(launch));
        out.push('\n');
    }
    match &report.outcome {
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
            let _ =
                writeln!(out, "outcome: launched, but out[{i}] = {got} where a[{i}] + b[{i}] = {expected}");
        }
        Outcome::DryRun { message } => {
            let _ = writeln!(
                out,
                "outcome: dry run (the launcher line says why): nothing ran; the table above is"
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

/// The host call and the argv table, from the host's pointer-free record.
fn lowered(launch: &LaunchRecord) -> String {
    let snapshot = launch.snapshot();
    let shape = snapshot.shape();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "wasi_cuda_launch(kernel {}, grid {:?}, block {:?}, shared memory {} bytes, argv {} bytes)",
        snapshot.kernel_id(),
        shape.grid,
        shape.block,
        shape.shared_mem_bytes,
        argv_bytes(snapshot)
    );
    out.push('\n');
    let rows: Vec<(String, &str)> =
        snapshot.args().iter().map(|a| (value::human(&a), a.tag().name())).collect();
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

/// The argv's length on the wire: the sum of its records' sizes.
fn argv_bytes(snapshot: &LaunchSnapshot) -> usize {
    snapshot.args().iter().map(|a| a.tag().wire_size()).sum()
}

/// One JSON object, for tools (see [`JsonDemo`]).
pub(super) fn json(report: &Report) -> String {
    let launch = report.launch.as_ref().map(|launch| {
        let snapshot = launch.snapshot();
        let mut offset = 0;
        let args = snapshot
            .args()
            .iter()
            .enumerate()
            .map(|(index, arg)| {
                let json = JsonArg::new(index, offset, &arg);
                offset += arg.tag().wire_size();
                json
            })
            .collect();
        JsonLaunch {
            kernel_id: snapshot.kernel_id(),
            grid: snapshot.shape().grid,
            block: snapshot.shape().block,
            shared_mem_bytes: snapshot.shape().shared_mem_bytes,
            argv_bytes: argv_bytes(snapshot),
            args,
        }
    });
    let float = |v: f32| value::f32_value(F32Bits::from_f32(v));
    let outcome = match &report.outcome {
        Outcome::Refused { code, message } => JsonOutcome::Refused(JsonError::abi(*code, message)),
        Outcome::Launched { last, outcome } => JsonOutcome::Launched {
            last: last.map(float),
            pointer_mode: outcome.map(|o| match o.pointer_mode {
                PointerMode::Direct => "direct",
                PointerMode::Staged => "staged",
                PointerMode::None => "none",
            }),
            signature: outcome.map(|o| match o.signature {
                SignatureCheck::Ptx => "ptx",
                SignatureCheck::Driver => "driver",
                SignatureCheck::Skipped => "skipped",
            }),
        },
        Outcome::WrongResult { index, got, expected } => {
            JsonOutcome::WrongResult { index: *index, got: float(*got), expected: float(*expected) }
        }
        Outcome::DryRun { message } => {
            JsonOutcome::DryRun(JsonError::abi(AbiError::NotAvailable.code(), message))
        }
        Outcome::Failed { code, message } => JsonOutcome::Failed(JsonError::abi(*code, message)),
    };
    let report = JsonDemo {
        runtime: report.runtime.name(),
        guest: JsonGuest { wasm_bytes: GUEST_WASM.len(), n: report.n },
        launcher: &report.launcher,
        launch,
        outcome,
    };
    // Serializing these plain structs cannot fail; the fallback keeps the output valid JSON.
    let mut line = serde_json::to_string(&report)
        .unwrap_or_else(|e| format!("{{\"internal_error\":{:?}}}", e.to_string()));
    line.push('\n');
    line
}

/// `kargs-demo --json`: one object.
///
/// ```text
/// {"runtime":"wasmtime","guest":{"wasm_bytes":3088,"n":16},"launcher":"dry run: ...",
///  "launch":{"kernel_id":1,"grid":[1,1,1],"block":[256,1,1],"shared_mem_bytes":0,"argv_bytes":32,
///            "args":[{"index":0,"offset":0,"type":"ptr","guest_offset":1048588,"len":64},...]},
///  "outcome":{"result":"dry_run","code":-1,"name":"NotAvailable","message":"NotAvailable -1: ..."}}
/// ```
///
/// `runtime` is the wasm runtime that ran the guest (`wasmtime` or `wasmi`, `--runtime`).
/// `launch` is `null` when the host refused the call before any launcher ran; `args` are in the
/// shape of `kargs decode --json`. `outcome.result` is `launched` (with `pointer_mode`,
/// `signature` and `last`, `out[n - 1]`), `wrong_result` (`index`, `got`, `expected`),
/// `dry_run`, `failed` or `refused` (each with the ABI `code`, its `name` and the host's
/// `message`: a [`JsonError`] without an argv error's fields). Floats are Rust's shortest
/// round-trip spelling, as strings.
#[derive(Serialize)]
pub(super) struct JsonDemo<'a> {
    runtime: &'static str,
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
#[serde(tag = "result", rename_all = "snake_case")]
enum JsonOutcome {
    Launched { pointer_mode: Option<&'static str>, signature: Option<&'static str>, last: Option<String> },
    WrongResult { index: i32, got: String, expected: String },
    DryRun(JsonError),
    Failed(JsonError),
    Refused(JsonError),
}

#[cfg(test)]
mod tests {
    use kernel_args::LaunchOutcome;

    use super::*;
    use crate::parse_json_line;

    #[test]
    fn json_of_a_refused_call_has_no_launch() {
        let report = Report {
            runtime: kernel_args_demo::guest::Runtime::Wasmi,
            n: 4,
            launcher: "dry run".to_owned(),
            launch: None,
            outcome: Outcome::Refused { code: -8, message: "InvalidDimensions -8: grid.x is 0".to_owned() },
        };
        assert_eq!(report.status(), crate::Status::Rejected);
        let json = parse_json_line(&json(&report));
        assert!(json["launch"].is_null(), "{json}");
        assert_eq!(json["runtime"], "wasmi");
        assert_eq!(
            json["outcome"],
            serde_json::json!({"result": "refused", "code": -8, "name": "InvalidDimensions",
                               "message": "InvalidDimensions -8: grid.x is 0"})
        );
        let text = text(&report);
        assert!(text.contains("refused by the host before any launch: InvalidDimensions -8"), "{text}");
        assert!(text.starts_with("kargs-demo: the bundled vector_add guest ("), "{text}");
        assert!(text.lines().next().unwrap().ends_with(") on wasmi"), "{text}");
    }

    #[test]
    fn json_names_the_pointer_mode_and_signature_of_a_launch() {
        // The launched outcome needs a device; its rendering does not.
        let outcome = LaunchOutcome { pointer_mode: PointerMode::Staged, signature: SignatureCheck::Ptx };
        let report = Report {
            runtime: kernel_args_demo::guest::Runtime::Wasmtime,
            n: 16,
            launcher: "CUDA device 0".to_owned(),
            launch: None,
            outcome: Outcome::Launched { last: Some(46.0), outcome: Some(outcome) },
        };
        assert_eq!(report.status(), crate::Status::Accepted);
        let json = parse_json_line(&json(&report));
        assert_eq!(
            json["outcome"],
            serde_json::json!({"result": "launched", "pointer_mode": "staged", "signature": "ptx", "last": "46.0"})
        );
        let text = text(&report);
        assert!(text.contains("out[15] = 46)"), "{text}");
        assert!(text.contains("pointers Staged, signature check Ptx"), "{text}");
    }
}
