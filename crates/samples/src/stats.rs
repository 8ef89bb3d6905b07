//! The collator's statistics, in one place. Every quantile the collator
//! computes is defined here:
//!
//! - the reported percentiles and medians use one definition, the linear
//!   interpolation between the two nearest order statistics (Hyndman &
//!   Fan type 7, NumPy's default): [`quantile`], [`quantile_sorted`],
//!   [`median`] and [`weighted_quantile_sorted`] ([`weighted_quantiles`]
//!   reads the same figures of weighted points without sorting them);
//! - the levels of a folded cycle's shape and the offset of a GPU's edges
//!   use the high median (the upper of the two middle values, no
//!   interpolation): [`median_high`], [`median_high_ns`], always a value
//!   that occurs in the data.
//!
//! Confidence intervals use Student's t from `statrs` (exact quantiles at
//! any number of degrees of freedom).

use statrs::distribution::{ContinuousCDF, StudentsT};

mod select;
pub use select::weighted_quantiles;

/// The `q` quantile (0 ≤ q ≤ 1) of `sorted` (ascending), linear between order
/// statistics. NaN for an empty slice.
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        n => {
            let pos = q.clamp(0.0, 1.0) * (n - 1) as f64;
            let i = (pos.floor() as usize).min(n - 2);
            let frac = pos - i as f64;
            sorted[i] + (sorted[i + 1] - sorted[i]) * frac
        }
    }
}

/// The `q` quantile of values with whole-number weights, `sorted` by value:
/// the same definition as [`quantile_sorted`] applied to the values each
/// repeated `weight` times. NaN when empty.
pub fn weighted_quantile_sorted(sorted: &[(f64, f64)], q: f64) -> f64 {
    let values: Vec<f64> = sorted.iter().map(|x| x.0).collect();
    quantile_of_cumulative(&values, &cumulative(sorted.iter().map(|x| x.1)), q)
}

/// The running totals of `weights`: element i is the sum of the first
/// i + 1, added in order (what [`quantile_of_cumulative`] reads).
pub fn cumulative(weights: impl IntoIterator<Item = f64>) -> Vec<f64> {
    let mut acc = 0.0;
    weights
        .into_iter()
        .map(|w| {
            acc += w;
            acc
        })
        .collect()
}

/// [`weighted_quantile_sorted`] of `values` (ascending) whose weights'
/// running totals are `through` ([`cumulative`]): each rank found by a
/// binary search, so that many quantiles of one set of levels do not each
/// walk it twice. NaN when empty.
pub fn quantile_of_cumulative(values: &[f64], through: &[f64], q: f64) -> f64 {
    let total = through.last().copied().unwrap_or(0.0);
    if values.is_empty() || total <= 0.0 {
        return f64::NAN;
    }
    let pos = q.clamp(0.0, 1.0) * (total - 1.0);
    // The value at (0-based) rank r of the repeated sequence: the first
    // whose running total passes r.
    let at = |r: f64| -> f64 {
        let i = through.partition_point(|acc| *acc <= r);
        values.get(i).copied().unwrap_or(values[values.len() - 1])
    };
    let lo = pos.floor();
    let (a, b) = (at(lo), at(lo + 1.0));
    a + (b - a) * (pos - lo)
}

/// The `q` quantile of `values` (any order; NaN-free).
pub fn quantile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_unstable_by(f64::total_cmp);
    Some(quantile_sorted(&v, q))
}

/// The median of `values` (the 0.5 quantile above).
pub fn median(values: &[f64]) -> Option<f64> {
    quantile(values, 0.5)
}

/// The median of values already sorted: the middle one, or the mean of
/// the two middle ones, `0.5 · (a + b)`. NaN when empty.
pub fn median_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        sorted[n / 2]
    } else {
        0.5 * (sorted[n / 2 - 1] + sorted[n / 2])
    }
}

/// The high median of `values` (any order; NaN-free): the value at rank
/// ⌊n/2⌋ of the sorted values, so the upper of the two middle ones when n
/// is even. None when empty.
pub fn median_high(values: &[f64]) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_unstable_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

/// The high median of integer times (ns), as [`median_high`]. None when empty.
pub fn median_high_ns(values: &[i64]) -> Option<i64> {
    let mut v = values.to_vec();
    v.sort_unstable();
    v.get(v.len() / 2).copied()
}

/// The two-sided 95 % quantile of Student's t with `df` degrees of freedom,
/// t(0.975, df).
pub fn t975(df: f64) -> f64 {
    match StudentsT::new(0.0, 1.0, df) {
        Ok(t) => t.inverse_cdf(0.975),
        Err(_) => f64::NAN,
    }
}

/// The sum of `values` with Neumaier's compensation: the rounding error of
/// each addition is carried and added back, so a rung's mean over hours of
/// 10 ms points keeps its last reported digit (a plain running sum lost it:
/// 20788.7395 J summed to 20788.73949999995 and was reported as .739).
pub fn sum_compensated(values: &[f64]) -> f64 {
    let (mut sum, mut carry) = (0.0_f64, 0.0_f64);
    for &v in values {
        let t = sum + v;
        carry += if sum.abs() >= v.abs() {
            (sum - t) + v
        } else {
            (v - t) + sum
        };
        sum = t;
    }
    sum + carry
}

/// The arithmetic mean (a plain sum), None for no values.
pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// Mean, sample standard deviation, and 95% CI half-width (None for n < 2).
pub fn mean_sd_ci(values: &[f64]) -> (f64, Option<f64>, Option<f64>) {
    let n = values.len();
    if n == 0 {
        return (f64::NAN, None, None);
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return (mean, None, None);
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let sd = var.sqrt();
    (
        mean,
        Some(sd),
        Some(t975((n - 1) as f64) * sd / (n as f64).sqrt()),
    )
}

/// The difference of two means, `b − a`, with the 95 % half-width of
/// Welch's interval (unequal variances; Welch–Satterthwaite degrees of
/// freedom). The half-width is None unless both sides have two values.
pub fn welch_difference(a: &[f64], b: &[f64]) -> (f64, Option<f64>) {
    let (ma, sa, _) = mean_sd_ci(a);
    let (mb, sb, _) = mean_sd_ci(b);
    let delta = mb - ma;
    let (Some(sa), Some(sb)) = (sa, sb) else {
        return (delta, None);
    };
    let (va, vb) = (sa * sa / a.len() as f64, sb * sb / b.len() as f64);
    let se2 = va + vb;
    if se2 <= 0.0 {
        return (delta, Some(0.0));
    }
    let df = se2 * se2 / (va * va / (a.len() - 1) as f64 + vb * vb / (b.len() - 1) as f64);
    (delta, Some(t975(df) * se2.sqrt()))
}

/// The 95 % half-width of a mean of n independent figures whose own
/// half-widths are `halves`: in quadrature, over n. None for none, or when
/// a figure has no half-width (`halves` holds None).
pub fn half_width_of_mean(halves: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    let h: Vec<f64> = halves.into_iter().collect::<Option<Vec<f64>>>()?;
    (!h.is_empty()).then(|| h.iter().map(|x| x * x).sum::<f64>().sqrt() / h.len() as f64)
}

/// Rounds to 3 decimals so that outputs are byte-identical on regeneration.
pub fn r3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_sorted_median_is_the_middle_or_the_middle_twos_mean() {
        assert_eq!(super::median_sorted(&[1.0, 2.0, 9.0]), 2.0);
        assert_eq!(super::median_sorted(&[1.0, 2.0, 4.0, 9.0]), 3.0);
        assert!(super::median_sorted(&[]).is_nan());
        // The high median of the same values picks a value held.
        assert_eq!(super::median_high(&[9.0, 1.0, 4.0, 2.0]), Some(4.0));
    }

    #[test]
    fn the_compensated_sum_keeps_what_a_running_sum_loses() {
        // 1 + 1e-16 ten times: a running sum never leaves 1.0.
        let mut v = vec![1.0];
        v.extend(std::iter::repeat_n(1e-16, 10));
        assert_eq!(v.iter().sum::<f64>(), 1.0);
        assert_eq!(sum_compensated(&v), 1.0 + 1e-15);
        // Large values that cancel do not swallow the small one.
        assert_eq!(sum_compensated(&[1e100, 1.0, -1e100]), 1.0);
        assert_eq!(sum_compensated(&[]), 0.0);
    }

    use super::*;

    #[test]
    fn known_values() {
        let (m, sd, ci) = mean_sd_ci(&[1.0, 2.0, 3.0]);
        assert_eq!(m, 2.0);
        assert!((sd.unwrap() - 1.0).abs() < 1e-12);
        assert!((ci.unwrap() - 4.302_652_7 / 3f64.sqrt()).abs() < 1e-6);
        assert_eq!(mean_sd_ci(&[5.0]).1, None);
    }

    #[test]
    fn student_t_quantiles_are_exact_beyond_thirty_degrees_of_freedom() {
        // Tables: t(0.975, 1) = 12.706, 2 = 4.303, 30 = 2.042, 31 = 2.040, 60 = 2.000, 120 = 1.980.
        for (df, t) in [
            (1.0, 12.706),
            (2.0, 4.303),
            (30.0, 2.042),
            (31.0, 2.040),
            (60.0, 2.000),
            (120.0, 1.980),
        ] {
            assert!((t975(df) - t).abs() < 5e-4, "df {df}: {} vs {t}", t975(df));
        }
        assert!((t975(1e6) - 1.95996).abs() < 1e-3);
    }

    #[test]
    fn quantiles_interpolate_linearly() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(quantile_sorted(&v, 0.5), 3.0);
        assert_eq!(quantile_sorted(&v, 0.25), 2.0);
        assert!((quantile_sorted(&v, 0.01) - 1.04).abs() < 1e-12);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(quantile(&[], 0.5), None);
        // The high median takes the upper middle value, never interpolating.
        assert_eq!(median_high(&[4.0, 1.0, 3.0, 2.0]), Some(3.0));
        assert_eq!(median_high(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median_high(&[]), None);
        assert_eq!(median_high_ns(&[40, 10, 30, 20]), Some(30));
        // Weights repeat values: the same quantiles as the expanded sequence.
        let w = [(1.0, 2.0), (2.0, 1.0), (5.0, 3.0)];
        let expanded = [1.0, 1.0, 2.0, 5.0, 5.0, 5.0];
        for q in [0.0, 0.01, 0.3, 0.5, 0.77, 0.99, 1.0] {
            assert!(
                (weighted_quantile_sorted(&w, q) - quantile_sorted(&expanded, q)).abs() < 1e-12,
                "{q}"
            );
        }
    }

    #[test]
    fn welch_interval_matches_a_worked_example() {
        // a: mean 2, sd 1 (n 3); b: mean 5, sd 2 (n 4).
        let (d, h) = welch_difference(&[1.0, 2.0, 3.0], &[3.0, 4.0, 6.0, 7.0]);
        assert!((d - 3.0).abs() < 1e-12);
        // se² = 1/3 + (10/3)/4 = 1.1667; df = 1.1667² / ((1/3)²/2 + (0.8333)²/3) = 4.84.
        let df: f64 =
            1.1666667f64.powi(2) / ((1.0f64 / 3.0).powi(2) / 2.0 + (10.0f64 / 12.0).powi(2) / 3.0);
        assert!((h.unwrap() - t975(df) * 1.1666667f64.sqrt()).abs() < 1e-5);
        assert_eq!(welch_difference(&[1.0], &[2.0, 3.0]).1, None);
    }
}
