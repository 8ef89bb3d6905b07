//! The simulated node: GPUs whose power follows a physical model (first-order
//! rise and fall, overshoot on rising edges clamped by a two-loop power
//! controller, thermal drift, cold-start delay) and instruments that see it
//! the way NVML does on an H200 (driver-buffered samples on each GPU's own
//! exact 20 ms grid, each a ~6 ms average, with jitter and node-wide
//! dropped readings; an instant field refreshed every 100 ms from a ~25 ms
//! window; a 1 s average; an energy counter). It keeps the true waveform beside what the instruments report,
//! so tests can compare the two. Deterministic for a given seed, and driven
//! by tokio time: under a paused runtime a four-hour campaign runs in
//! seconds. It is only ever used when asked for (`--backend sim`).
//!
//! It also replays a recording of real GPUs ([`replay`]: the readings
//! `powerlab observe --csv` took) as a node whose GPUs run nothing, so that
//! a recording becomes a run directory like any other (`powerlab import`).

pub mod backend;
pub mod board;
pub mod clocking;
pub mod collectives;
pub mod device;
pub mod faults;
pub mod gpu;
pub mod profile;
pub mod replay;

pub use backend::{SimBackend, SimOptions};
pub use device::{DeviceSetup, SimDevice, Truth};
pub use faults::{FaultPlan, GpuFaults};
pub use profile::Profile;
pub use replay::{Recording, ReplayBackend};
