//! `import`: a recording of real GPUs beside a user's job (the file
//! `powerlab observe --csv` writes) made into a run directory with one
//! `workload` rung over it, through the real pipeline: the recording is
//! replayed as a node (`powerlab_sim::replay`) on a paused tokio runtime,
//! the runner writes the run directory as for any run, and the collator
//! reports it. `predict` takes such a run like any other.

use anyhow::{Context, Result, anyhow, bail};
use powerlab_campaign::{Campaign, Plan};
use powerlab_core::RunClock;
use powerlab_core::units::{NS_PER_MS, NS_PER_S};
use powerlab_rundir::{RunDirError, RunStatus};
use powerlab_runner::{NullObserver, RunError, RunOptions, RunResult, StopLatch, WorkloadExec};
use powerlab_sim::Recording;
use std::path::{Path, PathBuf};

/// The name of the imported run's campaign, and of its one phase and rung.
pub const PHASE: &str = "recording";

/// The program named as the workload's command (it is never run): the
/// recording's file name follows it.
pub const COMMAND: &str = "observe --csv";

/// From the moment every GPU of the recording is read to the moment the
/// replayed GPUs report ready, ns (the barrier's epoch follows it by its
/// lead, 10 ms or a little more).
const READY_AFTER_NS: i64 = 50 * NS_PER_MS;

/// What the window leaves of the recording after its end, ns: room for
/// the barrier's lead, which grows on a busy host (twice the time the
/// GPUs' workers take to answer), and for the rung's 100 ms cooldown,
/// whose samples cover the window's last moments.
const END_MARGIN_NS: i64 = 250 * NS_PER_MS;

/// The campaign of an imported recording: sampled at `observe`'s cadence,
/// with no interlock (the replay runs nothing; what the GPUs did is
/// recorded already), and a cooldown so that samples follow the window's
/// end (the last ones before it then cover it wholly). Its one phase's
/// window is set by [`import`].
const CAMPAIGN: &str = r#"
[campaign]
name = "recording"
description = "a recording of real GPUs (powerlab observe --csv), replayed"

[sampling]
poll_interval_ms = 20
buffer_interval_ms = 200
field_interval_ms = 100
status_interval_ms = 200

[limits]
abort_on_hw_slowdown = false

[[phase]]
kind = "workload"
name = "recording"
command = ["observe --csv"]
duration_s = 1
warmup_s = 0
cooldown_s = 0.1
"#;

/// Makes a recording written by `powerlab observe --csv` into a collated
/// run directory under `out` (created if needed) and returns it: one
/// `workload` rung named `recording` whose measured window lies within
/// the recording, from 50 ms and a barrier's lead after the moment every
/// GPU was read to 250 ms before the first GPU's last buffered sample;
/// where the recording idles before or after the job, within the job's
/// stretch. A GPU that took no part in the job is left out. Both are said
/// on stderr and in the campaign's description.
/// Every reading in the run's span keeps its timestamp and value; the
/// GPUs are named as in the file (`gpu0`, …; UUIDs `RECORDED-<key>`).
///
/// # Errors
///
/// The recording is refused (its message names the file, and the line
/// where one is at fault: a wrong header, a row that is not a reading,
/// rows of two nodes, a GPU with too few buffered samples, buffered
/// samples going back in time, …), `out` cannot take a run directory,
/// the replay ends without completing (its reason), or the collation fails.
pub fn import(csv: &Path, out: &Path) -> Result<PathBuf> {
    let recording = Recording::read(csv)?;
    let span = recording.span();
    // Where the recording idles before or after the job, only the job's
    // stretch is measured.
    let job = recording.job_span();
    let ready_at_ns = (span.start_ns + READY_AFTER_NS).max(job.start_ns);
    let window_ns = job.end_ns.min(span.end_ns - END_MARGIN_NS) - ready_at_ns;
    for note in recording.notes() {
        errln!("note: {} {note}", csv.display());
    }
    let mut campaign = campaign_for(csv, window_ns)?;
    for note in recording.notes() {
        campaign.description.push_str("; ");
        campaign.description.push_str(note);
    }
    let plan = powerlab_campaign::plan::expand(&campaign, recording.gpus().len(), None)
        .map_err(|e| anyhow!("planning the import of {}: {e}", csv.display()))?;
    let result = replay(&recording, &campaign, &plan, ready_at_ns, out)?;
    let dir = result.run_dir;
    match result.status {
        RunStatus::Complete => {}
        RunStatus::Interrupted { reason } | RunStatus::Failed { reason } => bail!(
            "the replay of {} stopped before its end: {reason}; what it wrote is in {}",
            csv.display(),
            dir.display()
        ),
        RunStatus::Running => bail!(
            "the replay of {} did not end its run; what it wrote is in {}",
            csv.display(),
            dir.display()
        ),
    }
    // Outside any async runtime: polars runs its own.
    powerlab_collate::collate_with(
        &dir,
        powerlab_collate::CollateOptions {
            snapshot: false,
            soak_edge_s: None,
            wait_for_lock: None,
        },
    )
    .with_context(|| format!("collating the imported run {}", dir.display()))?;
    Ok(dir)
}

/// The campaign of the recording at `csv`: [`CAMPAIGN`] with a window of
/// `window_ns`, the file's name after the command, and no temperature
/// interlock.
fn campaign_for(csv: &Path, window_ns: i64) -> Result<Campaign> {
    let mut campaign = powerlab_campaign::parse_str("import", CAMPAIGN)
        .map_err(|e| anyhow!("the import's own campaign is invalid (a bug): {e}"))?;
    let name = csv.file_name().map_or_else(
        || csv.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    campaign.description = format!("{} (powerlab observe --csv), replayed", name);
    // Beyond any reading: the replay must not stop on what the GPUs did.
    campaign.limits.max_gpu_temp_c = 1000.0;
    campaign.limits.max_memory_temp_c = 1000.0;
    let phase = campaign
        .phases
        .first_mut()
        .ok_or_else(|| anyhow!("the import's own campaign has no phase (a bug)"))?;
    phase.name = PHASE.into();
    phase.duration_s = window_ns as f64 / NS_PER_S as f64;
    if let Some(w) = phase.workload.as_mut() {
        w.command = vec![COMMAND.to_string(), name];
    }
    Ok(campaign)
}

/// Runs the plan on the replayed recording, on a paused current-thread
/// runtime whose run clock starts where every GPU of the recording is
/// read, the GPUs ready at `ready_at_ns`; the run directory goes under
/// `out`.
fn replay(
    recording: &Recording,
    campaign: &Campaign,
    plan: &Plan,
    ready_at_ns: i64,
    out: &Path,
) -> Result<RunResult> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()?;
    let result = rt.block_on(async {
        let clock = RunClock::virtual_at(recording.span().start_ns);
        let node = recording.open(clock, ready_at_ns);
        let mut opts = RunOptions::new(out.to_path_buf(), crate::tool_info());
        opts.workload_exec = WorkloadExec::Simulated;
        powerlab_runner::run_campaign(
            campaign,
            plan,
            node,
            clock,
            &opts,
            StopLatch::new(),
            &mut NullObserver,
        )
        .await
    });
    result.map_err(|e| match e {
        RunError::RunDir(RunDirError::Exists(dir)) => anyhow!(
            "{} is there already: a recording of node {} that starts at the same second was imported into {} before; give predict that run directory, remove it, or import into another --out",
            dir.display(),
            recording.node(),
            out.display()
        ),
        e => anyhow!(
            "replaying {} into {}: {e}",
            recording.path().display(),
            out.display()
        ),
    })
}

/// `powerlab import RECORDING --out DIR`: prints the run directory.
///
/// # Errors
///
/// As [`import`].
pub fn import_cmd(a: &crate::cli::ImportArgs) -> Result<i32> {
    let dir = import(&a.recording, &a.out)?;
    outln!("{}", dir.display());
    Ok(0)
}
