#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)] // a test that unwraps reports its failure by panicking
//! Issue 46: a workload rung's iteration, found by the collator in the
//! buffered samples alone, against the simulated node's true waveform
//! (`--sim-truth`, 1 ms), which the collator never reads. The truth is
//! computed here, with the job's own iteration starts
//! (`TrainingSpec::iteration_start_ns` from the event log's `sim`, its
//! iteration 0 at the rung's epoch): the node's true draw folded at each
//! start up to the next one (1 ms bins); its mean over the measured
//! window; its swing p90 − p10 of the folded bins; its ramps as
//! `util::truth::rates` reads them off the folded cycle.
//!
//! Tolerances: period 1 % of the job's, mean 1 %, swing 5 %, ramps 10 %
//! (a lower bound must not exceed the truth by more). Over 120 s (493
//! iterations) and seeds 1–14 the folded job read: period within 0.001 %,
//! mean within 0.1 %, swing −0.3 to 0 %, ramp up −3 to −1 %, ramp down
//! −0.5 to +7.5 %. Over 40 s (164 iterations) one seed of five read its
//! ramp down 25 % low: each iteration's compute pass is as much longer or
//! shorter as its start is early or late, so the samples about the fall
//! are now on, now off, and a bump of that scatter left in the fold at the
//! optimizer's shoulder stopped the edge's knee half-way down.
//!
//! Three jobs: one detuned from the 20 ms sample grid (243 ms), which is
//! folded; the default 240 ms job at 1 % jitter, a whole number of sample
//! spacings whose starts walk only ±4 ms over the grid: its period is
//! found, and its fold either holds against the truth or is refused as
//! phase-locked (on two simulated GPUs the samples covered 60 % or more
//! of it; on the demo's eight, 55 %, and it was refused); its ramps, read
//! off a fold with that few phases seen, are not held to the truth. And a
//! flat job (steps back to back), which has no period.

use crate::util::truth::{median, rates};
use crate::util::*;
use powerlab_core::training::TrainingSpec;

/// The node's true draw folded at the job's iteration starts (each
/// iteration up to the next start) over `[from, to)`, 1 ms bins over the
/// mean period; `x` is the truth at 1 ms from `start`.
fn folded_truth(
    x: &[f64],
    start: i64,
    job: &TrainingSpec,
    origin: i64,
    (from, to): (i64, i64),
) -> Vec<f64> {
    let ms = 1_000_000;
    let m = (job.iteration_ns / ms) as usize;
    let (mut sum, mut n) = (vec![0.0; m], vec![0usize; m]);
    let first = (from - origin).div_euclid(job.iteration_ns) + 1;
    let mut k = first;
    loop {
        let (s, next) = (
            job.iteration_start_ns(origin, k),
            job.iteration_start_ns(origin, k + 1),
        );
        if next >= to {
            break;
        }
        for (b, (sb, nb)) in sum.iter_mut().zip(n.iter_mut()).enumerate() {
            let t = s + b as i64 * ms;
            if t >= next {
                break;
            }
            let i = ((t - start) / ms) as usize;
            *sb += x[i];
            *nb += 1;
        }
        k += 1;
    }
    sum.iter()
        .zip(&n)
        .filter(|(_, c)| **c > 0)
        .map(|(s, c)| s / *c as f64)
        .collect()
}

fn quantile(v: &[f64], q: f64) -> f64 {
    let mut s = v.to_vec();
    s.sort_unstable_by(f64::total_cmp);
    let pos = q * (s.len() - 1) as f64;
    let i = (pos.floor() as usize).min(s.len() - 2);
    s[i] + (s[i + 1] - s[i]) * (pos - i as f64)
}

fn num(row: &std::collections::HashMap<String, String>, key: &str) -> Option<f64> {
    row[key].parse().ok()
}

#[test]
fn a_workload_rungs_iteration_against_the_truth() {
    for seed in 1..=3 {
        check(seed);
    }
}

/// The three jobs on two simulated H200s with `seed`, against the truth.
fn check(seed: u64) {
    let body = "[[phase]]\nkind = \"workload\"\nname = \"train\"\ncommand = [\"python3\", \"train.py\"]\nduration_s = 120\n\
        sim = { iteration_ms = 243, compute_fraction = 0.575, jitter_pct = 1.0 }\n\
        [[phase]]\nkind = \"workload\"\nname = \"locked\"\ncommand = [\"python3\", \"train.py\"]\nduration_s = 20\n\
        sim = { iteration_ms = 240, compute_fraction = 0.575, jitter_pct = 1.0 }\n\
        [[phase]]\nkind = \"workload\"\nname = \"flat\"\ncommand = [\"python3\", \"train.py\"]\nduration_s = 20\n\
        sim = { iteration_ms = 240, compute_fraction = 1.0 }\n";
    let r = run_sim(
        &campaign(body),
        &[
            "--sim-gpus",
            "2",
            "--seed",
            &seed.to_string(),
            "--sim-truth",
        ],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let (start, node) = true_node(r.dir());
    let rows = csv_rows(&r.dir().join("report/workload.csv"));
    assert_eq!(rows.len(), 3, "{rows:?}");
    let report = std::fs::read_to_string(r.dir().join("report/report.md")).unwrap();
    assert!(report.contains("## Workload"), "{report}");
    let events = r.events();
    let workloads = events
        .iter()
        .filter(|e| e["event"] == "rung_started" && e["rung"]["kind"] == "workload");
    for e in workloads {
        let label = e["rung"]["label"].as_str().unwrap();
        let row = rows.iter().find(|x| x["label"] == label).unwrap();
        let job: TrainingSpec =
            serde_json::from_value(e["rung"]["workload"]["sim"].clone()).unwrap();
        let (epoch, from, to) = (
            e["epoch_ns"].as_i64().unwrap(),
            e["measure_from_ns"].as_i64().unwrap(),
            e["end_ns"].as_i64().unwrap(),
        );
        let true_p = job.iteration_ns as f64 / 1e6;
        match label {
            "flat" => {
                assert_eq!(row["status"], "no_period", "{row:?}");
                assert!(row["verdict"].contains("flat"), "{row:?}");
                assert!(
                    num(row, "mean_w").is_some() && num(row, "peak_w").is_some(),
                    "{row:?}"
                );
                continue;
            }
            "locked" if row["status"] != "folded" => {
                let p = num(row, "period_ms").unwrap();
                assert!((p / true_p - 1.0).abs() < 0.01, "{row:?}");
                assert_eq!(row["status"], "not_folded", "{row:?}");
                assert!(row["verdict"].contains("phase-locked"), "{row:?}");
                continue;
            }
            _ => assert_eq!(row["status"], "folded", "{row:?}"),
        }
        let x = &node[((from - start) / 1_000_000) as usize..((to - start) / 1_000_000) as usize];
        let true_mean = x.iter().sum::<f64>() / x.len() as f64;
        let c = folded_truth(&node, start, &job, epoch, (from, to));
        let true_swing = quantile(&c, 0.9) - quantile(&c, 0.1);
        let (up, down) = rates(&c, c.len() as f64);
        let p = num(row, "period_ms").unwrap();
        let mean = num(row, "mean_w").unwrap();
        let swing = num(row, "swing_w").unwrap();
        let (got_up, got_down) = (
            num(row, "ramp_up_w_per_s").unwrap(),
            num(row, "ramp_down_w_per_s").unwrap(),
        );
        eprintln!(
            "seed {seed}, {label}: period {p:.3} ± {} ms vs {true_p}; jitter {} ms; cycles {}; on {}; mean {mean:.1} vs {true_mean:.1} W; swing {swing:.1} vs {true_swing:.1} W; ramp up {got_up:.0}{} vs {up:.0} W/s; down {got_down:.0}{} vs {down:.0} W/s; median bin {:.1} W",
            row["period_ci95_ms"],
            row["jitter_ms"],
            row["cycles"],
            row["on_fraction"],
            if row["ramp_up_lower_bound"] == "true" {
                " (≥)"
            } else {
                ""
            },
            if row["ramp_down_lower_bound"] == "true" {
                " (≥)"
            } else {
                ""
            },
            median(c.clone()),
        );
        assert!((p / true_p - 1.0).abs() < 0.01, "period {p} vs {true_p}");
        assert!(
            (mean / true_mean - 1.0).abs() < 0.01,
            "mean {mean} vs {true_mean}"
        );
        assert!(
            (swing / true_swing - 1.0).abs() < 0.05,
            "swing {swing} vs {true_swing}"
        );
        if label == "locked" {
            // Its samples cover barely more of the iteration than a fold
            // needs (60 %): the gaps are bridged by straight lines, and the
            // edges read slower (ramp up 11 % under the truth on two
            // GPUs). Its ramps are not held to the truth.
            continue;
        }
        for (got, truth, lower, what) in [
            (got_up, up, row["ramp_up_lower_bound"] == "true", "up"),
            (
                got_down,
                down,
                row["ramp_down_lower_bound"] == "true",
                "down",
            ),
        ] {
            let dev = got / truth - 1.0;
            let bad = if lower { dev > 0.1 } else { dev.abs() > 0.1 };
            assert!(!bad, "ramp {what} {got} vs {truth} (lower bound: {lower})");
        }
    }
}
