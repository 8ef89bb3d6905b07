#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! Properties of the collator's sample-and-hold node curve (the raw
//! "what NVML sampled" figures) on synthetic run directories: GPU order
//! does not change node sums, splitting a raw file changes nothing, and the
//! node mean is the sum of the per-GPU means on the common grid. (These
//! runs record no edges, so their duty rung has no composed cycle: its
//! headline figures are empty with a verdict, tested below.)

use crate::common;
use powerlab_core::{Instrument, Sample};
use powerlab_rundir::{EventLog, Mode, PhaseKind, RunDir, RunEvent, RungInfo};
use proptest::prelude::*;
use std::path::Path;

const T0: i64 = 1_795_997_027_000_000_000;
const MS: i64 = 1_000_000;

/// One GPU's buffered power: a square wave of `amp` W over `base` W with the
/// given period (ms) and phase, 20 ms samples for 3 s.
fn series(base: f64, amp: f64, period_ms: i64, phase_ms: i64) -> Vec<Sample> {
    (0..150)
        .flat_map(|k| {
            let t = T0 + k * 20 * MS;
            let on = ((k * 20 + phase_ms) % period_ms) < period_ms / 2;
            let w = base + if on { amp } else { 0.0 };
            [
                Sample {
                    ts_ns: t,
                    instrument: Instrument::BufferedW,
                    value: w,
                },
                Sample {
                    ts_ns: t + MS,
                    instrument: Instrument::InstantW,
                    value: w,
                },
            ]
        })
        .collect()
}

fn write_run(root: &Path, gpus: &[(String, Vec<Sample>)], split: bool) -> std::path::PathBuf {
    let dir = RunDir::create(root, "prop", "node", T0).unwrap();
    let keys: Vec<String> = gpus.iter().map(|(k, _)| k.clone()).collect();
    let m = common::manifest("prop", &keys, T0, T0 + 3_000 * MS);
    m.write(&dir.manifest()).unwrap();
    let mut ev = EventLog::create(&dir.events()).unwrap();
    let rung = RungInfo {
        id: 0,
        label: "d".into(),
        phase: "d".into(),
        kind: PhaseKind::Duty,
        mode: Mode::InPhase,
        period_ms: Some(200.0.into()),
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
        epoch_ns: T0 + 200 * MS,
        measure_from_ns: T0 + 200 * MS,
        end_ns: T0 + 2_800 * MS,
        offsets_ns: vec![0; gpus.len()],
        gpus: gpus.iter().map(|g| g.0.clone()).collect(),
    })
    .unwrap();
    for (key, samples) in gpus {
        if split {
            let half = samples.len() / 2;
            common::write_raw(&dir, key, &samples[..half]);
            // A second file for the same GPU: rows carry node and GPU, the file name is free.
            let path = dir.raw_dir().join(format!("{key}-part2.csv"));
            let mut text = String::from("ts_ns,node,gpu,instrument,value\n");
            for s in &samples[half..] {
                text.push_str(&format!(
                    "{},node,{key},{},{}\n",
                    s.ts_ns,
                    s.instrument.as_str(),
                    powerlab_rundir::raw::fmt_value(s.value)
                ));
            }
            std::fs::write(path, text).unwrap();
        } else {
            common::write_raw(&dir, key, samples);
        }
    }
    dir.path
}

fn node_stats(dir: &Path) -> (f64, f64, f64) {
    let out = powerlab_collate::collate(dir).unwrap();
    let r = &out.rungs[0];
    // No edges were recorded: the cycle cannot be folded, and says so.
    assert!(
        r.spread_w.is_none()
            && r.verdict
                .as_deref()
                .is_some_and(|v| v.contains("0 rising edges recorded")),
        "{r:?}"
    );
    (
        r.raw_mean_w.unwrap(),
        r.raw_peak_w.unwrap(),
        r.raw_spread_w.unwrap(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, failure_persistence: None, .. ProptestConfig::default() })]

    #[test]
    fn gpu_order_and_file_splits_do_not_change_node_numbers(
        params in proptest::collection::vec((50.0f64..200.0, 0.0f64..600.0, prop_oneof![Just(100i64), Just(200), Just(400)], 0i64..400), 2..4)
    ) {
        let gpus: Vec<(String, Vec<Sample>)> = params.iter().enumerate().map(|(i, (b, a, p, ph))| (format!("gpu{i}"), series(*b, *a, *p, *ph))).collect();
        let tmp = tempfile::tempdir().unwrap();
        let base = node_stats(&write_run(&tmp.path().join("a"), &gpus, false));
        let mut reversed = gpus.clone();
        reversed.reverse();
        let rev = node_stats(&write_run(&tmp.path().join("b"), &reversed, false));
        let split = node_stats(&write_run(&tmp.path().join("c"), &gpus, true));
        prop_assert_eq!(base, rev);
        prop_assert_eq!(base, split);
        // Sum of means = mean of sums: each GPU's own mean over the rung's grid points.
        let expect: f64 = gpus.iter().map(|(_, s)| {
            // grid points every 10 ms in [T0+200ms, T0+2800ms): latest buffered sample at or before each.
            let buf: Vec<&Sample> = s.iter().filter(|x| x.instrument == Instrument::BufferedW).collect();
            let pts: Vec<f64> = (0..260).map(|k| {
                let t = T0 + 200 * MS + k * 10 * MS;
                buf.iter().rev().find(|x| x.ts_ns <= t).map(|x| x.value).unwrap()
            }).collect();
            pts.iter().sum::<f64>() / pts.len() as f64
        }).sum();
        prop_assert!((base.0 - expect).abs() < 0.01, "node mean {} vs sum of GPU means {}", base.0, expect);
    }
}

#[test]
fn archived_runs_with_gzipped_raw_files_collate_the_same() {
    let gpus: Vec<(String, Vec<Sample>)> = (0..2)
        .map(|i| (format!("gpu{i}"), series(100.0, 500.0, 200, 40 * i)))
        .collect();
    let tmp = tempfile::tempdir().unwrap();
    let dir = write_run(tmp.path(), &gpus, false);
    let plain = node_stats(&dir);
    for k in 0..2 {
        let p = dir.join(format!("raw/gpu{k}.csv"));
        let bytes = std::fs::read(&p).unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut gz, &bytes).unwrap();
        std::fs::write(p.with_extension("csv.gz"), gz.finish().unwrap()).unwrap();
        std::fs::remove_file(&p).unwrap();
    }
    assert_eq!(node_stats(&dir), plain);
    // A file that only pretends to be gzip is refused by name.
    std::fs::write(
        dir.join("raw/gpu0.csv.gz"),
        b"ts_ns,node,gpu,instrument,value\n",
    )
    .unwrap();
    let e = powerlab_collate::collate(&dir).unwrap_err().to_string();
    assert!(e.contains("gpu0.csv.gz") && e.contains("gzip"), "{e}");
}
