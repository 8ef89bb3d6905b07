//! Preflight: prove the machine is the machine before anything runs.
//!
//! A probe gathers [`facts::NodeFacts`] (read-only: nothing here changes a
//! GPU setting); [`checks::run_checks`] judges them bottom-up along the
//! contract chain — kernel driver, device mask, CUDA init, CUDA version,
//! libraries, NVML power, fabric, foreign processes, clock-event reasons,
//! power limit, ECC and row remapping, persistence and MIG, topology, clocks
//! and temperatures, power smoothing (recorded) — and names the lowest broken contract, because
//! everything above it is a consequence, not a clue. The facts are plain
//! data, so every failure the seeds describe is tested with a faked system.

pub mod checks;
pub mod diff;
pub mod facts;
pub mod probe;
pub mod report;

pub use checks::{Check, HealthReport, Status, run_checks};
pub use facts::NodeFacts;
