//! A GPU's buffered samples placed at the centre of their averaging
//! windows, and read on an even grid by linear interpolation.

use super::{GRID_MS, MAX_GRID_POINTS};
use powerlab_core::units::{ms_to_ns, ns_to_ms};

/// The samples of `samples` (time-sorted, at their timestamps) placed at
/// the centre of their averaging windows (`centre_ns` before the
/// timestamp: lag + window/2), those that fall in `[from_ns, to_ns)`.
pub fn placed(samples: &[(i64, f64)], from_ns: i64, to_ns: i64, centre_ns: i64) -> Vec<(i64, f64)> {
    let lo = samples.partition_point(|s| s.0 - centre_ns < from_ns);
    let hi = samples.partition_point(|s| s.0 - centre_ns < to_ns).max(lo);
    samples[lo..hi]
        .iter()
        .filter(|s| s.1.is_finite())
        .map(|&(t, v)| (t - centre_ns, v))
        .collect()
}

/// A series on an even grid.
#[derive(Debug, Clone, PartialEq)]
pub struct Even {
    /// Time of the first point, ns.
    pub t0_ns: i64,
    /// Spacing, ns.
    pub step_ns: i64,
    /// Values.
    pub values: Vec<f64>,
}

impl Even {
    /// Time of point `i`, ns.
    pub fn time_ns(&self, i: usize) -> i64 {
        self.t0_ns + i as i64 * self.step_ns
    }

    /// The index of the first point at or after `t_ns` (clamped to the
    /// series).
    pub fn index_at(&self, t_ns: i64) -> usize {
        let i = (t_ns - self.t0_ns + self.step_ns - 1).div_euclid(self.step_ns);
        i.clamp(0, self.values.len() as i64) as usize
    }

    /// Spacing, ms.
    pub fn step_ms(&self) -> f64 {
        ns_to_ms(self.step_ns)
    }
}

/// The grid spacing for a span of `span_ns`: [`GRID_MS`], or coarser so
/// the grid holds at most [`MAX_GRID_POINTS`].
pub fn step_for(span_ns: i64) -> i64 {
    let fine = ms_to_ns(GRID_MS);
    fine.max(span_ns / MAX_GRID_POINTS as i64 + 1)
}

/// `points` (time-sorted) read every `step_ns` from the first to the last
/// by linear interpolation between neighbours. None with fewer than two
/// points or no span.
pub fn resample(points: &[(i64, f64)], step_ns: i64) -> Option<Even> {
    let (first, last) = (points.first()?.0, points.last()?.0);
    if points.len() < 2 || last <= first || step_ns <= 0 {
        return None;
    }
    let n = ((last - first) / step_ns) as usize + 1;
    let mut values = Vec::with_capacity(n);
    let mut j = 0usize;
    for i in 0..n {
        let t = first + i as i64 * step_ns;
        while j + 2 < points.len() && points[j + 1].0 <= t {
            j += 1;
        }
        let (a, b) = (points[j], points[j + 1]);
        let v = if b.0 > a.0 {
            let f = ((t - a.0) as f64 / (b.0 - a.0) as f64).clamp(0.0, 1.0);
            a.1 + (b.1 - a.1) * f
        } else {
            b.1
        };
        values.push(v);
    }
    Some(Even {
        t0_ns: first,
        step_ns,
        values,
    })
}

/// The median spacing of `points`, ns (None with fewer than two).
pub fn median_spacing_ns(points: &[(i64, f64)]) -> Option<i64> {
    let d: Vec<i64> = points
        .windows(2)
        .map(|w| w[1].0 - w[0].0)
        .filter(|d| *d > 0)
        .collect();
    powerlab_samples::stats::median_high_ns(&d)
}
