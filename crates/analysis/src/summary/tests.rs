use super::curve::points_by_rung;
use super::fixture::summary;
use super::*;
use crate::metric::Levels;
use powerlab_rundir::{Mode, PhaseKind};

/// The columns of `summary.csv`, in the order every earlier run wrote them.
const COLUMNS: &str = "rung_id,label,phase,kind,mode,period_ms,nominal_period_ms,duty,repeat,method,verdict,instrument,samples,coverage,harmonics,mean_w,peak_w,p1_w,p99_w,spread_w,swing_w,instrument_verdict,energy_j,raw_mean_w,raw_peak_w,raw_spread_w,raw_swing_w,instant_mean_w,instant_spread_w,average_field_mean_w,average_field_spread_w,average_field_swing_w,start_error_max_us,start_skew_us,rise_err_p50_us,rise_err_p99_us,rise_err_max_us,fall_err_p50_us,fall_err_p99_us,fall_err_max_us,edge_skew_p99_us,clock_drift_ppm,barrier_ok,edges_verdict,window_coverage,incomplete,mean_ci95_lo_w,mean_ci95_hi_w,peak_ci95_lo_w,peak_ci95_hi_w,spread_ci95_lo_w,spread_ci95_hi_w,swing_ci95_lo_w,swing_ci95_hi_w,step_w,unresolved,cycles";

#[test]
fn a_point_belongs_to_the_rung_whose_window_holds_it() {
    // Windows [start, end): rung 3 from 100 to 200, rung 1 from 200 to
    // 250, rung 2 from 300 to 400 (a gap between 250 and 300).
    let windows = [(3, 100, 200), (1, 200, 250), (2, 300, 400)];
    let t: Vec<i64> = vec![50, 100, 199, 200, 249, 250, 299, 300, 399, 400, 500];
    let got = points_by_rung(&t, &windows);
    // Ascending by rung id; each with the indices of its points.
    assert_eq!(got, vec![(1, vec![3, 4]), (2, vec![7, 8]), (3, vec![1, 2])]);
    assert!(points_by_rung(&t, &[]).is_empty());
}

#[test]
fn rung_figures_use_the_linear_quantile_and_skip_missing_points() {
    let v: Vec<f64> = (1..=101).rev().map(f64::from).collect();
    let st = Levels::of_points(v).unwrap();
    assert!(Levels::of_points(Vec::new()).is_none());
    assert_eq!((st.len(), st.mean(), st.max()), (101, 51.0, 101.0));
    // Rank q·(n−1) of 1..=101 is exactly 1 + 100·q.
    assert_eq!(st.quantile(0.01), 2.0);
    assert_eq!(st.quantile(0.10), 11.0);
    assert_eq!(st.quantile(0.90), 91.0);
    assert_eq!(st.quantile(0.99), 100.0);
}

#[test]
fn a_summary_row_keeps_its_columns_and_states_the_requested_period() {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.serialize(summary(Some(100.0)).row()).unwrap();
    w.serialize(summary(None).row()).unwrap();
    let text = String::from_utf8(w.into_inner().unwrap()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], COLUMNS);
    // A detuned rung states the period asked for; a run from before
    // detuning existed states the one it ran, and never `repeats`.
    assert!(lines[1].starts_with("7,sweep/p100ms,sweep,duty,in_phase,100.3,100.0,0.5,2,"));
    assert!(lines[2].starts_with("7,sweep/p100ms,sweep,duty,in_phase,100.3,100.3,0.5,2,"));
    let json = serde_json::to_value(summary(None)).unwrap();
    let keys: Vec<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys.len(), COLUMNS.split(',').count());
    assert!(!keys.contains(&"repeats") && !keys.contains(&"id"));
}

/// What the collator writes, a reader of `summary.csv` reads back whole
/// (the rack's and `compare`'s one reader, `rundir::summary`).
#[test]
fn a_summary_row_reads_back_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("summary.csv");
    let mut a = summary(Some(100.0));
    a.mean_ci95 = Some(crate::cycle::Bounds {
        lo: 1.2344,
        hi: 1.7,
        centre: 1.5,
    });
    a.verdict = Some("a verdict, with a comma".into());
    let b = summary(None);
    powerlab_rundir::summary::write_summary(&[a.row(), b.row()], &path).unwrap();
    let rows = powerlab_rundir::summary::read_summary(&path).unwrap();
    assert_eq!(rows, vec![a.row(), b.row()]);
    assert_eq!(rows[0].mean_ci95_lo_w, Some(1.234));
}

fn rung(
    label: &str,
    phase: &str,
    kind: PhaseKind,
    mode: Mode,
    duty: f64,
    repeat: u32,
    mean: f64,
) -> RungSummary {
    let mut r = summary(if kind == PhaseKind::Duty {
        Some(100.0)
    } else {
        None
    });
    r.rung.label = label.into();
    r.rung.phase = phase.into();
    r.rung.kind = kind;
    r.rung.mode = mode;
    r.rung.duty = duty;
    r.rung.repeat = repeat;
    if kind != PhaseKind::Duty {
        r.rung.period_ms = None;
    }
    r.mean_w = Some(mean);
    r.spread_w = Some(mean / 10.0);
    r
}

#[test]
fn distinct_rungs_of_one_phase_are_never_pooled_as_repeats() {
    // The NCCL sweep and the fabric rung share phase, kind and mode and
    // have no period; two duty fractions share a period. Each is its
    // own configuration: pooled, the sweep's 700 W and the fabric's
    // 300 W would read as one rung of 500 W with a wide interval.
    let rungs = vec![
        rung(
            "nccl/sweep",
            "nccl",
            PhaseKind::Nccl,
            Mode::InPhase,
            1.0,
            1,
            700.0,
        ),
        rung(
            "nccl/fabric",
            "nccl",
            PhaseKind::Nccl,
            Mode::InPhase,
            1.0,
            1,
            300.0,
        ),
        rung(
            "s/p100ms/in_phase/r1",
            "s",
            PhaseKind::Duty,
            Mode::InPhase,
            0.5,
            1,
            900.0,
        ),
        rung(
            "s/p100ms/in_phase/r2",
            "s",
            PhaseKind::Duty,
            Mode::InPhase,
            0.5,
            2,
            910.0,
        ),
        rung(
            "s/p100ms/staggered/r1",
            "s",
            PhaseKind::Duty,
            Mode::Staggered,
            0.5,
            1,
            880.0,
        ),
        rung(
            "s/p100ms/staggered/r2",
            "s",
            PhaseKind::Duty,
            Mode::Staggered,
            0.5,
            2,
            890.0,
        ),
        rung(
            "t/p100ms/in_phase",
            "s",
            PhaseKind::Duty,
            Mode::InPhase,
            0.25,
            1,
            500.0,
        ),
    ];
    let stats = repeat_stats(&rungs);
    let find = |l: &str| stats.iter().find(|s| s.label == l).unwrap();
    assert_eq!(stats.len(), 5);
    assert_eq!(
        (find("nccl/sweep").n, find("nccl/sweep").mean_w),
        (1, Some(700.0))
    );
    assert_eq!(
        (find("nccl/fabric").n, find("nccl/fabric").mean_w),
        (1, Some(300.0))
    );
    assert_eq!(
        (
            find("s/p100ms/in_phase").n,
            find("s/p100ms/in_phase").mean_w
        ),
        (2, Some(905.0))
    );
    assert_eq!(find("t/p100ms/in_phase").n, 1);
    // In phase meets staggered only at its own duty.
    let cmp = compare_modes(&rungs);
    assert_eq!(cmp.len(), 1);
    assert_eq!(
        (cmp[0].in_phase_mean_w, cmp[0].staggered_mean_w),
        (Some(905.0), Some(885.0))
    );
    assert_eq!(cmp[0].n, "2/2");
}
