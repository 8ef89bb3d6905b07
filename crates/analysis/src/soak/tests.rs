use super::trend::equilibrium;
use super::*;

#[test]
fn the_slope_and_its_interval_hold_a_known_trend() {
    // 30 bins of 10 s, 1 W per minute (10 W per 10 min) plus a
    // deterministic ±2 W alternation.
    let pts: Vec<(f64, f64)> = (0..30)
        .map(|i| {
            let t = 5.0 + 10.0 * i as f64;
            (t, 700.0 + t / 60.0 + if i % 2 == 0 { 2.0 } else { -2.0 })
        })
        .collect();
    let (slope, half, n) = drift(&pts).unwrap();
    assert_eq!(n, 30);
    // The alternation itself tilts the fit by −0.8 W/10 min over 30 points.
    assert!((slope - 10.0).abs() < 1.0, "{slope}");
    assert!(
        half > 0.0 && slope - half < 10.0 && 10.0 < slope + half,
        "{slope} ± {half}"
    );
    // A flat series: an interval around zero.
    let flat: Vec<(f64, f64)> = pts
        .iter()
        .map(|p| (p.0, 700.0 + (p.1 - 700.0 - p.0 / 60.0)))
        .collect();
    let (s0, h0, _) = drift(&flat).unwrap();
    assert!(s0 - h0 <= 0.0 && 0.0 <= s0 + h0, "{s0} ± {h0}");
    // Too few points: nothing.
    assert!(drift(&pts[..3]).is_none());
}

#[test]
fn autocorrelated_wander_widens_the_interval() {
    // A slow sine (one period over the window) on a flat level: the
    // naive interval would call its tilt a trend.
    let wave = |i: usize| 5.0 * (i as f64 / 30.0 * std::f64::consts::TAU).sin();
    let pts: Vec<(f64, f64)> = (0..30)
        .map(|i| (10.0 * i as f64, 700.0 + wave(i)))
        .collect();
    let (s, h, _) = drift(&pts).unwrap();
    let white: Vec<(f64, f64)> = (0..30)
        .map(|i| (10.0 * i as f64, 700.0 + wave((i * 7) % 30)))
        .collect();
    let (_, hw, _) = drift(&white).unwrap();
    assert!(h > 2.0 * hw, "wander ±{h} vs shuffled ±{hw}");
    assert!(s.abs() <= h, "{s} ± {h}");
}

#[test]
fn equilibrium_is_when_the_temperature_stays_near_its_plateau() {
    let s = 1_000_000_000i64;
    // Rising 1 °C per 5 s from 40 to 70 °C (at 150 s), then flat to 300 s.
    let temp: Vec<(i64, f64)> = (0..=300)
        .map(|t| (t * s, (40.0 + t as f64 / 5.0).min(70.0)))
        .collect();
    let (at, how) = equilibrium(&temp, 0, 301 * s, 240 * s);
    assert_eq!(how, Equilibrium::Reached);
    // The 10 s bin from 140 s averages 68.9 °C (1.1 °C off the 70 °C
    // plateau); from 150 s every bin is on it.
    let at = at.unwrap();
    assert!((at - 150.0).abs() < 1e-9, "{at}");
    // Still rising through the last window: not reached.
    let rising: Vec<(i64, f64)> = (0..=300).map(|t| (t * s, 40.0 + t as f64 / 10.0)).collect();
    let (none, why) = equilibrium(&rising, 0, 301 * s, 240 * s);
    assert!(
        none.is_none() && matches!(&why, Equilibrium::Unreached(u) if u.judged()),
        "{why}"
    );
    // Flat throughout: reached at once.
    let flat: Vec<(i64, f64)> = (0..100).map(|t| (t * s, 60.0)).collect();
    assert_eq!(equilibrium(&flat, 0, 100 * s, 60 * s).0, Some(0.0));
}

#[test]
fn a_steady_climb_is_not_a_plateau() {
    // 0.8 °C a minute all the way: within 1 °C of the last minute's
    // mean from about 190 s, but still climbing.
    let ms = 1_000_000i64;
    let temp: Vec<(i64, f64)> = (0..1500)
        .map(|i| (i * 200 * ms, 60.0 + 0.8 * (i as f64 * 0.2) / 60.0))
        .collect();
    let (at, why) = equilibrium(&temp, 0, 300_000 * ms, 240_000 * ms);
    assert_eq!(at, None);
    assert!(
        matches!(why, Equilibrium::Unreached(Unreached::StillDrifting { moved_c, .. }) if moved_c > 0.0),
        "{why}"
    );
    assert!(
        why.to_string().starts_with("not reached: still climbing"),
        "{why}"
    );
    assert!(why.to_string().contains("+0.80 °C/min"), "{why}");
    // The same climb over 300 s but only 0.9 °C in all stays within
    // the 1 °C the rule allows.
    let slow: Vec<(i64, f64)> = (0..1500)
        .map(|i| (i * 200 * ms, 60.0 + 0.9 * (i as f64 / 1500.0)))
        .collect();
    assert_eq!(
        equilibrium(&slow, 0, 300_000 * ms, 240_000 * ms).1,
        Equilibrium::Reached
    );
}

#[test]
fn missing_readings_are_not_judged_as_equilibrium() {
    let ms = 1_000_000i64;
    let flat = |from_s: i64, to_s: i64| -> Vec<(i64, f64)> {
        (from_s * 5..to_s * 5)
            .map(|i| (i * 200 * ms, 60.0))
            .collect()
    };
    // Readings only in the last window: nothing before it to judge.
    let late = flat(240, 300);
    let (at, why) = equilibrium(&late, 0, 300_000 * ms, 240_000 * ms);
    assert_eq!(at, None);
    assert_eq!(why, Equilibrium::Unreached(Unreached::NothingBefore));
    assert_eq!(
        why.to_string(),
        "not judged: no temperature readings before the last window"
    );
    // Readings from 100 s: equilibrium from the first bin there is, not 0 s.
    let gap = flat(100, 300);
    assert_eq!(
        equilibrium(&gap, 0, 300_000 * ms, 240_000 * ms).0,
        Some(100.0)
    );
    // One reading in the last window is no plateau.
    let mut sparse = flat(0, 230);
    sparse.push((299_000 * ms, 60.0));
    let (at, why) = equilibrium(&sparse, 0, 300_000 * ms, 240_000 * ms);
    assert_eq!(at, None);
    assert_eq!(why, Equilibrium::Unreached(Unreached::FewReadings(1)));
}

#[test]
fn whole_degree_flicker_on_the_plateau_is_equilibrium() {
    // As a real H200 read it: whole degrees, 57 °C until 120 s, then 59
    // with a 60 every 20th reading and a 58 every 37th (plateau about
    // 59.02 °C, so each 58 is more than 1 °C off it), 5 readings a second.
    let ms = 1_000_000i64;
    let temp: Vec<(i64, f64)> = (0..1500)
        .map(|i| {
            let t = i * 200 * ms;
            let v = if t < 120_000 * ms {
                57.0
            } else if i % 37 == 0 {
                58.0
            } else if i % 20 == 0 {
                60.0
            } else {
                59.0
            };
            (t, v)
        })
        .collect();
    let (at, how) = equilibrium(&temp, 0, 300_000 * ms, 240_000 * ms);
    assert_eq!(how, Equilibrium::Reached);
    assert_eq!(at, Some(120.0));
    // A single reading would have called it still moving: a 58 lies in
    // the last window, more than 1 °C off the plateau.
    let plateau = mean(&values(span(&temp, 240_000 * ms, 300_000 * ms))).unwrap();
    assert!(
        span(&temp, 240_000 * ms, 300_000 * ms)
            .iter()
            .any(|p| (p.1 - plateau).abs() > EQUILIBRIUM_C)
    );
}
