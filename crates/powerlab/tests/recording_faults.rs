#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! Recordings (`powerlab observe --csv`) whose plausible figures were
//! wrong (issue 58), each refused or handled: a file in mW with its limit
//! in mW too (479.7 MW predicted for 1,000 GPUs, 480 kW true), a job then
//! a minute of idle (its mean diluted), two values of one buffered stamp
//! (the last one kept), and a GPU that never took part (averaged in).
//!
//! The recording here is written as observe writes one: per GPU every
//! 20 ms an instant reading and a buffered sample, every 100 ms the 1 s
//! average, every second the energy counter, every 200 ms the limit. The
//! job: a 203 ms iteration (off the 20 ms sampling grid), 750 W for
//! 122 ms and 125 W for 81 ms (500.6 W mean).

use crate::util::{powerlab_output, run_dirs, text};
use std::path::{Path, PathBuf};

const T0: i64 = 1_800_000_000_000_000_000;
const MS: i64 = 1_000_000;

/// What one GPU draws at `t_ms` after the recording's start.
#[derive(Clone, Copy)]
enum Draw {
    /// The job until `job_s`, then idle at 120 W (observe left running).
    Job { job_s: f64 },
    /// Idle throughout at 70 W (not in the job).
    Idle,
}

fn watts(d: Draw, t_ms: i64) -> f64 {
    match d {
        Draw::Job { job_s } if (t_ms as f64) < job_s * 1000.0 => {
            if t_ms % 203 < 122 {
                750.0
            } else {
                125.0
            }
        }
        Draw::Job { .. } => 120.0,
        Draw::Idle => 70.0,
    }
}

/// An observe-style recording of `gpus` over `secs` s, every power value
/// (and the limit) multiplied by `scale`.
fn recording(gpus: &[Draw], secs: i64, scale: f64) -> String {
    let mut s = String::from("ts_ns,node,gpu,instrument,value\n");
    let mut energy_mj = vec![0.0; gpus.len()];
    for k in 0..secs * 50 {
        let t_ms = k * 20;
        let t = T0 + t_ms * MS;
        for (g, d) in gpus.iter().enumerate() {
            let w = watts(*d, t_ms);
            // The energy the last 20 ms drew, mJ.
            energy_mj[g] += (0..20).map(|j| watts(*d, t_ms - j)).sum::<f64>();
            s += &format!("{t},n1,gpu{g},instant_w,{}\n", w * scale);
            s += &format!("{},n1,gpu{g},buffered_w,{}\n", t - 5 * MS, w * scale);
            if k % 5 == 0 {
                s += &format!("{t},n1,gpu{g},average_w,{}\n", 500.0 * scale);
            }
            if k % 10 == 0 {
                s += &format!("{t},n1,gpu{g},power_limit_w,{}\n", 700.0 * scale);
            }
            if k % 50 == 0 {
                s += &format!("{t},n1,gpu{g},energy_mj,{}\n", energy_mj[g]);
            }
        }
    }
    s
}

/// `powerlab import FILE --out OUT`: (exit code, the run directory, stderr).
fn import(dir: &Path, name: &str, body: &str) -> (i32, PathBuf, String) {
    let file = dir.join(name);
    std::fs::write(&file, body).unwrap();
    let out = dir.join(format!("{name}.out"));
    let o = powerlab_output([
        "import",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    (
        o.status.code().unwrap_or(-1),
        PathBuf::from(text(&o.stdout).trim()),
        text(&o.stderr),
    )
}

/// The imported run's one rung: (its mean, the GPUs of its manifest).
fn imported(run: &Path) -> (f64, usize) {
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("report/summary.json")).unwrap())
            .unwrap();
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap();
    (
        summary["rungs"][0]["mean_w"].as_f64().unwrap(),
        manifest["backend"]["gpus"].as_array().unwrap().len(),
    )
}

#[test]
fn a_recording_in_milliwatts_is_refused_naming_the_unit() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, _, stderr) = import(
        tmp.path(),
        "mw.csv",
        &recording(&[Draw::Job { job_s: 60.0 }], 20, 1000.0),
    );
    assert_eq!(code, 1, "stderr:\n{stderr}");
    assert!(
        stderr.contains("mw.csv, line 2") && stderr.contains("mW"),
        "{stderr}"
    );
    assert!(run_dirs(&tmp.path().join("mw.csv.out")).is_empty());
}

#[test]
fn two_values_of_one_buffered_stamp_are_refused_naming_the_line() {
    let tmp = tempfile::tempdir().unwrap();
    let good = recording(&[Draw::Job { job_s: 60.0 }], 20, 1.0);
    // The buffered sample of the 11th poll again, with another value.
    let t = T0 + 10 * 20 * MS - 5 * MS;
    let w = watts(Draw::Job { job_s: 60.0 }, 200);
    let row = format!("{t},n1,gpu0,buffered_w,{w}\n");
    assert!(good.contains(&row), "{row}");
    let again = format!("{t},n1,gpu0,buffered_w,{}", w + 333.0);
    let body = good.replacen(&row, &format!("{row}{again}\n"), 1);
    let line = body.lines().position(|l| l == again).unwrap() + 1;
    let (code, _, stderr) = import(tmp.path(), "twice.csv", &body);
    assert_eq!(code, 1, "stderr:\n{stderr}");
    assert!(
        stderr.contains(&format!("twice.csv, line {line}")) && stderr.contains("two values"),
        "{stderr}"
    );
}

#[test]
fn a_job_then_idle_is_measured_over_the_job_alone() {
    let tmp = tempfile::tempdir().unwrap();
    // 30 s of the job, then 60 s with observe left running.
    let (code, run, stderr) = import(
        tmp.path(),
        "then-idle.csv",
        &recording(&[Draw::Job { job_s: 30.0 }], 90, 1.0),
    );
    assert_eq!(code, 0, "stderr:\n{stderr}");
    assert!(stderr.contains("only the job's stretch"), "{stderr}");
    let (mean, gpus) = imported(&run);
    assert_eq!(gpus, 1);
    // Over the whole recording the mean is (30 × 500 + 60 × 120) / 90 =
    // 247 W; over the job, 500 W.
    assert!((mean / 500.0 - 1.0).abs() < 0.03, "{mean} W");
}

#[test]
fn a_gpu_that_took_no_part_is_named_and_left_out() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, run, stderr) = import(
        tmp.path(),
        "idle-gpu.csv",
        &recording(&[Draw::Job { job_s: 60.0 }, Draw::Idle], 20, 1.0),
    );
    assert_eq!(code, 0, "stderr:\n{stderr}");
    assert!(stderr.contains("gpu1 took no part in the job"), "{stderr}");
    let (mean, gpus) = imported(&run);
    assert_eq!(gpus, 1, "the idle GPU is in the run");
    assert!((mean / 500.0 - 1.0).abs() < 0.03, "{mean} W");
}
