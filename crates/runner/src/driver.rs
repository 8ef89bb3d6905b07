//! The rung driver: the state of a run between its start and its end. It
//! holds the workers, the run's writers (events, the edge log, collectives), the
//! rack exchange and the progress made, and runs the plan rung by rung
//! until the plan is done or the run is stopped. Each rung's phases live in
//! [`rung`], the edges written as they are achieved in [`edge_log`];
//! stopping the crew and the closing events live in [`ending`].

mod calibrate;
mod edge_log;
mod ending;
mod job_stop;
mod journal;
mod rung;
mod trim;
mod workload;

use edge_log::EdgeLog;
use journal::Journal;
use powerlab_core::units::ms_to_ns_trunc;

use crate::StopReason;
use crate::crew::Crew;
use crate::error::RunError;
use crate::observer::Observer;
use crate::options::RunOptions;
use crate::rack::RackSync;
use crate::stop::StopLatch;
use powerlab_campaign::{Campaign, Plan};
use powerlab_core::RunClock;
use powerlab_rundir::{CollectiveWriter, EdgeWriter, EventLog, RunDir, RunEvent};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// How the rung loop ended: every rung done, or the reason it stopped.
pub(crate) type Outcome = Result<(), StopReason>;

/// The files a run writes as it goes (the raw files belong to the samplers).
pub(crate) struct Writers {
    /// `events.jsonl`.
    pub events: EventLog,
    /// `edges.csv`.
    pub edges: EdgeWriter,
    /// `collectives.csv`, created on first use.
    pub collectives: CollectiveWriter,
}

impl Writers {
    /// Creates the event log and the edge file in `dir`.
    pub fn create(dir: &RunDir) -> Result<Writers, RunError> {
        Ok(Writers {
            events: EventLog::create(&dir.events())?,
            edges: EdgeWriter::create(&dir.edges())?,
            collectives: CollectiveWriter::new(&dir.collectives()),
        })
    }
}

/// Drives the rungs of one run.
pub(crate) struct RungDriver<'a> {
    journal: Journal<'a>,
    crew: Crew,
    keys: Vec<String>,
    /// Each GPU's enforced power limit, W, by run index (a calibration's).
    limits_w: Vec<f64>,
    edges: EdgeLog,
    collectives: CollectiveWriter,
    rack: Option<RackSync>,
    alarm_watch: Option<JoinHandle<()>>,
    /// Largest start error that still counts as meeting the barrier, ns.
    tolerance_ns: i64,
    /// Longest wait for every GPU to report ready, ns.
    prepare_timeout_ns: i64,
    /// Nominal ns of the whole plan.
    total_ns: i64,
    /// Nominal ns of the rungs completed.
    done_ns: i64,
    /// Rungs completed.
    completed: usize,
    /// When a stop cut the current rung's window short, on the run clock.
    stopped_at_ns: Option<i64>,
    /// The GPUs' UUIDs, by run index.
    uuids: Vec<String>,
    /// The run directory.
    run_dir: std::path::PathBuf,
    /// Whether workload commands run.
    workload_exec: crate::workload::WorkloadExec,
}

/// What a driver is made of: the run's clock, stop latch and observer, its
/// open writers, and the started crew with the monitor's events.
pub(crate) struct DriverParts<'a> {
    /// The run clock.
    pub clock: RunClock,
    /// The run's stop latch.
    pub stop: StopLatch,
    /// The user's view of the run.
    pub observer: &'a mut dyn Observer,
    /// The open writers.
    pub writers: Writers,
    /// The started samplers, monitor and workers.
    pub crew: Crew,
    /// The monitor's events.
    pub monitor_rx: mpsc::UnboundedReceiver<RunEvent>,
    /// The GPU keys, by run index.
    pub keys: Vec<String>,
    /// Each GPU's enforced power limit at open, W, by run index.
    pub limits_w: Vec<f64>,
    /// The GPUs' UUIDs, by run index (a workload's visible devices).
    pub uuids: Vec<String>,
    /// The run directory (a workload's output goes there).
    pub run_dir: std::path::PathBuf,
}

impl<'a> RungDriver<'a> {
    /// A driver that runs `plan` of `campaign` with `parts`.
    pub fn new(
        parts: DriverParts<'a>,
        campaign: &Campaign,
        plan: &Plan,
        opts: &RunOptions,
    ) -> Self {
        let DriverParts {
            clock,
            stop,
            observer,
            writers,
            crew,
            monitor_rx,
            keys,
            limits_w,
            uuids,
            run_dir,
        } = parts;
        let Writers {
            events,
            edges,
            collectives,
        } = writers;
        let edges = EdgeLog::new(edges, crew.feeds.clone(), keys.clone());
        RungDriver {
            journal: Journal::new(clock, stop, observer, events, monitor_rx, opts.live.clone()),
            crew,
            keys,
            limits_w,
            edges,
            collectives,
            rack: None,
            alarm_watch: None,
            tolerance_ns: ms_to_ns_trunc(campaign.limits.barrier_tolerance_ms),
            prepare_timeout_ns: opts.prepare_timeout_ns,
            total_ns: plan.total_ns(),
            done_ns: 0,
            completed: 0,
            stopped_at_ns: None,
            uuids,
            run_dir,
            workload_exec: opts.workload_exec,
        }
    }

    /// Logs the run's start and, in a rack run, joins the rack: from now on
    /// another node's alarm stops this one.
    pub fn begin(
        &mut self,
        campaign: &Campaign,
        plan: &Plan,
        backend: &str,
        opts: &RunOptions,
        start_ns: i64,
    ) -> Result<(), RunError> {
        self.journal.log(RunEvent::RunStarted {
            ts_ns: start_ns,
            campaign: campaign.name.clone(),
            backend: backend.into(),
            rungs: plan.rungs.len(),
        })?;
        let virtual_time = self.journal.clock.is_virtual();
        self.rack = opts.rack.clone().map(|r| RackSync::new(r, virtual_time));
        self.alarm_watch = self
            .rack
            .as_ref()
            .map(|r| r.spawn_alarm_watch(self.journal.stop.clone()));
        if let Some(addr) = opts.live.as_ref().and_then(|l| l.address()) {
            // Which address this node (this rank) serves its live metrics on.
            self.journal.log(RunEvent::Note {
                ts_ns: start_ns,
                topic: powerlab_rundir::events::METRICS_TOPIC.into(),
                detail: serde_json::json!({ "listen": addr.to_string(), "url": format!("http://{addr}/metrics") }),
            })?;
        }
        if let Some(r) = &opts.rack {
            let detail = serde_json::json!({ "rank": r.position.rank, "nodes": r.nodes, "stagger": campaign.rack.stagger.as_str() });
            self.journal.log(RunEvent::Note {
                ts_ns: start_ns,
                topic: "rack".into(),
                detail,
            })?;
        }
        Ok(())
    }

    /// Runs the plan's rungs in order until one fails or the run is
    /// stopped. Before each rung the monitor's events are logged and a
    /// raised stop reason ends the loop.
    pub async fn run_rungs(&mut self, plan: &Plan) -> Result<Outcome, RunError> {
        for rung in &plan.rungs {
            self.journal.pump_monitor()?;
            if let Some(r) = self.journal.stop_reason() {
                return Ok(Err(r));
            }
            if let Err(reason) = self.run_rung(rung).await {
                // The monitor's events first (an interlock's own event),
                // then which rung the stop ended; a failed write here must
                // not hide the stop's reason.
                let _ = self.journal.pump_monitor();
                let _ = self.journal.log(RunEvent::Note {
                    ts_ns: self.journal.clock.now_ns(),
                    topic: powerlab_rundir::events::STOPPED_IN_RUNG_TOPIC.into(),
                    detail: serde_json::json!({
                        "rung_id": rung.id,
                        "label": rung.label,
                        "kind": rung.kind.as_str(),
                        "reason": reason.text(),
                        // Where the window was cut short (absent: the stop
                        // came outside it): the collator folds what ran.
                        "stopped_at_ns": self.stopped_at_ns,
                    }),
                });
                return Ok(Err(reason));
            }
            self.completed += 1;
            self.done_ns += rung.nominal_ns();
            self.journal
                .progress(self.done_ns, self.total_ns, &rung.label);
        }
        Ok(Ok(()))
    }
}
