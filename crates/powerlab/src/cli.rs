//! Command-line arguments.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Measure how hard and how fast a node of GPUs can swing its power draw.
#[derive(Parser, Debug)]
#[command(name = "powerlab", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Check a campaign file; errors name file, line, column and field.
    Validate(ValidateArgs),
    /// Print the expanded schedule (every rung, repeat, offset) and total duration.
    Plan(PlanArgs),
    /// Run a campaign (real GPUs unless `--backend sim`).
    Run(RunArgs),
    /// Regenerate every summary, report and plot of a run directory from its raw files.
    Collate(CollateArgs),
    /// Show live per-GPU and node power (NVML) without running any load.
    Observe(ObserveArgs),
    /// Measure every NVML power path of every GPU (update period, window,
    /// latency) and write sensor.json; takes the options of `run`.
    Calibrate(CalibrateArgs),
    /// Prove the machine is the machine: read-only health checks, bottom-up.
    Preflight(PreflightArgs),
    /// Show what changed between two health files (idle vs under load).
    HealthDiff(HealthDiffArgs),
}

/// `validate`.
#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// Campaign file.
    pub file: PathBuf,
}

/// `plan`.
#[derive(Args, Debug)]
pub struct PlanArgs {
    /// Campaign file.
    pub file: PathBuf,
    /// GPUs to plan for when the campaign selects "all".
    #[arg(long, default_value_t = 8)]
    pub gpus: usize,
    /// Override the repeats of idle, sustained and duty phases (1 to 1000).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeats: Option<u32>,
    /// Print the plan as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Which hardware.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    /// Real NVIDIA GPUs through CUDA and NVML (the default).
    Cuda,
    /// The simulated node (only when asked for).
    Sim,
}

/// How simulated time passes.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimPace {
    /// As fast as the machine computes (a 4-hour campaign in minutes).
    Virtual,
    /// In real time (for signal and wall-clock tests).
    Realtime,
}

/// `run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// Campaign file.
    pub file: PathBuf,
    /// Hardware to drive. Without it, real GPUs; there is no fallback to the simulated node.
    #[arg(long, value_enum, default_value_t = BackendKind::Cuda)]
    pub backend: BackendKind,
    /// Override the repeats of idle, sustained and duty phases (1 to 1000).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeats: Option<u32>,
    /// Where run directories go.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
    /// Print one JSON event per line instead of a progress bar.
    #[arg(long)]
    pub json: bool,
    /// Run even if preflight fails (recorded in the manifest and on the report's first line).
    #[arg(long)]
    pub allow_unhealthy: bool,
    /// Do not collate at the end.
    #[arg(long)]
    pub no_collate: bool,
    /// Power-virus load on real GPUs: mixed (cuBLAS GEMM + HBM streaming, the default: draws most on H200), gemm, hbm, mma.
    #[arg(long, default_value = "mixed")]
    pub virus: String,
    /// GEMM operand type of the gemm and mixed viruses: bf16 (the default: the only one that held
    /// >= 99 % of the limit on both H200s over 60 s) or fp16. FP32 accumulation either way.
    #[arg(long, default_value = "bf16")]
    pub gemm_dtype: String,
    /// Simulated GPU model: h200, b300, a10g.
    #[arg(long, default_value = "h200")]
    pub sim_profile: String,
    /// Simulated GPU count (1 to 64).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub sim_gpus: u16,
    /// Seed of the simulated node.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Simulated time: virtual (fast) or realtime.
    #[arg(long, value_enum, default_value_t = SimPace::Virtual)]
    pub sim_pace: SimPace,
    /// Inject a fault into the simulated node (repeatable), e.g. gpu1:cold_start=10s, gpu0:lost_at=30s, node:no_nccl.
    #[arg(long = "sim-fault")]
    pub sim_faults: Vec<String>,
    /// Physics step of the simulated node, µs.
    #[arg(long, default_value_t = 250)]
    pub sim_step_us: i64,
    /// Write the simulated true waveform (1 ms) into the run directory as sim-truth/<gpu>.csv.
    #[arg(long)]
    pub sim_truth: bool,
    /// A sensor.json from `powerlab calibrate` on this node: copied into the
    /// run directory and used to judge what each rung's instruments can see
    /// (a campaign with `calibrate = true` calibrates itself instead).
    #[arg(long)]
    pub sensor: Option<PathBuf>,
    /// Anchor virtual time at this Unix-epoch ns (reproducible runs; tests).
    #[arg(long, hide = true)]
    pub sim_epoch_ns: Option<i64>,
}

/// `calibrate`.
#[derive(Args, Debug)]
pub struct CalibrateArgs {
    /// Options passed to `run` (e.g. --backend sim --sim-gpus 2, --results DIR).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub run_args: Vec<String>,
}

/// `collate`.
#[derive(Args, Debug)]
pub struct CollateArgs {
    /// Run directory.
    pub run_dir: PathBuf,
    /// Collate a run that is still being written (its report says it did not finish).
    #[arg(long)]
    pub snapshot: bool,
}

/// `observe`.
#[derive(Args, Debug)]
pub struct ObserveArgs {
    /// How long to watch.
    #[arg(long, default_value_t = 10.0)]
    pub seconds: f64,
    /// Print period, ms.
    #[arg(long, default_value_t = 500.0)]
    pub interval_ms: f64,
    /// Also write every reading to this CSV file.
    #[arg(long)]
    pub csv: Option<PathBuf>,
}

/// `preflight`.
#[derive(Args, Debug)]
pub struct PreflightArgs {
    /// Where to write the health files.
    #[arg(long, default_value = ".")]
    pub out: PathBuf,
    /// File stem (`health` writes health.json and health-report.md).
    #[arg(long, default_value = "health")]
    pub stem: String,
    /// Treat a missing NCCL as blocking (the campaign has an NCCL phase).
    #[arg(long)]
    pub needs_nccl: bool,
    /// Label of the capture: idle or under_load.
    #[arg(long, default_value = "idle")]
    pub phase: String,
}

/// `health-diff`.
#[derive(Args, Debug)]
pub struct HealthDiffArgs {
    /// Earlier health.json.
    pub a: PathBuf,
    /// Later health.json.
    pub b: PathBuf,
}
