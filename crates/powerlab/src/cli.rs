//! Command-line arguments.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

mod choices;
pub use choices::{BackendKind, CapturePhase, DtypeArg, SimPace, SimProfileArg, VirusArg};

/// Measure how hard and how fast a node of GPUs can swing its power draw.
#[derive(Parser, Debug)]
#[command(name = "powerlab", version = crate::LONG_VERSION, about, after_long_help = EXIT_CODES)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands of `powerlab`.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Check a campaign file; errors name file, line, column and field and
    /// say what is allowed (names: 1 to 64 of A-Z a-z 0-9 - _ .; at most
    /// 1000 periods per phase, 10000 rungs, 1024 GPUs; campaigns/README.md
    /// lists every range).
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
    /// Show what changed between two health files (idle vs under load);
    /// exits 1 when they differ, as diff does.
    HealthDiff(HealthDiffArgs),
    /// Compare two single-node runs (A the baseline, B the candidate): rung
    /// and per-GPU deltas, regressions beyond a threshold, the health diff;
    /// exits 1 when a regression is flagged, 2 when a run cannot be read.
    Compare(CompareArgs),
    /// Predict a training job of N GPUs (iteration period, compute
    /// fraction, spread, stragglers, mitigation) from one node run's
    /// measured responses: its waveform, spectrum, envelope and grid
    /// metrics against the schedule's [supply] and [grid], and what each
    /// measured mitigation buys; schedules/llm-100k.toml shows every key.
    Predict(PredictArgs),
    /// Make a recording of real GPUs (`observe --csv FILE`) into a run
    /// directory with one workload rung over it (collated; `predict` and
    /// `compare` take it like any run), and print the run directory.
    Import(ImportArgs),
    /// Print shell completions for powerlab (bash, zsh, fish, elvish, powershell).
    #[command(hide = true)]
    Completions(CompletionsArgs),
    /// Print powerlab's man page (roff), or write it and one page per
    /// subcommand into a folder.
    #[command(hide = true)]
    Manpage(ManpageArgs),
}

/// Options of `manpage`.
#[derive(Args, Debug)]
pub struct ManpageArgs {
    /// Write powerlab.1 and powerlab-<subcommand>.1 here instead of
    /// printing powerlab.1.
    #[arg(long)]
    pub out_dir: Option<PathBuf>,
}

/// Options of `completions`.
#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Options of `validate`.
#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// Campaign file.
    pub file: PathBuf,
    /// Print the result as JSON (`ok`, the campaign's name and phases, or the error).
    #[arg(long)]
    pub json: bool,
}

/// Options of `plan`.
#[derive(Args, Debug)]
pub struct PlanArgs {
    /// Campaign file.
    pub file: PathBuf,
    /// GPUs to plan for when the campaign selects "all" (8 when not given:
    /// `plan` does not look at the machine), 1 to 1024.
    #[arg(long, value_parser = parse_plan_gpus)]
    pub gpus: Option<usize>,
    /// Override the repeats of idle, sustained and duty phases (1 to 1000).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeats: Option<u32>,
    /// Print the plan as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The exit codes, in `--help` and the man page.
const EXIT_CODES: &str = "Exit status: 0 ok; 1 error (for health-diff: the captures differ; for compare: \
a regression flagged); 2 usage (for health-diff and compare: a file or run it cannot read); 3 preflight failed; 4 the run failed (fault or interlock); \
128+N stopped by signal N (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP).";

/// Help heading of the simulated node's options.
const SIM_HEADING: &str = "Simulated node (--backend sim)";

/// Options of `run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// Campaign file.
    pub file: PathBuf,
    /// Everything else `run` takes (also taken by `calibrate`).
    #[command(flatten)]
    pub opts: RunOptions,
}

impl std::ops::Deref for RunArgs {
    type Target = RunOptions;
    fn deref(&self) -> &RunOptions {
        &self.opts
    }
}

/// The options of `run` other than the campaign file.
#[derive(Args, Debug, Clone)]
pub struct RunOptions {
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
    /// Power-virus load on real GPUs (mixed draws most on H200).
    #[arg(long, value_enum, default_value_t = VirusArg::Mixed)]
    pub virus: VirusArg,
    /// GEMM operand type of the gemm and mixed viruses (bf16: the only one that held
    /// >= 99 % of the limit on both H200s over 60 s). FP32 accumulation either way.
    #[arg(long, value_enum, default_value_t = DtypeArg::Bf16)]
    pub gemm_dtype: DtypeArg,
    /// A sensor.json from `powerlab calibrate` on this node's GPUs (refused
    /// when measured on another GPU model or other GPUs): written into the
    /// run directory, its checksum in the manifest, and used to judge what
    /// each rung's instruments can see (a campaign with `calibrate = true`
    /// calibrates itself instead).
    #[arg(long)]
    pub sensor: Option<PathBuf>,
    /// Consent to what the campaign starts: its workload commands, node
    /// power commands and IPMI tool, the addresses it reads and the
    /// secrets it sends (`powerlab plan` lists them). Without it, a
    /// terminal is asked; anything else is refused.
    #[arg(long)]
    pub allow_programs: bool,
    /// A file the campaign may read a password from (`password_file`);
    /// repeatable. A password file not named here is never read.
    #[arg(long, value_name = "FILE")]
    pub secret_file: Vec<PathBuf>,
    /// The live metrics endpoint.
    #[command(flatten)]
    pub metrics: MetricsArgs,
    /// Simulated GPU model.
    #[arg(long, value_enum, default_value_t = SimProfileArg::H200, help_heading = SIM_HEADING)]
    pub sim_profile: SimProfileArg,
    /// Simulated GPU count (1 to 64).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=64), help_heading = SIM_HEADING)]
    pub sim_gpus: u16,
    /// Seed of the simulated node.
    #[arg(long, default_value_t = 1, help_heading = SIM_HEADING)]
    pub seed: u64,
    /// Simulated time: virtual (fast) or realtime.
    #[arg(long, value_enum, default_value_t = SimPace::Virtual, help_heading = SIM_HEADING)]
    pub sim_pace: SimPace,
    /// Inject a fault into the simulated node (repeatable), e.g. gpu1:cold_start=10s, gpu0:lost_at=30s, node:no_nccl.
    #[arg(long = "sim-fault", help_heading = SIM_HEADING)]
    pub sim_faults: Vec<String>,
    /// Physics step of the simulated node, µs (divides 1000 or is a multiple of it, 10 to 5000).
    #[arg(long, default_value_t = 250, help_heading = SIM_HEADING)]
    pub sim_step_us: i64,
    /// Write the simulated true waveform (1 ms) into the run directory as sim-truth/<gpu>.csv.
    #[arg(long, help_heading = SIM_HEADING)]
    pub sim_truth: bool,
    /// Run a workload phase's command on the simulated node too (its power
    /// is still the simulated job's): rehearses the command's start, stop
    /// and faults. Needs --sim-pace realtime.
    #[arg(long, help_heading = SIM_HEADING)]
    pub sim_run_command: bool,
    /// Anchor virtual time at this Unix-epoch ns (reproducible runs; tests).
    #[arg(long, hide = true, help_heading = SIM_HEADING)]
    pub sim_epoch_ns: Option<i64>,
}

/// Options of `calibrate`: those of `run`, without a campaign file (the
/// built-in calibration campaign runs).
#[derive(Args, Debug)]
pub struct CalibrateArgs {
    /// The run's options.
    #[command(flatten)]
    pub opts: RunOptions,
}

/// Options of `collate`.
#[derive(Args, Debug)]
pub struct CollateArgs {
    /// Run directory.
    pub run_dir: PathBuf,
    /// Collate a run that is still being written (its report says it did not finish).
    #[arg(long)]
    pub snapshot: bool,
    /// Rack: collate every node again, even those whose report is up to
    /// date with its raw files.
    #[arg(long)]
    pub force: bool,
    /// Rack: nodes collated at once (each needs the memory of one node's
    /// collation; the rack step itself reads only the nodes' reports).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub jobs: u16,
    /// The soak analysis's first and last window, s (a soak shorter than
    /// three of them uses a third of its length).
    #[arg(long, default_value_t = 60.0, value_parser = soak_edge_s, allow_negative_numbers = true)]
    pub soak_edge_s: f64,
    /// Print the per-rung summary as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Options of `observe`.
#[derive(Args, Debug)]
pub struct ObserveArgs {
    /// How long to watch, s (Ctrl-C stops earlier; what was read is kept).
    #[arg(long, default_value_t = 10.0, conflicts_with = "count", value_parser = positive_f64, allow_negative_numbers = true)]
    pub seconds: f64,
    /// Stop after this many printed lines instead of after `--seconds`.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,
    /// Print period, ms.
    #[arg(long, default_value_t = 500.0, value_parser = positive_f64, allow_negative_numbers = true)]
    pub interval_ms: f64,
    /// GPUs to watch, by NVML index or UUID, comma-separated (default: all).
    #[arg(long, value_delimiter = ',')]
    pub gpus: Vec<String>,
    /// Also write every reading to this CSV file, in the raw files' schema
    /// (`ts_ns,node,gpu,instrument,value`).
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Print one JSON object per line (each printed reading) instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// Options of `preflight`.
#[derive(Args, Debug)]
pub struct PreflightArgs {
    /// Where to write the health files.
    #[arg(long, default_value = ".")]
    pub out: PathBuf,
    /// File stem (`health` writes health.json and health-report.md): a
    /// plain file name, the files go into `--out`.
    #[arg(long, default_value = "health", value_parser = plain_stem)]
    pub stem: String,
    /// Treat a missing NCCL as blocking (the campaign has an NCCL phase).
    #[arg(long)]
    pub needs_nccl: bool,
    /// What the capture describes.
    #[arg(long, value_enum, default_value_t = CapturePhase::Idle)]
    pub phase: CapturePhase,
    /// Print the whole health capture as JSON instead of the check table.
    #[arg(long)]
    pub json: bool,
    /// Also check this campaign's `[[node_power]]` sources (BMC, IPMI,
    /// PDU: reachable, authenticated, returns a number), and treat a
    /// missing NCCL as blocking if it has an nccl phase.
    #[arg(long, value_name = "FILE")]
    pub campaign: Option<PathBuf>,
    /// Consent to the campaign's node power sources (the programs they
    /// run, the addresses and secrets they read; `powerlab plan` lists
    /// them). Without it, a terminal is asked; anything else is refused.
    #[arg(long, requires = "campaign")]
    pub allow_programs: bool,
    /// A file the campaign may read a password from (`password_file`);
    /// repeatable. A password file not named here is never read.
    #[arg(long, value_name = "FILE", requires = "campaign")]
    pub secret_file: Vec<PathBuf>,
}

/// Options of `health-diff`.
#[derive(Args, Debug)]
pub struct HealthDiffArgs {
    /// Earlier health.json.
    pub a: PathBuf,
    /// Later health.json.
    pub b: PathBuf,
    /// Print the differences as JSON.
    #[arg(long)]
    pub json: bool,
}

/// What `compare` exits with, in its `--help`.
const COMPARE_EXIT: &str = "Exit status: 0 no regression; 1 at least one regression flagged \
(a rung's mean or peak, a duty rung's swing, or a GPU's mean changed beyond --threshold-pct of A's \
value and beyond the 95 % Welch interval when both runs have 2+ repeats; either direction); \
2 a run cannot be compared (not a run directory, not collated or out of date without --collate, \
a damaged report, no rung matched or none with a figure in both runs) or an output cannot be written. Unmatched rungs, the warnings (different \
campaigns, GPU counts or models, incomplete runs) and health differences are reported but do \
not change the exit status.";

/// Options of `compare`.
#[derive(Args, Debug)]
#[command(after_long_help = COMPARE_EXIT)]
pub struct CompareArgs {
    /// Baseline run directory (one node).
    pub a: PathBuf,
    /// Candidate run directory (one node).
    pub b: PathBuf,
    /// A judged figure changing by more than this share of A's value, %, is a regression
    /// (when both runs have 2+ repeats, only if also beyond the 95 % interval).
    #[arg(long, default_value_t = 3.0, value_parser = positive_f64, allow_negative_numbers = true)]
    pub threshold_pct: f64,
    /// Write compare.csv, compare.json and compare.md into this folder
    /// (created if missing) instead of printing the Markdown.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print the comparison as JSON.
    #[arg(long)]
    pub json: bool,
    /// Collate a run whose report is missing or out of date first (rewrites
    /// its report/); without it such a run is refused.
    #[arg(long)]
    pub collate: bool,
}

/// Options of `import`.
#[derive(Args, Debug)]
pub struct ImportArgs {
    /// The recording: the file `powerlab observe --csv FILE` wrote.
    pub recording: PathBuf,
    /// Where the run directory goes (created if needed).
    #[arg(long)]
    pub out: PathBuf,
}

/// Options of `predict`. Flags override the schedule file's keys; without
/// `--schedule`, `--gpus`, `--iteration-ms` and `--compute-fraction` are
/// required.
#[derive(Args, Debug)]
pub struct PredictArgs {
    /// One node's run directory (a rack's: one of its `nodes/`), or a
    /// recording made by `powerlab observe --csv` beside the user's job.
    pub run: PathBuf,
    /// Predict from this workload rung of the run (the user's own job),
    /// where it has several. By default a run with one workload rung is
    /// predicted from it, any other from its duty rungs' square waves.
    #[arg(long, conflicts_with = "square_waves")]
    pub from_rung: Option<String>,
    /// Predict from the duty rungs' square waves even where the run holds
    /// a workload rung.
    #[arg(long)]
    pub square_waves: bool,
    /// The schedule (TOML; schedules/llm-100k.toml documents every key).
    #[arg(long)]
    pub schedule: Option<PathBuf>,
    /// GPUs in the job (`job.gpus`).
    #[arg(long)]
    pub gpus: Option<u64>,
    /// GPUs per node (`job.gpus_per_node`; default: the run's GPU count).
    #[arg(long)]
    pub gpus_per_node: Option<u32>,
    /// Iteration period, ms (`job.iteration_ms`).
    #[arg(long, allow_negative_numbers = true)]
    pub iteration_ms: Option<f64>,
    /// The compute phase's share of the iteration (`job.compute_fraction`).
    #[arg(long, allow_negative_numbers = true)]
    pub compute_fraction: Option<f64>,
    /// A measured mitigation profile (`mitigation.profile`, e.g. floor60;
    /// `plain` for none).
    #[arg(long)]
    pub mitigation: Option<String>,
    /// Node groups started evenly across the iteration (`mitigation.stagger_groups`).
    #[arg(long)]
    pub stagger_groups: Option<u32>,
    /// Nodes' start spread: normal with this σ, ms (replaces `[spread]`);
    /// 0: no spread (`kind = "none"`).
    #[arg(long, allow_negative_numbers = true)]
    pub spread_sigma_ms: Option<f64>,
    /// The waveform's span, s (`output.span_s`).
    #[arg(long, allow_negative_numbers = true)]
    pub span_s: Option<f64>,
    /// Its resolution, ms (`output.resolution_ms`).
    #[arg(long, allow_negative_numbers = true)]
    pub resolution_ms: Option<f64>,
    /// Leave out the schedule's `[lifecycle]` (start, checkpoints,
    /// crashes, end): predict the steady job alone.
    #[arg(long)]
    pub no_lifecycle: bool,
    /// The Python of the ANDES environment for `[grid.system]`'s
    /// time-domain playback (else $POWERLAB_ANDES_PYTHON, else
    /// .venv-andes/bin/python; `bash scripts/grid/setup-andes.sh` makes
    /// it). Without one the analytic screen is given alone.
    #[arg(long)]
    pub andes_python: Option<PathBuf>,
    /// Give the `[grid.system]` screen alone: do not play the windows
    /// into the simulator.
    #[arg(long)]
    pub no_grid_playback: bool,
    /// Write the prediction here (default: <RUN>/predict/<job name>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print the scenarios' figures as JSON.
    #[arg(long)]
    pub json: bool,
}

/// A finite number above zero (a duration or a period).
fn positive_f64(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        Ok(_) => Err(format!("{s} is not a finite number above 0")),
        Err(e) => Err(format!("{s}: {e}")),
    }
}

/// The soak's first and last window: at least 10 s (one of the bins the
/// drift is fitted through; shorter windows hold too few samples to mean
/// anything).
fn soak_edge_s(s: &str) -> Result<f64, String> {
    let v = positive_f64(s)?;
    if v < 10.0 {
        return Err(format!(
            "{s} s is too short for a soak's first and last window (at least 10 s)"
        ));
    }
    Ok(v)
}

/// A file stem that stays inside the output folder: not empty, no path
/// separator, not starting with a dot.
fn plain_stem(s: &str) -> Result<String, String> {
    if s.is_empty() || s.starts_with('.') || s.contains('/') || s.contains('\\') {
        return Err(format!(
            "`{s}` is not a plain file name (no `/`, not empty, not starting with `.`): the files go into --out"
        ));
    }
    Ok(s.to_string())
}

/// Options only the simulated node takes (argument id, flag).
const SIM_ONLY: [(&str, &str); 9] = [
    ("sim_profile", "--sim-profile"),
    ("sim_gpus", "--sim-gpus"),
    ("seed", "--seed"),
    ("sim_pace", "--sim-pace"),
    ("sim_faults", "--sim-fault"),
    ("sim_step_us", "--sim-step-us"),
    ("sim_truth", "--sim-truth"),
    ("sim_epoch_ns", "--sim-epoch-ns"),
    ("sim_run_command", "--sim-run-command"),
];
/// Options only real GPUs take.
const CUDA_ONLY: [(&str, &str); 2] = [("virus", "--virus"), ("gemm_dtype", "--gemm-dtype")];

/// Refuses, as a usage error, an option given on the command line for the
/// other backend than the one the run drives: a simulated-node option on
/// real GPUs, or a real-GPU load option on the simulated node. Either would
/// otherwise be silently ignored.
///
/// # Errors
///
/// A clap error (exit 2) naming the option and the backend it belongs to,
/// with the usage of the subcommand (`cmd` is the command that parsed `m`).
pub fn check_backend_options(
    m: &clap::ArgMatches,
    cmd: &mut clap::Command,
) -> Result<(), clap::Error> {
    let Some((name, sub)) = m.subcommand() else {
        return Ok(());
    };
    if !matches!(name, "run" | "calibrate") {
        return Ok(());
    }
    let sim = sub.get_one::<BackendKind>("backend") == Some(&BackendKind::Sim);
    let (wrong, why): (&[(&str, &str)], &str) = if sim {
        (
            &CUDA_ONLY,
            "drives real GPUs; the simulated node has one load model (drop it, or leave out --backend sim)",
        )
    } else {
        (
            &SIM_ONLY,
            "is an option of the simulated node: add --backend sim (real GPUs take no simulated settings)",
        )
    };
    match wrong
        .iter()
        .find(|(id, _)| sub.value_source(id) == Some(clap::parser::ValueSource::CommandLine))
    {
        Some((_, flag)) => {
            let kind = clap::error::ErrorKind::ArgumentConflict;
            let message = format!("{flag} {why}");
            Err(match cmd.find_subcommand_mut(name) {
                Some(sub_cmd) => sub_cmd.error(kind, message),
                None => cmd.error(kind, message),
            })
        }
        None => Ok(()),
    }
}

/// `plan --gpus`: a node's GPU count, 1 to [`powerlab_campaign::plan::MAX_GPUS`].
fn parse_plan_gpus(s: &str) -> Result<usize, String> {
    let max = powerlab_campaign::plan::MAX_GPUS;
    s.parse::<usize>()
        .ok()
        .filter(|n| (1..=max).contains(n))
        .ok_or_else(|| format!("`{s}` is not a GPU count of one node (1 to {max})"))
}

/// The options of `run` (and `calibrate`) for the live metrics.
#[derive(clap::Args, Debug, Clone)]
pub struct MetricsArgs {
    /// Serve live metrics (Prometheus text format) at http://ADDR:PORT/metrics
    /// while the run goes: PORT alone listens on 127.0.0.1 only, another
    /// interface only when written out (0.0.0.0:9464); port 0 takes any
    /// free port (said on stderr). A rack rank serves PORT + its node-local
    /// rank. A port already taken refuses the run before any load.
    /// docs/metrics.md lists every metric.
    #[arg(long, value_name = "[ADDR:]PORT", value_parser = powerlab_live::parse_listen)]
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// Keep serving the final metrics this long after the run (and its
    /// collation) ended, s, so that a scraper reads the last values.
    #[arg(long, default_value_t = 0.0, requires = "metrics_listen", value_parser = linger_s, allow_negative_numbers = true)]
    pub metrics_linger_s: f64,
}

/// `--metrics-linger-s`: 0 to 3600 s.
fn linger_s(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if (0.0..=3600.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{s} s is out of range (allowed: 0 to 3600)"))
    }
}

#[cfg(test)]
mod tests {
    use super::{plain_stem, positive_f64};

    #[test]
    fn durations_must_be_finite_and_positive() {
        assert_eq!(positive_f64("2.5"), Ok(2.5));
        for bad in ["0", "-1", "nan", "inf", "x"] {
            assert!(positive_f64(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_stem_cannot_leave_the_output_folder() {
        assert_eq!(plain_stem("health-a"), Ok("health-a".to_string()));
        for bad in ["", ".hidden", "../../evil", "a/b"] {
            assert!(plain_stem(bad).is_err(), "{bad}");
        }
    }
}
