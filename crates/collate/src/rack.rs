//! Rack collation: a rack run directory holds one node run directory per
//! node under `nodes/` (each collatable alone). The rack curve sums every
//! GPU of every node on one time grid, with the same rule as a node curve:
//! a grid point where any GPU of any node has no reading has no rack value
//! (a dead node is a gap, never a power drop). Rung windows come from the
//! nodes' event logs, which must agree on every rung's start epoch. Outputs
//! go to the rack's `report/`: CSV and Parquet (the same files load in
//! polars, DuckDB or Spark), a per-node table and `report.md`.

use crate::curve::node_curve;
use crate::error::CollateError;
use crate::load::{Run, load_run, read_power};
use crate::summary::{
    PhaseCompare, RungSummary, compare_modes, repeat_stats, summarize, write_csv, write_tables,
};
use polars::prelude::*;
use powerlab_rundir::{RunDir, RunStatus};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// `rack.json`, written by rank 0 at the start of a rack run.
pub const RACK_FILE: &str = "rack.json";

/// Whether `dir` is a rack run directory.
pub fn is_rack_dir(dir: &Path) -> bool {
    dir.join(RACK_FILE).is_file()
        || dir.join("nodes").is_dir() && !dir.join("manifest.json").exists()
}

/// One node of the rack as the collator found it.
#[derive(Debug, Clone, Serialize)]
pub struct NodeState {
    /// Node label (`n002-host`).
    pub node: String,
    /// GPUs in its manifest.
    pub gpus: usize,
    /// How its run ended (`complete`, `failed: …`, `no end recorded (killed?)`).
    pub status: String,
    /// Rungs it started.
    pub rungs_started: usize,
    /// Its own collation, if it failed.
    pub collate_error: Option<String>,
}

/// One node's figures in one rung (from its own collation).
#[derive(Debug, Clone, Serialize)]
pub struct NodeRungRow {
    /// Node label.
    pub node: String,
    /// Rung id.
    pub rung_id: u32,
    /// Rung label.
    pub label: String,
    /// Mean node power, W.
    pub mean_w: Option<f64>,
    /// Peak, W.
    pub peak_w: Option<f64>,
    /// p99 − p1, W.
    pub spread_w: Option<f64>,
}

/// Start of one rung across the rack.
#[derive(Debug, Clone, Serialize)]
pub struct RackStart {
    /// Rung id.
    pub rung_id: u32,
    /// Label.
    pub label: String,
    /// Nodes that started it.
    pub nodes: usize,
    /// Whether every node recorded the same epoch.
    pub epochs_agree: bool,
    /// Largest minus smallest start error over every GPU of the rack, µs
    /// (each node's achieved start on its own clock; add the clock offsets
    /// in rack.json for the true skew).
    pub start_skew_us: Option<f64>,
}

/// What rack collation produced.
#[derive(Debug, Clone)]
pub struct RackOutput {
    /// `report/` of the rack.
    pub report_dir: PathBuf,
    /// Nodes found.
    pub nodes: Vec<NodeState>,
    /// Rack-level rung summaries.
    pub rungs: Vec<RungSummary>,
    /// Rack-level in-phase vs staggered.
    pub compare: Vec<PhaseCompare>,
    /// Per-rung starts across nodes.
    pub starts: Vec<RackStart>,
    /// Files written.
    pub files: Vec<PathBuf>,
}

fn node_dirs(rack: &Path) -> Result<Vec<PathBuf>, CollateError> {
    let nodes = rack.join("nodes");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&nodes)
        .map_err(|e| CollateError::io(&nodes, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("manifest.json").is_file())
        .collect();
    v.sort();
    if v.is_empty() {
        return Err(CollateError::BadRaw {
            path: nodes,
            message: "no node run directories (nodes/*/manifest.json) in this rack run".into(),
        });
    }
    Ok(v)
}

fn status_text(run: &Run) -> String {
    match &run.manifest.status {
        RunStatus::Complete => "complete".into(),
        RunStatus::Running => "no end recorded (the process was killed?)".into(),
        RunStatus::Interrupted { reason } => format!("interrupted: {reason}"),
        RunStatus::Failed { reason } => format!("failed: {reason}"),
    }
}

/// First start error of each GPU per rung, from a node's `edges.csv`.
fn start_errors(dir: &RunDir) -> BTreeMap<u32, Vec<i64>> {
    let mut out: BTreeMap<u32, Vec<i64>> = BTreeMap::new();
    let Ok(rows) = powerlab_rundir::read_rows::<powerlab_rundir::EdgeRow>(&dir.edges()) else {
        return out;
    };
    for r in rows.iter().filter(|r| r.kind == "start") {
        out.entry(r.rung_id)
            .or_default()
            .push(r.achieved_ns - r.intended_ns);
    }
    out
}

/// Collates a rack run directory. `collate_nodes` re-collates every node
/// first (a node whose own collation fails is reported, not fatal).
pub fn collate_rack(rack: &Path, collate_nodes: bool) -> Result<RackOutput, CollateError> {
    let dirs = node_dirs(rack)?;
    let mut states = Vec::new();
    let mut runs = Vec::new();
    let mut node_rows = Vec::new();
    for d in &dirs {
        let rd = RunDir::open(d)?;
        let run = load_run(&rd)?;
        let node = run.manifest.backend.node_id.clone();
        let mut collate_error = None;
        let summary = d.join("report").join("summary.csv");
        if (collate_nodes || !summary.is_file())
            && let Err(e) = crate::collate(d)
        {
            collate_error = Some(e.to_string());
        }
        if let Ok(rows) = powerlab_rundir::read_rows::<NodeSummaryRow>(&summary) {
            node_rows.extend(
                rows.into_iter()
                    .filter(|r| r.instrument == "buffered_w")
                    .map(|r| NodeRungRow {
                        node: node.clone(),
                        rung_id: r.rung_id,
                        label: r.label,
                        mean_w: r.mean_w,
                        peak_w: r.peak_w,
                        spread_w: r.spread_w,
                    }),
            );
        }
        states.push(NodeState {
            node,
            gpus: run.manifest.backend.gpus.len(),
            status: status_text(&run),
            rungs_started: run.rungs.len(),
            collate_error,
        });
        runs.push((rd, run));
    }

    // Rung windows: every node must have started each rung at one epoch.
    let mut starts = Vec::new();
    let reference = runs
        .iter()
        .max_by_key(|(_, r)| r.rungs.len())
        .map(|(_, r)| r.clone())
        .ok_or_else(|| CollateError::BadRaw {
            path: rack.into(),
            message: "no nodes".into(),
        })?;
    let errors: Vec<BTreeMap<u32, Vec<i64>>> = runs.iter().map(|(d, _)| start_errors(d)).collect();
    for w in &reference.rungs {
        let epochs: Vec<i64> = runs
            .iter()
            .filter_map(|(_, r)| {
                r.rungs
                    .iter()
                    .find(|x| x.info.id == w.info.id)
                    .map(|x| x.epoch_ns)
            })
            .collect();
        let errs: Vec<i64> = errors
            .iter()
            .filter_map(|m| m.get(&w.info.id))
            .flatten()
            .copied()
            .collect();
        let skew = match (errs.iter().min(), errs.iter().max()) {
            (Some(a), Some(b)) => Some((b - a) as f64 / 1e3),
            _ => None,
        };
        starts.push(RackStart {
            rung_id: w.info.id,
            label: w.info.label.clone(),
            nodes: epochs.len(),
            epochs_agree: epochs.windows(2).all(|p| p[0] == p[1]),
            start_skew_us: skew,
        });
    }
    if let Some(bad) = starts.iter().find(|s| !s.epochs_agree) {
        return Err(CollateError::BadRaw {
            path: rack.join("nodes"),
            message: format!(
                "rung {} started at different epochs on different nodes: these node directories are not one rack run",
                bad.label
            ),
        });
    }

    // The rack curve: every series of every node on one grid.
    let mut rack_run = reference.clone();
    rack_run.series = runs.iter().flat_map(|(_, r)| r.series.clone()).collect();
    rack_run.series.sort();
    let mut frames = Vec::new();
    let mut raw_rows = 0usize;
    for (d, r) in &runs {
        let raw = read_power(d, r)?;
        raw_rows += raw.total_rows;
        frames.push(raw.power.lazy());
    }
    let power = concat(frames, UnionArgs::default())
        .and_then(|lf| lf.collect())
        .map_err(CollateError::polars("combining the nodes' raw samples"))?;
    let curve = node_curve(&crate::sensor::SeriesSet::from_frame(&power), &rack_run)?;
    drop(power);
    let mut rungs = summarize(
        &curve,
        &rack_run,
        &Default::default(),
        &Default::default(),
        &Default::default(),
    )?;
    for r in rungs.iter_mut().filter(|r| r.kind == "duty") {
        r.verdict = Some(RACK_DUTY_CAVEAT.into());
    }
    let repeats = repeat_stats(&rungs);
    let compare = compare_modes(&rungs);

    let report_dir = rack.join("report");
    if report_dir.exists() {
        std::fs::remove_dir_all(&report_dir).map_err(|e| CollateError::io(&report_dir, e))?;
    }
    std::fs::create_dir_all(report_dir.join("plots"))
        .map_err(|e| CollateError::io(&report_dir, e))?;
    let mut files = write_tables(&rungs, &repeats, &compare, &report_dir)?;
    files.push(write_rack_curve(&curve, &rack_run, &report_dir)?);
    let nodes_csv = report_dir.join("nodes.csv");
    write_csv(&node_rows, &nodes_csv)?;
    files.push(nodes_csv);
    let starts_csv = report_dir.join("starts.csv");
    write_csv(&starts, &starts_csv)?;
    files.push(starts_csv);
    let node_csv = report_dir.join("node_status.csv");
    write_csv(&states, &node_csv)?;
    files.push(node_csv);
    for name in [
        "rack_curve.csv",
        "summary.csv",
        "in_phase_vs_staggered.csv",
        "nodes.csv",
    ] {
        files.extend(csv_to_parquet(&report_dir.join(name))?);
    }
    files.extend(crate::plots::write_plots(
        &curve,
        &rack_run,
        &rungs,
        &repeats,
        &compare,
        &Default::default(),
        &report_dir.join("plots"),
    )?);
    files.push(write_rack_report(
        rack,
        &states,
        &rungs,
        &compare,
        &starts,
        raw_rows,
        &report_dir,
    )?);
    Ok(RackOutput {
        report_dir,
        nodes: states,
        rungs,
        compare,
        starts,
        files,
    })
}

#[derive(serde::Deserialize)]
struct NodeSummaryRow {
    rung_id: u32,
    label: String,
    instrument: String,
    mean_w: Option<f64>,
    peak_w: Option<f64>,
    spread_w: Option<f64>,
}

/// `rack_curve.csv`: time, the rack sums and each node's buffered sum.
fn write_rack_curve(
    curve: &crate::curve::NodeCurve,
    run: &Run,
    dir: &Path,
) -> Result<PathBuf, CollateError> {
    let path = dir.join("rack_curve.csv");
    let mut nodes: Vec<&str> = run.series.iter().map(|(n, _)| n.as_str()).collect();
    nodes.dedup();
    let mut exprs = vec![col("t_ns")];
    for (from, to) in [
        ("node_buffered_w", "rack_buffered_w"),
        ("node_instant_w", "rack_instant_w"),
    ] {
        if curve.df.column(from).is_ok() {
            exprs.push(col(from).round(3, RoundMode::HalfToEven).alias(to));
        }
    }
    for n in &nodes {
        let cols: Vec<Expr> = run
            .series
            .iter()
            .filter(|(x, _)| x == n)
            .map(|(x, g)| col(format!("{x}/{g}:buffered_w").as_str()))
            .collect();
        exprs.push(
            crate::curve::ordered_sum(&cols)
                .round(3, RoundMode::HalfToEven)
                .alias(format!("{n}_buffered_w").as_str()),
        );
    }
    let mut df = curve
        .df
        .clone()
        .lazy()
        .select(exprs)
        .collect()
        .map_err(CollateError::polars("building the rack curve"))?;
    let file = std::fs::File::create(&path).map_err(|e| CollateError::io(&path, e))?;
    CsvWriter::new(std::io::BufWriter::new(file))
        .finish(&mut df)
        .map_err(CollateError::polars("writing rack_curve.csv"))?;
    Ok(path)
}

/// Writes `<name>.parquet` beside a CSV file, with the same columns (none
/// for a table without rows: its CSV is empty too).
fn csv_to_parquet(csv_path: &Path) -> Result<Option<PathBuf>, CollateError> {
    let out = csv_path.with_extension("parquet");
    let len = std::fs::metadata(csv_path).map(|m| m.len()).unwrap_or(0);
    if len == 0 {
        return Ok(None);
    }
    let mut df = CsvReadOptions::default()
        .with_has_header(true)
        .try_into_reader_with_file_path(Some(csv_path.to_path_buf()))
        .and_then(|r| r.finish())
        .map_err(CollateError::polars("reading a table for Parquet"))?;
    let file = std::fs::File::create(&out).map_err(|e| CollateError::io(&out, e))?;
    ParquetWriter::new(file)
        .finish(&mut df)
        .map_err(CollateError::polars("writing Parquet"))?;
    Ok(Some(out))
}

/// What a rack-level duty figure is today: the node-truth method (composed
/// cycles) runs per node, not yet across nodes.
const RACK_DUTY_CAVEAT: &str = "sample and hold across every GPU of the rack: overstates a staggered rung's spread; each node's report has its composed-cycle figures";

fn fmt_w(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.0}")).unwrap_or_else(|| "–".into())
}

fn write_rack_report(
    rack: &Path,
    nodes: &[NodeState],
    rungs: &[RungSummary],
    compare: &[PhaseCompare],
    starts: &[RackStart],
    raw_rows: usize,
    dir: &Path,
) -> Result<PathBuf, CollateError> {
    let mut s = String::new();
    let gpus: usize = nodes.iter().map(|n| n.gpus).sum();
    let bad: Vec<&NodeState> = nodes.iter().filter(|n| n.status != "complete").collect();
    let name = rack
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if bad.is_empty() {
        let _ = writeln!(
            s,
            "# {name} — complete rack run: {} nodes, {gpus} GPUs",
            nodes.len()
        );
    } else {
        let list: Vec<String> = bad
            .iter()
            .map(|n| format!("{}: {}", n.node, n.status))
            .collect();
        let _ = writeln!(
            s,
            "# ⚠ RACK RUN DID NOT COMPLETE on {} of {} nodes — {}",
            bad.len(),
            nodes.len(),
            list.join("; ")
        );
        let _ = writeln!(
            s,
            "\nNumbers cover the rungs that ran; a grid point where any node has no reading has no rack value."
        );
    }
    let _ = writeln!(
        s,
        "\n{raw_rows} raw rows from {} nodes. Rack power is the sum of every GPU's driver-buffered samples on one grid.",
        nodes.len()
    );
    let _ = writeln!(
        s,
        "\n## Nodes\n\n| node | GPUs | status | rungs started |\n|---|---|---|---|"
    );
    for n in nodes {
        let extra = n
            .collate_error
            .as_ref()
            .map(|e| format!(" (its own collation failed: {e})"))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "| {} | {} | {}{extra} | {} |",
            n.node, n.gpus, n.status, n.rungs_started
        );
    }
    let _ = writeln!(
        s,
        "\n## Rack power per rung (buffered samples)\n\n| rung | start skew across the rack | mean | peak | spread p99−p1 | coverage |\n|---|---|---|---|---|---|"
    );
    for r in rungs.iter().filter(|r| r.instrument == "buffered_w") {
        let skew = starts
            .iter()
            .find(|x| x.rung_id == r.rung_id)
            .and_then(|x| x.start_skew_us)
            .map(|v| format!("{v:.0} µs"))
            .unwrap_or_else(|| "–".into());
        let _ = writeln!(
            s,
            "| {} | {skew} | {} W | {} W | {} W | {:.0} % |",
            r.label,
            fmt_w(r.mean_w),
            fmt_w(r.peak_w),
            fmt_w(r.spread_w),
            r.coverage * 100.0
        );
    }
    if rungs.iter().any(|r| r.kind == "duty") {
        let _ = writeln!(s, "\n**Duty rungs at rack level: {RACK_DUTY_CAVEAT}.**");
    }
    if !compare.is_empty() {
        let _ = writeln!(
            s,
            "\n## In phase vs staggered, whole rack\n\n| phase | period | mean in phase | mean staggered | peak in phase | peak staggered | spread in phase | spread staggered |\n|---|---|---|---|---|---|---|---|"
        );
        for c in compare {
            let _ = writeln!(
                s,
                "| {} | {} ms | {} W | {} W | {} W | {} W | {} W | {} W |",
                c.phase,
                c.achieved_period_ms,
                fmt_w(c.in_phase_mean_w),
                fmt_w(c.staggered_mean_w),
                fmt_w(c.in_phase_peak_w),
                fmt_w(c.staggered_peak_w),
                fmt_w(c.in_phase_spread_w),
                fmt_w(c.staggered_spread_w)
            );
        }
    }
    let _ = writeln!(
        s,
        "\nEvery rung started at one epoch on every node (checked from each node's events). Start skew is measured on each node's own clock; rack.json gives each node's clock offset against rank 0."
    );
    let _ = writeln!(
        s,
        "\nFiles: `rack_curve.{{csv,parquet}}`, `summary.{{csv,parquet}}`, `in_phase_vs_staggered.{{csv,parquet}}`, `nodes.{{csv,parquet}}` (each node's own figures per rung), `starts.csv`, `node_status.csv`; each node's full report is in `nodes/<node>/report/`."
    );
    let path = dir.join("report.md");
    std::fs::write(&path, s).map_err(|e| CollateError::io(&path, e))?;
    Ok(path)
}
