#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! `powerlab import`: a recording in `observe --csv`'s schema made into a
//! run directory with one workload rung. The recording here is a
//! simulated run's own raw rows over its workload rung (the raw files and
//! observe's CSV share a schema); the import must keep every buffered
//! sample of its window and report their mean. A damaged recording is
//! refused naming the file and the line.

use crate::util::{assert_exit, campaign, powerlab_output, run_dirs, run_sim, text};
use std::path::{Path, PathBuf};

/// A raw row: (ts_ns, gpu, instrument, value).
type Row = (i64, String, String, f64);

fn rows(path: &Path) -> Vec<Row> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (
                f[0].parse().unwrap(),
                f[2].to_string(),
                f[3].to_string(),
                f[4].parse().unwrap(),
            )
        })
        .collect()
}

/// The `rung_started` event of the first rung of `kind`: (measured
/// from, end), ns.
fn window(dir: &Path, kind: &str) -> (i64, i64) {
    let text = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    let e = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["event"] == "rung_started" && e["rung"]["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} rung in {}", dir.display()));
    (
        e["measure_from_ns"].as_i64().unwrap(),
        e["end_ns"].as_i64().unwrap(),
    )
}

/// The (ts, W) of `gpu`'s buffered samples within [from, to].
fn buffered(rows: &[Row], gpu: &str, (from, to): (i64, i64)) -> Vec<(i64, f64)> {
    let mut b: Vec<(i64, f64)> = rows
        .iter()
        .filter(|r| r.1 == gpu && r.2 == "buffered_w" && (from..=to).contains(&r.0))
        .map(|r| (r.0, r.3))
        .collect();
    b.sort_by_key(|s| s.0);
    b
}

/// `gpu`'s mean power over [from, to] from its energy counter (mJ),
/// interpolated linearly to the window's ends.
fn counter_mean_w(rows: &[Row], gpu: &str, (from, to): (i64, i64)) -> f64 {
    let mut e: Vec<(i64, f64)> = rows
        .iter()
        .filter(|r| r.1 == gpu && r.2 == "energy_mj")
        .map(|r| (r.0, r.3))
        .collect();
    e.sort_by_key(|s| s.0);
    let at = |t: i64| {
        let k = e.partition_point(|s| s.0 <= t).clamp(1, e.len() - 1);
        let ((t0, e0), (t1, e1)) = (e[k - 1], e[k]);
        e0 + (e1 - e0) * (t - t0) as f64 / (t1 - t0) as f64
    };
    (at(to) - at(from)) / 1000.0 / ((to - from) as f64 / 1e9)
}

/// `powerlab import RECORDING --out OUT`: (exit code, stdout, stderr).
fn import(recording: &Path, out: &Path) -> (i32, String, String) {
    let o = powerlab_output([
        "import",
        recording.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    (
        o.status.code().unwrap_or(-1),
        text(&o.stdout),
        text(&o.stderr),
    )
}

#[test]
fn a_recording_imports_as_one_workload_rung_with_every_buffered_sample() {
    let run = run_sim(
        &campaign(
            "[[phase]]\nkind = \"workload\"\nname = \"train\"\ncommand = [\"python3\", \"train.py\"]\nduration_s = 12\n\
             sim = { iteration_ms = 240, compute_fraction = 0.575 }\n",
        ),
        &["--sim-gpus", "2"],
    );
    assert_exit(&run.out, 0);
    // The recording: both GPUs' rows over the workload rung, as observe
    // would have written them (one file, each GPU's rows in its order).
    let span = window(run.dir(), "workload");
    let mut recorded: Vec<Row> = Vec::new();
    let mut csv = String::from("ts_ns,node,gpu,instrument,value\n");
    for gpu in ["gpu0", "gpu1"] {
        let path = run.dir().join(format!("raw/{gpu}.csv"));
        let text = std::fs::read_to_string(&path).unwrap();
        for (line, row) in text.lines().skip(1).zip(rows(&path)) {
            if (span.0..=span.1).contains(&row.0) {
                csv += line;
                csv.push('\n');
                recorded.push(row);
            }
        }
    }
    let file = run.results.path().join("observed.csv");
    std::fs::write(&file, csv).unwrap();
    let out = run.results.path().join("imported");
    let (code, stdout, stderr) = import(&file, &out);
    assert_eq!(code, 0, "stderr:\n{stderr}");
    let dir = PathBuf::from(stdout.trim());
    assert_eq!(run_dirs(&out), vec![dir.clone()]);

    // One workload rung, its window within the recording and most of it.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report/summary.json")).unwrap())
            .unwrap();
    let rungs = summary["rungs"].as_array().unwrap();
    assert_eq!(rungs.len(), 1, "{rungs:?}");
    assert_eq!(rungs[0]["kind"], "workload");
    assert_eq!(rungs[0]["label"], "recording");
    assert!(
        rungs[0]["incomplete"].is_null(),
        "{}",
        rungs[0]["incomplete"]
    );
    let w = window(&dir, "workload");
    assert!(w.0 >= span.0 && w.1 <= span.1, "{w:?} outside {span:?}");
    assert!(
        (w.1 - w.0) as f64 > 0.95 * (span.1 - span.0) as f64,
        "{w:?} of {span:?}"
    );

    // Every buffered sample of the window is in the run, as recorded; the
    // rung's buffered mean is theirs.
    let imported: Vec<Row> = ["gpu0", "gpu1"]
        .iter()
        .flat_map(|g| rows(&dir.join(format!("raw/{g}.csv"))))
        .collect();
    let mut node_mean = 0.0;
    for gpu in ["gpu0", "gpu1"] {
        let want = buffered(&recorded, gpu, w);
        assert!(want.len() > 400, "{gpu}: {} samples", want.len());
        assert_eq!(buffered(&imported, gpu, w), want, "{gpu}");
        node_mean += want.iter().map(|s| s.1).sum::<f64>() / want.len() as f64;
    }
    let raw_mean = rungs[0]["raw_mean_w"].as_f64().unwrap();
    assert!(
        (raw_mean / node_mean - 1.0).abs() < 0.01,
        "buffered mean {raw_mean} W in the report, {node_mean} W from the samples"
    );
    // The rung's own figure is the energy counter's where it is read (on
    // the simulated node the buffered samples' 6 ms windows miss ~1 % of
    // this job's energy): the recorded counter's over the window.
    assert_eq!(rungs[0]["method"], "energy counter");
    let counter: f64 = ["gpu0", "gpu1"]
        .iter()
        .map(|g| counter_mean_w(&recorded, g, w))
        .sum();
    let mean = rungs[0]["mean_w"].as_f64().unwrap();
    assert!(
        (mean / counter - 1.0).abs() < 0.01,
        "{mean} W vs {counter} W"
    );

    // The GPUs are the recording's.
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["backend"]["backend"], "replay");
    assert_eq!(manifest["backend"]["gpus"][1]["uuid"], "RECORDED-gpu1");
    assert_eq!(manifest["backend"]["gpus"][0]["power_limit_w"], 700.0);
    // The same recording again into the same place: refused, saying so.
    let (code, _, stderr) = import(&file, &out);
    assert_eq!(code, 1, "stderr:\n{stderr}");
    assert!(stderr.contains("is there already"), "{stderr}");
}

#[test]
fn a_damaged_recording_is_refused_naming_the_file_and_the_line() {
    let tmp = tempfile::tempdir().unwrap();
    let mut good = String::from("ts_ns,node,gpu,instrument,value\n");
    for k in 0..100i64 {
        let t = 1_800_000_000_000_000_000 + k * 20_000_000;
        good += &format!("{t},n1,gpu0,instant_w,300\n{t},n1,gpu0,buffered_w,301.5\n");
    }
    good += "1800000000000000000,n1,gpu0,power_limit_w,700\n";
    let out = tmp.path().join("out");
    let cases = [
        (
            good.replacen("ts_ns,", "timestamp,", 1),
            vec!["bad-header.csv, line 1", "ts_ns,node,gpu,instrument,value"],
        ),
        (
            good.replacen(
                "n1,gpu0,buffered_w,301.5\n",
                "n1,gpu0,buffered_w,301.5\n#garbage!\n",
                1,
            ),
            vec!["garbage.csv, line 4", "`#garbage!` is not a reading"],
        ),
        (
            good.replacen(
                "1800000000020000000,n1,gpu0,instant_w,300\n",
                "1800000000020000000,n1,gpu0,instant_w,three hundred\n",
                1,
            ),
            vec!["value.csv, line 4", "three hundred"],
        ),
    ];
    for (name, (body, words)) in ["bad-header.csv", "garbage.csv", "value.csv"]
        .iter()
        .zip(cases)
    {
        let file = tmp.path().join(name);
        std::fs::write(&file, body).unwrap();
        let (code, _, stderr) = import(&file, &out);
        assert_eq!(code, 1, "{name}: stderr:\n{stderr}");
        for w in words {
            assert!(stderr.contains(w), "{name}: stderr lacks `{w}`:\n{stderr}");
        }
        assert!(
            run_dirs(&out).is_empty(),
            "{name}: a run directory was made"
        );
    }
    // The undamaged file imports.
    let file = tmp.path().join("good.csv");
    std::fs::write(&file, good).unwrap();
    let (code, _, stderr) = import(&file, &out);
    assert_eq!(code, 0, "stderr:\n{stderr}");
}

#[test]
fn a_recording_has_the_raw_files_header() {
    assert_eq!(
        powerlab_sim::replay::HEADER.join(","),
        powerlab_rundir::raw::RAW_HEADER
    );
}
