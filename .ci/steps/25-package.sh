#!/usr/bin/env bash
# The published crates (kernel-args-core, kernel-args-ptx, kernel-args, kernel-args-cuda,
# kernel-args-cli) as a
# registry would get them:
#
# 1. `cargo package` for all five together (each path dependency between them resolves to the
#    package just made, as it would on the registry), verified: each package is unpacked and
#    built on its own, from its own files only. The verification builds without default
#    features, because with them kernel-args and the CLI would build wasmtime once more (a
#    package is verified outside the workspace, so its dependencies' features differ from
#    10-test's and wasmtime's whole tree would be compiled again: 1.5 minutes on 2 cores);
# 2. the same packages with the features the workspace turns on (wasmtime, the bundled guest):
#    built from the unpacked packages, put in place of their crates in a copy of the workspace,
#    so that every dependency is resolved with exactly the features and profile of 10-test's
#    `cargo test --workspace` and is already built in the shared target directory (no second
#    wasmtime build: checked by comparing cargo's unit graphs);
# 3. the docs, warnings denied: the workspace, kernel-args-cuda with its `cuda` feature
#    (against the link stub, like 40-cuda.sh), and kernel-args under each dependency line the
#    README gives a kind of host;
# 4. the demo guest's committed module (std-adapter/kernel_args_demo_guest.wasm) is exactly
#    what std-adapter/guest/ builds (scripts/build-guest.sh --check).
#
# Packaging must print no warning: every test and benchmark of a published crate is in its
# package and needs only its package's files and published crates; those that need the
# workspace (the emulated driver, the test kit, the docs) are in unpublished crates (perf/,
# integration/, tests/).
# --allow-dirty: the step checks the tree as it is, committed or not.
set -euo pipefail
cd "$(dirname "$0")/../.."
target="${CARGO_TARGET_DIR:-target}"
published=(kernel-args-core kernel-args-ptx kernel-args kernel-args-cuda kernel-args-cli)
# Directory of each published crate in the workspace, in the same order.
dirs=(core ptx std-adapter cuda-backend cli)
pkgid="$(cargo pkgid -p kernel-args-core)"
version="${pkgid##*[@#]}"

# 1. Package and verify (no default features).
# Cargo verifies through a local registry (package/tmp-registry in its target directory) and
# unpacks each package into $CARGO_HOME/registry/src/-<hash of that path>/<name>-<version>/,
# which it never unpacks again once there: a package of the same version made earlier from other
# sources (an earlier commit, in the same directory) would be built in place of this one. Remove
# those, and verify in a target directory of its own, made afresh (cargo rebuilds a registry
# package by its name and version, not by its content).
home="${CARGO_HOME:-$HOME/.cargo}"
for crate in "${published[@]}"; do rm -rf "$home"/registry/src/-*/"$crate-$version"; done
verify_target="$target/package-verify"
rm -rf "$verify_target"
select=()
for crate in "${published[@]}"; do select+=(-p "$crate"); done
mkdir -p "$target"
CARGO_TARGET_DIR="$verify_target" cargo package "${select[@]}" --allow-dirty --no-default-features 2>&1 \
    | tee "$target/package.log"
if grep -q '^warning' "$target/package.log"; then
    echo "error: cargo package warned (above)" >&2
    exit 1
fi

# 2. The packages with their default features, in a copy of the workspace.
copy="$target/package-check"
rm -rf "$copy"
mkdir -p "$copy"
git ls-files -z --cached --others --exclude-standard -- . ':(exclude)fuzz' \
    | while IFS= read -r -d '' file; do if [ -e "$file" ]; then printf '%s\0' "$file"; fi; done \
    | tar --null -T - -cf - | tar -xf - -C "$copy"
patches=()
for i in "${!published[@]}"; do
    crate="${published[$i]}"
    dir="$copy/${dirs[$i]}"
    rm -rf "$dir"
    mkdir -p "$dir"
    tar -xzf "$verify_target/package/$crate-$version.crate" -C "$dir" --strip-components=1
    # A package's dependencies on the others are registry dependencies now: point them at the
    # unpacked packages (nothing depends on the CLI).
    if [ "$crate" != kernel-args-cli ]; then
        patches+=(--config "patch.crates-io.$crate.path=\"${dirs[$i]}\"")
    fi
done
# Every member's libraries and binaries with their default features, as `cargo test` builds
# them (its profile and, through an empty example in a test-only member of the copy, with the
# dev-dependencies on): every dependency is then the very unit 10-test built.
mkdir -p "$copy/tests/examples"
printf '//! Empty (25-package.sh).\nfn main() {}\n' > "$copy/tests/examples/package_check.rs"
# Absolute, so that it is the same target directory as 10-test's from inside the copy.
abs_target="$(cd "$target" && pwd)"
# The published crates' tests too, from their packages' files and with the dev-dependencies
# their manifests keep (cargo drops path-only ones): a test that needs the workspace fails here.
(cd "$copy" && CARGO_TARGET_DIR="$abs_target" cargo test --workspace --no-run --lib --bins --tests \
    --example package_check "${patches[@]}")
rm -rf "$copy"

# 3. Docs, warnings denied. --examples (with --lib --bins, the default) turns the
# dev-dependencies on, so the dependencies are checked with the features of 10-test's clippy,
# which has checked them already.
# The CLI's binary `kargs` and the C API's library `kargs` write the same directory
# (target/doc/kargs/), so documenting both in one run races; the binary gets its own run after.
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --lib --examples
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --bins --exclude kernel-args-capi
eval "$(scripts/cuda-link-stub.sh)"
RUSTDOCFLAGS="-D warnings" cargo doc -p kernel-args-cuda --features cuda --no-deps
# kernel-args as each README dependency line builds it: the defaults (std, no runtime), a wasmi
# host with std, a no_std firmware host. The wasmtime line is in the workspace's features,
# documented above; documenting it alone would check wasmtime's whole tree a second time.
for features in "" "--features wasmi" "--no-default-features --features wasmi"; do
    # shellcheck disable=SC2086 # the features are words
    RUSTDOCFLAGS="-D warnings" cargo doc -p kernel-args --no-deps $features
done

# 4. The committed demo guest is what its source builds.
scripts/build-guest.sh --check
