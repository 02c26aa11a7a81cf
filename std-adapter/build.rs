//! Builds the demo guest (`guest/`, a `no_std` crate outside the workspace) for
//! `wasm32-unknown-unknown` when the `demo-guest` feature is on, so that `cargo test` on a
//! fresh checkout needs no manual step. The module lands in `OUT_DIR` and is bundled by
//! `src/guest.rs` with `include_bytes!`.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

const GUEST_TARGET: &str = "wasm32-unknown-unknown";
const GUEST_ARTIFACT: &str = "kernel_args_demo_guest.wasm";

/// Variables a nested cargo must not inherit: they describe the outer build (its flags, its
/// target, its target directory, clippy as a wrapper) and would leak into the guest's.
const OUTER_BUILD_ENV: &[&str] = &[
    "CARGO_ENCODED_RUSTFLAGS",
    "RUSTFLAGS",
    "CARGO_BUILD_RUSTFLAGS",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_TARGET_DIR",
    "CARGO_BUILD_TARGET",
    "RUSTC_WORKSPACE_WRAPPER",
];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if env::var_os("CARGO_FEATURE_DEMO_GUEST").is_none() {
        return;
    }
    let manifest_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let guest = manifest_dir.join("guest");
    let core = manifest_dir.join("..").join("core");
    for watched in [guest.join("Cargo.toml"), guest.join("src"), core.join("Cargo.toml"), core.join("src")] {
        println!("cargo:rerun-if-changed={}", watched.display());
    }

    let target_dir = out_dir.join("guest-target");
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .args(["build", "--release", "--target", GUEST_TARGET, "--manifest-path"])
        .arg(guest.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir);
    for var in OUTER_BUILD_ENV {
        command.env_remove(var);
    }
    let status = command.status().unwrap_or_else(|e| panic!("could not run cargo for the demo guest: {e}"));
    assert!(
        status.success(),
        "building the demo guest failed ({status}); it needs the {GUEST_TARGET} target \
         (rust-toolchain.toml lists it; `rustup target add {GUEST_TARGET}`), or build without \
         the `demo-guest` feature"
    );
    let built = target_dir.join(GUEST_TARGET).join("release").join(GUEST_ARTIFACT);
    copy(&built, &out_dir.join(GUEST_ARTIFACT));
}

fn copy(from: &Path, to: &Path) {
    std::fs::copy(from, to)
        .unwrap_or_else(|e| panic!("copying the demo guest {} to {}: {e}", from.display(), to.display()));
}
