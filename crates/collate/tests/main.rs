//! The crate's integration tests, built as one test binary (as ripgrep
//! does): its dependencies are linked once, not once per file. Each module
//! is one file of `tests/`; `cargo test --test main MODULE::` runs one.
//!
//! proptest keeps a module's saved failure cases (when persistence is on) in
//! `proptest-regressions/MODULE.txt` beside `tests/`: the directory holding
//! `main.rs` is taken as the source root.

mod common;

mod composed;
mod fuzz_raw;
mod properties;
mod readme;
mod report_docs;
