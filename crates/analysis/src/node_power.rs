//! The node's own power beside the GPU sum: every `[[node_power]]`
//! source's readings (`node_power/<source>.csv`) joined with the node
//! curve on the run's timeline.
//!
//! A BMC or PDU reading is a slow average with its own latency. So, per
//! source: the observed update period (the lower quartile of the times
//! between changes of the value), the answer time, and the lag between
//! the GPU sum and the reading (the shift that best lines the readings up with the GPU sum
//! in the long-period rungs). Per rung, each reading stands for the span
//! `[t - lag - update, t - lag]`; the readings whose span lies inside the
//! rung's window give the chassis mean and peak, and the GPU sum over the
//! same spans gives the non-GPU share. A duty rung whose period is not
//! at least four update periods gets no chassis swing: a slow average
//! cannot show it, and the table says so instead.

use powerlab_core::units::{ms_to_ns_trunc, ns_f64_to_ms, ns_to_ms};
use powerlab_rundir::NodePowerRow;
use powerlab_rundir::PhaseKind;
use powerlab_samples::series::{changes, median_spacing_ms, spacings_ms};
use powerlab_samples::stats::{median, quantile, r3};
use serde::Serialize;

mod verdict;
pub use verdict::{NodePowerNote, NodePowerVerdict};

/// A meter reading below the GPU sum by more than this many W, and by
/// more than [`BELOW_GPU_SUM_SHARE`] of it, does not measure this node.
pub const BELOW_GPU_SUM_W: f64 = 20.0;
/// See [`BELOW_GPU_SUM_W`].
pub const BELOW_GPU_SUM_SHARE: f64 = 0.03;

/// Power beside the GPUs no single node draws, W: a chassis meter reading
/// more than this above the GPU sum is in the wrong unit (mW) or measures
/// many nodes. An 8-GPU node's CPUs, memory, NICs and fans draw a few kW.
pub const NON_GPU_CEILING_W: f64 = 50_000.0;

/// Whether a meter's mean `chassis_mean_w` can be this node's draw beside
/// its GPU sum `gpu_sum_w` over the same spans (W): the note that says why
/// not, or None. Below the GPU sum by more than the two instruments'
/// disagreement ([`BELOW_GPU_SUM_W`], [`BELOW_GPU_SUM_SHARE`] of the sum;
/// a meter that reads the GPUs themselves lands within ~1 % of them), or
/// above it by more than [`NON_GPU_CEILING_W`], the meter does not measure
/// this node. The node judges the figures it writes; the rack judges the
/// same figures, read back, the same way.
pub fn meter_mismatch(chassis_mean_w: f64, gpu_sum_w: f64) -> Option<NodePowerNote> {
    let non_gpu_w = chassis_mean_w - gpu_sum_w;
    if non_gpu_w < -(BELOW_GPU_SUM_W.max(BELOW_GPU_SUM_SHARE * gpu_sum_w)) {
        Some(NodePowerNote::BelowGpuSum(-non_gpu_w))
    } else if non_gpu_w > NON_GPU_CEILING_W {
        Some(NodePowerNote::FarAboveGpuSum(non_gpu_w))
    } else {
        None
    }
}

/// One source's readings and how it behaved.
#[derive(Debug, Clone, Serialize)]
pub struct SourceFacts {
    /// Source name.
    pub source: String,
    /// Its kind.
    pub kind: String,
    /// Reads that returned a number.
    pub readings: usize,
    /// Reads that failed.
    pub failed: usize,
    /// Failed reads by class (`timeout: 3; unreachable: 12`).
    pub errors: String,
    /// Poll interval asked for, ms.
    pub interval_ms: f64,
    /// Lower quartile of the times between changes of the value, ms
    /// (None: it never changed).
    pub update_ms: Option<f64>,
    /// Median answer time, ms.
    pub answer_ms_p50: Option<f64>,
    /// 95th percentile answer time, ms.
    pub answer_ms_p95: Option<f64>,
    /// Lag of the readings behind the GPU sum, ms (None: no long-period rung to measure it).
    pub lag_ms: Option<f64>,
    /// What limits these figures.
    pub note: String,
}

/// One rung, one source.
#[derive(Debug, Clone, Serialize)]
pub struct NodePowerRung {
    /// Rung id.
    pub rung_id: u32,
    /// Rung label.
    pub rung: String,
    /// Source name.
    pub source: String,
    /// Readings whose span lies in the window.
    pub readings: usize,
    /// Failed reads answered inside the window.
    pub failed: usize,
    /// Share of the window the source's readings cover (0..1).
    pub coverage: f64,
    /// Chassis mean, W.
    pub chassis_mean_w: Option<f64>,
    /// Chassis peak reading, W.
    pub chassis_peak_w: Option<f64>,
    /// Chassis swing (max − min of the readings), W, where the source can
    /// resolve the rung's period.
    pub chassis_swing_w: Option<f64>,
    /// GPU sum (buffered) over the same spans, W.
    pub gpu_sum_w: Option<f64>,
    /// Chassis − GPU sum, W.
    pub non_gpu_w: Option<f64>,
    /// (Chassis − GPU sum) / chassis.
    pub non_gpu_share: Option<f64>,
    /// The instrument verdict and any incompleteness.
    pub verdict: NodePowerVerdict,
}

/// A rung as this analysis needs it.
pub struct RungSpan {
    /// Id.
    pub id: u32,
    /// Label.
    pub label: String,
    /// Kind (`duty`, `sustained`, …).
    pub kind: PhaseKind,
    /// Period of a duty rung, ms.
    pub period_ms: Option<f64>,
    /// Measured window, epoch ns.
    pub from_ns: i64,
    /// Window end, epoch ns.
    pub to_ns: i64,
}

/// The node's GPU sum on the curve's grid.
pub struct GpuSum<'a> {
    /// Grid times, epoch ns (sorted).
    pub t_ns: &'a [i64],
    /// GPU sum (buffered), W; None where a GPU had no sample.
    pub w: &'a [Option<f64>],
}

impl GpuSum<'_> {
    /// Mean over `[from, to)`, if every grid point there has a value.
    fn mean(&self, from: i64, to: i64) -> Option<f64> {
        let lo = self.t_ns.partition_point(|t| *t < from);
        let hi = self.t_ns.partition_point(|t| *t < to);
        if hi <= lo {
            return None;
        }
        let mut sum = 0.0;
        for w in &self.w[lo..hi] {
            sum += (*w)?;
        }
        Some(sum / (hi - lo) as f64)
    }

    fn at(&self, t: i64) -> Option<f64> {
        let i = self.t_ns.partition_point(|x| *x <= t);
        if i == 0 {
            return None;
        }
        self.w[i - 1]
    }
}

/// A source's rows, split.
pub struct SourceRows {
    /// Source name.
    pub source: String,
    /// Kind.
    pub kind: String,
    /// Poll interval from the campaign, ms (None: inferred).
    pub interval_ms: Option<f64>,
    /// Every row of the file.
    pub rows: Vec<NodePowerRow>,
}

/// Joins every source with the GPU sum, per rung.
pub fn analyse(
    sources: &[SourceRows],
    rungs: &[RungSpan],
    gpu: &GpuSum<'_>,
) -> (Vec<SourceFacts>, Vec<NodePowerRung>) {
    let mut facts = Vec::new();
    let mut table = Vec::new();
    for s in sources {
        let (f, rows) = one_source(s, rungs, gpu);
        facts.push(f);
        table.extend(rows);
    }
    (facts, table)
}

fn one_source(
    s: &SourceRows,
    rungs: &[RungSpan],
    gpu: &GpuSum<'_>,
) -> (SourceFacts, Vec<NodePowerRung>) {
    let node_rows: Vec<&NodePowerRow> = s.rows.iter().filter(|r| r.quantity == "node").collect();
    // A reading is as of its answer.
    let mut ok: Vec<(i64, f64)> = node_rows
        .iter()
        .filter_map(|r| r.watts.map(|w| (r.recv_ns, w)))
        .collect();
    ok.sort_by_key(|p| p.0);
    let failed: Vec<&NodePowerRow> = node_rows
        .iter()
        .copied()
        .filter(|r| r.watts.is_none())
        .collect();
    let mut by_class: std::collections::BTreeMap<String, usize> = Default::default();
    for r in &failed {
        let class = r.error.split(':').next().unwrap_or("error").to_string();
        *by_class.entry(class).or_default() += 1;
    }
    let sent: Vec<(i64, f64)> = node_rows.iter().map(|r| (r.sent_ns, 0.0)).collect();
    let interval_ms = s
        .interval_ms
        .or_else(|| median_spacing_ms(&sent))
        .unwrap_or(1000.0);
    let answers: Vec<f64> = node_rows
        .iter()
        .map(|r| ns_to_ms(r.recv_ns - r.sent_ns))
        .collect();
    // The update period: the lower quartile of the times between changes
    // (a steady load leaves the value unchanged across several updates, so
    // a median would read long).
    let changed = changes(&ok);
    let update_ms = quantile(&spacings_ms(&changed), 0.25).map(|u| u.max(interval_ms));
    let span_ms = update_ms.unwrap_or(interval_ms);
    let lag_ms = lag(&ok, rungs, gpu, span_ms);
    let mut note = Vec::new();
    if ok.is_empty() {
        note.push("no reading".to_string());
    } else if update_ms.is_none() {
        note.push("the value never changed: the update period is unknown".to_string());
    } else if update_ms.is_some_and(|u| u <= interval_ms * 1.05) {
        note.push(format!(
            "updates at least as often as it was asked ({interval_ms:.0} ms): the update period may be shorter"
        ));
    }
    if lag_ms.is_none() {
        note.push("no rung long enough to measure the lag: assumed 0".into());
    }
    if !ok.is_empty() {
        note.push(format!(
            "each reading is taken as the average of the {:.0} ms before it (its update period); a meter that averages longer blurs rung edges, so readings within two such spans of a rung's start are left out",
            update_ms.unwrap_or(interval_ms)
        ));
    }
    let facts = SourceFacts {
        source: s.source.clone(),
        kind: s.kind.clone(),
        readings: ok.len(),
        failed: failed.len(),
        errors: by_class
            .iter()
            .map(|(k, n)| format!("{k}: {n}"))
            .collect::<Vec<_>>()
            .join("; "),
        interval_ms,
        update_ms: update_ms.map(r3),
        answer_ms_p50: median(&answers).map(r3),
        answer_ms_p95: quantile(&answers, 0.95).map(r3),
        lag_ms: lag_ms.map(r3),
        note: note.join("; "),
    };
    let lag_ns = ms_to_ns_trunc(lag_ms.unwrap_or(0.0));
    let span_ns = ms_to_ns_trunc(span_ms);
    let rows = rungs
        .iter()
        .map(|r| rung_row(s, r, &ok, &failed, gpu, lag_ns, span_ns, interval_ms))
        .collect();
    (facts, rows)
}

#[allow(clippy::too_many_arguments)]
fn rung_row(
    s: &SourceRows,
    r: &RungSpan,
    ok: &[(i64, f64)],
    failed: &[&NodePowerRow],
    gpu: &GpuSum<'_>,
    lag_ns: i64,
    span_ns: i64,
    interval_ms: f64,
) -> NodePowerRung {
    // Readings whose averaging span [t-lag-span, t-lag] lies in the
    // window, with one more span of guard at its start: the meter's own
    // window may be longer than its update period.
    let inside: Vec<(i64, f64)> = ok
        .iter()
        .copied()
        .filter(|(t, _)| t - lag_ns - 2 * span_ns >= r.from_ns && t - lag_ns <= r.to_ns)
        .collect();
    let n_failed = failed
        .iter()
        .filter(|f| f.recv_ns - lag_ns >= r.from_ns && f.recv_ns - lag_ns <= r.to_ns)
        .count();
    let window_ms = ns_to_ms(r.to_ns - r.from_ns);
    // Readings expected: one per interval over the part of the window a
    // span can fit in.
    let usable_ms = (window_ms - ns_f64_to_ms(2.0 * span_ns as f64)).max(0.0);
    let expected = (usable_ms / interval_ms).floor().max(1.0);
    let coverage = (inside.len() as f64 / expected).min(1.0);
    let values: Vec<f64> = inside.iter().map(|p| p.1).collect();
    let chassis_mean_w =
        (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64);
    let chassis_peak_w = values.iter().copied().reduce(f64::max);
    let gpu_means: Vec<f64> = inside
        .iter()
        .filter_map(|(t, _)| gpu.mean(t - lag_ns - span_ns, t - lag_ns))
        .collect();
    let gpu_sum_w = (gpu_means.len() == inside.len() && !gpu_means.is_empty())
        .then(|| gpu_means.iter().sum::<f64>() / gpu_means.len() as f64);
    let mut verdict = Vec::new();
    let span_ms = ns_to_ms(span_ns);
    let (chassis_swing_w, resolution) = chassis_swing(r, &values, span_ms);
    verdict.extend(resolution);
    if values.is_empty() {
        verdict.push(if window_ms < span_ms {
            NodePowerNote::ShortWindow { window_ms, span_ms }
        } else {
            NodePowerNote::NoReading
        });
    } else if coverage < 0.9 {
        verdict.push(NodePowerNote::Incomplete {
            readings: inside.len(),
            expected,
            coverage,
        });
    }
    if n_failed > 0 {
        verdict.push(NodePowerNote::FailedReads(n_failed));
    }
    let non_gpu_w = chassis_mean_w.zip(gpu_sum_w).map(|(c, g)| c - g);
    // Judged on the figures as written, as the rack reads them back.
    verdict.extend(
        chassis_mean_w
            .zip(gpu_sum_w)
            .and_then(|(c, g)| meter_mismatch(r3(c), r3(g))),
    );
    NodePowerRung {
        rung_id: r.id,
        rung: r.label.clone(),
        source: s.source.clone(),
        readings: inside.len(),
        failed: n_failed,
        coverage: r3(coverage),
        chassis_mean_w: chassis_mean_w.map(r3),
        chassis_peak_w: chassis_peak_w.map(r3),
        chassis_swing_w: chassis_swing_w.map(r3),
        gpu_sum_w: gpu_sum_w.map(r3),
        non_gpu_w: non_gpu_w.map(r3),
        non_gpu_share: non_gpu_w
            .zip(chassis_mean_w)
            .filter(|(_, c)| *c > 0.0)
            .map(|(n, c)| r3(n / c)),
        verdict: NodePowerVerdict(verdict),
    }
}

/// Rung `r`'s chassis swing (highest minus lowest of its `values`), given
/// only for a duty rung whose period is at least four `span_ms` (a slower
/// average cannot show it), and what the verdict says of that resolution
/// (nothing for a rung with no period).
fn chassis_swing(
    r: &RungSpan,
    values: &[f64],
    span_ms: f64,
) -> (Option<f64>, Option<NodePowerNote>) {
    let resolves = match r.period_ms {
        Some(p) => p >= 4.0 * span_ms,
        None => true,
    };
    let swing = if resolves && r.kind == PhaseKind::Duty {
        values
            .iter()
            .copied()
            .reduce(f64::max)
            .zip(values.iter().copied().reduce(f64::min))
            .map(|(a, b)| a - b)
    } else {
        None
    };
    let words = match (r.period_ms, resolves) {
        (Some(period_ms), false) => Some(NodePowerNote::CannotResolve { span_ms, period_ms }),
        (Some(period_ms), true) => Some(NodePowerNote::Resolves { span_ms, period_ms }),
        (None, _) => None,
    };
    (swing, words)
}

/// The lag (ms, in 50 ms steps up to 5 s) that best correlates the
/// readings with the GPU sum averaged over each reading's span, over the
/// readings of rungs whose period (or length) is at least eight spans.
fn lag(ok: &[(i64, f64)], rungs: &[RungSpan], gpu: &GpuSum<'_>, span_ms: f64) -> Option<f64> {
    let long: Vec<&RungSpan> = rungs
        .iter()
        .filter(|r| r.kind == PhaseKind::Duty && r.period_ms.is_some_and(|p| p >= 8.0 * span_ms))
        .collect();
    let pts: Vec<(i64, f64)> = ok
        .iter()
        .copied()
        .filter(|(t, _)| {
            long.iter()
                .any(|r| *t >= r.from_ns && *t <= r.to_ns + 5_000_000_000)
        })
        .collect();
    if pts.len() < 8 {
        return None;
    }
    let span_ns = ms_to_ns_trunc(span_ms);
    let mut best: Option<(f64, f64)> = None;
    for step in 0..=100 {
        let lag_ns = step as i64 * 50_000_000;
        let pairs: Vec<(f64, f64)> = pts
            .iter()
            .filter_map(|(t, w)| {
                let g = gpu
                    .mean(t - lag_ns - span_ns, t - lag_ns)
                    .or_else(|| gpu.at(t - lag_ns))?;
                Some((*w, g))
            })
            .collect();
        if pairs.len() < 8 {
            continue;
        }
        if let Some(c) = pearson(&pairs)
            && best.is_none_or(|(_, b)| c > b)
        {
            best = Some((ns_to_ms(lag_ns), c));
        }
    }
    best.filter(|(_, c)| *c > 0.5).map(|(l, _)| l)
}

fn pearson(p: &[(f64, f64)]) -> Option<f64> {
    let n = p.len() as f64;
    let (mx, my) = (
        p.iter().map(|x| x.0).sum::<f64>() / n,
        p.iter().map(|x| x.1).sum::<f64>() / n,
    );
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (x, y) in p {
        sxy += (x - mx) * (y - my);
        sxx += (x - mx) * (x - mx);
        syy += (y - my) * (y - my);
    }
    (sxx > 0.0 && syy > 0.0).then(|| sxy / (sxx * syy).sqrt())
}

#[cfg(test)]
mod tests;
