//! The edges the samples show: rising crossings of the mid-level, and the
//! share of each cycle spent above it.

use super::resample::Even;
use powerlab_samples::stats::quantile_sorted;

/// A draw's levels: p10, p90 and halfway between.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Levels {
    /// 10th percentile, W.
    pub p10: f64,
    /// 90th percentile, W.
    pub p90: f64,
    /// Mean, W.
    pub mean: f64,
    /// Maximum, W.
    pub peak: f64,
}

impl Levels {
    /// The levels of `values` (None when empty).
    pub fn of(values: impl Iterator<Item = f64>) -> Option<Levels> {
        let mut v: Vec<f64> = values.filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_unstable_by(f64::total_cmp);
        Some(Levels {
            p10: quantile_sorted(&v, 0.10),
            p90: quantile_sorted(&v, 0.90),
            mean: v.iter().sum::<f64>() / v.len() as f64,
            peak: v[v.len() - 1],
        })
    }

    /// p90 − p10, W.
    pub fn swing(&self) -> f64 {
        self.p90 - self.p10
    }

    /// Halfway between p10 and p90, W.
    pub fn mid(&self) -> f64 {
        0.5 * (self.p10 + self.p90)
    }

    /// The level `share` of the way from p10 to p90, W.
    pub fn at(&self, share: f64) -> f64 {
        self.p10 + share * self.swing()
    }
}

/// The level below which a crossing is re-armed, as a share of p10..p90.
const REARM_SHARE: f64 = 0.25;

/// Rising crossings of the mid-level by `points` (time-sorted, each at the
/// centre of its window), ns, each placed by linear interpolation between
/// the samples either side. A crossing counts only once the draw has been
/// below a quarter of the range since the last one (noise on the level
/// does not cross it twice), and not within `min_gap_ns` of the last.
pub fn rising_crossings(points: &[(i64, f64)], levels: &Levels, min_gap_ns: i64) -> Vec<i64> {
    let (mid, rearm) = (levels.mid(), levels.at(REARM_SHARE));
    let mut out: Vec<i64> = Vec::new();
    let mut armed = false;
    for w in points.windows(2) {
        let ((ta, a), (tb, b)) = (w[0], w[1]);
        if a < rearm {
            armed = true;
        }
        if !(armed && a < mid && b >= mid) {
            continue;
        }
        let f = if b > a { (mid - a) / (b - a) } else { 0.0 };
        let t = ta + ((tb - ta) as f64 * f).round() as i64;
        if out.last().is_some_and(|l| t - l < min_gap_ns) {
            continue;
        }
        out.push(t);
        armed = false;
    }
    out
}

/// The share of each cycle (between consecutive `rises` no further apart
/// than 1.5 × `period_ns`) that `even` spends at or above `mid`, averaged
/// over the cycles. None without a whole cycle.
pub fn on_fraction(even: &Even, rises: &[i64], period_ns: i64, mid: f64) -> Option<f64> {
    let shares: Vec<f64> = rises
        .windows(2)
        .filter(|w| (w[1] - w[0]) as f64 <= 1.5 * period_ns as f64)
        .filter_map(|w| {
            let (a, b) = (even.index_at(w[0]), even.index_at(w[1]));
            let v = even.values.get(a..b).filter(|v| !v.is_empty())?;
            Some(v.iter().filter(|x| **x >= mid).count() as f64 / v.len() as f64)
        })
        .collect();
    powerlab_samples::stats::mean(&shares)
}

/// Successive intervals between `rises` that are about one period long
/// (0.5–1.5 × `period_ns`), ns.
pub fn intervals(rises: &[i64], period_ns: i64) -> Vec<f64> {
    let p = period_ns as f64;
    rises
        .windows(2)
        .map(|w| (w[1] - w[0]) as f64)
        .filter(|d| *d >= 0.5 * p && *d <= 1.5 * p)
        .collect()
}
