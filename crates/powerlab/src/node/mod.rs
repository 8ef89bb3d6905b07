//! The node run: one room for everything between a validated command line
//! and an exit code, on either backend. [`RunConfig`] is checked once from
//! the arguments; [`run_node`] takes the preflight, opens the node the user
//! asked for (real GPUs, or the simulated node only when asked for), makes
//! the start decision (alone or with the rack), runs the campaign and hands
//! the result to [`finish`]. `cmd_run` dispatches here, and a rack run
//! (`rack`) runs each of its nodes through the same room.

mod config;
mod execute;
mod finish;
pub(crate) mod signals;
mod start;

pub use config::{NodeKind, RunConfig};
pub use finish::finish;
pub use start::RackJoin;

use crate::cli::SimPace;
use anyhow::{Context, Result};
use powerlab_core::RunClock;
use powerlab_core::hw::{Backend, HwError, NodeHandles};
use powerlab_cuda::{CudaBackend, CudaOptions};
use powerlab_health::HealthReport;
use powerlab_runner::RunResult;
use powerlab_sim::{SimBackend, SimOptions};

/// A node run's result, or the exit code of a run that did not start.
pub type Outcome = Result<RunResult, i32>;

/// The opened backend of either kind.
enum NodeBackend {
    Cuda(Box<CudaBackend>),
    Sim(Box<SimBackend>),
}

impl NodeBackend {
    fn new(cfg: &RunConfig, clock: RunClock, rack: Option<&RackJoin>) -> Self {
        match &cfg.node {
            NodeKind::Cuda(c) => NodeBackend::Cuda(Box::new(CudaBackend::new(
                CudaOptions {
                    selector: cfg.campaign.gpus.clone(),
                    mode: c.mode,
                    dtype: c.dtype,
                    nccl_world: rack.and_then(|r| r.nccl_world.clone()),
                    node_id: rack.map(|r| r.label.clone()),
                    ..Default::default()
                },
                clock,
            ))),
            NodeKind::Sim(s) => {
                let mut opts = SimOptions::new(s.profile.clone(), s.gpus);
                opts.seed = s.seed;
                opts.faults = s.faults.clone();
                opts.step_us = s.step_us;
                opts.record_truth = s.truth;
                opts.selector = cfg.campaign.gpus.clone();
                opts.node_id = sim_node_id(rack);
                NodeBackend::Sim(Box::new(SimBackend::new(opts, clock)))
            }
        }
    }

    fn open(&mut self) -> Result<NodeHandles, String> {
        match self {
            NodeBackend::Cuda(b) => b
                .open()
                .map_err(|e: HwError| format!("cannot open the real GPU node: {e}")),
            NodeBackend::Sim(b) => b
                .open()
                .map_err(|e| format!("opening the simulated node: {e}")),
        }
    }
}

/// This node's id and host name as its backend will report them (for the
/// node power sources' `{node}` and `{host}`).
fn node_names(cfg: &RunConfig, rack: Option<&RackJoin>) -> (String, String) {
    match &cfg.node {
        NodeKind::Sim(_) => {
            let id = sim_node_id(rack);
            (id.clone(), id)
        }
        NodeKind::Cuda(_) => {
            let host = powerlab_cuda::hostname();
            (
                rack.map(|r| r.label.clone())
                    .unwrap_or_else(|| host.clone()),
                host,
            )
        }
    }
}

/// The simulated node's id: its rack label, or `sim-node-0` alone.
fn sim_node_id(rack: Option<&RackJoin>) -> String {
    rack.map(|r| r.label.clone())
        .unwrap_or_else(|| "sim-node-0".into())
}

/// The preflight before any load. Real GPUs: the health capture (a rack
/// took it on every node already), kept for the manifest and the
/// under-load comparison. The simulated node: its simulated capture, only
/// judged. `Err(code)` refuses the node.
fn preflight(cfg: &RunConfig, rack: Option<&mut RackJoin>) -> Result<Option<HealthReport>, i32> {
    match &cfg.node {
        NodeKind::Cuda(_) => {
            if let Some(h) = rack.and_then(|r| r.health.take()) {
                return Ok(Some(h));
            }
            let h = crate::cmd_preflight::capture("idle", cfg.campaign.needs_nccl(), &[]);
            match start::refuse_unhealthy(cfg, &h) {
                Some(code) => Err(code),
                None => Ok(Some(h)),
            }
        }
        NodeKind::Sim(s) => {
            // NCCL is judged at run start, where its absence stops the run before load.
            if rack.is_none() {
                let n = cfg.campaign.gpus.count(s.gpus);
                let h = crate::cmd_preflight::sim_capture(n, &s.faults, &sim_node_id(None), false);
                if let Some(code) = start::refuse_unhealthy(cfg, &h) {
                    return Err(code);
                }
            }
            Ok(None)
        }
    }
}

/// The async runtime of the node: real time on several threads, or the
/// simulated node's virtual time on one paused thread.
fn runtime(cfg: &RunConfig) -> std::io::Result<tokio::runtime::Runtime> {
    match cfg.sim().map(|s| s.pace) {
        Some(SimPace::Virtual) => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build(),
        _ => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build(),
    }
}

/// The run clock: virtual for a simulated node in virtual time (anchored
/// where asked, or now), otherwise the realtime clock.
fn run_clock(cfg: &RunConfig) -> RunClock {
    match cfg.sim() {
        Some(s) if s.pace == SimPace::Virtual => {
            RunClock::virtual_at(s.epoch_ns.unwrap_or_else(|| RunClock::realtime().now_ns()))
        }
        _ => RunClock::realtime(),
    }
}

/// Runs the campaign on this node (alone, or as one node of a rack).
///
/// # Errors
/// An error that ends the command (exit 1); a refusal before load is
/// `Ok(Err(code))`.
pub fn run_node(cfg: &RunConfig, mut rack: Option<RackJoin>) -> Result<Outcome> {
    let health = match preflight(cfg, rack.as_mut()) {
        Ok(h) => h,
        Err(code) => return Ok(Err(code)),
    };
    // The node's own power sources, read once. Alone, a failure refuses
    // the run here (exit 3); in a rack it is this node's answer to "did
    // every node open?", so that every node stops together.
    let (node_id, host) = node_names(cfg, rack.as_ref());
    let node_power_refusal = start::node_power_refusal(cfg, &node_id, &host);
    if rack.is_none()
        && let Some(msg) = &node_power_refusal
    {
        errln!("{msg}");
        errln!("(no load was started)");
        return Ok(Err(crate::exit::PREFLIGHT));
    }
    // A watcher that outlives the run's runtime records a signal (during
    // the run, the rack's exchanges, collation, the metrics linger): the
    // run's own listener goes with its runtime, and it listens from before
    // the run, so no signal falls between the two.
    signals::watch_in_background("run-signals");
    let rt = runtime(cfg)?;
    let outcome = rt.block_on(async {
        let clock = run_clock(cfg);
        let mut backend = NodeBackend::new(cfg, clock, rack.as_ref());
        let opened = backend.open().and_then(|mut node| {
            if let Some(msg) = node_power_refusal {
                return Err(msg);
            }
            if let Some(s) = &cfg.sensor {
                for gap in s.check_fits(&node.info.gpus)? {
                    errln!("note: --sensor {}: {gap}", s.path.display());
                }
            }
            node.meters = crate::node_power::open_all(&crate::node_power::for_node(
                &cfg.campaign.node_power,
                &node_id,
                &host,
            ))?;
            let n = node.gpus.len();
            powerlab_campaign::plan::expand_on_rack(
                &cfg.campaign,
                n,
                cfg.repeats,
                start::position(rack.as_ref()),
            )
            .map(|p| (node, p))
            .map_err(|e| start::plan_error_text(cfg, &e))
        });
        let (node, plan) = match start::settle(rack.as_ref(), opened)? {
            Ok(v) => v,
            Err(code) => return Ok(Err(code)),
        };
        if let Some(t) = cfg.sim().and_then(|s| s.faults.die_at_ns) {
            // A node lost mid-run: the whole process goes, as if killed.
            let at = clock.now_ns() + t;
            tokio::spawn(async move {
                clock.sleep_until(at).await;
                errln!("simulated node death (--sim-fault node:die_at): aborting the process");
                std::process::abort();
            });
        }
        let result = execute::execute(
            cfg,
            &plan,
            node,
            clock,
            health,
            rack.as_ref().map(|r| r.run.clone()),
            rack.as_ref()
                .map(|r| r.siblings.as_slice())
                .unwrap_or_default(),
        )
        .await?;
        if let (NodeBackend::Sim(b), Ok(r)) = (&backend, &result)
            && cfg.sim().is_some_and(|s| s.truth)
        {
            write_truth(&r.run_dir, b)?;
        }
        Ok::<_, anyhow::Error>(result)
    })?;
    // A node power source may still be waiting on a hung BMC: its thread
    // is not waited for (its rows are on disk already).
    rt.shutdown_timeout(std::time::Duration::from_secs(2));
    Ok(outcome)
}

/// The simulated node's true waveform, beside its raw files.
fn write_truth(dir: &std::path::Path, backend: &SimBackend) -> Result<()> {
    let run = powerlab_rundir::RunDir {
        path: dir.to_path_buf(),
    };
    for (i, t) in backend.truths().iter().enumerate() {
        powerlab_rundir::write_sim_truth(
            &run,
            &format!("gpu{i}"),
            t.start_ns,
            t.step_ns,
            &t.power_w,
        )?;
    }
    write_job_truth(&run, backend)
}

/// The simulated workload processes of lifecycle rungs, as they truly
/// ran (`sim-truth/jobs.csv`: per GPU each spawn, first load, and how and
/// when its load and context ended); nothing without such rungs.
fn write_job_truth(run: &powerlab_rundir::RunDir, backend: &SimBackend) -> Result<()> {
    let jobs = backend.jobs();
    if jobs.iter().all(Vec::is_empty) {
        return Ok(());
    }
    let mut text = String::from("gpu,spawn_ns,load_ns,end,end_ns\n");
    for (i, list) in jobs.iter().enumerate() {
        for j in list {
            let (end, at) = j.end.map_or((String::new(), String::new()), |(how, at)| {
                (how.as_str().to_string(), at.to_string())
            });
            text.push_str(&format!("gpu{i},{},{},{end},{at}\n", j.spawn_ns, j.load_ns));
        }
    }
    let path = run
        .file(powerlab_rundir::RunFile::SimTruth)
        .join(powerlab_rundir::files::sim_truth::JOBS_CSV);
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
}
