//! Node truth for periodic rungs: the node's cycle composed from every
//! GPU's own folded cycle.
//!
//! Summing each GPU's latest reading on a common grid (sample and hold)
//! pairs one GPU's "on" reading with another's reading from before its
//! fall: once a rung's period is within a few tens of sample intervals it
//! invents peaks and dips the node never drew, and a staggered rung looks
//! several times rougher than it is. So the headline figures of a duty
//! rung come from here instead:
//!
//! 1. each GPU's buffered samples, each placed at the centre of its own
//!    averaging window (timestamp − lag − window/2), are folded on that
//!    GPU's recorded rising edges into one cycle (phase bins);
//! 2. each GPU's cycle is the folded data itself: phase bins, empty bins
//!    filled without crossing an edge, every harmonic the bins hold kept
//!    (a series cut short rings), those no stronger than the scatter of
//!    the samples within a bin shrunk (Wiener), and those the sampled
//!    phases resolve divided by the window's attenuation (a boxcar: sinc)
//!    where that gain is at least 0.85, and lifted by at most 1/0.85 where
//!    it is less; the rung is stated only if the window passes at least
//!    [`MIN_HARMONICS`] harmonics at [`MIN_GAIN`] or more ([`fold`]);
//! 3. the GPUs' cycles are shifted to their measured offsets (the median
//!    phase of their rising edges after the rung's epoch), read at ≤ 0.5 ms
//!    steps by linear interpolation between bin centres, and summed: the
//!    node's cycle;
//! 4. the cycle, laid over the rung's measured window, gives mean, peak,
//!    p1/p10/p90/p99, spread and swing, each with a 95 % interval from a
//!    bootstrap over whole cycles ([`interval`]).
//!
//! A rung whose samples leave part of the cycle unseen (a period locked to
//! the sampling grid: less than [`MIN_COVERAGE`] of the phase bins hold a
//! sample, or the widest unseen gap leaves fewer than [`MIN_HARMONICS`]
//! harmonics), whose window passes fewer than [`MIN_HARMONICS`]
//! harmonics or smears an on- or off-phase shorter than twice its length,
//! whose measured window holds fewer than [`MIN_CYCLES`] cycles or
//! [`MIN_SAMPLES`] samples of a GPU, or whose
//! edge log or raw samples are incomplete, gets no node figures: it gets a
//! verdict that says why.

mod compose;
mod fold;
pub mod interval;
mod on_phase;
mod rack;
#[cfg(test)]
mod tests;

pub use compose::compose;
pub use interval::{Bounds, CycleInterval};
pub use on_phase::short_on_phases;
pub use rack::sum_cycles;

use crate::fft::Planner;
use crate::metric::{Levels, MetricValues};
use crate::sensor::model::SensorModel;
use fold::GpuFold;
use powerlab_core::shape::EdgeKind;
use powerlab_core::units::ms_to_ns;
use powerlab_samples::load::{Run, RungWindow};
use powerlab_samples::series::{EdgeIndex, SeriesSet};

/// A harmonic is reconstructed only where the window and the bins together
/// still pass at least this share of it: dividing by a smaller gain
/// amplifies noise and any error in the window model.
pub const MIN_GAIN: f64 = 0.6;

/// Fewer harmonics than this cannot describe a duty cycle's shape: such a
/// rung's figures are left empty with a verdict.
pub const MIN_HARMONICS: usize = 4;

/// A stated figure needs at least this share of the cycle's phase bins to
/// hold a sample of every GPU. Detuned rungs of the committed 2 × H200 runs
/// covered 88–100 % (two samples per bin on average: some bins stay empty
/// by chance), and a simulated rung stopped 59 % into its window 72 % (the
/// detuning walks the phases over the whole planned window); periods on
/// the 20 ms sampling grid covered 31–53 %, and their figures (100 ms
/// staggered: 301 W where a fold of the same samples on more phases gives
/// 389 ± 31 W) were not what the node drew.
pub const MIN_COVERAGE: f64 = 0.6;

/// A fold needs at least this many whole cycles in the measured window.
pub const MIN_CYCLES: f64 = 2.0;

/// And at least this many buffered samples of each GPU (3 s of them).
pub const MIN_SAMPLES: usize = 150;

/// Most harmonics used.
const MAX_HARMONICS: usize = 256;

/// Folded samples per bin, on average, at least.
const SAMPLES_PER_BIN: usize = 2;

/// The node's composed cycle of one rung.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeCycle {
    /// Rung id.
    pub rung_id: u32,
    /// The period the GPUs ran, ms.
    pub period_ms: f64,
    /// Harmonics restored to full height (those the window passes at
    /// ≥ [`MIN_GAIN`] and the samples' phases resolve, on every GPU).
    pub harmonics: usize,
    /// Node power over one cycle, phase 0 at the rung's epoch, evenly spaced.
    pub values: Vec<f64>,
    /// Lowest phase coverage of any GPU.
    pub coverage: f64,
    /// Buffered samples folded, all GPUs.
    pub samples: usize,
    /// Each GPU's draw through the settled second half of its on-phase, W.
    pub gpu_on_w: Vec<(String, f64)>,
    /// Each GPU's own cycle (phase 0 at its own rising edges, on the
    /// node cycle's grid, read as the node's is): what its floor and
    /// ramps are read from. Empty for a rack's sum of node cycles.
    pub gpu_cycles: Vec<(String, Vec<f64>)>,
    /// The plain fold (each bin the mean of its samples, nothing cut or
    /// lifted) on the same grid: what levels held over milliseconds are
    /// read from. Empty for a rack's sum.
    pub gpu_levels: Vec<(String, Vec<f64>)>,
    /// The node's on−off step: every GPU's settled on level less its
    /// settled off level (the second halves of its phases), summed, W.
    pub step_w: f64,
    /// A mitigation rung's step for judging what is unresolved: the larger
    /// of `step_w` and the cycle's range (its ramps may fill both phases,
    /// which then never settle); None for a plain rung.
    pub range_step_w: Option<f64>,
    /// Node figures, W.
    pub stats: CycleStats,
    /// Their 95 % intervals within the run (None for a rack's sum of node
    /// cycles, or with fewer than two whole cycles).
    pub interval: Option<CycleInterval>,
    /// The registry's own metrics ([`crate::metric`]), each read from the
    /// cycle's levels over the rung's window, with its interval where it
    /// is bootstrapped.
    pub metrics: MetricValues,
}

/// Figures of a node cycle.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CycleStats {
    /// Mean, W.
    pub mean_w: f64,
    /// Maximum, W.
    pub peak_w: f64,
    /// Percentiles, W.
    pub p1_w: f64,
    /// 10th percentile.
    pub p10_w: f64,
    /// 90th percentile.
    pub p90_w: f64,
    /// 99th percentile.
    pub p99_w: f64,
}

impl CycleStats {
    /// The figures of the weighted points of a window ([`window_points`]):
    /// [`CycleStats::of`] their [`Levels`], bit for bit, with the points
    /// partitioned around the four quantiles' ranks, not sorted (what each
    /// of a bootstrap's replicates reads).
    fn of_points(mut points: Vec<(f64, f64)>) -> CycleStats {
        let mean_w = crate::metric::weighted_mean(&points);
        let peak_w = points
            .iter()
            .map(|p| p.0)
            .max_by(f64::total_cmp)
            .unwrap_or(f64::NAN);
        let [p1_w, p10_w, p90_w, p99_w] = match powerlab_samples::stats::weighted_quantiles(
            &mut points,
            &[0.01, 0.10, 0.90, 0.99],
        )[..]
        {
            [a, b, c, d] => [a, b, c, d],
            _ => [f64::NAN; 4],
        };
        CycleStats {
            mean_w,
            peak_w,
            p1_w,
            p10_w,
            p90_w,
            p99_w,
        }
    }

    /// The figures of `levels`.
    pub fn of(levels: &Levels) -> CycleStats {
        CycleStats {
            mean_w: levels.mean(),
            peak_w: levels.max(),
            p1_w: levels.quantile(0.01),
            p10_w: levels.quantile(0.10),
            p90_w: levels.quantile(0.90),
            p99_w: levels.quantile(0.99),
        }
    }
}

#[cfg(test)]
impl NodeCycle {
    /// Rung 1's cycle of `values` over `period_ms`: no GPU, no harmonic,
    /// no step, full coverage, the figures of an empty cycle (tests set
    /// the fields they read by struct update).
    pub(crate) fn of_values(period_ms: f64, values: Vec<f64>) -> NodeCycle {
        NodeCycle {
            rung_id: 1,
            period_ms,
            harmonics: 0,
            values,
            coverage: 1.0,
            samples: 0,
            gpu_on_w: Vec::new(),
            gpu_cycles: Vec::new(),
            gpu_levels: Vec::new(),
            step_w: 0.0,
            range_step_w: None,
            stats: CycleStats::of_points(Vec::new()),
            interval: None,
            metrics: Default::default(),
        }
    }
}

impl NodeCycle {
    /// Node power at absolute time `t_ns` of a rung whose epoch is `epoch_ns`.
    pub fn at(&self, epoch_ns: i64, t_ns: i64) -> f64 {
        let p = ms_to_ns(self.period_ms);
        if p <= 0 || self.values.is_empty() {
            return f64::NAN;
        }
        self.at_phase_ns((t_ns - epoch_ns).rem_euclid(p), p)
    }

    /// [`NodeCycle::at`] every `step_ns` (> 0) from `from_ns`, `n` times:
    /// the phase carried from one time to the next, not divided out of
    /// each (a chart reads a rung's cycle at 0.5 ms steps over its window).
    pub fn along(&self, epoch_ns: i64, from_ns: i64, step_ns: i64, n: usize) -> Vec<f64> {
        let p = ms_to_ns(self.period_ms);
        if p <= 0 || self.values.is_empty() || step_ns <= 0 {
            return (0..n)
                .map(|k| self.at(epoch_ns, from_ns + k as i64 * step_ns))
                .collect();
        }
        let mut phase_ns = (from_ns - epoch_ns).rem_euclid(p);
        let step_ns = step_ns.rem_euclid(p);
        (0..n)
            .map(|_| {
                let v = self.at_phase_ns(phase_ns, p);
                phase_ns += step_ns;
                if phase_ns >= p {
                    phase_ns -= p;
                }
                v
            })
            .collect()
    }

    /// The value `phase_ns` (0 ≤ phase < `p`) into a cycle of `p` ns.
    fn at_phase_ns(&self, phase_ns: i64, p: i64) -> f64 {
        let ph = phase_ns as f64 / p as f64 * self.values.len() as f64;
        // ph ≥ 0: truncating is the floor (without a call to libm's).
        let i = (ph as usize).min(self.values.len() - 1);
        self.values[i]
    }
}

/// One node's composed cycle of one rung, as handed to the rack.
#[derive(Debug, Clone, PartialEq)]
pub struct CyclePart {
    /// The period the GPUs ran, ms.
    pub period_ms: f64,
    /// Harmonics restored.
    pub harmonics: usize,
    /// Lowest phase coverage of its GPUs.
    pub coverage: f64,
    /// Buffered samples folded.
    pub samples: usize,
    /// Node power over one cycle, phase 0 at the rung's epoch.
    pub values: Vec<f64>,
}

/// Why a rung has no composed cycle.
#[derive(Debug, Clone, PartialEq)]
pub enum NoCycle {
    /// Not a periodic rung (idle, constant, NCCL): not a failure.
    NotPeriodic,
    /// The figures cannot be stated; the text says why.
    Verdict(String),
}

/// The rising edges a GPU's cycles start at: its recorded rises, and the
/// rung's start when the GPU's wave starts on at the epoch.
pub fn rises_of(edges: &EdgeIndex, r: &RungWindow, gpu_index: usize, gpu: &str) -> Vec<i64> {
    let mut rises: Vec<i64> = edges.get(r.info.id, gpu, EdgeKind::Rise).to_vec();
    if r.offsets_ns.get(gpu_index).copied().unwrap_or(0) == 0 {
        rises.extend_from_slice(edges.get(r.info.id, gpu, EdgeKind::Start));
    }
    rises.sort_unstable();
    rises
}

/// The levels of the cycle `values` (evenly spaced over a period of `p`
/// ns, phase 0 at the epoch) laid over the rung's window: `span` ns from
/// `from` ns after the epoch ([`window_points`]).
fn window_levels(values: &[f64], p: i64, from: i64, span: i64) -> Levels {
    Levels::of_weighted(window_points(values, p, from, span))
}

/// The cycle's points, each with how often the rung's window holds it:
/// whole cycles count each point once; the window's last partial cycle
/// counts the points it covers once more. Points it never holds are left
/// out.
fn window_points(values: &[f64], p: i64, from: i64, span: i64) -> Vec<(f64, f64)> {
    let m = values.len();
    let total = ((span as f64 / p as f64) * m as f64).round().max(1.0) as usize;
    let j0 = ((from.rem_euclid(p) as f64 / p as f64) * m as f64).floor() as usize % m;
    let (whole, rest) = (total / m, total % m);
    values
        .iter()
        .enumerate()
        .map(|(j, v)| (*v, (whole + usize::from((j + m - j0) % m < rest)) as f64))
        .filter(|x| x.1 > 0.0)
        .collect()
}

/// Where the node's cycle at `m` evenly spaced points (phase 0 at the
/// rung's epoch) reads each GPU's cycle (at its bin centres, phase 0 at its
/// own rise) shifted to its offset: for every GPU and point, the two bins
/// and their weights of [`fold::at_phase`]. Laid once per rung: the
/// bootstrap composes 200 replicates on the same grid.
struct Taps {
    /// Per GPU, per point: the bins either side and their weights.
    gpus: Vec<Vec<fold::Tap>>,
    /// Points of the node's cycle.
    m: usize,
}

impl Taps {
    fn new(folds: &[GpuFold], p: i64, m: usize) -> Taps {
        let gpus = folds
            .iter()
            .map(|f| {
                let shift = f.offset_ns as f64 / p as f64;
                (0..m)
                    .map(|j| fold::Tap::at(f.bins, j as f64 / m as f64 - shift))
                    .collect()
            })
            .collect();
        Taps { gpus, m }
    }
}

/// The node's cycle at the points of `taps`: every GPU's cycle
/// (`gpu_values`) read by linear interpolation (which cannot overshoot
/// between bins) and summed.
fn compose_values(taps: &Taps, gpu_values: &[Vec<f64>]) -> Vec<f64> {
    let mut values = vec![0.0; taps.m];
    for (t, v) in taps.gpus.iter().zip(gpu_values) {
        for (acc, tap) in values.iter_mut().zip(t) {
            *acc += tap.read(v);
        }
    }
    values
}

/// Composes the node cycle of every duty rung of the run. A workload
/// rung is not composed here: its iterations are found in its samples
/// first ([`crate::workload`]).
pub fn compose_all(
    run: &Run,
    series: &SeriesSet,
    edges: &EdgeIndex,
    model: &SensorModel,
) -> Vec<(u32, Result<NodeCycle, NoCycle>)> {
    // Rung by rung on every core: each rung's fold and bootstrap are its
    // own (seeded by the rung), so the order they run in changes nothing.
    powerlab_samples::parallel::map_in_order(&run.rungs, |r| {
        let cycle = if r.info.kind == powerlab_rundir::PhaseKind::Workload {
            Err(NoCycle::NotPeriodic)
        } else {
            compose(&mut Planner::new(), run, r, series, edges, model)
        };
        (r.info.id, cycle)
    })
}
