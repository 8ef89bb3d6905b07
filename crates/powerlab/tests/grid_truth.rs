#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)] // a test that unwraps reports its failure by panicking
//! Issue 33, part 2: the grid metrics of `grid.csv` against the simulated
//! node's true waveform (`--sim-truth`, 1 ms), which the collator never
//! reads. Each metric is computed here from the truth, independently of
//! the collator's code:
//!
//! - ramp rates: the truth folded on the rung's period into its mean cycle
//!   (1 ms bins); each edge between the level it leaves (where the cycle
//!   stopped moving before it) and the median of the phase it enters; the
//!   rate is 0.8 × that step over the edge's 10–90 % time, the fastest
//!   edge's; the fastest change over 1 ms, 10 ms, 100 ms and 1 s: the
//!   largest change between bins at most the window apart, over it;
//! - dynamic range: max − min of the true waveform inside the rung;
//! - band share: the true waveform's spectrum inside the rung (DC
//!   excluded), the share of its variance in 0.1–20 Hz.
//!
//! Tolerance: 10 % of the truth, or 2 % of the node's on−off step,
//! whichever is larger. The step is in W; for a rate it is taken over the
//! figure's stated resolution (W/s), for a window's change over the
//! window, and for a band share as an energy
//! (the step's 2 % squared, as a share of the true variance). A lower
//! bound must not exceed the truth by more than the tolerance.

use crate::util::*;
use std::collections::{BTreeMap, HashMap};

use crate::util::truth::true_cycle;

/// The true rates (up, down) of a cycle of 1 ms bins, W/s.
fn true_rates(c: &[f64]) -> (f64, f64) {
    crate::util::truth::rates(c, c.len() as f64)
}

/// The share (%) of the variance of 1 ms points `x` in `[lo, hi]` Hz, and
/// the variance: a direct DFT at every frequency k / span inside the band.
fn true_band_share(x: &[f64], lo: f64, hi: f64) -> (f64, f64) {
    let n = x.len();
    let mean = x.iter().sum::<f64>() / n as f64;
    let d: Vec<f64> = x.iter().map(|v| v - mean).collect();
    let total: f64 = d.iter().map(|v| v * v).sum();
    let span_s = n as f64 / 1000.0;
    let mut inside = 0.0;
    let k0 = (lo * span_s).ceil().max(1.0) as usize;
    let k1 = ((hi * span_s).floor() as usize).min(n / 2);
    for k in k0..=k1 {
        let w = -2.0 * std::f64::consts::PI * k as f64 / n as f64;
        let (step_re, step_im) = (w.cos(), w.sin());
        let (mut re, mut im, mut acc_re, mut acc_im) = (1.0, 0.0, 0.0, 0.0);
        for v in &d {
            acc_re += v * re;
            acc_im += v * im;
            (re, im) = (re * step_re - im * step_im, re * step_im + im * step_re);
        }
        let sides = if 2 * k == n { 1.0 } else { 2.0 };
        inside += sides * (acc_re * acc_re + acc_im * acc_im) / n as f64;
    }
    (100.0 * inside / total, total / n as f64)
}

/// Per (metric, period, mode): the largest stated − true, and the largest
/// as a share of its tolerance, and where.
type Worst = BTreeMap<(String, i64, String), (f64, f64, String)>;

/// The grid campaign on two simulated H200s with `seed`, checked against
/// the truth; returns the failures, and counts figures stated.
fn check_grid(seed: u64, worst: &mut Worst, stated: &mut usize) -> Vec<String> {
    let body = "[grid]\nramp_up_w_per_s_per_gpu = 20000\ngpus = 1000\nramp_down_mw_per_s = 30\nmax_band_share_pct = 20\nmax_dynamic_range_pct = 50\n\
        [[phase]]\nkind = \"duty\"\nname = \"d\"\nperiods_ms = [2000, 1000, 500, 100, 50, 20]\nduration_s = 30\nmodes = [\"in_phase\", \"staggered\"]\n\
        [[phase]]\nkind = \"duty\"\nname = \"q\"\nperiods_ms = [2000, 500, 100]\nduty = 0.75\nduration_s = 30\nmodes = [\"in_phase\", \"staggered\"]\n";
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
    let rungs: HashMap<String, serde_json::Value> = r
        .events()
        .into_iter()
        .filter(|e| e["event"] == "rung_started")
        .map(|e| (e["rung"]["id"].to_string(), e))
        .collect();
    let summary = csv_rows(&r.dir().join("report/summary.csv"));
    let rows = csv_rows(&r.dir().join("report/grid.csv"));
    let mut failures = Vec::new();
    // summary.json carries the same figures.
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(r.dir().join("report/summary.json")).unwrap(),
    )
    .unwrap();
    let figures: usize = json["grid"]["rungs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["figures"].as_array().unwrap().len())
        .sum();
    if figures != rows.len() || json["grid"]["spec"]["max_band_share_pct"] != 20.0 {
        failures.push(format!(
            "seed {seed}: summary.json's grid: {figures} figures, {} rows",
            rows.len()
        ));
    }
    for row in &rows {
        let e = &rungs[&row["rung_id"]];
        let (from, to) = (
            e["measure_from_ns"].as_i64().unwrap(),
            e["end_ns"].as_i64().unwrap(),
        );
        let x = &node[((from - start) / 1_000_000) as usize
            ..(((to - start) / 1_000_000) as usize).min(node.len())];
        let (label, metric) = (&row["label"], row["metric"].as_str());
        let nominal = e["rung"]["nominal_period_ms"].as_f64().unwrap();
        let mode = e["rung"]["mode"].as_str().unwrap().to_string();
        let value: Option<f64> = row["value"].parse().ok();
        let Some(got) = value else {
            if row["reason"].is_empty() || row["verdict"] != "not measured" {
                failures.push(format!(
                    "seed {seed}: {label} {metric}: no figure, no reason"
                ));
            }
            // Every in-phase rung of 50 ms or more states all but its rates.
            let rate = metric.starts_with("ramp")
                || metric.starts_with("rise_over_")
                || metric.starts_with("fall_over_");
            if mode == "in_phase" && nominal >= 50.0 && !rate {
                failures.push(format!("seed {seed}: {label} {metric}: {}", row["reason"]));
            }
            continue;
        };
        *stated += 1;
        let s = summary
            .iter()
            .find(|s| s["rung_id"] == row["rung_id"])
            .unwrap();
        let step: f64 = s["step_w"].parse().unwrap();
        let (min, max) = x
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(*v), b.max(*v)));
        let res_s = row["resolution_ms"].parse::<f64>().unwrap_or(1.0) / 1000.0;
        let (truth, tol) = match metric {
            "ramp_up" | "ramp_down" => {
                let p = e["rung"]["period_ms"].as_f64().unwrap();
                let (up, down) =
                    true_rates(&true_cycle(x, from, e["epoch_ns"].as_i64().unwrap(), p));
                let t = if metric == "ramp_up" { up } else { down };
                (t, (0.1 * t).max(0.02 * step / res_s))
            }
            m if m.starts_with("rise_over_") || m.starts_with("fall_over_") => {
                let w_ms: usize = match m.rsplit('_').next().unwrap() {
                    "1ms" => 1,
                    "10ms" => 10,
                    "100ms" => 100,
                    _ => 1000,
                };
                let p = e["rung"]["period_ms"].as_f64().unwrap();
                let c = true_cycle(x, from, e["epoch_ns"].as_i64().unwrap(), p);
                let (up, down) = crate::util::truth::window_change(&c, w_ms);
                let t = if m.starts_with("rise") { up } else { down };
                // The step of the node's own true cycle (a staggered
                // node's, not the sum of its GPUs' steps).
                let (lo, hi) = crate::util::truth::plateaus(&c);
                (t, (0.1 * t).max(0.02 * (hi - lo) / (w_ms as f64 / 1000.0)))
            }
            "dynamic_range" => (max - min, (0.1 * (max - min)).max(0.02 * step)),
            "dynamic_range_pct" => {
                let t = 100.0 * (max - min) / max;
                (t, (0.1 * t).max(100.0 * 0.02 * step / max))
            }
            "band_share" => {
                let (t, var) = true_band_share(x, 0.1, 20.0);
                (t, (0.1 * t).max(100.0 * (0.02 * step).powi(2) / var))
            }
            other => panic!("unknown metric {other}"),
        };
        let lower_bound = row["lower_bound"] == "true";
        let upper: Option<f64> = row["upper"].parse().ok();
        // An interval holds the truth; its ends are the figure's.
        let dev = match upper {
            Some(hi) if truth > hi => truth - hi,
            Some(_) if truth >= got => 0.0,
            _ => got - truth,
        };
        let bad = if lower_bound {
            dev > tol
        } else {
            dev.abs() > tol
        };
        let key = (metric.to_string(), nominal as i64, mode.clone());
        let w = worst.entry(key).or_insert((0.0, 0.0, String::new()));
        let share = if lower_bound { dev.max(0.0) } else { dev.abs() } / tol;
        if share >= w.1 {
            *w = (
                dev,
                share,
                format!("seed {seed}{}", if lower_bound { ", ≥" } else { "" }),
            );
        }
        if bad {
            failures.push(format!(
                "seed {seed}: {label} {metric}: {}{got:.1} vs true {truth:.1} (tolerance {tol:.1})",
                if lower_bound { "≥ " } else { "" }
            ));
        }
        check_verdict(row, got, &mut failures);
    }
    failures
}

/// The declared `[grid]` judges every figure it limits: limits scaled to
/// two GPUs, margin = limit − figure, the verdict by its sign.
fn check_verdict(row: &HashMap<String, String>, got: f64, failures: &mut Vec<String>) {
    let metric = row["metric"].as_str();
    let want = match metric {
        "ramp_up" => Some(40_000.0),
        "ramp_down" => Some(60_000.0),
        m if m.starts_with("rise_over_") => Some(40_000.0),
        m if m.starts_with("fall_over_") => Some(60_000.0),
        "dynamic_range_pct" => Some(50.0),
        "band_share" => Some(20.0),
        _ => None,
    };
    let limit: Option<f64> = row["limit"].parse().ok();
    let margin: Option<f64> = row["margin"].parse().ok();
    let upper: Option<f64> = row["upper"].parse().ok();
    let plus_minus: Option<f64> = row["plus_minus"].parse().ok();
    let lower = row["lower_bound"] == "true";
    // A ± that holds the limit is on neither side of it.
    let holds = |l: f64| !lower && plus_minus.is_some_and(|p| got - p <= l && l < got + p);
    let verdict = match (want, lower) {
        (None, _) => "no limit declared",
        (Some(l), _) if holds(l) => "undecided (the interval holds the limit)",
        (Some(l), _) if got > l => "fail",
        (Some(l), _) if upper.is_some_and(|u| u > l) => "undecided (the interval holds the limit)",
        (Some(_), true) => "undetermined (lower bound below the limit)",
        (Some(_), false) => "pass",
    };
    let margin_ok = match (want, margin) {
        (Some(l), Some(m)) => (m - (l - got)).abs() < 0.01,
        (None, None) => true,
        _ => false,
    };
    if limit != want || !margin_ok || row["verdict"] != verdict {
        failures.push(format!(
            "{} {}: limit {limit:?} margin {margin:?} verdict {}",
            row["label"], row["metric"], row["verdict"]
        ));
    }
}

/// Two GPUs, duty rungs of 2 s to 20 ms in phase and staggered (30 s
/// each), three seeds: every figure `grid.csv` states is within the
/// tolerance of the truth (a lower bound not above it), every in-phase
/// rung of 50 ms or more states its range and band share, every figure it
/// withholds says why, and the declared `[grid]` judges every figure.
#[test]
fn the_grid_metrics_hold_the_truth() {
    let mut worst = Worst::new();
    let mut failures = Vec::new();
    let mut stated = 0;
    for seed in [7, 19, 31] {
        failures.extend(check_grid(seed, &mut worst, &mut stated));
    }
    eprintln!("metric             period  mode         worst stated-true  share of tolerance  at");
    for ((m, p, mode), (dev, share, at)) in &worst {
        eprintln!("{m:<18} {p:>6}  {mode:<10} {dev:>18.1} {share:>19.2}  {at}");
    }
    eprintln!("{stated} figures stated");
    assert!(stated >= 3 * 40, "only {stated} figures stated");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
