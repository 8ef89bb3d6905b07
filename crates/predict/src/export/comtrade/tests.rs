//! The writer against a small parser of its own `.cfg` and `.dat`; the
//! sample a grid study's CI check reads (`COMTRADE_SAMPLE_DIR`); its speed.

use super::super::study_csv::{EventRow, WAVEFORM_CSV, WaveformCsvWriter, write_events};
use super::*;
use std::time::Instant;

/// What the test reads back from a `.cfg`.
#[derive(Debug)]
struct Cfg {
    lines: Vec<String>,
    names: Vec<String>,
    units: Vec<String>,
    scale: Vec<(f64, f64)>,
    range: Vec<(f64, f64)>,
    rate_hz: f64,
    samples: usize,
    start: String,
    format: String,
    timemult: f64,
}

fn parse_cfg(path: &Path) -> Cfg {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.ends_with("\r\n"), "CR LF line ends");
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    let counts: Vec<&str> = lines[1].split(',').collect();
    let k: usize = counts[0].parse().unwrap();
    assert_eq!(counts[1], format!("{k}A"));
    assert_eq!(counts[2], "0D");
    let chan: Vec<Vec<&str>> = lines[2..2 + k]
        .iter()
        .map(|l| l.split(',').collect())
        .collect();
    for c in &chan {
        assert_eq!(c.len(), 13, "13 fields per analog channel: {c:?}");
    }
    let f = |s: &str| s.parse::<f64>().unwrap();
    let rest = &lines[2 + k..];
    assert_eq!(rest[1], "1", "one sample rate");
    let rate: Vec<&str> = rest[2].split(',').collect();
    Cfg {
        names: chan.iter().map(|c| c[1].to_string()).collect(),
        units: chan.iter().map(|c| c[4].to_string()).collect(),
        scale: chan.iter().map(|c| (f(c[5]), f(c[6]))).collect(),
        range: chan.iter().map(|c| (f(c[8]), f(c[9]))).collect(),
        rate_hz: f(rate[0]),
        samples: rate[1].parse().unwrap(),
        start: rest[3].clone(),
        format: rest[5].clone(),
        timemult: f(&rest[6]),
        lines,
    }
}

/// Rows of a FLOAT32 `.dat`: (sample number, timestamp, values).
fn parse_dat(path: &Path, channels: usize) -> Vec<(u32, u32, Vec<f32>)> {
    let bytes = std::fs::read(path).unwrap();
    let row = 8 + 4 * channels;
    assert_eq!(bytes.len() % row, 0, "whole rows only");
    let word = |b: &[u8]| <[u8; 4]>::try_from(b).unwrap();
    bytes
        .chunks(row)
        .map(|r| {
            let values = (0..channels)
                .map(|i| f32::from_le_bytes(word(&r[8 + 4 * i..12 + 4 * i])))
                .collect();
            (
                u32::from_le_bytes(word(&r[..4])),
                u32::from_le_bytes(word(&r[4..8])),
                values,
            )
        })
        .collect()
}

#[test]
fn round_trips_values_count_and_rate() {
    let dir = tempfile::tempdir().unwrap();
    let names = ["plain", "staggered, 4 groups", "smoothed"];
    let start = STUDY_EPOCH_NS + 90 * NS_PER_S + 250 * NS_PER_US;
    let mut w = ComtradeWriter::create(dir.path(), "t", "Site A", &names, 10.0, start).unwrap();
    let rows: Vec<[f64; 3]> = (0..1000)
        .map(|i| {
            let x = i as f64;
            [
                100.0 + (x * 0.1).sin() * 40.0,
                120.0 + x * 1e-3,
                0.015625 * x,
            ]
        })
        .collect();
    for r in &rows {
        w.push(r).unwrap();
    }
    let summary = w.finish().unwrap();
    let cfg = parse_cfg(&dir.path().join("t.cfg"));
    assert_eq!(cfg.lines[0], "Site A,gpu-power-lab predict,2013");
    assert_eq!(cfg.names, ["plain", "staggered; 4 groups", "smoothed"]);
    assert_eq!(cfg.units, ["MW"; 3]);
    assert_eq!(cfg.scale, [(1.0, 0.0); 3]);
    assert_eq!((cfg.samples, cfg.rate_hz), (1000, 100.0));
    assert_eq!(cfg.start, "01/01/2000,00:01:30.000250");
    assert_eq!(
        cfg.lines[cfg.lines.len() - 5],
        cfg.start,
        "trigger = first sample"
    );
    assert_eq!((cfg.format.as_str(), cfg.timemult), ("FLOAT32", 10_000.0));
    let dat = parse_dat(&dir.path().join("t.dat"), 3);
    assert_eq!(dat.len(), cfg.samples);
    for (i, ((n, ts, v), r)) in dat.iter().zip(&rows).enumerate() {
        assert_eq!((*n as usize, *ts as usize), (i + 1, i));
        // The reader's time: timestamp × timemult × 1 µs.
        assert!((f64::from(*ts) * cfg.timemult - i as f64 * 10_000.0).abs() < 1e-9);
        let stored: Vec<f32> = r.iter().map(|&x| x as f32).collect();
        assert_eq!(v, &stored);
    }
    for (c, fig) in summary.channels.iter().enumerate() {
        let col: Vec<f64> = rows.iter().map(|r| r[c]).collect();
        let mean = col.iter().sum::<f64>() / col.len() as f64;
        let max = col.iter().copied().fold(f64::MIN, f64::max);
        let min = col.iter().copied().fold(f64::MAX, f64::min);
        assert!((fig.mean_mw - mean).abs() < 1e-9 * mean.abs().max(1.0));
        assert_eq!((fig.peak_mw, fig.min_mw), (max, min));
        let (lo, hi) = cfg.range[c];
        assert_eq!((lo as f32, hi as f32), (min as f32, max as f32));
    }
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join(COMTRADE_JSON)).unwrap()).unwrap();
    assert_eq!(json["samples"], 1000);
    assert_eq!(json["rate_hz"], 100.0);
    assert_eq!(json["channels"][1]["name"], "staggered; 4 groups");
    assert!((summary.last_time_s - 9.99).abs() < 1e-12);
}

#[test]
fn refuses_bad_rows_and_empty_recordings() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    let bad = |e: io::Error| assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    bad(ComtradeWriter::create(p, "t", "s", &[], 10.0, 0).unwrap_err());
    bad(ComtradeWriter::create(p, "t", "s", &["a"], 0.0, 0).unwrap_err());
    let mut w = ComtradeWriter::create(p, "t", "s", &["a", "b"], 10.0, 0).unwrap();
    bad(w.push(&[1.0]).unwrap_err());
    bad(w.push(&[1.0, f64::NAN]).unwrap_err());
    bad(w.finish().unwrap_err());
    assert!(!p.join("t.cfg").exists(), "no .cfg for an empty recording");
}

#[test]
fn formats_the_declared_clock() {
    assert_eq!(
        comtrade_timestamp(STUDY_EPOCH_NS),
        "01/01/2000,00:00:00.000000"
    );
    assert_eq!(comtrade_timestamp(0), "01/01/1970,00:00:00.000000");
    let t = 1_767_225_600 * NS_PER_S + 45_296 * NS_PER_S + 123_456 * NS_PER_US;
    assert_eq!(comtrade_timestamp(t), "01/01/2026,12:34:56.123456");
    assert_eq!(cfg_field("a,b\r\nc"), "a;b;;c");
}

/// The facility power of three scenarios of a 100,000-GPU job at `t_s`,
/// MW: a 4 s start-up ramp, 2 s iterations (1.4 s compute, 0.6 s
/// communication), a checkpoint pause from 300 s to 330 s.
fn sample_row(t_s: f64) -> [f64; 3] {
    let (idle, low, high) = (35.0, 70.0, 140.0);
    if t_s < 4.0 {
        return [idle + (high - idle) * t_s / 4.0; 3];
    }
    if (300.0..330.0).contains(&t_s) {
        return [idle; 3];
    }
    let phase = t_s.rem_euclid(2.0);
    let plain = if phase < 1.4 { high } else { low };
    let staggered = 0.25
        * (0..4)
            .map(|g| {
                if (phase + 0.5 * g as f64) % 2.0 < 1.4 {
                    high
                } else {
                    low
                }
            })
            .sum::<f64>();
    let smoothed = if phase < 1.4 { high } else { 0.9 * high };
    [plain, staggered, smoothed]
}

/// Writes the sample a grid study's CI check reads: the COMTRADE pair,
/// `comtrade.json`, the CSV and `lifecycle_events.csv`, 10 minutes at
/// 10 ms, into `COMTRADE_SAMPLE_DIR` when set (a temporary folder if not).
#[test]
fn writes_the_study_sample() {
    let tmp = tempfile::tempdir().unwrap();
    let dir =
        std::env::var_os("COMTRADE_SAMPLE_DIR").map_or(tmp.path().to_path_buf(), PathBuf::from);
    std::fs::create_dir_all(&dir).unwrap();
    let names = ["plain", "staggered 4 groups", "smoothed"];
    let (period_ms, rows) = (10.0, 60_000);
    let mut w = ComtradeWriter::create(
        &dir,
        COMTRADE_STEM,
        "sample site",
        &names,
        period_ms,
        STUDY_EPOCH_NS,
    )
    .unwrap();
    let mut csv = WaveformCsvWriter::create(&dir.join(WAVEFORM_CSV), &names, period_ms).unwrap();
    for i in 0..rows {
        let row = sample_row(ms_to_s(i as f64 * period_ms));
        w.push(&row).unwrap();
        csv.push(&row).unwrap();
    }
    let s = w.finish().unwrap();
    assert_eq!(csv.finish().unwrap(), rows as u64);
    let ev = |time_s: f64, event: &str, mw_before, mw_after, duration_ms| EventRow {
        time_s,
        event: event.into(),
        mw_before,
        mw_after,
        duration_ms,
    };
    write_events(
        &dir,
        &[
            ev(0.0, "start", 35.0, 140.0, 4000.0),
            ev(300.0, "checkpoint", 140.0, 35.0, 10.0),
            ev(330.0, "resume", 35.0, 140.0, 10.0),
        ],
    )
    .unwrap();
    let table = std::fs::read_to_string(dir.join(WAVEFORM_CSV)).unwrap();
    let mut lines = table.lines();
    assert_eq!(
        lines.next(),
        Some("time_s,plain (MW),staggered 4 groups (MW),smoothed (MW)")
    );
    assert_eq!(
        lines.nth(400),
        Some("4.00,140.000000,122.500000,140.000000")
    );
    assert_eq!((s.samples, s.rate_hz), (rows as u64, 100.0));
    assert_eq!(s.channels[0].peak_mw, 140.0);
}

/// A day at 10 ms of three scenarios, 8.64 M rows: rows/s and the peak
/// resident memory. `cargo test --release -p powerlab-collate --lib
/// streams_a_day -- --ignored --nocapture`
#[test]
#[ignore = "a timing: 173 MB written"]
fn streams_a_day() {
    let dir = tempfile::tempdir().unwrap();
    let rows = 8_640_000u32;
    let t0 = Instant::now();
    let mut w = ComtradeWriter::create(dir.path(), "day", "s", &["a", "b", "c"], 10.0, 0).unwrap();
    for i in 0..rows {
        let x = f64::from(i % 200);
        w.push(&[100.0 + x, 120.0 - x, 110.0]).unwrap();
    }
    let s = w.finish().unwrap();
    let took = t0.elapsed().as_secs_f64();
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let hwm = status
        .lines()
        .find(|l| l.starts_with("VmHWM"))
        .unwrap_or("VmHWM: ?");
    println!(
        "{} rows x 3 in {took:.2} s: {:.2} M rows/s; {hwm}",
        s.samples,
        f64::from(rows) / took / 1e6
    );
    assert_eq!(s.samples, u64::from(rows));
}
