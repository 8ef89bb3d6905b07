//! The run directory is the contract between the runner and the collator.
//!
//! `results/<campaign>-<UTC time>-<host>/` holds `manifest.json` (what ran,
//! where, on which GPUs by UUID, with which tool revision and clock),
//! `raw/<gpu>.csv` (append-only samples, every row with an absolute
//! timestamp and node id, flushed at least every second), `events.jsonl`
//! (rungs, barriers, faults), `edges.csv` (intended vs achieved edges) and,
//! for NCCL phases, `collectives.csv` (timed collectives per GPU); the
//! `node_power/<source>.csv` holds the node's own power meters' readings
//! (BMC, IPMI, PDU) with send and answer times; the
//! other files (health captures, sensor model, simulated truth, rack file)
//! are named in [`files`].
//! Everything under `report/` is derived and can be deleted and regenerated
//! from the rest by `powerlab collate`. This crate owns those formats:
//! writers for the runner, readers for the collator. A run directory is
//! never written into twice.

pub mod collectives;
pub mod edges;
pub mod events;
pub mod files;
pub mod layout;
pub mod lifecycle;
pub mod lock;
pub mod manifest;
pub mod node_power;
pub mod notes;
pub mod raw;
pub mod smoothing;
pub mod summary;

pub use collectives::{CollectiveRow, CollectiveWriter};
pub use edges::{EdgeRow, EdgeWriter, read_rows};
pub use events::{EventLog, GpuReady, Mode, PhaseKind, RunEvent, RungInfo, WorkloadInfo};
pub use files::{CompareFile, PlotFile, ReportFile, RunFile};
pub use layout::{RunDir, RunDirError, write_json, write_sim_truth};
pub use lifecycle::{LIFECYCLE_TOPIC, LifecycleEvent, LifecycleNote, lifecycle_notes};
pub use manifest::{FORMAT_VERSION, FileSum, Manifest, RunStatus, ToolInfo};
pub use node_power::{NodePowerRow, NodePowerWriter};
pub use raw::{IndexFile, IndexOwner, RawIndex, RawRow, RawWriter, read_index_file};
pub use smoothing::{
    CalibrationOutcome, FloorTrial, GpuSmoothingNote, SmoothingNote, smoothing_notes,
};
