//! A module that imports `wasi_cuda_launch` but exports no memory gets an ABI code, not a trap.
#![cfg(feature = "wasmtime")]

use kernel_args::wasmtime_host::add_to_linker;
use kernel_args::{IMPORT_MODULE, LAUNCH_IMPORT};
use kernel_args::{AbiError, Detail, DryRunLauncher, LaunchHost};
use wasm_encoder::{
    CodeSection, EntityType, ExportKind, ExportSection, Function, FunctionSection, ImportSection, Module,
    TypeSection, ValType,
};

/// `(module (import "wasi:cuda/host@0.2.0" "wasi_cuda_launch" (func ...))
///          (func (export "go") (result i32) (call 0 (i64.const 1) (i32.const 1) ×6 (i32.const 0) ×3)))`
fn module_without_memory() -> Vec<u8> {
    let mut types = TypeSection::new();
    let launch_params = [[ValType::I64].as_slice(), &[ValType::I32; 9]].concat();
    types.ty().function(launch_params, [ValType::I32]);
    types.ty().function([], [ValType::I32]);
    let mut imports = ImportSection::new();
    imports.import(IMPORT_MODULE, LAUNCH_IMPORT, EntityType::Function(0));
    let mut functions = FunctionSection::new();
    functions.function(1);
    let mut exports = ExportSection::new();
    exports.export("go", ExportKind::Func, 1);
    let mut go = Function::new([]);
    let mut body = go.instructions();
    body.i64_const(1);
    for _ in 0..6 {
        body.i32_const(1);
    }
    for _ in 0..3 {
        body.i32_const(0);
    }
    body.call(0).end();
    let mut code = CodeSection::new();
    code.function(&go);

    let mut module = Module::new();
    module.section(&types).section(&imports).section(&functions).section(&exports).section(&code);
    module.finish()
}

#[test]
fn no_exported_memory_is_an_invalid_pointer() {
    let engine = wasmtime::Engine::default();
    let module = wasmtime::Module::new(&engine, module_without_memory()).unwrap();
    let mut linker = wasmtime::Linker::new(&engine);
    add_to_linker(&mut linker, |host: &mut LaunchHost<DryRunLauncher>| host).unwrap();
    let mut store = wasmtime::Store::new(&engine, LaunchHost::new(DryRunLauncher::new()));
    let instance = linker.instantiate(&mut store, &module).unwrap();
    let go = instance.get_typed_func::<(), i32>(&mut store, "go").unwrap();
    assert_eq!(go.call(&mut store, ()).unwrap(), AbiError::InvalidPointer.code());
    assert_eq!(store.data().last_error().unwrap().detail(), &Detail::NoExportedMemory);
    assert!(store.data().last_launch().is_none());
    assert_eq!(store.data().launcher().launches(), 0);
}
