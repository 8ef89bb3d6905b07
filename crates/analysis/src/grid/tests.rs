#![allow(clippy::unwrap_used)] // a test that unwraps reports its failure by panicking
use super::*;
use crate::cycle::{Bounds, CycleInterval, CycleStats};

/// A 1 s cycle at 0.5 ms: 200 W, rising over `rise` points to 1200 W,
/// held to the half, falling over `fall` points.
fn trapezoid(rise: usize, fall: usize, harmonics: usize) -> NodeCycle {
    let m = 2000;
    let values: Vec<f64> = (0..m)
        .map(|j| {
            if j <= rise {
                200.0 + 1000.0 * j as f64 / rise as f64
            } else if j < m / 2 {
                1200.0
            } else if j <= m / 2 + fall {
                1200.0 - 1000.0 * (j - m / 2) as f64 / fall as f64
            } else {
                200.0
            }
        })
        .collect();
    NodeCycle {
        harmonics,
        step_w: 1000.0,
        stats: CycleStats {
            mean_w: 700.0,
            peak_w: 1200.0,
            p1_w: 200.0,
            p10_w: 200.0,
            p90_w: 1200.0,
            p99_w: 1200.0,
        },
        ..NodeCycle::of_values(1000.0, values)
    }
}

fn get(f: &[GridFigure], m: Metric) -> &GridFigure {
    f.iter().find(|x| x.metric == m).unwrap()
}

#[test]
fn a_slow_edge_is_a_rate_and_a_fast_one_a_lower_bound() {
    // 100 harmonics: resolution 4.46 ms. Rise 40 ms (10–90 %: 32 ms),
    // fall 4 ms (10–90 %: 3.2 ms, shorter than the resolution).
    let c = trapezoid(80, 8, 100);
    assert!((cycle_resolution_ms(&c) - 4.46).abs() < 1e-9);
    let f = cycle_figures(&c, DEFAULT_BAND_HZ);
    let up = get(&f, Metric::RampUp);
    assert!(!up.lower_bound);
    assert!((up.value.unwrap() - 25_000.0).abs() < 1e-6, "{up:?}");
    // The resolution's share of 32 ms (√ term) and a grid step's.
    let pm = up.plus_minus.unwrap();
    assert!(pm > 0.0 && pm < 0.05 * 25_000.0, "{pm}");
    let down = get(&f, Metric::RampDown);
    assert!(down.lower_bound && down.plus_minus.is_none());
    // Timed as the resolution: 800 W over 4.46 ms.
    assert!(
        (down.value.unwrap() - 800.0 / 0.00446).abs() < 1e-3,
        "{down:?}"
    );
    assert_eq!(get(&f, Metric::DynamicRange).value, Some(1000.0));
    let pct = get(&f, Metric::DynamicRangePct).value.unwrap();
    assert!((pct - 100.0 * 1000.0 / 1200.0).abs() < 1e-9);
    // 100 harmonics of a 1 s cycle reach 100 Hz: the 0.1–20 Hz band is
    // stated, and holds most of a trapezoid's energy.
    let share = get(&f, Metric::BandShare);
    assert_eq!(share.highest_hz, Some(100.0));
    assert!(share.value.unwrap() > 95.0, "{share:?}");
}

#[test]
fn noise_and_missing_harmonics_withhold_their_figures() {
    // 10 harmonics of a 1 s cycle reach only 10 Hz: the 0.1–20 Hz share
    // is an interval, the resolved part's share to that plus everything
    // unresolved.
    let f = cycle_figures(&trapezoid(80, 8, 10), DEFAULT_BAND_HZ);
    let share = get(&f, Metric::BandShare);
    assert_eq!(share.withheld, None);
    let (lo, hi) = (share.value.unwrap(), share.upper.unwrap());
    assert!(0.0 < lo && lo < hi && hi <= 100.0, "{lo}–{hi}");
    // A swing interval ±150 W wide on a 1000 W step: no rate.
    let b = |v: f64, half: f64| Bounds {
        lo: v - half,
        hi: v + half,
        centre: v,
    };
    let mut c = trapezoid(80, 8, 100);
    c.interval = Some(CycleInterval {
        mean: b(700.0, 1.0),
        peak: b(1200.0, 1.0),
        p1: b(200.0, 1.0),
        p99: b(1200.0, 1.0),
        spread: b(1000.0, 1.0),
        swing: b(1000.0, 150.0),
        p10: b(200.0, 1.0),
        p90: b(1200.0, 1.0),
        cycles: 10,
    });
    let f = cycle_figures(&c, DEFAULT_BAND_HZ);
    assert!(matches!(
        get(&f, Metric::RampUp).withheld,
        Some(Withheld::StepInNoise(_, _))
    ));
    assert!(get(&f, Metric::DynamicRange).plus_minus.is_some());
}

#[test]
fn the_curve_states_no_rate_and_nothing_a_held_sum_invents() {
    let spacing = Spacing {
        step_ms: 10.0,
        sample_window_ms: 20.0,
    };
    let points: Vec<Option<f64>> = (0..600)
        .map(|i| Some(if (i / 50) % 2 == 0 { 1000.0 } else { 900.0 }))
        .collect();
    // A sustained rung: range and band share (a 1 Hz wave: in band).
    let f = curve_figures(&points, spacing, DEFAULT_BAND_HZ, None);
    assert_eq!(get(&f, Metric::RampUp).withheld, Some(Withheld::NoCycle));
    assert_eq!(get(&f, Metric::DynamicRange).value, Some(100.0));
    assert_eq!(get(&f, Metric::BandShare).highest_hz, Some(25.0));
    assert!(get(&f, Metric::BandShare).value.unwrap() > 90.0);
    // A 20 ms duty rung without a cycle: 50 Hz aliases into the band.
    let f = curve_figures(&points, spacing, DEFAULT_BAND_HZ, Some(20.0));
    assert_eq!(
        get(&f, Metric::DynamicRange).withheld,
        Some(Withheld::HeldSum)
    );
    assert_eq!(
        get(&f, Metric::BandShare).withheld,
        Some(Withheld::Aliased(50.0))
    );
    // A band above Nyquist.
    let f = curve_figures(&points, spacing, [0.1, 30.0], None);
    assert_eq!(
        get(&f, Metric::BandShare).withheld,
        Some(Withheld::AboveNyquist(25.0))
    );
}
