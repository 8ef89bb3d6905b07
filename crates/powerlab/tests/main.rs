//! The crate's integration tests, built as one test binary (as ripgrep
//! does): its dependencies are linked once, not once per file. Each module
//! is one file of `tests/`; `cargo test --test main MODULE::` runs one.

mod util;

mod argument_limits;
mod baselines;
mod cli;
mod collation_safety;
mod compare;
mod consent;
mod containment;
mod damaged_raw;
mod edges;
mod edited_event_logs;
mod faults;
mod fuzz_damaged;
mod grid_system_predict;
mod grid_truth;
mod lifecycle_predict;
mod lifecycle_truth;
mod metrics;
mod mitigation_truth;
mod nccl;
mod node_power;
mod node_truth;
mod output_targets;
mod per_gpu;
mod pipeline;
mod predict;
mod predict_truth;
// Rack runs under mpirun: built only with `--features mpi`.
#[cfg(feature = "mpi")]
mod rack;
mod ramp_up;
mod readme_flow;
mod recording;
mod recording_faults;
mod regression;
mod sensor;
mod sensor_models;
mod shipped_campaigns;
// Rack runs under real Slurm (sbatch, srun, scancel, time limits): built
// with `--features mpi`, run by scripts/ci/ci-slurm.sh (skipped elsewhere).
#[cfg(feature = "mpi")]
mod slurm;
mod soak;
mod stale_outputs;
mod tampered_run_dirs;
mod workload_faults;
mod workload_predict;
mod workload_truth;
