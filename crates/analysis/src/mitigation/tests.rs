//! Tests of the mitigation rows: which rungs are credited with a cut,
//! and where the floor is read.

use super::*;

/// A plain rung (node step `step`, swing 1200 W, mean 800 W) and a
/// ramp rung of the same period and mode (step `mitigated_step`, swing
/// 1000 W, mean 760 W), as the collator summarised them.
fn pair(mitigated_step: f64) -> (RungSummary, RungSummary) {
    let mut plain = crate::summary::fixture::summary(Some(100.0));
    plain.rung.label = "m/p100ms/plain/in_phase".into();
    plain.step_w = Some(1200.0);
    plain.swing_w = Some(1200.0);
    plain.mean_w = Some(800.0);
    let mut m = plain.clone();
    m.rung.id = 8;
    m.rung.label = "m/p100ms/up2k4-down2k4/in_phase".into();
    m.rung.smoothing = Some(SmoothingSpec {
        ramp_up_w_per_s: Some(2400.0),
        ramp_down_w_per_s: Some(2400.0),
        ..Default::default()
    });
    m.step_w = Some(mitigated_step);
    m.swing_w = Some(1000.0);
    m.mean_w = Some(760.0);
    (plain, m)
}

/// Issue 45, defect 8: a mitigation rung whose wave ran upside down
/// (off-phase above its on-phase), or whose edges are out of
/// tolerance, booked a swing cut (16 %) and an energy figure (−5.6 %)
/// against its plain rung; both are now withheld, with the reason in
/// the row.
#[test]
fn a_rung_upside_down_or_out_of_tolerance_is_not_credited() {
    let (plain, ok) = pair(400.0);
    assert_eq!(not_credited(&ok, Some(&plain)), None);
    let row_of = |m: &RungSummary| {
        let mut row = row(m, Some(&plain), m.rung.smoothing.unwrap(), &[]);
        if let Some(why) = not_credited(m, Some(&plain)) {
            row.withhold(why);
        }
        row
    };
    let credited = row_of(&ok);
    assert!((credited.swing_cut_pct.unwrap() - 100.0 / 6.0).abs() < 1e-9);
    assert!((credited.energy_pct.unwrap() + 5.0).abs() < 1e-9);
    assert_eq!(credited.withheld, None);
    // Upside down: the off-phase 1150 W above the on-phase.
    let (_, inverted) = pair(-1150.0);
    let row = row_of(&inverted);
    let why = row.withheld.clone().unwrap();
    assert!(
        why.contains("off-phase drew 1150 W more than its on-phase"),
        "{why}"
    );
    assert!(
        why.contains("upside down") && why.contains("rerun"),
        "{why}"
    );
    assert_eq!((row.swing_cut_pct, row.swing_cut_ci95_pct), (None, None));
    assert_eq!((row.energy_pct, row.extra_w), (None, None));
    // What was measured stays.
    assert_eq!((row.swing_w, row.mean_w), (Some(1000.0), Some(760.0)));
    assert!(
        row.caveats[0].starts_with("NOT CREDITED"),
        "{:?}",
        row.caveats
    );
    // A floor a little above the work's own draw is noise, not upside down.
    assert_eq!(not_credited(&pair(-50.0).1, Some(&plain)), None);
    // Edges out of tolerance.
    let (_, mut late) = pair(400.0);
    late.edges_verdict = Some("rise p99 900 µs > 50".into());
    let why = not_credited(&late, Some(&plain)).unwrap();
    assert!(
        why.contains("edges are out of tolerance (rise p99 900 µs > 50)"),
        "{why}"
    );
}

#[test]
fn the_floor_is_read_clear_of_the_edges_and_the_ramp_down() {
    // 100 points over 100 ms: on 0..50 at 700 W, then a ramp down to
    // 420 W over 20 ms, then 420 W.
    let v: Vec<f64> = (0..100)
        .map(|i| match i {
            0..50 => 700.0,
            50..70 => 700.0 - 14.0 * (i - 50) as f64,
            _ => 420.0,
        })
        .collect();
    let f = off_plateau(&v, 0.5, 100.0, 20.0).unwrap();
    assert!((f - 420.0).abs() < 1e-9, "{f}");
    // Without the ramp down's 20 ms, the second half of the off-phase
    // (75..96 ms) is still clear of the ramp.
    assert_eq!(off_plateau(&v, 0.5, 100.0, 0.0), Some(420.0));
    // A ramp down to the end leaves nothing settled: no figure.
    assert_eq!(off_plateau(&v, 0.5, 100.0, 45.0), None);
    // The trough: the lowest 10 ms of the off-phase, here the floor.
    assert_eq!(off_trough(&v, 0.5, 100.0), Some(420.0));
    // A sag after the fall is the trough, not the settled floor.
    let sag: Vec<f64> = v
        .iter()
        .enumerate()
        .map(|(i, w)| if (72..85).contains(&i) { 380.0 } else { *w })
        .collect();
    assert_eq!(off_trough(&sag, 0.5, 100.0), Some(380.0));
    assert!(off_plateau(&sag, 0.5, 100.0, 20.0).unwrap() > 400.0);
}
