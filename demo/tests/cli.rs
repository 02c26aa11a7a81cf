//! The `kargs-demo` command line: the report as text and as JSON, its exit status, the runtime
//! it runs on and the usage errors.

use std::process::{Command, Output};

fn demo(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kargs-demo")).args(args).output().unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

fn code(out: &Output) -> i32 {
    out.status.code().unwrap()
}

#[test]
fn demo_json_is_one_object_and_the_exit_status_is_the_texts() {
    // No CUDA backend in this build: a dry run, exit 0, the launch as the host lowered it.
    let out = demo(&["--json", "--n", "4"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 1, "{text}");
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["guest"]["n"], 4);
    assert_eq!(json["outcome"]["result"], "dry_run");
    let args = json["launch"]["args"].as_array().unwrap();
    assert_eq!(
        args.iter().map(|a| a["type"].as_str().unwrap()).collect::<Vec<_>>(),
        ["ptr", "ptr", "ptr", "u32"]
    );
    assert!(args[..3].iter().all(|a| a["len"] == 16), "{text}");
    // The same launch as the table shows.
    let table = stdout(&demo(&["--n", "4"]));
    assert!(table.contains(&format!("[{}, +16)", args[0]["guest_offset"])), "{table}");
    // --n outside 0..=4096 is a usage error in both forms.
    assert_eq!(code(&demo(&["--json", "--n", "4097"])), 2);
}

#[test]
#[cfg(feature = "wasmtime")]
fn demo_on_wasmi_has_the_outcome_of_wasmtime() {
    // The same dry run on either runtime: exit 0, -1 NotAvailable, the same recorded argv.
    let json_on = |runtime: &[&str]| {
        let out = demo(&[&["--json", "--n", "300"], runtime].concat());
        assert_eq!(code(&out), 0, "{runtime:?}: {}", stderr(&out));
        serde_json::from_str::<serde_json::Value>(&stdout(&out)).unwrap()
    };
    let (default, wasmtime, wasmi) =
        (json_on(&[]), json_on(&["--runtime", "wasmtime"]), json_on(&["--runtime", "wasmi"]));
    assert_eq!(default, wasmi, "wasmi is the default");
    assert_eq!((wasmtime["runtime"].as_str(), wasmi["runtime"].as_str()), (Some("wasmtime"), Some("wasmi")));
    for json in [&wasmtime, &wasmi] {
        assert_eq!(json["outcome"]["result"], "dry_run", "{json}");
        assert_eq!(json["outcome"]["code"], -1, "{json}");
        assert_eq!(json["outcome"]["name"], "NotAvailable", "{json}");
        let args = json["launch"]["args"].as_array().unwrap();
        assert_eq!(args.len(), 4, "{json}");
        assert!(args[..3].iter().all(|a| a["type"] == "ptr" && a["len"] == 1200), "{json}");
        assert_eq!(args[3]["value"], 300, "{json}");
    }
    for field in ["guest", "launcher", "launch", "outcome"] {
        assert_eq!(wasmtime[field], wasmi[field], "{field}");
    }

    // The table: only the runtime's name in the first line differs.
    let wasmtime = stdout(&demo(&["--n", "300", "--runtime", "wasmtime"]));
    let wasmi = stdout(&demo(&["--n", "300"]));
    let (first, rest) = wasmi.split_once('\n').unwrap();
    assert!(
        first.starts_with("kargs-demo: the bundled vector_add guest (") && first.ends_with(") on wasmi"),
        "{first}"
    );
    assert_eq!(
        wasmtime.split_once('\n').unwrap(),
        (first.replace(" on wasmi", " on wasmtime").as_str(), rest)
    );
}

#[test]
#[cfg(not(feature = "wasmtime"))]
fn demo_without_the_wasmtime_feature_runs_on_wasmi_and_names_the_feature() {
    let out = demo(&["--json", "--n", "4"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("\"runtime\":\"wasmi\""), "{}", stdout(&out));
    let out = demo(&["--runtime", "wasmtime"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("it needs the `wasmtime` feature"), "{}", stderr(&out));
}

#[test]
fn demo_runtimes_are_named() {
    // Anything else is a usage error that names the choices.
    let out = demo(&["--runtime", "wasm3"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("[possible values: wasmi, wasmtime]"), "{}", stderr(&out));
    assert!(stdout(&demo(&["--help"])).contains("--runtime <RUNTIME>"));
}
