//! `run`: open the backend the user asked for, run, collate.

use crate::cli::{BackendKind, RunArgs, SimPace};
use crate::ui::{BarObserver, JsonObserver};
use anyhow::{Result, anyhow};
use powerlab_campaign::{Campaign, Plan, RackPosition, load_file, plan};
use powerlab_core::RunClock;
use powerlab_core::hw::{Backend, NodeHandles};
use powerlab_cuda::{CudaBackend, CudaOptions, VirusMode};
use powerlab_rundir::{RunStatus, ToolInfo};
use powerlab_runner::RackRun;
use powerlab_runner::{Observer, RunError, RunOptions, RunResult, StopReason, run_campaign};
use powerlab_sim::{FaultPlan, Profile, SimBackend, SimOptions};
use std::sync::Arc;
use tokio::sync::watch;

pub fn tool_info() -> ToolInfo {
    ToolInfo {
        name: "powerlab".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        git_rev: env!("POWERLAB_GIT_REV").into(),
    }
}

fn gpu_count(c: &Campaign, available: usize) -> usize {
    match &c.gpus {
        powerlab_campaign::GpuSelector::All => available,
        powerlab_campaign::GpuSelector::List(l) => l.len(),
    }
}

pub fn run(a: &RunArgs) -> Result<i32> {
    let campaign = match load_file(&a.file) {
        Ok(c) => c,
        Err(e) => {
            errln!("{e}");
            return Ok(crate::exit::ERROR);
        }
    };
    if let Err(e) = check_args(a) {
        errln!("error: {e}");
        return Ok(crate::exit::ERROR);
    }
    if let Some(launch) =
        powerlab_rack::launcher::detect_from_process().filter(|l| l.world_size > 1)
    {
        return crate::cmd_rack::run(a, campaign, launch);
    }
    let outcome = match a.backend {
        BackendKind::Sim => run_sim(a, campaign, None)?,
        BackendKind::Cuda => run_real(a, campaign, None)?,
    };
    finish(a, outcome)
}

/// Latest virtual-time start: 2096 (a year-long plan still fits in i64).
const MAX_SIM_EPOCH_NS: i64 = 4_000_000_000_000_000_000;

/// Arguments checked before anything is opened or written: a bad one is
/// an error naming it, never a run that quietly ignores it.
pub fn check_args(a: &RunArgs) -> Result<(), String> {
    if let Some(s) = &a.sensor {
        powerlab_collate::sensor::read_model(s).map_err(|e| format!("--sensor: {e}"))?;
    }
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
    if a.backend == BackendKind::Sim {
        let faults = FaultPlan::parse(&a.sim_faults)?;
        faults.check_targets(usize::from(a.sim_gpus))?;
    } else if !a.sim_faults.is_empty() {
        return Err("--sim-fault is for the simulated node (--backend sim); real GPUs are never given faults".into());
    }
    Ok(())
}

/// A node's place in a rack run, for the backends.
pub struct RackJoin {
    /// The rack side of the runner.
    pub run: Arc<RackRun>,
    /// This node's label (`n002-host`), its node id in the raw files.
    pub label: String,
    /// The rack-wide NCCL communicator (real GPUs with an NCCL phase).
    pub nccl_world: Option<powerlab_cuda::NcclWorld>,
    /// The rack preflight's capture of this node (real GPUs), so it is not
    /// probed twice; the simulated node needs none.
    pub health: Option<powerlab_health::HealthReport>,
}

impl RackJoin {
    /// Every node says whether it opened its GPUs and expanded its plan;
    /// if any did not, every node stops here, before load, naming it.
    fn confirm(&self, problem: Option<String>) -> Result<(), String> {
        let msg = problem;
        let all = self
            .run
            .link
            .submit(move |t| powerlab_rack::protocol::gather_json(t, &msg))
            .wait()
            .map_err(|e| format!("rack: {e}"))?;
        let bad: Vec<String> = all
            .iter()
            .enumerate()
            .filter_map(|(r, m)| m.as_ref().map(|m| format!("{}: {m}", self.run.describe(r))))
            .collect();
        if bad.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "{} of {} nodes could not start; no load was started on any node:\n  {}",
                bad.len(),
                all.len(),
                bad.join("\n  ")
            ))
        }
    }
}

type Outcome = Result<RunResult, i32>;

fn position(rack: &Option<RackJoin>) -> RackPosition {
    rack.as_ref()
        .map(|r| r.run.position)
        .unwrap_or(RackPosition::SOLO)
}

/// Whether this node may go on to load. Alone: its own result (an error
/// ends the command). In a rack: every node's; if any failed, every node
/// stops here, before load, naming the failing nodes (`Ok(Err(code))`).
fn settle_start<T>(rack: &Option<RackJoin>, mine: Result<T, String>) -> Result<Result<T, i32>> {
    let Some(r) = rack else {
        return mine.map(Ok).map_err(|e| anyhow!(e));
    };
    let (value, problem) = match mine {
        Ok(v) => (Some(v), None),
        Err(e) => (None, Some(e)),
    };
    match (r.confirm(problem), value) {
        (Ok(()), Some(v)) => Ok(Ok(v)),
        (Err(e), _) => {
            errln!("error: {e}");
            Ok(Err(crate::exit::ERROR))
        }
        (Ok(()), None) => Ok(Err(crate::exit::ERROR)),
    }
}

/// A plan that cannot be expanded for the GPUs found, in words.
fn plan_error_text(a: &RunArgs, e: &powerlab_campaign::CampaignError) -> String {
    format!(
        "{}: {}{}",
        a.file.display(),
        e.message,
        e.allowed
            .as_ref()
            .map(|x| format!(" (allowed: {x})"))
            .unwrap_or_default()
    )
}

/// A failed preflight stops the run before load (exit 3) unless
/// `--allow-unhealthy`, which is said and recorded.
fn refuse_unhealthy(a: &RunArgs, health: &powerlab_health::HealthReport) -> Option<i32> {
    if !health.failed() {
        return None;
    }
    errln!("{}", health.headline());
    if a.allow_unhealthy {
        errln!("--allow-unhealthy: running anyway; recorded in the manifest");
        return None;
    }
    errln!(
        "(no load was started; --allow-unhealthy overrides, and the override is recorded in the manifest and on the report's first line)"
    );
    let _ = powerlab_health::report::write(health, &a.results, "preflight-failed");
    Some(crate::exit::PREFLIGHT)
}

pub fn run_real(a: &RunArgs, campaign: Campaign, mut rack: Option<RackJoin>) -> Result<Outcome> {
    // No driver, no run: there is deliberately no fallback to the simulated node.
    let mode = VirusMode::parse(&a.virus).ok_or_else(|| {
        anyhow!(
            "unknown --virus `{}` (allowed: gemm, hbm, mixed, mma)",
            a.virus
        )
    })?;
    let dtype = powerlab_cuda::GemmDtype::parse(&a.gemm_dtype).ok_or_else(|| {
        anyhow!(
            "unknown --gemm-dtype `{}` (allowed: fp16, bf16)",
            a.gemm_dtype
        )
    })?;
    // NVLink multicast stays off for this process and everything it loads.
    // SAFETY-free: set before any thread is started.
    if std::env::var_os("NCCL_NVLS_ENABLE").is_none() {
        // SAFETY: single-threaded at this point (no runtime, no engine threads yet).
        unsafe_env::set("NCCL_NVLS_ENABLE", "0");
    }
    // Preflight, read-only, before any load (a rack ran it on every node already).
    let health = match rack.as_mut().and_then(|r| r.health.take()) {
        Some(h) => h,
        None => {
            let needs_nccl = campaign
                .phases
                .iter()
                .any(|p| p.kind == powerlab_campaign::PhaseKind::Nccl);
            let h = crate::cmd_preflight::capture("idle", needs_nccl);
            if let Some(code) = refuse_unhealthy(a, &h) {
                return Ok(Err(code));
            }
            h
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let outcome = rt.block_on(async {
        let clock = RunClock::realtime();
        let opts = CudaOptions {
            selector: campaign.gpus.clone(),
            mode,
            dtype,
            nccl_world: rack.as_ref().and_then(|r| r.nccl_world.clone()),
            ..Default::default()
        };
        let mut backend = CudaBackend::new(opts, clock);
        let opened = backend
            .open()
            .map_err(|e| format!("cannot open the real GPU node: {e}"))
            .and_then(|node| {
                let n = node.gpus.len();
                plan::expand_on_rack(&campaign, n, a.repeats, position(&rack))
                    .map(|p| (node, p))
                    .map_err(|e| plan_error_text(a, &e))
            });
        let (node, plan) = match settle_start(&rack, opened)? {
            Ok(v) => v,
            Err(code) => return Ok(Err(code)),
        };
        execute(
            a,
            &campaign,
            &plan,
            node,
            clock,
            Some(health),
            rack.as_ref().map(|r| r.run.clone()),
        )
        .await
    })?;
    drop(rt);
    Ok(outcome)
}

pub fn run_sim(a: &RunArgs, campaign: Campaign, rack: Option<RackJoin>) -> Result<Outcome> {
    let profile = Profile::by_name(&a.sim_profile).ok_or_else(|| {
        anyhow!(
            "unknown --sim-profile `{}` (allowed: {})",
            a.sim_profile,
            Profile::NAMES
        )
    })?;
    let faults = FaultPlan::parse(&a.sim_faults).map_err(|e| anyhow!(e))?;
    if !(10..=5000).contains(&a.sim_step_us)
        || 1000 % a.sim_step_us != 0 && a.sim_step_us % 1000 != 0
    {
        return Err(anyhow!(
            "--sim-step-us {} must divide 1000 or be a multiple of it, between 10 and 5000",
            a.sim_step_us
        ));
    }
    let n = gpu_count(&campaign, usize::from(a.sim_gpus));
    let node_id = rack
        .as_ref()
        .map(|r| r.label.clone())
        .unwrap_or_else(|| "sim-node-0".into());
    // The simulated node's preflight (the rack ran it on every node already).
    // NCCL is judged at run start, where its absence stops the run before load.
    if rack.is_none() {
        let health = crate::cmd_preflight::sim_capture(n, &faults, &node_id, false);
        if let Some(code) = refuse_unhealthy(a, &health) {
            return Ok(Err(code));
        }
    }
    let rt = match a.sim_pace {
        SimPace::Virtual => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()?,
        SimPace::Realtime => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?,
    };
    let outcome = rt.block_on(async {
        let clock = match a.sim_pace {
            SimPace::Virtual => RunClock::virtual_at(
                a.sim_epoch_ns
                    .unwrap_or_else(|| RunClock::realtime().now_ns()),
            ),
            SimPace::Realtime => RunClock::realtime(),
        };
        let mut opts = SimOptions::new(profile, usize::from(a.sim_gpus));
        opts.seed = a.seed;
        opts.faults = faults;
        opts.step_us = a.sim_step_us;
        opts.record_truth = a.sim_truth;
        opts.selector = campaign.gpus.clone();
        opts.node_id = node_id.clone();
        let die_at = opts.faults.die_at_ns;
        let mut backend = SimBackend::new(opts, clock);
        let opened = plan::expand_on_rack(&campaign, n, a.repeats, position(&rack))
            .map_err(|e| plan_error_text(a, &e))
            .and_then(|plan| {
                backend
                    .open()
                    .map(|node| (node, plan))
                    .map_err(|e| format!("opening the simulated node: {e}"))
            });
        let (node, plan) = match settle_start(&rack, opened)? {
            Ok(v) => v,
            Err(code) => return Ok(Err(code)),
        };
        if let Some(t) = die_at {
            // A node lost mid-run: the whole process goes, as if killed.
            let at = clock.now_ns() + t;
            tokio::spawn(async move {
                clock.sleep_until(at).await;
                errln!("simulated node death (--sim-fault node:die_at): aborting the process");
                std::process::abort();
            });
        }
        let result = execute(
            a,
            &campaign,
            &plan,
            node,
            clock,
            None,
            rack.as_ref().map(|r| r.run.clone()),
        )
        .await?;
        if a.sim_truth
            && let Ok(r) = &result
        {
            write_truth(&r.run_dir, &backend)?;
        }
        Ok::<_, anyhow::Error>(result)
    })?;
    drop(rt);
    Ok(outcome)
}

fn write_truth(dir: &std::path::Path, backend: &SimBackend) -> Result<()> {
    use std::io::Write;
    let out = dir.join("sim-truth");
    std::fs::create_dir_all(&out)?;
    for (i, t) in backend.truths().iter().enumerate() {
        let path = out.join(format!("gpu{i}.csv"));
        let mut w = std::io::BufWriter::new(std::fs::File::create(&path)?);
        writeln!(w, "t_ns,true_power_w")?;
        for (k, p) in t.power_w.iter().enumerate() {
            writeln!(w, "{},{:.2}", t.start_ns + k as i64 * t.step_ns, p)?;
        }
    }
    Ok(())
}

fn spawn_signal_handlers(abort: watch::Sender<Option<StopReason>>) {
    tokio::spawn(async move {
        use tokio::signal::unix::{SignalKind, signal};
        // SIGHUP (a dropped ssh session), SIGQUIT, SIGUSR1 and SIGUSR2 stop a run the
        // way SIGTERM does: load off, samples flushed, the manifest says why.
        let mut streams = Vec::new();
        for (kind, name) in [
            (SignalKind::terminate(), "SIGTERM received"),
            (
                SignalKind::hangup(),
                "SIGHUP received (the terminal or ssh session went away; run under tmux or nohup to survive that)",
            ),
            (SignalKind::quit(), "SIGQUIT received"),
            (SignalKind::user_defined1(), "SIGUSR1 received"),
            (SignalKind::user_defined2(), "SIGUSR2 received"),
        ] {
            match signal(kind) {
                Ok(s) => streams.push((s, name)),
                Err(e) => tracing::warn!("cannot watch for {name}: {e}"),
            }
        }
        let any = first_signal(streams);
        let reason = tokio::select! {
            _ = tokio::signal::ctrl_c() => "SIGINT (Ctrl-C) received",
            name = any => name,
        };
        powerlab_runner::rack::SIGNAL_SEEN.store(true, std::sync::atomic::Ordering::Relaxed);
        // Under mpirun / srun a SIGTERM usually means another rank failed.
        let reason = if powerlab_rack::launcher::detect_from_process()
            .is_some_and(|l| l.world_size > 1)
        {
            format!(
                "{reason} (under a launcher: it ends every rank when one fails or is killed; its own message names that rank)"
            )
        } else {
            reason.to_string()
        };
        abort.send_if_modified(|cur| {
            if cur.is_none() {
                *cur = Some(StopReason::Interrupted(reason.clone()));
                true
            } else {
                false
            }
        });
    });
}

/// Waits for the first of several signal streams; returns its name.
async fn first_signal(
    mut streams: Vec<(tokio::signal::unix::Signal, &'static str)>,
) -> &'static str {
    if streams.is_empty() {
        return std::future::pending().await;
    }
    std::future::poll_fn(|cx| {
        for (s, name) in streams.iter_mut() {
            if s.poll_recv(cx).is_ready() {
                return std::task::Poll::Ready(*name);
            }
        }
        std::task::Poll::Pending
    })
    .await
}

/// Runs the campaign; `Err(code)` when it could not start.
async fn execute(
    a: &RunArgs,
    campaign: &Campaign,
    plan: &Plan,
    node: NodeHandles,
    clock: RunClock,
    health: Option<powerlab_health::HealthReport>,
    rack: Option<Arc<RackRun>>,
) -> Result<Result<RunResult, i32>> {
    let (abort_tx, _) = watch::channel(None);
    spawn_signal_handlers(abort_tx.clone());
    let mut opts = RunOptions::new(a.results.clone(), tool_info());
    opts.allow_unhealthy = a.allow_unhealthy;
    opts.rack = rack;
    // One campaign at a time per node: the real node's lock is host-wide;
    // a simulated node is the results directory it writes into.
    opts.lock_path = Some(match a.backend {
        BackendKind::Cuda => powerlab_runner::lock::default_lock_path(),
        // Every rank of a simulated rack shares one results directory: the
        // rack's run directory keeps them apart.
        BackendKind::Sim if opts.rack.is_some() => {
            let node = opts
                .rack
                .as_ref()
                .map(|r| r.nodes[r.position.rank].clone())
                .unwrap_or_default();
            std::env::temp_dir().join(format!("powerlab-sim-{node}-{}.lock", std::process::id()))
        }
        BackendKind::Sim => {
            if let Err(e) = powerlab_runner::check_results_root(&a.results) {
                errln!("error: {e}");
                return Ok(Err(crate::exit::ERROR));
            }
            a.results.join(".sim-node.lock")
        }
    });
    if let Some(h) = &health {
        opts.health = Some((
            serde_json::to_value(h)?,
            powerlab_health::report::markdown(h),
        ));
    }
    let mut bar;
    let mut json;
    let observer: &mut dyn Observer = if a.json {
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
            run_dir: None,
            done: false,
        };
        &mut under_load
    } else {
        observer
    };
    match run_campaign(campaign, plan, node, clock, &opts, abort_tx, observer).await {
        Ok(r) => Ok(Ok(r)),
        Err(RunError::Missing(e)) => {
            errln!("error: the campaign cannot start, nothing was run: {e}");
            Ok(Err(crate::exit::ERROR))
        }
        Err(e) => Err(anyhow!(e)),
    }
}

/// Collates (outside any async runtime: polars runs its own) and maps the
/// outcome to an exit code.
pub fn finish(a: &RunArgs, outcome: Result<RunResult, i32>) -> Result<i32> {
    let result = match outcome {
        Ok(r) => r,
        Err(code) => return Ok(code),
    };
    if let Some(s) = &a.sensor {
        let to = result.run_dir.join("sensor.json");
        if let Err(e) = std::fs::copy(s, &to) {
            errln!(
                "error: copying --sensor {} into the run directory failed: {e}",
                s.display()
            );
        }
    }
    let collated = if a.no_collate {
        None
    } else {
        Some(powerlab_collate::collate(&result.run_dir))
    };
    if let Some(Ok(out)) = &collated {
        // A run that calibrated itself keeps its sensor model beside its raw data.
        if out.sensor.model.kind == powerlab_collate::sensor::ModelKind::Calibrated {
            let to = result.run_dir.join("sensor.json");
            let _ = std::fs::write(
                &to,
                serde_json::to_string_pretty(&out.sensor.model).unwrap_or_default() + "\n",
            );
            if !a.json {
                outln!("sensor model: {}", to.display());
                for g in &out.sensor.model.gpus {
                    for p in &g.paths {
                        let f = |v: Option<f64>| {
                            v.map(|v| format!("{v:.1}")).unwrap_or_else(|| "–".into())
                        };
                        outln!(
                            "  {} {:<11} update {:>7} ms  window {:>7} ms  latency {:>6} ms",
                            g.gpu,
                            p.instrument,
                            f(p.update_period_ms),
                            f(p.window_ms),
                            f(p.latency_ms)
                        );
                    }
                }
            }
        }
    }
    match &collated {
        Some(Ok(out)) if !a.json => crate::ui::print_summary(&out.rungs),
        Some(Err(e)) => errln!("error: collating {} failed: {e}", result.run_dir.display()),
        _ => {}
    }
    if !a.json {
        outln!("run directory: {}", result.run_dir.display());
    }
    let code = match &result.status {
        RunStatus::Complete => {
            if matches!(collated, Some(Err(_))) {
                crate::exit::ERROR
            } else {
                0
            }
        }
        RunStatus::Interrupted { .. } => crate::exit::INTERRUPTED,
        RunStatus::Failed { .. } | RunStatus::Running => crate::exit::RUN_FAILED,
    };
    Ok(code)
}

mod unsafe_env {
    /// Sets an environment variable before any other thread exists.
    #[allow(unsafe_code)]
    pub fn set(key: &str, value: &str) {
        // SAFETY: called from main before the runtime or any engine thread starts.
        unsafe { std::env::set_var(key, value) };
    }
}
