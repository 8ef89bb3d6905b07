//! What the `Prepare` and `Run` commands do: the warm-up before a rung and
//! its readiness report; the rung itself (edges or collectives), held until
//! its window ends, and its achieved edges read back and converted from the
//! device clock to the run clock.

use super::Engine;
use powerlab_core::hw::{DeviceClock, EdgeRecord, GpuSchedule, HwError, Readiness, RungOutcome};
use powerlab_core::shape::{LoadKind, LoadShape};
use std::sync::atomic::Ordering;
use std::time::Duration;

impl Engine {
    /// Sleeps the host until run-clock time `t`.
    fn host_wait_until(&self, t: i64) {
        let now = self.clock.now_ns();
        if t > now {
            std::thread::sleep(Duration::from_nanos((t - now) as u64));
        }
    }

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
            arm_latency_ns: (2 * (probe_ns / 15 + queued)).max(1_000_000),
            device_clock_offset_ns: Some(self.probe.offset_ns),
            realtime_thread: Some(self.realtime),
        })
    }

    /// Runs one rung's schedule and reports its achieved edges, collective
    /// timings and device-clock probes.
    pub(super) fn run(&mut self, s: &GpuSchedule) -> Result<RungOutcome, HwError> {
        let edges = s.shape.edges(s.start_ns, s.end_ns);
        let t_begin = self.clock.now_ns();
        let (o_begin, rtt_begin) = self.measure_offset()?;
        self.probe.offset_ns = o_begin;
        self.stamps
            .ensure(&self.dev.stream, edges.len() + 1, &self.gpu)?;
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
            _ => self.run_edges(s, &edges)?,
        }
        self.sync()?;
        // The window lasts until its end whatever the load (an idle rung too).
        self.host_wait_until(s.end_ns);
        self.warm = None;
        let achieved = self.stamps.read(&self.dev.stream, edges.len(), &self.gpu)?;
        // Device time back to run time with the offset interpolated between
        // the probes before and after the rung (the two clocks drift).
        let t_end = self.clock.now_ns();
        let (o_end, rtt_end) = self.measure_offset()?;
        let span = (t_end - t_begin).max(1) as f64;
        let offset_at = |t: i64| {
            o_begin
                + (((o_end - o_begin) as f64) * ((t - t_begin) as f64 / span).clamp(0.0, 1.0))
                    as i64
        };
        let out = edges
            .iter()
            .zip(achieved)
            .enumerate()
            .map(|(i, ((kind, t), gt))| EdgeRecord {
                index: i as u32,
                kind: *kind,
                intended_ns: *t,
                achieved_ns: gt as i64 - offset_at(*t),
            })
            .collect();
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
}
