use super::rack::resample;
use crate::fft::Planner;
use proptest::prelude::*;
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

proptest! {
    /// A bootstrap replicate's figures, read by partitioning the window's
    /// points, are those of their sorted levels, bit for bit: over cycles
    /// with repeated levels, windows shorter than a cycle and of many
    /// cycles with a partial one, from any phase.
    #[test]
    fn a_replicates_figures_are_its_sorted_levels_figures(
        values in prop::collection::vec(
            prop_oneof![(0u32..30).prop_map(|v| 400.0 + f64::from(v) * 7.5), 300.0f64..900.0],
            1..400,
        ),
        period_ns in 1_000_000i64..200_000_000,
        from_share in 0.0f64..3.0,
        span_share in 0.01f64..40.0,
    ) {
        let (from, span) = ((from_share * period_ns as f64) as i64, (span_share * period_ns as f64) as i64);
        let by_sorting = super::CycleStats::of(&super::window_levels(&values, period_ns, from, span));
        let by_partition = super::CycleStats::of_points(super::window_points(&values, period_ns, from, span));
        let bits = |s: &super::CycleStats| [s.mean_w, s.peak_w, s.p1_w, s.p10_w, s.p90_w, s.p99_w].map(f64::to_bits);
        prop_assert_eq!(bits(&by_partition), bits(&by_sorting));
    }
}

proptest! {
    /// A cycle read along a window, the phase carried from step to step,
    /// gives what reading it at each time gives, bit for bit.
    #[test]
    fn a_cycle_read_along_is_read_at_each_time(
        values in prop::collection::vec(0.0f64..1000.0, 1..500),
        period_ms in 0.5f64..500.0,
        epoch_ns in -1_000_000_000i64..1_000_000_000,
        from_ns in -2_000_000_000i64..2_000_000_000,
        step_ns in 1i64..3_000_000_000,
        n in 0usize..300,
    ) {
        let c = super::NodeCycle::of_values(period_ms, values);
        let along = c.along(epoch_ns, from_ns, step_ns, n);
        prop_assert_eq!(along.len(), n);
        for (k, v) in along.iter().enumerate() {
            let at = c.at(epoch_ns, from_ns + k as i64 * step_ns);
            prop_assert_eq!(v.to_bits(), at.to_bits(), "point {}", k);
        }
    }
}
