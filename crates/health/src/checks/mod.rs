//! The checks, bottom-up along the contract chain. Only the lowest broken
//! contract carries information: the report names it first.

mod access;
mod condition;
mod stack;

use crate::facts::NodeFacts;
use serde::{Deserialize, Serialize};

/// Verdict of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The contract holds.
    Pass,
    /// Holds, but worth knowing (recorded; does not block).
    Warn,
    /// Broken: blocks a campaign.
    Fail,
    /// Not checked because a lower contract is broken.
    Skipped,
}

/// One check's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// Stable id (`driver`, `device_mask`, …).
    pub id: String,
    /// The contract in words.
    pub contract: String,
    /// The check's verdict.
    pub status: Status,
    /// What was read.
    pub evidence: Vec<String>,
    /// What to do (empty on pass).
    pub fix: String,
}

/// The whole preflight.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HealthReport {
    /// The host the capture was taken on.
    pub host: String,
    /// `idle` or `under_load`.
    pub phase: String,
    /// Every check, in contract order.
    pub checks: Vec<Check>,
    /// Id of the lowest failing check.
    pub lowest_broken: Option<String>,
    /// The facts the checks judged.
    pub facts: NodeFacts,
}

impl HealthReport {
    /// Whether any blocking check failed.
    pub fn failed(&self) -> bool {
        self.lowest_broken.is_some()
    }

    /// The first line of the human report.
    pub fn headline(&self) -> String {
        match self
            .lowest_broken
            .as_deref()
            .and_then(|id| self.checks.iter().find(|c| c.id == id))
        {
            Some(c) => format!(
                "PREFLIGHT FAILED — do not start the campaign: lowest broken contract `{}` ({}): {}",
                c.id,
                c.contract,
                c.evidence.join("; ")
            ),
            None => {
                let warns = self
                    .checks
                    .iter()
                    .filter(|c| c.status == Status::Warn)
                    .count();
                format!(
                    "PREFLIGHT PASSED on {} ({}, {} warnings)",
                    self.host,
                    powerlab_core::words::gpus(self.facts.gpus.len()),
                    warns
                )
            }
        }
    }
}

/// A contract of the chain: its stable id and what it promises, in words.
struct Contract {
    /// Stable id (`driver`, `device_mask`, …).
    id: &'static str,
    /// The contract in words.
    words: &'static str,
}

/// What the run of the checks knows besides the facts.
struct Scope<'a> {
    /// `idle` or `under_load`.
    phase: &'a str,
    /// The campaign has an NCCL phase.
    needs_nccl: bool,
}

/// What one check found: its status, the evidence, and what to do (dropped
/// on pass).
struct Verdict {
    status: Status,
    evidence: Vec<String>,
    fix: &'static str,
}

impl Verdict {
    fn new(status: Status, evidence: Vec<String>, fix: &'static str) -> Self {
        Verdict {
            status,
            evidence,
            fix,
        }
    }
}

/// A check: judges the facts against one contract.
type Judge = fn(&NodeFacts, &Scope<'_>) -> Verdict;

/// Shorthand for a row of [`CHECKS`].
const fn row(id: &'static str, words: &'static str, judge: Judge) -> (Contract, Judge) {
    (Contract { id, words }, judge)
}

/// Every check, bottom-up along the contract chain: the order of the report
/// and of the blocking. Adding a check is one function and one row here.
const CHECKS: &[(Contract, Judge)] = &[
    row(
        "driver",
        "the kernel driver answers (NVML init)",
        stack::driver,
    ),
    row(
        "device_mask",
        "the device mask exposes the GPUs, each ordinal mapped to a UUID",
        stack::device_mask,
    ),
    row(
        "cuda_init",
        "the CUDA driver initialises and sees GPUs",
        stack::cuda_init,
    ),
    row(
        "cuda_version",
        "the driver supports the CUDA version the tool is built for",
        stack::cuda_version,
    ),
    row(
        "libraries",
        "NVRTC, cuBLAS(Lt) and NCCL load",
        stack::libraries,
    ),
    row(
        "nvml_power",
        "NVML power is readable on every GPU (instant field and buffered samples)",
        access::nvml_power,
    ),
    row(
        "fabric",
        "every NVSwitch-attached GPU is registered with the fabric (state Completed, a clique id)",
        access::fabric,
    ),
    row(
        "foreign_processes",
        "no other process holds a GPU",
        access::foreign_processes,
    ),
    row(
        "clock_events",
        "no hardware slowdown (thermal or power brake) is asserted",
        condition::clock_events,
    ),
    row(
        "power_limit",
        "the enforced power limit is the default",
        condition::power_limit,
    ),
    row(
        "ecc",
        "ECC is the same on every GPU and no row-remapping failure",
        condition::ecc,
    ),
    row(
        "mig_persistence",
        "MIG off (whole GPUs); persistence on",
        condition::mig_persistence,
    ),
    row(
        "topology",
        "the GPU-to-GPU links are recorded",
        condition::topology,
    ),
    row(
        "clocks_temperatures",
        "clocks and temperatures recorded; no GPU within 10 °C of slowdown",
        condition::clocks_temperatures,
    ),
    row(
        "power_smoothing",
        "power smoothing recorded (read only, never set); on, the figures are the smoothed draw",
        condition::power_smoothing,
    ),
];

struct Builder {
    checks: Vec<Check>,
    blocked: bool,
}

impl Builder {
    fn add(&mut self, contract: &Contract, verdict: Verdict) {
        let status = if self.blocked {
            Status::Skipped
        } else {
            verdict.status
        };
        if status == Status::Fail {
            self.blocked = true;
        }
        self.checks.push(Check {
            id: contract.id.into(),
            contract: contract.words.into(),
            status,
            evidence: verdict.evidence,
            fix: if status == Status::Pass {
                String::new()
            } else {
                verdict.fix.into()
            },
        });
    }

    /// Checks above a broken one still run but are marked skipped for blocking purposes.
    fn first_fail(&self) -> Option<String> {
        self.checks
            .iter()
            .find(|c| c.status == Status::Fail)
            .map(|c| c.id.clone())
    }
}

/// The worst status of per-GPU (or per-library) items, with every item's
/// text as evidence.
fn worst(items: &[(Status, String)], fix: &'static str) -> Verdict {
    let s = if items.iter().any(|i| i.0 == Status::Fail) {
        Status::Fail
    } else if items.iter().any(|i| i.0 == Status::Warn) {
        Status::Warn
    } else {
        Status::Pass
    };
    Verdict::new(s, items.iter().map(|i| i.1.clone()).collect(), fix)
}

/// Judges the facts. `needs_nccl`: the campaign has an NCCL phase.
pub fn run_checks(f: &NodeFacts, phase: &str, needs_nccl: bool) -> HealthReport {
    let scope = Scope { phase, needs_nccl };
    let mut b = Builder {
        checks: Vec::new(),
        blocked: false,
    };
    for (contract, judge) in CHECKS {
        b.add(contract, judge(f, &scope));
    }
    let lowest_broken = b.first_fail();
    HealthReport {
        host: f.host.clone(),
        phase: phase.into(),
        checks: b.checks,
        lowest_broken,
        facts: f.clone(),
    }
}

fn on_off(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "on",
        Some(false) => "off",
        None => "unknown",
    }
}

fn opt(v: Option<u32>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "?".into())
}
