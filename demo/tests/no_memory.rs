//! A module that imports `wasi_cuda_launch` but exports no memory gets an ABI code, not a
//! trap, on wasmtime and on wasmi: through each binding's `add_to_linker`, as
//! `GuestModule::instantiate` registers it.

use kernel_args::{AbiError, Detail, DryRunLauncher, LaunchHost};
use kernel_args::{IMPORT_MODULE, LAUNCH_IMPORT};
use kernel_args_demo::guest::{Guest, GuestModule, Runtime, demo_dry_run};
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

fn guest_without_memory(
    runtime: Runtime,
    host: LaunchHost<DryRunLauncher>,
) -> Box<dyn Guest<DryRunLauncher>> {
    let module = GuestModule::new(runtime, &module_without_memory()).unwrap_or_else(|e| panic!("{e}"));
    module.instantiate(host).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn no_exported_memory_is_an_invalid_pointer() {
    for &runtime in Runtime::ALL {
        let mut guest = guest_without_memory(runtime, LaunchHost::new(demo_dry_run()));
        assert!(guest.memory().is_empty(), "{runtime}");
        assert_eq!(guest.call0("go").unwrap(), AbiError::InvalidPointer.code(), "{runtime}");
        assert_eq!(guest.host().last_error().unwrap().detail(), &Detail::NoExportedMemory, "{runtime}");
        assert!(guest.host().last_launch().is_none(), "{runtime}");
        assert_eq!(guest.host().launcher().launches(), 0, "{runtime}");
    }
}

#[test]
fn a_disabled_capability_is_not_available_even_without_memory() {
    for &runtime in Runtime::ALL {
        let mut host = LaunchHost::new(demo_dry_run());
        host.set_enabled(false);
        let mut guest = guest_without_memory(runtime, host);
        assert_eq!(guest.call0("go").unwrap(), AbiError::NotAvailable.code(), "{runtime}");
        assert_eq!(guest.host().last_error().unwrap().detail(), &Detail::CapabilityDisabled, "{runtime}");
        assert!(guest.host().last_launch().is_none(), "{runtime}");
        assert_eq!(guest.host().launcher().launches(), 0, "{runtime}");
        // Enabled again, the same guest is answered as above.
        guest.host_mut().set_enabled(true);
        assert_eq!(guest.call0("go").unwrap(), AbiError::InvalidPointer.code(), "{runtime}");
        assert_eq!(guest.host().last_error().unwrap().detail(), &Detail::NoExportedMemory, "{runtime}");
    }
}
