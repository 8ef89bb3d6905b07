//! What the `Prepare` and `Run` commands do: the warm-up before a rung and
//! its readiness report; the rung itself (edges or collectives), held until
//! its window ends, its edges handed over as they are achieved, and its
//! achieved edges read back and converted from the device clock to the run
//! clock (or, when the stop cuts it short, those achieved before the stop).

use super::Engine;
use powerlab_core::collective::CollectiveTiming;
use powerlab_core::hw::{
    DeviceClock, EdgeFeed, EdgeRecord, GpuSchedule, HwError, Readiness, RungOutcome,
};
use powerlab_core::shape::{EdgeKind, LoadKind, LoadShape};
use powerlab_core::units::NS_PER_MS;
use std::sync::atomic::Ordering;
use std::time::Duration;

impl Engine {
    /// Warms up for `warmup_ns` (running `load`, or idle), probes the device
    /// clock and reports how early the next rung must be armed.
    pub(super) fn prepare(
        &mut self,
        warmup_ns: i64,
        load: Option<LoadKind>,
    ) -> Result<Readiness, HwError> {
        let until = self.clock.now_ns() + warmup_ns;
        match load {
            Some(l) => self.fill_until(until, false, l)?,
            // An idle rung's warm-up is idle: the power of whatever ran
            // before (the cold start's timing GEMMs) settles before its window.
            None => {
                while self.clock.now_ns() < until && !self.stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
        }
        self.warm = load;
        let h0 = self.clock.now_ns();
        self.probe.offset_ns = self.measure_offset()?.0;
        let probe_ns = self.clock.now_ns() - h0;
        // Arming needs the queued keep-warm work to drain before the first
        // deadline: count it in, with the probe time, and double it.
        let queued: i64 = self.pace.queued_ns() + self.pace.big_ns;
        Ok(Readiness {
            ready_at_ns: self.clock.now_ns(),
            arm_latency_ns: (2 * (probe_ns / 15 + queued)).max(NS_PER_MS),
            device_clock_offset_ns: Some(self.probe.offset_ns),
            realtime_thread: Some(self.realtime),
        })
    }

    /// Runs one rung's schedule and reports its achieved edges, collective
    /// timings and device-clock probes; hands the edges to `feed` as they
    /// are achieved. A window the stop cuts short keeps the edges achieved
    /// before the stop for [`super::Cmd::StoppedEdges`].
    pub(super) fn run(
        &mut self,
        s: &GpuSchedule,
        feed: Option<EdgeFeed>,
    ) -> Result<RungOutcome, HwError> {
        let edges = s.shape.edges(s.start_ns, s.end_ns);
        self.stopped.clear();
        let t_begin = self.clock.now_ns();
        let (o_begin, rtt_begin) = self.measure_offset()?;
        self.probe.offset_ns = o_begin;
        // The edges, the end stamp, and the scratch slot of the smoothing steps.
        self.stamps.ready(edges.len() + 2, &self.gpu)?;
        self.feeding = feed.map(|feed| Feeding {
            feed,
            rung_id: s.rung_id,
            edges: edges.clone(),
            fed: 0,
            last_ns: t_begin,
        });
        let loaded = self.run_load(s, &edges);
        self.feeding = None;
        let collectives = match loaded {
            Ok(c) => c,
            Err(e) => {
                if self.stop.load(Ordering::Relaxed) {
                    self.keep_stopped(&edges, (t_begin, o_begin));
                }
                return Err(e);
            }
        };
        let achieved = self.stamps.read(&self.dev.stream, edges.len(), &self.gpu)?;
        // Device time back to run time with the offset interpolated between
        // the probes before and after the rung (the two clocks drift).
        let t_end = self.clock.now_ns();
        let (o_end, rtt_end) = self.measure_offset()?;
        let out = converted(&edges, &achieved, (t_begin, o_begin), (t_end, o_end));
        let clock = DeviceClock {
            begin_ns: t_begin,
            offset_begin_ns: o_begin,
            end_ns: t_end,
            offset_end_ns: o_end,
            probe_rtt_ns: rtt_begin.max(rtt_end),
        };
        Ok(RungOutcome {
            edges: out,
            work_items: 0,
            collectives,
            clock: Some(clock),
        })
    }

    /// The load of a rung (edges or collectives), held until its window
    /// ends, the device run dry; returns the collectives' timings. Ends
    /// early, with an error, when the engine is told to stop.
    fn run_load(
        &mut self,
        s: &GpuSchedule,
        edges: &[(EdgeKind, i64)],
    ) -> Result<Vec<CollectiveTiming>, HwError> {
        let mut collectives = Vec::new();
        match &s.shape {
            LoadShape::Sweep { .. } | LoadShape::Fabric { .. } => {
                // Collectives start on the device clock at the window start,
                // behind whatever keep-warm work is still queued.
                self.warm = None;
                self.launch_spin(s.start_ns, 0)?;
                collectives = match &s.shape {
                    LoadShape::Sweep { spec } => self.sweep(spec, s.start_ns, s.end_ns)?,
                    LoadShape::Fabric { spec } => self.fabric(spec, s.start_ns, s.end_ns)?,
                    _ => Vec::new(),
                };
            }
            LoadShape::Staircase { .. } => self.run_staircase(s)?,
            // The user's command draws; the harness only holds the window.
            LoadShape::Workload { .. } => self.warm = None,
            _ => self.run_edges(s, edges)?,
        }
        self.sync()?;
        // The window lasts until its end whatever the load (an idle rung too).
        self.warm = None;
        while self.clock.now_ns() < s.end_ns {
            if self.stop.load(Ordering::Relaxed) {
                return Err(HwError::Other("stopped".into()));
            }
            self.feed_progress();
            let left = s.end_ns - self.clock.now_ns();
            std::thread::sleep(Duration::from_nanos(left.clamp(0, 5_000_000) as u64));
        }
        Ok(collectives)
    }

    /// Hands over the edges achieved since the last time, at most every
    /// [`FEED_EVERY_NS`]: the slots are peeked at on their own stream, and
    /// the edges converted with the offset predicted at each (provisional:
    /// the outcome's values replace them). Best effort: a failed peek
    /// hands over nothing.
    pub(super) fn feed_progress(&mut self) {
        let now = self.clock.now_ns();
        let Some(f) = self.feeding.as_mut() else {
            return;
        };
        if now - f.last_ns < FEED_EVERY_NS || f.fed >= f.edges.len() {
            return;
        }
        f.last_ns = now;
        let Ok(slots) = self.stamps.peek(f.edges.len(), &self.gpu) else {
            return;
        };
        let done = f.fed + slots[f.fed..].iter().take_while(|g| **g != 0).count();
        let new: Vec<EdgeRecord> = (f.fed..done)
            .map(|i| {
                let (kind, t) = f.edges[i];
                EdgeRecord {
                    index: i as u32,
                    kind,
                    intended_ns: t,
                    achieved_ns: slots[i] as i64 - self.probe.predicted(t),
                }
            })
            .collect();
        f.feed.push(f.rung_id, &new);
        f.fed = done;
    }

    /// Keeps the edges a stopped window achieved before the stop (those
    /// stamped by now), converted with the offset interpolated between the
    /// rung's first probe and one taken now. Best effort: a failed peek or
    /// probe keeps none.
    fn keep_stopped(&mut self, edges: &[(EdgeKind, i64)], begin: (i64, i64)) {
        let stopped_at = self.clock.now_ns();
        let Ok(slots) = self.stamps.peek(edges.len(), &self.gpu) else {
            return;
        };
        let Ok((o_end, _)) = self.measure_offset() else {
            return;
        };
        let end = (self.clock.now_ns(), o_end);
        self.stopped = converted(edges, &slots, begin, end)
            .into_iter()
            .zip(&slots)
            .filter(|(e, g)| **g != 0 && e.achieved_ns <= stopped_at)
            .map(|(e, _)| e)
            .collect();
    }
}

/// How often a running window's edges are handed over, ns.
const FEED_EVERY_NS: i64 = 500_000_000;

/// A running window's edges being handed over as they are achieved.
pub(super) struct Feeding {
    /// Where they go.
    feed: EdgeFeed,
    /// The rung.
    rung_id: u32,
    /// The window's intended edges.
    edges: Vec<(EdgeKind, i64)>,
    /// How many have been handed over (a prefix).
    fed: usize,
    /// When they were last looked at, run clock.
    last_ns: i64,
}

/// The `edges` with their achieved device times (`achieved`, `%globaltimer`)
/// in run time, with the offset interpolated between the probes `begin`
/// and `end` ((run time, offset), ns).
fn converted(
    edges: &[(EdgeKind, i64)],
    achieved: &[u64],
    (t_begin, o_begin): (i64, i64),
    (t_end, o_end): (i64, i64),
) -> Vec<EdgeRecord> {
    let span = (t_end - t_begin).max(1) as f64;
    let offset_at = |t: i64| {
        o_begin
            + (((o_end - o_begin) as f64) * ((t - t_begin) as f64 / span).clamp(0.0, 1.0)) as i64
    };
    edges
        .iter()
        .zip(achieved)
        .enumerate()
        .map(|(i, ((kind, t), gt))| EdgeRecord {
            index: i as u32,
            kind: *kind,
            intended_ns: *t,
            achieved_ns: *gt as i64 - offset_at(*t),
        })
        .collect()
}
