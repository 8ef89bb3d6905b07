//! The real node through NVML: GPU discovery by UUID (honouring
//! `CUDA_VISIBLE_DEVICES`), the power sampler (driver-buffered samples,
//! instant and average fields, energy, clocks, temperatures, clock-event
//! reasons, Xid events), the power-smoothing state, and the read-only health checks behind `preflight`.
//! NVML is loaded at run time; a machine without the driver gets an error
//! that says so, never a silent fallback to simulated numbers. Nothing here
//! changes a GPU setting.

pub mod load;
pub mod smoothing;
pub mod source;
pub mod xid;

pub use load::{NvmlError, init_nvml};
pub use smoothing::read_power_smoothing;
pub use source::NvmlSource;
