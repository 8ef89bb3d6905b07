//! One rung, phase by phase: the barrier (every GPU warm and ready, then a
//! start epoch every GPU and every node agrees on), the window, the record
//! of what each GPU did, and the cooldown; a mitigation rung (one asking
//! for power smoothing) first calibrates every GPU ([`super::calibrate`]).
//! Any phase ends the rung with a
//! stop reason when a GPU fails, hangs, or the run is stopped meanwhile.

use super::RungDriver;
use super::journal::Progress;
use crate::StopReason;
use crate::barrier::{choose_lead_ns, start_error_ns};
use crate::error::RunError;
use crate::schedule::{rung_info, schedule_for};
use crate::worker::{WorkerCmd, ask_all, first_error};
use powerlab_campaign::Rung;
use powerlab_core::hw::{HwError, Readiness, RungOutcome};
use powerlab_core::shape::LoadKind;
use powerlab_core::smoothing::DeviceSmoothing;
use powerlab_core::units::{NS_PER_S, ns_to_ms};
use powerlab_rundir::events::DEVICE_CLOCK_TOPIC;
use powerlab_rundir::{GpuReady, RunEvent};
use std::time::Duration;

/// The start every GPU of the rung was given.
pub(super) struct Start {
    /// When it was chosen, on the run clock.
    now_ns: i64,
    /// The window's start.
    epoch_ns: i64,
    /// From choosing to the window's start, ns.
    lead_ns: i64,
}

/// A GPU's failure during `what`.
fn fail(what: &str, gpu: &str, e: &HwError) -> StopReason {
    StopReason::Failed(format!("{what} on {gpu}: {e}"))
}

/// A failed write into the run directory.
pub(super) fn io(e: RunError) -> StopReason {
    crate::stop::disk_failure(&e)
}

impl RungDriver<'_> {
    /// Runs one rung: calibration (a mitigation rung's), barrier, window,
    /// record, cooldown.
    pub(super) async fn run_rung(&mut self, rung: &Rung) -> Result<(), StopReason> {
        let t0 = self.journal.clock.now_ns();
        if rung.no_context {
            return self.run_untouched(rung, t0).await;
        }
        if rung.kind == powerlab_campaign::PhaseKind::Workload {
            return self.run_workload(rung, t0).await;
        }
        // A mitigation rung calibrates every GPU first; a spec asking for
        // nothing is the plain rung.
        let smoothing = match rung.smoothing.filter(|s| !s.is_none()) {
            Some(spec) => self.calibrate(rung, &spec, t0).await?,
            None => Vec::new(),
        };
        let ready = self.warm_up(rung, t0).await?;
        let start = self.agree_start(rung, &ready).await?;
        self.announce(rung, &ready, &start)?;
        let outcomes = match self.run_window(rung, &start, &smoothing, None).await {
            Ok(o) => o,
            Err(stop) => {
                self.stopped_at_ns = Some(self.journal.clock.now_ns());
                self.keep_stopped_edges().await;
                return Err(stop);
            }
        };
        self.record(rung, &outcomes)?;
        self.cool_down(rung, t0).await
    }

    /// A rung that touches no GPU (the idle baseline before any CUDA
    /// context exists): its warm-up is a wait, its window is sampled only,
    /// and no worker is asked to prepare, run or stop — a prepare would
    /// create the context the rung is there to be without.
    async fn run_untouched(&mut self, rung: &Rung, t0: i64) -> Result<(), StopReason> {
        let clock = self.journal.clock;
        let (done_ns, total_ns) = (self.done_ns, self.total_ns);
        let progress = |start_ns| Progress {
            done_ns,
            total_ns,
            start_ns,
            label: &rung.label,
        };
        self.journal
            .guarded(clock.sleep_until(t0 + rung.warmup_ns), progress(t0))
            .await?;
        let start = self.agree_start(rung, &[]).await?;
        self.announce(rung, &[], &start)?;
        let end = start.epoch_ns + rung.duration_ns;
        self.journal
            .guarded(clock.sleep_until(end), progress(start.epoch_ns))
            .await?;
        self.journal
            .log(RunEvent::RungEnded {
                ts_ns: clock.now_ns(),
                rung_id: rung.id,
                start_error_ns: Vec::new(),
                barrier_ok: true,
            })
            .map_err(io)?;
        self.journal.pump_monitor().map_err(io)?;
        let cool_until = clock.now_ns() + rung.cooldown_ns;
        self.journal
            .guarded(clock.sleep_until(cool_until), progress(end))
            .await?;
        Ok(())
    }

    /// Barrier, part 1: every GPU warm and ready (they keep warm meanwhile).
    pub(super) async fn warm_up(
        &mut self,
        rung: &Rung,
        t0: i64,
    ) -> Result<Vec<Readiness>, StopReason> {
        self.warm_up_watching(rung, t0, None).await
    }

    /// [`Self::warm_up`], calling `watch` every tick while the GPUs warm
    /// (a workload's command that dies in its warm-up stops the run when
    /// it dies, not when the warm-up ends).
    pub(super) async fn warm_up_watching(
        &mut self,
        rung: &Rung,
        t0: i64,
        watch: Option<&mut dyn FnMut() -> Result<(), StopReason>>,
    ) -> Result<Vec<Readiness>, StopReason> {
        // Each GPU warms with its own load: a GPU the rung leaves idle (a
        // ramp-up step's) is not warmed either.
        let loads = (0..self.keys.len())
            .map(|i| schedule_for(rung, i, 0, None).map(|s| s.shape.load()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(StopReason::Failed)?;
        let what = format!("rung {}", rung.label);
        self.prepare_watching(&what, &rung.label, (rung.warmup_ns, t0), &loads, watch)
            .await
    }

    /// Every GPU prepared for `warmup_ns` with its load of `loads` (by run
    /// index); `what` names the step in a failure, `label` in the progress.
    pub(super) async fn prepare_all(
        &mut self,
        what: &str,
        label: &str,
        warmup_ns: i64,
        loads: &[Option<LoadKind>],
        t0: i64,
    ) -> Result<Vec<Readiness>, StopReason> {
        self.prepare_watching(what, label, (warmup_ns, t0), loads, None)
            .await
    }

    /// [`Self::prepare_all`] (warm-up and start, ns), calling `watch`
    /// every tick while the GPUs prepare.
    async fn prepare_watching(
        &mut self,
        what: &str,
        label: &str,
        (warmup_ns, t0): (i64, i64),
        loads: &[Option<LoadKind>],
        watch: Option<&mut dyn FnMut() -> Result<(), StopReason>>,
    ) -> Result<Vec<Readiness>, StopReason> {
        let prepare = ask_all(&self.crew.workers, |i, reply| WorkerCmd::Prepare {
            warmup_ns,
            warm_load: loads.get(i).copied().flatten(),
            reply,
        });
        let limit = Duration::from_nanos(self.prepare_timeout_ns as u64);
        let progress = Progress {
            done_ns: self.done_ns,
            total_ns: self.total_ns,
            start_ns: t0,
            label,
        };
        match self
            .journal
            .guarded_ticking(tokio::time::timeout(limit, prepare), progress, watch)
            .await?
        {
            Err(_) => Err(StopReason::Failed(format!(
                "{what}: not every GPU reported ready within {} s; a GPU is hung or far slower than the others",
                self.prepare_timeout_ns / NS_PER_S
            ))),
            Ok(Err(e)) => Err(StopReason::Failed(format!("{what}: {e}"))),
            Ok(Ok(results)) => {
                first_error(results, &self.keys).map_err(|(g, e)| fail("warm-up", &g, &e))
            }
        }
    }

    /// Barrier, part 2: measures dispatch and chooses the epoch from
    /// readiness; across a rack, every node starts at the epoch all of them
    /// derived.
    pub(super) async fn agree_start(
        &mut self,
        rung: &Rung,
        ready: &[Readiness],
    ) -> Result<Start, StopReason> {
        // Dispatch is timed on the run's one clock: a simulated node's is
        // virtual, and a host busy with other work must not move its epochs.
        let ping_start = self.journal.clock.now_ns();
        let _ = ask_all(&self.crew.workers, |_, reply| WorkerCmd::Ping { reply }).await;
        let dispatch_ns = self.journal.clock.now_ns() - ping_start;
        let lead_ns = choose_lead_ns(ready, dispatch_ns);
        let mut now_ns = self.journal.clock.now_ns();
        let epoch_ns = match self.rack.as_mut() {
            None => now_ns + lead_ns,
            Some(sync) => {
                let epoch = sync
                    .before_rung(rung.id, &rung.label, now_ns, lead_ns, &self.journal.stop)
                    .await?;
                now_ns = self.journal.clock.now_ns();
                epoch
            }
        };
        Ok(Start {
            now_ns,
            epoch_ns,
            lead_ns: (epoch_ns - now_ns).max(0),
        })
    }

    /// Logs the barrier (each GPU's readiness and the chosen epoch) and the
    /// rung's start.
    pub(super) fn announce(
        &mut self,
        rung: &Rung,
        ready: &[Readiness],
        start: &Start,
    ) -> Result<(), StopReason> {
        let ready_log = ready
            .iter()
            .zip(&self.keys)
            .map(|(r, k)| GpuReady {
                gpu: k.clone(),
                ready_at_ns: r.ready_at_ns,
                arm_latency_ns: r.arm_latency_ns,
                clock_offset_ns: r.device_clock_offset_ns,
                realtime_thread: r.realtime_thread,
            })
            .collect();
        self.journal
            .log(RunEvent::Barrier {
                ts_ns: start.now_ns,
                rung_id: rung.id,
                ready: ready_log,
                epoch_ns: start.epoch_ns,
                lead_ns: start.lead_ns,
            })
            .map_err(io)?;
        self.journal
            .log(RunEvent::RungStarted {
                ts_ns: start.now_ns,
                rung: rung_info(rung, &self.keys),
                epoch_ns: start.epoch_ns,
                measure_from_ns: start.epoch_ns + rung.ramp_ns + rung.settle_ns,
                end_ns: start.epoch_ns + rung.duration_ns,
                offsets_ns: rung.offsets_ns.clone(),
                gpus: self.keys.clone(),
            })
            .map_err(io)
    }

    /// The window: every GPU runs its schedule (with its smoothing, by run
    /// index, in a mitigation rung); returns what each did.
    /// Meanwhile the edges the GPUs achieve go into `edges.csv` every
    /// [`super::journal::TICK`].
    pub(super) async fn run_window(
        &mut self,
        rung: &Rung,
        start: &Start,
        smoothing: &[DeviceSmoothing],
        mut job: Option<&mut crate::workload::Running>,
    ) -> Result<Vec<RungOutcome>, StopReason> {
        let epoch = start.epoch_ns;
        self.edges.begin(rung.id).map_err(|e| io(e.into()))?;
        let schedules = (0..self.keys.len())
            .map(|i| schedule_for(rung, i, epoch, smoothing.get(i)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(StopReason::Failed)?;
        let run = ask_all(&self.crew.workers, |i, reply| WorkerCmd::Run {
            schedule: schedules[i].clone(),
            reply,
        });
        // Past this a GPU is hung; an NCCL rung first gets its own collective
        // timeout, which aborts the communicators and names the rank.
        let grace_s = rung
            .nccl
            .as_ref()
            .map_or(30.0, |n| (n.timeout_s + 10.0).max(30.0));
        let hang_limit = Duration::from_nanos((start.lead_ns + rung.duration_ns) as u64)
            + Duration::from_secs_f64(grace_s);
        let progress = Progress {
            done_ns: self.done_ns + rung.warmup_ns,
            total_ns: self.total_ns,
            start_ns: epoch,
            label: &rung.label,
        };
        let edges = &mut self.edges;
        let clock = self.journal.clock;
        // A workload's command that exits or floods its output stops the
        // window: its samples so far are kept, the rung says it stopped.
        let mut drain = || {
            edges.drain().map_err(|e| io(e.into()))?;
            if let Some(j) = job.as_deref_mut()
                && let Some(fault) = j.check_at(clock.now_ns())
            {
                let into_s = (clock.now_ns() - epoch) as f64 / NS_PER_S as f64;
                return Err(StopReason::Failed(j.fault_words(
                    &fault,
                    &rung.label,
                    Some(into_s),
                )));
            }
            Ok(())
        };
        match self
            .journal
            .guarded_ticking(
                tokio::time::timeout(hang_limit, run),
                progress,
                Some(&mut drain),
            )
            .await?
        {
            Err(_) => Err(StopReason::Failed(format!(
                "rung {}: a GPU did not finish its window within {grace_s:.0} s of its end (hung)",
                rung.label
            ))),
            Ok(Err(e)) => Err(StopReason::Failed(format!("rung {}: {e}", rung.label))),
            Ok(Ok(results)) => first_error(results, &self.keys)
                .map_err(|(g, e)| fail(&format!("rung {}", rung.label), &g, &e)),
        }
    }

    /// A window cut short (the run's stop, or a GPU's failure): the rung's
    /// edge log ends with what the GPUs handed over, and, when the run was
    /// stopped, each GPU's edges achieved before the stop (final values),
    /// so the cycles that ran can still be folded. Best effort: a GPU that
    /// does not answer within 2 s keeps what it handed over, and a failed
    /// write keeps what is on disk (the stop's reason is what the run
    /// reports).
    pub(super) async fn keep_stopped_edges(&mut self) {
        let _ = self.edges.drain();
        let mut finals = Vec::new();
        if self.journal.stop_reason().is_some() {
            let ask = ask_all(&self.crew.workers, |_, reply| WorkerCmd::StoppedEdges {
                reply,
            });
            if let Ok(Ok(edges)) = tokio::time::timeout(Duration::from_secs(2), ask).await {
                finals = edges;
            }
        }
        let _ = self.edges.finish(&finals);
    }

    /// Writes each GPU's edges and collectives, logs the device clocks and
    /// the rung's end with every GPU's start error, then the monitor's events.
    pub(super) fn record(
        &mut self,
        rung: &Rung,
        outcomes: &[RungOutcome],
    ) -> Result<(), StopReason> {
        let finals: Vec<_> = outcomes.iter().map(|o| o.edges.clone()).collect();
        self.edges.finish(&finals).map_err(|e| io(e.into()))?;
        let mut start_error = Vec::new();
        for (o, key) in outcomes.iter().zip(&self.keys) {
            self.collectives
                .write(rung.id, key, &o.collectives)
                .map_err(|e| io(e.into()))?;
            // A workload rung starts no load of the harness's own on a
            // real GPU (the command runs): no start to miss.
            let none = if rung.kind == powerlab_campaign::PhaseKind::Workload {
                0
            } else {
                i64::MAX
            };
            start_error.push(start_error_ns(&o.edges).unwrap_or(none));
        }
        // The device clocks' probes around the rung: their drift, and how well each offset is known.
        let clocks: Vec<serde_json::Value> = outcomes
            .iter()
            .zip(&self.keys)
            .filter_map(|(o, k)| o.clock.map(|c| serde_json::json!({ "gpu": k, "begin_ns": c.begin_ns, "offset_begin_ns": c.offset_begin_ns, "end_ns": c.end_ns, "offset_end_ns": c.offset_end_ns, "probe_rtt_ns": c.probe_rtt_ns, "drift_ppm": c.drift_ppm() })))
            .collect();
        if !clocks.is_empty() {
            self.journal
                .log(RunEvent::Note {
                    ts_ns: self.journal.clock.now_ns(),
                    topic: DEVICE_CLOCK_TOPIC.into(),
                    detail: serde_json::json!({ "rung_id": rung.id, "gpus": clocks }),
                })
                .map_err(io)?;
        }
        let barrier_ok = start_error.iter().all(|e| e.abs() <= self.tolerance_ns);
        if !barrier_ok {
            let worst = start_error.iter().map(|e| e.abs()).max().unwrap_or(0);
            self.journal.observer.message(&format!(
                "rung {}: barrier missed: a GPU started {:.3} ms from its intended start",
                rung.label,
                ns_to_ms(worst)
            ));
        }
        self.journal
            .log(RunEvent::RungEnded {
                ts_ns: self.journal.clock.now_ns(),
                rung_id: rung.id,
                start_error_ns: start_error,
                barrier_ok,
            })
            .map_err(io)?;
        self.journal.pump_monitor().map_err(io)
    }

    /// Cooldown: every GPU stops, then idles for the rung's cooldown.
    pub(super) async fn cool_down(&mut self, rung: &Rung, t0: i64) -> Result<(), StopReason> {
        let stop = ask_all(&self.crew.workers, |_, reply| WorkerCmd::Stop { reply });
        let progress = Progress {
            done_ns: self.done_ns,
            total_ns: self.total_ns,
            start_ns: t0,
            label: &rung.label,
        };
        if let Ok(results) = self.journal.guarded(stop, progress).await? {
            first_error(results, &self.keys).map_err(|(g, e)| fail("stop", &g, &e))?;
        }
        let cool_until = self.journal.clock.now_ns() + rung.cooldown_ns;
        let clock = self.journal.clock;
        let progress = Progress {
            done_ns: self.done_ns + rung.warmup_ns + rung.duration_ns,
            total_ns: self.total_ns,
            start_ns: cool_until - rung.cooldown_ns,
            label: &rung.label,
        };
        self.journal
            .guarded(clock.sleep_until(cool_until), progress)
            .await?;
        Ok(())
    }
}
