//! The campaign on an opened node: signal watch, run options (lock, health,
//! rack), the observer the user asked for (progress bar or JSON events,
//! with the under-load health capture on real GPUs), then the runner.

use super::RunConfig;
use super::signals::spawn_signal_handlers;
use crate::cli::BackendKind;
use crate::ui::{BarObserver, JsonObserver};
use anyhow::{Result, anyhow};
use powerlab_campaign::Plan;
use powerlab_core::RunClock;
use powerlab_core::hw::NodeHandles;
use powerlab_runner::{
    Observer, RackRun, RunError, RunOptions, RunResult, StopLatch, run_campaign,
};
use std::sync::Arc;

/// Runs the campaign; `Err(code)` when it could not start.
pub async fn execute(
    cfg: &RunConfig,
    plan: &Plan,
    node: NodeHandles,
    clock: RunClock,
    health: Option<powerlab_health::HealthReport>,
    rack: Option<Arc<RackRun>>,
    siblings: &[(u32, String)],
) -> Result<Result<RunResult, i32>> {
    let abort = StopLatch::new();
    spawn_signal_handlers(abort.clone());
    let mut opts = RunOptions::new(cfg.results.clone(), crate::tool_info());
    opts.allow_unhealthy = cfg.allow_unhealthy;
    opts.rack = rack;
    opts.gpu_binding = crate::GPU_BINDING.get().cloned();
    opts.sensor = cfg.sensor.as_ref().map(|s| s.bytes.clone());
    opts.live = cfg.live.clone();
    opts.workload_exec = match cfg.sim() {
        Some(s) if !s.run_command => powerlab_runner::WorkloadExec::Simulated,
        _ => powerlab_runner::WorkloadExec::Run,
    };
    if opts.workload_exec == powerlab_runner::WorkloadExec::Run {
        let commands = cfg
            .campaign
            .phases
            .iter()
            .filter_map(|p| p.workload.as_ref());
        if let Some(e) = commands
            .filter_map(|w| powerlab_runner::workload::check_startable(w).err())
            .next()
        {
            errln!("error: {e}");
            errln!("(no load was started)");
            return Ok(Err(crate::exit::ERROR));
        }
    }
    // One campaign at a time per node: the real node's lock is host-wide;
    // a simulated node is the results directory it writes into.
    opts.lock_path = match cfg.backend() {
        // In a rack, the rack run holds the host's lock for all its ranks there.
        _ if opts.rack.is_some() => None,
        BackendKind::Cuda => Some(powerlab_runner::lock::default_lock_path()),
        BackendKind::Sim => {
            if let Err(e) = powerlab_runner::check_results_root(&cfg.results) {
                errln!("error: {e}");
                return Ok(Err(crate::exit::ERROR));
            }
            Some(
                cfg.results
                    .join(powerlab_rundir::files::results::SIM_NODE_LOCK),
            )
        }
    };
    if let Some(h) = &health {
        opts.health = Some((
            serde_json::to_value(h)?,
            powerlab_health::report::markdown(h),
        ));
    }
    let mut bar;
    let mut json;
    let observer: &mut dyn Observer = if cfg.json {
        json = JsonObserver;
        &mut json
    } else {
        bar = BarObserver::new(plan.total_ns());
        &mut bar
    };
    for note in &plan.notes {
        observer.message(&format!("note: {note}"));
    }
    let mut under_load;
    let observer: &mut dyn Observer = if health.is_some() {
        let needs_nccl = plan.needs_nccl();
        under_load = crate::ui::UnderLoadHealth {
            inner: observer,
            needs_nccl,
            siblings: siblings.to_vec(),
            run_dir: None,
            done: false,
        };
        &mut under_load
    } else {
        observer
    };
    match run_campaign(&cfg.campaign, plan, node, clock, &opts, abort, observer).await {
        Ok(r) => Ok(Ok(r)),
        Err(RunError::Missing(e)) => {
            errln!("error: the campaign cannot start, nothing was run: {e}");
            Ok(Err(crate::exit::ERROR))
        }
        Err(e) => Err(anyhow!(e)),
    }
}
