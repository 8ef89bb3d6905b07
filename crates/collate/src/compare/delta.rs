//! The arithmetic of a comparison: one figure of baseline A against
//! candidate B, each side the values of its repeats. The difference is
//! B − A of the means over repeats, in W and as a share of A's mean; its
//! 95 % interval is Welch's (unequal variances, Welch–Satterthwaite
//! degrees of freedom, [`powerlab_samples::stats::welch_difference`]) when both sides
//! have at least two repeats; with one, the runs' own 95 % intervals of
//! the figure in quadrature ([`with_within_run`]), where both reports have
//! them; and none otherwise.
//!
//! A change counts ([`beyond`]) when it is larger than the threshold (a
//! share of A's value) and, where there is an interval, larger than its
//! half-width: a difference the repeats cannot tell from zero is never a
//! regression, however large its percentage.

use powerlab_samples::stats::mean;
use powerlab_samples::stats::{r3, welch_difference};
use serde::Serialize;

/// One figure compared across the repeats of A and B.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Delta {
    /// A's mean over its repeats, W (None: A has no value).
    pub a_w: Option<f64>,
    /// B's mean over its repeats, W.
    pub b_w: Option<f64>,
    /// A's repeats with a value.
    pub n_a: usize,
    /// B's repeats with a value.
    pub n_b: usize,
    /// B − A, W.
    pub delta_w: Option<f64>,
    /// (B − A) / A, %.
    pub delta_pct: Option<f64>,
    /// Half-width of the 95 % Welch interval of B − A, W (None with fewer
    /// than two repeats on a side).
    pub ci95_w: Option<f64>,
    /// The interval in words: `± 12.3 W (Welch 95 %, 3 vs 3 repeats)`,
    /// `no interval (1 repeat)` or why there is no difference.
    pub interval: String,
}

/// Compares A's repeat values `a` with B's `b` (NaN-free).
pub fn delta(a: &[f64], b: &[f64]) -> Delta {
    let (ma, mb) = (mean(a), mean(b));
    let (n_a, n_b) = (a.len(), b.len());
    let base = Delta {
        a_w: ma.map(r3),
        b_w: mb.map(r3),
        n_a,
        n_b,
        delta_w: None,
        delta_pct: None,
        ci95_w: None,
        interval: String::new(),
    };
    let (Some(ma), Some(_)) = (ma, mb) else {
        let interval = match (n_a, n_b) {
            (0, 0) => "no figure in either run",
            (0, _) => "no figure in A",
            _ => "no figure in B",
        };
        return Delta {
            interval: interval.into(),
            ..base
        };
    };
    let (d, ci) = welch_difference(a, b);
    let interval = match ci {
        Some(c) => format!("± {c:.1} W (Welch 95 %, {n_a} vs {n_b} repeats)"),
        None => format!(
            "no interval ({} repeat{})",
            n_a.min(n_b),
            if n_a.min(n_b) == 1 { "" } else { "s" }
        ),
    };
    Delta {
        delta_w: Some(r3(d)),
        delta_pct: (ma.abs() > 0.0).then(|| r3(d / ma * 100.0)),
        ci95_w: ci.map(r3),
        interval,
        ..base
    }
}

/// `d` with an interval from the runs' own: where the repeats give no
/// Welch interval (one repeat a side), the half-widths of A's and B's
/// within-run 95 % intervals of their means over repeats (`within`), in
/// quadrature. One run's noise then cannot read as a regression.
pub fn with_within_run(d: Delta, within: (Option<f64>, Option<f64>)) -> Delta {
    match (d.ci95_w, d.delta_w, within) {
        (None, Some(_), (Some(ha), Some(hb))) => {
            let c = (ha * ha + hb * hb).sqrt();
            Delta {
                ci95_w: Some(r3(c)),
                interval: format!(
                    "± {c:.1} W (the runs' own 95 % intervals, {} vs {} repeat{})",
                    d.n_a,
                    d.n_b,
                    if d.n_a.max(d.n_b) == 1 { "" } else { "s" }
                ),
                ..d
            }
        }
        _ => d,
    }
}

/// Whether the change is beyond `threshold_pct` of A's value and, where
/// there is an interval, beyond its half-width. A difference without a
/// figure on both sides is never beyond.
pub fn beyond(d: &Delta, threshold_pct: f64) -> bool {
    match (d.delta_w, d.delta_pct) {
        (Some(w), Some(p)) => p.abs() > threshold_pct && d.ci95_w.is_none_or(|c| w.abs() > c),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn one_repeat_a_side_takes_the_runs_own_intervals() {
        let d = with_within_run(delta(&[1000.0], &[1050.0]), (Some(30.0), Some(40.0)));
        assert_eq!(d.ci95_w, Some(50.0));
        assert!(!beyond(&d, 3.0), "{d:?}");
        let d = with_within_run(delta(&[1000.0], &[1100.0]), (Some(30.0), Some(40.0)));
        assert!(beyond(&d, 3.0), "{d:?}");
        // Without them (an older report), no interval as before.
        let d = with_within_run(delta(&[1000.0], &[1050.0]), (Some(30.0), None));
        assert_eq!(d.ci95_w, None);
    }

    #[test]
    fn one_repeat_a_side_gives_the_difference_without_an_interval() {
        let d = delta(&[1000.0], &[1050.0]);
        assert_eq!(d.delta_w, Some(50.0));
        assert_eq!(d.delta_pct, Some(5.0));
        assert_eq!(d.ci95_w, None);
        assert_eq!(d.interval, "no interval (1 repeat)");
        // 5 % against a 3 % threshold: beyond; against 6 %: not.
        assert!(beyond(&d, 3.0));
        assert!(!beyond(&d, 6.0));
        // A falling figure is a change too.
        assert!(beyond(&delta(&[1000.0], &[950.0]), 3.0));
        // Two repeats on one side only: still no interval.
        assert_eq!(delta(&[1.0, 2.0], &[3.0]).ci95_w, None);
    }

    #[test]
    fn the_welch_interval_matches_a_hand_computation() {
        // A: 100, 102, 104 (mean 102, variance 4); B: 110, 114 (mean 112,
        // variance 8). se² = 4/3 + 8/2 = 16/3; df = se⁴ / ((4/3)²/2 + 4²/1)
        // = (256/9) / (8/9 + 16) = 256/152 = 1.6842; t(0.975, 1.6842) from
        // the t distribution's quantile (statrs) — checked against the
        // integer-df table: between t(1) = 12.706 and t(2) = 4.303.
        let d = delta(&[100.0, 102.0, 104.0], &[110.0, 114.0]);
        assert_eq!(d.delta_w, Some(10.0));
        assert_eq!(d.delta_pct, Some(r3(10.0 / 102.0 * 100.0)));
        let df: f64 = 256.0 / 152.0;
        let t = powerlab_samples::stats::t975(df);
        assert!(t > 4.303 && t < 12.706, "{t}");
        let half = t * (16.0f64 / 3.0).sqrt();
        assert!((d.ci95_w.unwrap() - r3(half)).abs() < 1e-9, "{d:?}");
        // 9.8 % beyond 3 %, but inside an interval of ~±15 W: not a change.
        assert!(half > 10.0);
        assert!(!beyond(&d, 3.0));
        assert!(d.interval.starts_with("± ") && d.interval.contains("3 vs 2 repeats"));
    }

    #[test]
    fn a_difference_beyond_a_narrow_interval_counts() {
        // A: 999, 1001 and B: 1099, 1101 (two repeats each): Δ = 100 W,
        // 10 %; each side's variance is 2, so se² = 2/2 + 2/2 = 2 and
        // df = 2² / (1²/1 + 1²/1) = 2: t(0.975, 2) = 4.303 (table), and the
        // half-width is 4.303 × √2 = 6.085 W.
        let d = delta(&[999.0, 1001.0], &[1099.0, 1101.0]);
        assert_eq!(d.delta_w, Some(100.0));
        assert_eq!(d.delta_pct, Some(10.0));
        assert!(
            (d.ci95_w.unwrap() - 4.303 * 2f64.sqrt()).abs() < 2e-3,
            "{d:?}"
        );
        assert!(beyond(&d, 3.0));
        // Identical repeats: a zero-width interval, any change beyond it.
        let same = delta(&[500.0, 500.0], &[500.0, 500.0]);
        assert_eq!((same.delta_w, same.ci95_w), (Some(0.0), Some(0.0)));
        assert!(!beyond(&same, 3.0));
    }

    #[test]
    fn a_side_without_a_figure_is_said_and_never_a_change() {
        let d = delta(&[], &[100.0]);
        assert_eq!((d.delta_w, d.a_w, d.b_w), (None, None, Some(100.0)));
        assert_eq!(d.interval, "no figure in A");
        assert!(!beyond(&d, 0.0));
        assert_eq!(delta(&[1.0], &[]).interval, "no figure in B");
        // A zero baseline has a difference in W but no percentage.
        let z = delta(&[0.0], &[5.0]);
        assert_eq!((z.delta_w, z.delta_pct), (Some(5.0), None));
        assert!(!beyond(&z, 3.0));
    }
}
