#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! Predict from the user's job, held to the simulator's truth: the
//! simulated training job recorded on one GPU as `observe --csv` would
//! (the raw rows of its window, in the raw files' schema), predicted for
//! 8 GPUs in phase, against the true node power of the same job run on 8
//! simulated GPUs (`--sim-truth`, which neither predict nor the collator
//! reads). And the same prediction from the run directory's workload rung.

use crate::util::{campaign, powerlab_output, run_sim, text, true_node};
use std::path::Path;

/// One workload phase of the simulated job (its defaults: 241.7 ms, a
/// 139 ms step, 1 % jitter).
fn job() -> String {
    campaign(
        "[[phase]]\nkind = \"workload\"\nname = \"train\"\ncommand = [\"python3\", \"train.py\"]\nduration_s = 30\n",
    )
}

/// The workload rung's window, from the event log.
fn window(dir: &Path) -> (i64, i64) {
    let events = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    let e: serde_json::Value = events
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["event"] == "rung_started" && e["rung"]["kind"] == "workload")
        .unwrap();
    (
        e["epoch_ns"].as_i64().unwrap(),
        e["end_ns"].as_i64().unwrap(),
    )
}

/// The run's raw rows inside its workload window, time-ordered, as one
/// `observe --csv` file.
fn recording(dir: &Path, to: &Path) {
    let (a, b) = window(dir);
    let mut rows: Vec<(i64, String)> = Vec::new();
    for f in std::fs::read_dir(dir.join("raw")).unwrap() {
        let p = f.unwrap().path();
        if p.extension().is_some_and(|x| x == "csv") {
            for l in std::fs::read_to_string(&p).unwrap().lines().skip(1) {
                let t: i64 = l.split(',').next().unwrap().parse().unwrap();
                if (a..=b).contains(&t) {
                    rows.push((t, l.to_string()));
                }
            }
        }
    }
    rows.sort_by_key(|r| r.0);
    let body: Vec<String> = rows.into_iter().map(|r| r.1).collect();
    std::fs::write(
        to,
        format!("ts_ns,node,gpu,instrument,value\n{}\n", body.join("\n")),
    )
    .unwrap();
}

/// p90 − p10 and the mean of `v`.
fn swing_mean(v: &[f64]) -> (f64, f64) {
    let mut s = v.to_vec();
    s.sort_unstable_by(f64::total_cmp);
    let q = |p: f64| s[((p * (s.len() - 1) as f64).round()) as usize];
    (q(0.9) - q(0.1), v.iter().sum::<f64>() / v.len() as f64)
}

/// The plain scenario's mean and swing of `predict SOURCE --gpus 8
/// --gpus-per-node 8 --out OUT --json`.
fn predicted(source: &Path, out: &Path) -> (f64, f64) {
    let out = powerlab_output([
        "predict",
        source.to_str().unwrap(),
        "--gpus",
        "8",
        "--gpus-per-node",
        "8",
        "--out",
        out.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let notes = v["notes"].to_string();
    assert!(notes.contains("FROM THE JOB"), "{notes}");
    let s = &v["scenarios"][0];
    assert_eq!(s["label"], "plain");
    (
        s["mean_w"]["value"].as_f64().unwrap(),
        s["swing_w"]["value"].as_f64().unwrap(),
    )
}

/// A prediction's (mean, swing) within the 2 % and 5 % of the truth.
#[track_caller]
fn holds(from: &str, (mean, swing): (f64, f64), (true_mean, true_swing): (f64, f64)) {
    let dm = 100.0 * (mean / true_mean - 1.0);
    let ds = 100.0 * (swing / true_swing - 1.0);
    let said = format!(
        "from {from}: mean {mean:.0} W vs true {true_mean:.0} W ({dm:+.2} %), swing {swing:.0} W vs {true_swing:.0} W ({ds:+.2} %)"
    );
    assert!(dm.abs() < 2.0, "{said}");
    assert!(ds.abs() < 5.0, "{said}");
}

#[test]
fn eight_gpus_predicted_from_one_gpus_recording_hold_the_eight_gpu_runs_truth() {
    let one = run_sim(&job(), &["--sim-gpus", "1"]);
    assert_eq!(one.code(), 0, "{}", one.stderr());
    let eight = run_sim(&job(), &["--sim-gpus", "8", "--sim-truth"]);
    assert_eq!(eight.code(), 0, "{}", eight.stderr());
    // The truth: the 8 GPUs' true node power over the window's middle.
    let (t0, node) = true_node(eight.dir());
    let (a, b) = window(eight.dir());
    let ms = |t: i64| ((t - t0) / 1_000_000) as usize;
    let (true_swing, true_mean) = swing_mean(&node[ms(a) + 1000..ms(b) - 500]);
    let csv = one.results.path().join("train.csv");
    recording(one.dir(), &csv);
    let (mean, swing) = predicted(&csv, &one.results.path().join("predicted"));
    holds("the recording", (mean, swing), (true_mean, true_swing));
    // The same from the 1-GPU run directory's workload rung.
    let (mean, swing) = predicted(one.dir(), &one.results.path().join("predicted-run"));
    holds("the run", (mean, swing), (true_mean, true_swing));
}

#[test]
fn a_measured_floor_lifts_the_jobs_iteration_to_the_level_its_rungs_held() {
    let c = campaign(
        "[[phase]]\nkind = \"duty\"\nname = \"mitigation\"\nperiod_ms = 240\nduty = 0.6\nduration_s = 8\n\
         smoothing = [{}, { floor_pct = 60 }]\n\
         [[phase]]\nkind = \"workload\"\nname = \"train\"\ncommand = [\"python3\", \"train.py\"]\nduration_s = 20\n",
    );
    let run = run_sim(&c, &["--sim-gpus", "1"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let held: f64 = crate::util::csv_rows(&run.dir().join("report/mitigation_gpus.csv"))
        .iter()
        .find_map(|r| r["achieved_floor_w"].parse().ok())
        .expect("a floor held");
    let out = powerlab_output([
        "predict",
        run.dir().to_str().unwrap(),
        "--gpus",
        "1",
        "--gpus-per-node",
        "1",
        "--out",
        run.results.path().join("p").to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let by = |l: &str| {
        v["scenarios"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["label"] == l)
            .cloned()
            .unwrap()
    };
    let (plain, floor) = (by("plain"), by("floor60"));
    let lowest = floor["levels"]["min_w"].as_f64().unwrap();
    // The job's iteration never falls below what the rungs held, and pays for it.
    assert!(
        (lowest - held).abs() < 0.02 * held,
        "lowest {lowest} W, held {held} W"
    );
    assert!(plain["levels"]["min_w"].as_f64().unwrap() < 0.5 * held);
    let extra =
        floor["mean_w"]["value"].as_f64().unwrap() - plain["mean_w"]["value"].as_f64().unwrap();
    assert!(
        extra > 0.1 * plain["mean_w"]["value"].as_f64().unwrap(),
        "extra {extra} W"
    );
    assert!(
        v["notes"]
            .to_string()
            .contains(&format!("a floor at {held:.0} W per GPU")),
        "{}",
        v["notes"]
    );
}
