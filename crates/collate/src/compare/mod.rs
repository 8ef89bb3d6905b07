//! `powerlab compare A B`: one single-node run (B, the candidate) against
//! another (A, the baseline) — a node against a baseline node, or the same
//! node before and after a change.
//!
//! Both runs are read through their collated reports ([`side`], read by
//! [`crate::comparison`], the pipeline above the analyses); the
//! node's rungs are matched by label and compared across repeats
//! ([`rungs`], [`delta`]); the GPUs are paired by UUID or by position and
//! compared rung by rung ([`gpus`]); the idle health captures are diffed
//! with the function `powerlab health-diff` uses (passed in: this crate
//! does not link the health probe). What differs between the runs
//! themselves (campaign, GPU count or model, how they ended) is stated
//! first ([`Comparison::warnings`]): they are compared anyway.
//!
//! A **regression** is a judged figure — a rung's mean or peak, its swing
//! on a duty rung, a GPU's mean — whose change B − A is beyond the
//! threshold (a share of A's value, either direction: a rise loads the
//! feed, a fall is lost load or throttling) and, when both runs have two
//! repeats or more, beyond the 95 % Welch interval of the difference.
//! Spread, a GPU's peak and a constant-load rung's swing are shown, never
//! judged: they are the noise band, not a change of draw.

pub mod delta;
pub mod error;
pub mod gpus;
pub mod rungs;
pub mod side;

pub use error::CompareError;

use serde::Serialize;

/// The function that lists the differences of two health captures
/// (`powerlab_health::diff::diff`).
pub type HealthDiffer = fn(&serde_json::Value, &serde_json::Value) -> Vec<String>;

/// How to compare.
#[derive(Debug, Clone)]
pub struct CompareOptions {
    /// A judged figure changing by more than this share of A's value, %,
    /// (and beyond its interval, where there is one) is a regression.
    pub threshold_pct: f64,
    /// Collate a run whose report is missing or out of date (rewrites its
    /// `report/`) instead of refusing it.
    pub collate_stale: bool,
    /// Diffs the idle health captures; None: they are not compared.
    pub health_diff: Option<HealthDiffer>,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            threshold_pct: 3.0,
            collate_stale: false,
            health_diff: None,
        }
    }
}

/// One run, as the comparison states it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunFacts {
    /// The run directory.
    pub dir: String,
    /// Campaign name.
    pub campaign: String,
    /// Node id.
    pub node: String,
    /// `sim` or `cuda`.
    pub backend: String,
    /// GPUs in the run.
    pub gpus: usize,
    /// The GPUs' models, distinct, in run order.
    pub gpu_models: Vec<String>,
    /// Started, RFC 3339.
    pub started_utc: String,
    /// How the run ended.
    pub status: String,
    /// How its report was found.
    pub report: side::ReportState,
}

/// The idle health captures compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HealthComparison {
    /// What was compared, in words (or why nothing was).
    pub state: String,
    /// `path: a -> b` for every difference (`powerlab health-diff`'s lines).
    pub lines: Vec<String>,
}

/// B against A.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// The baseline.
    pub a: RunFacts,
    /// The candidate.
    pub b: RunFacts,
    /// The threshold, % of A's value.
    pub threshold_pct: f64,
    /// What differs between the runs themselves, or qualifies every
    /// figure: stated before anything else.
    pub warnings: Vec<String>,
    /// The node's rungs found in both runs.
    pub rungs: Vec<rungs::RungDelta>,
    /// Rung labels found in one run only.
    pub unmatched_rungs: Vec<rungs::Unmatched>,
    /// How the GPUs were paired.
    pub gpu_matching: gpus::GpuMatching,
    /// Every GPU pair in every matched rung.
    pub gpus: Vec<gpus::GpuDelta>,
    /// The idle health captures.
    pub health: HealthComparison,
    /// Judged figures beyond the threshold: node rungs and GPU rows.
    pub regressions: usize,
}

fn facts(s: &side::Side) -> RunFacts {
    let b = &s.manifest.backend;
    let mut models: Vec<String> = Vec::new();
    for g in &b.gpus {
        if !models.contains(&g.name) {
            models.push(g.name.clone());
        }
    }
    RunFacts {
        dir: s.dir.display().to_string(),
        campaign: s.manifest.campaign.clone(),
        node: b.node_id.clone(),
        backend: b.backend.clone(),
        gpus: b.gpus.len(),
        gpu_models: models,
        started_utc: s.manifest.started_utc.clone(),
        status: side::status_text(&s.manifest.status),
        report: s.report.clone(),
    }
}

/// Top-level keys of two resolved campaigns that differ.
fn campaign_keys_differing(a: &serde_json::Value, b: &serde_json::Value) -> Vec<String> {
    let empty = serde_json::Map::new();
    let (ma, mb) = (
        a.as_object().unwrap_or(&empty),
        b.as_object().unwrap_or(&empty),
    );
    let mut keys: Vec<&String> = ma.keys().chain(mb.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| ma.get(*k) != mb.get(*k))
        .cloned()
        .collect()
}

/// Whether A and B hold the same run: one start on one node by one
/// command, and the same event log byte for byte (a copy, or the same
/// directory; a simulated node's virtual clock gives every run one start).
fn same_run(a: &side::Side, b: &side::Side) -> bool {
    let events =
        |s: &side::Side| std::fs::read(s.dir.join(powerlab_rundir::RunFile::Events.name())).ok();
    a.manifest.started_ns == b.manifest.started_ns
        && a.manifest.backend.node_id == b.manifest.backend.node_id
        && a.manifest.command == b.manifest.command
        && events(a).is_some_and(|e| Some(e) == events(b))
}

fn warnings(a: &side::Side, b: &side::Side, fa: &RunFacts, fb: &RunFacts) -> Vec<String> {
    let mut w = Vec::new();
    if same_run(a, b) {
        w.push(format!(
            "THE SAME RUN: A and B are both the run of `{}` started {} (a copy, or the same directory): every difference below is zero by construction",
            fa.node, fa.started_utc
        ));
    }
    if fa.campaign != fb.campaign {
        w.push(format!(
            "DIFFERENT CAMPAIGNS: A ran `{}`, B ran `{}`; rungs are matched by label only",
            fa.campaign, fb.campaign
        ));
    } else if a.manifest.plan != b.manifest.plan
        || a.manifest.campaign_resolved != b.manifest.campaign_resolved
    {
        let keys =
            campaign_keys_differing(&a.manifest.campaign_resolved, &b.manifest.campaign_resolved);
        w.push(format!(
            "THE CAMPAIGN DIFFERS: both ran `{}` but with different settings{}",
            fa.campaign,
            if keys.is_empty() {
                format!(
                    " (the expanded plan differs: {} vs {} rungs for {} vs {} GPUs; repeats, GPU count or ramp-up steps)",
                    a.manifest.plan["rungs"].as_array().map_or(0, Vec::len),
                    b.manifest.plan["rungs"].as_array().map_or(0, Vec::len),
                    a.manifest.plan["gpu_count"],
                    b.manifest.plan["gpu_count"]
                )
            } else {
                format!(" ({})", keys.join(", "))
            }
        ));
    }
    if fa.gpus != fb.gpus {
        w.push(format!(
            "DIFFERENT GPU COUNTS: A has {} GPUs, B {}; node figures are not like for like",
            fa.gpus, fb.gpus
        ));
    }
    if fa.gpu_models != fb.gpu_models {
        w.push(format!(
            "DIFFERENT GPU MODELS: A {}, B {}",
            fa.gpu_models.join(", "),
            fb.gpu_models.join(", ")
        ));
    }
    if fa.backend != fb.backend {
        w.push(format!(
            "DIFFERENT BACKENDS: A ran on `{}`, B on `{}`",
            fa.backend, fb.backend
        ));
    }
    for (name, f, s) in [("A", fa, a), ("B", fb, b)] {
        if f.status != "complete" {
            w.push(format!(
                "{name} DID NOT COMPLETE ({}): its figures cover only what ran",
                f.status
            ));
        }
        let incomplete = s
            .rungs
            .iter()
            .filter(|r| r.incomplete.as_deref().is_some_and(|t| !t.is_empty()))
            .count();
        if incomplete > 0 {
            w.push(format!(
                "{name} has {incomplete} rung(s) collated from incomplete raw data (marked in the table)"
            ));
        }
        if !s.has_per_gpu {
            w.push(format!(
                "{name}'s report has no per_gpu.csv (collated by an older powerlab): no per-GPU deltas; collate it again"
            ));
        }
        if matches!(f.report, side::ReportState::CollatedNow(_)) {
            w.push(format!("{name} was {}", f.report));
        }
    }
    w
}

fn health(a: &side::Side, b: &side::Side, differ: Option<HealthDiffer>) -> HealthComparison {
    let state = |s: &str| HealthComparison {
        state: s.into(),
        lines: Vec::new(),
    };
    match (&a.health, &b.health) {
        (None, None) => {
            state("neither run has an idle capture (health.json; simulated runs take none)")
        }
        (Some(_), None) => state("only A has an idle capture (health.json): nothing to compare"),
        (None, Some(_)) => state("only B has an idle capture (health.json): nothing to compare"),
        (Some(Err(e)), _) => state(&format!("A's health.json does not read: {e}")),
        (_, Some(Err(e))) => state(&format!("B's health.json does not read: {e}")),
        (Some(Ok(x)), Some(Ok(y))) => match differ {
            None => state("not compared"),
            Some(f) => {
                let lines = f(x, y);
                HealthComparison {
                    state: format!("idle captures compared: {} difference(s)", lines.len()),
                    lines,
                }
            }
        },
    }
}

/// Compares run `b` (candidate) with run `a` (baseline), both read
/// ([`crate::comparison::load_side`]).
pub fn compare_sides(sa: &side::Side, sb: &side::Side, opts: &CompareOptions) -> Comparison {
    let (fa, fb) = (facts(sa), facts(sb));
    let warnings = warnings(sa, sb, &fa, &fb);
    let (rungs, unmatched_rungs) = rungs::compare_rungs(sa, sb, opts.threshold_pct);
    let matching = gpus::match_gpus(sa, sb);
    let labels: Vec<String> = rungs.iter().map(|r| r.label.clone()).collect();
    let gpus = gpus::compare_gpus(sa, sb, &matching, &labels, opts.threshold_pct);
    let regressions = rungs
        .iter()
        .flat_map(|r| &r.figures)
        .chain(gpus.iter().flat_map(|g| &g.figures))
        .filter(|f| f.regression)
        .count();
    Comparison {
        health: health(sa, sb, opts.health_diff),
        a: fa,
        b: fb,
        threshold_pct: opts.threshold_pct,
        warnings,
        rungs,
        unmatched_rungs,
        gpu_matching: matching,
        gpus,
        regressions,
    }
}
