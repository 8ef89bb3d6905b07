//! Response models of the power paths and their least-squares fits.
//!
//! A path that averages over a window W and reports at its own sample time
//! sees a falling step as `1 − F(τ − L)`, F the CDF of Uniform(0, W) plus the
//! board's own exponential fall (τ_b). A path that is read at arbitrary
//! times but updates only every U (the NVML fields) adds a uniform hold:
//! F = CDF of Uniform(0, W) + Uniform(0, U).

/// CDF at `t` of Uniform(0, w) + Exponential(mean tau).
pub fn cdf_box_exp(t: f64, w: f64, tau: f64) -> f64 {
    if t <= 0.0 {
        return 0.0;
    }
    if w <= 1e-9 {
        return if tau <= 1e-9 {
            1.0
        } else {
            1.0 - (-t / tau).exp()
        };
    }
    if tau <= 1e-9 {
        return (t / w).min(1.0);
    }
    if t <= w {
        (t - tau * (1.0 - (-t / tau).exp())) / w
    } else {
        1.0 - tau * ((-(t - w) / tau).exp() - (-t / tau).exp()) / w
    }
}

/// CDF at `t` of Uniform(0, a) + Uniform(0, b).
pub fn cdf_box_box(t: f64, a: f64, b: f64) -> f64 {
    let (a, b) = if a >= b { (a, b) } else { (b, a) };
    if t <= 0.0 {
        return 0.0;
    }
    if b <= 1e-9 {
        return if a <= 1e-9 { 1.0 } else { (t / a).min(1.0) };
    }
    if t <= b {
        t * t / (2.0 * a * b)
    } else if t <= a {
        (t - b / 2.0) / a
    } else if t <= a + b {
        1.0 - (a + b - t).powi(2) / (2.0 * a * b)
    } else {
        1.0
    }
}

/// A fitted falling-step response.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepFit {
    /// Averaging window, ms.
    pub window_ms: f64,
    /// Latency, ms (positive: the path reports after the edge).
    pub latency_ms: f64,
    /// Board fall time constant, ms (buffered fit only).
    pub tau_ms: f64,
    /// RMS residual, in units of the step.
    pub rms: f64,
}

fn rms(points: &[(f64, f64)], model: impl Fn(f64) -> f64) -> f64 {
    let n = points.len().max(1) as f64;
    (points
        .iter()
        .map(|(t, y)| (y - model(*t)).powi(2))
        .sum::<f64>()
        / n)
        .sqrt()
}

/// Grid search, coarse then fine, over `(w, l, tau)` ranges in ms.
fn search(
    points: &[(f64, f64)],
    w_max: f64,
    l_range: (f64, f64),
    tau_max: f64,
    model: &dyn Fn(f64, f64, f64, f64) -> f64,
) -> StepFit {
    let mut best = StepFit {
        window_ms: 0.0,
        latency_ms: 0.0,
        tau_ms: 0.0,
        rms: f64::INFINITY,
    };
    let eval = |w: f64, l: f64, tau: f64, best: &mut StepFit| {
        let r = rms(points, |t| 1.0 - model(t - l, w, tau, 0.0));
        if r < best.rms {
            *best = StepFit {
                window_ms: w,
                latency_ms: l,
                tau_ms: tau,
                rms: r,
            };
        }
    };
    let steps = |lo: f64, hi: f64, n: usize| -> Vec<f64> {
        (0..=n)
            .map(|k| lo + (hi - lo) * k as f64 / n as f64)
            .collect()
    };
    let taus = if tau_max > 0.0 {
        steps(0.0, tau_max, 10)
    } else {
        vec![0.0]
    };
    for &w in &steps(0.0, w_max, 60) {
        for &l in &steps(l_range.0, l_range.1, 40) {
            for &tau in &taus {
                eval(w, l, tau, &mut best);
            }
        }
    }
    // Refine twice around the best point.
    let (mut dw, mut dl, mut dt) = (w_max / 60.0, (l_range.1 - l_range.0) / 40.0, tau_max / 10.0);
    for _ in 0..2 {
        let c = best;
        let ws = steps((c.window_ms - dw).max(0.0), c.window_ms + dw, 16);
        let ls = steps(c.latency_ms - dl, c.latency_ms + dl, 16);
        let ts = if tau_max > 0.0 {
            steps((c.tau_ms - dt).max(0.0), c.tau_ms + dt, 8)
        } else {
            vec![0.0]
        };
        for &w in &ws {
            for &l in &ls {
                for &tau in &ts {
                    eval(w, l, tau, &mut best);
                }
            }
        }
        dw /= 8.0;
        dl /= 8.0;
        dt /= 4.0;
    }
    best
}

/// Fits a path with its own sample timestamps (buffered samples):
/// `points` are (ms after the fall, level normalised 1 = on, 0 = off).
pub fn fit_timestamped(points: &[(f64, f64)], w_max: f64) -> StepFit {
    search(
        points,
        w_max,
        (-w_max / 2.0, w_max / 2.0),
        20.0,
        &|t, w, tau, _| cdf_box_exp(t, w, tau),
    )
}

/// Fits a path read at arbitrary times that updates every `update_ms`
/// (instant and average fields), from every read.
pub fn fit_held(points: &[(f64, f64)], update_ms: f64, w_max: f64) -> StepFit {
    search(
        points,
        w_max,
        (-20.0, update_ms.max(20.0)),
        0.0,
        &|t, w, _, _| cdf_box_box(t, w, update_ms),
    )
}

/// Fits a held path from its change points only (the first read of each
/// new value, i.e. one sample per sensor update), with the board's own fall
/// constant `tau_ms` known from the buffered fit: the hold drops out.
pub fn fit_updates(points: &[(f64, f64)], tau_ms: f64, w_max: f64, l_max: f64) -> StepFit {
    let mut f = search(points, w_max, (-20.0, l_max), 0.0, &|t, w, _, _| {
        cdf_box_exp(t, w, tau_ms)
    });
    f.tau_ms = tau_ms;
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cdfs_are_monotone_and_bounded() {
        for (w, tau) in [(20.0, 4.0), (0.0, 5.0), (30.0, 0.0)] {
            let mut last = 0.0;
            for k in 0..200 {
                let v = cdf_box_exp(k as f64 * 0.5, w, tau);
                assert!(
                    (0.0..=1.0 + 1e-12).contains(&v) && v + 1e-12 >= last,
                    "w {w} tau {tau} at {k}: {v}"
                );
                last = v;
            }
        }
        assert!((cdf_box_box(62.5, 100.0, 25.0) - 0.5).abs() < 1e-12);
        assert!((cdf_box_box(125.0, 100.0, 25.0) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn fits_recover_known_windows() {
        let pts: Vec<(f64, f64)> = (-100..200)
            .map(|t| (t as f64, 1.0 - cdf_box_exp(t as f64 - 3.0, 20.0, 5.0)))
            .collect();
        let f = fit_timestamped(&pts, 100.0);
        assert!(
            (f.window_ms - 20.0).abs() < 1.0
                && (f.latency_ms - 3.0).abs() < 1.0
                && (f.tau_ms - 5.0).abs() < 1.0,
            "{f:?}"
        );
        let pts: Vec<(f64, f64)> = (-100..300)
            .map(|t| (t as f64, 1.0 - cdf_box_box(t as f64 - 10.0, 25.0, 100.0)))
            .collect();
        let f = fit_held(&pts, 100.0, 400.0);
        assert!(
            (f.window_ms - 25.0).abs() < 1.5 && (f.latency_ms - 10.0).abs() < 1.5,
            "{f:?}"
        );
    }
}
