#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! Issue 59, faults 5 to 7: outputs that met, went stale or forged a
//! report. Two rungs' files share no name (refused at plan time); a
//! prediction is written whole or not at all; a node name that cannot
//! name a run's node is refused before anything is made; a grid mode's
//! name cannot forge a report's rows.

use crate::util::{assert_exit, bin, campaign, capture, powerlab, run_dirs, run_sim, text};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Fault 5: phase `train` repeated twice (rung `train/r2`) and a phase
/// `train-r2` both wrote `workload/train-r2.{stdout,stderr,json}`.
#[test]
fn fault5_two_rungs_that_would_write_one_file_are_refused_by_plan() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("c.toml");
    std::fs::write(
        &file,
        campaign(
            "[[phase]]\nkind = \"workload\"\nname = \"train\"\ncommand = [\"python3\", \"train.py\"]\nduration_s = 2\nrepeats = 2\n\
             [[phase]]\nkind = \"workload\"\nname = \"train-r2\"\ncommand = [\"python3\", \"train.py\"]\nduration_s = 2\n",
        ),
    )
    .unwrap();
    for verb in ["plan", "run"] {
        let runs = tmp.path().join("runs");
        let mut cmd = powerlab();
        cmd.args([verb, file.to_str().unwrap()]);
        if verb == "run" {
            cmd.args(["--backend", "sim", "--results", runs.to_str().unwrap()]);
        }
        let out = capture(&mut cmd);
        let err = text(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{verb}: {err}");
        assert!(
            err.contains(
                "rungs `train/r2` and `train-r2` would write the same files (`train-r2.*`)"
            ),
            "{verb}: {err}"
        );
        assert!(run_dirs(&runs).is_empty(), "{verb} made a run directory");
    }
}

/// Every file under `dir`, relative, with its bytes.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(
                    p.strip_prefix(dir).unwrap().to_path_buf(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    out
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `predict` of the committed edges run for `gpus` GPUs into `out`, with
/// files limited to `limit_kib` KiB when given (a disk that fills part-way:
/// a write past it fails with EFBIG, SIGXFSZ being ignored).
fn predict(out: &Path, gpus: u32, limit_kib: Option<u64>) -> std::process::Output {
    let run = repo().join("results/h200x1-2026-12-01/edges");
    let args = format!(
        "predict {} --gpus {gpus} --iteration-ms 500 --compute-fraction 0.6 --span-s 20 --out {}",
        run.display(),
        out.display()
    );
    let limit = limit_kib.map_or_else(String::new, |k| format!("ulimit -f {k}; "));
    capture(
        std::process::Command::new("bash")
            .arg("-c")
            .arg(format!("trap '' XFSZ; {limit}exec {} {args}", bin())),
    )
}

/// Fault 6: a re-prediction into an existing `--out` that failed part-way
/// (a full disk) left the old `report.html` and plots beside the new CSVs,
/// and a truncated `facility_mw.csv`/`.dat` without its `.cfg`.
#[test]
fn fault6_a_prediction_that_fails_part_way_leaves_the_previous_one_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("pred");
    let first = predict(&out, 16, None);
    assert_exit(&first, 0);
    let before = tree(&out);
    assert!(before.contains_key(Path::new("report.html")), "{before:?}");
    let largest = before.values().map(Vec::len).max().unwrap() as u64;
    // Half the largest file: some files fit, that one does not.
    let failed = predict(&out, 100_000, Some(largest / 2048));
    assert_ne!(failed.status.code(), Some(0), "{}", text(&failed.stderr));
    let after = tree(&out);
    let changed: Vec<&PathBuf> = before
        .keys()
        .chain(after.keys())
        .filter(|k| before.get(*k) != after.get(*k))
        .collect();
    assert!(
        changed.is_empty(),
        "the failed prediction changed {changed:?}\n{}",
        text(&failed.stderr)
    );
    // Nothing left beside it.
    let siblings: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(siblings, vec!["pred".to_string()], "{siblings:?}");
    // A complete re-prediction replaces it whole.
    assert_exit(&predict(&out, 100_000, None), 0);
    let again = tree(&out);
    assert_eq!(
        again.keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>()
    );
    assert_ne!(
        again[Path::new("report.md")],
        before[Path::new("report.md")]
    );
    // A folder holding anything else is refused, never replaced.
    let other = tmp.path().join("mine");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("notes.txt"), "mine").unwrap();
    let refused = predict(&other, 16, None);
    assert_ne!(refused.status.code(), Some(0));
    assert!(
        text(&refused.stderr).contains("not an earlier prediction's"),
        "{}",
        text(&refused.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(other.join("notes.txt")).unwrap(),
        "mine"
    );
}

/// Fault 7, third item: a node name with a space broke `import`'s own
/// collation, leaving a half-made run directory.
#[test]
fn fault7_a_recording_whose_node_name_has_a_space_is_refused_before_anything_is_made() {
    // The recording: the simulated run's own rows over its workload rung
    // (the raw files and observe's CSV share a schema), as `recording::`
    // imports them, with the node renamed.
    let run = run_sim(
        &campaign(
            "[[phase]]\nkind = \"workload\"\nname = \"train\"\ncommand = [\"python3\", \"train.py\"]\nduration_s = 8\n\
             sim = { iteration_ms = 240, compute_fraction = 0.575 }\n",
        ),
        &["--sim-gpus", "1"],
    );
    assert_exit(&run.out, 0);
    let events = std::fs::read_to_string(run.dir().join("events.jsonl")).unwrap();
    let started = events
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["event"] == "rung_started" && e["rung"]["kind"] == "workload")
        .unwrap();
    let span = started["measure_from_ns"].as_i64().unwrap()..=started["end_ns"].as_i64().unwrap();
    let raw = std::fs::read_to_string(run.dir().join("raw/gpu0.csv")).unwrap();
    let node = raw
        .lines()
        .nth(1)
        .unwrap()
        .split(',')
        .nth(1)
        .unwrap()
        .to_string();
    let mut good = String::from("ts_ns,node,gpu,instrument,value\n");
    for l in raw.lines().skip(1) {
        let t: i64 = l.split(',').next().unwrap().parse().unwrap();
        if span.contains(&t) {
            good += l;
            good.push('\n');
        }
    }
    // The same recording with its node's own name imports (the test can
    // fail only on the name).
    let ok_file = run.results.path().join("ok.csv");
    std::fs::write(&ok_file, &good).unwrap();
    let ok_dir = run.results.path().join("ok");
    let ok = capture(powerlab().args([
        "import",
        ok_file.to_str().unwrap(),
        "--out",
        ok_dir.to_str().unwrap(),
    ]));
    assert_exit(&ok, 0);
    let csv = good.replace(&format!(",{node},"), ",node 1,");
    let file = run.results.path().join("observed.csv");
    std::fs::write(&file, csv).unwrap();
    let out_dir = run.results.path().join("imported");
    let out = capture(powerlab().args([
        "import",
        file.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]));
    let err = text(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("node `node 1` cannot name a node"), "{err}");
    assert!(
        run_dirs(&out_dir).is_empty(),
        "a half-made run directory was left"
    );
}

/// Fault 7, last item: a `[[grid.mode]]` name holding a newline and `|`
/// forged a `## Verdict` heading and shifted the verdict row's cells.
#[test]
fn fault7_a_grid_mode_name_that_would_forge_a_report_row_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("c.toml");
    std::fs::write(
        &file,
        campaign(
            "[[phase]]\nkind = \"sustained\"\nduration_s = 5\n\
             [grid]\n[[grid.mode]]\nname = \"a |\\n## Verdict\\n| pass\"\nhz = 1\ndamping_ratio = 0.1\n",
        ),
    )
    .unwrap();
    let out = capture(powerlab().args(["validate", file.to_str().unwrap()]));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("grid.mode[0].name"), "{err}");
    assert!(!err.contains("\n## Verdict"), "{err}");
}
