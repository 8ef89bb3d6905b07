//! Where the job stands at each instant: the share of every GPU that runs
//! the iteration and the level the rest draw. The facility draws
//! `running × S(t) + (1 − running) × N × level`, S the running job's
//! waveform: after a start (or a checkpoint's end) the running share rises
//! along the start's measured edge from the level before it; after a
//! checkpoint, a crash or the end it falls along that edge to the level
//! after it.

use super::edges::{Edges, Transition};
use super::timeline::{Event, EventKind};

/// The job's state at an instant: the share running, the level of the
/// rest (W per GPU), and the latest event (None: before the first).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct At {
    /// The share of the GPUs running the iteration (an edge's overshoot
    /// may take it past 0 or 1).
    pub running: f64,
    /// What the others draw, W per GPU.
    pub level_w: f64,
    /// The latest event's index.
    pub event: Option<usize>,
}

/// The events and edges, walked forward in time.
pub struct Mixer<'a> {
    events: &'a [Event],
    edges: &'a Edges,
    /// The running share as each event comes: a transition begins where
    /// the one before had got to (a crash 10 s into a cold start that
    /// takes 8–14 s falls from the few nodes started, not from all).
    from: Vec<f64>,
    next: usize,
}

impl<'a> Mixer<'a> {
    /// From the study's start.
    pub fn new(events: &'a [Event], edges: &'a Edges) -> Mixer<'a> {
        let mut m = Mixer {
            events,
            edges,
            from: Vec::with_capacity(events.len()),
            next: 0,
        };
        for (i, e) in events.iter().enumerate() {
            let r = match i.checked_sub(1) {
                None => 0.0,
                Some(p) => m.share(p, e.t_s),
            };
            m.from.push(r);
        }
        m
    }

    /// The transition and the level of the rest after event `e`, and
    /// whether the job runs after it.
    pub fn of(&self, e: EventKind) -> (&'a Transition, f64, bool) {
        let ed = self.edges;
        // `edges::edges` builds every edge the timeline places (the same
        // conditions): the instant step is never reached.
        let or = |t: &'a Option<Transition>| t.as_ref().unwrap_or(&ed.instant);
        match e {
            EventKind::Start | EventKind::Restart => (&ed.start, ed.idle_w, true),
            EventKind::CheckpointEnd => (or(&ed.checkpoint_up), ed.checkpoint_w, true),
            EventKind::CheckpointBegin => (or(&ed.checkpoint_down), ed.checkpoint_w, false),
            EventKind::Crash => (or(&ed.crash), ed.idle_w, false),
            EventKind::End => (or(&ed.end), ed.idle_w, false),
        }
    }

    /// The running share at `t_s` after event `i`: from where it was as
    /// the event came towards 1 (a start) or 0 (a stop).
    fn share(&self, i: usize, t_s: f64) -> f64 {
        let e = self.events[i];
        let (tr, _, runs) = self.of(e.kind);
        let done = tr.at((t_s - e.t_s) * 1000.0);
        let from = self.from[i];
        let to = if runs { 1.0 } else { 0.0 };
        from + (to - from) * done
    }

    /// The state at `t_s` (never earlier than the last call's).
    pub fn at(&mut self, t_s: f64) -> At {
        while self.next < self.events.len() && self.events[self.next].t_s <= t_s {
            self.next += 1;
        }
        let Some(i) = self.next.checked_sub(1) else {
            return At {
                running: 0.0,
                level_w: self.edges.idle_w,
                event: None,
            };
        };
        At {
            running: self.share(i, t_s),
            level_w: self.of(self.events[i].kind).1,
            event: Some(i),
        }
    }
}
