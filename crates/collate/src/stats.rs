//! Small statistics: mean, sample standard deviation and the 95% confidence
//! half-width of a mean with Student's t (two-sided, n − 1 degrees of freedom).

/// t(0.975, df) for df = 1..=30; beyond that the normal 1.96 is within 2%.
const T975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
];

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
    let t = T975.get(n - 2).copied().unwrap_or(1.96);
    (mean, Some(sd), Some(t * sd / (n as f64).sqrt()))
}

/// Rounds to 3 decimals so that outputs are byte-identical on regeneration.
pub fn r3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        let (m, sd, ci) = mean_sd_ci(&[1.0, 2.0, 3.0]);
        assert_eq!(m, 2.0);
        assert!((sd.unwrap() - 1.0).abs() < 1e-12);
        assert!((ci.unwrap() - 4.303 / 3f64.sqrt()).abs() < 1e-9);
        assert_eq!(mean_sd_ci(&[5.0]).1, None);
    }
}
