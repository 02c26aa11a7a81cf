//! Empty: this package exists only to pin and fetch wamrx-sys, whose WAMR sources
//! scripts/wamr-example.sh builds (see Cargo.toml). Never built.
