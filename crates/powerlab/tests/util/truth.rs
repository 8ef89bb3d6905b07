//! Figures computed from the simulated node's true waveform, shared by
//! the truth tests (never the collator's code): the median, a cycle's
//! plateaus, its 10–90 % crossings and rates.

/// The median of `v`.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_unstable_by(f64::total_cmp);
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

/// The true rates (up, down) of a cycle of `period_ms`, W/s: per edge
/// (a crossing of the mid level between the cycle's plateaus), 0.8 × the
/// step between the level it leaves (where 5 ms before it changed it by
/// under 1 % of the step) and the median of the phase it enters, over its
/// 10–90 % time; the fastest edge of each direction.
pub fn rates(c: &[f64], period_ms: f64) -> (f64, f64) {
    let (lo, hi) = plateaus(c);
    let bin_ms = period_ms / c.len() as f64;
    let up = local_rate(c, 1.0, 0.5 * (lo + hi), hi - lo, bin_ms);
    let down = local_rate(c, -1.0, -0.5 * (lo + hi), hi - lo, bin_ms);
    (up, down)
}

/// The fastest edge of `sign` × the cycle `c` upwards through `mid`, W/s.
fn local_rate(c: &[f64], sign: f64, mid: f64, step: f64, bin_ms: f64) -> f64 {
    let m = c.len() as i64;
    let w = |j: i64| sign * c[j.rem_euclid(m) as usize];
    let mut best: f64 = 0.0;
    for e in 0..m {
        if !(w(e) < mid && w(e + 1) >= mid) {
            continue;
        }
        // The phase entered ends where the values fall back through the
        // mid level; the phase left began where they last rose through it.
        let mut end = e + 1;
        while end < e + m && w(end + 1) >= mid {
            end += 1;
        }
        let mut begin = e;
        while begin > e - m && w(begin - 1) < mid {
            begin -= 1;
        }
        let to = median((e + 1..=end).map(w).collect());
        // The knee: back from the edge until 5 ms change it by under 1 %
        // of the step.
        let span = (5.0 / bin_ms).round().max(1.0) as i64;
        let mut knee = e;
        while e - knee < (e - begin) / 2 && w(knee) - w(knee - span) > 0.01 * step {
            knee -= 1;
        }
        let from = w(knee);
        let h = to - from;
        if h <= 0.0 {
            continue;
        }
        let (l10, l90) = (from + 0.1 * h, from + 0.9 * h);
        let t10 = (knee..=e)
            .rev()
            .find(|&j| w(j) < l10 && w(j + 1) >= l10)
            .map(|j| j as f64 + (l10 - w(j)) / (w(j + 1) - w(j)));
        let t90 = (e..=end)
            .find(|&j| w(j) < l90 && w(j + 1) >= l90)
            .map(|j| j as f64 + (l90 - w(j)) / (w(j + 1) - w(j)));
        if let (Some(a), Some(b)) = (t10, t90) {
            best = best.max(0.8 * h / ((b - a).max(1.0) * bin_ms / 1000.0));
        }
    }
    best
}

/// The true fastest rise and fall (W/s) of a cycle of 1 ms bins over a
/// window of `window_ms`: the largest change between two bins at most the
/// window apart, over the window.
pub fn window_change(c: &[f64], window_ms: usize) -> (f64, f64) {
    let m = c.len();
    let (mut up, mut down): (f64, f64) = (0.0, 0.0);
    for t in 0..m {
        for tau in 1..=window_ms.min(m) {
            let d = c[(t + tau) % m] - c[t];
            up = up.max(d);
            down = down.max(-d);
        }
    }
    let s = window_ms as f64 / 1000.0;
    (up / s, down / s)
}

/// The true mean cycle of `x` (1 ms points from `t0_ns`), folded on
/// `period_ms` from `epoch_ns` into round(period) bins.
pub fn true_cycle(x: &[f64], t0_ns: i64, epoch_ns: i64, period_ms: f64) -> Vec<f64> {
    let m = period_ms.round() as usize;
    let p_ns = period_ms * 1e6;
    let (mut sum, mut n) = (vec![0.0; m], vec![0usize; m]);
    for (i, v) in x.iter().enumerate() {
        let t = (t0_ns + i as i64 * 1_000_000 - epoch_ns) as f64;
        let j = ((t.rem_euclid(p_ns) / p_ns) * m as f64) as usize % m;
        sum[j] += v;
        n[j] += 1;
    }
    sum.iter()
        .zip(&n)
        .map(|(s, k)| s / (*k).max(1) as f64)
        .collect()
}
