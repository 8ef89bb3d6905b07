//! Per-GPU deltas: the GPUs of A and B paired, then each pair's mean and
//! peak in every rung label of both runs, across repeats. GPUs are paired
//! by UUID when both runs hold the same GPUs (the same node, before and
//! after a change), and by their position in the run otherwise (a node
//! against another), with both UUIDs shown. Only a GPU's mean is judged:
//! its peak is one buffered sample, too noisy to call a regression.

use super::rungs::{FigureDelta, by_label};
use super::side::Side;
use powerlab_analysis::per_gpu::GpuRungRow;
use powerlab_core::hw::GpuIdentity;
use serde::Serialize;
use std::collections::HashMap;

/// One GPU of A paired with one of B.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuPair {
    /// A's run-local key (`gpu0`).
    pub gpu_a: String,
    /// A's UUID.
    pub uuid_a: String,
    /// B's run-local key.
    pub gpu_b: String,
    /// B's UUID.
    pub uuid_b: String,
}

/// How the GPUs were paired, and the pairs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuMatching {
    /// `uuid` or `position`.
    pub by: String,
    /// Why, in words.
    pub why: String,
    /// The pairs.
    pub pairs: Vec<GpuPair>,
    /// GPUs of one run without a partner: `A gpu7 (GPU-…)`.
    pub unmatched: Vec<String>,
}

/// One GPU pair in one rung label, compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuDelta {
    /// The rung label.
    pub label: String,
    /// The GPUs compared.
    #[serde(flatten)]
    pub pair: GpuPair,
    /// Mean and peak.
    pub figures: Vec<FigureDelta>,
}

impl GpuDelta {
    /// Whether the judged figure changed beyond the threshold.
    pub fn regressed(&self) -> bool {
        self.figures.iter().any(|f| f.regression)
    }
}

/// Pairs the GPUs of the two runs' manifests: by UUID when they share
/// any (the same GPU is compared with itself; a GPU in one run only has
/// no partner), by position when they share none.
pub fn match_gpus(a: &Side, b: &Side) -> GpuMatching {
    let (ga, gb) = (&a.manifest.backend.gpus, &b.manifest.backend.gpus);
    let pair = |x: &GpuIdentity, y: &GpuIdentity| GpuPair {
        gpu_a: x.key.clone(),
        uuid_a: x.uuid.clone(),
        gpu_b: y.key.clone(),
        uuid_b: y.uuid.clone(),
    };
    let pairs: Vec<GpuPair> = ga
        .iter()
        .filter_map(|x| gb.iter().find(|y| y.uuid == x.uuid).map(|y| pair(x, y)))
        .collect();
    if !pairs.is_empty() {
        let lone = |side: &str, gs: &[GpuIdentity], other: &[GpuIdentity]| -> Vec<String> {
            gs.iter()
                .filter(|g| !other.iter().any(|o| o.uuid == g.uuid))
                .map(|g| format!("{side} {} ({}), in {side} only", g.key, g.uuid))
                .collect()
        };
        let mut unmatched = lone("A", ga, gb);
        unmatched.extend(lone("B", gb, ga));
        let why = if unmatched.is_empty() {
            "both runs hold the same GPUs (same UUIDs): each GPU is compared with itself".into()
        } else {
            format!(
                "{} GPU(s) are in both runs (same UUIDs) and each is compared with itself; {} are in one run only",
                pairs.len(),
                unmatched.len()
            )
        };
        return GpuMatching {
            by: "uuid".into(),
            why,
            pairs,
            unmatched,
        };
    }
    let n = ga.len().min(gb.len());
    let mut unmatched: Vec<String> = ga[n..]
        .iter()
        .map(|g| format!("A {} ({}), beyond B's {} GPUs", g.key, g.uuid, gb.len()))
        .collect();
    unmatched.extend(
        gb[n..]
            .iter()
            .map(|g| format!("B {} ({}), beyond A's {} GPUs", g.key, g.uuid, ga.len())),
    );
    GpuMatching {
        by: "position".into(),
        why: "the runs share no GPU (no UUID in common): GPUs are paired by their position in the run, both UUIDs shown".into(),
        pairs: ga.iter().zip(gb).map(|(x, y)| pair(x, y)).collect(),
        unmatched,
    }
}

/// Each GPU's rows by rung label.
fn rows_by_label(side: &Side) -> HashMap<(String, String), Vec<&GpuRungRow>> {
    let label_of: HashMap<u32, String> = by_label(&side.rungs)
        .into_iter()
        .flat_map(|(l, g)| g.into_iter().map(move |r| (r.rung_id, l.clone())))
        .collect();
    let mut out: HashMap<(String, String), Vec<&GpuRungRow>> = HashMap::new();
    for r in &side.per_gpu {
        if let Some(l) = label_of.get(&r.rung_id) {
            out.entry((l.clone(), r.gpu.clone())).or_default().push(r);
        }
    }
    out
}

/// Compares every GPU pair in every rung label `labels` (those of both runs).
pub fn compare_gpus(
    a: &Side,
    b: &Side,
    matching: &GpuMatching,
    labels: &[String],
    threshold_pct: f64,
) -> Vec<GpuDelta> {
    let (ra, rb) = (rows_by_label(a), rows_by_label(b));
    let mut out = Vec::new();
    for label in labels {
        for p in &matching.pairs {
            let (Some(xa), Some(xb)) = (
                ra.get(&(label.clone(), p.gpu_a.clone())),
                rb.get(&(label.clone(), p.gpu_b.clone())),
            ) else {
                continue;
            };
            let vals = |g: &[&GpuRungRow], f: fn(&GpuRungRow) -> Option<f64>| -> Vec<f64> {
                g.iter().filter_map(|r| f(r)).collect()
            };
            let fig = |name: &str, f: fn(&GpuRungRow) -> Option<f64>, judged: bool| {
                FigureDelta::new(name, &vals(xa, f), &vals(xb, f), judged, threshold_pct)
            };
            out.push(GpuDelta {
                label: label.clone(),
                pair: p.clone(),
                figures: vec![
                    fig("mean", |r| r.mean_w, true),
                    fig("peak", |r| r.peak_w, false),
                ],
            });
        }
    }
    out
}
