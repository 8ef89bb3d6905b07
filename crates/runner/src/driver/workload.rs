//! A workload rung: the user's command starts with the rung (its warm-up
//! is the job's own start-up: imports, model building, the first steps),
//! every GPU is sampled through the window as in any rung, and at the
//! window's end the command is stopped as its phase says
//! ([`super::job_stop`]). On the simulated node the
//! simulated training job draws instead, unless the run was asked to run
//! the command too (real time only).

use super::RungDriver;
use super::rung::io;
use crate::StopReason;
use crate::workload::{Ending, Running, WorkloadExec, describe, file_stem};
use powerlab_campaign::Rung;
use powerlab_core::job::JobEvent;
use powerlab_rundir::{LifecycleEvent, RunEvent};

/// The event log's topic of a workload's start and end.
pub const WORKLOAD_TOPIC: &str = "workload";

impl RungDriver<'_> {
    /// Runs a workload rung: start, warm-up, barrier, window, record, stop
    /// the command as the phase says ([`super::job_stop`]), cooldown. A
    /// command that cannot start, exits or floods its output before the
    /// window's end, or does not stop as the phase asks, ends the rung
    /// with an error that names it; what was sampled is kept. A rung that
    /// measures its process's lifecycle (`stop = "sigkill"` or `"exit"`)
    /// records its spawn and its kill or exit in the event log.
    pub(super) async fn run_workload(&mut self, rung: &Rung, t0: i64) -> Result<(), StopReason> {
        let Some(spec) = rung.workload.clone() else {
            return Err(StopReason::Failed(format!(
                "rung {}: a workload rung without its command; expand the plan again from the campaign file",
                rung.label
            )));
        };
        let clock = self.journal.clock;
        let mut job = match self.workload_exec {
            WorkloadExec::Simulated => None,
            WorkloadExec::Run => Some(
                Running::start(&spec, &self.run_dir, &rung.label, &self.uuids, &|| {
                    clock.now_ns()
                })
                .map_err(StopReason::Failed)?,
            ),
        };
        let detail = serde_json::json!({
            "rung_id": rung.id, "label": rung.label, "event": "started",
            "command": spec.command, "ran": job.is_some(),
            "pid": job.as_ref().map(Running::pid),
            "sim": if job.is_none() { Some(spec.sim) } else { None },
        });
        self.note(detail)?;
        if spec.stop.is_lifecycle() {
            let at = job.as_ref().map_or(t0, Running::started_ns);
            self.tell_job(JobEvent::Spawned {
                at_ns: at,
                job: spec.sim,
            })
            .await?;
            self.lifecycle(rung, LifecycleEvent::Spawn, at)?;
        }
        let window = self.workload_window(rung, t0, job.as_mut()).await;
        let (ending, problem) = self
            .end_job(rung, &spec, job.as_mut(), window.is_ok())
            .await?;
        if let Some(e) = &ending {
            self.keep_ending(rung, e)?;
        }
        if let Some(e) = ending.as_ref().filter(|e| !e.unkilled.is_empty()) {
            return Err(StopReason::Failed(format!(
                "workload {} of rung {}: {} process(es) of the job could not be killed ({}; held by {}): they may go on loading the GPUs, so the run stops here; end them by hand (another user's process needs that user, or root) before the next run",
                describe(&e.command),
                rung.label,
                e.unkilled.len(),
                e.unkilled.join(", "),
                e.contained_by
            )));
        }
        window?;
        if let Some(e) = ending.as_ref().filter(|e| !e.escaped.is_empty()) {
            return Err(StopReason::Failed(format!(
                "workload {} of rung {} left {} process(es) outside its process group ({}): they would have gone on loading the GPUs through the rungs after it, so they were killed (held by {}); the rung's samples are complete; keep the job's processes in its group (no setsid, start_new_session or daemon)",
                describe(&e.command),
                rung.label,
                e.escaped.len(),
                e.escaped.join(", "),
                e.contained_by
            )));
        }
        if let Some(p) = problem {
            return Err(StopReason::Failed(p));
        }
        self.cool_down(rung, t0).await
    }

    /// Warm-up (the job starting), barrier, window (the job watched), record.
    async fn workload_window(
        &mut self,
        rung: &Rung,
        t0: i64,
        mut job: Option<&mut Running>,
    ) -> Result<(), StopReason> {
        let clock = self.journal.clock;
        let ready = match job.as_deref_mut() {
            Some(j) => {
                let label = rung.label.clone();
                let mut watch = || match j.check_at(clock.now_ns()) {
                    Some(fault) => Err(StopReason::Failed(j.fault_words(&fault, &label, None))),
                    None => Ok(()),
                };
                self.warm_up_watching(rung, t0, Some(&mut watch)).await?
            }
            None => self.warm_up(rung, t0).await?,
        };
        if let Some(j) = job.as_deref_mut()
            && let Some(fault) = j.check_at(clock.now_ns())
        {
            return Err(StopReason::Failed(j.fault_words(&fault, &rung.label, None)));
        }
        let start = self.agree_start(rung, &ready).await?;
        self.announce(rung, &ready, &start)?;
        match self.run_window(rung, &start, &[], job).await {
            Ok(outcomes) => self.record(rung, &outcomes),
            Err(stop) => {
                self.stopped_at_ns = Some(self.journal.clock.now_ns());
                self.keep_stopped_edges().await;
                Err(stop)
            }
        }
    }

    /// Writes how the command ended into `workload/<label>.json` and the
    /// event log.
    fn keep_ending(&mut self, rung: &Rung, e: &Ending) -> Result<(), StopReason> {
        let path = powerlab_rundir::files::workload::ending(
            &self.run_dir.join(powerlab_rundir::files::workload::DIR),
            &file_stem(&rung.label),
        );
        let text = serde_json::to_string_pretty(e).unwrap_or_default();
        std::fs::write(&path, text + "\n")
            .map_err(|err| crate::stop::disk_failure(&format!("{}: {err}", path.display())))?;
        let mut detail = serde_json::to_value(e).unwrap_or_default();
        if let Some(m) = detail.as_object_mut() {
            m.insert("rung_id".into(), rung.id.into());
            m.insert("label".into(), rung.label.clone().into());
            m.insert("event".into(), "ended".into());
        }
        self.note(detail)
    }

    fn note(&mut self, detail: serde_json::Value) -> Result<(), StopReason> {
        self.journal
            .log(RunEvent::Note {
                ts_ns: self.journal.clock.now_ns(),
                topic: WORKLOAD_TOPIC.into(),
                detail,
            })
            .map_err(io)
    }
}
