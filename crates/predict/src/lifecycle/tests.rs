//! The study on a synthetic job: a square iteration, edges of known
//! shape, against arithmetic done here.

use super::study::{NoSink, Sink, study};
use super::timeline::EventKind;
use super::*;
use crate::waveform::Layout;
use powerlab_analysis::lifecycle::{EdgeKind, LifecycleEdge, Spread};
use powerlab_campaign::schedule::{Checkpoint, StartEdge};

fn spread(v: f64) -> Spread {
    Spread {
        n: 10,
        mean: v,
        sd: 0.0,
        min: v,
        max: v,
    }
}

/// An edge from `from` to `to` W, linear over `ramp_ms` after the event.
fn edge(kind: EdgeKind, from: f64, to: f64, ramp_ms: f64) -> LifecycleEdge {
    let step = 10.0;
    let shape_w = (-50..300)
        .map(|j| {
            let t = f64::from(j) * step;
            from + (to - from) * (t / ramp_ms).clamp(0.0, 1.0)
        })
        .collect();
    LifecycleEdge {
        kind,
        rungs: vec!["x".into()],
        repeats: 10,
        gpus: 1,
        before_w: spread(from),
        after_w: spread(to),
        step_w: spread(to - from),
        delay_ms: spread(0.0),
        t10_90_ms: spread(0.8 * ramp_ms),
        resolution_ms: 20.0,
        spacing_ms: 20.0,
        shape_w,
        shape_step_ms: step,
        shape_t0_ms: -500.0,
        caveat: None,
    }
}

fn measured() -> Vec<LifecycleEdge> {
    vec![
        edge(EdgeKind::StartCold, 60.0, 550.0, 2000.0),
        edge(EdgeKind::StartHeld, 90.0, 700.0, 100.0),
        edge(EdgeKind::StopHeld, 700.0, 90.0, 100.0),
        edge(EdgeKind::StopKill, 550.0, 60.0, 200.0),
        edge(EdgeKind::StopExit, 550.0, 60.0, 400.0),
    ]
}

fn lc(checkpoint: bool) -> Lifecycle {
    Lifecycle {
        span_s: 400.0,
        resolution_ms: 10.0,
        start_at_s: 20.0,
        start: StartEdge::Measured,
        start_spread_ms: 0.0,
        checkpoint: checkpoint.then_some(Checkpoint {
            every_s: 100.0,
            duration_s: 30.0,
            w_per_gpu: None,
        }),
        crash_at_s: vec![250.0],
        crash_per_hour: 0.0,
        restart_after_s: 60.0,
        end_at_s: Some(380.0),
        idle_w_per_gpu: None,
    }
}

fn plan_of(l: &Lifecycle, gpus: u64) -> Plan {
    // 1 s iteration at 0.5 ms: 700 W for 75 %, 100 W after.
    let it: Vec<f64> = (0..2000)
        .map(|j| if j < 1500 { 700.0 } else { 100.0 })
        .collect();
    let layout = Layout {
        nodes: gpus / 8,
        gpus,
        groups: 1,
        spread: crate::waveform::normal_bins(4.0),
        stragglers: None,
        period_ms: 1000.0,
        step_ms: 0.5,
        per_output: 20,
        seed: 5,
    };
    let ch = Channel {
        label: "plain".into(),
        iterations: vec![it],
        layout,
    };
    plan(l, &measured(), gpus, 1000.0, 5, vec![ch]).unwrap()
}

struct Keep(Vec<f64>);

impl Sink for Keep {
    fn row(&mut self, _: f64, mw: &[f64]) -> std::io::Result<()> {
        self.0.push(mw[0]);
        Ok(())
    }
}

#[test]
fn a_checkpoint_costs_exactly_its_energy_and_the_crash_steps_by_the_kill_edge() {
    let gpus = 100_000;
    let with = study(&plan_of(&lc(true), gpus), &mut NoSink).unwrap();
    let without = study(&plan_of(&lc(false), gpus), &mut NoSink).unwrap();
    let (a, b) = (&with.channels[0], &without.channels[0]);
    let ckpt: f64 = a
        .events
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::CheckpointBegin | EventKind::CheckpointEnd
            )
        })
        .map(|e| e.deficit_mwh)
        .sum();
    let lost = b.energy_mwh - a.energy_mwh;
    assert!(
        (lost - ckpt).abs() < 1e-9 * b.energy_mwh,
        "{lost} vs {ckpt}"
    );
    // One checkpoint (120 s; the next would be at the crash) of 30 s at
    // (running mean 550 − 90 W) × 1e5 GPUs, give or take the edges' 100 ms.
    let begins = a
        .events
        .iter()
        .filter(|e| e.kind == EventKind::CheckpointBegin)
        .count();
    assert_eq!(begins, 1);
    let flat = 30.0 / 3600.0 * (550.0 - 90.0) * gpus as f64 / 1e6;
    assert!((ckpt - flat).abs() < 0.01 * flat, "{ckpt} vs {flat}");
    // The crash: every GPU from the running mean to the kill edge's idle.
    let crash = a
        .events
        .iter()
        .find(|e| e.kind == EventKind::Crash)
        .unwrap();
    let want = -(550.0 - 60.0) * gpus as f64 / 1e6;
    assert!(
        (crash.step_mw() - want).abs() < 0.01 * want.abs(),
        "{} vs {want}",
        crash.step_mw()
    );
    assert!(
        (crash.t10_90_ms - 160.0).abs() <= 10.0,
        "{}",
        crash.t10_90_ms
    );
}

#[test]
fn the_streamed_figures_are_the_rows_figures() {
    let p = plan_of(&lc(true), 8000);
    let mut keep = Keep(Vec::new());
    let s = study(&p, &mut keep).unwrap();
    let rows = keep.0;
    assert_eq!(rows.len() as u64, s.points);
    let c = &s.channels[0];
    let mean = rows.iter().sum::<f64>() / rows.len() as f64;
    assert!((mean - c.mean_mw).abs() < 1e-12 * mean);
    assert_eq!(c.peak_mw, rows.iter().copied().fold(f64::MIN, f64::max));
    // The fastest 1 s fall: consecutive 1 s means (100 points), by brute force.
    let means: Vec<f64> = (0..rows.len() - 99)
        .map(|i| rows[i..i + 100].iter().sum::<f64>() / 100.0)
        .collect();
    let fall = (100..means.len())
        .map(|i| means[i - 100] - means[i])
        .fold(0.0, f64::max);
    let (_, _, down) = c.ramps[0];
    assert!(
        (down.unwrap() - fall).abs() < 1e-9 * fall.max(1.0),
        "{down:?} vs {fall}"
    );
    // Idle before the start, at the kill edge's level.
    assert!((rows[100] - 8000.0 * 60.0 / 1e6).abs() < 1e-9);
    let states: f64 = s.states.iter().map(|x| x.1).sum();
    assert!((states - 400.0).abs() < 1e-9);
}

#[test]
fn a_lifecycle_without_a_measured_kill_edge_is_refused_by_name() {
    let l = lc(true);
    let only: Vec<LifecycleEdge> = measured()
        .into_iter()
        .filter(|e| e.kind != EdgeKind::StopKill)
        .collect();
    let err = plan(&l, &only, 8, 1000.0, 1, Vec::new()).unwrap_err();
    assert!(
        err.contains("stop_kill") && err.contains("sigkill"),
        "{err}"
    );
}

#[test]
fn a_crash_during_a_start_falls_from_the_share_started_never_jumps_up() {
    // A cold start that ramps over 20 s (an H100's took 8–14 s to load);
    // a crash 11 s into it.
    let mut l = lc(false);
    l.crash_at_s = vec![31.0];
    let mut p = plan_of(&l, 8000);
    p.edges.start = edges::Transition::ramp(20.0, 10.0);
    // A flat job: the running share alone moves the facility.
    p.channels[0].iterations = vec![vec![550.0; 2000]];
    let mut keep = Keep(Vec::new());
    study(&p, &mut keep).unwrap();
    let rows = keep.0;
    // 10 ms points: 31 s is point 3100.
    let at_crash = rows[3099];
    let after = rows[3100..3500].iter().copied().fold(f64::MIN, f64::max);
    assert!(
        after <= at_crash + 1e-9,
        "{after} after the crash, {at_crash} at it"
    );
    // About half the job had started; the crash falls from there to idle.
    let idle = 8000.0 * 60.0 / 1e6;
    let running = 8000.0 * 550.0 / 1e6;
    assert!(
        (at_crash - idle) / (running - idle) > 0.4 && at_crash < running,
        "{at_crash}"
    );
    assert!((rows[3400] - idle).abs() < 1e-9, "{}", rows[3400]);
}

#[test]
fn a_window_shorter_than_the_resolution_is_not_measurable_not_judged() {
    let mut p = plan_of(&lc(true), 8000);
    p.windows_ms = vec![5.0, 1000.0];
    let s = study(&p, &mut NoSink).unwrap();
    let supply = powerlab_campaign::Supply {
        rated_w: None,
        excursions: vec![
            powerlab_campaign::Excursion {
                duration_ms: 5.0,
                watts: 1.0,
            },
            powerlab_campaign::Excursion {
                duration_ms: 1000.0,
                watts: 1e12,
            },
        ],
    };
    let v = judge::judge(&s, None, Some(&supply), 8000);
    let five = v
        .iter()
        .find(|x| x.item.starts_with("highest 5 ms"))
        .unwrap();
    assert!(five.value.is_nan() && five.pass.is_none(), "{five:?}");
    let second = v.iter().find(|x| x.item == "highest 1 s mean").unwrap();
    assert_eq!(second.pass, Some(true));
}

#[test]
fn a_dropped_restart_says_how_far_before_the_end_it_would_come() {
    // The crash at 318 s restarts 60 s later, at 378 s: 2 s before the
    // end at 380 s (it read "8 s after the job's end").
    let mut l = lc(false);
    l.crash_at_s = vec![318.0];
    let (_, notes) = super::timeline::timeline(&l, 5).unwrap();
    let note = notes
        .iter()
        .find(|n| n.contains("does not restart"))
        .unwrap_or_else(|| panic!("{notes:?}"));
    assert!(note.contains("2 s before the job's end at 380 s"), "{note}");
    assert!(!note.contains("after the job's end"), "{note}");
}

/// A `[grid]` with only `max_step_mw` declared.
fn step_limit(mw: f64) -> powerlab_campaign::Grid {
    powerlab_campaign::Grid {
        gpus: None,
        ramp_up_w_per_s_per_gpu: None,
        ramp_up_mw_per_s: None,
        ramp_down_w_per_s_per_gpu: None,
        ramp_down_mw_per_s: None,
        band_hz: [0.1, 20.0],
        max_band_share_pct: None,
        max_dynamic_range_pct: None,
        max_dynamic_range_w: None,
        modes: Vec::new(),
        retune_iteration_pct: None,
        max_step_mw: Some(mw),
        system: None,
        ramp_up_mw_per_min: None,
        ramp_down_mw_per_min: None,
        max_load_loss_mw: None,
    }
}

#[test]
fn a_crash_in_compute_is_judged_from_the_plateau_not_the_iteration_mean() {
    // The crash at 250.5 s comes halfway into an iteration's 750 ms at
    // 700 W: the waveform falls from the plateau to the kill's 60 W idle,
    // (700 − 60) W × 1e5 = 64 MW, where the means either side differ by
    // (550 − 60) W × 1e5 = 49 MW. A 55 MW limit holds the means and not
    // the instant.
    let gpus = 100_000;
    let mut l = lc(false);
    l.crash_at_s = vec![250.5];
    let s = study(&plan_of(&l, gpus), &mut NoSink).unwrap();
    let crash = s.channels[0]
        .events
        .iter()
        .find(|e| e.kind == EventKind::Crash)
        .unwrap();
    assert!((-crash.step_mw() - 49.0).abs() < 1.0, "{crash:?}");
    let v = judge::judge(&s, Some(&step_limit(55.0)), None, gpus);
    let down = v
        .iter()
        .find(|x| x.item.starts_with("largest step down"))
        .unwrap();
    assert!((down.value - 64.0).abs() < 2.0, "{down:?}");
    assert_eq!(down.pass, Some(false), "{down:?}");
    // The mean-to-mean figure is stated beside it.
    assert!(down.item.contains("49."), "{}", down.item);
}
