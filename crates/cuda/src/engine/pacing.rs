//! Pacing of the load: how long a unit takes (timed with device events at
//! start-up, then followed by an exponential average of back-to-back
//! units), the queue of units in flight, and when the queued work is
//! predicted to end. The host keeps up to 10 ms of units queued through a
//! long on-phase, and queues the last [`ARM_AHEAD_NS`] before each fall (its
//! chunks, the fall and the next rise) in one go, about that long ahead: a
//! host descheduled for less than that moves neither the fall nor the rise
//! after it. It never times an edge by sleeping; [`Pacing`] holds that state.

use super::Engine;
use super::setup::dev_err;
use cudarc::driver::CudaEvent;
use powerlab_core::RunClock;
use powerlab_core::hw::HwError;
use powerlab_core::shape::LoadKind;
use powerlab_core::units::{NS_PER_MS, ms_to_ns_f64, ms_to_ns_trunc};
use std::collections::VecDeque;
use std::sync::atomic::Ordering;

/// How much work the host keeps queued: it needs to run only this often.
/// A host descheduled for longer lets the queue run dry (the on-phase's
/// draw falls short, which the rung's verdict reports for on-phases of
/// 200 ms and more), but a fall and the rise after it are armed about
/// [`ARM_AHEAD_NS`] ahead (a goal the host meets unless it is itself that
/// late).
pub(super) const MAX_QUEUED_NS: i64 = 10_000_000;
/// The last stretch of an on-phase, the fall that ends it and the next
/// rise are queued together, at least this long before the fall and at
/// most twice as long. A host thread descheduled by a busy CPU (up to 7 ms
/// seen on H200 with two busy processes per core) then moves no edge.
pub(super) const ARM_AHEAD_NS: i64 = 20_000_000;
/// The chunks of that last stretch are planned as if each ran this many
/// times longer than estimated: the clocks the power controller allows
/// change within it, and a chunk that overruns the fall makes it late.
/// What the chunks leave, `burn_until` fills up to the deadline at a lower
/// draw. On H200 1.4 cost 3 % of the 50 and 20 ms rung means and 1.25 about
/// 2 % at 50 ms; neither overran a fall (worst 4.3 µs, device calls 18–19).
pub(super) const PLAN_SLACK: f64 = 1.25;
/// How much it keeps queued in the last [`NEAR_FALL_NS`] before the target
/// of a fill (the stretch planned in one go before a fall, or the end of a
/// rung): a GEMM chunk's duration follows the clocks the power controller
/// allows, so the further ahead the queue's end is predicted, the further
/// the plan that starts there can be off.
const NEAR_FALL_QUEUED_NS: i64 = 500_000;
/// See [`NEAR_FALL_QUEUED_NS`]: the queue shrinks once the target is less
/// than a full queue ahead, so that the shrink does take effect.
const NEAR_FALL_NS: i64 = MAX_QUEUED_NS + NEAR_FALL_QUEUED_NS;
/// A fill hands over the edges achieved meanwhile only while its target is
/// further ahead than this: the peek (a small copy on a stream of its own,
/// tens of µs) then delays no edge.
const FEED_CLEAR_NS: i64 = 100_000_000;
/// GEMM chunks stop at least this long before a fall; `burn_until` holds
/// the load from there to the deadline.
pub(super) const MIN_FALL_TAIL_NS: i64 = 400_000;

/// A unit of load in flight.
struct Queued {
    /// The unit is a duty chunk (else a constant-load unit).
    small: bool,
    /// Its estimated duration when it was queued, ns.
    est_ns: i64,
    /// The unit ran right after another unit of the same size (no spin or
    /// stamp between), so the time between their completions is its duration.
    chained: bool,
    /// Recorded on the load stream right after the unit.
    ev: CudaEvent,
}

/// The host's picture of the load queue and of how long units take.
pub(super) struct Pacing {
    /// Units in flight, oldest first.
    queued: VecDeque<Queued>,
    /// The size and completion event of the last unit seen to finish.
    last_done: Option<(bool, CudaEvent)>,
    /// The size of the last unit launched, or None if an edge kernel followed it.
    last_launch: Option<bool>,
    /// When the queued work is predicted to end, run-clock ns.
    pub(super) predicted_end: i64,
    /// Estimated duration of a constant-load unit, ns.
    pub(super) big_ns: i64,
    /// Estimated duration of a duty chunk, ns.
    pub(super) chunk_ns: i64,
    /// Estimated work queued since the last edge kernel, ns: what can run
    /// long behind a deadline that is itself fixed.
    since_edge_ns: i64,
}

impl Pacing {
    /// An empty queue with no duration estimates yet.
    pub(super) fn new() -> Pacing {
        Pacing {
            queued: VecDeque::new(),
            last_done: None,
            last_launch: None,
            predicted_end: 0,
            big_ns: 0,
            chunk_ns: 0,
            since_edge_ns: 0,
        }
    }

    /// Forgets the queue, as when the device has been drained.
    pub(super) fn clear(&mut self) {
        self.queued.clear();
        self.last_done = None;
        self.last_launch = None;
    }

    /// The estimated duration of all units still queued, ns.
    pub(super) fn queued_ns(&self) -> i64 {
        self.queued.iter().map(|q| q.est_ns).sum()
    }

    /// Notes that an edge kernel was queued: the next unit is not chained.
    pub(super) fn break_chain(&mut self) {
        self.last_launch = None;
        self.since_edge_ns = 0;
    }

    /// Keeps at most `limit_ns` of work queued: waits on the oldest event.
    fn throttle(&mut self, limit_ns: i64, clock: &RunClock, gpu: &str) -> Result<(), HwError> {
        // Units that finished while the host was away first: counted as
        // still queued, they would push the predicted end late.
        self.reap(clock, gpu)?;
        loop {
            let queued: i64 = self.queued.iter().map(|q| q.est_ns).sum();
            if queued <= limit_ns || self.queued.len() <= 1 {
                return Ok(());
            }
            if let Some(q) = self.queued.pop_front() {
                q.ev.synchronize().map_err(|e| dev_err(gpu, "event", e))?;
                self.finished(q, clock);
            }
        }
    }

    /// Takes every unit that has already finished off the queue, without waiting.
    pub(super) fn reap(&mut self, clock: &RunClock, gpu: &str) -> Result<(), HwError> {
        while let Some(q) = self.queued.front() {
            if !q
                .ev
                .try_is_complete()
                .map_err(|e| dev_err(gpu, "event", e))?
            {
                return Ok(());
            }
            if let Some(q) = self.queued.pop_front() {
                self.finished(q, clock);
            }
        }
        Ok(())
    }

    /// Notes a unit seen to finish. Each completed unit that ran back to
    /// back with the previous one updates the duration estimate, so the
    /// estimate follows the clocks the power cap allows (an H200 at its
    /// 700 W cap runs ~1400 MHz, not 1980).
    fn finished(&mut self, q: Queued, clock: &RunClock) {
        if let Some((prev_small, prev)) = &self.last_done
            && q.chained
            && *prev_small == q.small
            && let Ok(ms) = prev.elapsed_ms(&q.ev)
        {
            let ns = ms_to_ns_trunc(f64::from(ms));
            let w = if q.small {
                &mut self.chunk_ns
            } else {
                &mut self.big_ns
            };
            // Exponential average; absurd samples (preemption) ignored.
            // Taking slowdowns at once was tried: the time between two
            // units' events includes any gap in which the queue ran dry,
            // so the estimate ratcheted up, the host queued less, the
            // queue ran dry more, and on-phases of 500 ms and longer fell
            // to the burn kernel's ~375 W (H200, device call 14).
            if ns > *w / 4 && ns < *w * 4 {
                *w = (*w * 7 + ns) / 8;
            }
        }
        self.last_done = Some((q.small, q.ev));
        // The host has seen this unit finish: what is still queued ends no
        // earlier than now plus its estimates. Without this the plan drifted
        // early whenever units ran longer than estimated, and the last chunk
        // before a fall overran it.
        let rest: i64 = self.queued.iter().map(|q| q.est_ns).sum();
        self.predicted_end = self.predicted_end.max(clock.now_ns() + rest);
    }
}

impl Engine {
    /// Enqueues one unit of load; returns its expected duration.
    pub(super) fn launch_unit(&mut self, small: bool, load: LoadKind) -> Result<i64, HwError> {
        let ns = if small {
            self.pace.chunk_ns
        } else {
            self.pace.big_ns
        }
        .max(1000);
        self.dev
            .launch_unit(self.cfg.mode, small, load, &self.gpu)?;
        Ok(ns)
    }

    /// Measures the duration of a load unit with device events.
    pub(super) fn time_unit(&mut self, small: bool) -> Result<i64, HwError> {
        let timing = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        for _ in 0..3 {
            self.launch_unit(small, LoadKind::Virus)?;
        }
        let reps = if small { 40 } else { 6 };
        let start = self
            .dev
            .stream
            .record_event(timing)
            .map_err(|e| dev_err(&self.gpu, "event", e))?;
        for _ in 0..reps {
            self.launch_unit(small, LoadKind::Virus)?;
        }
        let end = self
            .dev
            .stream
            .record_event(timing)
            .map_err(|e| dev_err(&self.gpu, "event", e))?;
        end.synchronize()
            .map_err(|e| dev_err(&self.gpu, "event", e))?;
        self.sync()?;
        let ms = start
            .elapsed_ms(&end)
            .map_err(|e| dev_err(&self.gpu, "event timing", e))?;
        Ok((ms_to_ns_f64(ms as f64) / reps as f64) as i64)
    }

    /// Queues one unit once at most `limit_ns` of work is ahead of it.
    pub(super) fn push_unit(
        &mut self,
        small: bool,
        load: LoadKind,
        limit_ns: i64,
    ) -> Result<(), HwError> {
        self.pace.throttle(limit_ns, &self.clock, &self.gpu)?;
        let ns = self.launch_unit(small, load)?;
        let timing = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let ev = self
            .dev
            .stream
            .record_event(timing)
            .map_err(|e| dev_err(&self.gpu, "event", e))?;
        let pace = &mut self.pace;
        let chained = pace.last_launch == Some(small);
        pace.last_launch = Some(small);
        pace.queued.push_back(Queued {
            small,
            est_ns: ns,
            chained,
            ev,
        });
        pace.predicted_end = pace.predicted_end.max(self.clock.now_ns()) + ns;
        pace.since_edge_ns += ns;
        Ok(())
    }

    /// Queues load so that the device finishes it as close to `t` as a unit allows.
    pub(super) fn fill_until(
        &mut self,
        t: i64,
        small: bool,
        load: LoadKind,
    ) -> Result<(), HwError> {
        let unit = if small {
            self.pace.chunk_ns
        } else {
            self.pace.big_ns
        }
        .max(1000);
        while self.pace.predicted_end.max(self.clock.now_ns()) + unit / 2 < t {
            if self.stop.load(Ordering::Relaxed) {
                return Err(HwError::Other("stopped".into()));
            }
            // A long on-phase (or a constant rung) hands over its edges on
            // the way, while its target is far enough ahead not to matter.
            if t - self.clock.now_ns() > FEED_CLEAR_NS {
                self.feed_progress();
            }
            // Big units near the edge would overshoot it: finish with small ones.
            let left = t - self.pace.predicted_end.max(self.clock.now_ns());
            let near = left < 2 * self.pace.big_ns;
            let limit = if t - self.clock.now_ns() < NEAR_FALL_NS {
                NEAR_FALL_QUEUED_NS
            } else {
                MAX_QUEUED_NS
            };
            self.push_unit(small || near, load, limit)?;
        }
        Ok(())
    }

    /// Queues, without waiting on the device, duty chunks while they end
    /// before `t` even if each, and the units queued ahead of them since the
    /// last edge kernel that have not been seen to finish, run
    /// [`PLAN_SLACK`] times longer than estimated (the last stretch before a
    /// fall, queued in one go; an edge kernel's deadline does not stretch).
    /// Each chunk is checked against the clock as it is queued, so a host
    /// descheduled part-way queues fewer.
    pub(super) fn plan_until(&mut self, t: i64, load: LoadKind) -> Result<(), HwError> {
        self.pace.reap(&self.clock, &self.gpu)?;
        let unit = (self.pace.chunk_ns.max(1000) as f64 * PLAN_SLACK) as i64;
        loop {
            let unseen = self.pace.since_edge_ns.min(self.pace.queued_ns());
            let start = self.pace.predicted_end.max(self.clock.now_ns())
                + ((PLAN_SLACK - 1.0) * unseen as f64) as i64;
            if start + unit > t {
                return Ok(());
            }
            self.push_unit(true, load, i64::MAX)?;
        }
    }

    /// Holds the host until run-clock time `t` (so that it arms edges at most
    /// [`ARM_AHEAD_NS`] further ahead than it must), taking finished units
    /// off the queue meanwhile.
    pub(super) fn wait_to_arm(&mut self, t: i64) -> Result<(), HwError> {
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return Err(HwError::Other("stopped".into()));
            }
            self.pace.reap(&self.clock, &self.gpu)?;
            let now = self.clock.now_ns();
            if now >= t {
                return Ok(());
            }
            std::thread::sleep(std::time::Duration::from_nanos(
                (t - now).min(NS_PER_MS) as u64
            ));
        }
    }
}
