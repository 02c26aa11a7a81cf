//! Empty: this package exists only to pin and fetch wasm3-sys, whose C sources
//! scripts/wasm3-example.sh compiles (see Cargo.toml). Never built.
