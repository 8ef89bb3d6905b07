#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! Helpers shared by the collator's integration tests.
#![allow(dead_code, missing_docs)]

use powerlab_core::hw::{BackendInfo, Capability, GpuIdentity};
use powerlab_rundir::{FORMAT_VERSION, Manifest, RunStatus, ToolInfo};

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
        })
        .collect();
    Manifest {
        format_version: FORMAT_VERSION,
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
        gpu_binding: None,
    }
}
