//! The run's live state. The samplers record each batch of readings, the
//! coordinator its events and progress; a scrape takes a [`Snapshot`].
//! Every update is one short lock over fixed-size data (no I/O, no
//! allocation on the sampler path); the scrape copies what it serves under
//! the same lock and renders outside it.

use powerlab_core::hw::GpuIdentity;
use powerlab_core::{Instrument, Sample};
use powerlab_rundir::RunEvent;
use std::net::SocketAddr;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Instant;

/// How long a GPU's buffered reading holds in the node sum, ns: the
/// collator's node curve (crates/collate/src/curve.rs) gives a grid point
/// no node value when any GPU's latest buffered reading is older than
/// this, and so does the live node power.
pub const BUFFERED_HOLD_NS: i64 = 60_000_000;

/// Buffered readings kept per GPU for the node sum (at 20 ms, 10 s: far
/// more than the samplers' drains are apart).
pub const RING_CAPACITY: usize = 512;

/// The power instruments served, with their `instrument` label (the raw
/// files' instrument without its `_w` unit).
pub(crate) const POWER: [(Instrument, &str); 3] = [
    (Instrument::BufferedW, "buffered"),
    (Instrument::InstantW, "instant"),
    (Instrument::AverageW, "average"),
];

/// The limits a run's interlocks are named by (`limit` of an interlock
/// event): each is served from the start, 0 until it trips.
pub(crate) const INTERLOCKS: [&str; 4] = [
    "max_gpu_temp_c",
    "max_memory_temp_c",
    "max_node_power_w",
    "abort_on_hw_slowdown",
];

/// Spacing between two readings of one instrument beyond which they count
/// as a gap, ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GapLimits {
    /// Buffered readings: the collator's hole (`MAX_GAP_NS` in
    /// crates/collate/src/integrity.rs, 100 ms: the driver's ~20 ms
    /// readings with a few dropped stay below it).
    pub buffered_ns: i64,
    /// Instant readings: twice the poll period.
    pub instant_ns: i64,
    /// Average readings: twice the field period.
    pub average_ns: i64,
    /// How far the node power's instant may lag the samplers' latest tick
    /// before it is withheld (a GPU that stopped delivering would
    /// otherwise freeze it): a drain period plus the buffered gap limit.
    pub node_stale_ns: i64,
}

impl GapLimits {
    /// The limits of a sampler polling the instant field every `poll_ns`,
    /// draining the buffered readings every `buffer_ns` and polling the
    /// average field every `fields_ns`.
    pub fn new(poll_ns: i64, buffer_ns: i64, fields_ns: i64) -> Self {
        let buffered_ns = 100_000_000;
        GapLimits {
            buffered_ns,
            instant_ns: 2 * poll_ns,
            average_ns: 2 * fields_ns,
            node_stale_ns: buffer_ns + buffered_ns,
        }
    }

    fn of(&self, k: usize) -> i64 {
        [self.buffered_ns, self.instant_ns, self.average_ns][k]
    }
}

impl Default for GapLimits {
    fn default() -> Self {
        GapLimits::new(20_000_000, 200_000_000, 100_000_000)
    }
}

/// One instrument of one GPU: its latest reading and its counts.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct InstrumentStats {
    /// The latest reading: (run-clock ns, W).
    pub latest: Option<(i64, f64)>,
    /// Readings received.
    pub count: u64,
    /// Spacings beyond the instrument's gap limit.
    pub gaps: u64,
    /// Largest spacing, ns.
    pub max_gap_ns: i64,
}

/// A GPU's labels, as dcgm-exporter spells them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GpuLabels {
    /// `gpu`: the NVML index, as a string.
    pub gpu: String,
    /// `UUID`.
    pub uuid: String,
    /// `modelName`.
    pub model: String,
}

#[derive(Debug)]
struct GpuState {
    labels: GpuLabels,
    inst: [InstrumentStats; 3],
    drains: u64,
    /// When its sampler last delivered a reading (wall clock; the run's
    /// start until the first).
    last_delivery: Instant,
    /// The latest buffered readings, oldest overwritten first.
    ring: Vec<(i64, f64)>,
    /// Where the next reading goes.
    head: usize,
    /// Readings held (at most the capacity).
    len: usize,
}

impl GpuState {
    fn new(id: &GpuIdentity) -> Self {
        GpuState {
            labels: GpuLabels {
                gpu: id.nvml_index.to_string(),
                uuid: id.uuid.clone(),
                model: id.name.clone(),
            },
            inst: [InstrumentStats::default(); 3],
            drains: 0,
            last_delivery: Instant::now(),
            ring: vec![(0, 0.0); RING_CAPACITY],
            head: 0,
            len: 0,
        }
    }

    fn hold(&mut self, ts_ns: i64, w: f64) {
        self.ring[self.head] = (ts_ns, w);
        self.head = (self.head + 1) % RING_CAPACITY;
        self.len = (self.len + 1).min(RING_CAPACITY);
    }

    /// The latest buffered reading at or before `t` (the last of equal
    /// timestamps), if still held.
    fn at_or_before(&self, t: i64) -> Option<(i64, f64)> {
        (1..=self.len)
            .map(|k| self.ring[(self.head + RING_CAPACITY - k) % RING_CAPACITY])
            .find(|(ts, _)| *ts <= t)
    }
}

/// The rung whose window started last.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RungNow {
    pub id: u32,
    pub label: String,
    pub phase: String,
    pub kind: &'static str,
    pub mode: &'static str,
    pub repeat: u32,
    pub epoch_ns: i64,
    pub end_ns: i64,
}

#[derive(Debug, Default)]
struct Data {
    hostname: String,
    /// The ranks serving this node (1 unless a rack put several on it).
    node_ranks: usize,
    gpus: Vec<GpuState>,
    gaps: GapLimits,
    /// The latest sampler tick, run clock.
    now_ns: Option<i64>,
    rung: Option<RungNow>,
    rungs_completed: u64,
    done_ns: i64,
    total_ns: i64,
    interlocks: Vec<(String, bool)>,
    started: bool,
    finished: bool,
}

/// What one scrape serves.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    pub version: String,
    pub hostname: String,
    /// Each GPU, in run order.
    pub gpus: Vec<GpuSnapshot>,
    /// The samplers' latest tick (run-clock ns).
    pub now_ns: Option<i64>,
    /// The GPUs on this node (this rank's).
    pub node_gpus: usize,
    /// The ranks serving this node.
    pub node_ranks: usize,
    /// The node's power and the instant it stands for (run-clock ns).
    pub node: Option<(f64, i64)>,
    pub rung: Option<RungNow>,
    pub rung_progress: Option<f64>,
    pub run_progress: Option<f64>,
    pub rungs_completed: u64,
    pub interlocks: Vec<(String, bool)>,
    pub stop_requested: bool,
    pub started: bool,
    pub finished: bool,
}

/// One GPU in a scrape.
#[derive(Debug, Clone)]
pub(crate) struct GpuSnapshot {
    pub labels: GpuLabels,
    /// Its instruments, in [`POWER`] order.
    pub inst: [InstrumentStats; 3],
    pub drains: u64,
    /// Wall-clock seconds since its sampler last delivered a reading (or
    /// since the run started, before the first).
    pub idle_s: f64,
}

/// Whether the run has been asked to stop (the run's stop latch).
type StopProbe = Box<dyn Fn() -> bool + Send + Sync>;

/// The live state of one run (or of none yet: a server binds before the
/// run starts).
pub struct Live {
    version: String,
    data: Mutex<Data>,
    stop_probe: OnceLock<StopProbe>,
    address: OnceLock<SocketAddr>,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live")
            .field("version", &self.version)
            .field("address", &self.address.get())
            .finish_non_exhaustive()
    }
}

impl Live {
    /// An empty state, served with `powerlab_build_info{version}`.
    pub fn new(version: &str) -> Self {
        Live {
            version: version.to_string(),
            data: Mutex::new(Data::default()),
            stop_probe: OnceLock::new(),
            address: OnceLock::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Data> {
        // A panicked updater leaves plain numbers behind: still servable.
        self.data.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The run starts: its node's host name and GPUs (run order), the gap
    /// limits of its samplers, and how to tell whether it is being stopped.
    pub fn start_run(
        &self,
        hostname: &str,
        gpus: &[GpuIdentity],
        gaps: GapLimits,
        stop_requested: impl Fn() -> bool + Send + Sync + 'static,
    ) {
        let _ = self.stop_probe.set(Box::new(stop_requested));
        let mut d = self.lock();
        *d = Data {
            hostname: hostname.to_string(),
            gpus: gpus.iter().map(GpuState::new).collect(),
            gaps,
            interlocks: INTERLOCKS.iter().map(|l| (l.to_string(), false)).collect(),
            node_ranks: d.node_ranks,
            ..Data::default()
        };
    }

    /// A rack put `n` ranks on this node, each serving its own GPUs' share
    /// (kept when the run starts).
    pub fn set_node_ranks(&self, n: usize) {
        self.lock().node_ranks = n;
    }

    /// Where the endpoint listens (set once, by the server).
    pub fn address(&self) -> Option<SocketAddr> {
        self.address.get().copied()
    }

    pub(crate) fn set_address(&self, a: SocketAddr) {
        let _ = self.address.set(a);
    }

    /// One sampler tick of GPU `gpu` (run index) at `now_ns`: `drained`
    /// when it drained the buffered readings, `batch` what it read (as
    /// written to the raw file).
    pub fn record(&self, gpu: usize, now_ns: i64, drained: bool, batch: &[Sample]) {
        let mut d = self.lock();
        let d = &mut *d;
        d.now_ns = Some(d.now_ns.map_or(now_ns, |t| t.max(now_ns)));
        let Some(g) = d.gpus.get_mut(gpu) else {
            return;
        };
        if !batch.is_empty() {
            g.last_delivery = Instant::now();
        }
        if drained {
            g.drains += 1;
        }
        for s in batch {
            let Some(k) = POWER.iter().position(|(i, _)| *i == s.instrument) else {
                continue;
            };
            let st = &mut g.inst[k];
            if let Some((prev, _)) = st.latest {
                let gap = s.ts_ns - prev;
                st.max_gap_ns = st.max_gap_ns.max(gap);
                if gap > d.gaps.of(k) {
                    st.gaps += 1;
                }
            }
            st.latest = Some((s.ts_ns, s.value));
            st.count += 1;
            if k == 0 {
                g.hold(s.ts_ns, s.value);
            }
        }
    }

    /// An event of the run (as logged in `events.jsonl`).
    pub fn on_event(&self, e: &RunEvent) {
        let mut d = self.lock();
        match e {
            RunEvent::RunStarted { .. } => d.started = true,
            RunEvent::RungStarted {
                rung,
                epoch_ns,
                end_ns,
                ..
            } => {
                d.rung = Some(RungNow {
                    id: rung.id,
                    label: rung.label.clone(),
                    phase: rung.phase.clone(),
                    kind: rung.kind.as_str(),
                    mode: rung.mode.as_str(),
                    repeat: rung.repeat,
                    epoch_ns: *epoch_ns,
                    end_ns: *end_ns,
                });
            }
            RunEvent::RungEnded { .. } => d.rungs_completed += 1,
            RunEvent::Interlock { limit, .. } => {
                match d.interlocks.iter_mut().find(|(l, _)| l == limit) {
                    Some(l) => l.1 = true,
                    None => d.interlocks.push((limit.clone(), true)),
                }
            }
            RunEvent::RunEnded { status, .. } => {
                d.finished = true;
                d.rung = None;
                if status == "complete" {
                    d.done_ns = d.total_ns;
                }
            }
            _ => {}
        }
    }

    /// The campaign's progress: nominal ns done of the total.
    pub fn progress(&self, done_ns: i64, total_ns: i64) {
        let mut d = self.lock();
        d.done_ns = done_ns;
        d.total_ns = total_ns;
    }

    /// What a scrape serves, copied under the lock.
    pub(crate) fn snapshot(&self) -> Snapshot {
        let stop_requested = self.stop_probe.get().is_some_and(|p| p());
        let d = self.lock();
        let rung_progress = d.rung.as_ref().zip(d.now_ns).map(|(r, now)| {
            let span = (r.end_ns - r.epoch_ns).max(1) as f64;
            ((now - r.epoch_ns) as f64 / span).clamp(0.0, 1.0)
        });
        Snapshot {
            version: self.version.clone(),
            hostname: d.hostname.clone(),
            gpus: d
                .gpus
                .iter()
                .map(|g| GpuSnapshot {
                    labels: g.labels.clone(),
                    inst: g.inst,
                    drains: g.drains,
                    idle_s: g.last_delivery.elapsed().as_secs_f64(),
                })
                .collect(),
            now_ns: d.now_ns,
            node_gpus: d.gpus.len(),
            node_ranks: d.node_ranks.max(1),
            node: node_power(&d.gpus, d.now_ns, d.gaps.node_stale_ns),
            rung: d.rung.clone(),
            rung_progress,
            run_progress: (d.total_ns > 0)
                .then(|| (d.done_ns as f64 / d.total_ns as f64).clamp(0.0, 1.0)),
            rungs_completed: d.rungs_completed,
            interlocks: d.interlocks.clone(),
            stop_requested,
            started: d.started,
            finished: d.finished,
        }
    }
}

/// The node's power as the collator's node curve gives it from the
/// buffered readings received so far: at `t`, the earliest of the GPUs'
/// latest buffered timestamps (every GPU's readings up to `t` have been
/// received), the sum over GPUs in run order of each GPU's latest reading
/// at or before `t`; none when a GPU has no reading within
/// [`BUFFERED_HOLD_NS`] of `t` (a partial sum would look like a power drop),
/// and none when `t` lags the samplers' latest tick `now` by more than
/// `stale_ns` (a GPU that stopped delivering would freeze it).
fn node_power(gpus: &[GpuState], now: Option<i64>, stale_ns: i64) -> Option<(f64, i64)> {
    let t = gpus
        .iter()
        .map(|g| g.inst[0].latest.map(|(ts, _)| ts))
        .collect::<Option<Vec<i64>>>()?
        .into_iter()
        .min()?;
    if now.is_some_and(|now| now - t > stale_ns) {
        return None;
    }
    let mut sum = 0.0;
    for g in gpus {
        let (ts, w) = g.at_or_before(t)?;
        if t - ts > BUFFERED_HOLD_NS {
            return None;
        }
        sum += w;
    }
    Some((sum, t))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(i: u32) -> GpuIdentity {
        GpuIdentity {
            key: format!("gpu{i}"),
            uuid: format!("GPU-{i}"),
            name: "NVIDIA H200".into(),
            nvml_index: i,
            power_limit_w: 700.0,
            power_smoothing: Default::default(),
        }
    }

    fn b(ts: i64, w: f64) -> Sample {
        Sample {
            ts_ns: ts,
            instrument: Instrument::BufferedW,
            value: w,
        }
    }

    const MS: i64 = 1_000_000;

    #[test]
    fn the_node_sum_stands_at_the_earliest_latest_reading_and_holds_each_gpu() {
        let live = Live::new("t");
        live.start_run("h", &[gpu(0), gpu(1)], GapLimits::default(), || false);
        assert_eq!(live.snapshot().node, None);
        live.record(0, 100 * MS, true, &[b(20 * MS, 100.0), b(40 * MS, 300.0)]);
        assert_eq!(live.snapshot().node, None, "GPU 1 has no reading yet");
        live.record(1, 110 * MS, true, &[b(30 * MS, 10.0), b(35 * MS, 20.0)]);
        // At 35 ms: GPU 0 holds its 20 ms reading, GPU 1 its 35 ms one.
        assert_eq!(live.snapshot().node, Some((120.0, 35 * MS)));
        // At 40 ms: GPU 1's latest at or before is the 35 ms reading.
        live.record(1, 200 * MS, true, &[b(60 * MS, 30.0)]);
        assert_eq!(live.snapshot().node, Some((320.0, 40 * MS)));
        // GPU 1 runs on; GPU 0's latest (40 ms) stays the instant.
        live.record(1, 300 * MS, true, &[b(150 * MS, 50.0)]);
        assert_eq!(live.snapshot().node, Some((320.0, 40 * MS)));
        live.record(0, 300 * MS, true, &[b(150 * MS, 400.0)]);
        assert_eq!(live.snapshot().node, Some((450.0, 150 * MS)));
        live.record(1, 400 * MS, true, &[b(300 * MS, 60.0)]);
        assert_eq!(live.snapshot().node, Some((450.0, 150 * MS)));
        // At 300 ms GPU 0's latest at or before is 150 ms old: no value.
        live.record(0, 500 * MS, true, &[b(400 * MS, 400.0)]);
        assert_eq!(live.snapshot().node, None);
    }

    #[test]
    fn a_gpu_that_stops_delivering_withholds_the_node_power() {
        let live = Live::new("t");
        let limits = GapLimits::new(20 * MS, 200 * MS, 100 * MS);
        assert_eq!(limits.node_stale_ns, 300 * MS);
        live.start_run("h", &[gpu(0), gpu(1)], limits, || false);
        live.record(0, 200 * MS, true, &[b(180 * MS, 100.0)]);
        live.record(1, 200 * MS, true, &[b(180 * MS, 200.0)]);
        assert_eq!(live.snapshot().node, Some((300.0, 180 * MS)));
        // GPU 1 delivers on, GPU 0 nothing: its 180 ms reading stays the
        // instant until the samplers have run 300 ms past it.
        live.record(1, 400 * MS, true, &[b(380 * MS, 250.0)]);
        assert_eq!(live.snapshot().node, Some((300.0, 180 * MS)));
        live.record(0, 480 * MS, false, &[]);
        assert_eq!(live.snapshot().node, Some((300.0, 180 * MS)));
        live.record(1, 481 * MS, true, &[b(460 * MS, 250.0)]);
        let s = live.snapshot();
        assert_eq!(s.node, None, "withheld 301 ms after its instant");
        assert_eq!(s.now_ns, Some(481 * MS));
        assert!(s.gpus.iter().all(|g| g.idle_s < 5.0));
        // It delivers again: the node power is back.
        live.record(0, 500 * MS, true, &[b(450 * MS, 120.0), b(470 * MS, 130.0)]);
        assert_eq!(live.snapshot().node, Some((370.0, 460 * MS)));
    }

    #[test]
    fn the_rank_count_outlives_the_start_and_idle_counts_deliveries_only() {
        let live = Live::new("t");
        live.set_node_ranks(4);
        live.start_run("h", &[gpu(0)], GapLimits::default(), || false);
        assert_eq!(live.snapshot().node_ranks, 4);
        live.record(0, 10 * MS, true, &[b(5 * MS, 1.0)]);
        let after_delivery = live.snapshot().gpus[0].idle_s;
        std::thread::sleep(std::time::Duration::from_millis(30));
        // A tick whose every read failed delivers nothing.
        live.record(0, 40 * MS, true, &[]);
        let idle = live.snapshot().gpus[0].idle_s;
        assert!(idle >= 0.03 && idle > after_delivery, "{idle} s");
        assert_eq!(live.snapshot().gpus[0].drains, 2, "drain attempts");
    }

    #[test]
    fn counts_gaps_and_the_largest_spacing_per_instrument() {
        let live = Live::new("t");
        let gaps = GapLimits::new(20 * MS, 200 * MS, 100 * MS);
        live.start_run("h", &[gpu(0)], gaps, || true);
        let batch: Vec<Sample> = [0, 20, 40, 200, 220, 330]
            .iter()
            .map(|t| b(t * MS, 1.0))
            .collect();
        live.record(0, 400 * MS, true, &batch);
        let inst = Sample {
            ts_ns: 400 * MS,
            instrument: Instrument::InstantW,
            value: 5.0,
        };
        live.record(0, 400 * MS, false, &[inst]);
        let s = live.snapshot();
        let (st, drains) = (&s.gpus[0].inst, s.gpus[0].drains);
        assert_eq!(drains, 1);
        assert_eq!(st[0].count, 6);
        assert_eq!(st[0].gaps, 2, "160 ms and 110 ms exceed 100 ms");
        assert_eq!(st[0].max_gap_ns, 160 * MS);
        assert_eq!(st[1].count, 1);
        assert_eq!(st[1].latest, Some((400 * MS, 5.0)));
        assert_eq!(st[2].count, 0);
        assert!(s.stop_requested);
    }

    #[test]
    fn the_ring_keeps_the_newest_readings() {
        let mut g = GpuState::new(&gpu(0));
        for k in 0..(RING_CAPACITY as i64 + 10) {
            g.hold(k * MS, k as f64);
        }
        assert_eq!(g.len, RING_CAPACITY);
        assert_eq!(g.at_or_before(5 * MS), None, "overwritten");
        assert_eq!(g.at_or_before(100 * MS), Some((100 * MS, 100.0)));
        assert_eq!(
            g.at_or_before(i64::MAX).map(|r| r.1),
            Some((RING_CAPACITY + 9) as f64)
        );
        g.hold(1000 * MS, 1.0);
        g.hold(1000 * MS, 2.0);
        assert_eq!(
            g.at_or_before(1000 * MS),
            Some((1000 * MS, 2.0)),
            "the last of equal times"
        );
    }
}
