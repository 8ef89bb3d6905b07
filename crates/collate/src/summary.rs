//! Per-rung summaries of the node curve, statistics across repeats, and the
//! in-phase vs staggered comparison.
//!
//! Definitions (also printed in the report): mean; peak = max; p1/p99;
//! spread = p99 − p1; swing = p90 − p10 (the square wave's amplitude without
//! its overshoot spikes); energy = mean × measured window. Every figure is
//! computed from the driver-buffered node curve when it covers the rung, else
//! from the instant field; the 1 s average field appears only in columns
//! named `average_field_*`, as a comparison.

use crate::curve::{f64_column, NodeCurve};
use crate::edges::EdgeStats;
use crate::error::CollateError;
use crate::load::Run;
use crate::stats::{mean_sd_ci, r3};
use polars::prelude::*;
use serde::Serialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// One rung's node summary.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RungSummary {
    /// Rung id.
    pub rung_id: u32,
    /// Label.
    pub label: String,
    /// Phase.
    pub phase: String,
    /// Kind.
    pub kind: String,
    /// Mode.
    pub mode: String,
    /// Period, ms.
    pub period_ms: Option<f64>,
    /// Duty.
    pub duty: f64,
    /// Repeat.
    pub repeat: u32,
    /// Instrument the figures come from (`buffered_w` or `instant_w`).
    pub instrument: String,
    /// Grid points with every GPU present.
    pub samples: u64,
    /// Fraction of the window's grid points with every GPU present.
    pub coverage: f64,
    /// Mean node power, W.
    pub mean_w: Option<f64>,
    /// Peak, W.
    pub peak_w: Option<f64>,
    /// 1st percentile, W.
    pub p1_w: Option<f64>,
    /// 99th percentile, W.
    pub p99_w: Option<f64>,
    /// p99 − p1, W.
    pub spread_w: Option<f64>,
    /// p90 − p10, W. Empty for a rung its instrument aliases: such a
    /// number is not a swing (see `instrument_verdict` and sensor_periods.csv).
    pub swing_w: Option<f64>,
    /// For duty rungs: resolvable / instrument limit / aliased, for the
    /// instrument named in `instrument`, from the run's sensor model.
    pub instrument_verdict: Option<String>,
    /// Energy over the measured window, J.
    pub energy_j: Option<f64>,
    /// The instant field's mean, W (second instrument).
    pub instant_mean_w: Option<f64>,
    /// The instant field's spread, W.
    pub instant_spread_w: Option<f64>,
    /// The 1 s average field's mean, W — comparison only.
    pub average_field_mean_w: Option<f64>,
    /// The 1 s average field's spread, W — comparison only, never a result.
    pub average_field_spread_w: Option<f64>,
    /// The 1 s average field's swing (p90 − p10), W — comparison only.
    pub average_field_swing_w: Option<f64>,
    /// Largest |start error| of any GPU against its intended start, µs.
    pub start_error_max_us: Option<f64>,
    /// Start skew across GPUs after removing intended offsets, µs.
    pub start_skew_us: Option<f64>,
    /// Median edge error, µs.
    pub edge_err_p50_us: Option<f64>,
    /// 99th-percentile edge error, µs.
    pub edge_err_p99_us: Option<f64>,
    /// Every GPU started within tolerance of its intended start.
    pub barrier_ok: Option<bool>,
}

struct Stats {
    n: Vec<Option<f64>>,
    mean: Vec<Option<f64>>,
    max: Vec<Option<f64>>,
    p1: Vec<Option<f64>>,
    p10: Vec<Option<f64>>,
    p90: Vec<Option<f64>>,
    p99: Vec<Option<f64>>,
}

fn aggs(c: &str, prefix: &str) -> Vec<Expr> {
    let v = || col(c).drop_nulls();
    vec![
        v().count().cast(DataType::Float64).alias(format!("{prefix}_n")),
        v().mean().alias(format!("{prefix}_mean")),
        v().max().alias(format!("{prefix}_max")),
        v().quantile(lit(0.01), QuantileMethod::Linear).alias(format!("{prefix}_p1")),
        v().quantile(lit(0.10), QuantileMethod::Linear).alias(format!("{prefix}_p10")),
        v().quantile(lit(0.90), QuantileMethod::Linear).alias(format!("{prefix}_p90")),
        v().quantile(lit(0.99), QuantileMethod::Linear).alias(format!("{prefix}_p99")),
    ]
}

fn stats_of(df: &DataFrame, prefix: &str) -> Stats {
    let g = |s: &str| f64_column(df, &format!("{prefix}_{s}"));
    Stats { n: g("n"), mean: g("mean"), max: g("max"), p1: g("p1"), p10: g("p10"), p90: g("p90"), p99: g("p99") }
}

/// Summarizes every rung of the run.
pub fn summarize(curve: &NodeCurve, run: &Run, edges: &HashMap<u32, EdgeStats>) -> Result<Vec<RungSummary>, CollateError> {
    if run.rungs.is_empty() {
        return Ok(Vec::new());
    }
    let mut windows: Vec<(u32, i64, i64)> = run.rungs.iter().map(|r| (r.info.id, r.measure_from_ns, r.end_ns)).collect();
    windows.sort_by_key(|w| w.1);
    let wdf = DataFrame::new(
        windows.len(),
        vec![
            Column::new("rung_id".into(), windows.iter().map(|w| w.0).collect::<Vec<u32>>()),
            Column::new("w_start".into(), windows.iter().map(|w| w.1).collect::<Vec<i64>>()),
            Column::new("w_end".into(), windows.iter().map(|w| w.2).collect::<Vec<i64>>()),
        ],
    )
    .map_err(CollateError::polars("rung windows"))?;
    let has = |c: &str| curve.df.column(c).is_ok();
    let mut agg = vec![col("t_ns").count().cast(DataType::Float64).alias("grid_n")];
    for (c, p) in [("node_buffered_w", "b"), ("node_instant_w", "i"), ("node_average_field_w", "a")] {
        if has(c) {
            agg.extend(aggs(c, p));
        }
    }
    let tagged = curve
        .df
        .clone()
        .lazy()
        .join_builder()
        .with(wdf.lazy())
        .left_on([col("t_ns")])
        .right_on([col("w_start")])
        .how(JoinType::AsOf(Box::new(AsOfOptions { strategy: AsofStrategy::Backward, allow_eq: true, check_sortedness: false, ..Default::default() })))
        .finish()
        .filter(col("rung_id").is_not_null().and(col("t_ns").lt(col("w_end"))));
    let df = tagged
        .group_by([col("rung_id")])
        .agg(agg)
        .sort(["rung_id"], SortMultipleOptions::default())
        .collect()
        .map_err(CollateError::polars("per-rung statistics"))?;
    let ids: Vec<u32> = df.column("rung_id").ok().and_then(|c| c.u32().ok().map(|ca| ca.to_vec().into_iter().map(|v| v.unwrap_or(0)).collect())).unwrap_or_default();
    let grid_n = f64_column(&df, "grid_n");
    let (b, i, a) = (stats_of(&df, "b"), stats_of(&df, "i"), stats_of(&df, "a"));
    let row_of: HashMap<u32, usize> = ids.iter().enumerate().map(|(k, id)| (*id, k)).collect();

    let mut out = Vec::new();
    for r in &run.rungs {
        let k = row_of.get(&r.info.id).copied();
        let get = |v: &Vec<Option<f64>>| k.and_then(|k| v.get(k).copied().flatten());
        let total = k.and_then(|k| grid_n.get(k).copied().flatten()).unwrap_or(0.0);
        let b_n = get(&b.n).unwrap_or(0.0);
        let i_n = get(&i.n).unwrap_or(0.0);
        let use_buffered = total > 0.0 && b_n / total >= 0.5;
        let (s, n, instrument) = if use_buffered { (&b, b_n, "buffered_w") } else { (&i, i_n, "instant_w") };
        let mean = get(&s.mean);
        let window_s = (r.end_ns - r.measure_from_ns) as f64 / 1e9;
        let diff = |x: Option<f64>, y: Option<f64>| x.zip(y).map(|(x, y)| r3(x - y));
        let e = edges.get(&r.info.id);
        out.push(RungSummary {
            rung_id: r.info.id,
            label: r.info.label.clone(),
            phase: r.info.phase.clone(),
            kind: r.info.kind.clone(),
            mode: r.info.mode.clone(),
            period_ms: r.info.period_ms,
            duty: r.info.duty,
            repeat: r.info.repeat,
            instrument: instrument.into(),
            samples: n as u64,
            coverage: if total > 0.0 { r3(n / total) } else { 0.0 },
            mean_w: mean.map(r3),
            peak_w: get(&s.max).map(r3),
            p1_w: get(&s.p1).map(r3),
            p99_w: get(&s.p99).map(r3),
            spread_w: diff(get(&s.p99), get(&s.p1)),
            swing_w: diff(get(&s.p90), get(&s.p10)),
            instrument_verdict: None,
            energy_j: mean.map(|m| r3(m * window_s)),
            instant_mean_w: get(&i.mean).map(r3),
            instant_spread_w: diff(get(&i.p99), get(&i.p1)),
            average_field_mean_w: get(&a.mean).map(r3),
            average_field_spread_w: diff(get(&a.p99), get(&a.p1)),
            average_field_swing_w: diff(get(&a.p90), get(&a.p10)),
            start_error_max_us: e.map(|e| r3(e.start_error_max_us)),
            start_skew_us: e.map(|e| r3(e.start_skew_us)),
            edge_err_p50_us: e.map(|e| r3(e.err_p50_us)),
            edge_err_p99_us: e.map(|e| r3(e.err_p99_us)),
            barrier_ok: r.barrier_ok,
        });
    }
    Ok(out)
}

/// Statistics across repeats of one rung configuration.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RepeatStats {
    /// Phase.
    pub phase: String,
    /// Kind.
    pub kind: String,
    /// Mode.
    pub mode: String,
    /// Period, ms.
    pub period_ms: Option<f64>,
    /// Duty.
    pub duty: f64,
    /// Repeats with a value.
    pub n: usize,
    /// Mean of the rung means, W.
    pub mean_w: f64,
    /// SD of the rung means.
    pub mean_w_sd: Option<f64>,
    /// 95% CI half-width of the mean.
    pub mean_w_ci95: Option<f64>,
    /// Mean peak, W.
    pub peak_w: f64,
    /// SD of peaks.
    pub peak_w_sd: Option<f64>,
    /// 95% CI half-width.
    pub peak_w_ci95: Option<f64>,
    /// Mean spread, W.
    pub spread_w: f64,
    /// SD of spreads.
    pub spread_w_sd: Option<f64>,
    /// 95% CI half-width.
    pub spread_w_ci95: Option<f64>,
    /// Mean swing, W.
    pub swing_w: f64,
    /// SD of swings.
    pub swing_w_sd: Option<f64>,
    /// 95% CI half-width.
    pub swing_w_ci95: Option<f64>,
}

/// Groups rungs by (phase, mode, period, duty) and summarizes across repeats.
pub fn repeat_stats(rungs: &[RungSummary]) -> Vec<RepeatStats> {
    let mut order: Vec<(String, String, Option<i64>)> = Vec::new();
    let mut groups: HashMap<(String, String, Option<i64>), Vec<&RungSummary>> = HashMap::new();
    for r in rungs {
        let key = (r.phase.clone(), r.mode.clone(), r.period_ms.map(|p| (p * 1000.0) as i64));
        if !groups.contains_key(&key) {
            order.push(key.clone());
        }
        groups.entry(key).or_default().push(r);
    }
    let mut out = Vec::new();
    for key in order {
        let g = &groups[&key];
        let pick = |f: fn(&RungSummary) -> Option<f64>| g.iter().filter_map(|r| f(r)).collect::<Vec<f64>>();
        let (m, m_sd, m_ci) = mean_sd_ci(&pick(|r| r.mean_w));
        let (p, p_sd, p_ci) = mean_sd_ci(&pick(|r| r.peak_w));
        let (s, s_sd, s_ci) = mean_sd_ci(&pick(|r| r.spread_w));
        let (w, w_sd, w_ci) = mean_sd_ci(&pick(|r| r.swing_w));
        let o = |v: Option<f64>| v.map(r3);
        out.push(RepeatStats {
            phase: g[0].phase.clone(),
            kind: g[0].kind.clone(),
            mode: g[0].mode.clone(),
            period_ms: g[0].period_ms,
            duty: g[0].duty,
            n: pick(|r| r.mean_w).len(),
            mean_w: r3(m),
            mean_w_sd: o(m_sd),
            mean_w_ci95: o(m_ci),
            peak_w: r3(p),
            peak_w_sd: o(p_sd),
            peak_w_ci95: o(p_ci),
            spread_w: r3(s),
            spread_w_sd: o(s_sd),
            spread_w_ci95: o(s_ci),
            swing_w: r3(w),
            swing_w_sd: o(w_sd),
            swing_w_ci95: o(w_ci),
        });
    }
    out
}

/// In-phase vs staggered at one period of one phase.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PhaseCompare {
    /// Phase.
    pub phase: String,
    /// Period, ms.
    pub period_ms: f64,
    /// Duty.
    pub duty: f64,
    /// Repeats in phase / staggered.
    pub n: String,
    /// Mean, in phase.
    pub in_phase_mean_w: f64,
    /// Mean, staggered.
    pub staggered_mean_w: f64,
    /// Staggered − in phase.
    pub delta_mean_w: f64,
    /// Peak, in phase.
    pub in_phase_peak_w: f64,
    /// Peak, staggered.
    pub staggered_peak_w: f64,
    /// Staggered − in phase.
    pub delta_peak_w: f64,
    /// Spread, in phase.
    pub in_phase_spread_w: f64,
    /// Spread, staggered.
    pub staggered_spread_w: f64,
    /// Staggered − in phase.
    pub delta_spread_w: f64,
}

/// Pairs in-phase and staggered repeat statistics at equal phase and period.
pub fn compare_modes(stats: &[RepeatStats]) -> Vec<PhaseCompare> {
    let mut out = Vec::new();
    for a in stats.iter().filter(|s| s.mode == "in_phase" && s.kind == "duty") {
        let Some(b) = stats.iter().find(|s| s.mode == "staggered" && s.phase == a.phase && s.period_ms == a.period_ms) else { continue };
        out.push(PhaseCompare {
            phase: a.phase.clone(),
            period_ms: a.period_ms.unwrap_or(0.0),
            duty: a.duty,
            n: format!("{}/{}", a.n, b.n),
            in_phase_mean_w: a.mean_w,
            staggered_mean_w: b.mean_w,
            delta_mean_w: r3(b.mean_w - a.mean_w),
            in_phase_peak_w: a.peak_w,
            staggered_peak_w: b.peak_w,
            delta_peak_w: r3(b.peak_w - a.peak_w),
            in_phase_spread_w: a.spread_w,
            staggered_spread_w: b.spread_w,
            delta_spread_w: r3(b.spread_w - a.spread_w),
        });
    }
    out
}

pub(crate) fn write_csv<T: Serialize>(rows: &[T], path: &Path) -> Result<(), CollateError> {
    let mut w = csv::Writer::from_path(path).map_err(|e| CollateError::io(path, std::io::Error::other(e)))?;
    for r in rows {
        w.serialize(r).map_err(|e| CollateError::io(path, std::io::Error::other(e)))?;
    }
    w.flush().map_err(|e| CollateError::io(path, e))
}

/// Writes summary, repeat and comparison tables as CSV and JSON.
pub fn write_tables(rungs: &[RungSummary], repeats: &[RepeatStats], compare: &[PhaseCompare], dir: &Path) -> Result<Vec<PathBuf>, CollateError> {
    let mut files = Vec::new();
    let paths = [dir.join("summary.csv"), dir.join("repeats.csv"), dir.join("in_phase_vs_staggered.csv"), dir.join("summary.json")];
    write_csv(rungs, &paths[0])?;
    write_csv(repeats, &paths[1])?;
    write_csv(compare, &paths[2])?;
    let json = serde_json::json!({ "rungs": rungs, "repeats": repeats, "in_phase_vs_staggered": compare });
    let text = serde_json::to_string_pretty(&json).unwrap_or_default();
    std::fs::write(&paths[3], text + "\n").map_err(|e| CollateError::io(&paths[3], e))?;
    files.extend(paths);
    Ok(files)
}
