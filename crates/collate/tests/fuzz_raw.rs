#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! Fuzzing the readers of a run directory (raw samples, edges, collectives):
//! arbitrary bytes and mutated valid rows. `collate` may refuse a file but
//! must never panic, and a refusal names the file. Runs for
//! `POWERLAB_FUZZ_SECS` seconds (default 3; `scripts/bench/fuzz.sh` runs 600).

use crate::common;
use powerlab_rundir::{EventLog, Mode, PhaseKind, RunDir, RunEvent, RungInfo};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const T0: i64 = 1_795_997_027_000_000_000;

fn budget() -> Duration {
    Duration::from_secs(
        std::env::var("POWERLAB_FUZZ_SECS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(3),
    )
}

/// A run directory with a manifest and one duty rung, and no raw files yet.
fn skeleton(root: &Path) -> PathBuf {
    let dir = RunDir::create(root, "fuzz", "node", T0).unwrap();
    let m = common::manifest("fuzz", &["gpu0".to_string()], T0, T0 + 2_000_000_000);
    m.write(&dir.manifest()).unwrap();
    let mut ev = EventLog::create(&dir.events()).unwrap();
    let rung = RungInfo {
        id: 0,
        label: "d".into(),
        phase: "d".into(),
        kind: PhaseKind::Duty,
        mode: Mode::InPhase,
        period_ms: Some(100.0.into()),
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
        epoch_ns: T0,
        measure_from_ns: T0,
        end_ns: T0 + 1_000_000_000,
        offsets_ns: vec![0],
        gpus: vec!["gpu0".into()],
    })
    .unwrap();
    std::fs::create_dir_all(dir.raw_dir()).unwrap();
    dir.path
}

const INSTRUMENTS: &[&str] = &[
    "buffered_w",
    "instant_w",
    "average_w",
    "energy_mj",
    "gpu_temp_c",
    "clock_events",
    "",
    "BUFFERED_W",
    "buffered_w,extra",
];
const NUMBERS: &[&str] = &[
    "0",
    "-1",
    "1e308",
    "-1e308",
    "NaN",
    "inf",
    "",
    "700.5",
    "9223372036854775807",
    "-9223372036854775808",
    "1.7976931348623157e309",
    "0x10",
    "1_000",
    " 5",
];

fn raw_row() -> impl Strategy<Value = String> {
    (
        0i64..2_000,
        0..INSTRUMENTS.len(),
        0..NUMBERS.len(),
        0u8..6,
        "[a-z0-9,\"\\n]{0,6}",
    )
        .prop_map(|(ms, i, v, shape, junk)| {
            let ts = T0 + ms * 1_000_000;
            match shape {
                0 => format!("{ts},node,gpu0,{},{}", INSTRUMENTS[i], NUMBERS[v]),
                1 => format!("{},node,gpu0,buffered_w,{}", NUMBERS[v], 100 + ms % 600),
                2 => format!("{ts},node,gpu{},buffered_w,{}", ms % 3, 100 + ms % 600),
                3 => format!("{ts},node,gpu0,buffered_w,{}{junk}", 100 + ms % 600),
                4 => format!("{ts},node,gpu0,buffered_w"),
                _ => format!("{ts},node,gpu0,buffered_w,{}", 100 + ms % 600),
            }
        })
}

fn raw_file() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..400),
        (
            proptest::collection::vec(raw_row(), 0..200),
            any::<bool>(),
            any::<bool>()
        )
            .prop_map(|(rows, header, newline)| {
                let mut s = if header {
                    String::from("ts_ns,node,gpu,instrument,value\n")
                } else {
                    String::new()
                };
                s.push_str(&rows.join("\n"));
                if newline {
                    s.push('\n');
                }
                s.into_bytes()
            }),
    ]
}

fn check(root: &Path, raw: &[u8], edges: &[u8], collectives: &[u8]) -> Result<(), TestCaseError> {
    // A directory of its own per case, so a failing case's leftovers never
    // disturb the shrinking that follows it.
    let case = tempfile::tempdir_in(root).unwrap();
    let dir = skeleton(case.path());
    std::fs::write(dir.join("raw/gpu0.csv"), raw).unwrap();
    std::fs::write(dir.join("edges.csv"), edges).unwrap();
    std::fs::write(dir.join("collectives.csv"), collectives).unwrap();
    match powerlab_collate::collate(&dir) {
        Ok(out) => {
            // A finished collation states only finite figures, and its
            // report exists and names the run.
            for r in &out.rungs {
                for v in [
                    r.mean_w,
                    r.peak_w,
                    r.spread_w,
                    r.swing_w,
                    r.raw_mean_w,
                    r.raw_spread_w,
                ]
                .into_iter()
                .flatten()
                {
                    prop_assert!(v.is_finite(), "a figure that is not finite: {r:?}");
                }
            }
            let report = std::fs::read_to_string(dir.join("report/report.md")).unwrap_or_default();
            prop_assert!(
                report.contains("fuzz"),
                "the report is missing or does not name the campaign"
            );
        }
        Err(e) => {
            // The refusal names the file itself, not a step that mentions "raw".
            let msg = e.to_string();
            prop_assert!(
                [
                    "gpu0.csv",
                    "edges.csv",
                    "collectives.csv",
                    "manifest.json",
                    "events.jsonl"
                ]
                .iter()
                .any(|f| msg.contains(f)),
                "refusal names no file: {msg}"
            );
        }
    }
    Ok(())
}

#[test]
fn run_directory_readers_never_panic_on_arbitrary_files() {
    let root = tempfile::tempdir().unwrap();
    let edges_file = prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..200),
        proptest::collection::vec((0u32..3, 0i64..1_000, "(start|rise|fall|x)"), 0..30).prop_map(
            |rows| {
                let mut s = String::from("rung_id,gpu,index,kind,intended_ns,achieved_ns\n");
                for (i, (r, ms, k)) in rows.iter().enumerate() {
                    s.push_str(&format!(
                        "{r},gpu0,{i},{k},{},{}\n",
                        T0 + ms * 1_000_000,
                        T0 + ms * 1_000_000 + 3_000
                    ));
                }
                s.into_bytes()
            }
        ),
    ];
    let coll_file = proptest::collection::vec(any::<u8>(), 0..120);
    let strategy = (raw_file(), edges_file, coll_file);
    let deadline = Instant::now() + budget();
    let cases = std::cell::Cell::new(0u64);
    while Instant::now() < deadline {
        // A fresh runner each round (a runner stops once it has its case count).
        let mut runner = TestRunner::new(Config {
            cases: 32,
            failure_persistence: None,
            ..Config::default()
        });
        if let Err(e) = runner.run(&strategy, |(raw, edges, coll)| {
            cases.set(cases.get() + 1);
            check(root.path(), &raw, &edges, &coll)
        }) {
            panic!("{e}");
        }
    }
    eprintln!("run-directory readers: {} cases", cases.get());
}

/// Found by this fuzzer: one row with a timestamp far from the run made the
/// node-curve grid span centuries and the collator abort allocating it.
#[test]
fn a_row_far_outside_the_run_is_refused_by_name_not_gridded() {
    let root = tempfile::tempdir().unwrap();
    let dir = skeleton(root.path());
    let rows = format!(
        "ts_ns,node,gpu,instrument,value\n{T0},node,gpu0,buffered_w,100\n{},node,gpu0,buffered_w,100\n0,node,gpu0,buffered_w,1\n",
        T0 + 20_000_000
    );
    std::fs::write(dir.join("raw/gpu0.csv"), rows).unwrap();
    let e = powerlab_collate::collate(&dir).unwrap_err().to_string();
    assert!(
        e.contains("gpu0.csv") && e.contains("outside this run"),
        "{e}"
    );
}

/// Found by this fuzzer: an `inf` power value reached the plots, whose axis
/// code never finished with an infinite range.
#[test]
fn a_value_that_is_not_finite_is_refused_by_name() {
    let root = tempfile::tempdir().unwrap();
    let dir = skeleton(root.path());
    for bad in ["inf", "NaN", "1.7976931348623157e309"] {
        let rows = format!(
            "ts_ns,node,gpu,instrument,value\n{T0},node,gpu0,buffered_w,100\n{},node,gpu0,buffered_w,{bad}\n",
            T0 + 20_000_000
        );
        std::fs::write(dir.join("raw/gpu0.csv"), rows).unwrap();
        let e = powerlab_collate::collate(&dir).unwrap_err().to_string();
        assert!(
            e.contains("gpu0.csv") && e.contains("not a finite number"),
            "{bad}: {e}"
        );
    }
}
