//! Figures computed from the simulated node's true waveform, shared by
//! the truth tests (never the collator's code): the median, a cycle's
//! plateaus, its 10–90 % crossings and rates.

/// The median of `v`.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

/// The plateaus (low, high) of a cycle: the medians of the bins below
/// and above its mid level.
pub fn plateaus(c: &[f64]) -> (f64, f64) {
    let (min, max) = c
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(*v), b.max(*v)));
    let mid = 0.5 * (min + max);
    (
        median(c.iter().copied().filter(|v| *v < mid).collect()),
        median(c.iter().copied().filter(|v| *v >= mid).collect()),
    )
}

/// The 10–90 % time (ms, the bins being `bin_ms` long) of the first
/// crossing of `l10` then `l90` by `w` going up, searched around the cycle.
pub fn crossing_ms(w: &dyn Fn(usize) -> f64, m: usize, l10: f64, l90: f64) -> f64 {
    let mut best = f64::INFINITY;
    for j in 0..m {
        if !(w(j) < l10 && w(j + 1) >= l10) {
            continue;
        }
        let t10 = j as f64 + (l10 - w(j)) / (w(j + 1) - w(j));
        for k in j..j + m {
            if k > j && w(k) < l10 {
                break;
            }
            if w(k + 1) >= l90 {
                let t90 = k as f64 + (l90 - w(k)) / (w(k + 1) - w(k));
                best = best.min(t90 - t10);
                break;
            }
        }
    }
    best
}

/// The true rates (up, down) of a cycle of `period_ms`, W/s.
pub fn rates(c: &[f64], period_ms: f64) -> (f64, f64) {
    let (lo, hi) = plateaus(c);
    let h = hi - lo;
    let m = c.len();
    let bin_ms = period_ms / m as f64;
    let up = crossing_ms(&|j| c[j % m], m, lo + 0.1 * h, lo + 0.9 * h);
    let down = crossing_ms(&|j| -c[j % m], m, -(hi - 0.1 * h), -(lo + 0.1 * h));
    let rate = |bins: f64| 0.8 * h / ((bins * bin_ms).max(1.0) / 1000.0);
    (rate(up), rate(down))
}
