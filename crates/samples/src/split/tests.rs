#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! The one pass against the passes it replaces: the same series, or the
//! same first error, for files with every fault the checks look for.

use super::checked_series;
use crate::integrity::{check_content, check_listed};
use crate::load::{analysed_rows, check_rows, raw_schema};
use crate::series::SeriesSet;
use polars::prelude::*;
use powerlab_core::hw::{BackendInfo, Capability, GpuIdentity};
use powerlab_rundir::{Manifest, RunStatus, ToolInfo};
use proptest::prelude::*;
use std::path::Path;

const BOUNDS: (i64, i64) = (1_000, 1_000_000);

fn manifest() -> Manifest {
    let gpu = |i: u32, key: &str| GpuIdentity {
        key: key.into(),
        uuid: format!("GPU-{i}"),
        name: "t".into(),
        nvml_index: i,
        power_limit_w: 700.0,
        power_smoothing: Default::default(),
    };
    Manifest {
        format_version: 1,
        seal: None,
        tool: ToolInfo {
            name: "t".into(),
            version: "0".into(),
            git_rev: "x".into(),
        },
        campaign: "t".into(),
        campaign_resolved: serde_json::json!({}),
        plan: serde_json::json!({}),
        backend: BackendInfo {
            backend: "test".into(),
            node_id: "node-a".into(),
            host: "node-a".into(),
            // A key longer than a view holds inline (12 bytes).
            gpus: vec![gpu(0, "gpu0"), gpu(1, "GPU-0123456789abcdef")],
            driver: "t".into(),
            nccl: Capability::Present("x".into()),
        },
        clock: "t".into(),
        started_ns: 0,
        ended_ns: Some(1),
        started_utc: "t".into(),
        status: RunStatus::Complete,
        allow_unhealthy: false,
        command: vec![],
        raw_index: false,
        checksums: Vec::new(),
        sensor: None,
        gpu_binding: None,
    }
}

/// The passes [`checked_series`] replaces, in their order.
fn passes(path: &Path, df: &DataFrame, m: &Manifest) -> Result<SeriesSet, String> {
    let s = |e: crate::CollateError| e.to_string();
    check_listed(path, m).map_err(s)?;
    let df = analysed_rows(df.clone()).map_err(s)?;
    check_rows(path, &df, BOUNDS).map_err(s)?;
    check_content(path, &df, m).map_err(s)?;
    Ok(SeriesSet::from_frame(&df))
}

/// Parses CSV text as the collator parses a raw file, in `parts` chunks.
fn frame(text: &str, parts: usize) -> DataFrame {
    let lines: Vec<&str> = text.lines().skip(1).collect();
    let per = lines.len().div_ceil(parts.max(1)).max(1);
    let mut out: Option<DataFrame> = None;
    for part in lines.chunks(per) {
        let csv = format!("ts_ns,node,gpu,instrument,value\n{}\n", part.join("\n"));
        let df = CsvReadOptions::default()
            .with_has_header(true)
            .with_schema(Some(raw_schema()))
            .into_reader_with_file_handle(std::io::Cursor::new(csv.into_bytes()))
            .finish()
            .unwrap();
        match &mut out {
            Some(all) => all.vstack_mut_owned(df).map(|_| ()).unwrap(),
            None => out = Some(df),
        }
    }
    out.unwrap_or_else(|| DataFrame::empty_with_schema(&raw_schema()))
}

/// One row: a field each, some of them faults.
fn row() -> impl Strategy<Value = String> {
    let ts = prop_oneof![
        8 => (1_000i64..1_000_000).prop_map(|t| t.to_string()),
        1 => Just(String::new()),
        1 => (2_000_000i64..3_000_000).prop_map(|t| t.to_string()),
    ];
    let node = prop_oneof![10 => Just("node-a"), 1 => Just("node-b"), 1 => Just("")];
    // `@` is the file's own GPU, `#` one other (the passes name a foreign
    // GPU in no set order, so a file holds at most one).
    let gpu = prop_oneof![10 => Just("@"), 1 => Just("#"), 1 => Just("")];
    let inst = prop_oneof![
        Just("buffered_w"),
        Just("instant_w"),
        Just("average_w"),
        Just("power_limit_w"),
        Just("power_cap_time_ns"),
        Just("energy_mj"),
        Just("fan_speed_pct"),
        Just("pcie_tx_kbps"),
        Just(""),
    ];
    let value = prop_oneof![
        10 => (0.0f64..800.0).prop_map(|v| format!("{v}")),
        1 => Just("700".to_string()),
        1 => Just("inf".to_string()),
        1 => Just("NaN".to_string()),
        1 => Just("-50".to_string()),
        1 => Just("5000".to_string()),
        1 => Just(String::new()),
    ];
    (ts, node, gpu, inst, value).prop_map(|(t, n, g, i, v)| format!("{t},{n},{g},{i},{v}"))
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 400,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn one_pass_gives_the_passes_series_or_their_first_error(
        rows in prop::collection::vec(row(), 0..60),
        faultless in any::<bool>(),
        file in prop_oneof![Just("gpu0"), Just("GPU-0123456789abcdef"), Just("gpu9")],
        parts in 1usize..4,
    ) {
        let m = manifest();
        // Half the cases keep only rows without a fault, so the series
        // themselves are compared (not only the first error).
        let rows: Vec<String> = rows
            .iter()
            .map(|r| r.replace('@', file).replace('#', "gpu7"))
            .collect();
        let rows: Vec<String> = if faultless {
            rows.into_iter()
                .filter(|r| {
                    let f: Vec<&str> = r.split(',').collect();
                    f.iter().all(|x| !x.is_empty())
                        && f[0].parse::<i64>().is_ok_and(|t| t <= BOUNDS.1)
                        && f[1] == "node-a"
                        && f[2] == file
                        && f[4].parse::<f64>().is_ok_and(|v| (0.0..=800.0).contains(&v))
                })
                .collect()
        } else {
            rows
        };
        let text = format!("ts_ns,node,gpu,instrument,value\n{}\n", rows.join("\n"));
        let df = frame(&text, parts);
        let path = Path::new("run/raw").join(format!("{file}.csv"));
        let one = checked_series(&path, &df, BOUNDS, &m).map_err(|e| e.to_string());
        prop_assert_eq!(one, passes(&path, &df, &m));
    }
}

#[test]
fn a_file_of_one_gpu_splits_into_its_instruments_sorted_by_time() {
    let m = manifest();
    let text = "ts_ns,node,gpu,instrument,value\n\
                3000,node-a,gpu0,buffered_w,10\n\
                2000,node-a,gpu0,buffered_w,20\n\
                2500,node-a,gpu0,instant_w,30\n\
                2600,node-a,gpu0,fan_speed_pct,40\n";
    let path = Path::new("run/raw/gpu0.csv");
    let s = checked_series(path, &frame(text, 2), BOUNDS, &m).unwrap();
    let key = |i| ("node-a".to_string(), "gpu0".to_string(), i);
    let want = SeriesSet::of([
        (
            key(powerlab_core::Instrument::BufferedW),
            vec![(2000, 20.0), (3000, 10.0)],
        ),
        (key(powerlab_core::Instrument::InstantW), vec![(2500, 30.0)]),
    ]);
    assert_eq!(s, want);
}
