#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! Fuzzing damaged run directories (issue 19). One intact simulated run is
//! copied and damaged — raw files truncated, cut in the middle, deleted,
//! duplicated, swapped, rescaled, reordered, their index lost — and each
//! copy is collated in-process. Checked, and able to fail:
//! - a collation never panics;
//! - a refusal names the raw file it refuses;
//! - a collation that succeeds gives every rung the intact run's figures
//!   exactly, or marks the rung incomplete; and a damage that lost data is
//!   stated on the report's first line.
//!
//! The saved corpus (`tests/corpus/damaged.txt`, one case a line) is
//! replayed first, every time; then random cases for `POWERLAB_FUZZ_SECS`
//! seconds (default 3; `scripts/bench/fuzz.sh` runs 600). A failing random case
//! is printed in the corpus format, to be added to the file.

use crate::util::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const GPUS: usize = 3;
const FIGURES: [&str; 9] = [
    "mean_w",
    "peak_w",
    "p1_w",
    "p99_w",
    "spread_w",
    "swing_w",
    "raw_mean_w",
    "raw_spread_w",
    "raw_swing_w",
];

/// One damage to a run directory's raw files.
#[derive(Debug, Clone, PartialEq)]
enum Damage {
    /// Keep the first `permille` ‰ of the file's bytes.
    Truncate(usize, u32),
    /// Remove the bytes between two positions (‰ of the file).
    Hole(usize, u32, u32),
    /// Delete the file.
    Delete(usize),
    /// Overwrite file `b` with file `a`.
    Duplicate(usize, usize),
    /// Exchange two files.
    Swap(usize, usize),
    /// Multiply every power value of a file by `factor`.
    Scale(usize, f64),
    /// Shuffle a file's rows (header kept first).
    Reorder(usize, u64),
    /// Delete the file's index.
    DropIndex(usize),
    /// Keep the first `permille` ‰ of the index's bytes.
    TruncateIndex(usize, u32),
    /// Reverse the order of the index's checkpoints.
    ReverseIndex(usize),
    /// Append `n` copies of the file's last row with its value doubled.
    Append(usize, u32),
}

impl Damage {
    fn line(&self) -> String {
        match self {
            Damage::Truncate(g, p) => format!("truncate {g} {p}"),
            Damage::Hole(g, a, b) => format!("hole {g} {a} {b}"),
            Damage::Delete(g) => format!("delete {g}"),
            Damage::Duplicate(a, b) => format!("duplicate {a} {b}"),
            Damage::Swap(a, b) => format!("swap {a} {b}"),
            Damage::Scale(g, f) => format!("scale {g} {f}"),
            Damage::Reorder(g, s) => format!("reorder {g} {s}"),
            Damage::DropIndex(g) => format!("drop_index {g}"),
            Damage::TruncateIndex(g, p) => format!("truncate_index {g} {p}"),
            Damage::ReverseIndex(g) => format!("reverse_index {g}"),
            Damage::Append(g, n) => format!("append {g} {n}"),
        }
    }

    fn parse(s: &str) -> Option<Damage> {
        let f: Vec<&str> = s.split_whitespace().collect();
        let n = |i: usize| f.get(i).and_then(|v| v.parse::<usize>().ok());
        Some(match *f.first()? {
            "truncate" => Damage::Truncate(n(1)?, f.get(2)?.parse().ok()?),
            "hole" => Damage::Hole(n(1)?, f.get(2)?.parse().ok()?, f.get(3)?.parse().ok()?),
            "delete" => Damage::Delete(n(1)?),
            "duplicate" => Damage::Duplicate(n(1)?, n(2)?),
            "swap" => Damage::Swap(n(1)?, n(2)?),
            "scale" => Damage::Scale(n(1)?, f.get(2)?.parse().ok()?),
            "reorder" => Damage::Reorder(n(1)?, f.get(2)?.parse().ok()?),
            "drop_index" => Damage::DropIndex(n(1)?),
            "truncate_index" => Damage::TruncateIndex(n(1)?, f.get(2)?.parse().ok()?),
            "reverse_index" => Damage::ReverseIndex(n(1)?),
            "append" => Damage::Append(n(1)?, f.get(2)?.parse().ok()?),
            _ => return None,
        })
    }

    /// Whether this damage loses or changes data (a copied index-less file
    /// that is whole loses nothing).
    fn loses_data(&self) -> bool {
        !matches!(
            self,
            Damage::DropIndex(_)
                | Damage::Truncate(_, 1000)
                | Damage::Scale(_, 1.0)
                | Damage::TruncateIndex(..)
                | Damage::ReverseIndex(_)
        )
    }
}

fn damage() -> impl Strategy<Value = Damage> {
    let g = 0..GPUS;
    prop_oneof![
        (g.clone(), 0u32..=1000).prop_map(|(g, p)| Damage::Truncate(g, p)),
        (g.clone(), 0u32..1000, 0u32..1000).prop_map(|(g, a, b)| Damage::Hole(
            g,
            a.min(b),
            a.max(b)
        )),
        g.clone().prop_map(Damage::Delete),
        (g.clone(), g.clone())
            .prop_filter("two files", |(a, b)| a != b)
            .prop_map(|(a, b)| Damage::Duplicate(a, b)),
        (g.clone(), g.clone())
            .prop_filter("two files", |(a, b)| a != b)
            .prop_map(|(a, b)| Damage::Swap(a, b)),
        (
            g.clone(),
            prop_oneof![
                Just(1000.0),
                Just(0.5),
                Just(1.001),
                Just(-1.0),
                Just(0.001)
            ]
        )
            .prop_map(|(g, f)| Damage::Scale(g, f)),
        (g.clone(), any::<u64>()).prop_map(|(g, s)| Damage::Reorder(g, s)),
        g.clone().prop_map(Damage::DropIndex),
        (g.clone(), 0u32..=1000).prop_map(|(g, p)| Damage::TruncateIndex(g, p)),
        g.clone().prop_map(Damage::ReverseIndex),
        (g, 1u32..50).prop_map(|(g, n)| Damage::Append(g, n)),
    ]
}

fn raw(dir: &Path, g: usize) -> PathBuf {
    dir.join(format!("raw/gpu{g}.csv"))
}

fn apply(dir: &Path, d: &Damage) {
    let read = |g: usize| std::fs::read(raw(dir, g)).unwrap_or_default();
    match *d {
        Damage::Truncate(g, p) => {
            let b = read(g);
            let _ = std::fs::write(raw(dir, g), &b[..b.len() * p as usize / 1000]);
        }
        Damage::Hole(g, a, z) => {
            let b = read(g);
            let (a, z) = (b.len() * a as usize / 1000, b.len() * z as usize / 1000);
            let mut out = b[..a].to_vec();
            out.extend_from_slice(&b[z..]);
            let _ = std::fs::write(raw(dir, g), out);
        }
        Damage::Delete(g) => {
            let _ = std::fs::remove_file(raw(dir, g));
        }
        Damage::Duplicate(a, b) => {
            let _ = std::fs::write(raw(dir, b), read(a));
        }
        Damage::Swap(a, b) => {
            let (x, y) = (read(a), read(b));
            let _ = std::fs::write(raw(dir, a), y);
            let _ = std::fs::write(raw(dir, b), x);
        }
        Damage::Scale(g, f) => {
            let text = String::from_utf8_lossy(&read(g)).into_owned();
            let out: String = text
                .split_inclusive('\n')
                .map(|l| {
                    let c: Vec<&str> = l.trim_end_matches('\n').split(',').collect();
                    match (
                        c.len(),
                        c.get(3),
                        c.get(4).and_then(|v| v.parse::<f64>().ok()),
                    ) {
                        (5, Some(i), Some(v)) if i.ends_with("_w") => format!(
                            "{},{},{},{},{}{}",
                            c[0],
                            c[1],
                            c[2],
                            c[3],
                            v * f,
                            if l.ends_with('\n') { "\n" } else { "" }
                        ),
                        _ => l.to_string(),
                    }
                })
                .collect();
            let _ = std::fs::write(raw(dir, g), out);
        }
        Damage::Reorder(g, seed) => {
            let text = String::from_utf8_lossy(&read(g)).into_owned();
            let mut lines: Vec<&str> = text.lines().collect();
            if lines.len() > 2 {
                let body = &mut lines[1..];
                // A small deterministic shuffle (Fisher–Yates on an LCG).
                let mut x = seed | 1;
                for i in (1..body.len()).rev() {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    body.swap(i, (x >> 33) as usize % (i + 1));
                }
            }
            let _ = std::fs::write(raw(dir, g), lines.join("\n") + "\n");
        }
        Damage::DropIndex(g) => {
            let _ = std::fs::remove_file(dir.join(format!("raw/gpu{g}.idx")));
        }
        Damage::TruncateIndex(g, p) => {
            let path = dir.join(format!("raw/gpu{g}.idx"));
            let b = std::fs::read(&path).unwrap_or_default();
            let _ = std::fs::write(&path, &b[..b.len() * p as usize / 1000]);
        }
        Damage::ReverseIndex(g) => {
            let path = dir.join(format!("raw/gpu{g}.idx"));
            let t = std::fs::read_to_string(&path).unwrap_or_default();
            let mut lines: Vec<&str> = t.lines().collect();
            if lines.len() > 1 {
                lines[1..].reverse();
            }
            let _ = std::fs::write(&path, lines.join("\n") + "\n");
        }
        Damage::Append(g, n) => {
            let text = String::from_utf8_lossy(&read(g)).into_owned();
            if let Some(last) = text.lines().rev().find(|l| l.contains("buffered_w")) {
                let c: Vec<&str> = last.split(',').collect();
                if c.len() == 5 {
                    let v: f64 = c[4].parse().unwrap_or(0.0);
                    let rows: String = (1..=n)
                        .map(|k| {
                            format!(
                                "{},{},{},{},{}\n",
                                c[0].parse::<i64>().unwrap_or(0) + i64::from(k) * 20_000_000,
                                c[1],
                                c[2],
                                c[3],
                                v * 2.0
                            )
                        })
                        .collect();
                    let _ = std::fs::write(raw(dir, g), text + &rows);
                }
            }
        }
    }
}

fn figures(out: &powerlab_collate::CollateOutput) -> Vec<serde_json::Value> {
    out.rungs
        .iter()
        .map(|r| serde_json::to_value(r).unwrap())
        .collect()
}

/// Damages a copy of `intact` and checks what collate makes of it; says
/// whether the collation refused.
fn check(
    intact: &Path,
    want: &[serde_json::Value],
    root: &Path,
    damages: &[Damage],
) -> Result<bool, String> {
    let case = tempfile::tempdir_in(root).unwrap();
    let dir = case.path().join("run");
    copy_run(intact, &dir, false);
    for d in damages {
        apply(&dir, d);
    }
    let what = damages
        .iter()
        .map(Damage::line)
        .collect::<Vec<_>>()
        .join("; ");
    let got = std::panic::catch_unwind(|| powerlab_collate::collate(&dir))
        .map_err(|_| format!("{what}: collate panicked"))?;
    match got {
        Err(e) => {
            let msg = e.to_string();
            if !(msg.contains("raw/gpu") || msg.contains("raw\\gpu")) {
                return Err(format!("{what}: the refusal names no raw file: {msg}"));
            }
            return Ok(true);
        }
        Ok(out) => {
            let rungs = figures(&out);
            if rungs.len() != want.len() {
                return Err(format!(
                    "{what}: {} rungs, the intact run has {}",
                    rungs.len(),
                    want.len()
                ));
            }
            for (a, b) in want.iter().zip(&rungs) {
                let changed: Vec<&str> = FIGURES.iter().copied().filter(|f| a[f] != b[f]).collect();
                if !changed.is_empty() && b["incomplete"].is_null() {
                    return Err(format!(
                        "{what}: rung {} changed {changed:?} without a mark: {} vs {}",
                        b["label"], a, b
                    ));
                }
            }
            let lost = damages.iter().any(Damage::loses_data);
            let first = std::fs::read_to_string(dir.join("report/report.md"))
                .unwrap_or_default()
                .lines()
                .next()
                .unwrap_or_default()
                .to_string();
            let marked = rungs.iter().any(|r| !r["incomplete"].is_null());
            if lost
                && rungs
                    .iter()
                    .zip(want)
                    .any(|(b, a)| FIGURES.iter().any(|f| a[f] != b[f]))
                && !first.contains("INCOMPLETE RAW DATA")
            {
                return Err(format!(
                    "{what}: figures changed and the report's first line does not say so: {first}"
                ));
            }
            if marked && !first.contains("INCOMPLETE RAW DATA") {
                return Err(format!("{what}: marked rungs, unmarked report: {first}"));
            }
        }
    }
    Ok(false)
}

fn intact_run() -> Run {
    let c = campaign(
        "[[phase]]\nkind = \"sustained\"\nname = \"s\"\nduration_s = 2\n[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiods_ms = [400, 100]\nmodes = [\"in_phase\", \"staggered\"]\nduration_s = 3\n",
    );
    let r = run_sim(&c, &["--sim-gpus", &GPUS.to_string(), "--no-collate"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    r
}

#[test]
fn damaged_run_directories_are_refused_by_name_or_marked() {
    let r = intact_run();
    let want = figures(&powerlab_collate::collate(r.dir()).unwrap());
    assert!(
        want.iter().all(|x| x["incomplete"].is_null()),
        "the intact run is whole"
    );
    let root = tempfile::tempdir().unwrap();
    // 1. The saved corpus.
    let corpus = include_str!("corpus/damaged.txt");
    let mut replayed = 0;
    for line in corpus
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let damages: Vec<Damage> = line
            .split(';')
            .map(|d| {
                Damage::parse(d)
                    .unwrap_or_else(|| panic!("corpus line `{line}`: `{d}` is not a damage"))
            })
            .collect();
        if let Err(e) = check(r.dir(), &want, root.path(), &damages) {
            panic!("corpus case failed: {e}");
        }
        replayed += 1;
    }
    assert!(replayed >= 10, "the corpus holds its cases");
    // 2. Random cases for the budget.
    let budget = Duration::from_secs(
        std::env::var("POWERLAB_FUZZ_SECS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(3),
    );
    let deadline = Instant::now() + budget;
    let (cases, refused) = (std::cell::Cell::new(0u64), std::cell::Cell::new(0u64));
    let strategy = proptest::collection::vec(damage(), 1..=3);
    while Instant::now() < deadline {
        let mut runner = TestRunner::new(Config {
            cases: 16,
            failure_persistence: None,
            ..Config::default()
        });
        let result = runner.run(&strategy, |damages| {
            cases.set(cases.get() + 1);
            let was_refused =
                check(r.dir(), &want, root.path(), &damages).map_err(TestCaseError::fail)?;
            refused.set(refused.get() + u64::from(was_refused));
            Ok(())
        });
        if let Err(e) = result {
            panic!("{e}\n(add the minimal case to tests/corpus/damaged.txt as `damage; damage`)");
        }
    }
    eprintln!(
        "damaged run directories: {replayed} corpus cases, {} random cases ({} refused by name, the rest collated and checked against the intact run)",
        cases.get(),
        refused.get()
    );
}
