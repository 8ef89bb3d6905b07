#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! The composed node cycle against a known true waveform, with sample
//! clocks like the H200's: every GPU on its own phase of a 20 ms grid,
//! readings jittered by ±3 ms now and then, readings dropped on every GPU
//! at once, each reading a 6 ms average ending 1 ms before its timestamp
//! (the model the collator assumes for a GPU it has no profile for).
//! In phase and at random offsets, periods from 2 s to 50 ms as the
//! planner detunes them for the 7 s window.

use crate::common;
use powerlab_core::hw::EdgeRecord;
use powerlab_core::shape::EdgeKind;
use powerlab_core::{Instrument, Sample};
use powerlab_rundir::{EdgeWriter, EventLog, Mode, PhaseKind, RunDir, RunEvent, RungInfo};
use proptest::prelude::*;

const T0: i64 = 1_795_997_027_000_000_000;
const MS: i64 = 1_000_000;
/// Truth resolution: 0.1 ms.
const STEP: i64 = 100_000;

/// One GPU's true power at 0.1 ms over the run: a square wave between
/// `idle` and `on` W with first-order rise and fall, starting at `offset`.
fn truth(
    len: usize,
    period: i64,
    offset: i64,
    idle: f64,
    on: f64,
    tau_rise_ms: f64,
    tau_fall_ms: f64,
) -> Vec<f64> {
    let mut p = idle;
    let (ar, af) = (
        1.0 - (-0.1 / tau_rise_ms).exp(),
        1.0 - (-0.1 / tau_fall_ms).exp(),
    );
    (0..len)
        .map(|k| {
            let t = k as i64 * STEP;
            let phase = (t - offset).rem_euclid(period);
            let target = if phase < period / 2 { on } else { idle };
            p += (target - p) * if target > p { ar } else { af };
            p
        })
        .collect()
}

#[derive(Debug, Clone)]
struct Case {
    period: i64,
    offsets: Vec<i64>,
    phases: Vec<i64>,
    taus: Vec<(f64, f64)>,
    seed: u64,
}

/// Writes the run directory; returns it and the true node power over the
/// measured window at 1 ms.
fn write_case(root: &std::path::Path, c: &Case) -> (std::path::PathBuf, Vec<f64>) {
    let n = c.offsets.len();
    let dur_ms = 9_000i64;
    let len = (dur_ms * MS / STEP) as usize;
    let epoch = 500 * MS;
    let (from, to) = (epoch + 1_000 * MS, epoch + 8_000 * MS);
    let keys: Vec<String> = (0..n).map(|i| format!("gpu{i}")).collect();
    let dir = RunDir::create(root, "composed", "node", T0).unwrap();
    common::manifest("composed", &keys, T0, T0 + dur_ms * MS)
        .write(&dir.manifest())
        .unwrap();
    let mut ev = EventLog::create(&dir.events()).unwrap();
    let period_ms = c.period as f64 / 1e6;
    let rung = RungInfo {
        id: 0,
        label: "d".into(),
        phase: "d".into(),
        kind: PhaseKind::Duty,
        mode: Mode::Staggered,
        period_ms: Some(period_ms.into()),
        nominal_period_ms: None,
        duty: 0.5,
        repeat: 1,
        repeats: 1,
        no_context: false,
        swinging: None,
        smoothing: None,
        workload: None,
    };
    ev.append(&RunEvent::RungStarted {
        ts_ns: T0,
        rung,
        epoch_ns: T0 + epoch,
        measure_from_ns: T0 + from,
        end_ns: T0 + to,
        offsets_ns: c.offsets.clone(),
        gpus: keys.clone(),
    })
    .unwrap();
    let mut edges = EdgeWriter::create(&dir.edges()).unwrap();
    let mut rng = c.seed;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng >> 11) as f64 / (1u64 << 53) as f64
    };
    // Node-wide dropped readings: about one a second.
    let drops: Vec<i64> = (0..dur_ms / 1000)
        .map(|s| s * 1000 * MS + (next() * 1e9) as i64)
        .collect();
    let mut node = vec![0.0; len];
    for (i, key) in keys.iter().enumerate() {
        let (tr, tf) = c.taus[i];
        let w = truth(len, c.period, epoch + c.offsets[i], 120.0, 700.0, tr, tf);
        for (k, v) in w.iter().enumerate() {
            node[k] += v;
        }
        // Readings: own phase on a 20 ms grid, jittered, 6 ms windows ending 1 ms before.
        let mut samples = Vec::new();
        let mut g = c.phases[i];
        while g + 30 * MS < dur_ms * MS {
            let u = next();
            let jitter = if u < 0.64 {
                0
            } else if u < 0.82 {
                -3 * MS
            } else {
                3 * MS
            };
            let t = g + jitter;
            g += 20 * MS;
            if drops.iter().any(|d| *d <= t && t - *d < 20 * MS) {
                continue;
            }
            if t < 8 * MS {
                continue;
            }
            let (a, b) = (((t - 7 * MS) / STEP) as usize, ((t - MS) / STEP) as usize);
            if b >= len {
                continue;
            }
            let value = w[a..b].iter().sum::<f64>() / (b - a) as f64;
            samples.push(Sample {
                ts_ns: T0 + t,
                instrument: Instrument::BufferedW,
                value,
            });
        }
        common::write_raw(&dir, key, &samples);
        // The recorded edges: every rise and fall of the window, a few µs late.
        let mut recs = vec![EdgeRecord {
            index: 0,
            kind: EdgeKind::Start,
            intended_ns: T0 + epoch,
            achieved_ns: T0 + epoch + 2_000,
        }];
        let mut k = 0;
        loop {
            let rise = epoch + c.offsets[i] + k * c.period;
            if rise >= dur_ms * MS {
                break;
            }
            for (kind, t) in [
                (EdgeKind::Rise, rise),
                (EdgeKind::Fall, rise + c.period / 2),
            ] {
                if t > epoch && t < epoch + 8_000 * MS {
                    recs.push(EdgeRecord {
                        index: recs.len() as u32,
                        kind,
                        intended_ns: T0 + t,
                        achieved_ns: T0 + t + (next() * 5_000.0) as i64,
                    });
                }
            }
            k += 1;
        }
        edges.write(0, key, &recs).unwrap();
    }
    // The true node at 1 ms over the measured window.
    let per_ms = (MS / STEP) as usize;
    let window: Vec<f64> = (from / MS..to / MS)
        .map(|ms| {
            node[ms as usize * per_ms..(ms as usize + 1) * per_ms]
                .iter()
                .sum::<f64>()
                / per_ms as f64
        })
        .collect();
    (dir.path, window)
}

/// `x` (1 ms points, periodic over the window) through a `w`-point box,
/// as a reading averaging the last `w` ms sees it.
fn boxed(x: &[f64], w: usize) -> Vec<f64> {
    (0..x.len())
        .map(|i| (0..w).map(|j| x[(i + x.len() - j) % x.len()]).sum::<f64>() / w as f64)
        .collect()
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let i = (pos.floor() as usize).min(sorted.len() - 2);
    sorted[i] + (sorted[i + 1] - sorted[i]) * (pos - i as f64)
}

fn case() -> impl Strategy<Value = Case> {
    // The periods the planner runs for these requests over a 7 s window.
    let detuned =
        |ms: f64| (powerlab_campaign::detune::detuned_period_ms(ms, 7000.0) * 1e6).round() as i64;
    let periods: Vec<i64> = [2000.0, 500.0, 200.0, 100.0, 50.0]
        .into_iter()
        .map(detuned)
        .collect();
    (
        2usize..6,
        proptest::sample::select(periods),
        any::<bool>(),
        any::<u64>(),
    )
        .prop_flat_map(|(n, period, in_phase, seed)| {
            let offsets = if in_phase {
                Just(vec![0i64; n]).boxed()
            } else {
                proptest::collection::vec(0..period, n).boxed()
            };
            (
                offsets,
                proptest::collection::vec(0..20 * MS, n),
                proptest::collection::vec((5.0f64..15.0, 5.0f64..15.0), n),
            )
                .prop_map(move |(offsets, phases, taus)| Case {
                    period,
                    offsets,
                    phases,
                    taus,
                    seed: seed | 1,
                })
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, .. ProptestConfig::default() })]

    #[test]
    fn the_composed_cycle_holds_the_true_spread_swing_and_mean(c in case()) {
        check(&c)?;
    }
}

/// One case against its truth.
fn check(c: &Case) -> Result<(), TestCaseError> {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, truth) = write_case(tmp.path(), c);
    let out = powerlab_collate::collate(&dir).unwrap();
    let r = &out.rungs[0];
    prop_assert_eq!(r.method.as_str(), "composed cycle", "{:?}", r);
    let mut s = truth.clone();
    s.sort_unstable_by(f64::total_cmp);
    let step = c.offsets.len() as f64 * 580.0;
    let mean = truth.iter().sum::<f64>() / truth.len() as f64;
    // A waveform of plateaus (2 GPUs at an offset: both on, one on, both
    // off) has no stable p10 when a plateau fills about 10 % of the
    // cycle: the quantile jumps between plateaus. The truth is therefore
    // the range of the statistic for quantiles within ±0.5 % (spread) or
    // ±2 % (swing) of the nominal ones; elsewhere that range is a point.
    //
    // A plateau shorter than the readings' 6 ms window (two GPUs' on-phases
    // overlapping for 4.5 ms at 50 ms) is a level no reading ever held:
    // the figure may then be as low as the truth seen through that window
    // (the collator lifts what the window cuts by at most 18 %, so it
    // cannot restore more), and no higher than the truth itself.
    let mut seen = boxed(&truth, 6);
    seen.sort_unstable_by(f64::total_cmp);
    let range = |lo: f64, hi: f64, d: f64| {
        let stat = |s: &[f64]| {
            let (a, b) = (
                quantile(s, hi - d) - quantile(s, lo + d),
                quantile(s, hi + d) - quantile(s, lo - d),
            );
            (a.min(b), a.max(b))
        };
        let ((a, b), (sa, _)) = (stat(&s), stat(&seen));
        (a.min(sa), b)
    };
    for (name, got, (w_lo, w_hi)) in [
        ("spread", r.spread_w, range(0.01, 0.99, 0.005)),
        ("swing", r.swing_w, range(0.1, 0.9, 0.02)),
    ] {
        let got = got.unwrap();
        let want = (quantile(&s, if name == "spread" { 0.99 } else { 0.9 })
            - quantile(&s, if name == "spread" { 0.01 } else { 0.1 }))
        .max(0.0);
        let tol = (0.15 * want).max(0.05 * step);
        let off = if got < w_lo {
            w_lo - got
        } else if got > w_hi {
            got - w_hi
        } else {
            0.0
        };
        prop_assert!(
            off <= tol,
            "{name} {got:.1} vs true {want:.1} (range {w_lo:.1}..{w_hi:.1}, tolerance {tol:.1}), period {} ms",
            c.period as f64 / 1e6
        );
    }
    let m = r.mean_w.unwrap();
    prop_assert!(
        (m - mean).abs() <= (0.02 * mean).max(0.01 * step),
        "mean {m:.1} vs true {mean:.1}"
    );
    check_grid_range(c, &dir, &s, step)
}

/// `grid.csv`'s dynamic range against the truth's max − min, in phase:
/// within 10 % or 2 % of the step. Not at random offsets: there a short
/// overlap of two GPUs' on-phases is a peak the composed cycle smooths
/// (proptest found 825 W stated against a true 971 W at 2006 ms).
fn check_grid_range(
    c: &Case,
    dir: &std::path::Path,
    sorted_truth: &[f64],
    step: f64,
) -> Result<(), TestCaseError> {
    if c.offsets.iter().any(|o| *o != 0) {
        return Ok(());
    }
    let mut rd = csv::Reader::from_path(dir.join("report/grid.csv")).unwrap();
    let h = rd.headers().unwrap().clone();
    let col = |name: &str| h.iter().position(|x| x == name).unwrap();
    let (metric, value) = (col("metric"), col("value"));
    let row = rd
        .records()
        .map(Result::unwrap)
        .find(|r| &r[col("rung_id")] == "0" && &r[metric] == "dynamic_range")
        .unwrap();
    let got: f64 = row[value].parse().unwrap();
    let want = sorted_truth[sorted_truth.len() - 1] - sorted_truth[0];
    let tol = (0.10 * want).max(0.02 * step);
    prop_assert!(
        (got - want).abs() <= tol,
        "dynamic range {got:.1} vs true {want:.1} (tolerance {tol:.1}), period {} ms",
        c.period as f64 / 1e6
    );
    Ok(())
}

/// A case proptest found (2 GPUs 19 ms apart at 50.07 ms): the bias
/// correction took its spread to 344 W against a true 411 W.
#[test]
fn a_near_staggered_pair_at_50_ms_holds_its_spread() {
    let c = Case {
        period: 50_070_000,
        offsets: vec![3_792_986, 22_980_487],
        phases: vec![8_200_000, 14_131],
        taus: vec![
            (10.747333975597234, 7.559128906024511),
            (14.357880634479802, 13.900442375859123),
        ],
        seed: 14_112_042_859_771_349_029,
    };
    check(&c).unwrap();
}

/// A case proptest found (2 GPUs 29.5 ms apart at 50.07 ms, on-phases
/// overlapping for 4.5 ms): 333.5 W stated against a true 399.4 W at 1 ms,
/// a plateau shorter than the readings' window.
#[test]
fn a_pair_overlapping_for_less_than_the_window_is_held_to_what_it_passes() {
    let c = Case {
        period: 50_070_000,
        offsets: vec![43_602_810, 14_070_001],
        phases: vec![15_500_000, 7_360_174],
        taus: vec![
            (9.126617658158912, 7.9036430773154125),
            (13.589102130004806, 7.967625470900031),
        ],
        seed: 3_418_923_214_973_395_911,
    };
    check(&c).unwrap();
}
