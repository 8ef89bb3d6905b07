#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)] // a test that unwraps reports its failure by panicking
//! Issue 47: a schedule's `[lifecycle]` predicted at 100,000 GPUs from the
//! simulated node's measured edges, against the simulator's own true
//! waveform (`--sim-truth`), which neither the collator nor predict reads:
//! the crash's step within 2 % of the true kill edge (the mean over the
//! second before each kill against the mean from 1 s to 2 s after it, per
//! GPU) times the GPUs; the start's step and delay within 10 % of the
//! measured cold start's; and energy conserved: a waveform with a
//! checkpoint draws exactly the checkpoint's energy less, and that is the
//! running mean less the checkpoint's level over its length, within 1 %
//! (the edges' share). And no transition draws more than the running job
//! at its peak: a measured edge's burst above its settled level is not
//! multiplied onto the job's (which holds its own bursts).

use crate::util::*;
use std::path::Path;

/// A held context's duty rung, three kills of a job long enough to
/// predict from (12 s), three clean exits.
const BODY: &str = "\
[[phase]]\nkind = \"duty\"\nname = \"held\"\nperiod_ms = 2000\nduty = 0.5\nduration_s = 10\n\
[[phase]]\nkind = \"workload\"\nname = \"kill\"\ncommand = [\"python3\", \"train.py\"]\n\
duration_s = 12\nwarmup_s = 2\ncooldown_s = 3\nrepeats = 3\nstop = \"sigkill\"\n\
sim = { iteration_ms = 241.7, compute_fraction = 1.0 }\n\
[[phase]]\nkind = \"workload\"\nname = \"exit\"\ncommand = [\"python3\", \"train.py\"]\n\
duration_s = 4\nwarmup_s = 2\ncooldown_s = 3\nrepeats = 3\nstop = \"exit\"\n\
sim = { iteration_ms = 241.7, compute_fraction = 1.0 }\n";

const GPUS: f64 = 100_000.0;

/// A schedule of 100,000 GPUs, its lifecycle's extra keys appended.
fn schedule(dir: &Path, name: &str, lifecycle: &str) -> String {
    let s = format!(
        "[job]\nname = \"{name}\"\ngpus = 100000\ngpus_per_node = 8\niteration_ms = 1000\ncompute_fraction = 1.0\n\
[output]\nspan_s = 20\nresolution_ms = 10\n\
[grid]\nmax_load_loss_mw = 50\nmax_step_mw = 100\n\
[lifecycle]\nspan_s = 900\nresolution_ms = 10\nstart_at_s = 60\nstart_spread_ms = 0\n\
crash_at_s = [200]\nrestart_after_s = 120\nend_at_s = 830\n{lifecycle}"
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, s).unwrap();
    path.to_str().unwrap().to_string()
}

/// `powerlab predict` from the first kill rung; its `lifecycle.json`.
fn predict(run: &Path, out: &Path, schedule: &str) -> serde_json::Value {
    let o = powerlab_output([
        "predict",
        run.to_str().unwrap(),
        "--schedule",
        schedule,
        "--from-rung",
        "kill/r1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_exit(&o, 0);
    let text = std::fs::read_to_string(out.join("study/lifecycle.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Every kill's true step per GPU, W: the second before it against the
/// second from 1 s after it, from `sim-truth/` (1 ms buckets).
fn true_kill_steps(run: &Path) -> Vec<f64> {
    let jobs = csv_rows(&run.join("sim-truth/jobs.csv"));
    let mut steps = Vec::new();
    for j in jobs.iter().filter(|j| j["end"] == "kill") {
        let text =
            std::fs::read_to_string(run.join(format!("sim-truth/{}.csv", j["gpu"]))).unwrap();
        let rows: Vec<(i64, f64)> = text
            .lines()
            .skip(1)
            .map(|l| {
                let (t, w) = l.split_once(',').unwrap();
                (t.parse().unwrap(), w.parse().unwrap())
            })
            .collect();
        let end: i64 = j["end_ns"].parse().unwrap();
        let mean = |a: i64, b: i64| {
            let v: Vec<f64> = rows
                .iter()
                .filter(|r| r.0 >= a && r.0 < b)
                .map(|r| r.1)
                .collect();
            v.iter().sum::<f64>() / v.len() as f64
        };
        steps.push(mean(end + 1_000_000_000, end + 2_000_000_000) - mean(end - 1_000_000_000, end));
    }
    steps
}

fn event<'a>(v: &'a serde_json::Value, kind: &str) -> &'a serde_json::Value {
    v["study"]["channels"][0]["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} event"))
}

fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap()
}

#[test]
fn a_crash_steps_by_the_true_kill_edge_a_start_by_the_measured_one_and_a_checkpoint_costs_its_energy()
 {
    let r = run_sim(&campaign(BODY), &["--sim-truth"]);
    assert_exit(&r.out, 0);
    let run = r.dir();
    let out = tempfile::tempdir().unwrap();
    let plain = predict(run, &out.path().join("a"), &schedule(out.path(), "a", ""));
    // The crash against the truth.
    let truth = true_kill_steps(run);
    assert_eq!(truth.len(), 3 * 8, "{truth:?}");
    let true_mw = truth.iter().sum::<f64>() / truth.len() as f64 * GPUS / 1e6;
    let crash = event(&plain, "crash");
    let step = f(&crash["after_mw"]) - f(&crash["before_mw"]);
    eprintln!("crash step {step:.3} MW, true kill edge × 100,000 GPUs {true_mw:.3} MW");
    assert!(
        (step - true_mw).abs() <= 0.02 * true_mw.abs(),
        "{step} vs {true_mw}"
    );
    // The load-loss verdict quotes it, over its limit.
    let loss = plain["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| {
            v["item"]
                .as_str()
                .unwrap()
                .starts_with("load lost in a crash at the iteration's peak")
        })
        .unwrap();
    // From the running job's peak over the second before: at least the
    // step from its mean (a flat job's peak is within a few per cent).
    let worst = f(&loss["value"]);
    eprintln!(
        "load lost at the peak {worst:.3} MW, from the mean {:.3} MW",
        -step
    );
    assert!(worst >= -step && worst <= -step * 1.1, "{loss}");
    assert!(loss["pass"] == false, "{loss}");
    // The start against the measured cold start.
    let edges = csv_rows(&run.join("report/lifecycle_edges.csv"));
    let cold = edges.iter().find(|e| e["kind"] == "start_cold").unwrap();
    let num = |k: &str| cold[k].parse::<f64>().unwrap();
    let start = event(&plain, "start");
    let start_step = f(&start["after_mw"]) - f(&start["before_mw"]);
    let measured_mw = num("step_w") * GPUS / 1e6;
    eprintln!(
        "start step {start_step:.3} MW vs measured {measured_mw:.3} MW; delay {:.1} ms vs {:.1} ms",
        f(&start["t10_ms"]),
        num("delay_ms")
    );
    assert!(
        (start_step - measured_mw).abs() <= 0.1 * measured_mw,
        "{start_step} vs {measured_mw}"
    );
    assert!((f(&start["t10_ms"]) - num("delay_ms")).abs() <= 0.1 * num("delay_ms"));
    // A checkpoint: the energy it does not draw, exactly and roughly.
    let ckpt = predict(
        run,
        &out.path().join("b"),
        &schedule(
            out.path(),
            "b",
            "checkpoint_every_s = 100\ncheckpoint_s = 30\n",
        ),
    );
    let energy = |v: &serde_json::Value| f(&v["study"]["channels"][0]["energy_mwh"]);
    let lost = energy(&plain) - energy(&ckpt);
    let events = ckpt["study"]["channels"][0]["events"].as_array().unwrap();
    let by_ckpt: f64 = events
        .iter()
        .filter(|e| e["kind"] == "checkpoint_begin" || e["kind"] == "checkpoint_end")
        .map(|e| f(&e["deficit_mwh"]))
        .sum();
    let n = events
        .iter()
        .filter(|e| e["kind"] == "checkpoint_begin")
        .count();
    let held = edges.iter().find(|e| e["kind"] == "stop_held").unwrap();
    let level_w = held["after_w"].parse::<f64>().unwrap();
    let running_mw = f(&event(&plain, "crash")["before_mw"]);
    let flat = n as f64 * 30.0 / 3600.0 * (running_mw - level_w * GPUS / 1e6);
    eprintln!("{n} checkpoints: {lost:.4} MWh less, their events {by_ckpt:.4}, flat {flat:.4}");
    assert!(n >= 3);
    assert!(
        (lost - by_ckpt).abs() <= 1e-9 * energy(&plain),
        "{lost} vs {by_ckpt}"
    );
    assert!((lost - flat).abs() <= 0.01 * flat, "{lost} vs {flat}");
    let peak = |v: &serde_json::Value| f(&v["study"]["channels"][0]["peak_mw"]);
    let steady_peak = csv_rows(&out.path().join("b/scenarios.csv"))[0]["peak_w"]
        .parse::<f64>()
        .unwrap()
        / 1e6;
    eprintln!(
        "lifecycle peak {:.3} MW, steady job's peak {steady_peak:.3} MW",
        peak(&ckpt)
    );
    assert!(
        peak(&ckpt) <= steady_peak * 1.01,
        "{} vs {steady_peak}",
        peak(&ckpt)
    );
}
