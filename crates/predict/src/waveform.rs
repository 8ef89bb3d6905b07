//! N GPUs from one GPU's iteration: every node starts each iteration at an
//! offset (its stagger group's share of the period, a draw from the
//! declared spread, a straggler's delay), and all of a node's GPUs start
//! with it. The waveform is the iteration shifted by each offset and
//! summed, added as it is drawn: each iteration's nodes are counted into
//! offset bins (a multinomial draw per group, by conditional binomials, so
//! the cost does not grow with the node count), then the iteration is
//! added once per occupied bin, times its count. Memory is the output
//! series and one iteration, whatever the GPU count.
//!
//! [`expected`] is the same sum with every bin at its probability: the
//! waveform of infinitely many nodes, one period long.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Binomial, Distribution};

/// Where the nodes start, in steps of the iteration's points.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    /// Nodes in the job.
    pub nodes: u64,
    /// GPUs in the job.
    pub gpus: u64,
    /// Stagger groups (1: none), started evenly across the iteration.
    pub groups: u32,
    /// The spread's bins: (offset in steps, probability), probabilities
    /// summing to 1.
    pub spread: Vec<(i64, f64)>,
    /// Stragglers: (probability per node per iteration, delay in steps).
    pub stragglers: Option<(f64, i64)>,
    /// The iteration, ms.
    pub period_ms: f64,
    /// The iteration's points' spacing, ms.
    pub step_ms: f64,
    /// Iteration points per output point.
    pub per_output: usize,
    /// Seed of the draws.
    pub seed: u64,
}

impl Layout {
    /// Nodes in stagger group `g`.
    pub(crate) fn group_nodes(&self, g: u32) -> u64 {
        let k = u64::from(self.groups.max(1));
        self.nodes / k + u64::from(u64::from(g) < self.nodes % k)
    }

    /// Group `g`'s offset, steps.
    fn group_offset(&self, g: u32) -> i64 {
        (f64::from(g) / f64::from(self.groups.max(1)) * self.period_ms / self.step_ms).round()
            as i64
    }

    /// GPUs per node (a last, partly filled node spread over all).
    pub(crate) fn gpus_per_node(&self) -> f64 {
        self.gpus as f64 / self.nodes.max(1) as f64
    }

    /// Every (offset in steps, probability) a node of group `g` starts
    /// at, stragglers included.
    pub(crate) fn bins(&self, g: u32) -> Vec<(i64, f64)> {
        let o = self.group_offset(g);
        let (s, d) = self.stragglers.unwrap_or((0.0, 0));
        let mut v: Vec<(i64, f64)> = self
            .spread
            .iter()
            .map(|(b, p)| (o + b, p * (1.0 - s)))
            .collect();
        if s > 0.0 {
            v.extend(self.spread.iter().map(|(b, p)| (o + b + d, p * s)));
        }
        v
    }
}

/// The spread's bins for a normal distribution of `sigma` steps, cut at
/// ±5 σ (a point mass below half a step).
pub fn normal_bins(sigma: f64) -> Vec<(i64, f64)> {
    if sigma < 0.5 {
        return vec![(0, 1.0)];
    }
    let reach = (5.0 * sigma).ceil() as i64;
    let w: Vec<(i64, f64)> = (-reach..=reach)
        .map(|b| (b, (-0.5 * (b as f64 / sigma).powi(2)).exp()))
        .collect();
    normalised(w)
}

/// The spread's bins for a uniform distribution over `width` steps.
pub fn uniform_bins(width: f64) -> Vec<(i64, f64)> {
    let n = width.round().max(0.0) as i64;
    normalised((0..=n).map(|b| (b, 1.0)).collect())
}

fn normalised(w: Vec<(i64, f64)>) -> Vec<(i64, f64)> {
    let total: f64 = w.iter().map(|x| x.1).sum();
    w.into_iter().map(|(b, p)| (b, p / total)).collect()
}

/// Group `g`'s iteration: its own, or the one all groups share.
fn iteration_of(iterations: &[Vec<f64>], g: u32) -> &[f64] {
    iterations
        .get(g as usize)
        .or(iterations.last())
        .map_or(&[][..], Vec::as_slice)
}

/// The waveform of infinitely many nodes: one iteration (each group's GPU
/// in `iterations`, one for all where there is one), every offset at its
/// probability, W.
pub fn expected(iterations: &[Vec<f64>], l: &Layout) -> Vec<f64> {
    let len = iterations.first().map_or(0, Vec::len);
    let n = len as i64;
    let mut out = vec![0.0; len];
    for g in 0..l.groups.max(1) {
        let iteration = iteration_of(iterations, g);
        let share = l.group_nodes(g) as f64 / l.nodes.max(1) as f64;
        let gpus = share * l.gpus as f64;
        for (b, p) in l.bins(g) {
            let w = gpus * p;
            for (j, o) in out.iter_mut().enumerate() {
                *o += w * iteration[(j as i64 - b).rem_euclid(n) as usize];
            }
        }
    }
    out
}

/// Draws how many of `nodes` start in each bin of `bins` (a multinomial,
/// by conditional binomials).
pub(crate) fn draw(
    rng: &mut ChaCha8Rng,
    nodes: u64,
    bins: &[(i64, f64)],
    counts: &mut Vec<(i64, u64)>,
) {
    counts.clear();
    let (mut left, mut mass) = (nodes, 1.0_f64);
    for (b, p) in bins {
        if left == 0 {
            break;
        }
        let q = if mass <= *p {
            1.0
        } else {
            (p / mass).clamp(0.0, 1.0)
        };
        let c = Binomial::new(left, q).map_or(0, |d| d.sample(rng));
        if c > 0 {
            counts.push((*b, c));
        }
        left -= c;
        mass -= p;
    }
}

/// The waveform over `span_ms` at the output resolution (each point the
/// mean of `l.per_output` iteration points), each group's GPUs following
/// their iteration in `iterations` (one for all where there is one), W.
///
/// Iteration i starts at fine point round(i · period / step): the phase
/// accumulates, so an iteration that is not a whole number of points
/// (1000.3 ms at 0.5 ms) lasts ⌊·⌋ or ⌈·⌉ points, never overlapping the
/// next or leaving a gap before it; its points are the iteration's
/// resampled to that length, scaled to the iteration's own energy per
/// point, so the energy over the span is the iteration's mean times the
/// span whatever the period and step.
pub fn realized(iterations: &[Vec<f64>], l: &Layout, span_ms: f64) -> Vec<f64> {
    let per = l.per_output.max(1);
    // Whole output points only: a last point of fewer fine points than
    // the others would read as a dip.
    let out_len = (span_ms / (l.step_ms * per as f64)).round() as usize;
    let fine_len = (out_len * per) as i64;
    let mut out = vec![0.0; out_len];
    let n = iterations.first().map_or(0, Vec::len) as i64;
    let mut rng = ChaCha8Rng::seed_from_u64(l.seed);
    let all: Vec<Vec<(i64, f64)>> = (0..l.groups.max(1)).map(|g| l.bins(g)).collect();
    let lo = all.iter().flatten().map(|x| x.0).min().unwrap_or(0);
    let hi = all.iter().flatten().map(|x| x.0).max().unwrap_or(0);
    let per_iter = l.period_ms / l.step_ms;
    let fitted: Vec<Fitted> = (0..l.groups.max(1))
        .map(|g| Fitted::new(iteration_of(iterations, g), per_iter))
        .collect();
    let first = -((hi + n + 1) as f64 / per_iter).ceil() as i64 - 1;
    let scale = l.gpus_per_node() / per as f64;
    let mut counts = Vec::new();
    let mut i = first;
    while start_of(i, per_iter) + lo < fine_len {
        let base = start_of(i, per_iter);
        let len = (start_of(i + 1, per_iter) - base) as usize;
        for (g, bins) in all.iter().enumerate() {
            draw(&mut rng, l.group_nodes(g as u32), bins, &mut counts);
            let iteration = fitted[g].of_len(len);
            for &(b, c) in &counts {
                add(
                    &mut out,
                    iteration,
                    base + b,
                    c as f64 * scale,
                    per,
                    fine_len,
                );
            }
        }
        i += 1;
    }
    out
}

/// The fine point iteration `i` starts at.
fn start_of(i: i64, per_iter: f64) -> i64 {
    (i as f64 * per_iter).round() as i64
}

/// One iteration at the two lengths (in fine points) an iteration of
/// `per_iter` points can take, each holding the iteration's energy per
/// point.
struct Fitted {
    short: Vec<f64>,
    long: Vec<f64>,
}

impl Fitted {
    fn new(iteration: &[f64], per_iter: f64) -> Fitted {
        let floor = (per_iter.floor() as usize).max(1);
        Fitted {
            short: resampled(iteration, floor),
            long: resampled(iteration, floor + 1),
        }
    }

    fn of_len(&self, len: usize) -> &[f64] {
        if len <= self.short.len() {
            &self.short
        } else {
            &self.long
        }
    }
}

/// `v` (one cyclic period) at `len` evenly spaced points, linearly
/// interpolated, scaled so its mean is `v`'s.
pub fn resampled(v: &[f64], len: usize) -> Vec<f64> {
    let m = v.len();
    if m == 0 || len == 0 || m == len {
        return v.to_vec();
    }
    let out: Vec<f64> = (0..len)
        .map(|k| {
            let x = k as f64 * m as f64 / len as f64;
            let j = (x.floor() as usize).min(m - 1);
            let f = x - j as f64;
            v[j] * (1.0 - f) + v[(j + 1) % m] * f
        })
        .collect();
    let want = v.iter().sum::<f64>() / m as f64;
    let got = out.iter().sum::<f64>() / len as f64;
    if got.abs() > 0.0 {
        out.iter().map(|x| x * want / got).collect()
    } else {
        out
    }
}

/// Adds `weight` × `iteration` starting at fine index `start`, each point
/// into its output point.
fn add(out: &mut [f64], iteration: &[f64], start: i64, weight: f64, per: usize, fine_len: i64) {
    let n = iteration.len() as i64;
    let j0 = (-start).max(0);
    let j1 = n.min(fine_len - start);
    if j0 >= j1 {
        return;
    }
    for j in j0..j1 {
        let fine = (start + j) as usize;
        out[fine / per] += weight * iteration[j as usize];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn square(n: usize, on: usize) -> Vec<f64> {
        (0..n).map(|j| if j < on { 1.0 } else { 0.0 }).collect()
    }

    fn layout(nodes: u64, gpus: u64, groups: u32, spread: Vec<(i64, f64)>) -> Layout {
        Layout {
            nodes,
            gpus,
            groups,
            spread,
            stragglers: None,
            period_ms: 100.0,
            step_ms: 1.0,
            per_output: 1,
            seed: 7,
        }
    }

    #[test]
    fn in_phase_nodes_add_up_and_two_groups_cancel_the_swing() {
        let it = square(100, 50);
        let l = layout(4, 32, 1, vec![(0, 1.0)]);
        let w = realized(std::slice::from_ref(&it), &l, 1000.0);
        assert_eq!(w.len(), 1000);
        assert!(w.iter().all(|v| *v == 0.0 || *v == 32.0));
        assert_eq!(
            expected(std::slice::from_ref(&it), &l),
            it.iter().map(|v| v * 32.0).collect::<Vec<_>>()
        );
        let two = layout(4, 32, 2, vec![(0, 1.0)]);
        let w2 = realized(std::slice::from_ref(&it), &two, 1000.0);
        assert!(
            w2.iter().all(|v| (*v - 16.0).abs() < 1e-9),
            "{:?}",
            &w2[..5]
        );
    }

    #[test]
    fn the_drawn_waveform_tends_to_the_expected_one() {
        let it = square(100, 50);
        let mut l = layout(100_000, 800_000, 1, uniform_bins(20.0));
        l.stragglers = Some((0.1, 30));
        let e = expected(std::slice::from_ref(&it), &l);
        let w = realized(std::slice::from_ref(&it), &l, 10_000.0);
        // Iteration 50: far from the start.
        let err = (0..100)
            .map(|j| (w[5000 + j] - e[j]).abs())
            .fold(0.0, f64::max);
        assert!(err < 0.02 * 800_000.0, "{err}");
        // The mean is every GPU's mean, whatever the spread.
        let mean = w.iter().sum::<f64>() / w.len() as f64;
        assert!((mean - 400_000.0).abs() < 2_000.0, "{mean}");
    }

    #[test]
    fn iterations_off_the_grid_neither_overlap_nor_leave_gaps() {
        // A flat load: any overlap or gap shows as a bump or a dip.
        for (period, step, per) in [
            (1000.3_f64, 0.5_f64, 2),
            (7.3, 0.5, 2),
            (100.28, 0.1, 1),
            (700.67, 0.5, 2),
        ] {
            let n = (period / step).round() as usize;
            let it = vec![1.0; n];
            let mut l = layout(3, 24, 1, vec![(0, 1.0)]);
            l.period_ms = period;
            l.step_ms = step;
            l.per_output = per;
            let w = realized(std::slice::from_ref(&it), &l, 20.0 * period);
            assert!(
                w.iter().all(|v| (v - 24.0).abs() < 1e-9),
                "{period}: {:?}",
                w.iter()
                    .cloned()
                    .fold((f64::MAX, f64::MIN), |a, v| (a.0.min(v), a.1.max(v)))
            );
            // A square iteration: the energy is the iteration's mean × span.
            let sq = square(n, n / 3);
            let want = sq.iter().sum::<f64>() / n as f64 * 24.0;
            let w = realized(std::slice::from_ref(&sq), &l, 200.0 * period);
            let mean = w.iter().sum::<f64>() / w.len() as f64;
            assert!(
                (mean - want).abs() < 1e-3 * want,
                "{period}: {mean} vs {want}"
            );
        }
    }

    #[test]
    fn output_points_are_means_of_iteration_points() {
        let it = square(100, 50);
        let mut l = layout(1, 1, 1, vec![(0, 1.0)]);
        l.per_output = 4;
        let w = realized(std::slice::from_ref(&it), &l, 200.0);
        assert_eq!(w.len(), 50);
        assert_eq!(w[0], 1.0);
        // Points 48..52: two on, two off.
        assert_eq!(w[12], 0.5);
        assert_eq!(w[13], 0.0);
    }
}
