//! The uncertainty of a composed node cycle's figures within one run: a
//! bootstrap over whole cycles, and the reconstruction's systematic error.
//!
//! Each replicate draws the measured window's cycles (blocks of one period,
//! the same draw for every GPU, so what the GPUs share in a cycle stays
//! shared) with replacement, rebuilds every GPU's cycle from the drawn
//! cycles' samples exactly as the figures were built, composes the node and
//! takes its figures. A figure drawn from noisy bins is biased: the peak
//! and the outer percentiles of a cycle rebuilt from noisy bins sit beyond
//! the true ones (the largest of several noisy estimates), which made
//! staggered spreads on the simulated node read 15–35 % high. The
//! replicates, built from the same cycles with more noise, sit beyond the
//! figure by about as much: the stated figure is the composed one less that
//! bias, and its 95 % interval is the basic bootstrap interval (the
//! replicates' 2.5–97.5 % range reflected about the figure), widened on
//! each side by [`systematic_w`].

use super::fold::GpuFold;
use super::{CycleStats, Taps, compose_values, window_points};
use crate::fft::Planner;
use crate::metric::{self, Levels, RungMetric};
use powerlab_samples::stats::quantile_sorted;
use rand::Rng;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Replicates per rung.
pub const REPLICATES: usize = 200;

/// The figures are corrected for the replicates' bias only with at least
/// this many cycles to draw from: drawing 3 cycles of a 2 s rung with
/// replacement made replicates that told little of the figure's bias (a
/// simulated B300 pair's staggered spread, 435 W composed against a true
/// 485 W, went to 363 W).
pub const MIN_CYCLES_FOR_BIAS: usize = 8;

/// An interval resampled from fewer whole cycles than this is not taken
/// as the figure's error: n cycles drawn with replacement give only
/// C(2n − 1, n) distinct draws (3 from 2 cycles, 10 from 3, 35 from 4, 126
/// from 5), too few to show what another run would see. On the simulator,
/// the staggered spreads that missed their truth by more than
/// max(15 %, 1 % of the step) while counted as resolved were 2 s rungs of
/// 2 cycles (an 8 × H200 pair: 472 W stated, 402 W true: each edge placed
/// from two samples per 20 ms window, so to ± 5–10 ms).
pub const MIN_CYCLES_FOR_INTERVAL: usize = 5;

pub use crate::metric::Bounds;

/// The 95 % intervals of a composed cycle's figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CycleInterval {
    /// Mean.
    pub mean: Bounds,
    /// Peak.
    pub peak: Bounds,
    /// 1st percentile.
    pub p1: Bounds,
    /// 99th percentile.
    pub p99: Bounds,
    /// p99 − p1 (of each replicate).
    pub spread: Bounds,
    /// p90 − p10 (of each replicate).
    pub swing: Bounds,
    /// 10th percentile.
    pub p10: Bounds,
    /// 90th percentile.
    pub p90: Bounds,
    /// Whole cycles resampled.
    pub cycles: usize,
}

impl CycleInterval {
    /// Every interval widened to hold the figure stated beside it (after
    /// the bias correction and the clamp to what the samples support, a
    /// basic interval, reflected about the composed figure, could miss it).
    pub(super) fn holding(self, s: &CycleStats) -> CycleInterval {
        CycleInterval {
            mean: self.mean.holding(s.mean_w),
            peak: self.peak.holding(s.peak_w),
            p1: self.p1.holding(s.p1_w),
            p99: self.p99.holding(s.p99_w),
            spread: self.spread.holding(s.p99_w - s.p1_w),
            swing: self.swing.holding(s.p90_w - s.p10_w),
            p10: self.p10.holding(s.p10_w),
            p90: self.p90.holding(s.p90_w),
            cycles: self.cycles,
        }
    }
}

/// Where a rung's figures are laid: its period and window, ns.
#[derive(Debug, Clone, Copy)]
pub(super) struct Layout {
    pub period_ns: i64,
    pub from_ns: i64,
    pub span_ns: i64,
    /// The reconstruction's systematic half-width, W (see [`systematic_w`]).
    pub systematic_w: f64,
}

/// The composed figures' systematic half-width, W: 1.5 % of the node's
/// step, plus 15 % of it for each sample window the shortest phase
/// (on or off) is long. The buffered samples smear every edge and the
/// overshoot after a rise over one window, and what a fold of them cannot
/// restore grows with the window's share of the phase. Set against the
/// simulated node's truth (`scripts/bench/truth_coverage.py`, H200, 6 ms window):
/// in-phase spreads were off by 0.9 % of the step at 2 s, 1.2 % at 200 ms,
/// 1.9 % at 100 ms and 4 % at 50 ms, where this gives 1.6, 2.4, 3.3 and
/// 5.1 %. A model of the reconstruction's error, not a measurement of a
/// real board's: the real H200 runs are checked against the floor and
/// ceiling of their own samples (`scripts/bench/floor_ceiling.py`).
pub(super) fn systematic_w(step_w: f64, window_ms: f64, shortest_phase_ms: f64) -> f64 {
    let share = if shortest_phase_ms > 0.0 {
        window_ms / shortest_phase_ms
    } else {
        1.0
    };
    step_w.abs() * (0.015 + 0.15 * share)
}

/// The bootstrap interval of the figures `est` of the node cycle composed
/// from `folds` (see the module doc). `seed` makes it repeatable (the
/// rung's id: a collation gives the same interval every time). None with
/// fewer than two whole cycles.
pub(super) fn bootstrap(
    planner: &mut Planner,
    folds: &[GpuFold],
    taps: &Taps,
    at: Layout,
    est: &Estimate,
    seed: u64,
) -> Option<(CycleInterval, Vec<Bounds>)> {
    let blocks = folds.iter().map(GpuFold::blocks).max()?;
    if blocks < 2 {
        return None;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed_c1c1e ^ seed);
    let mut reps: Vec<CycleStats> = Vec::with_capacity(REPLICATES);
    let own: Vec<&dyn RungMetric> = metric::own_bootstrapped().collect();
    let mut own_reps: Vec<Vec<f64>> = vec![Vec::with_capacity(REPLICATES); own.len()];
    // Every replicate's draw first (in the order they were drawn one
    // replicate at a time), block by block: replicate r's weight of block b
    // at b * REPLICATES + r; then every GPU's bins for all of them at once.
    let mut weights = vec![0.0; blocks * REPLICATES];
    for r in 0..REPLICATES {
        for _ in 0..blocks {
            weights[rng.random_range(0..blocks) * REPLICATES + r] += 1.0;
        }
    }
    let resampled: Vec<_> = folds
        .iter()
        .map(|f| f.resampled(&weights, REPLICATES))
        .collect();
    for r in 0..REPLICATES {
        let gpus: Vec<Vec<f64>> = folds
            .iter()
            .zip(&resampled)
            .map(|(f, s)| f.replicate_values(planner, s, r))
            .collect();
        let values = compose_values(taps, &gpus);
        let points = window_points(&values, at.period_ns, at.from_ns, at.span_ns);
        if !own.is_empty() {
            // A registry metric may read any quantile: the sorted levels.
            let levels = Levels::of_weighted(points.clone());
            for (m, r) in own.iter().zip(own_reps.iter_mut()) {
                r.push(m.of(&levels).unwrap_or(f64::NAN));
            }
        }
        reps.push(CycleStats::of_points(points));
    }
    let (stats, own_est) = (&est.stats, &est.own);
    let bounds = |f: &dyn Fn(&CycleStats) -> f64| basic_bounds(&reps, f, stats, at.systematic_w);
    let mean = basic_bounds(&reps, &|s| s.mean_w, stats, 0.0);
    let own_bounds = own_reps
        .iter()
        .zip(own_est)
        .map(|(r, e)| basic_bounds(r, &|v| *v, e, at.systematic_w))
        .collect();
    let interval = CycleInterval {
        mean,
        peak: bounds(&|s| s.peak_w),
        p1: bounds(&|s| s.p1_w),
        p99: bounds(&|s| s.p99_w),
        spread: non_negative(bounds(&|s| s.p99_w - s.p1_w)),
        swing: non_negative(bounds(&|s| s.p90_w - s.p10_w)),
        p10: bounds(&|s| s.p10_w),
        p90: bounds(&|s| s.p90_w),
        cycles: blocks,
    };
    Some((interval, own_bounds))
}

/// The composed figures the bootstrap reflects its replicates about: the
/// typed ones and the registry's own bootstrapped metrics', in
/// [`metric::own_bootstrapped`]'s order.
pub(super) struct Estimate {
    /// The typed figures.
    pub stats: CycleStats,
    /// The registry's own.
    pub own: Vec<f64>,
}

/// A node's figure and its 95 % interval, as its summary states them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stated {
    /// The figure, W.
    pub figure_w: f64,
    /// Its interval's lower end, W.
    pub lo_w: f64,
    /// Its upper end, W.
    pub hi_w: f64,
}

/// The interval of a figure of a sum of node cycles (a rack), `figure`,
/// from its nodes' own: their distances below and above their figures
/// add. A percentile of a sum moves by no more than the largest error of
/// the summed curve, which is at most the sum of the nodes' errors, so
/// adding is the bound for errors that line up across nodes; it is wider
/// than adding in quadrature, which would hold only for independent ones.
pub fn summed_bounds(figure: f64, nodes: &[Stated]) -> Bounds {
    let below: f64 = nodes.iter().map(|n| (n.figure_w - n.lo_w).max(0.0)).sum();
    let above: f64 = nodes.iter().map(|n| (n.hi_w - n.figure_w).max(0.0)).sum();
    Bounds {
        lo: figure - below,
        hi: figure + above,
        centre: figure,
    }
}

/// A rack cycle's intervals from its nodes' stated ones (mean, peak,
/// spread, swing, in that order); `cycles` the fewest any node resampled.
/// The percentiles carry no interval of their own here: theirs are the
/// figure alone (only their differences, spread and swing, are stated).
pub fn summed(s: &CycleStats, nodes: [&[Stated]; 4], cycles: usize) -> CycleInterval {
    let at = |v: f64| Bounds {
        lo: v,
        hi: v,
        centre: v,
    };
    CycleInterval {
        mean: summed_bounds(s.mean_w, nodes[0]),
        peak: summed_bounds(s.peak_w, nodes[1]),
        spread: non_negative(summed_bounds(s.p99_w - s.p1_w, nodes[2])),
        swing: non_negative(summed_bounds(s.p90_w - s.p10_w, nodes[3])),
        p1: at(s.p1_w),
        p99: at(s.p99_w),
        p10: at(s.p10_w),
        p90: at(s.p90_w),
        cycles,
    }
    .holding(s)
}

/// A width (spread, swing) is never below 0.
fn non_negative(b: Bounds) -> Bounds {
    Bounds {
        lo: b.lo.max(0.0),
        hi: b.hi.max(0.0),
        centre: b.centre.max(0.0),
    }
}

/// The basic bootstrap interval of the figure `f` (its replicates' spread
/// reflected about the figure: a replicate drawn from cycles with noise
/// sits off the figure as the figure sits off the truth), widened by the
/// reconstruction's systematic half-width `sys` on each side; `centre`, the
/// figure less the replicates' bias (their mean less the figure).
fn basic_bounds<T>(reps: &[T], f: &dyn Fn(&T) -> f64, est: &T, sys: f64) -> Bounds {
    let mut v: Vec<f64> = reps.iter().map(f).filter(|x| x.is_finite()).collect();
    v.sort_unstable_by(f64::total_cmp);
    let x = f(est);
    let bias = v.iter().sum::<f64>() / v.len().max(1) as f64 - x;
    let (lo, hi) = (
        2.0 * x - quantile_sorted(&v, 0.975),
        2.0 * x - quantile_sorted(&v, 0.025),
    );
    Bounds {
        lo: lo - sys,
        hi: hi + sys,
        centre: x - bias,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sum_of_nodes_adds_their_distances_from_the_figure() {
        let nodes = [
            Stated {
                figure_w: 100.0,
                lo_w: 90.0,
                hi_w: 115.0,
            },
            Stated {
                figure_w: 200.0,
                lo_w: 195.0,
                hi_w: 203.0,
            },
        ];
        let b = summed_bounds(310.0, &nodes);
        assert_eq!((b.lo, b.hi, b.centre), (295.0, 328.0, 310.0));
        // A node whose interval does not hold its figure adds nothing on that side.
        let odd = [Stated {
            figure_w: 10.0,
            lo_w: 12.0,
            hi_w: 20.0,
        }];
        let b = summed_bounds(10.0, &odd);
        assert_eq!((b.lo, b.hi), (10.0, 20.0));
    }
}
