//! The `kargs` binary this workspace built, for tests outside `kernel-args-cli`.
//!
//! Cargo hands a binary's path (`CARGO_BIN_EXE_kargs`) only to the integration tests of the
//! package that has it, and `kernel-args-cli` keeps out of its published package the tests that
//! need the workspace (the conformance vectors, the docs). Those tests live in unpublished
//! crates and find the binary where cargo puts it: `target/<profile>/kargs`, the directory above
//! their own executable's `deps/`. `cargo test --workspace` builds it in the same run.
//!
//! A binary older than any source file it is built from would test old code, so
//! [`kargs_binary`] refuses it and says how to build a fresh one.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::SystemTime;

/// The workspace's source directories that `kargs` is built from.
const SOURCES: [&str; 3] = ["cli/src", "core/src", "std-adapter/src"];

/// The path of the `kargs` binary next to the running test's `deps/` directory.
///
/// # Panics
///
/// Where there is none, or it is older than a file under `cli/src`, `core/src` or
/// `std-adapter/src` (it would test old code); the message says to run the
/// tests with `cargo test --workspace` or to build `kargs` first. Checked once per test process.
#[must_use]
pub fn kargs_binary() -> PathBuf {
    static CHECKED: OnceLock<PathBuf> = OnceLock::new();
    CHECKED.get_or_init(find_and_check).clone()
}

/// [`kargs_binary`]'s work: find the binary and check that it is not older than its sources.
fn find_and_check() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("the test's own path: {e}"));
    let profile = exe
        .parent()
        .and_then(Path::parent)
        .unwrap_or_else(|| panic!("{} has no profile directory", exe.display()));
    let binary = profile.join(format!("kargs{}", std::env::consts::EXE_SUFFIX));
    let fix = "run the tests with `cargo test --workspace` (which builds kargs), or build it first: \
               `cargo build -p kernel-args-cli`";
    let built = std::fs::metadata(&binary)
        .and_then(|m| m.modified())
        .unwrap_or_else(|e| panic!("no kargs binary at {} ({e}): {fix}", binary.display()));
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let root = root.canonicalize().unwrap_or(root);
    for dir in SOURCES {
        if let Some((newest, at)) = newest_file(&root.join(dir)) {
            assert!(
                newest <= built,
                "{} is older than {}: it would test old code; {fix}",
                binary.display(),
                at.display()
            );
        }
    }
    binary
}

/// The most recently modified file under `dir`, with its time.
fn newest_file(dir: &Path) -> Option<(SystemTime, PathBuf)> {
    let mut newest: Option<(SystemTime, PathBuf)> = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        let found = if path.is_dir() {
            newest_file(&path)
        } else {
            entry.metadata().and_then(|m| m.modified()).ok().map(|t| (t, path))
        };
        if let Some((time, path)) = found
            && newest.as_ref().is_none_or(|(t, _)| time > *t)
        {
            newest = Some((time, path));
        }
    }
    newest
}
