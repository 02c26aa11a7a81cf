//! `wit/wasi-cuda.wit` and this crate agree: the WIT parses, its `abi-error` cases are
//! `AbiError::ALL` name for name (kebab-case against CamelCase) and in order, and `launch`
//! has the agreed signature.
// Test code may unwrap, index and panic: a panic here is a failing test, not a broken contract.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use kernel_args::AbiError;
#[cfg(feature = "wasmtime")]
use kernel_args::IMPORT_MODULE;
use wit_parser::{Resolve, Type, TypeDefKind};

const WIT_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/wit/wasi-cuda.wit");

fn resolve() -> (Resolve, wit_parser::InterfaceId) {
    let source = std::fs::read_to_string(WIT_PATH).expect("wit/wasi-cuda.wit is readable");
    let mut resolve = Resolve::new();
    let package = resolve.push_source(WIT_PATH, &source).expect("wit/wasi-cuda.wit parses");
    let host = resolve.packages[package].interfaces["host"];
    (resolve, host)
}

/// `InvalidArgs` → `invalid-args`.
fn kebab(camel: &str) -> String {
    let mut out = String::new();
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('-');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn kebab_case_conversion() {
    assert_eq!(kebab("KernelArgsUnsupported"), "kernel-args-unsupported");
    assert_eq!(kebab("Internal"), "internal");
}

#[test]
fn abi_error_cases_match_the_table_in_order() {
    let (resolve, host) = resolve();
    let ty = resolve.interfaces[host].types["abi-error"];
    let TypeDefKind::Enum(abi_error) = &resolve.types[ty].kind else { panic!("abi-error is not an enum") };
    let wit: Vec<&str> = abi_error.cases.iter().map(|case| case.name.as_str()).collect();
    let rust: Vec<String> = AbiError::ALL.iter().map(|e| kebab(e.name())).collect();
    assert_eq!(wit, rust);
    // Case i is code -(i + 1), as the WIT's docs say, and each case's doc names its code.
    for (i, (case, e)) in abi_error.cases.iter().zip(AbiError::ALL).enumerate() {
        assert_eq!(e.code(), -(i as i32) - 1);
        let docs = case.docs.contents.as_deref().unwrap_or_default();
        assert!(docs.starts_with(&format!("{}:", e.code())), "{}: docs {docs:?}", case.name);
    }
}

#[test]
fn launch_has_the_agreed_signature() {
    let (resolve, host) = resolve();
    let launch = &resolve.interfaces[host].functions["launch"];
    let params: Vec<&str> = launch.params.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(params, ["kernel-id", "grid", "block", "shared-mem-bytes", "args"]);
    assert_eq!(launch.params[0].ty, Type::S64);
    assert_eq!(launch.params[3].ty, Type::U32);
    let Type::Id(args) = launch.params[4].ty else { panic!("args is not a list") };
    assert_eq!(resolve.types[args].kind, TypeDefKind::List(Type::U8));
    let Some(Type::Id(result)) = launch.result else { panic!("launch returns nothing") };
    let TypeDefKind::Result(result) = &resolve.types[result].kind else {
        panic!("launch does not return a result")
    };
    assert_eq!(result.ok, None);
    let abi_error = resolve.interfaces[host].types["abi-error"];
    assert_eq!(result.err, Some(Type::Id(abi_error)));
}

#[cfg(feature = "wasmtime")]
#[test]
fn the_import_module_is_the_wit_interface() {
    let (resolve, host) = resolve();
    assert_eq!(resolve.id_of(host).as_deref(), Some(IMPORT_MODULE));
}
