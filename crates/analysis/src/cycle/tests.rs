use super::rack::resample;
use crate::fft::Planner;
use std::f64::consts::PI;

#[test]
fn a_resampled_cycle_keeps_its_mean_and_its_values() {
    // A band-limited cycle at 1001 points, evaluated at 1032.
    let f = |x: f64| 500.0 + 300.0 * (2.0 * PI * x).sin() + 40.0 * (2.0 * PI * 7.0 * x + 0.3).cos();
    let a: Vec<f64> = (0..1001).map(|j| f(j as f64 / 1001.0)).collect();
    let b = resample(&mut Planner::new(), &a, 1032);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    assert!(
        (mean(&a) - mean(&b)).abs() < 1e-9,
        "{} vs {}",
        mean(&a),
        mean(&b)
    );
    for (j, v) in b.iter().enumerate() {
        assert!((v - f(j as f64 / 1032.0)).abs() < 1e-9, "point {j}");
    }
}
