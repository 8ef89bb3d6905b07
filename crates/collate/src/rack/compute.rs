//! The compute layer of a rack: the stages from its nodes' reports to the
//! rack's [`Report`]. Nothing here writes a report file (a stale node's
//! own collation, run first, writes that node's report).

use super::cycles::{mark_incomplete_nodes, rack_cycles};
use super::tables::{self, rack_starts, status_text};
use super::{NodeReport, NodeRungRow, NodeState, RackOptions, RackStart, curve, edges, nodes};
use crate::handoff::read_cycles;
use crate::report::node::Steps;
use crate::report::{RackParts, Report, Scope};
use powerlab_analysis::summary::{RungSummary, compare_modes, repeat_stats, summarize};
use powerlab_core::units::NS_PER_MS;
use powerlab_rundir::RunDir;
use powerlab_rundir::summary::SummaryRow;
use powerlab_samples::error::CollateError;
use powerlab_samples::load::{Run, load_run};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Every node directory's run and summary rows, and what became of its
/// report.
struct Nodes {
    runs: Vec<(RunDir, Run)>,
    reports: Vec<NodeReport>,
    states: Vec<NodeState>,
    rows: Vec<NodeRungRow>,
    summaries: Vec<Vec<SummaryRow>>,
    /// Nodes `rack.json` lists that have no directory.
    missing: Vec<String>,
}

impl Nodes {
    /// The indices of the nodes with a report.
    fn usable(&self) -> Vec<usize> {
        (0..self.runs.len())
            .filter(|i| !matches!(self.reports[*i], NodeReport::Failed(_)))
            .collect()
    }
}

/// Computes a rack's report, in stages: the nodes' reports (collating the
/// stale ones), their runs and summaries, the rung starts, the rack curve,
/// the composed cycles and the rung summaries.
///
/// # Errors
///
/// As [`super::collate_rack`], for every step up to the report's files.
pub fn compute(rack: &Path, opts: RackOptions<'_>) -> Result<Report, CollateError> {
    let steps = Steps::start("collate rack");
    let dirs = super::node_dirs(rack)?;
    let reports = nodes::refresh(&dirs, opts.force, opts.jobs, opts.collate_node);
    steps.done("node reports");
    let nodes = read_nodes(rack, &dirs, reports)?;
    steps.done("node runs and summaries");
    // Rung windows: every node must have started each rung at one epoch.
    let reference = nodes
        .runs
        .iter()
        .max_by_key(|(_, r)| r.rungs.len())
        .map(|(_, r)| r.clone())
        .ok_or_else(|| CollateError::BadRaw {
            path: rack.into(),
            message: "no nodes".into(),
        })?;
    let (edge_stats, starts) = edges_and_starts(rack, &reference, &nodes)?;
    steps.done("edges");
    let (curve, curve_table) = rack_curve(&reference, &nodes)?;
    steps.done("rack curve");
    let usable = nodes.usable();
    let parts = usable
        .iter()
        .map(|&i| read_cycles(&nodes.runs[i].0.report_dir()))
        .collect::<Result<Vec<_>, _>>()?;
    let (cycles, energy_means) = rack_cycles(
        &reference,
        &nodes.runs,
        &usable,
        &parts,
        &nodes.summaries,
        &nodes.reports,
        nodes.missing.first(),
    );
    drop(parts);
    steps.done("cycles");
    // (The nodes' curves are what the rack has: no samples to find where
    // they stop holding readings from before a window.)
    let mut rungs = summarize(
        &curve,
        &reference,
        &edge_stats,
        &cycles,
        &energy_means,
        &HashMap::new(),
    );
    mark_gaps(&mut rungs, &nodes.states);
    mark_incomplete_nodes(&mut rungs, &nodes.states, &nodes.summaries);
    steps.done("rung summaries");
    // The rack has no sensor model of its own: the default sample window.
    let envelope = powerlab_analysis::envelope::envelope(
        &reference,
        &curve,
        &cycles,
        powerlab_analysis::envelope::SAMPLE_WINDOW_DEFAULT_MS,
    );
    let rack_gpus = usable.iter().map(|&i| nodes.runs[i].1.series.len()).sum();
    let grid = powerlab_analysis::grid::grid_metrics(
        &reference,
        &curve,
        &cycles,
        powerlab_analysis::envelope::SAMPLE_WINDOW_DEFAULT_MS,
        rack_gpus,
    );
    let parts = rack_parts(rack, nodes, curve_table, starts)?;
    Ok(Report {
        title: "rack run".into(),
        repeats: repeat_stats(&rungs),
        compare: compare_modes(&rungs),
        verdicts: crate::report::verdicts::run_rows(&rungs, &envelope, &grid),
        envelope,
        grid,
        run: reference,
        curve,
        cycles,
        rungs,
        scope: Scope::Rack(Box::new(parts)),
    })
}

/// Reads every node directory's run and summary rows, refusing two
/// directories of one node, and adds the nodes `rack.json` lists that have
/// no directory.
fn read_nodes(
    rack: &Path,
    dirs: &[PathBuf],
    mut reports: Vec<NodeReport>,
) -> Result<Nodes, CollateError> {
    let mut runs: Vec<(RunDir, Run)> = Vec::new();
    let (mut states, mut rows, mut summaries) = (Vec::new(), Vec::new(), Vec::new());
    for (d, rep) in dirs.iter().zip(reports.iter_mut()) {
        let rd = RunDir::open(d)?;
        let run = load_run(&rd)?;
        let node = run.manifest.backend.node_id.clone();
        if let Some((other, _)) = runs
            .iter()
            .find(|(_, r)| r.manifest.backend.node_id == node)
        {
            return Err(CollateError::BadRaw {
                path: d.clone(),
                message: format!(
                    "{} and {} are both node {node} (a copy?): keep one of them under nodes/",
                    other.path.display(),
                    d.display()
                ),
            });
        }
        let summary = summary_rows(d, rep);
        rows.extend(
            summary
                .iter()
                .filter(|r| r.instrument == powerlab_core::Instrument::BufferedW)
                .map(|r| NodeRungRow {
                    node: node.clone(),
                    rung_id: r.rung_id,
                    label: r.label.clone(),
                    mean_w: r.mean_w,
                    peak_w: r.peak_w,
                    spread_w: r.spread_w,
                }),
        );
        summaries.push(summary);
        states.push(node_state(node, &run, rep));
        runs.push((rd, run));
    }
    // Nodes the rack ran with but whose directory is not here: the rack
    // without them would read as a smaller complete rack.
    let missing: Vec<String> = super::listed_nodes(rack)
        .into_iter()
        .filter(|n| !states.iter().any(|s: &NodeState| s.node == *n))
        .collect();
    states.extend(missing.iter().map(|n| NodeState {
        node: n.clone(),
        host: "?".into(),
        gpus: 0,
        status: "missing: rack.json lists it, nodes/ has no directory for it".into(),
        rungs_started: 0,
        collate_error: Some("no node directory".into()),
    }));
    Ok(Nodes {
        runs,
        reports,
        states,
        rows,
        summaries,
        missing,
    })
}

/// A node's `report/summary.csv` rows (none for a node whose collation
/// failed; one that does not read marks the node failed).
fn summary_rows(dir: &Path, report: &mut NodeReport) -> Vec<SummaryRow> {
    if let NodeReport::Failed(_) = report {
        return Vec::new();
    }
    let summary = dir
        .join(powerlab_rundir::RunFile::Report.name())
        .join(powerlab_rundir::ReportFile::SummaryCsv.file_name());
    match powerlab_rundir::summary::read_summary(&summary) {
        Ok(rows) => rows,
        Err(e) => {
            *report = NodeReport::Failed(format!("its report/summary.csv does not read: {e}"));
            Vec::new()
        }
    }
}

/// A node's row of the node table.
fn node_state(node: String, run: &Run, report: &NodeReport) -> NodeState {
    NodeState {
        node,
        host: run.manifest.backend.host.clone(),
        gpus: run.manifest.backend.gpus.len(),
        status: status_text(run),
        rungs_started: run.rungs.len(),
        collate_error: match report {
            NodeReport::Failed(e) => Some(e.clone()),
            _ => None,
        },
    }
}

/// The rack's edge figures from the edge logs of the nodes with a report
/// (a node whose own collation failed, on a damaged `edges.csv` say, is a
/// gap the node table names, not a reason to refuse the rack), and every
/// rung's start across the rack; refuses nodes that started a rung at
/// different epochs.
fn edges_and_starts(
    rack: &Path,
    reference: &Run,
    nodes: &Nodes,
) -> Result<
    (
        HashMap<u32, powerlab_analysis::edges::EdgeStats>,
        Vec<RackStart>,
    ),
    CollateError,
> {
    let runs = &nodes.runs;
    let mut edges = edges::RackEdges::default();
    let inputs: Vec<(&RunDir, usize)> = nodes
        .usable()
        .into_iter()
        .map(|i| (&runs[i].0, runs[i].1.manifest.backend.gpus.len()))
        .collect();
    edges.add_nodes(&inputs)?;
    let starts = rack_starts(reference, runs, edges.start_spans());
    if let Some(bad) = starts.iter().find(|s| !s.epochs_agree) {
        return Err(CollateError::BadRaw {
            path: rack.join(powerlab_rundir::RunFile::Nodes.name()),
            message: format!(
                "rung {} started at different epochs on different nodes: these node directories are not one rack run",
                bad.label
            ),
        });
    }
    Ok((edges.stats(), starts))
}

/// The rack curve: the node curves, added as they are read. A node with no
/// report is a gap for the whole run.
fn rack_curve(
    reference: &Run,
    nodes: &Nodes,
) -> Result<
    (
        powerlab_analysis::curve::NodeCurve,
        polars::prelude::DataFrame,
    ),
    CollateError,
> {
    let grid_ns = reference.grid_ns.max(NS_PER_MS);
    let origin = powerlab_analysis::curve::grid_origin(reference);
    let usable = nodes.usable();
    let mut span: Option<(i64, i64)> = None;
    for &i in &usable {
        if let Some((a, b)) = curve::node_span(&nodes.runs[i].0.report_dir())? {
            span = Some(span.map_or((a, b), |(lo, hi)| (lo.min(a), hi.max(b))));
        }
    }
    let (first, last) = span.unwrap_or((origin, origin - 1));
    let first = origin + (first - origin).div_euclid(grid_ns) * grid_ns;
    let mut acc = curve::RackCurve::new(first, last, grid_ns);
    for (k, (rd, run)) in nodes.runs.iter().enumerate() {
        if usable.contains(&k) {
            acc.add_node(&run.manifest.backend.node_id, &rd.report_dir())?;
        } else {
            acc.add_missing_node();
        }
    }
    for _ in &nodes.missing {
        acc.add_missing_node();
    }
    acc.finish()
}

/// Nodes without a report: every rung they leave without a figure says why.
fn mark_gaps(rungs: &mut [RungSummary], states: &[NodeState]) {
    let Some(first) = states.iter().find(|s| s.collate_error.is_some()) else {
        return;
    };
    for r in rungs
        .iter_mut()
        .filter(|r| r.mean_w.is_none() && r.verdict.is_none())
    {
        r.verdict = Some(format!(
            "no rack figure: node {} has no report (see the node table)",
            first.node
        ));
        r.method = powerlab_rundir::summary::Method::None;
    }
}

/// What only a rack has: its nodes, hosts, starts and the nodes' own
/// meters added.
fn rack_parts(
    rack: &Path,
    nodes: Nodes,
    curve_table: polars::prelude::DataFrame,
    starts: Vec<RackStart>,
) -> Result<RackParts, CollateError> {
    let node_power = super::meter_sums::rack_node_power(
        &nodes
            .usable()
            .iter()
            .map(|&i| {
                let (rd, run) = &nodes.runs[i];
                (run.manifest.backend.node_id.clone(), rd.report_dir())
            })
            .collect::<Vec<_>>(),
        nodes.states.len(),
    )?;
    Ok(RackParts {
        path: rack.to_path_buf(),
        curve_table,
        hosts: tables::host_rows(&nodes.states, &nodes.rows),
        nodes: nodes.states,
        node_rows: nodes.rows,
        starts,
        node_power,
        node_reports: nodes.reports,
    })
}
