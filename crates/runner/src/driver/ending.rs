//! The end of a run: the rack hears first that this node failed, every GPU
//! is stopped, then the samplers; the rack exchanges how each node ended;
//! and the closing events say how the run ended.

use super::{Outcome, RungDriver};
use crate::StopReason;
use crate::error::RunError;
use crate::options::RunOptions;
use crate::sampler::SamplerStats;
use powerlab_rack::NodeEnd;
use powerlab_rundir::{RunEvent, RunStatus};

/// How a run ended, for its manifest and its result.
pub(crate) struct Ending {
    /// The final status.
    pub status: RunStatus,
    /// When the run ended, on the run clock.
    pub end_ns: i64,
    /// Rungs completed.
    pub rungs_completed: usize,
    /// Per-GPU sampler statistics.
    pub samplers: Vec<SamplerStats>,
    /// How every node of the rack ended, by rank (None: a single node, or
    /// the rack exchange was abandoned).
    pub rack_ends: Option<Vec<NodeEnd>>,
}

impl RungDriver<'_> {
    /// Stops everything and logs how the run ended. A closing event that
    /// cannot be written fails a run that had not failed already (the
    /// event log would not say how it ended); the ending is returned
    /// either way, for the manifest.
    pub async fn finish(
        mut self,
        mut outcome: Outcome,
        opts: &RunOptions,
        files: &mut crate::run_files::RunFiles,
    ) -> Ending {
        // A node that failed tells the others now, before it stops its own GPUs.
        if let Some(sync) = &self.rack {
            sync.post_alarm(&sync.end_of(&outcome));
        }
        if let Some(w) = self.alarm_watch.take() {
            w.abort();
        }
        if let Err(r) = &outcome {
            self.journal.stop.raise(r.clone());
        }
        let samplers = self.crew.stop().await;
        // The samplers have stopped writing: the space reserved at the
        // start is now the closing events' and the manifest's.
        files.release_reserve();
        if let Err(e) = self.journal.pump_monitor() {
            fail_with(&mut outcome, &e);
        }
        let rack_ends = match self.end_rack(&mut outcome, opts).await {
            Ok(ends) => ends,
            Err(e) => {
                fail_with(&mut outcome, &e);
                None
            }
        };
        let end_ns = self.journal.clock.now_ns();
        if let Err(e) = self.journal.log(RunEvent::Note {
            ts_ns: end_ns,
            topic: "samplers".into(),
            detail: serde_json::to_value(&samplers).unwrap_or_default(),
        }) {
            fail_with(&mut outcome, &e);
        }
        let status = match outcome {
            Ok(()) => RunStatus::Complete,
            Err(StopReason::Interrupted(reason)) => RunStatus::Interrupted { reason },
            Err(StopReason::Failed(reason)) => RunStatus::Failed { reason },
        };
        let (status_name, reason) = match &status {
            RunStatus::Complete => ("complete", None),
            RunStatus::Interrupted { reason } => ("interrupted", Some(reason.clone())),
            RunStatus::Failed { reason } => ("failed", Some(reason.clone())),
            RunStatus::Running => ("running", None),
        };
        let ended = self.journal.log(RunEvent::RunEnded {
            ts_ns: end_ns,
            status: status_name.into(),
            reason,
        });
        let status = match (status, ended) {
            (RunStatus::Complete, Err(e)) => RunStatus::Failed {
                reason: crate::stop::disk_failure(&e).text().to_string(),
            },
            (status, _) => status,
        };
        Ending {
            status,
            end_ns,
            rungs_completed: self.completed,
            samplers,
            rack_ends,
        }
    }

    /// Tells the rack how this node ended and learns how every node did. A
    /// node that completed fails when another node did not complete.
    async fn end_rack(
        &mut self,
        outcome: &mut Outcome,
        opts: &RunOptions,
    ) -> Result<Option<Vec<NodeEnd>>, RunError> {
        let Some(sync) = self.rack.as_mut() else {
            return Ok(None);
        };
        let end = sync.end_of(outcome);
        let ends = match sync.finish(end).await {
            Ok(ends) => ends,
            Err(r) => {
                self.journal
                    .observer
                    .message(&format!("rack: {}", r.text()));
                return Ok(None);
            }
        };
        let detail = serde_json::to_value(&ends).unwrap_or_default();
        self.journal.log(RunEvent::Note {
            ts_ns: self.journal.clock.now_ns(),
            topic: "rack_ends".into(),
            detail,
        })?;
        if outcome.is_ok()
            && let Some((rank, e)) = ends
                .iter()
                .enumerate()
                .find(|(_, e)| !matches!(e, NodeEnd::Complete))
        {
            let who = opts
                .rack
                .as_ref()
                .map(|r| r.describe(rank))
                .unwrap_or_default();
            *outcome = Err(StopReason::Failed(format!(
                "{who} did not complete: {}",
                e.reason().unwrap_or("?")
            )));
        }
        Ok(Some(ends))
    }
}

/// A closing write that failed: the run fails with it, unless it had
/// stopped for another reason already (that one is what the run reports).
fn fail_with(outcome: &mut Outcome, e: &RunError) {
    if outcome.is_ok() {
        *outcome = Err(crate::stop::disk_failure(e));
    }
}
