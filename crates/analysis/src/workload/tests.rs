#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! Workload rungs on synthetic series: a simulated training job drawn on a
//! first-order board, sampled as the H200's buffered path samples it (a
//! 6 ms average ending 1 ms before its timestamp, every 20 ms, with noise).

use super::*;
use crate::cycle::{NoCycle, NodeCycle};
use crate::fft::Planner;
use crate::sensor::model::SensorModel;
use powerlab_core::Instrument;
use powerlab_core::hw::{BackendInfo, Capability, GpuIdentity};
use powerlab_core::smoothing::Draw;
use powerlab_core::training::TrainingSpec;
use powerlab_rundir::{Manifest, Mode, PhaseKind, RunStatus, RungInfo, ToolInfo};
use powerlab_samples::load::{Run, RungWindow};
use powerlab_samples::series::SeriesSet;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

const MS: i64 = 1_000_000;
/// Truth resolution: 0.1 ms.
const STEP: i64 = 100_000;
/// The measured window: 2 s to 62 s.
const WINDOW: (i64, i64) = (2_000 * MS, 62_000 * MS);
const LEN: i64 = 63_000 * MS;

/// A board: idle and full-load draw, first-order rise and fall.
const IDLE_W: f64 = 120.0;
const ON_W: f64 = 700.0;
const TAU_RISE_MS: f64 = 10.0;
const TAU_FALL_MS: f64 = 12.0;

fn job(period_ms: f64, jitter_pct: f64, seed: u64) -> TrainingSpec {
    TrainingSpec {
        iteration_ns: (period_ms * 1e6) as i64,
        jitter_pct,
        seed,
        ..TrainingSpec::default()
    }
}

/// The job's true draw from 0 to [`LEN`] at [`STEP`], its iteration 0 at
/// `origin`.
fn truth(j: &TrainingSpec, origin: i64) -> Vec<f64> {
    let (ar, af) = (
        1.0 - (-0.1 / TAU_RISE_MS).exp(),
        1.0 - (-0.1 / TAU_FALL_MS).exp(),
    );
    let mut p = IDLE_W;
    (0..LEN / STEP)
        .map(|k| {
            let target = match j.draw_at(origin, k * STEP) {
                Draw::Work => ON_W,
                Draw::Level(l) => IDLE_W + l * (ON_W - IDLE_W),
            };
            p += (target - p) * if target > p { ar } else { af };
            p
        })
        .collect()
}

/// Buffered samples of `truth`: every `spacing_ns` from `phase_ns`, each
/// the mean over the 6 ms ending 1 ms before its timestamp, plus noise.
fn sampled(
    truth: &[f64],
    spacing_ns: f64,
    phase_ns: i64,
    noise_w: f64,
    seed: u64,
) -> Vec<(i64, f64)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let noise = Normal::new(0.0, noise_w.max(1e-12)).unwrap();
    (0..)
        .map(|j| phase_ns + (j as f64 * spacing_ns) as i64)
        .take_while(|t| *t < LEN)
        .filter(|t| *t >= 7 * MS)
        .map(|t| {
            let (a, b) = (((t - 7 * MS) / STEP) as usize, ((t - MS) / STEP) as usize);
            let mean = truth[a..b].iter().sum::<f64>() / (b - a) as f64;
            (t, mean + noise.sample(&mut rng))
        })
        .collect()
}

fn find(samples: &[(i64, f64)]) -> Result<GpuIteration, NoPeriod> {
    find_iteration(&mut Planner::new(), "gpu0", samples, WINDOW, 6.0, 1.0)
}

#[test]
fn the_period_is_found_within_half_a_percent_at_1_to_3_percent_jitter() {
    for (period_ms, spacing) in [
        (240.0, 20.0 * MS as f64),
        (243.0, 20.0001 * MS as f64),
        (611.3, 20.0 * MS as f64),
    ] {
        for jitter in [1.0, 2.0, 3.0] {
            let j = job(period_ms, jitter, 7);
            let s = sampled(&truth(&j, 500 * MS), spacing, 3 * MS, 1.5, 1);
            let it = find(&s).unwrap();
            let err = it.period_ms / period_ms - 1.0;
            eprintln!(
                "P {period_ms} ms, jitter {jitter} %: found {:.3} ± {:.3} ms ({:+.4} %), jitter {:.2} ms, cycles {}, on {:.3}, lag {:.1} ms, autocorr {:.2} ms ({:.2})",
                it.period_ms,
                it.period_ci95_ms,
                100.0 * err,
                it.jitter_ms,
                it.cycles,
                it.on_fraction,
                it.lag_ms,
                it.autocorr_period_ms,
                it.autocorr_peak
            );
            assert!(err.abs() < 0.005, "{period_ms} ms at {jitter} %: {it:?}");
            // The job's mean period is the declared one (starts do not
            // accumulate): within the stated interval, with room for the
            // draw's own finite sample.
            assert!(
                (it.period_ms - period_ms).abs() <= 2.0 * it.period_ci95_ms,
                "{it:?}"
            );
            let expected = (WINDOW.1 - WINDOW.0) as f64 / (period_ms * 1e6);
            assert!(it.cycles as f64 >= 0.95 * expected.floor(), "{it:?}");
            // Above mid-level: the compute pass (its optimizer step, at
            // 0.55 of the range, included).
            assert!((it.on_fraction - 0.575).abs() < 0.04, "{it:?}");
            assert!(it.jitter_ms > 0.5 * jitter / 100.0 * period_ms, "{it:?}");
            assert!(
                it.jitter_ms < 3.0 * jitter / 100.0 * period_ms + 5.0,
                "{it:?}"
            );
        }
    }
}

#[test]
fn a_flat_job_or_noise_has_no_period() {
    // Back-to-back steps: the compute pass fills the period.
    let flat = TrainingSpec {
        compute_fraction: 1.0,
        ..job(240.0, 1.0, 3)
    };
    let s = sampled(&truth(&flat, 0), 20.0 * MS as f64, MS, 1.5, 2);
    assert!(
        matches!(find(&s), Err(NoPeriod::Flat { .. })),
        "{:?}",
        find(&s)
    );
    // White noise about 400 W, ±60 W.
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let n = Normal::new(400.0, 60.0).unwrap();
    let noise: Vec<(i64, f64)> = (0..3150)
        .map(|j| (j * 20 * MS, n.sample(&mut rng)))
        .collect();
    let e = find(&noise).unwrap_err();
    assert!(matches!(e, NoPeriod::NoPeak { .. }), "{e}");
    assert!(e.to_string().starts_with("aperiodic"), "{e}");
    // A random telegraph: on and off for exponential times (mean 150 ms).
    let exp = rand_distr::Exp::new(1.0 / 150.0).unwrap();
    let (mut t, mut on, mut tele) = (0.0f64, false, Vec::new());
    let mut switch = exp.sample(&mut rng);
    for j in 0..3150 {
        let ts = j as f64 * 20.0;
        while t + switch < ts {
            t += switch;
            on = !on;
            switch = exp.sample(&mut rng);
        }
        tele.push((j * 20 * MS, if on { 700.0 } else { 120.0 }));
    }
    let e = find(&tele).unwrap_err();
    eprintln!("telegraph: {e}");
    // Too few samples.
    assert!(matches!(
        find(&s[..10]),
        Err(NoPeriod::TooFewSamples { .. })
    ));
}

/// A run of `keys` GPUs with one workload rung over [`WINDOW`].
fn run_of(keys: &[String]) -> Run {
    let gpus = keys
        .iter()
        .enumerate()
        .map(|(i, k)| GpuIdentity {
            key: k.clone(),
            uuid: format!("GPU-{i}"),
            name: "t".into(),
            nvml_index: i as u32,
            power_limit_w: 700.0,
            power_smoothing: Default::default(),
        })
        .collect();
    let manifest = Manifest {
        format_version: 1,
        seal: None,
        tool: ToolInfo {
            name: "t".into(),
            version: "0".into(),
            git_rev: "x".into(),
        },
        campaign: "w".into(),
        campaign_resolved: serde_json::json!({}),
        plan: serde_json::json!({}),
        backend: BackendInfo {
            backend: "test".into(),
            node_id: "node".into(),
            host: "node".into(),
            gpus,
            driver: "t".into(),
            nccl: Capability::Present("x".into()),
        },
        clock: "t".into(),
        started_ns: 0,
        ended_ns: Some(LEN),
        started_utc: "t".into(),
        status: RunStatus::Complete,
        allow_unhealthy: false,
        command: vec![],
        raw_index: false,
        checksums: Vec::new(),
        sensor: None,
        gpu_binding: None,
    };
    let info = RungInfo {
        id: 3,
        label: "job".into(),
        phase: "job".into(),
        kind: PhaseKind::Workload,
        mode: Mode::InPhase,
        period_ms: None,
        nominal_period_ms: None,
        duty: 1.0,
        repeat: 1,
        repeats: 1,
        no_context: false,
        swinging: None,
        smoothing: None,
        workload: None,
    };
    Run {
        campaign: powerlab_samples::campaign::RunCampaign::of(
            &manifest.campaign_resolved,
            std::path::Path::new("manifest.json"),
        )
        .unwrap(),
        manifest,
        events: Vec::new(),
        rungs: vec![RungWindow {
            info,
            epoch_ns: WINDOW.0 - 1_000 * MS,
            measure_from_ns: WINDOW.0,
            end_ns: WINDOW.1,
            stopped_from_ns: None,
            records_end: false,
            offsets_ns: vec![0; keys.len()],
            start_error_ns: None,
            barrier_ok: Some(true),
            lead_ns: None,
        }],
        grid_ns: 10 * MS,
        series: keys
            .iter()
            .map(|k| ("node".to_string(), k.clone()))
            .collect(),
        missing_rungs: Vec::new(),
    }
}

/// The truth's node cycle: every GPU's true draw folded at the job's true
/// iteration starts inside the window, each iteration up to the next one's
/// start (0.5 ms bins over the mean period).
fn true_cycle(j: &TrainingSpec, origin: i64, truths: &[Vec<f64>]) -> Vec<f64> {
    let bins = (j.iteration_ns / (5 * STEP)) as usize;
    let (mut sum, mut cnt) = (vec![0.0; bins], vec![0.0; bins]);
    let k0 = (WINDOW.0 - origin) / j.iteration_ns + 1;
    let k1 = (WINDOW.1 - origin) / j.iteration_ns - 1;
    for k in k0..k1 {
        let (s, next) = (
            j.iteration_start_ns(origin, k),
            j.iteration_start_ns(origin, k + 1),
        );
        for b in 0..bins {
            let t = s + b as i64 * 5 * STEP;
            if t >= next {
                break;
            }
            sum[b] += truths.iter().map(|x| x[(t / STEP) as usize]).sum::<f64>();
            cnt[b] += 1.0;
        }
    }
    sum.iter()
        .zip(&cnt)
        .filter(|(_, c)| **c > 0.0)
        .map(|(s, c)| s / c)
        .collect()
}

/// The truth's mean over the window.
fn true_mean(truths: &[Vec<f64>]) -> f64 {
    let (a, b) = ((WINDOW.0 / STEP) as usize, (WINDOW.1 / STEP) as usize);
    truths
        .iter()
        .map(|t| t[a..b].iter().sum::<f64>() / (b - a) as f64)
        .sum()
}

fn swing(v: &[f64]) -> f64 {
    powerlab_samples::stats::quantile(v, 0.9).unwrap()
        - powerlab_samples::stats::quantile(v, 0.1).unwrap()
}

#[test]
fn a_jittered_fold_keeps_the_swing() {
    let keys: Vec<String> = (0..2).map(|i| format!("gpu{i}")).collect();
    let run = run_of(&keys);
    let model = SensorModel::nominal("t", &keys);
    for jitter in [1.0, 3.0, 5.0] {
        let j = job(243.0, jitter, 11);
        let origin = 400 * MS;
        let t = truth(&j, origin);
        let series = SeriesSet::of(keys.iter().enumerate().map(|(i, k)| {
            let s = sampled(
                &t,
                20.0001 * MS as f64,
                (3 + 7 * i as i64) * MS,
                1.5,
                i as u64,
            );
            (("node".to_string(), k.clone(), Instrument::BufferedW), s)
        }));
        let (w, c) = analyse_rung(&mut Planner::new(), &run, &run.rungs[0], &series, &model);
        let found = w.found.clone().unwrap();
        let c: NodeCycle = c.unwrap().unwrap();
        let tc = true_cycle(&j, origin, &[t.clone(), t.clone()]);
        let (true_mean, true_swing) = (true_mean(&[t.clone(), t.clone()]), swing(&tc));
        let got_swing = c.stats.p90_w - c.stats.p10_w;
        eprintln!(
            "jitter {jitter} %: period {:.3} ± {:.3} ms, jitter {:.2} ms, on {:.3}; mean {:.1} W vs {true_mean:.1}; swing {got_swing:.1} W vs {true_swing:.1}; peak {:.1}; coverage {:.2}",
            found.period_ms,
            found.period_ci95_ms,
            found.jitter_ms,
            found.on_fraction,
            c.stats.mean_w,
            c.stats.peak_w,
            c.coverage
        );
        assert!((found.period_ms / 243.0 - 1.0).abs() < 0.005, "{found:?}");
        assert!((c.stats.mean_w / true_mean - 1.0).abs() < 0.01, "{c:?}");
        assert!(
            (got_swing / true_swing - 1.0).abs() < 0.05,
            "{got_swing} vs {true_swing}"
        );
        // Each GPU's own cycle starts at its iteration's start: the rise is
        // in its first tenth, not wrapped around to its end.
        for (_, v) in &c.gpu_cycles {
            let m = v.len();
            let mid = 0.5 * (IDLE_W + ON_W);
            let first_above = v.iter().position(|x| *x > mid).unwrap();
            assert!(first_above < m / 10, "{first_above} of {m}");
        }
    }
}

/// The default job (240 ms, 1 % jitter) on an exact 20 ms sample grid: its
/// starts walk only ±4 ms over the grid, so the samples see 30 % of the
/// iteration. The period is found; the fold is refused with the verdict a
/// phase-locked duty rung gets. At 2 % the starts walk far enough.
#[test]
fn a_job_locked_to_the_sample_grid_has_a_period_but_no_fold() {
    let keys: Vec<String> = (0..2).map(|i| format!("gpu{i}")).collect();
    let run = run_of(&keys);
    let model = SensorModel::nominal("t", &keys);
    for (jitter, folds) in [(1.0, false), (2.0, true)] {
        let t = truth(&job(240.0, jitter, 11), 400 * MS);
        let series = SeriesSet::of(keys.iter().enumerate().map(|(i, k)| {
            let s = sampled(&t, 20.0 * MS as f64, (3 + 7 * i as i64) * MS, 1.5, i as u64);
            (("node".to_string(), k.clone(), Instrument::BufferedW), s)
        }));
        let (w, c) = analyse_rung(&mut Planner::new(), &run, &run.rungs[0], &series, &model);
        assert!((w.found.unwrap().period_ms / 240.0 - 1.0).abs() < 0.001);
        match c.unwrap() {
            Ok(c) => assert!(folds, "{jitter} %: {c:?}"),
            Err(NoCycle::Verdict(v)) => {
                assert!(!folds && v.starts_with("phase-locked"), "{jitter} %: {v}")
            }
            Err(e) => panic!("{e:?}"),
        }
    }
}
