//! How a workload rung's command (or the simulated job standing in for
//! it) ends at the window's end, as its phase's `stop` says, and the
//! lifecycle notes of a rung that measures its process's edges: the
//! spawn (a cold start), and the kill (`stop = "sigkill"`: SIGKILL to
//! the group at once, the intended stop) or the exit (`stop = "exit"`:
//! the command ends on its own within `stop_grace_s` of the window's
//! end). The GPUs are told each moment: the simulated node draws the
//! simulated job's start, kill and exit from them; a real GPU ignores
//! them (the process itself draws).

use super::RungDriver;
use super::journal::Progress;
use super::rung::io;
use crate::StopReason;
use crate::worker::{WorkerCmd, ask_all, first_error};
use crate::workload::{Ending, Running, describe};
use powerlab_campaign::Rung;
use powerlab_campaign::model::WorkloadSpec;
use powerlab_core::job::{JobEvent, WorkloadStop};
use powerlab_rundir::{LifecycleEvent, LifecycleNote};
use std::time::Duration;

/// How the command ended (None: none ran), and what was wrong with its
/// stop, in words (the rung's samples are complete either way).
pub(super) type Stopped = (Option<Ending>, Option<String>);

impl RungDriver<'_> {
    /// Tells every GPU what became of the workload's process; returns each
    /// GPU's answer (a simulated job's exit).
    pub(super) async fn tell_job(
        &mut self,
        event: JobEvent,
    ) -> Result<Vec<Option<i64>>, StopReason> {
        let answers = ask_all(&self.crew.workers, |_, reply| WorkerCmd::Job {
            event,
            reply,
        })
        .await
        .map_err(|e| StopReason::Failed(format!("workload process: {e}")))?;
        first_error(answers, &self.keys)
            .map_err(|(g, e)| StopReason::Failed(format!("workload process on {g}: {e}")))
    }

    /// Records a moment of the rung's process in the event log.
    pub(super) fn lifecycle(
        &mut self,
        rung: &Rung,
        event: LifecycleEvent,
        at_ns: i64,
    ) -> Result<(), StopReason> {
        let note = LifecycleNote {
            rung_id: rung.id,
            label: rung.label.clone(),
            event,
            at_ns,
        };
        let ts = self.journal.clock.now_ns();
        self.journal.log(note.to_event(ts)).map_err(io)
    }

    /// Stops the command (`job`), or ends the simulated job, as `spec`'s
    /// `stop` says; a window that failed stops it the SIGTERM way and
    /// records no lifecycle moment.
    pub(super) async fn end_job(
        &mut self,
        rung: &Rung,
        spec: &WorkloadSpec,
        job: Option<&mut Running>,
        window_ok: bool,
    ) -> Result<Stopped, StopReason> {
        let clock = self.journal.clock;
        let now = move || clock.now_ns();
        let grace = Duration::from_secs_f64(spec.stop_grace_s);
        let stop = if window_ok {
            spec.stop
        } else {
            WorkloadStop::Sigterm
        };
        let Some(j) = job else {
            return self.end_simulated(rung, stop).await.map(|()| (None, None));
        };
        match stop {
            WorkloadStop::Sigterm => {
                let e = j.stop(grace, now).await;
                let problem = (e.stopped_by == "sigkill").then(|| {
                    format!(
                        "workload {} of rung {} did not stop within {:.1} s of SIGTERM (stop_grace_s) and was killed with SIGKILL, its whole process group with it; the rung's samples are complete; make the job exit on SIGTERM, or raise stop_grace_s",
                        describe(&e.command),
                        rung.label,
                        spec.stop_grace_s
                    )
                });
                Ok((Some(e), problem))
            }
            WorkloadStop::Sigkill => {
                // The GPUs are told at once: the simulated node draws the
                // kill from that moment.
                let at = j.kill(now);
                if let Some(at) = at {
                    self.tell_job(JobEvent::Killed { at_ns: at }).await?;
                    self.lifecycle(rung, LifecycleEvent::Kill, at)?;
                }
                let e = j.reap(at, now).await;
                let problem = at.is_none().then(|| {
                    format!(
                        "workload {} of rung {} exited on its own before it was killed at the window's end (stop = \"sigkill\"); no kill was measured; the rung's samples are complete; make the job run past its window (its warm-up plus duration)",
                        describe(&e.command),
                        rung.label
                    )
                });
                Ok((Some(e), problem))
            }
            WorkloadStop::Exit => self.wait_for_exit(rung, spec, j).await,
        }
    }

    /// `stop = "exit"` with a command that runs: waits for its exit, then
    /// for the rest of its group.
    async fn wait_for_exit(
        &mut self,
        rung: &Rung,
        spec: &WorkloadSpec,
        j: &mut Running,
    ) -> Result<Stopped, StopReason> {
        let clock = self.journal.clock;
        let now = move || clock.now_ns();
        let grace = Duration::from_secs_f64(spec.stop_grace_s);
        let Some(at) = j.wait_exit(grace, now).await else {
            let e = j.stop(grace, now).await;
            let problem = format!(
                "workload {} of rung {} did not exit on its own within {:.1} s of the window's end (stop = \"exit\", stop_grace_s); it was stopped ({}) and no exit was measured; the rung's samples are complete; give the job a duration that ends just after its window (its warm-up plus duration), or raise stop_grace_s",
                describe(&e.command),
                rung.label,
                spec.stop_grace_s,
                e.stopped_by
            );
            return Ok((Some(e), Some(problem)));
        };
        self.tell_job(JobEvent::Exited { at_ns: at }).await?;
        self.lifecycle(rung, LifecycleEvent::Exit, at)?;
        let e = j.stop(grace, now).await;
        let problem = (e.exit_code != Some(0)).then(|| {
            format!(
                "workload {} of rung {} exited at its end with {} (stop = \"exit\" expects status 0); its output is in {} and {}; the rung's samples are complete",
                describe(&e.command),
                rung.label,
                e.exit_code.map_or_else(
                    || format!("signal {}", e.signal.unwrap_or(0)),
                    |c| format!("status {c}")
                ),
                e.stdout_file,
                e.stderr_file
            )
        });
        Ok((Some(e), problem))
    }

    /// The simulated job's end (no command ran): killed now, or its time
    /// up now and the run waiting for its exit.
    async fn end_simulated(&mut self, rung: &Rung, stop: WorkloadStop) -> Result<(), StopReason> {
        let at = self.journal.clock.now_ns();
        match stop {
            WorkloadStop::Sigterm => Ok(()),
            WorkloadStop::Sigkill => {
                self.tell_job(JobEvent::Killed { at_ns: at }).await?;
                self.lifecycle(rung, LifecycleEvent::Kill, at)
            }
            WorkloadStop::Exit => {
                let exits = self.tell_job(JobEvent::Finish { at_ns: at }).await?;
                let exit = exits.into_iter().flatten().max().unwrap_or(at);
                let clock = self.journal.clock;
                let progress = Progress {
                    done_ns: self.done_ns,
                    total_ns: self.total_ns,
                    start_ns: at,
                    label: &rung.label,
                };
                self.journal
                    .guarded(clock.sleep_until(exit), progress)
                    .await?;
                self.lifecycle(rung, LifecycleEvent::Exit, exit)
            }
        }
    }
}
