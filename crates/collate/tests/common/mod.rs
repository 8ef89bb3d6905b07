#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! Helpers shared by the collator's integration tests.
#![allow(dead_code, missing_docs)]

use powerlab_core::hw::{BackendInfo, Capability, GpuIdentity};
use powerlab_rundir::{Manifest, RunStatus, ToolInfo};

/// A finished test run's manifest for these GPU keys on node `node`.
pub fn manifest(campaign: &str, keys: &[String], started_ns: i64, ended_ns: i64) -> Manifest {
    let gpus = keys
        .iter()
        .enumerate()
        .map(|(i, k)| GpuIdentity {
            key: k.clone(),
            uuid: format!("GPU-{i}"),
            name: "t".into(),
            nvml_index: i as u32,
            power_limit_w: 700.0,
            power_smoothing: Default::default(),
        })
        .collect();
    Manifest {
        // Format 1: these hand-made runs have no raw index and no checksums.
        format_version: 1,
        seal: None,
        tool: ToolInfo {
            name: "t".into(),
            version: "0".into(),
            git_rev: "x".into(),
        },
        campaign: campaign.into(),
        campaign_resolved: serde_json::json!({"sampling": {"grid_ms": 10.0, "poll_interval_ms": 20.0}}),
        plan: serde_json::json!({}),
        backend: BackendInfo {
            backend: "test".into(),
            node_id: "node".into(),
            host: "node".into(),
            gpus,
            driver: "t".into(),
            nccl: Capability::Present("x".into()),
        },
        clock: "t".into(),
        started_ns,
        ended_ns: Some(ended_ns),
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

/// Writes `raw/<key>.csv` as the run's writer does, without an index (as a
/// format-1 run from before indexes; these fixtures' manifests say so).
pub fn write_raw(dir: &powerlab_rundir::RunDir, key: &str, samples: &[powerlab_core::Sample]) {
    std::fs::create_dir_all(dir.raw_dir()).unwrap();
    let mut text = String::from("ts_ns,node,gpu,instrument,value\n");
    for s in samples {
        text.push_str(&format!(
            "{},node,{key},{},{}\n",
            s.ts_ns,
            s.instrument.as_str(),
            powerlab_rundir::raw::fmt_value(s.value)
        ));
    }
    std::fs::write(dir.raw_dir().join(format!("{key}.csv")), text).unwrap();
}
