//! The job's events in time: the start, a checkpoint every
//! `checkpoint_every_s` of running (counted from each start), the crashes
//! (declared, and drawn at the declared rate over the running time), the
//! restart after each crash, and the end.

use powerlab_campaign::schedule::{Lifecycle, MIN_EVENT_GAP_S};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp};
use serde::Serialize;

/// What happens at an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// The job starts (every GPU from idle).
    Start,
    /// Every GPU leaves the iteration for a checkpoint.
    CheckpointBegin,
    /// The checkpoint is written: the iteration resumes.
    CheckpointEnd,
    /// The job stops at once (a crash, a failed node).
    Crash,
    /// The job starts again after a crash.
    Restart,
    /// The job ends cleanly.
    End,
}

impl EventKind {
    /// The name in files and the report.
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Start => "start",
            EventKind::CheckpointBegin => "checkpoint_begin",
            EventKind::CheckpointEnd => "checkpoint_end",
            EventKind::Crash => "crash",
            EventKind::Restart => "restart",
            EventKind::End => "end",
        }
    }

    /// The job runs after it.
    pub fn runs_after(self) -> bool {
        matches!(
            self,
            EventKind::Start | EventKind::CheckpointEnd | EventKind::Restart
        )
    }
}

/// One event.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Event {
    /// When, s from the study's start.
    pub t_s: f64,
    /// What.
    pub kind: EventKind,
    /// Drawn at the crash rate (not declared).
    pub drawn: bool,
}

/// The events over the span, in order, and notes on any moved or dropped.
///
/// # Errors
///
/// A declared crash that falls while the job does not run (in a
/// checkpoint, or down after an earlier crash), in words.
pub fn timeline(lc: &Lifecycle, seed: u64) -> Result<(Vec<Event>, Vec<String>), String> {
    let end = lc
        .end_at_s
        .unwrap_or(lc.span_s - powerlab_campaign::schedule::EDGE_MARGIN_S);
    let mut crashes = crash_times(lc, seed, end);
    let mut notes = Vec::new();
    let mut out = vec![ev(lc.start_at_s, EventKind::Start, false)];
    let mut t = lc.start_at_s;
    take_crashes_until(&mut crashes, t, &mut notes)?;
    loop {
        let next_ckpt = lc.checkpoint.map_or(f64::INFINITY, |c| t + c.every_s);
        let crash = crashes.first().copied();
        let next = next_ckpt.min(crash.map_or(f64::INFINITY, |c| c.0)).min(end);
        if next >= end {
            break;
        }
        if crash.is_some_and(|c| c.0 <= next_ckpt) {
            let (tc, drawn) = crashes.remove(0);
            out.push(ev(tc, EventKind::Crash, drawn));
            t = tc + lc.restart_after_s;
            if t >= end - MIN_EVENT_GAP_S {
                notes.push(restart_dropped(tc, t, end));
                return finish(out, notes, crashes, None);
            }
            out.push(ev(t, EventKind::Restart, false));
        } else {
            let Some(c) = lc.checkpoint else { break };
            let done = next_ckpt + c.duration_s;
            if done >= end - MIN_EVENT_GAP_S {
                notes.push(format!("the checkpoint due at {next_ckpt:.0} s would not end {MIN_EVENT_GAP_S} s before the job's end: it is not placed"));
                break;
            }
            out.push(ev(next_ckpt, EventKind::CheckpointBegin, false));
            out.push(ev(done, EventKind::CheckpointEnd, false));
            t = done;
        }
        take_crashes_until(&mut crashes, t, &mut notes)?;
    }
    finish(out, notes, crashes, lc.end_at_s)
}

/// The end event (where declared), and what is left of the crashes.
/// Why the restart at `t` after the crash at `tc` is not placed, the
/// job ending at `end`: the restart's own distance to the end, before or
/// after it (a restart 2 s before the end read "8 s after" it).
fn restart_dropped(tc: f64, t: f64, end: f64) -> String {
    let when = if t >= end {
        format!("{:.0} s after the job's end at {end:.0} s", t - end)
    } else {
        format!(
            "{:.0} s before the job's end at {end:.0} s, less than the {MIN_EVENT_GAP_S} s an event needs",
            end - t
        )
    };
    format!(
        "the job does not restart after the crash at {tc:.0} s: the restart would come at {t:.0} s, {when}"
    )
}

fn finish(
    mut out: Vec<Event>,
    mut notes: Vec<String>,
    crashes: Vec<(f64, bool)>,
    end: Option<f64>,
) -> Result<(Vec<Event>, Vec<String>), String> {
    if let Some(e) = end
        && out.last().is_some_and(|x| x.kind.runs_after())
    {
        out.push(ev(e, EventKind::End, false));
    }
    for (t, drawn) in crashes {
        if !drawn {
            return Err(format!(
                "the crash declared at {t} s falls after the job stopped; move it into a stretch where the job runs"
            ));
        }
        notes.push(format!(
            "a crash drawn at {t:.0} s falls after the job stopped: not placed"
        ));
    }
    Ok((out, notes))
}

/// Drops the crashes before `t` (while the job was not running): a
/// declared one is an error, a drawn one a note.
fn take_crashes_until(
    crashes: &mut Vec<(f64, bool)>,
    t: f64,
    notes: &mut Vec<String>,
) -> Result<(), String> {
    while let Some(&(c, drawn)) = crashes.first() {
        if c >= t + MIN_EVENT_GAP_S {
            break;
        }
        if !drawn {
            return Err(format!(
                "the crash declared at {c} s falls while the job does not run (in a checkpoint, within {MIN_EVENT_GAP_S} s of one, or before the restart at {t:.0} s); move it into a stretch where the job runs"
            ));
        }
        notes.push(format!(
            "a crash drawn at {c:.0} s falls while the job does not run: not placed"
        ));
        crashes.remove(0);
    }
    Ok(())
}

/// The declared crashes and those drawn at the rate over the span, in
/// order, each marked drawn or not.
fn crash_times(lc: &Lifecycle, seed: u64, end: f64) -> Vec<(f64, bool)> {
    let mut v: Vec<(f64, bool)> = lc.crash_at_s.iter().map(|t| (*t, false)).collect();
    if lc.crash_per_hour > 0.0
        && let Ok(gap) = Exp::new(lc.crash_per_hour / 3600.0)
    {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x6c69_6665);
        let mut t = lc.start_at_s;
        loop {
            t += gap.sample(&mut rng);
            if t >= end - MIN_EVENT_GAP_S {
                break;
            }
            v.push((t, true));
        }
    }
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v
}

fn ev(t_s: f64, kind: EventKind, drawn: bool) -> Event {
    Event { t_s, kind, drawn }
}

#[cfg(test)]
mod tests {
    use super::*;
    use powerlab_campaign::schedule::{Checkpoint, StartEdge};

    fn lc() -> Lifecycle {
        Lifecycle {
            span_s: 7200.0,
            resolution_ms: 10.0,
            start_at_s: 60.0,
            start: StartEdge::Measured,
            start_spread_ms: 0.0,
            checkpoint: Some(Checkpoint {
                every_s: 1800.0,
                duration_s: 60.0,
                w_per_gpu: None,
            }),
            crash_at_s: vec![3000.0],
            crash_per_hour: 0.0,
            restart_after_s: 300.0,
            end_at_s: Some(7000.0),
            idle_w_per_gpu: None,
        }
    }

    #[test]
    fn checkpoints_count_from_each_start_and_a_crash_restarts_the_job() {
        let (e, notes) = timeline(&lc(), 1).unwrap();
        let got: Vec<(f64, &str)> = e.iter().map(|x| (x.t_s, x.kind.name())).collect();
        assert_eq!(
            got,
            vec![
                (60.0, "start"),
                (1860.0, "checkpoint_begin"),
                (1920.0, "checkpoint_end"),
                (3000.0, "crash"),
                (3300.0, "restart"),
                (5100.0, "checkpoint_begin"),
                (5160.0, "checkpoint_end"),
                (7000.0, "end"),
            ]
        );
        // The one due at 6960 s would end after the job: said, not placed.
        assert!(notes.len() == 1 && notes[0].contains("6960"), "{notes:?}");
    }

    #[test]
    fn a_declared_crash_in_a_checkpoint_is_refused_and_a_drawn_one_is_noted() {
        let mut l = lc();
        l.crash_at_s = vec![1890.0];
        let err = timeline(&l, 1).unwrap_err();
        assert!(err.contains("1890"), "{err}");
        l.crash_at_s.clear();
        l.crash_per_hour = 6.0;
        let (e, _) = timeline(&l, 3).unwrap();
        let crashes = e.iter().filter(|x| x.kind == EventKind::Crash).count();
        let restarts = e.iter().filter(|x| x.kind == EventKind::Restart).count();
        assert!(crashes >= 2, "{e:?}");
        assert!(restarts + 1 >= crashes);
        assert!(e.windows(2).all(|w| w[1].t_s > w[0].t_s));
    }
}
