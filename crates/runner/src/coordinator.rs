//! The coordinator: runs a campaign's plan on a node, rung by rung behind
//! a barrier. It decides whether the run may start, creates the run
//! directory, starts the crew, hands the rungs to the rung driver and
//! seals the manifest with how the run ended.

use crate::crew::{Crew, CrewSetup};
use crate::driver::{DriverParts, RungDriver, Writers};
use crate::error::RunError;
use crate::lock::{self, NodeLock};
use crate::observer::Observer;
use crate::run_files::RunFiles;
use crate::stop::StopLatch;
use powerlab_campaign::{Campaign, PhaseKind, Plan};
use powerlab_core::RunClock;
use powerlab_core::hw::{Capability, NodeHandles};

pub use crate::options::{RunOptions, RunResult};
pub use crate::run_files::check_results_root;
pub use crate::schedule::schedule_for;

/// Runs a campaign. Everything the run produced stays in the run directory
/// whatever happens; the result says how it ended.
///
/// `abort` is the run's stop latch (or the watch channel it wraps): a
/// reason raised on it stops the run, and the first reason raised is the
/// one the run reports.
///
/// # Errors
/// Before any load, so nothing was run: [`RunError::Missing`] (a capability
/// the campaign needs, e.g. NCCL, is absent), [`RunError::Plan`] (a rung
/// of the plan lacks what its kind needs, e.g. a duty rung's period),
/// [`RunError::Locked`] (another
/// campaign holds the node), [`RunError::Results`] (the results directory
/// cannot take the run: inside a run directory, unwritable or too full).
/// At its start: [`RunError::RunDir`] when the run directory, its first
/// manifest or its event and edge files cannot be created, and
/// [`RunError::Internal`] when the crew cannot be started. A file that
/// cannot be written once the run is under way (a full disk) is no error:
/// the run ends failed, saying which file and why; what was written so
/// far stays.
pub async fn run_campaign(
    campaign: &Campaign,
    plan: &Plan,
    node: NodeHandles,
    clock: RunClock,
    opts: &RunOptions,
    abort: impl Into<StopLatch>,
    observer: &mut dyn Observer,
) -> Result<RunResult, RunError> {
    let stop = abort.into();
    // 1. The start decision: capabilities and the node lock, before
    // anything is created or loaded.
    check_node(plan, &node)?;
    let _node_lock = take_node_lock(campaign, opts)?;

    // 2. The run directory, with room for the run: checked first, so that a
    // refused run leaves nothing behind.
    let start_ns = clock.now_ns();
    let mut files = RunFiles::create(campaign, plan, &node.info, clock, opts, start_ns)?;
    let writers = Writers::create(&files.dir)?;
    observer.message(&format!("run directory: {}", files.dir.path.display()));

    // 3. The samplers (with their monitor) and the workers.
    let NodeHandles {
        info,
        gpus,
        sources,
        meters,
    } = node;
    let keys: Vec<String> = info.gpus.iter().map(|g| g.key.clone()).collect();
    if let Some(live) = &opts.live {
        let latch = stop.clone();
        live.start_run(
            &info.host,
            &info.gpus,
            crate::crew::gap_limits(campaign),
            move || latch.current().is_some(),
        );
    }
    let raw_dir = files.dir.raw_dir();
    let crew_setup = CrewSetup {
        campaign,
        raw_dir: &raw_dir,
        run_dir: &files.dir.path,
        node_id: &info.node_id,
        keys: &keys,
        clock,
        start_ns,
        stop: &stop,
        live: opts.live.clone(),
    };
    let (crew, monitor_rx) = Crew::start(crew_setup, gpus, sources, meters)?;
    let parts = DriverParts {
        clock,
        stop,
        observer,
        writers,
        crew,
        monitor_rx,
        keys,
        limits_w: info.gpus.iter().map(|g| g.power_limit_w).collect(),
        uuids: info.gpus.iter().map(|g| g.uuid.clone()).collect(),
        run_dir: files.dir.path.clone(),
    };
    let mut driver = RungDriver::new(parts, campaign, plan, opts);

    // 4. The rungs. A file of the run directory that cannot be written (a
    // full disk) fails the run; it still ends as below, sealed as failed.
    let outcome = match driver.begin(campaign, plan, &info.backend, opts, start_ns) {
        Ok(()) => driver.run_rungs(plan).await,
        Err(e) => Err(e),
    };
    let outcome = outcome.unwrap_or_else(|e| Err(crate::stop::disk_failure(&e)));

    // 5. Stop every GPU, then the samplers; say how the run ended (with
    // the space reserved at the start given back for the closing writes).
    let ending = driver.finish(outcome, opts, &mut files).await;
    let status = seal(&mut files, ending.status, ending.end_ns);
    Ok(RunResult {
        run_dir: files.dir.path.clone(),
        status,
        rungs_completed: ending.rungs_completed,
        samplers: ending.samplers,
        rack_ends: ending.rack_ends,
    })
}

/// The run's status once its manifest is sealed at `end_ns`: `status`, or,
/// when the manifest cannot be sealed (a disk still full), failed, not an
/// error of its own: events.jsonl holds how it ended, and the collator
/// reads it from there.
fn seal(
    files: &mut RunFiles,
    status: powerlab_rundir::RunStatus,
    end_ns: i64,
) -> powerlab_rundir::RunStatus {
    match files.seal(&status, end_ns) {
        Ok(()) => status,
        Err(e) => {
            let before = match &status {
                powerlab_rundir::RunStatus::Interrupted { reason }
                | powerlab_rundir::RunStatus::Failed { reason } => format!("{reason}; "),
                _ => String::new(),
            };
            powerlab_rundir::RunStatus::Failed {
                reason: format!(
                    "{before}{}; the manifest still says running (events.jsonl records the end)",
                    crate::stop::disk_failure(&format!("sealing the manifest: {e}")).text()
                ),
            }
        }
    }
}

/// Refuses a node that lacks what the plan needs.
fn check_node(plan: &Plan, node: &NodeHandles) -> Result<(), RunError> {
    if plan.needs_nccl()
        && let Capability::Absent(e) = &node.info.nccl
    {
        return Err(RunError::Missing(e.clone()));
    }
    if node.gpus.len() != plan.gpu_count || node.sources.len() != plan.gpu_count {
        return Err(RunError::Internal(format!(
            "plan expanded for {} GPUs, node opened {}",
            plan.gpu_count,
            node.gpus.len()
        )));
    }
    // Every GPU's schedule of every rung can be made: a rung that cannot
    // is refused before any load, not in the middle of the run.
    for rung in &plan.rungs {
        if rung.smoothing.is_some_and(|s| !s.is_none())
            && !matches!(rung.kind, PhaseKind::Duty | PhaseKind::RampUp)
        {
            return Err(RunError::Plan(format!(
                "rung {}: a {} rung asks for power smoothing, which only a duty (square-wave) rung runs; remove the smoothing from that phase",
                rung.label,
                rung.kind.as_str()
            )));
        }
        for i in 0..plan.gpu_count {
            schedule_for(rung, i, 0, None).map_err(RunError::Plan)?;
        }
    }
    Ok(())
}

/// Takes the node lock, when the options name one.
fn take_node_lock(campaign: &Campaign, opts: &RunOptions) -> Result<Option<NodeLock>, RunError> {
    match &opts.lock_path {
        Some(p) => lock::acquire(p, &format!("campaign `{}`", campaign.name))
            .map(Some)
            .map_err(RunError::Locked),
        None => Ok(None),
    }
}
