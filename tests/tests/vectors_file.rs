//! The committed vector file is the generated one, agrees with the specification model, and
//! covers what the conformance suite promises.
//!
//! After changing `src/generate.rs`, rewrite the file with
//! `UPDATE_VECTORS=1 cargo test -p kernel-args-conformance --test vectors_file`.

use std::collections::BTreeSet;

use kernel_args_conformance::generate::vector_file;
use kernel_args_conformance::vectors::{
    ARGV_JSON, ARGV_JSON_PATH, Expect, ExpectedValue, VectorFile, argv_vectors, to_pretty_json,
};
use kernel_args_testkit::model::TAGS;

fn committed() -> VectorFile {
    argv_vectors().unwrap_or_else(|e| panic!("{ARGV_JSON_PATH}: {e}"))
}

#[test]
fn committed_file_is_the_generated_one() {
    let generated = to_pretty_json(&vector_file()).unwrap();
    if std::env::var_os("UPDATE_VECTORS").is_some() {
        std::fs::write(ARGV_JSON_PATH, &generated).unwrap();
        return;
    }
    assert!(
        ARGV_JSON == generated,
        "{ARGV_JSON_PATH} differs from src/generate.rs; rewrite it with \
         UPDATE_VECTORS=1 cargo test -p kernel-args-conformance --test vectors_file"
    );
}

#[test]
fn every_vector_agrees_with_the_specification_model() {
    for v in committed().vectors {
        let bytes = v.bytes().unwrap();
        assert_eq!(v.expect, Expect::from_model(&bytes, v.mem_len), "vector {}", v.name);
    }
}

#[test]
fn vectors_cover_the_promised_cases() {
    let file = committed();
    assert!(file.vectors.len() >= 40, "only {} vectors", file.vectors.len());

    let kinds: BTreeSet<&str> = file
        .vectors
        .iter()
        .filter_map(|v| match &v.expect {
            Expect::Error(e) => Some(e.kind.as_str()),
            Expect::Args(_) => None,
        })
        .collect();
    let all_kinds =
        ["buffer_too_long", "too_many_records", "unknown_tag", "truncated_record", "window_out_of_bounds"];
    assert_eq!(kinds, all_kinds.into_iter().collect(), "every error kind");

    let types: BTreeSet<&str> = file
        .vectors
        .iter()
        .flat_map(|v| match &v.expect {
            Expect::Args(args) => args.iter().map(|a| type_name(&a.value)).collect(),
            Expect::Error(_) => Vec::new(),
        })
        .collect();
    assert_eq!(types, TAGS.iter().map(|t| t.name).collect(), "every type accepted somewhere");

    let lens: BTreeSet<usize> = file.vectors.iter().map(|v| v.bytes().unwrap().len()).collect();
    for len in [0, 640, 4096, 4097] {
        assert!(lens.contains(&len), "a {len}-byte vector");
    }
    let mems: BTreeSet<u64> = file.vectors.iter().map(|v| v.mem_len).collect();
    assert!(mems.contains(&0) && mems.contains(&(1 << 32)), "mem_len 0 and 4 GiB");

    let arg_counts: BTreeSet<usize> = file
        .vectors
        .iter()
        .filter_map(|v| match &v.expect {
            Expect::Args(args) => Some(args.len()),
            Expect::Error(_) => None,
        })
        .collect();
    assert!(arg_counts.contains(&128), "a vector exactly at the record cap");
}

fn type_name(v: &ExpectedValue) -> &'static str {
    match v {
        ExpectedValue::I32 { .. } => "i32",
        ExpectedValue::I64 { .. } => "i64",
        ExpectedValue::F32 { .. } => "f32",
        ExpectedValue::F64 { .. } => "f64",
        ExpectedValue::U32 { .. } => "u32",
        ExpectedValue::U64 { .. } => "u64",
        ExpectedValue::Ptr { .. } => "ptr",
    }
}
