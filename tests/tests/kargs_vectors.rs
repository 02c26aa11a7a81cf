//! Every conformance vector through the `kargs` binary the workspace built
//! ([`kargs_binary`]: `cargo test --workspace` builds it):
//! `kargs decode --json --mem-len N HEX` must print the vector's answer as one JSON object
//! and exit 0 (accepted) or 1 (rejected).

use std::process::Command;

use kernel_args_conformance::vectors::{Expect, Vector, argv_vectors};
use kernel_args_testkit::kargs::kargs_binary;
use serde_json::{Value, json};

fn decode_json(v: &Vector) -> (i32, Value) {
    let out = Command::new(kargs_binary())
        .args(["decode", "--json", "--mem-len", &v.mem_len.to_string(), &v.compact_hex()])
        .output()
        .unwrap();
    assert!(out.stderr.is_empty(), "vector {}: stderr {}", v.name, String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1, "vector {}: one line of JSON", v.name);
    (out.status.code().unwrap(), serde_json::from_str(&stdout).unwrap())
}

#[test]
fn every_vector_through_kargs_decode_json() {
    let file = argv_vectors().unwrap();
    for v in &file.vectors {
        let (status, mut got) = decode_json(v);
        match &v.expect {
            Expect::Args(args) => {
                assert_eq!(status, 0, "vector {}", v.name);
                assert_eq!(got, json!({ "ok": true, "args": args }), "vector {}", v.name);
            }
            Expect::Error(error) => {
                assert_eq!(status, 1, "vector {}", v.name);
                // The message is for people and not part of the vectors; it must be there.
                let message = got["error"].as_object_mut().unwrap().remove("message");
                let message = message.as_ref().and_then(Value::as_str).unwrap_or_default();
                assert!(!message.is_empty(), "vector {}: a message", v.name);
                assert_eq!(got, json!({ "ok": false, "error": error }), "vector {}", v.name);
            }
        }
    }
}

#[test]
fn spaced_hex_from_the_vectors_is_accepted_as_is() {
    // The vectors space their records; the CLI ignores whitespace, so the raw field works too.
    let file = argv_vectors().unwrap();
    let v = file.vectors.iter().find(|v| v.name == "one_of_each_type").unwrap();
    let spaced = Command::new(kargs_binary()).args(["decode", "--json", &v.hex]).output().unwrap();
    let (_, compact) = decode_json(v);
    assert_eq!(serde_json::from_slice::<Value>(&spaced.stdout).unwrap(), compact);
}
