#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! Mitigation rungs on the simulated node, under a paused tokio clock:
//! the calibration before the rung (its note), then the smoothed wave as
//! the simulated GPUs truly drew it.

use powerlab_campaign::{PhaseKind, Plan, Rung, expand, parse_str};
use powerlab_core::RunClock;
use powerlab_core::hw::Backend;
use powerlab_core::smoothing::SmoothingSpec;
use powerlab_core::units::NS_PER_MS;
use powerlab_rundir::{
    CalibrationOutcome, RunEvent, RunStatus, SmoothingNote, ToolInfo, smoothing_notes,
};
use powerlab_runner::coordinator::schedule_for;
use powerlab_runner::{NullObserver, Observer, RunOptions, StopLatch, StopReason, run_campaign};
use powerlab_sim::{Profile, SimBackend, SimOptions, Truth};

const EPOCH_NS: i64 = 1_700_000_000_000_000_000;

const CAMPAIGN: &str = r#"
[campaign]
name = "smooth"
gpus = "all"

[defaults]
warmup_s = 1
cooldown_s = 1

[[phase]]
kind = "duty"
name = "duty"
periods_ms = [200]
duty = 0.5
duration_s = 3
modes = ["in_phase"]
"#;

struct Ran {
    /// Rows of the raw files, and rows the samplers wrote.
    raw_rows: usize,
    samplers_rows: usize,
    status: RunStatus,
    plan: Plan,
    events: Vec<RunEvent>,
    truths: Vec<Truth>,
    limit_w: f64,
    _results: tempfile::TempDir,
}

/// The duty rung of the campaign, asking for `spec`.
fn plan_with(spec: Option<SmoothingSpec>) -> (powerlab_campaign::Campaign, Plan) {
    let campaign = parse_str("smooth.toml", CAMPAIGN).unwrap();
    let mut plan = expand(&campaign, 2, None).unwrap();
    for r in plan.rungs.iter_mut().filter(|r| r.kind == PhaseKind::Duty) {
        r.smoothing = spec;
    }
    (campaign, plan)
}

/// Raises its reason on the latch once the progress shows the calibration.
struct StopInCalibration(StopLatch);

impl Observer for StopInCalibration {
    fn event(&mut self, _: &RunEvent) {}
    fn progress(&mut self, _: i64, _: i64, label: &str) {
        if label.ends_with("(calibration)") {
            self.0
                .raise(StopReason::Interrupted("operator stop".into()));
        }
    }
    fn message(&mut self, _: &str) {}
}

async fn run(spec: Option<SmoothingSpec>, stop: StopLatch, stop_in_calibration: bool) -> Ran {
    let (campaign, plan) = plan_with(spec);
    let clock = RunClock::virtual_at(EPOCH_NS);
    let mut opts = SimOptions::new(Profile::h200(), 2);
    opts.step_us = 250;
    opts.record_truth = true;
    let limit_w = Profile::h200().power_limit_w;
    let mut backend = SimBackend::new(opts, clock);
    let node = backend.open().unwrap();
    let results = tempfile::tempdir().unwrap();
    let tool = ToolInfo {
        name: "powerlab".into(),
        version: "test".into(),
        git_rev: "test".into(),
    };
    let run_opts = RunOptions::new(results.path().to_path_buf(), tool);
    let mut stopper = StopInCalibration(stop.clone());
    let observer: &mut dyn Observer = if stop_in_calibration {
        &mut stopper
    } else {
        &mut NullObserver
    };
    let result = run_campaign(&campaign, &plan, node, clock, &run_opts, stop, observer)
        .await
        .unwrap();
    let events: Vec<RunEvent> = std::fs::read_to_string(result.run_dir.join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let raw_rows = std::fs::read_dir(result.run_dir.join("raw"))
        .unwrap()
        .map(|f| f.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "csv"))
        .map(|p| std::fs::read_to_string(p).unwrap().lines().count() - 1)
        .sum();
    Ran {
        raw_rows,
        samplers_rows: result.samplers.iter().map(|s| s.rows as usize).sum(),
        status: result.status,
        plan,
        events,
        truths: backend.truths(),
        limit_w,
        _results: results,
    }
}

/// The duty rung's period as planned (not quite the 200 ms asked: the
/// planner moves it off the sampling grid), ns.
fn period_ns(plan: &Plan) -> i64 {
    let rung = plan
        .rungs
        .iter()
        .find(|r| r.kind == PhaseKind::Duty)
        .unwrap();
    (rung.period_ms.unwrap().ms() * NS_PER_MS as f64).round() as i64
}

/// The duty rung's window: (epoch, end).
fn duty_window(ran: &Ran) -> (i64, i64) {
    duty_started(ran).unwrap()
}

/// The duty rung's window, if it started.
fn duty_started(ran: &Ran) -> Option<(i64, i64)> {
    ran.events.iter().find_map(|e| match e {
        RunEvent::RungStarted {
            rung,
            epoch_ns,
            end_ns,
            ..
        } if rung.kind == PhaseKind::Duty => Some((*epoch_ns, *end_ns)),
        _ => None,
    })
}

fn the_note(ran: &Ran) -> SmoothingNote {
    let notes = smoothing_notes(&ran.events);
    assert_eq!(notes.len(), 1, "one calibration, before the duty rung");
    notes.into_iter().next().unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_floor_is_calibrated_then_held_through_every_off_phase() {
    let spec = SmoothingSpec {
        floor_pct: 60.0,
        ..Default::default()
    };
    let ran = run(Some(spec), StopLatch::new(), false).await;
    assert_eq!(ran.status, RunStatus::Complete);
    let note = the_note(&ran);
    assert_eq!(note.outcome, CalibrationOutcome::Calibrated);
    let (epoch, end) = duty_window(&ran);
    assert!(note.start_ns < note.end_ns && note.end_ns < epoch);
    assert_eq!(note.gpus.len(), 2);
    for g in &note.gpus {
        // (a) every level measured, the draw rising with the level.
        assert_eq!(g.points.len(), 12, "{g:?}");
        // Monotone while under the limit; above it the board's cap pulls
        // the highest levels back (the calibration then uses the most
        // drawn so far, see `Calibration::level_for`).
        let under: Vec<_> = g.points.iter().take_while(|p| p.1 < g.limit_w).collect();
        assert!(under.len() >= 9, "{g:?}");
        assert!(under.windows(2).all(|w| w[1].1 > w[0].1), "{g:?}");
        assert!(
            g.points[0].0 == 0.0 && (g.idle_w - 90.0).abs() < 10.0,
            "{g:?}"
        );
        assert!(
            g.work_w > 650.0 && g.floor_level > 0.0 && g.notes.is_empty(),
            "{g:?}"
        );
        assert_eq!(g.limit_w, ran.limit_w);
    }
    // (b) the last 60 ms of each off-phase (after the fall settles), from
    // the second cycle on: each GPU within 5 % of 60 % of its limit.
    let floor_w = 0.6 * ran.limit_w;
    let period = period_ns(&ran.plan);
    let mut worst = 0.0f64;
    for truth in &ran.truths {
        let mut cycle = epoch + period;
        while cycle + period <= end {
            let w = truth
                .mean_between(cycle + period - 60 * NS_PER_MS, cycle + period)
                .unwrap();
            worst = worst.max((w - floor_w).abs() / floor_w);
            cycle += period;
        }
    }
    eprintln!(
        "floor: worst off-phase deviation {:.2} % of {floor_w} W",
        worst * 100.0
    );
    assert!(worst < 0.05, "worst deviation {worst}");
}

/// The 10 % and 90 % crossings of the swing from `lo` to `hi` W after
/// `from` (1 ms buckets, linearly interpolated), ns.
fn rise_10_90(truth: &Truth, from: i64, lo: f64, hi: f64) -> f64 {
    let i0 = ((from - truth.start_ns) / truth.step_ns) as usize;
    let cross = |frac: f64| {
        let level = lo + (hi - lo) * frac;
        let w = &truth.power_w[i0..];
        let j = w.iter().position(|p| f64::from(*p) >= level).unwrap();
        let (a, b) = (f64::from(w[j - 1]), f64::from(w[j]));
        (j as f64 - 1.0 + (level - a) / (b - a)) * truth.step_ns as f64
    };
    cross(0.9) - cross(0.1)
}

#[tokio::test(start_paused = true)]
async fn ramps_slow_each_rise_to_the_asked_rate() {
    let rate = 20_000.0;
    let spec = SmoothingSpec {
        ramp_up_w_per_s: Some(rate),
        ramp_down_w_per_s: Some(rate),
        ..Default::default()
    };
    let ran = run(Some(spec), StopLatch::new(), false).await;
    assert_eq!(ran.status, RunStatus::Complete);
    let note = the_note(&ran);
    let g = &note.gpus[0];
    assert!(
        g.ramp_up_ns > 0 && g.ramp_up_steps > 1 && g.ramp_down_steps > 1,
        "{g:?}"
    );
    // (c) the rise of gpu0 at its 5th cycle, over the calibrated swing
    // (idle to the work): 10-90 % takes 0.8 × swing / rate.
    let (epoch, _) = duty_window(&ran);
    let swing = g.work_w - g.idle_w;
    let want = 0.8 * swing / rate * 1e9;
    let rise = epoch + 5 * period_ns(&ran.plan);
    // Just before the rise the GPU sits at idle (the ramp down is done).
    let before = ran.truths[0]
        .mean_between(rise - 20 * NS_PER_MS, rise)
        .unwrap();
    assert!((before - g.idle_w).abs() < 10.0, "before the rise {before}");
    let got = rise_10_90(&ran.truths[0], rise, g.idle_w, g.work_w);
    eprintln!(
        "ramp: swing {swing:.0} W at {rate} W/s: 10-90 % {:.1} ms, asked {:.1} ms",
        got / 1e6,
        want / 1e6
    );
    // Measured 28.5 ms against 25.7 ms asked (+11 %): the demand ramps at
    // the rate, but the simulated board's own first-order rise (10 ms,
    // `tau_rise_ms`) lags the ramp's start by more than its end (there the
    // work's overshoot takes over), which stretches the 10-90 % by ~3 ms.
    // A plain rung's rise over the same swing takes 14.5 ms (checked below).
    assert!(
        got >= 0.95 * want && got < 1.15 * want,
        "10-90 % {got} ns against {want} ns"
    );
    let plain = run(None, StopLatch::new(), false).await;
    let (plain_epoch, _) = duty_window(&plain);
    let plain_rise = rise_10_90(
        &plain.truths[0],
        plain_epoch + 5 * period_ns(&plain.plan),
        g.idle_w,
        g.work_w,
    );
    eprintln!("plain rise over the same swing: {:.1} ms", plain_rise / 1e6);
    assert!(plain_rise < 0.6 * got);
}

#[test]
fn a_spec_asking_nothing_is_the_plain_rung() {
    // (d) no calibration, and the very schedule of a plain rung.
    let (_, plain) = plan_with(None);
    let (_, none) = plan_with(Some(SmoothingSpec::default()));
    let rung = |p: &Plan| -> Rung {
        p.rungs
            .iter()
            .find(|r| r.kind == PhaseKind::Duty)
            .unwrap()
            .clone()
    };
    for i in 0..2 {
        let a = schedule_for(&rung(&plain), i, EPOCH_NS, None).unwrap();
        let b = schedule_for(&rung(&none), i, EPOCH_NS, None).unwrap();
        assert_eq!(a, b);
    }
}

#[tokio::test(start_paused = true)]
async fn a_spec_asking_nothing_runs_no_calibration() {
    let ran = run(Some(SmoothingSpec::default()), StopLatch::new(), false).await;
    assert_eq!(ran.status, RunStatus::Complete);
    assert!(smoothing_notes(&ran.events).is_empty());
    assert!(ran.plan.rungs.iter().any(|r| r.smoothing.is_some()));
    // On virtual time the plain run draws the very same true power.
    let plain = run(None, StopLatch::new(), false).await;
    for (a, b) in ran.truths.iter().zip(&plain.truths) {
        assert_eq!(a.power_w, b.power_w);
    }
}

#[tokio::test(start_paused = true)]
async fn a_stop_during_the_calibration_ends_the_run_cleanly() {
    let spec = SmoothingSpec {
        floor_pct: 60.0,
        ..Default::default()
    };
    let ran = run(Some(spec), StopLatch::new(), true).await;
    assert!(
        matches!(&ran.status, RunStatus::Interrupted { reason } if reason.contains("operator stop")),
        "{:?}",
        ran.status
    );
    let note = the_note(&ran);
    assert_eq!(note.outcome, CalibrationOutcome::Interrupted);
    assert!(note.reason.as_deref().unwrap().contains("operator stop"));
    // The duty rung never started; the stop names it.
    assert!(duty_started(&ran).is_none());
    assert!(ran.events.iter().any(|e| matches!(e,
        RunEvent::Note { topic, detail, .. } if topic == powerlab_rundir::events::STOPPED_IN_RUNG_TOPIC
            && detail["stopped_at_ns"].is_null())));
    // Every row the samplers took is on disk.
    assert!(ran.samplers_rows > 0);
    assert_eq!(ran.raw_rows, ran.samplers_rows);
}

#[tokio::test(start_paused = true)]
async fn smoothing_on_a_rung_without_a_square_wave_is_refused_before_any_load() {
    let text = "[campaign]\nname = \"s\"\ngpus = \"all\"\n\n[[phase]]\nkind = \"sustained\"\nname = \"sustained\"\nduration_s = 2\n";
    let campaign = parse_str("s.toml", text).unwrap();
    let mut plan = expand(&campaign, 2, None).unwrap();
    let sustained = plan
        .rungs
        .iter_mut()
        .find(|r| r.kind == PhaseKind::Sustained)
        .unwrap();
    sustained.smoothing = Some(SmoothingSpec {
        floor_pct: 60.0,
        ..Default::default()
    });
    let clock = RunClock::virtual_at(EPOCH_NS);
    let node = SimBackend::new(SimOptions::new(Profile::h200(), 2), clock)
        .open()
        .unwrap();
    let results = tempfile::tempdir().unwrap();
    let tool = ToolInfo {
        name: "powerlab".into(),
        version: "test".into(),
        git_rev: "test".into(),
    };
    let run_opts = RunOptions::new(results.path().to_path_buf(), tool);
    let err = run_campaign(
        &campaign,
        &plan,
        node,
        clock,
        &run_opts,
        StopLatch::new(),
        &mut NullObserver,
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(err.contains("only a duty"), "{err}");
}
