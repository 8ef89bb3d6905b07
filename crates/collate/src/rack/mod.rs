//! Rack collation: a rack run directory holds one node run directory per
//! node under `nodes/` (each collatable alone). The rack curve sums every
//! GPU of every node on one time grid, with the same rule as a node curve:
//! a grid point where any GPU of any node has no reading has no rack value
//! (a dead node is a gap, never a power drop). Rung windows come from the
//! nodes' event logs, which must agree on every rung's start epoch. Outputs
//! go to the rack's `report/`: CSV and Parquet (the same files load in
//! polars, DuckDB or Spark), a per-node table and `report.md`.

pub mod tables;

pub use tables::{HostRungRow, NodeRungRow, NodeState, RackStart};

use crate::curve::{NodeCurve, node_curve, ordered_sum};
use crate::error::CollateError;
use crate::export::{csv, json, markdown, parquet, plots};
use crate::load::{Run, load_run, read_power};
use crate::sensor::series::SeriesSet;
use crate::summary::{PhaseCompare, RungSummary, compare_modes, repeat_stats, summarize};
use polars::prelude::*;
use powerlab_rundir::RunDir;
use std::path::{Path, PathBuf};
use tables::{NodeSummaryRow, RACK_DUTY_CAVEAT, rack_starts, status_text};

/// Whether `dir` is a rack run directory.
pub fn is_rack_dir(dir: &Path) -> bool {
    powerlab_rundir::RunFile::Rack.path_in(dir).is_file()
        || dir.join("nodes").is_dir() && !dir.join("manifest.json").exists()
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

/// Collates a rack run directory. `collate_nodes` re-collates every node
/// first (a node whose own collation fails is reported, not fatal).
///
/// # Errors
///
/// Returns [`CollateError::Io`] when `nodes/` cannot be listed, and
/// [`CollateError::BadRaw`] when it holds no node run directory or the
/// nodes started some rung at different epochs (they are not one rack
/// run). Loading any node's run, reading its raw samples, building the rack
/// curve and summaries, and writing the report fail as their own steps do
/// ([`CollateError::RunDir`], [`CollateError::BadRaw`],
/// [`CollateError::Io`], [`CollateError::Polars`] or
/// [`CollateError::Plot`]). A node whose own collation fails is not an
/// error: it is reported in the node table.
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
            && let Err(e) = crate::collation::collate(d)
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
            host: run.manifest.backend.host.clone(),
            gpus: run.manifest.backend.gpus.len(),
            status: status_text(&run),
            rungs_started: run.rungs.len(),
            collate_error,
        });
        runs.push((rd, run));
    }

    // Rung windows: every node must have started each rung at one epoch.
    let reference = runs
        .iter()
        .max_by_key(|(_, r)| r.rungs.len())
        .map(|(_, r)| r.clone())
        .ok_or_else(|| CollateError::BadRaw {
            path: rack.into(),
            message: "no nodes".into(),
        })?;
    let starts = rack_starts(&reference, &runs);
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
    let curve = node_curve(&SeriesSet::from_frame(&power), &rack_run)?;
    drop(power);
    let edges = rack_edges(&runs)?;
    let edge_stats = crate::edges::edge_stats(edges.as_ref(), &rack_run)?;
    let mut rungs = summarize(
        &curve,
        &rack_run,
        &edge_stats,
        &Default::default(),
        &Default::default(),
    )?;
    for r in rungs.iter_mut().filter(|r| r.rung.kind == "duty") {
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
    let mut files = csv::write_summary_tables(&rungs, &repeats, &compare, &report_dir)?;
    files.push(json::write_summary(
        &rungs,
        &repeats,
        &compare,
        &report_dir,
    )?);
    let curve_csv = report_dir.join("rack_curve.csv");
    csv::write_frame(&mut rack_curve(&curve, &rack_run)?, &curve_csv)?;
    files.push(curve_csv);
    let nodes_csv = report_dir.join("nodes.csv");
    csv::write_rows(&node_rows, &nodes_csv)?;
    files.push(nodes_csv);
    let hosts = tables::host_rows(&states, &node_rows);
    let hosts_csv = report_dir.join("hosts.csv");
    csv::write_rows(&hosts, &hosts_csv)?;
    files.push(hosts_csv);
    let starts_csv = report_dir.join("starts.csv");
    csv::write_rows(&starts, &starts_csv)?;
    files.push(starts_csv);
    let node_csv = report_dir.join("node_status.csv");
    csv::write_rows(&states, &node_csv)?;
    files.push(node_csv);
    for name in [
        "rack_curve.csv",
        "summary.csv",
        "in_phase_vs_staggered.csv",
        "nodes.csv",
    ] {
        files.extend(parquet::beside_csv(&report_dir.join(name))?);
    }
    files.extend(plots::write_plots(
        &curve,
        &rack_run,
        &rungs,
        &repeats,
        &compare,
        &Default::default(),
        &report_dir.join("plots"),
    )?);
    files.push(markdown::rack::write_rack_report(
        rack,
        &markdown::rack::RackTables {
            nodes: &states,
            hosts: &hosts,
            starts: &starts,
        },
        &rungs,
        &compare,
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

/// Every node's edges in one frame, each GPU named `<node>/<gpu>` (GPU
/// names repeat across nodes). Each edge's error is on its own node's
/// clock, as the start skew is.
fn rack_edges(runs: &[(RunDir, Run)]) -> Result<Option<DataFrame>, CollateError> {
    let mut frames = Vec::new();
    for (rd, run) in runs {
        let Some(mut df) = crate::edges::read_edges(rd)? else {
            continue;
        };
        let node = &run.manifest.backend.node_id;
        let named: StringChunked = df
            .column("gpu")
            .and_then(|c| c.str().cloned())
            .map_err(CollateError::polars("edge GPU names"))?
            .iter()
            .map(|g| g.map(|g| format!("{node}/{g}")))
            .collect();
        df.with_column(named.into_series().with_name("gpu".into()).into_column())
            .map_err(CollateError::polars("naming edges by node"))?;
        frames.push(df.lazy());
    }
    if frames.is_empty() {
        return Ok(None);
    }
    concat(frames, UnionArgs::default())
        .and_then(|lf| lf.collect())
        .map(Some)
        .map_err(CollateError::polars("combining the nodes' edges"))
}

/// The rack curve: time, the rack sums and each node's buffered sum,
/// rounded to three decimals (the columns of `rack_curve.csv`).
fn rack_curve(curve: &NodeCurve, run: &Run) -> Result<DataFrame, CollateError> {
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
            ordered_sum(&cols)
                .round(3, RoundMode::HalfToEven)
                .alias(format!("{n}_buffered_w").as_str()),
        );
    }
    curve
        .df
        .clone()
        .lazy()
        .select(exprs)
        .collect()
        .map_err(CollateError::polars("building the rack curve"))
}
