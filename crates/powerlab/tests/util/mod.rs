#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! Helpers for running the real binary on the simulated node.
#![allow(dead_code, missing_docs)]

pub mod fixtures;
pub mod truth;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub const EPOCH: i64 = 1_795_997_027_000_000_000;

pub struct Run {
    pub out: Output,
    pub results: tempfile::TempDir,
    pub dir: Option<PathBuf>,
}

impl Run {
    pub fn stderr(&self) -> String {
        text(&self.out.stderr)
    }
    pub fn stdout(&self) -> String {
        text(&self.out.stdout)
    }
    pub fn code(&self) -> i32 {
        self.out.status.code().unwrap_or(-1)
    }
    pub fn dir(&self) -> &Path {
        self.dir
            .as_deref()
            .unwrap_or_else(|| panic!("no run directory; stderr:\n{}", self.stderr()))
    }
    pub fn summary(&self) -> Vec<serde_json::Value> {
        let text =
            std::fs::read_to_string(self.dir().join("report/summary.json")).expect("summary.json");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["rungs"].as_array().unwrap().clone()
    }
    pub fn events(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(self.dir().join("events.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
    pub fn node_curve(&self) -> Vec<(i64, Option<f64>)> {
        let text = std::fs::read_to_string(self.dir().join("report/node_curve.csv")).unwrap();
        text.lines()
            .skip(1)
            .map(|l| {
                let mut f = l.split(',');
                let t: i64 = f.next().unwrap().parse().unwrap();
                (t, f.next().and_then(|v| v.parse().ok()))
            })
            .collect()
    }
}

/// The powerlab binary cargo built for these tests (for a command line that
/// names it, as `mpirun` or `sh -c` take it).
pub const POWERLAB: &str = env!("CARGO_BIN_EXE_powerlab");

/// The binary under test: the one cargo built, or the one
/// `POWERLAB_TEST_BIN` names (an older build, to show that a test fails
/// on it).
pub fn bin() -> String {
    std::env::var("POWERLAB_TEST_BIN").unwrap_or_else(|_| POWERLAB.to_string())
}

/// `--allow-programs`, the consent a run that starts programs needs; none
/// for an older binary under test that predates it (it asked for none).
pub fn allow_programs() -> &'static [&'static str] {
    static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let has = HAS.get_or_init(|| {
        let help = capture(powerlab().args(["run", "--help"]));
        text(&help.stdout).contains("--allow-programs")
    });
    if *has { &["--allow-programs"] } else { &[] }
}

/// A command for the binary under test: every test starts powerlab
/// through it.
pub fn powerlab() -> Command {
    Command::new(bin())
}

/// `powerlab ARGS`, run to the end with stdout and stderr captured.
pub fn powerlab_output<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    capture(powerlab().args(args))
}

/// Runs a command to the end with stdout and stderr captured.
pub fn capture(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("could not start {cmd:?}: {e}"))
}

/// A captured stream as text (lossy UTF-8).
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Asserts a finished command's exit code, showing its stderr if it differs.
#[track_caller]
pub fn assert_exit(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{}; stderr:\n{}",
        out.status,
        text(&out.stderr)
    );
}

pub fn run_dirs(root: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(root)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default()
}

/// Runs `campaign` (TOML text) on the simulated node with extra arguments.
pub fn run_sim(campaign: &str, extra: &[&str]) -> Run {
    run_sim_at(campaign, EPOCH, extra)
}

/// `run_sim` with virtual time starting at `epoch_ns`.
pub fn run_sim_at(campaign: &str, epoch_ns: i64, extra: &[&str]) -> Run {
    let results = tempfile::tempdir().unwrap();
    let file = results.path().join("campaign.toml");
    std::fs::write(&file, campaign).unwrap();
    let root = results.path().join("runs");
    let epoch = epoch_ns.to_string();
    let out = capture(
        powerlab()
            .args([
                "run",
                file.to_str().unwrap(),
                "--backend",
                "sim",
                "--results",
                root.to_str().unwrap(),
                "--sim-epoch-ns",
                &epoch,
            ])
            .args(extra),
    );
    let dir = run_dirs(&root).into_iter().next();
    Run { out, results, dir }
}

pub fn campaign(body: &str) -> String {
    format!(
        "[campaign]\nname = \"t\"\nconfirm_node_swing = true\n[defaults]\nwarmup_s = 1\ncooldown_s = 1\n{body}"
    )
}

/// Copies a run directory (lock files left out; `report/` too unless
/// `with_report`).
pub fn copy_run(from: &Path, to: &Path, with_report: bool) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let (p, name) = (e.path(), e.file_name());
        if name.to_string_lossy().starts_with('.') || (!with_report && name == "report") {
            continue;
        }
        if p.is_dir() {
            copy_run(&p, &to.join(&name), true);
        } else {
            std::fs::copy(&p, to.join(&name)).unwrap();
        }
    }
}

/// A CSV file's rows, each a map from its header's names to the cells.
pub fn csv_rows(path: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let mut r = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let h = r.headers().unwrap().clone();
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            h.iter()
                .map(String::from)
                .zip(rec.iter().map(String::from))
                .collect()
        })
        .collect()
}

/// The true node power at 1 ms: the sum of every GPU's `sim-truth` file.
pub fn true_node(dir: &std::path::Path) -> (i64, Vec<f64>) {
    let mut start = None;
    let mut sum: Vec<f64> = Vec::new();
    // Each GPU's waveform (`jobs.csv` beside them is a lifecycle rung's
    // processes).
    let mut files: Vec<_> = std::fs::read_dir(dir.join("sim-truth"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("gpu"))
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no sim-truth files");
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for (k, line) in text.lines().skip(1).enumerate() {
            let (t, v) = line.split_once(',').unwrap();
            let (t, v): (i64, f64) = (t.parse().unwrap(), v.parse().unwrap());
            if k == 0 {
                assert!(
                    start.is_none_or(|s| s == t),
                    "truth files start at different times"
                );
                start = Some(t);
            }
            if sum.len() <= k {
                sum.push(0.0);
            }
            sum[k] += v;
        }
    }
    (start.unwrap(), sum)
}
