//! The rack preflight: every node's health capture and its clock against
//! rank 0's, gathered; one unhealthy node stops every node before load,
//! naming it (unless `--allow-unhealthy`, which is said).

use super::say;
use crate::node::RunConfig;
use anyhow::Result;
use powerlab_core::GpuSelector;
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
    /// The UUIDs of the GPUs it drives (real GPUs; empty on the simulated
    /// node, whose GPUs are each rank's own).
    #[serde(default)]
    pub gpu_uuids: Vec<String>,
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
    let (health, available, gpu_uuids) = capture(cfg, label, siblings, needs_nccl);
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
        gpu_uuids,
    };
    let verdicts: Vec<NodeVerdict> = link.submit(move |t| gather_json(t, &verdict)).wait()?;
    let shared = shared_gpus(&verdicts);
    if !shared.is_empty() {
        // Never allowed: two ranks driving one GPU measure each other.
        say(
            rank,
            &format!(
                "rack preflight failed: two ranks would drive the same GPU; no load was started on any node:\n  {}\n  Give each rank its own GPUs: under Slurm add --gpus-per-task=1 (or --gpu-bind=single:1) to srun, or leave CUDA_VISIBLE_DEVICES unset and powerlab splits the host's GPUs among its ranks; under mpirun do not export one CUDA_VISIBLE_DEVICES to every rank",
                shared.join("\n  ")
            ),
        );
        return Ok(Err(crate::exit::PREFLIGHT));
    }
    if let Some(code) = refuse_unhealthy(cfg, (rank, size), label, &health, &verdicts) {
        return Ok(Err(code));
    }

    Ok(Ok(Checked { verdicts, health }))
}

/// This node's health capture (the simulated node's, or a probe of the
/// real GPUs, the ones its sibling ranks hold set aside), the GPUs
/// available to it, and the UUIDs of those the campaign drives.
fn capture(
    cfg: &RunConfig,
    label: &str,
    siblings: &[(u32, String)],
    needs_nccl: bool,
) -> (HealthReport, usize, Vec<String>) {
    match cfg.sim() {
        Some(s) => (
            crate::cmd_preflight::sim_capture(s.gpus, &s.faults, label, needs_nccl),
            s.gpus,
            Vec::new(),
        ),
        None => {
            let mut facts = powerlab_health::probe::probe();
            // The rack's other ranks on this host hold GPUs of their own.
            facts.set_aside_processes(siblings);
            let n = facts.cuda_uuids.len();
            let driven = driven_uuids(&cfg.campaign.gpus, &facts.cuda_uuids);
            (
                powerlab_health::run_checks(&facts, "idle", needs_nccl),
                n,
                driven,
            )
        }
    }
}

/// Says which nodes failed the preflight, if any: with `--allow-unhealthy`
/// the run goes on (None); otherwise rank 0 writes the verdicts, each node
/// its own health report, and the rack is refused (the exit status).
fn refuse_unhealthy(
    cfg: &RunConfig,
    (rank, size): (usize, usize),
    label: &str,
    health: &HealthReport,
    verdicts: &[NodeVerdict],
) -> Option<i32> {
    let failed: Vec<&NodeVerdict> = verdicts.iter().filter(|v| !v.passed).collect();
    if failed.is_empty() {
        return None;
    }
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
        return None;
    }
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
            serde_json::to_string_pretty(verdicts).unwrap_or_default() + "\n",
        );
    }
    let _ = powerlab_health::report::write(health, &cfg.results, &format!("preflight-{label}"));
    Some(crate::exit::PREFLIGHT)
}

/// The GPUs a campaign's selector picks among the visible ones, by UUID
/// (none when it cannot be resolved: the run says why when it opens them).
fn driven_uuids(selector: &GpuSelector, visible: &[String]) -> Vec<String> {
    selector
        .resolve(visible, "this node")
        .map(|at| at.into_iter().map(|i| visible[i].clone()).collect())
        .unwrap_or_default()
}

/// Each GPU that two or more ranks would drive, in words:
/// `GPU-… by n000-host, n001-host` (none when every rank has its own).
/// UUIDs are unique across machines, so ranks whose host names differ
/// (containers on one machine) are compared too.
fn shared_gpus(verdicts: &[NodeVerdict]) -> Vec<String> {
    let mut by_gpu: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for v in verdicts {
        for u in &v.gpu_uuids {
            by_gpu.entry(u.as_str()).or_default().push(v.node.as_str());
        }
    }
    by_gpu
        .into_iter()
        .filter(|(_, nodes)| nodes.len() > 1)
        .map(|(uuid, nodes)| format!("{uuid} by {}", nodes.join(", ")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use powerlab_core::GpuRef;

    fn verdict(node: &str, uuids: &[&str]) -> NodeVerdict {
        NodeVerdict {
            node: node.into(),
            passed: true,
            headline: String::new(),
            clock_offset_ns: 0,
            clock_rtt_ns: 0,
            gpus: uuids.len(),
            gpu_binding: None,
            gpu_uuids: uuids.iter().map(|u| u.to_string()).collect(),
        }
    }

    #[test]
    fn ranks_that_share_a_gpu_are_named() {
        // Slurm's --gpus-per-node=8 with no per-task binding: every task
        // of a host sees the same list.
        let shared = shared_gpus(&[
            verdict("n000-a", &["GPU-0", "GPU-1"]),
            verdict("n001-a", &["GPU-0", "GPU-1"]),
            verdict("n002-b", &["GPU-2", "GPU-3"]),
        ]);
        assert_eq!(
            shared,
            ["GPU-0 by n000-a, n001-a", "GPU-1 by n000-a, n001-a"]
        );
        // Containers on one machine, each with a host name of its own.
        let shared = shared_gpus(&[
            verdict("n000-c1", &["GPU-0"]),
            verdict("n001-c2", &["GPU-0"]),
        ]);
        assert_eq!(shared, ["GPU-0 by n000-c1, n001-c2"]);
        let own = shared_gpus(&[verdict("n000-a", &["GPU-0"]), verdict("n001-a", &["GPU-1"])]);
        assert!(own.is_empty(), "{own:?}");
        // The simulated node sends none.
        assert!(shared_gpus(&[verdict("n000-a", &[]), verdict("n001-a", &[])]).is_empty());
    }

    #[test]
    fn the_selector_picks_uuids_among_the_visible_gpus() {
        let visible: Vec<String> = ["GPU-a", "GPU-b"].iter().map(|u| u.to_string()).collect();
        assert_eq!(driven_uuids(&GpuSelector::All, &visible), visible);
        let list = GpuSelector::List(vec![GpuRef::Index(1)]);
        assert_eq!(driven_uuids(&list, &visible), ["GPU-b"]);
        // A GPU this rank cannot see is not one it shares.
        let by_id = GpuSelector::List(vec![GpuRef::Uuid("GPU-z".into())]);
        assert!(driven_uuids(&by_id, &visible).is_empty());
    }
}
