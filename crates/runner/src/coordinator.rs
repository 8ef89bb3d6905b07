//! The coordinator: runs the plan rung by rung behind a barrier.

use crate::StopReason;
use crate::barrier::{choose_lead_ns, start_error_ns};
use crate::error::RunError;
use crate::lock;
use crate::observer::Observer;
use crate::rack::{RackRun, RackSync};
use crate::sampler::{SamplerConfig, SamplerMsg, SamplerStats, spawn_sampler};
use crate::worker::{WorkerCmd, spawn_worker};
use powerlab_campaign::{Campaign, NcclStep, PhaseKind, Plan, Rung};
use powerlab_core::RunClock;
use powerlab_core::collective::{FabricSpec, SweepSpec};
use powerlab_core::hw::{Capability, GpuSchedule, HwError, NodeHandles, Readiness, RungOutcome};
use powerlab_core::shape::{LoadKind, LoadShape};
use powerlab_rundir::events::DEVICE_CLOCK_TOPIC;
use powerlab_rundir::{
    CollectiveWriter, EdgeWriter, EventLog, FORMAT_VERSION, GpuReady, Manifest, RawWriter, RunDir,
    RunEvent, RunStatus, RungInfo, ToolInfo,
};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, watch};

/// How to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Where run directories go.
    pub results_root: PathBuf,
    /// Preflight was overridden.
    pub allow_unhealthy: bool,
    /// The command line, for the manifest.
    pub command: Vec<String>,
    /// The tool, for the manifest.
    pub tool: ToolInfo,
    /// Longest wait for every GPU to report ready, ns.
    pub prepare_timeout_ns: i64,
    /// Take the node lock at this path (real hardware); None for the simulated node.
    pub lock_path: Option<PathBuf>,
    /// Minimum free space required under the results root, bytes (None: estimate from the plan).
    pub min_free_bytes: Option<u64>,
    /// The idle preflight (health.json content, health-report.md text), written into the run directory.
    pub health: Option<(serde_json::Value, String)>,
    /// This node's part in a rack run (None: a single node).
    pub rack: Option<Arc<RackRun>>,
}

impl RunOptions {
    /// Defaults for a results root.
    pub fn new(results_root: PathBuf, tool: ToolInfo) -> Self {
        RunOptions {
            results_root,
            allow_unhealthy: false,
            command: std::env::args().collect(),
            tool,
            prepare_timeout_ns: 180_000_000_000,
            lock_path: None,
            min_free_bytes: None,
            health: None,
            rack: None,
        }
    }
}

/// What a run produced.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// The run directory.
    pub run_dir: PathBuf,
    /// How it ended.
    pub status: RunStatus,
    /// Rungs completed.
    pub rungs_completed: usize,
    /// Per-GPU sampler statistics.
    pub samplers: Vec<SamplerStats>,
    /// How every node of the rack ended, by rank (None: a single node, or
    /// the rack exchange was abandoned).
    pub rack_ends: Option<Vec<powerlab_rack::NodeEnd>>,
}

fn rung_info(r: &Rung) -> RungInfo {
    RungInfo {
        id: r.id,
        label: r.label.clone(),
        phase: r.phase.clone(),
        kind: r.kind.as_str().into(),
        mode: r.mode.as_str().into(),
        period_ms: r.period_ms,
        nominal_period_ms: r.nominal_period_ms,
        duty: r.duty,
        repeat: r.repeat,
        repeats: r.repeats,
    }
}

/// The schedule of GPU `i` for a rung whose window starts at `epoch`.
pub fn schedule_for(rung: &Rung, i: usize, epoch: i64) -> GpuSchedule {
    let shape = match rung.kind {
        PhaseKind::Idle => LoadShape::Idle,
        PhaseKind::Sustained | PhaseKind::Soak => LoadShape::Constant {
            load: LoadKind::Virus,
        },
        PhaseKind::Nccl => nccl_shape(rung),
        PhaseKind::Duty => LoadShape::Square {
            load: LoadKind::Virus,
            period_ns: (rung.period_ms.unwrap_or(1000.0) * 1e6).round() as i64,
            duty: rung.duty,
            origin_ns: epoch + rung.offsets_ns.get(i).copied().unwrap_or(0),
            ramp_ns: rung.ramp_ns,
        },
    };
    GpuSchedule {
        rung_id: rung.id,
        start_ns: epoch,
        end_ns: epoch + rung.duration_ns,
        shape,
    }
}

/// The load of an NCCL rung: the sweep, or the fabric / bulk-synchronous all-reduce.
fn nccl_shape(rung: &Rung) -> LoadShape {
    let Some(n) = &rung.nccl else {
        return LoadShape::Constant {
            load: LoadKind::Fabric,
        };
    };
    let timeout_ns = (n.timeout_s * 1e9) as i64;
    match rung.nccl_step {
        Some(NcclStep::Sweep) => LoadShape::Sweep {
            spec: SweepSpec {
                collectives: n.collectives.clone(),
                sizes: n.sizes(),
                warmup_iters: n.warmup_iters,
                iterations: n.iterations,
                timeout_ns,
            },
        },
        Some(NcclStep::Bsp) => LoadShape::Fabric {
            spec: FabricSpec {
                bytes: n.fabric_bytes,
                compute_ns: n.bsp_compute_ms.map(|ms| (ms * 1e6) as i64),
                timeout_ns,
            },
        },
        Some(NcclStep::Fabric) | None => LoadShape::Fabric {
            spec: FabricSpec {
                bytes: n.fabric_bytes,
                compute_ns: None,
                timeout_ns,
            },
        },
    }
}

/// Free bytes the run needs: ~150 rows/s per GPU at ~50 bytes, with margin.
fn needed_bytes(plan: &Plan) -> u64 {
    let secs = plan.total_ns() as f64 / 1e9;
    (secs * plan.gpu_count as f64 * 150.0 * 50.0 * 1.5) as u64 + 16 * 1024 * 1024
}

struct Ctx<'a> {
    clock: RunClock,
    events: EventLog,
    observer: &'a mut dyn Observer,
    abort_tx: watch::Sender<Option<StopReason>>,
    abort_rx: watch::Receiver<Option<StopReason>>,
    monitor_rx: mpsc::UnboundedReceiver<(RunEvent, Option<StopReason>)>,
}

impl Ctx<'_> {
    fn log(&mut self, e: RunEvent) -> Result<(), RunError> {
        self.observer.event(&e);
        self.events.append(&e).map_err(RunError::from)
    }

    fn pump_monitor(&mut self) -> Result<(), RunError> {
        while let Ok((e, _)) = self.monitor_rx.try_recv() {
            self.log(e)?;
        }
        Ok(())
    }

    fn stop_reason(&self) -> Option<StopReason> {
        self.abort_rx.borrow().clone()
    }

    /// Awaits `f` unless the run is stopped first; reports progress each second.
    async fn guarded<F: Future>(
        &mut self,
        f: F,
        progress: (i64, i64, i64, &str),
    ) -> Result<F::Output, StopReason> {
        tokio::pin!(f);
        let (done_ns, total_ns, start_ns, label) = progress;
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut abort_rx = self.abort_rx.clone();
        loop {
            tokio::select! {
                out = &mut f => {
                    // A worker that answered because the run was aborted must
                    // not turn the abort's reason into its own error.
                    if let Some(reason) = self.stop_reason() {
                        return Err(reason);
                    }
                    return Ok(out);
                }
                r = abort_rx.wait_for(|v| v.is_some()) => {
                    let reason = r.ok().and_then(|v| v.clone()).unwrap_or_else(|| StopReason::Failed("abort channel closed".into()));
                    return Err(reason);
                }
                _ = tick.tick() => {
                    let elapsed = (self.clock.now_ns() - start_ns).max(0);
                    self.observer.progress(done_ns + elapsed, total_ns, label);
                }
            }
        }
    }
}

async fn ask_all<T: Send + 'static>(
    workers: &[mpsc::Sender<WorkerCmd>],
    make: impl Fn(usize, oneshot::Sender<T>) -> WorkerCmd,
) -> Result<Vec<T>, HwError> {
    let mut rxs = Vec::new();
    for (i, w) in workers.iter().enumerate() {
        let (tx, rx) = oneshot::channel();
        w.send(make(i, tx))
            .await
            .map_err(|_| HwError::Other(format!("worker {i} is gone")))?;
        rxs.push(rx);
    }
    let mut out = Vec::new();
    for (i, rx) in rxs.into_iter().enumerate() {
        out.push(
            rx.await
                .map_err(|_| HwError::Other(format!("worker {i} ended without answering")))?,
        );
    }
    Ok(out)
}

fn first_error<T>(
    results: Vec<Result<T, HwError>>,
    keys: &[String],
) -> Result<Vec<T>, (String, HwError)> {
    let mut out = Vec::new();
    for (i, r) in results.into_iter().enumerate() {
        match r {
            Ok(v) => out.push(v),
            Err(e) => return Err((keys[i].clone(), e)),
        }
    }
    Ok(out)
}

/// The results root must be a writable directory outside every run
/// directory (a run inside another's `report/` would be deleted by the next
/// collate of the outer one). Creates it if needed.
pub fn check_results_root(root: &Path) -> Result<(), String> {
    let abs = std::path::absolute(root)
        .map_err(|e| format!("results directory {}: {e}", root.display()))?;
    for dir in abs.ancestors() {
        if dir.join("manifest.json").is_file() {
            return Err(format!(
                "results directory {} is inside the run directory {} (it holds a manifest.json); choose a --results outside any run",
                root.display(),
                dir.display()
            ));
        }
    }
    std::fs::create_dir_all(root).map_err(|e| {
        format!(
            "cannot create the results directory {}: {e}",
            root.display()
        )
    })?;
    let probe = root.join(format!(".powerlab-write-test-{}", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e)
            if e.kind() == std::io::ErrorKind::PermissionDenied
                || e.raw_os_error() == Some(libc::EROFS) =>
        {
            Err(format!(
                "results directory {} is not writable ({e}); choose another --results",
                root.display()
            ))
        }
        Err(e) => Err(format!(
            "cannot write into the results directory {}: {e}",
            root.display()
        )),
    }
}

/// Runs a campaign. Everything the run produced stays in the run directory
/// whatever happens; the result says how it ended.
pub async fn run_campaign(
    campaign: &Campaign,
    plan: &Plan,
    node: NodeHandles,
    clock: RunClock,
    opts: &RunOptions,
    abort_tx: watch::Sender<Option<StopReason>>,
    observer: &mut dyn Observer,
) -> Result<RunResult, RunError> {
    // 1. Capabilities, before anything is created or loaded.
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
    let _lock = match &opts.lock_path {
        Some(p) => Some(
            lock::acquire(p, &format!("campaign `{}`", campaign.name)).map_err(RunError::Locked)?,
        ),
        None => None,
    };

    // 2. Run directory, with room for the run: checked first, so that a
    // refused run leaves nothing behind.
    let start_ns = clock.now_ns();
    let parent = match &opts.rack {
        Some(r) => r
            .node_dir
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| r.node_dir.clone()),
        None => opts.results_root.clone(),
    };
    check_results_root(&parent).map_err(RunError::Results)?;
    let needed = opts.min_free_bytes.unwrap_or_else(|| needed_bytes(plan));
    match fs2::available_space(&parent) {
        Ok(free) if free < needed => {
            return Err(RunError::Results(format!(
                "{} has {} MB free, the run needs about {} MB of raw samples; free space or choose another --results",
                parent.display(),
                free / 1_000_000,
                needed / 1_000_000
            )));
        }
        Err(e) => {
            return Err(RunError::Results(format!(
                "cannot read free space of {}: {e}",
                parent.display()
            )));
        }
        _ => {}
    }
    let dir = match &opts.rack {
        Some(r) => RunDir::create_exact(&r.node_dir)?,
        None => RunDir::create(
            &opts.results_root,
            &campaign.name,
            &node.info.host,
            start_ns,
        )?,
    };
    // Held while this process writes the directory: a collation meanwhile
    // refuses (unless asked for a snapshot) instead of reading half a run.
    let _run_lock = powerlab_rundir::lock::try_hold(
        &dir.run_lock(),
        &format!("writing this run (campaign `{}`)", campaign.name),
    )
    .map_err(|e| RunError::Results(e.to_string()))?;
    let mut manifest = Manifest {
        format_version: FORMAT_VERSION,
        tool: opts.tool.clone(),
        campaign: campaign.name.clone(),
        campaign_resolved: serde_json::to_value(campaign).unwrap_or_default(),
        plan: serde_json::to_value(plan).unwrap_or_default(),
        backend: node.info.clone(),
        clock: clock.describe().into(),
        started_ns: start_ns,
        ended_ns: None,
        started_utc: powerlab_rundir::layout::utc_rfc3339(start_ns),
        status: RunStatus::Running,
        allow_unhealthy: opts.allow_unhealthy,
        command: opts.command.clone(),
        raw_index: true,
        checksums: Vec::new(),
    };
    manifest.write(&dir.manifest())?;
    if let Some((json, md)) = &opts.health {
        let p = dir.path.join("health.json");
        std::fs::write(
            &p,
            serde_json::to_string_pretty(json).unwrap_or_default() + "\n",
        )
        .map_err(|e| RunError::RunDir(powerlab_rundir::RunDirError::io(&p, e)))?;
        let p = dir.path.join("health-report.md");
        std::fs::write(&p, md)
            .map_err(|e| RunError::RunDir(powerlab_rundir::RunDirError::io(&p, e)))?;
    }
    let events = EventLog::create(&dir.events())?;
    let mut edges = EdgeWriter::create(&dir.edges())?;
    let mut collectives = CollectiveWriter::new(&dir.collectives());
    observer.message(&format!("run directory: {}", dir.path.display()));

    // 3. Samplers (with their monitor) and workers.
    let keys: Vec<String> = node.info.gpus.iter().map(|g| g.key.clone()).collect();
    let sampler_cfg = SamplerConfig {
        poll_ns: (campaign.sampling.poll_interval_ms * 1e6) as i64,
        buffer_ns: (campaign.sampling.buffer_interval_ms * 1e6) as i64,
        fields_ns: (campaign.sampling.field_interval_ms * 1e6) as i64,
        status_ns: (campaign.sampling.status_interval_ms * 1e6) as i64,
        flush_ns: (campaign.sampling.flush_interval_ms * 1e6) as i64,
        limits: campaign.limits.clone(),
        unresponsive_ns: 2_000_000_000,
    };
    let (stop_samplers_tx, stop_samplers_rx) = watch::channel(false);
    let (sampler_tx, mut sampler_rx) = mpsc::unbounded_channel::<SamplerMsg>();
    let mut sampler_handles = Vec::new();
    for (i, source) in node.sources.into_iter().enumerate() {
        let writer = RawWriter::create(&dir.raw_dir(), &node.info.node_id, &keys[i], start_ns)?;
        sampler_handles.push(spawn_sampler(
            i,
            source,
            writer,
            clock,
            sampler_cfg.clone(),
            sampler_tx.clone(),
            stop_samplers_rx.clone(),
        ));
    }
    drop(sampler_tx);
    let (monitor_tx, monitor_rx) = mpsc::unbounded_channel();
    let monitor_abort = abort_tx.clone();
    let max_node_w = campaign.limits.max_node_power_w;
    let n_gpus = keys.len();
    let monitor_clock = clock;
    let monitor = tokio::spawn(async move {
        let mut latest = vec![0.0f64; n_gpus];
        let mut tripped = false;
        while let Some(msg) = sampler_rx.recv().await {
            match msg {
                SamplerMsg::Power { gpu, watts } => {
                    latest[gpu] = watts;
                    let total: f64 = latest.iter().sum();
                    if let Some(limit) = max_node_w
                        && total > limit
                        && !tripped
                    {
                        tripped = true;
                        let reading = format!(
                            "node power {total:.0} W (sum of the latest buffered samples) > limit {limit:.0} W"
                        );
                        let reason =
                            StopReason::Failed(format!("interlock max_node_power_w: {reading}"));
                        monitor_abort.send_replace(Some(reason.clone()));
                        let _ = monitor_tx.send((
                            RunEvent::Interlock {
                                ts_ns: monitor_clock.now_ns(),
                                limit: "max_node_power_w".into(),
                                reading,
                            },
                            Some(reason),
                        ));
                    }
                }
                SamplerMsg::Event(e, reason) => {
                    if let Some(r) = &reason {
                        monitor_abort.send_if_modified(|cur| {
                            if cur.is_none() {
                                *cur = Some(r.clone());
                                true
                            } else {
                                false
                            }
                        });
                    }
                    let _ = monitor_tx.send((*e, reason));
                }
            }
        }
    });
    let abort_rx = abort_tx.subscribe();
    let mut workers = Vec::new();
    let mut worker_handles = Vec::new();
    for gpu in node.gpus {
        let (tx, h) = spawn_worker(gpu, abort_rx.clone());
        workers.push(tx);
        worker_handles.push(h);
    }

    let mut ctx = Ctx {
        clock,
        events,
        observer,
        abort_tx,
        abort_rx,
        monitor_rx,
    };
    ctx.log(RunEvent::RunStarted {
        ts_ns: start_ns,
        campaign: campaign.name.clone(),
        backend: node.info.backend.clone(),
        rungs: plan.rungs.len(),
    })?;
    let mut rack = opts
        .rack
        .clone()
        .map(|r| RackSync::new(r, clock.is_virtual()));
    let alarm_watch = rack
        .as_ref()
        .map(|r| r.spawn_alarm_watch(ctx.abort_tx.clone()));
    if let Some(r) = &opts.rack {
        let detail = serde_json::json!({ "rank": r.position.rank, "nodes": r.nodes, "stagger": campaign.rack.stagger.as_str() });
        ctx.log(RunEvent::Note {
            ts_ns: start_ns,
            topic: "rack".into(),
            detail,
        })?;
    }

    // 4. The rungs.
    let total_ns = plan.total_ns();
    let mut done_ns = 0i64;
    let mut completed = 0usize;
    let tolerance_ns = (campaign.limits.barrier_tolerance_ms * 1e6) as i64;
    let mut outcome: Result<(), StopReason> = Ok(());
    for rung in &plan.rungs {
        ctx.pump_monitor()?;
        if let Some(r) = ctx.stop_reason() {
            outcome = Err(r);
            break;
        }
        match run_rung(
            &mut ctx,
            rung,
            &workers,
            &keys,
            (&mut edges, &mut collectives),
            rack.as_mut(),
            tolerance_ns,
            done_ns,
            total_ns,
            opts.prepare_timeout_ns,
        )
        .await
        {
            Ok(()) => {
                completed += 1;
                done_ns += rung.nominal_ns();
                ctx.observer.progress(done_ns, total_ns, &rung.label);
            }
            Err(reason) => {
                outcome = Err(reason);
                break;
            }
        }
    }
    // A node that failed tells the others now, before it stops its own GPUs.
    if let Some(sync) = &rack {
        sync.post_alarm(&sync.end_of(&outcome));
    }
    if let Some(w) = alarm_watch {
        w.abort();
    }

    // 5. Stop every GPU, then the samplers (final drain and flush).
    if let Err(r) = &outcome {
        ctx.abort_tx.send_if_modified(|cur| {
            if cur.is_none() {
                *cur = Some(r.clone());
                true
            } else {
                false
            }
        });
    }
    for w in &workers {
        let (tx, rx) = oneshot::channel();
        if w.send(WorkerCmd::Stop { reply: tx }).await.is_ok() {
            let _ = tokio::time::timeout(Duration::from_secs(2), rx).await;
        }
    }
    drop(workers);
    for h in worker_handles {
        let _ = tokio::time::timeout(Duration::from_secs(2), h).await;
    }
    let _ = stop_samplers_tx.send(true);
    let mut samplers = Vec::new();
    for h in sampler_handles {
        match tokio::time::timeout(Duration::from_secs(5), h).await {
            Ok(Ok(s)) => samplers.push(s),
            _ => samplers.push(SamplerStats::default()),
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(1), monitor).await;
    ctx.pump_monitor()?;
    // Tell the rack how this node ended, and learn how every node did.
    let mut rack_ends = None;
    if let Some(sync) = rack.as_mut() {
        let end = sync.end_of(&outcome);
        match sync.finish(end).await {
            Ok(ends) => {
                let detail = serde_json::to_value(&ends).unwrap_or_default();
                ctx.log(RunEvent::Note {
                    ts_ns: ctx.clock.now_ns(),
                    topic: "rack_ends".into(),
                    detail,
                })?;
                if outcome.is_ok()
                    && let Some((rank, e)) = ends
                        .iter()
                        .enumerate()
                        .find(|(_, e)| !matches!(e, powerlab_rack::NodeEnd::Complete))
                {
                    let who = opts
                        .rack
                        .as_ref()
                        .map(|r| r.describe(rank))
                        .unwrap_or_default();
                    outcome = Err(StopReason::Failed(format!(
                        "{who} did not complete: {}",
                        e.reason().unwrap_or("?")
                    )));
                }
                rack_ends = Some(ends);
            }
            Err(r) => ctx.observer.message(&format!("rack: {}", r.text())),
        }
    }
    let end_ns = ctx.clock.now_ns();
    let status = match &outcome {
        Ok(()) => RunStatus::Complete,
        Err(StopReason::Interrupted(r)) => RunStatus::Interrupted { reason: r.clone() },
        Err(StopReason::Failed(r)) => RunStatus::Failed { reason: r.clone() },
    };
    let (status_name, reason) = match &status {
        RunStatus::Complete => ("complete", None),
        RunStatus::Interrupted { reason } => ("interrupted", Some(reason.clone())),
        RunStatus::Failed { reason } => ("failed", Some(reason.clone())),
        RunStatus::Running => ("running", None),
    };
    ctx.log(RunEvent::Note {
        ts_ns: end_ns,
        topic: "samplers".into(),
        detail: serde_json::to_value(&samplers).unwrap_or_default(),
    })?;
    ctx.log(RunEvent::RunEnded {
        ts_ns: end_ns,
        status: status_name.into(),
        reason,
    })?;
    manifest.ended_ns = Some(end_ns);
    manifest.status = status.clone();
    // Every other file is flushed and closed to writing by now.
    manifest.checksums = ["edges.csv", "collectives.csv", "events.jsonl"]
        .iter()
        .filter_map(|f| powerlab_rundir::FileSum::of(&dir.path, f))
        .collect();
    manifest.write(&dir.manifest())?;
    Ok(RunResult {
        run_dir: dir.path,
        status,
        rungs_completed: completed,
        samplers,
        rack_ends,
    })
}

#[allow(clippy::too_many_arguments)]
async fn run_rung(
    ctx: &mut Ctx<'_>,
    rung: &Rung,
    workers: &[mpsc::Sender<WorkerCmd>],
    keys: &[String],
    (edges, collectives): (&mut EdgeWriter, &mut CollectiveWriter),
    rack: Option<&mut RackSync>,
    tolerance_ns: i64,
    done_ns: i64,
    total_ns: i64,
    prepare_timeout_ns: i64,
) -> Result<(), StopReason> {
    let fail =
        |what: &str, gpu: &str, e: &HwError| StopReason::Failed(format!("{what} on {gpu}: {e}"));
    let io = |e: RunError| StopReason::Failed(format!("writing the run directory failed: {e}"));
    let label = rung.label.clone();
    let t0 = ctx.clock.now_ns();

    // Barrier, part 1: every GPU warm and ready (they keep warm meanwhile).
    let warm_load = schedule_for(rung, 0, 0).shape.load();
    let warmup = rung.warmup_ns;
    let prepare = ask_all(workers, |_, reply| WorkerCmd::Prepare {
        warmup_ns: warmup,
        warm_load,
        reply,
    });
    let prepare = tokio::time::timeout(Duration::from_nanos(prepare_timeout_ns as u64), prepare);
    let ready: Vec<Readiness> = match ctx
        .guarded(prepare, (done_ns, total_ns, t0, &label))
        .await?
    {
        Err(_) => {
            return Err(StopReason::Failed(format!(
                "rung {}: not every GPU reported ready within {} s; a GPU is hung or far slower than the others",
                rung.label,
                prepare_timeout_ns / 1_000_000_000
            )));
        }
        Ok(Err(e)) => return Err(StopReason::Failed(format!("rung {}: {e}", rung.label))),
        Ok(Ok(results)) => first_error(results, keys).map_err(|(g, e)| fail("warm-up", &g, &e))?,
    };

    // Barrier, part 2: measure dispatch, choose the epoch from readiness.
    let ping_start = std::time::Instant::now();
    let _ = ask_all(workers, |_, reply| WorkerCmd::Ping { reply }).await;
    let dispatch_ns = ping_start.elapsed().as_nanos() as i64;
    let lead_ns = choose_lead_ns(&ready, dispatch_ns);
    let mut now = ctx.clock.now_ns();
    // Across a rack, every node starts at the epoch all of them derived.
    let epoch = match rack {
        None => now + lead_ns,
        Some(sync) => {
            let abort = ctx.abort_rx.clone();
            let epoch = sync
                .before_rung(rung.id, &rung.label, now, lead_ns, &abort)
                .await?;
            now = ctx.clock.now_ns();
            epoch
        }
    };
    let lead_ns = (epoch - now).max(0);
    let ready_log = ready
        .iter()
        .zip(keys)
        .map(|(r, k)| GpuReady {
            gpu: k.clone(),
            ready_at_ns: r.ready_at_ns,
            arm_latency_ns: r.arm_latency_ns,
            clock_offset_ns: r.device_clock_offset_ns,
            realtime_thread: r.realtime_thread,
        })
        .collect();
    ctx.log(RunEvent::Barrier {
        ts_ns: now,
        rung_id: rung.id,
        ready: ready_log,
        epoch_ns: epoch,
        lead_ns,
    })
    .map_err(io)?;
    ctx.log(RunEvent::RungStarted {
        ts_ns: now,
        rung: rung_info(rung),
        epoch_ns: epoch,
        measure_from_ns: epoch + rung.ramp_ns + rung.settle_ns,
        end_ns: epoch + rung.duration_ns,
        offsets_ns: rung.offsets_ns.clone(),
        gpus: keys.to_vec(),
    })
    .map_err(io)?;

    // The window.
    let run = ask_all(workers, |i, reply| WorkerCmd::Run {
        schedule: schedule_for(rung, i, epoch),
        reply,
    });
    // Past this a GPU is hung; an NCCL rung first gets its own collective
    // timeout, which aborts the communicators and names the rank.
    let grace_s = rung
        .nccl
        .as_ref()
        .map_or(30.0, |n| (n.timeout_s + 10.0).max(30.0));
    let hang_limit = Duration::from_nanos((lead_ns + rung.duration_ns) as u64)
        + Duration::from_secs_f64(grace_s);
    let outcomes: Vec<RungOutcome> = match ctx
        .guarded(
            tokio::time::timeout(hang_limit, run),
            (done_ns + warmup, total_ns, epoch, &label),
        )
        .await?
    {
        Err(_) => {
            return Err(StopReason::Failed(format!(
                "rung {}: a GPU did not finish its window within {grace_s:.0} s of its end (hung)",
                rung.label
            )));
        }
        Ok(Err(e)) => return Err(StopReason::Failed(format!("rung {}: {e}", rung.label))),
        Ok(Ok(results)) => first_error(results, keys)
            .map_err(|(g, e)| fail(&format!("rung {}", rung.label), &g, &e))?,
    };
    let mut start_error = Vec::new();
    for (i, o) in outcomes.iter().enumerate() {
        edges
            .write(rung.id, &keys[i], &o.edges)
            .map_err(|e| io(e.into()))?;
        collectives
            .write(rung.id, &keys[i], &o.collectives)
            .map_err(|e| io(e.into()))?;
        start_error.push(start_error_ns(&o.edges).unwrap_or(i64::MAX));
    }
    // The device clocks' probes around the rung: their drift, and how well each offset is known.
    let clocks: Vec<serde_json::Value> = outcomes
        .iter()
        .zip(keys)
        .filter_map(|(o, k)| o.clock.map(|c| serde_json::json!({ "gpu": k, "begin_ns": c.begin_ns, "offset_begin_ns": c.offset_begin_ns, "end_ns": c.end_ns, "offset_end_ns": c.offset_end_ns, "probe_rtt_ns": c.probe_rtt_ns, "drift_ppm": c.drift_ppm() })))
        .collect();
    if !clocks.is_empty() {
        ctx.log(RunEvent::Note {
            ts_ns: ctx.clock.now_ns(),
            topic: DEVICE_CLOCK_TOPIC.into(),
            detail: serde_json::json!({ "rung_id": rung.id, "gpus": clocks }),
        })
        .map_err(io)?;
    }
    let barrier_ok = start_error.iter().all(|e| e.abs() <= tolerance_ns);
    if !barrier_ok {
        let worst = start_error.iter().map(|e| e.abs()).max().unwrap_or(0);
        ctx.observer.message(&format!(
            "rung {}: barrier missed: a GPU started {:.3} ms from its intended start",
            rung.label,
            worst as f64 / 1e6
        ));
    }
    ctx.log(RunEvent::RungEnded {
        ts_ns: ctx.clock.now_ns(),
        rung_id: rung.id,
        start_error_ns: start_error,
        barrier_ok,
    })
    .map_err(io)?;
    ctx.pump_monitor().map_err(io)?;

    // Cooldown, idle.
    let stop = ask_all(workers, |_, reply| WorkerCmd::Stop { reply });
    if let Ok(results) = ctx.guarded(stop, (done_ns, total_ns, t0, &label)).await? {
        first_error(results, keys).map_err(|(g, e)| fail("stop", &g, &e))?;
    }
    let cool_until = ctx.clock.now_ns() + rung.cooldown_ns;
    let clock = ctx.clock;
    ctx.guarded(
        clock.sleep_until(cool_until),
        (
            done_ns + warmup + rung.duration_ns,
            total_ns,
            cool_until - rung.cooldown_ns,
            &label,
        ),
    )
    .await?;
    Ok(())
}
