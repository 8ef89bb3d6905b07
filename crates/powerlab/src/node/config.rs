//! The run's configuration, validated once from the command line before
//! anything is opened, launched or written: the campaign, the backend the
//! user asked for with its settings (faults parsed here, once), and where
//! the run goes. A bad value is an error naming it, never a run that
//! quietly ignores it, and in a rack it is caught before MPI starts.

use crate::cli::{BackendKind, RunArgs, SimPace};
use powerlab_campaign::{Campaign, load_file};
use powerlab_cuda::{GemmDtype, VirusMode};
use powerlab_sim::{FaultPlan, Profile};
use std::path::PathBuf;

/// Latest virtual-time start: 2096 (a year-long plan still fits in i64).
const MAX_SIM_EPOCH_NS: i64 = 4_000_000_000_000_000_000;

/// Why a configuration was refused, already in the words the user sees.
#[derive(Debug)]
pub enum ConfigError {
    /// The campaign file did not load (its message names file, line and field).
    Campaign(String),
    /// A command-line option is out of range or contradicts another: a
    /// usage error (exit 2).
    Arg(String),
    /// A file named on the command line does not hold what it must (exit 1).
    File(String),
}

impl ConfigError {
    /// The exit code: 2 for a usage error, 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        match self {
            ConfigError::Arg(_) => 2,
            ConfigError::Campaign(_) | ConfigError::File(_) => crate::exit::ERROR,
        }
    }
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigError::Campaign(e) => write!(f, "{e}"),
            ConfigError::Arg(e) | ConfigError::File(e) => write!(f, "error: {e}"),
        }
    }
}

/// Real GPUs: which load the power virus runs.
#[derive(Debug, Clone, Copy)]
pub struct CudaConfig {
    /// The virus's load.
    pub mode: VirusMode,
    /// The GEMM operand type.
    pub dtype: GemmDtype,
}

/// The simulated node, as the user described it.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// The GPU model's physics.
    pub profile: Profile,
    /// GPUs on the simulated node.
    pub gpus: usize,
    /// Seed of the node's randomness.
    pub seed: u64,
    /// Virtual (fast) or real time.
    pub pace: SimPace,
    /// Faults to inject, parsed and checked against the GPU count.
    pub faults: FaultPlan,
    /// Physics step, µs.
    pub step_us: i64,
    /// Whether the true waveform is written into the run directory.
    pub truth: bool,
    /// Where virtual time starts (Unix-epoch ns); now when absent.
    pub epoch_ns: Option<i64>,
    /// Whether a workload phase's command runs (real time only).
    pub run_command: bool,
}

/// The node the run drives.
#[derive(Debug, Clone)]
pub enum NodeKind {
    /// Real GPUs through CUDA and NVML.
    Cuda(CudaConfig),
    /// The simulated node (only when asked for).
    Sim(Box<SimConfig>),
}

/// Everything a node run needs, checked.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The campaign file, as given (for messages).
    pub file: PathBuf,
    /// The validated campaign.
    pub campaign: Campaign,
    /// `--repeats` override.
    pub repeats: Option<u32>,
    /// Where run directories go.
    pub results: PathBuf,
    /// JSON events on stdout instead of a progress bar.
    pub json: bool,
    /// Run on a node whose preflight failed (recorded).
    pub allow_unhealthy: bool,
    /// Skip the collation at the end.
    pub no_collate: bool,
    /// A sensor model to write into the run directory (`--sensor`), once
    /// the node's GPUs are known to be the ones it was measured on.
    pub sensor: Option<GivenSensor>,
    /// The node to drive.
    pub node: NodeKind,
    /// The live metrics' state, when `--metrics-listen` serves it.
    pub live: Option<std::sync::Arc<powerlab_live::Live>>,
}

/// A sensor model given with `--sensor`: the file as read, and its model.
#[derive(Debug, Clone)]
pub struct GivenSensor {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its bytes, written unchanged into the run directory.
    pub bytes: Vec<u8>,
    /// The model they hold.
    pub model: powerlab_analysis::sensor::SensorModel,
}

impl GivenSensor {
    /// Refuses a model measured on another GPU model or on other GPUs than
    /// this node's, or one that lacks a GPU of the run or its buffered
    /// path; returns what it lacks that the collator can do without (said
    /// again in the report).
    ///
    /// # Errors
    /// What does not fit, naming the file, the GPU models, UUIDs or keys,
    /// the path or the field.
    pub fn check_fits(
        &self,
        gpus: &[powerlab_core::hw::GpuIdentity],
    ) -> Result<Vec<String>, String> {
        let keys: Vec<String> = gpus.iter().map(|g| g.key.clone()).collect();
        self.model
            .check_fits(gpus)
            .and_then(|()| self.model.check_covers(&keys))
            .map_err(|e| format!("--sensor {}: {e}", self.path.display()))?;
        Ok(self.model.optional_gaps(&keys))
    }
}

impl RunConfig {
    /// Loads the campaign and checks every option.
    ///
    /// # Errors
    /// A campaign that does not load, or an option out of range or given to
    /// the wrong backend, named in the message.
    pub fn from_args(a: &RunArgs) -> Result<RunConfig, ConfigError> {
        let campaign = load_file(&a.file).map_err(|e| ConfigError::Campaign(e.to_string()))?;
        let node = node_kind(a).map_err(ConfigError::Arg)?;
        if let NodeKind::Sim(s) = &node
            && s.pace == SimPace::Virtual
            && !campaign.node_power.is_empty()
        {
            return Err(ConfigError::Arg(
                "the campaign's [[node_power]] sources are read in real time; run the simulated node with --sim-pace realtime".into(),
            ));
        }
        if let NodeKind::Sim(s) = &node
            && s.pace == SimPace::Virtual
            && s.run_command
        {
            return Err(ConfigError::Arg(
                "--sim-run-command runs the workload's command, which lives in real time; add --sim-pace realtime".into(),
            ));
        }
        let runs_workloads = match &node {
            NodeKind::Cuda(_) => true,
            NodeKind::Sim(s) => s.run_command,
        };
        let list = crate::consent::needed(&campaign, runs_workloads, true);
        let given = crate::consent::Given {
            allow_programs: a.allow_programs,
            secret_files: a.secret_file.clone(),
        };
        crate::consent::ask(&list, &given, "run").map_err(ConfigError::Arg)?;
        let sensor = a
            .sensor
            .as_ref()
            .map(|s| -> Result<GivenSensor, ConfigError> {
                let file = |e: &dyn std::fmt::Display| ConfigError::File(format!("--sensor: {e}"));
                let model = powerlab_analysis::sensor::read_model(s).map_err(|e| file(&e))?;
                let bytes = std::fs::read(s).map_err(|e| file(&format!("{}: {e}", s.display())))?;
                Ok(GivenSensor {
                    path: s.clone(),
                    bytes,
                    model,
                })
            })
            .transpose()?;
        Ok(RunConfig {
            file: a.file.clone(),
            campaign,
            repeats: a.repeats,
            results: a.results.clone(),
            json: a.json,
            allow_unhealthy: a.allow_unhealthy,
            no_collate: a.no_collate,
            sensor,
            node,
            live: None,
        })
    }

    /// The backend chosen on the command line.
    pub fn backend(&self) -> BackendKind {
        match self.node {
            NodeKind::Cuda(_) => BackendKind::Cuda,
            NodeKind::Sim(_) => BackendKind::Sim,
        }
    }

    /// The simulated node's settings, if that is the node.
    pub fn sim(&self) -> Option<&SimConfig> {
        match &self.node {
            NodeKind::Sim(s) => Some(s),
            NodeKind::Cuda(_) => None,
        }
    }
}

fn node_kind(a: &RunArgs) -> Result<NodeKind, String> {
    // Virtual time starts here; a start near the end of i64 would overflow
    // every deadline after it.
    if let Some(e) = a
        .sim_epoch_ns
        .filter(|e| !(0..=MAX_SIM_EPOCH_NS).contains(e))
    {
        return Err(format!(
            "--sim-epoch-ns {e} is out of range (allowed: 0 to {MAX_SIM_EPOCH_NS}, i.e. 1970 to 2096)"
        ));
    }
    match a.backend {
        // Options of the other backend are refused where the command line
        // is parsed (`cli::check_backend_options`).
        BackendKind::Cuda => Ok(NodeKind::Cuda(CudaConfig {
            mode: a.virus.mode(),
            dtype: a.gemm_dtype.dtype(),
        })),
        BackendKind::Sim => {
            let gpus = usize::from(a.sim_gpus);
            let faults = FaultPlan::parse(&a.sim_faults)?;
            faults.check_targets(gpus)?;
            if !(10..=5000).contains(&a.sim_step_us)
                || 1000 % a.sim_step_us != 0 && a.sim_step_us % 1000 != 0
            {
                return Err(format!(
                    "--sim-step-us {} must divide 1000 or be a multiple of it, between 10 and 5000",
                    a.sim_step_us
                ));
            }
            Ok(NodeKind::Sim(Box::new(SimConfig {
                profile: a.sim_profile.profile(),
                gpus,
                seed: a.seed,
                pace: a.sim_pace,
                faults,
                step_us: a.sim_step_us,
                truth: a.sim_truth,
                epoch_ns: a.sim_epoch_ns,
                run_command: a.sim_run_command,
            })))
        }
    }
}
