//! The hardware seams. A backend opens a node and hands the runner one
//! [`Gpu`] (runs load on an absolute schedule) and one [`PowerSource`]
//! (yields samples) per selected device. Implementations: the simulated
//! node (`powerlab-sim`) and real CUDA/NVML (`powerlab-cuda`, `powerlab-nvml`).

use crate::sample::Sample;
use crate::shape::{EdgeKind, LoadShape};
use crate::units::{EpochNs, fraction_to_ppm_f64};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// The highest enforced power limit any GPU has, W (the largest boards
/// today are limited to 1.4 kW). A `power_limit_w` above it is a file in
/// another unit (NVML's own is mW), never a GPU: without this bound a
/// recording in mW, its limit in mW too, read its samples as watts under
/// a ceiling scaled by its own limit (480 kW a GPU).
pub const MAX_GPU_LIMIT_W: f64 = 2000.0;

/// A GPU as the run knows it. `uuid` is the identity that links CUDA and
/// NVML; `key` is the run-local short name used in raw files (`gpu0`, …),
/// mapped to the UUID in the manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuIdentity {
    /// Run-local key (`gpu0`, `gpu1`, … in selection order).
    pub key: String,
    /// NVML/CUDA UUID (`GPU-…`).
    pub uuid: String,
    /// Marketing name (`NVIDIA H200`).
    pub name: String,
    /// Physical NVML index on the host (not the CUDA ordinal).
    pub nvml_index: u32,
    /// Enforced power limit at open time, watts.
    pub power_limit_w: f64,
    /// Power smoothing at open time (read, never set); `not_recorded` in
    /// manifests written before it was read.
    #[serde(default)]
    pub power_smoothing: crate::smoothing_state::PowerSmoothing,
}

/// Errors from hardware (real or simulated).
#[derive(Debug, Clone, thiserror::Error, Serialize, Deserialize, PartialEq)]
pub enum HwError {
    /// A required library or capability is missing on this node.
    #[error("{what} is not available on this node: {detail}. Fix: {fix}")]
    Missing {
        /// What is missing (e.g. "NCCL (libnccl)").
        what: String,
        /// What was searched or tried.
        detail: String,
        /// What the user should do.
        fix: String,
    },
    /// A device failed (CUDA error, Xid, vanished).
    #[error("GPU {gpu} failed: {detail}")]
    DeviceFailed {
        /// UUID or key of the GPU.
        gpu: String,
        /// What happened, with the evidence.
        detail: String,
    },
    /// A transient read error (retried by the sampler).
    #[error("transient read error on GPU {gpu}: {detail}")]
    Transient {
        /// UUID or key of the GPU.
        gpu: String,
        /// What failed.
        detail: String,
    },
    /// Anything else the backend reports.
    #[error("{0}")]
    Other(String),
}

/// What a GPU reports once warm and holding keep-warm load.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct Readiness {
    /// When it became ready.
    pub ready_at_ns: EpochNs,
    /// Measured time from receiving a schedule to being able to act on its
    /// first deadline. The barrier lead is derived from the slowest of these.
    pub arm_latency_ns: i64,
    /// Offset of the device clock (`%globaltimer`) against the run clock, if
    /// measured (device − host).
    pub device_clock_offset_ns: Option<i64>,
    /// Whether the thread that feeds this GPU runs in the real-time class
    /// (ahead of ordinary processes on a busy host); None where there is no
    /// such thread.
    #[serde(default)]
    pub realtime_thread: Option<bool>,
}

/// One GPU's schedule for one rung: absolute window and shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuSchedule {
    /// Rung id within the run.
    pub rung_id: u32,
    /// Window start (the barrier epoch), run clock.
    pub start_ns: EpochNs,
    /// Window end, run clock.
    pub end_ns: EpochNs,
    /// What to draw.
    pub shape: LoadShape,
}

/// One achieved edge.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EdgeRecord {
    /// Position in the intended edge list.
    pub index: u32,
    /// Start, rise or fall.
    pub kind: EdgeKind,
    /// Intended time, run clock.
    pub intended_ns: EpochNs,
    /// Achieved time as the device recorded it, run clock.
    pub achieved_ns: EpochNs,
}

/// Where a GPU hands over the edges of the window it is running as they
/// are achieved, so that the run writes them to disk while the window
/// runs (a run killed mid-rung keeps them). Clones share one feed; the
/// runner gives each GPU its own ([`Gpu::set_edge_feed`]) and takes what
/// was handed over about every 250 ms.
#[derive(Debug, Clone, Default)]
pub struct EdgeFeed {
    handed: std::sync::Arc<std::sync::Mutex<Vec<(u32, EdgeRecord)>>>,
}

impl EdgeFeed {
    /// A feed with nothing handed over.
    pub fn new() -> EdgeFeed {
        EdgeFeed::default()
    }

    /// Hands over edges of rung `rung_id` that have been achieved (never
    /// one still to come), each once, in index order.
    pub fn push(&self, rung_id: u32, edges: &[EdgeRecord]) {
        let mut handed = self.handed.lock().unwrap_or_else(|p| p.into_inner());
        handed.extend(edges.iter().map(|e| (rung_id, *e)));
    }

    /// Takes every edge handed over since the last call, with its rung id.
    pub fn take(&self) -> Vec<(u32, EdgeRecord)> {
        std::mem::take(&mut *self.handed.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// The device clock's offset against the run clock, probed just before
/// and just after a rung (device − run, ns): achieved edges are converted
/// with the offset interpolated between the two, and its drift over the
/// rung is reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceClock {
    /// Run-clock time of the first probe.
    pub begin_ns: EpochNs,
    /// Offset at the first probe.
    pub offset_begin_ns: i64,
    /// Run-clock time of the second probe.
    pub end_ns: EpochNs,
    /// Offset at the second probe.
    pub offset_end_ns: i64,
    /// The longer of the two probes' round trips: each offset is known to
    /// about half of it.
    pub probe_rtt_ns: i64,
}

impl DeviceClock {
    /// Drift of the offset over the rung, µs per s (ppm).
    pub fn drift_ppm(&self) -> f64 {
        let span = (self.end_ns - self.begin_ns) as f64;
        if span <= 0.0 {
            0.0
        } else {
            fraction_to_ppm_f64((self.offset_end_ns - self.offset_begin_ns) as f64 / span)
        }
    }
}

/// What a GPU reports after a rung.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct RungOutcome {
    /// Every edge with its achieved time.
    pub edges: Vec<EdgeRecord>,
    /// Work done, for sanity (kernels or GEMMs completed; 0 if unknown).
    pub work_items: u64,
    /// Collective timings measured in the window (sweep and fabric rungs).
    pub collectives: Vec<crate::collective::CollectiveTiming>,
    /// The device clock's probes around the rung (None where the backend
    /// has no device clock of its own).
    #[serde(default)]
    pub clock: Option<DeviceClock>,
}

/// An event a power source observed (Xid, device lost, …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceEvent {
    /// When the event was seen (epoch ns).
    pub ts_ns: EpochNs,
    /// GPU key.
    pub gpu: String,
    /// Short kind (`xid`, `lost`, …).
    pub kind: String,
    /// The evidence, in words.
    pub detail: String,
    /// Whether the run must stop.
    pub fatal: bool,
}

/// A device that runs load on an absolute schedule.
///
/// Implementations must be cancel-safe: if the future returned by
/// [`Gpu::run`] is dropped, load stops no later than the next call to
/// [`Gpu::stop`], which the runner always makes.
#[async_trait]
pub trait Gpu: Send {
    /// Who this is.
    fn identity(&self) -> &GpuIdentity;
    /// Gets ready for the next rung: on first use compiles and allocates
    /// (cold start); then, with `warm_load`, runs that load for `warmup_ns`
    /// and keeps running it until the next `run` or `stop`, so waiting at
    /// the barrier never undoes the warm-up. With `None` (an idle rung) the
    /// GPU stays idle.
    ///
    /// # Errors
    ///
    /// Returns [`HwError::DeviceFailed`] if the device fails while compiling,
    /// allocating or running the warm-up load (a CUDA error, an Xid, a GPU
    /// that vanished), and [`HwError::Missing`] or [`HwError::Other`] if a
    /// library or kernel the load needs cannot be loaded or built.
    async fn prepare(
        &mut self,
        warmup_ns: i64,
        warm_load: Option<crate::shape::LoadKind>,
    ) -> Result<Readiness, HwError>;
    /// Executes the schedule, returning achieved edge times. Returns at the
    /// window end with the GPU idle.
    ///
    /// # Errors
    ///
    /// Returns [`HwError::DeviceFailed`] if the device fails during the
    /// window or a collective does not complete within its timeout, and [`HwError::Other`] if the schedule cannot be run at all
    /// (for instance `run` before `prepare`, or load that was stopped).
    async fn run(&mut self, schedule: &GpuSchedule) -> Result<RungOutcome, HwError>;
    /// Stops all load now (cooldown, abort). Must be safe to call at any time.
    ///
    /// # Errors
    ///
    /// Returns [`HwError::DeviceFailed`] if the device cannot be brought back
    /// to idle because it has failed; implementations should succeed on a
    /// GPU that is already idle.
    async fn stop(&mut self) -> Result<(), HwError>;
    /// The edges a window stopped before its end (an abort mid-rung)
    /// achieved before the stop, each once; empty when no window was cut
    /// short since the last call. Lets the run keep a stopped rung's edge
    /// log (the rest of its outcome is lost with the abandoned `run`).
    async fn stopped_edges(&mut self) -> Vec<EdgeRecord> {
        Vec::new()
    }
    /// Where to hand over each edge of a running window once achieved
    /// (see [`EdgeFeed`]); provisional: the window's outcome (or
    /// [`Gpu::stopped_edges`]) holds the final values. A backend that
    /// cannot tell before the window's end keeps the default, which hands
    /// over nothing: its edges reach disk at the window's end only.
    fn set_edge_feed(&mut self, _feed: EdgeFeed) {}
    /// What became of a workload's process on this GPU. A real GPU
    /// ignores it (the process itself draws, and the default answers
    /// `None`); the simulated node draws the simulated job's cold start,
    /// kill and exit, and answers a [`crate::job::JobEvent::Finish`] with
    /// the moment the job exits.
    ///
    /// # Errors
    ///
    /// Returns [`HwError::DeviceFailed`] if the device has failed.
    async fn job(&mut self, _event: crate::job::JobEvent) -> Result<Option<EpochNs>, HwError> {
        Ok(None)
    }
}

/// An instrument that yields every new sample since the last call.
pub trait PowerSource: Send {
    /// Who this measures.
    fn identity(&self) -> &GpuIdentity;
    /// Every buffered power sample since the last drain, each with its own
    /// timestamp.
    ///
    /// # Errors
    ///
    /// Returns [`HwError::Transient`] for a read that failed but may work
    /// next time (the sampler retries it), and [`HwError::DeviceFailed`] if
    /// the GPU is lost or its driver reports it gone.
    fn drain_buffered(&mut self, now_ns: EpochNs) -> Result<Vec<Sample>, HwError>;
    /// One read of the instant power field (timestamped with the read time).
    ///
    /// # Errors
    ///
    /// Returns [`HwError::Transient`] for a read that failed but may work
    /// next time, and [`HwError::DeviceFailed`] if the GPU is lost.
    fn read_instant(&mut self, now_ns: EpochNs) -> Result<Sample, HwError>;
    /// One read of the slower fields that update every ~100 ms: the 1 s
    /// average and the energy counter.
    ///
    /// # Errors
    ///
    /// Returns [`HwError::Transient`] for a read that failed but may work
    /// next time, and [`HwError::DeviceFailed`] if the GPU is lost.
    fn read_fields(&mut self, now_ns: EpochNs) -> Result<Vec<Sample>, HwError>;
    /// One read of the slower status instruments (clocks, temperatures,
    /// clock-event reasons, enforced limit).
    ///
    /// # Errors
    ///
    /// Returns [`HwError::Transient`] for a read that failed but may work
    /// next time, and [`HwError::DeviceFailed`] if the GPU is lost.
    fn read_status(&mut self, now_ns: EpochNs) -> Result<Vec<Sample>, HwError>;
    /// Events seen since the last call (Xid, device lost).
    fn drain_events(&mut self, now_ns: EpochNs) -> Vec<DeviceEvent>;
    /// What each kind of instrument read has cost so far (for `observe`).
    fn call_costs(&self) -> Vec<CallCost> {
        Vec::new()
    }
    /// Buffered readings dropped as the previous one handed again under a
    /// later timestamp (NVML's driver does that, rarely).
    fn repeats_dropped(&self) -> u64 {
        0
    }
}

/// The accumulated wall time of one kind of instrument read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallCost {
    /// Which read (e.g. `nvmlDeviceGetSamples`).
    pub call: String,
    /// How many times it ran.
    pub count: u64,
    /// Total wall time inside it, ns.
    pub total_ns: u64,
}

/// Whether a capability is present, and if not why and how to fix it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Capability {
    /// Present, with a version or description.
    Present(String),
    /// Absent: the error to show.
    Absent(HwError),
}

/// Static facts about the opened node.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BackendInfo {
    /// `sim` or `cuda`.
    pub backend: String,
    /// Node id written on every raw row (host name, or sim node name).
    pub node_id: String,
    /// Host name.
    pub host: String,
    /// Selected GPUs, in run order.
    pub gpus: Vec<GpuIdentity>,
    /// Driver / profile description.
    pub driver: String,
    /// NCCL availability.
    pub nccl: Capability,
}

/// What an opened node hands the runner.
pub struct NodeHandles {
    /// Facts for the manifest.
    pub info: BackendInfo,
    /// One load driver per selected GPU, same order as `info.gpus`.
    pub gpus: Vec<Box<dyn Gpu>>,
    /// One instrument per selected GPU, same order as `info.gpus`.
    pub sources: Vec<Box<dyn PowerSource>>,
    /// Meters of the node's own power (the campaign's `[[node_power]]`
    /// sources); a backend opens none, the command line adds them.
    pub meters: Vec<Box<dyn crate::meter::NodeMeter>>,
}

/// A node backend (simulated or real).
pub trait Backend {
    /// Opens the node, selecting GPUs by the campaign's selector.
    ///
    /// # Errors
    ///
    /// Returns [`HwError::Other`] if the selector names a GPU the node does
    /// not have (an index out of range, an unknown UUID) or if the driver or
    /// management library cannot be initialized, and [`HwError::Missing`] if
    /// a required library is absent. A missing optional capability such as
    /// NCCL is not an error: it is reported in [`BackendInfo::nccl`].
    fn open(&mut self) -> Result<NodeHandles, HwError>;
}
