//! Placeholder while the crate is built.
