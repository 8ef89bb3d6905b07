//! The start decision: whether this node may go on to load. A failed
//! preflight refuses the node (unless overridden, which is recorded); in a
//! rack every node says whether it opened its GPUs and expanded its plan,
//! and if any could not, every node stops before load, naming it.

use super::RunConfig;
use anyhow::{Result, anyhow};
use powerlab_campaign::RackPosition;
use powerlab_health::HealthReport;
use powerlab_runner::RackRun;
use std::sync::Arc;

/// A node's place in a rack run, for the backends.
pub struct RackJoin {
    /// The rack side of the runner.
    pub run: Arc<RackRun>,
    /// This node's label (`n002-host`), its node id in the raw files.
    pub label: String,
    /// The rack-wide NCCL communicator (real GPUs with an NCCL phase).
    pub nccl_world: Option<powerlab_cuda::NcclWorld>,
    /// The rack preflight's capture of this node (real GPUs), so it is not
    /// probed twice; the simulated node needs none.
    pub health: Option<HealthReport>,
    /// The GPU processes of this rack's other ranks on this host (pid, who):
    /// not foreign to this run. The host's node lock is held by the rack
    /// run itself (its first rank on this host).
    pub siblings: Vec<(u32, String)>,
}

impl RackJoin {
    /// Every node says whether it opened its GPUs and expanded its plan;
    /// if any did not, every node stops here, before load, naming it.
    fn confirm(&self, problem: Option<String>) -> Result<(), String> {
        let msg = problem;
        let all = self
            .run
            .link
            .submit(move |t| powerlab_rack::protocol::gather_json(t, &msg))
            .wait()
            .map_err(|e| format!("rack: {e}"))?;
        let bad: Vec<String> = all
            .iter()
            .enumerate()
            .filter_map(|(r, m)| m.as_ref().map(|m| format!("{}: {m}", self.run.describe(r))))
            .collect();
        if bad.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "{} of {} nodes could not start; no load was started on any node:\n  {}",
                bad.len(),
                all.len(),
                bad.join("\n  ")
            ))
        }
    }
}

/// This node's place in its rack (alone: the solo position).
pub fn position(rack: Option<&RackJoin>) -> RackPosition {
    rack.map(|r| r.run.position).unwrap_or(RackPosition::SOLO)
}

/// Whether this node may go on to load. Alone: its own result (an error
/// ends the command). In a rack: every node's; if any failed, every node
/// stops here, before load, naming the failing nodes (`Ok(Err(code))`).
pub fn settle<T>(rack: Option<&RackJoin>, mine: Result<T, String>) -> Result<Result<T, i32>> {
    let Some(r) = rack else {
        return mine.map(Ok).map_err(|e| anyhow!(e));
    };
    let (value, problem) = match mine {
        Ok(v) => (Some(v), None),
        Err(e) => (None, Some(e)),
    };
    match (r.confirm(problem), value) {
        (Ok(()), Some(v)) => Ok(Ok(v)),
        (Err(e), _) => {
            errln!("error: {e}");
            Ok(Err(crate::exit::ERROR))
        }
        (Ok(()), None) => Ok(Err(crate::exit::ERROR)),
    }
}

/// A plan that cannot be expanded for the GPUs found, in words.
pub fn plan_error_text(cfg: &RunConfig, e: &powerlab_campaign::CampaignError) -> String {
    format!(
        "{}: {}{}",
        cfg.file.display(),
        e.message,
        e.allowed
            .as_ref()
            .map(|x| format!(" (allowed: {x})"))
            .unwrap_or_default()
    )
}

/// A failed preflight stops the run before load (exit 3) unless
/// `--allow-unhealthy`, which is said and recorded.
pub fn refuse_unhealthy(cfg: &RunConfig, health: &HealthReport) -> Option<i32> {
    if !health.failed() {
        return None;
    }
    errln!("{}", health.headline());
    if cfg.allow_unhealthy {
        errln!("--allow-unhealthy: running anyway; recorded in the manifest");
        return None;
    }
    errln!(
        "(no load was started; --allow-unhealthy overrides, and the override is recorded in the manifest and on the report's first line)"
    );
    let _ = powerlab_health::report::write(health, &cfg.results, "preflight-failed");
    Some(crate::exit::PREFLIGHT)
}

/// Reads every `[[node_power]]` source once before load, as this node
/// sees it. A failing source refuses the node (unless
/// `--allow-unhealthy`: the user declared it, and a run without it would
/// lack what was asked for); the message names it.
pub fn node_power_refusal(cfg: &RunConfig, node: &str, host: &str) -> Option<String> {
    if cfg.campaign.node_power.is_empty() {
        return None;
    }
    let specs = crate::node_power::for_node(&cfg.campaign.node_power, node, host);
    let checks = crate::node_power::check_all(&specs);
    for l in crate::node_power::lines(&checks) {
        errln!("{l}");
    }
    let msg = crate::node_power::failure(&checks)?;
    if cfg.allow_unhealthy {
        errln!("{msg}");
        errln!(
            "--allow-unhealthy: running anyway; the source's failures are recorded in node_power/"
        );
        return None;
    }
    Some(msg)
}
