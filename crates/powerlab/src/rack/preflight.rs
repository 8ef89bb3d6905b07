//! The rack preflight: every node's health capture and its clock against
//! rank 0's, gathered; one unhealthy node stops every node before load,
//! naming it (unless `--allow-unhealthy`, which is said).

use super::say;
use crate::node::RunConfig;
use anyhow::Result;
use powerlab_core::units::{ms_to_ns_trunc, ns_to_ms};
use powerlab_health::HealthReport;
use powerlab_rack::protocol::gather_json;
use powerlab_rack::{ClockOffset, RackLink};
use serde::{Deserialize, Serialize};

/// A node's preflight verdict.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NodeVerdict {
    /// The node's label.
    pub node: String,
    /// Whether its health and its clock passed.
    pub passed: bool,
    /// The first failing contract, or the all-clear.
    pub headline: String,
    /// Its realtime clock against rank 0's, ns.
    pub clock_offset_ns: i64,
    /// The round trip of that measurement, ns.
    pub clock_rtt_ns: i64,
    /// GPUs the campaign drives on it.
    pub gpus: usize,
    /// How its GPUs were chosen among the ranks on its host.
    pub gpu_binding: Option<String>,
}

/// What the rack preflight leaves for the run.
pub struct Checked {
    /// Every node's verdict, by rank.
    pub verdicts: Vec<NodeVerdict>,
    /// This node's own capture (kept for the manifest on real GPUs).
    pub health: HealthReport,
}

/// Runs this node's checks and gathers every node's verdict
/// (`Ok(Err(code))` when the rack is refused).
pub fn check(
    cfg: &RunConfig,
    link: &RackLink,
    label: &str,
    offsets: &[ClockOffset],
    siblings: &[(u32, String)],
    node_lock: Result<(), String>,
) -> Result<Result<Checked, i32>> {
    let campaign = &cfg.campaign;
    let (rank, size) = (link.info().rank, link.info().size);
    let tolerance_ns = ms_to_ns_trunc(campaign.rack.clock_tolerance_ms);
    let needs_nccl = campaign.needs_nccl();
    let (health, available) = match cfg.sim() {
        Some(s) => (
            crate::cmd_preflight::sim_capture(s.gpus, &s.faults, label, needs_nccl),
            s.gpus,
        ),
        None => {
            let mut facts = powerlab_health::probe::probe();
            // The rack's other ranks on this host hold GPUs of their own.
            facts.set_aside_processes(siblings);
            let n = facts.cuda_uuids.len();
            (powerlab_health::run_checks(&facts, "idle", needs_nccl), n)
        }
    };
    let gpus = campaign.gpus.count(available);
    let mine = offsets[rank];
    let clock_ok = !mine.exceeds(tolerance_ns);
    let lock_problem = node_lock.err();
    let headline = if let Some(problem) = &lock_problem {
        format!("FAIL node lock: {problem}")
    } else if !clock_ok {
        format!(
            "FAIL cross-node clock: this node's realtime clock is {:+.3} ms from rank 0's (±{:.3} ms), beyond the campaign's {:.3} ms: synchronise clocks (chrony/PTP) before a rack run",
            ns_to_ms(mine.offset_ns),
            mine.rtt_ns as f64 / 2e6,
            ns_to_ms(tolerance_ns)
        )
    } else {
        health.headline()
    };
    let verdict = NodeVerdict {
        node: label.to_string(),
        passed: clock_ok && lock_problem.is_none() && !health.failed(),
        headline,
        clock_offset_ns: mine.offset_ns,
        clock_rtt_ns: mine.rtt_ns,
        gpus,
        gpu_binding: crate::GPU_BINDING.get().cloned(),
    };
    let verdicts: Vec<NodeVerdict> = link.submit(move |t| gather_json(t, &verdict)).wait()?;
    let failed: Vec<&NodeVerdict> = verdicts.iter().filter(|v| !v.passed).collect();
    if !failed.is_empty() {
        let list: Vec<String> = failed
            .iter()
            .map(|v| format!("{}: {}", v.node, v.headline))
            .collect();
        if cfg.allow_unhealthy {
            say(
                rank,
                &format!(
                    "--allow-unhealthy: running anyway on an unhealthy rack: {}",
                    list.join("; ")
                ),
            );
        } else {
            say(
                rank,
                &format!(
                    "rack preflight failed on {} of {size} nodes; no load was started on any node:\n  {}",
                    failed.len(),
                    list.join("\n  ")
                ),
            );
            if rank == 0 {
                let _ = std::fs::create_dir_all(&cfg.results);
                let path = cfg
                    .results
                    .join(powerlab_rundir::files::results::RACK_PREFLIGHT_FAILED);
                let _ = std::fs::write(
                    &path,
                    serde_json::to_string_pretty(&verdicts).unwrap_or_default() + "\n",
                );
            }
            let _ = powerlab_health::report::write(
                &health,
                &cfg.results,
                &format!("preflight-{label}"),
            );
            return Ok(Err(crate::exit::PREFLIGHT));
        }
    }

    Ok(Ok(Checked { verdicts, health }))
}
