//! The arithmetic of the grid metrics on a run of evenly spaced values:
//! the step's two plateaus, the shortest 10–90 % rise or fall, and the
//! share of the fluctuation's energy inside a band. A composed cycle is
//! one period of values (read cyclically); the node curve is a series.

use crate::fft;
use powerlab_campaign::Ramp;
use powerlab_samples::stats::median_sorted;

/// The low and high plateau of a step, W.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    /// The low plateau: the median of the values below the mid level.
    pub lo: f64,
    /// The high plateau: the median of the values above the mid level.
    pub hi: f64,
}

impl Step {
    /// hi − lo, W.
    pub fn height(&self) -> f64 {
        self.hi - self.lo
    }
}

/// The plateaus of `values`: split at the level half way between their
/// least and greatest, the median of each side (an overshoot or a dip
/// moves neither). None for fewer than two values or a flat run.
pub fn plateaus(values: &[f64]) -> Option<Step> {
    let (min, max) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(*v), b.max(*v))
        });
    if values.len() < 2 || max.is_nan() || max <= min {
        return None;
    }
    let mid = 0.5 * (min + max);
    let mut low: Vec<f64> = values.iter().copied().filter(|v| *v < mid).collect();
    let mut high: Vec<f64> = values.iter().copied().filter(|v| *v >= mid).collect();
    low.sort_unstable_by(f64::total_cmp);
    high.sort_unstable_by(f64::total_cmp);
    Some(Step {
        lo: median_sorted(&low),
        hi: median_sorted(&high),
    })
}

/// One 10–90 % edge: its time and the step it makes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Edge {
    /// Its 10–90 % time, in steps of the values (fractional: each
    /// crossing interpolated linearly).
    pub steps: f64,
    /// The step between the levels either side of it, W.
    pub height: f64,
}

impl Edge {
    /// 0.8 × height over the 10–90 % time, W per step.
    pub fn rate_per_step(&self) -> f64 {
        0.8 * self.height / self.steps.max(f64::MIN_POSITIVE)
    }
}

/// The span over which the values are judged to have stopped moving
/// before an edge, ms: longer than a ramp's stair (an emulated ramp moves
/// in steps of a few ms), shorter than any plateau.
pub const KNEE_SPAN_MS: f64 = 5.0;

/// Share of the step under which the values count as not moving over
/// [`KNEE_SPAN_MS`].
pub const KNEE_FLAT_SHARE: f64 = 0.01;

/// The fastest rise (or fall) of the cyclic `values` (spaced `step_ms`),
/// each edge between the plateaus either side of it: the level it leaves
/// is where the values stopped moving before it (the knee: walking back
/// from the edge until they change by under [`KNEE_FLAT_SHARE`] of the
/// step over [`KNEE_SPAN_MS`]; a dip or a drift earlier in the phase does
/// not set it), the level it reaches is the median of the phase it
/// enters (an overshoot does not set it). Edges are found where the
/// values cross the mid level of `step`; an edge's 10–90 % time runs from
/// the last crossing of its 10 % level after the knee to the first
/// crossing of its 90 % level after the mid crossing. The fastest is the
/// one of the highest rate. None: no complete edge.
pub fn fastest_edge(values: &[f64], step: Step, dir: Ramp, step_ms: f64) -> Option<Edge> {
    let m = values.len();
    if m < 4 || step.height().is_nan() || step.height() <= 0.0 {
        return None;
    }
    // A fall is a rise of the negated values.
    let sign = match dir {
        Ramp::Up => 1.0,
        Ramp::Down => -1.0,
    };
    let v = |j: i64| sign * values[j.rem_euclid(m as i64) as usize];
    let mid = sign * 0.5 * (step.lo + step.hi);
    let mi = m as i64;
    let (ups, downs) = crossings(&v, mi, mid, 0.25 * step.height())?;
    let span = ((KNEE_SPAN_MS / step_ms).round() as i64).max(1);
    let flat = KNEE_FLAT_SHARE * step.height();
    let mut best: Option<Edge> = None;
    for &c in &ups {
        // The phase it enters runs to the next fall through the mid level;
        // the one it leaves began at the previous one.
        let after = downs
            .iter()
            .map(|d| (d - c).rem_euclid(mi))
            .min()
            .unwrap_or(mi);
        let before = downs
            .iter()
            .map(|d| (c - d).rem_euclid(mi))
            .min()
            .unwrap_or(mi);
        let sorted = |mut x: Vec<f64>| {
            x.sort_unstable_by(f64::total_cmp);
            median_sorted(&x)
        };
        let to = sorted((c + 1..=c + after.max(1)).map(v).collect());
        let mut knee = c;
        while c - knee < before / 2 && v(knee - span) < v(knee) - flat {
            knee -= 1;
        }
        let from = v(knee);
        let h = to - from;
        if h.is_nan() || h <= 0.0 {
            continue;
        }
        let (l10, l90) = (from + 0.1 * h, from + 0.9 * h);
        let cross = |j: i64, level: f64| j as f64 + (level - v(j)) / (v(j + 1) - v(j));
        let Some(t10) = (knee..=c)
            .rev()
            .find(|&j| v(j) < l10 && v(j + 1) >= l10)
            .map(|j| cross(j, l10))
        else {
            continue;
        };
        let Some(t90) = (c..c + after.max(1))
            .find(|&k| v(k) < l90 && v(k + 1) >= l90)
            .map(|k| cross(k, l90))
        else {
            continue;
        };
        let e = Edge {
            steps: (t90 - t10).max(0.0),
            height: h,
        };
        if best.is_none_or(|b| e.rate_per_step() > b.rate_per_step()) {
            best = Some(e);
        }
    }
    best
}

/// The fastest change of the cyclic `values` (spaced `step_ms` apart)
/// over a window of `window_ms`, W/s: the largest rise (`dir` up: v(t +
/// τ) − v(t)) or fall (v(t) − v(t + τ)) completed within the window (0 <
/// τ ≤ window), over the window. An edge that fits in the window gives
/// its whole step over the window; a slower one its slope. Zero where the
/// values never move that way. None for fewer than two values or a window
/// under one step.
pub fn fastest_change(values: &[f64], step_ms: f64, window_ms: f64, dir: Ramp) -> Option<f64> {
    let m = values.len();
    if m < 2 || step_ms.is_nan() || step_ms <= 0.0 || window_ms < step_ms {
        return None;
    }
    let sign = match dir {
        Ramp::Up => 1.0,
        Ramp::Down => -1.0,
    };
    let k = ((window_ms / step_ms).floor() as usize).clamp(1, m);
    let v = |j: usize| sign * values[j % m];
    // The largest of v over (t, t + k], by a monotonic queue of indices
    // over the cycle read twice.
    let mut queue: std::collections::VecDeque<usize> = std::collections::VecDeque::new();
    let mut best = 0.0_f64;
    for j in 1..m + k {
        while queue.back().is_some_and(|&b| v(b) <= v(j)) {
            queue.pop_back();
        }
        queue.push_back(j);
        if j < k {
            continue;
        }
        let t = j - k;
        while queue.front().is_some_and(|&f| f <= t) {
            queue.pop_front();
        }
        if let Some(&top) = queue.front() {
            best = best.max(v(top) - v(t));
        }
    }
    Some(best / (window_ms / 1000.0))
}

/// The mid-level crossings of the cyclic `v` (m points) that belong to
/// edges, upwards and downwards: an edge is confirmed only once the values
/// pass from `band` below `mid` to `band` above it (a Schmitt trigger), so
/// a reconstruction that wiggles across the mid level (a real H200's
/// 100 ms cycle crossed it three times in 1 ms) counts once, at its last
/// crossing before it was confirmed. None where the values never leave
/// the band.
fn crossings(v: &dyn Fn(i64) -> f64, m: i64, mid: f64, band: f64) -> Option<(Vec<i64>, Vec<i64>)> {
    let start = (0..m).find(|&j| v(j) < mid - band)?;
    let (mut ups, mut downs) = (Vec::new(), Vec::new());
    let mut high = false;
    let mut since = start;
    // Twice round: an edge confirmed after the wrap still counts once.
    for j in start..start + 2 * m {
        let confirmed = if high {
            v(j) < mid - band
        } else {
            v(j) > mid + band
        };
        if !confirmed {
            continue;
        }
        let crossed = |k: i64| {
            if high {
                v(k) >= mid && v(k + 1) < mid
            } else {
                v(k) < mid && v(k + 1) >= mid
            }
        };
        let c = (since..j).rev().find(|&k| crossed(k)).unwrap_or(j - 1);
        if c < start + m {
            if high {
                downs.push(c.rem_euclid(m));
            } else {
                ups.push(c.rem_euclid(m));
            }
        }
        high = !high;
        since = j;
    }
    (!ups.is_empty() && !downs.is_empty()).then_some((ups, downs))
}

/// The share (0..1) of the variance of `values`, spaced `step_s` seconds
/// apart, inside the band `[lo_hz, hi_hz]`: the discrete spectrum without
/// DC, each frequency k / (n · step_s) counted twice below the Nyquist
/// bin (a real series' two sides). None for fewer than four values or no
/// fluctuation. A cycle of one period gives its harmonics k / period.
pub fn band_share(values: &[f64], step_s: f64, [lo_hz, hi_hz]: [f64; 2]) -> Option<f64> {
    let n = values.len();
    if n < 4 || step_s.is_nan() || step_s <= 0.0 {
        return None;
    }
    let energy = fft::one_sided_energy(&fft::of_fluctuation(values));
    let df = 1.0 / (n as f64 * step_s);
    let (inside, total) = fft::band_energy(&energy, |k| k as f64 * df, [lo_hz, hi_hz]);
    (total > 0.0).then(|| inside / total)
}

/// How much fluctuation lies beyond what a series resolves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unresolved {
    /// Unknown: at most what a series within the same min and max can
    /// hold beyond the resolved variance (a measured cycle).
    WithinRange,
    /// As much as the series holds there: only where it lies against the
    /// band is unknown (a prediction, whose whole waveform is drawn).
    AsDrawn,
}

/// Bounds (0..1) on the share of the variance of `values` (spaced
/// `step_s` apart) inside `[lo_hz, hi_hz]` where they resolve only
/// frequencies up to `highest_hz` and the band reaches above it: the
/// resolved part's energy in the band over everything, plus at most
/// every unresolved fluctuation: for a measured cycle at most what a
/// series within the same min and max can hold beyond the resolved
/// variance, (max − min)² / 4 − resolved variance; for a drawn waveform
/// what it holds there. The lower bound counts all of it outside the
/// band, the upper bound all of it inside. None
/// for fewer than four values or no fluctuation.
pub fn band_share_bounds(
    values: &[f64],
    step_s: f64,
    [lo_hz, hi_hz]: [f64; 2],
    highest_hz: f64,
    unresolved: Unresolved,
) -> Option<(f64, f64)> {
    let n = values.len();
    if n < 4 || step_s.is_nan() || step_s <= 0.0 {
        return None;
    }
    let (min, max) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(*v), b.max(*v))
        });
    let energy = fft::one_sided_energy(&fft::of_fluctuation(values));
    let df = 1.0 / (n as f64 * step_s);
    // Parseval: Σ sides · |X_k|² over k = 1..n/2 is n² × the variance.
    let scale = (n as f64).powi(2);
    let (mut resolved, mut inside, mut beyond) = (0.0, 0.0, 0.0);
    for (k, e) in energy.iter().enumerate().skip(1) {
        let f = k as f64 * df;
        let e = e / scale;
        if f > highest_hz {
            beyond += e;
            continue;
        }
        resolved += e;
        if f >= lo_hz && f <= hi_hz {
            inside += e;
        }
    }
    let unresolved = match unresolved {
        Unresolved::WithinRange => (0.25 * (max - min).powi(2) - resolved).max(0.0),
        Unresolved::AsDrawn => beyond,
    };
    let total = resolved + unresolved;
    (total > 0.0).then(|| (inside / total, (inside + unresolved) / total))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a test that unwraps reports its failure by panicking
    use super::*;

    /// A trapezoid of `m` points: `ramp` points rising linearly from `lo`
    /// to `hi`, held, then falling over `fall` points.
    fn trapezoid(m: usize, ramp: usize, fall: usize, lo: f64, hi: f64) -> Vec<f64> {
        let mut v = vec![lo; m];
        for (j, x) in v.iter_mut().enumerate() {
            let half = m / 2;
            *x = if j <= ramp {
                lo + (hi - lo) * j as f64 / ramp as f64
            } else if j < half {
                hi
            } else if j <= half + fall {
                hi - (hi - lo) * (j - half) as f64 / fall as f64
            } else {
                lo
            };
        }
        v
    }

    #[test]
    fn a_trapezoid_rises_and_falls_at_its_known_rate() {
        // 1 s at 0.5 ms: a 40 ms rise (80 points), a 10 ms fall (20 points).
        let v = trapezoid(2000, 80, 20, 200.0, 1200.0);
        let s = plateaus(&v).unwrap();
        assert_eq!((s.lo, s.hi), (200.0, 1200.0));
        let up = fastest_edge(&v, s, Ramp::Up, 0.5).unwrap().steps;
        let down = fastest_edge(&v, s, Ramp::Down, 0.5).unwrap().steps;
        // 10–90 % of a linear ramp: 80 % of its length.
        assert!((up - 64.0).abs() < 1e-9, "{up}");
        assert!((down - 16.0).abs() < 1e-9, "{down}");
        // Rates: 800 W over 32 ms = 25 kW/s; over 8 ms = 100 kW/s.
        assert!((0.8 * s.height() / (up * 0.0005) - 25_000.0).abs() < 1e-6);
        assert!((0.8 * s.height() / (down * 0.0005) - 100_000.0).abs() < 1e-6);
        // An overshoot above the plateau does not move it.
        let mut o = v.clone();
        o[100] = 1500.0;
        assert_eq!(plateaus(&o).unwrap().hi, 1200.0);
        assert_eq!(plateaus(&[5.0; 10]), None);
        assert_eq!(
            fastest_edge(&v, Step { lo: 1.0, hi: 1.0 }, Ramp::Up, 0.5),
            None
        );
    }

    #[test]
    fn the_fastest_change_over_a_window_is_the_step_over_it_once_the_edge_fits() {
        // 1 s at 0.5 ms: a 40 ms linear rise of 1000 W, a 10 ms fall.
        let v = trapezoid(2000, 80, 20, 200.0, 1200.0);
        let at = |w: f64, d: Ramp| fastest_change(&v, 0.5, w, d).unwrap();
        // Inside the rise: its slope, 25 kW/s; past it: the step over the window.
        assert!((at(10.0, Ramp::Up) - 25_000.0).abs() < 1e-6);
        assert!((at(100.0, Ramp::Up) - 10_000.0).abs() < 1e-6);
        assert!((at(1.0, Ramp::Down) - 100_000.0).abs() < 1e-6);
        assert!((at(100.0, Ramp::Down) - 10_000.0).abs() < 1e-6);
        // A window of the whole cycle sees the whole step.
        assert!((at(1000.0, Ramp::Up) - 1000.0).abs() < 1e-6);
        // A flat series never moves.
        assert_eq!(fastest_change(&[5.0; 8], 1.0, 4.0, Ramp::Down), Some(0.0));
        assert_eq!(fastest_change(&v, 0.5, 0.2, Ramp::Up), None);
    }

    #[test]
    fn a_wiggle_across_the_mid_level_is_one_edge() {
        // A 100 ms cycle at 0.5 ms: a 20 ms rise from 150 to 850 W that
        // wiggles ±15 W about 500 W on its way, a 20 ms fall.
        let v: Vec<f64> = (0..200)
            .map(|j| {
                let t = j as f64 * 0.5;
                let x = if t < 50.0 {
                    150.0 + 700.0 * (t / 20.0).min(1.0)
                } else {
                    850.0 - 700.0 * ((t - 50.0) / 20.0).min(1.0)
                };
                if (9.0..11.0).contains(&t) {
                    x + if j % 2 == 0 { 15.0 } else { -15.0 }
                } else {
                    x
                }
            })
            .collect();
        let s = plateaus(&v).unwrap();
        let up = fastest_edge(&v, s, Ramp::Up, 0.5).unwrap();
        // 10–90 % of the 700 W rise: 16 ms, 32 points, give or take the wiggle.
        assert!((up.height - 700.0).abs() < 1.0, "{up:?}");
        assert!((up.steps - 32.0).abs() < 2.0, "{up:?}");
    }

    #[test]
    fn a_wiggle_at_the_foot_is_not_an_edge() {
        // Two starts of a rise: the first falls back below 10 %.
        let mut v = vec![0.0; 100];
        v[10] = 20.0; // above 10 %, back down at 11
        for (j, x) in v.iter_mut().enumerate().take(60).skip(30) {
            *x = ((j - 30) as f64 * 10.0).min(100.0);
        }
        let s = Step { lo: 0.0, hi: 100.0 };
        // 10 % at 31, 90 % at 39: 8 points.
        assert!((fastest_edge(&v, s, Ramp::Up, 1.0).unwrap().steps - 8.0).abs() < 1e-9);
    }

    #[test]
    fn a_dip_before_the_fall_and_an_overshoot_after_the_rise_set_no_level() {
        // 2 s at 0.5 ms: a 10 ms rise from 100 W overshooting to 900 W and
        // settling at 700 W within 100 ms; a dip to 450 W 850–900 ms into
        // the on-phase, back at 690 W; a 20 ms fall at 1000 ms to 100 W.
        let v: Vec<f64> = (0..4000)
            .map(|j| {
                let t = j as f64 * 0.5;
                if t < 1000.0 {
                    let rise = 100.0 + 800.0 * (t / 10.0).min(1.0);
                    let settle = if t > 10.0 {
                        200.0 * ((t - 10.0) / 90.0).min(1.0)
                    } else {
                        0.0
                    };
                    if (850.0..900.0).contains(&t) {
                        450.0
                    } else if t >= 900.0 {
                        690.0
                    } else {
                        rise - settle
                    }
                } else {
                    (690.0 - 590.0 * ((t - 1000.0) / 20.0)).max(100.0)
                }
            })
            .collect();
        let s = plateaus(&v).unwrap();
        let down = fastest_edge(&v, s, Ramp::Down, 0.5).unwrap();
        // From the 690 W held just before it (not the dip's 450 W, not the
        // on-phase's 700 W; the fall is not timed from 850 ms) to 100 W:
        // 90 % at 631 W, 2 ms into the fall, 10 % at 159 W, 18 ms: 16 ms,
        // 32 points.
        assert!((down.height - 590.0).abs() < 1e-6, "{down:?}");
        assert!((down.steps - 32.0).abs() < 0.5, "{down:?}");
        // The rise reaches the on-phase's settled level, not the overshoot:
        // 10 % of 100→700 at 60 W above the foot, 90 % at 640 W.
        let up = fastest_edge(&v, s, Ramp::Up, 0.5).unwrap();
        assert!((up.height - 600.0).abs() < 5.0, "{up:?}");
        assert!((up.steps - 0.6 * 20.0).abs() < 0.5, "{up:?}");
    }

    #[test]
    fn a_square_wave_has_its_known_harmonic_energy() {
        // 1 s, 50 % duty: the odd harmonics hold 8 / (π² k²) of the
        // variance; the first 81.06 %, the first three 93.3 %.
        let v: Vec<f64> = (0..4000)
            .map(|j| if j < 2000 { 1.0 } else { 0.0 })
            .collect();
        let step = 1.0 / 4000.0;
        let first = band_share(&v, step, [0.5, 1.5]).unwrap();
        let pi2 = std::f64::consts::PI.powi(2);
        assert!((first - 8.0 / pi2).abs() < 1e-3, "{first}");
        let three = band_share(&v, step, [0.1, 5.5]).unwrap();
        let want = 8.0 / pi2 * (1.0 + 1.0 / 9.0 + 1.0 / 25.0);
        assert!((three - want).abs() < 1e-3, "{three} vs {want}");
        // No even harmonic: a band around 2 Hz holds nothing.
        assert!(band_share(&v, step, [1.5, 2.5]).unwrap() < 1e-9);
        assert_eq!(band_share(&[3.0; 16], step, [0.1, 20.0]), None);
        // Every harmonic: the whole variance.
        assert!((band_share(&v, step, [0.1, 2000.0]).unwrap() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn a_band_beyond_the_resolved_harmonics_is_bounded_on_both_sides() {
        // A 1 s square wave known to 5.5 Hz, the band 0.1–20 Hz: the true
        // share (harmonics 1–19) lies inside the bounds.
        let v: Vec<f64> = (0..4000)
            .map(|j| if j < 2000 { 1.0 } else { 0.0 })
            .collect();
        let step = 1.0 / 4000.0;
        let truth = band_share(&v, step, [0.1, 20.0]).unwrap();
        let (lo, hi) =
            band_share_bounds(&v, step, [0.1, 20.0], 5.5, Unresolved::WithinRange).unwrap();
        assert!(lo <= truth && truth <= hi, "{lo} {truth} {hi}");
        // The resolved part holds 93.3 % of the variance: the lower bound
        // is that, the upper bound everything.
        assert!((lo - 0.933).abs() < 1e-3, "{lo}");
        assert!((hi - 1.0).abs() < 1e-9, "{hi}");
        // A band wholly above the resolved part: 0 to the unresolved share.
        let (lo, hi) =
            band_share_bounds(&v, step, [30.0, 40.0], 5.5, Unresolved::WithinRange).unwrap();
        assert_eq!(lo, 0.0);
        assert!((hi - 0.067).abs() < 1e-3, "{hi}");
        assert_eq!(
            band_share_bounds(&[3.0; 16], step, [0.1, 20.0], 5.0, Unresolved::AsDrawn),
            None
        );
        // As drawn: a square wave holds exactly its own harmonics beyond
        // 5.5 Hz, 6.7 % of its variance.
        let (lo, hi) = band_share_bounds(&v, step, [0.1, 20.0], 5.5, Unresolved::AsDrawn).unwrap();
        assert!(
            (lo - 0.933).abs() < 1e-3 && (hi - 1.0).abs() < 1e-9,
            "{lo} {hi}"
        );
    }
}
