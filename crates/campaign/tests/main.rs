//! The crate's integration tests, built as one test binary (as ripgrep
//! does): its dependencies are linked once, not once per file. Each module
//! is one file of `tests/`; `cargo test --test main MODULE::` runs one.

mod fuzz;
mod node_power;
mod parse_errors;
mod schedule;
mod smoothing;
