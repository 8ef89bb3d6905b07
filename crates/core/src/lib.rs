//! The shared vocabulary of gpu-power-lab: units, the one run clock, load
//! shapes and their edges, instrument samples, and the two hardware seams
//! (`Gpu`, a device that runs load on an absolute schedule, and
//! `PowerSource`, an instrument that yields timestamped samples), and the
//! node's own power meter (`NodeMeter`: a BMC, IPMI or a PDU). Every
//! backend — the simulated node and the real CUDA/NVML one — implements these
//! traits, so the runner and the collator never know which one they drive.
//! Nothing here talks to hardware or touches the filesystem.

pub mod clock;
pub mod collective;
pub mod hw;
pub mod job;
pub mod kind;
pub mod meter;
pub mod sample;
pub mod select;
pub mod shape;
pub mod smoothing;
pub mod smoothing_state;
pub mod training;
pub mod units;
pub mod words;

pub use clock::RunClock;
pub use collective::{Collective, CollectiveTiming, FabricSpec, SweepSpec};
pub use hw::{
    Backend, BackendInfo, Capability, DeviceEvent, EdgeFeed, EdgeRecord, Gpu, GpuIdentity,
    GpuSchedule, HwError, NodeHandles, PowerSource, Readiness, RungOutcome,
};
pub use kind::{Mode, PhaseKind};
pub use meter::{MeterError, NodeMeter, NodeReading};
pub use sample::{Instrument, Sample};
pub use select::{GpuRef, GpuSelector};
pub use shape::LoadShape;
pub use smoothing_state::{PowerSmoothing, SmoothingProfile};
pub use units::{EpochNs, NS_PER_MS, NS_PER_S, NS_PER_US, Watts};
