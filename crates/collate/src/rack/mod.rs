//! Rack collation: a rack run directory holds one node run directory per
//! node under `nodes/` (each collatable alone). The rack works from its
//! nodes' reports, never from their raw files: each node's collation (run
//! by its own rank right after a rack run, or here for a node whose report
//! is stale, [`nodes`]) hands over its curve and composed cycles
//! ([`crate::handoff`]). The rack curve adds the node curves as they are
//! read ([`curve`]), with the node rule one level up: a point where any node
//! has no value has no rack value (a dead node is a gap, never a power
//! drop). A duty rung's rack figures add the nodes' composed cycles at the
//! rung's shared epoch. Edge figures reduce every node's edge log
//! ([`edges`]). Rung windows come from the nodes' event logs, which must
//! agree on every rung's start epoch. Memory is one node's collation plus
//! the rack curve, whatever the node count. Outputs go to the rack's
//! `report/`: CSV and Parquet (the same files load in polars, DuckDB or
//! Spark), a per-node table and `report.md`.

pub mod curve;
pub mod edges;
pub mod node_power;
pub mod nodes;
pub mod tables;

pub use nodes::{NodeCollator, NodeReport};
pub use tables::{HostRungRow, NodeRungRow, NodeState, RackStart};

use crate::cycle::interval::{self, Stated};
use crate::cycle::{CyclePart, NoCycle, NodeCycle, sum_cycles};
use crate::error::CollateError;
use crate::export::{csv, json, markdown, parquet, plots};
use crate::handoff::read_cycles;
use crate::load::{Run, load_run};
use crate::summary::{Cycles, PhaseCompare, RungSummary, compare_modes, repeat_stats, summarize};
use powerlab_core::units::NS_PER_MS;
use powerlab_rundir::PhaseKind;
use powerlab_rundir::RunDir;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use tables::{NodeSummaryRow, rack_starts, status_text};

/// Whether `dir` is a rack run directory.
pub fn is_rack_dir(dir: &Path) -> bool {
    powerlab_rundir::RunFile::Rack.path_in(dir).is_file()
        || dir.join(powerlab_rundir::RunFile::Nodes.name()).is_dir()
            && !dir.join(powerlab_rundir::RunFile::Manifest.name()).exists()
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
    /// What became of each node's report, in the order of the node
    /// directories (the first entries of `nodes`).
    pub node_reports: Vec<NodeReport>,
    /// Nodes without a report (their collation failed, or `rack.json`
    /// lists them and `nodes/` lacks them): the rack is incomplete.
    pub gaps: Vec<String>,
    /// Files written.
    pub files: Vec<PathBuf>,
}

fn node_dirs(rack: &Path) -> Result<Vec<PathBuf>, CollateError> {
    let nodes = rack.join(powerlab_rundir::RunFile::Nodes.name());
    let mut v: Vec<PathBuf> = std::fs::read_dir(&nodes)
        .map_err(|e| CollateError::io(&nodes, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join(powerlab_rundir::RunFile::Manifest.name()).is_file())
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

/// How a rack collation treats its nodes' reports.
#[derive(Clone, Copy)]
pub struct RackOptions<'a> {
    /// Collate every node again, fresh or not.
    pub force: bool,
    /// Stale nodes collated at once (each as much memory as one node's
    /// collation).
    pub jobs: usize,
    /// How a stale node is collated.
    pub collate_node: &'a NodeCollator,
}

impl Default for RackOptions<'_> {
    fn default() -> Self {
        Self {
            force: false,
            jobs: 1,
            collate_node: &nodes::collate_here,
        }
    }
}

/// Collates a rack run directory: brings every node's report up to date
/// (reusing fresh ones, see [`RackOptions`]), then builds the rack's report
/// from them.
///
/// # Errors
///
/// Returns [`CollateError::Io`] when `nodes/` cannot be listed, and
/// [`CollateError::BadRaw`] when it holds no node run directory, the nodes
/// started some rung at different epochs (they are not one rack run), or a
/// node's curve is not on the rack's grid. Loading any node's run, reading
/// its report or edge log, building the rack's summaries and writing the
/// report fail as their own steps do ([`CollateError::RunDir`],
/// [`CollateError::BadRaw`], [`CollateError::Io`], [`CollateError::Polars`]
/// or [`CollateError::Plot`]). Returns [`CollateError::Busy`] while another
/// collation of the rack runs. A node whose own collation fails, or that
/// `rack.json` lists but `nodes/` lacks, is not an error: it is reported in
/// the node table, the report says the rack is incomplete, and it is a gap
/// in the rack curve ([`RackOutput::gaps`]). The new report replaces the
/// old one only when complete.
pub fn collate_rack(rack: &Path, opts: RackOptions<'_>) -> Result<RackOutput, CollateError> {
    let _lock = powerlab_rundir::lock::try_hold(
        &rack.join(powerlab_rundir::RunFile::CollateLock.name()),
        "collating this rack",
    )
    .map_err(|e| CollateError::Busy {
        path: rack.to_path_buf(),
        message: format!("another collation of this rack is running: {e}; wait for it to end"),
    })?;
    let report_dir = rack.join(powerlab_rundir::RunFile::Report.name());
    let (out, files) = crate::collation::staged(rack, &report_dir, |staging| {
        rack_into(rack, opts, staging).map(|o| {
            let files = o.files.clone();
            (o, files)
        })
    })?;
    Ok(RackOutput {
        report_dir,
        files,
        ..out
    })
}

/// The nodes `rack.json` lists (none without one).
fn listed_nodes(rack: &Path) -> Vec<String> {
    std::fs::read(powerlab_rundir::RunFile::Rack.path_in(rack))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| {
            v.get("nodes").and_then(|n| n.as_array()).map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
        })
        .unwrap_or_default()
}

/// The rack report, written into `out_dir` (which exists, with `plots/`).
fn rack_into(
    rack: &Path,
    opts: RackOptions<'_>,
    out_dir: &Path,
) -> Result<RackOutput, CollateError> {
    // Step times at POWERLAB_LOG=info, for the rack collation benchmark.
    let t0 = std::time::Instant::now();
    let step = |what: &str| {
        tracing::info!(
            "collate rack: {what} done at {:.2} s",
            t0.elapsed().as_secs_f64()
        )
    };
    let dirs = node_dirs(rack)?;
    let mut node_reports = nodes::refresh(&dirs, opts.force, opts.jobs, opts.collate_node);
    step("node reports");
    let mut states = Vec::new();
    let mut runs = Vec::new();
    let mut node_rows = Vec::new();
    let mut summaries: Vec<Vec<NodeSummaryRow>> = Vec::new();
    for (d, rep) in dirs.iter().zip(node_reports.iter_mut()) {
        let rd = RunDir::open(d)?;
        let run = load_run(&rd)?;
        let node = run.manifest.backend.node_id.clone();
        if let Some((other, _)) = runs
            .iter()
            .find(|(_, r): &&(RunDir, Run)| r.manifest.backend.node_id == node)
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
        let summary = d
            .join(powerlab_rundir::RunFile::Report.name())
            .join(powerlab_rundir::ReportFile::SummaryCsv.file_name());
        let rows = match rep {
            NodeReport::Failed(_) => Vec::new(),
            _ => match powerlab_rundir::read_rows::<NodeSummaryRow>(&summary) {
                Ok(rows) => rows,
                Err(e) => {
                    *rep = NodeReport::Failed(format!("its report/summary.csv does not read: {e}"));
                    Vec::new()
                }
            },
        };
        node_rows.extend(
            rows.iter()
                .filter(|r| r.instrument == "buffered_w")
                .map(|r| NodeRungRow {
                    node: node.clone(),
                    rung_id: r.rung_id,
                    label: r.label.clone(),
                    mean_w: r.mean_w,
                    peak_w: r.peak_w,
                    spread_w: r.spread_w,
                }),
        );
        summaries.push(rows);
        states.push(NodeState {
            node,
            host: run.manifest.backend.host.clone(),
            gpus: run.manifest.backend.gpus.len(),
            status: status_text(&run),
            rungs_started: run.rungs.len(),
            collate_error: match rep {
                NodeReport::Failed(e) => Some(e.clone()),
                _ => None,
            },
        });
        runs.push((rd, run));
    }

    // Nodes the rack ran with but whose directory is not here: the rack
    // without them would read as a smaller complete rack.
    let missing: Vec<String> = listed_nodes(rack)
        .into_iter()
        .filter(|n| !states.iter().any(|s: &NodeState| s.node == *n))
        .collect();
    for n in &missing {
        states.push(NodeState {
            node: n.clone(),
            host: "?".into(),
            gpus: 0,
            status: "missing: rack.json lists it, nodes/ has no directory for it".into(),
            rungs_started: 0,
            collate_error: Some("no node directory".into()),
        });
    }
    step("node runs and summaries");

    // Rung windows: every node must have started each rung at one epoch.
    let reference = runs
        .iter()
        .max_by_key(|(_, r)| r.rungs.len())
        .map(|(_, r)| r.clone())
        .ok_or_else(|| CollateError::BadRaw {
            path: rack.into(),
            message: "no nodes".into(),
        })?;
    let mut edges = edges::RackEdges::default();
    let edge_inputs: Vec<(&RunDir, usize)> = runs
        .iter()
        .map(|(rd, run)| (rd, run.manifest.backend.gpus.len()))
        .collect();
    edges.add_nodes(&edge_inputs)?;
    let edge_stats = edges.stats();
    let starts = rack_starts(&reference, &runs, edges.start_spans());
    drop(edges);
    step("edges");
    if let Some(bad) = starts.iter().find(|s| !s.epochs_agree) {
        return Err(CollateError::BadRaw {
            path: rack.join(powerlab_rundir::RunFile::Nodes.name()),
            message: format!(
                "rung {} started at different epochs on different nodes: these node directories are not one rack run",
                bad.label
            ),
        });
    }
    let usable: Vec<usize> = (0..runs.len())
        .filter(|i| !matches!(node_reports[*i], NodeReport::Failed(_)))
        .collect();

    // The rack curve: the node curves, added as they are read. A node with
    // no report is a gap for the whole run.
    let grid_ns = reference.grid_ns.max(NS_PER_MS);
    let origin = crate::curve::grid_origin(&reference);
    let mut span: Option<(i64, i64)> = None;
    for &i in &usable {
        if let Some((a, b)) = curve::node_span(&runs[i].0.report_dir())? {
            span = Some(span.map_or((a, b), |(lo, hi)| (lo.min(a), hi.max(b))));
        }
    }
    let (first, last) = span.unwrap_or((origin, origin - 1));
    let first = origin + (first - origin).div_euclid(grid_ns) * grid_ns;
    let mut acc = curve::RackCurve::new(first, last, grid_ns);
    for (k, (rd, run)) in runs.iter().enumerate() {
        if usable.contains(&k) {
            acc.add_node(&run.manifest.backend.node_id, &rd.report_dir())?;
        } else {
            acc.add_missing_node();
        }
    }
    for _ in &missing {
        acc.add_missing_node();
    }
    let (curve, mut curve_file) = acc.finish()?;
    step("rack curve");

    // Duty rungs: the nodes' composed cycles, added.
    let mut parts: Vec<BTreeMap<u32, CyclePart>> = Vec::new();
    for &i in &usable {
        parts.push(read_cycles(&runs[i].0.report_dir())?);
    }
    let (cycles, energy_means) = rack_cycles(
        &reference,
        &runs,
        &usable,
        &parts,
        &summaries,
        &node_reports,
        missing.first(),
    );
    drop(parts);

    step("cycles");
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
    // Nodes without a report: every rung they leave without a figure says why.
    let gaps: Vec<String> = states
        .iter()
        .filter(|s| s.collate_error.is_some())
        .map(|s| s.node.clone())
        .collect();
    if let Some(first) = gaps.first() {
        for r in rungs
            .iter_mut()
            .filter(|r| r.mean_w.is_none() && r.verdict.is_none())
        {
            r.verdict = Some(format!(
                "no rack figure: node {first} has no report (see the node table)"
            ));
            r.method = "none".into();
        }
    }
    mark_incomplete_nodes(&mut rungs, &states, &summaries);
    let repeats = repeat_stats(&rungs);
    let compare = compare_modes(&rungs);
    step("rung summaries");

    let report_dir = out_dir.to_path_buf();
    let mut files = csv::write_summary_tables(&rungs, &repeats, &compare, &report_dir)?;
    files.push(json::write_summary(
        &rungs,
        &repeats,
        &compare,
        &report_dir,
    )?);
    let curve_csv = report_dir.join(powerlab_rundir::ReportFile::RackCurveCsv.file_name());
    csv::write_frame(&mut curve_file, &curve_csv)?;
    files.push(curve_csv);
    files.push(parquet::write_frame(
        &mut curve_file,
        &report_dir.join(powerlab_rundir::ReportFile::RackCurveParquet.file_name()),
    )?);
    drop(curve_file);
    files.push(crate::handoff::write_cycles(
        &cycles,
        &report_dir.join(powerlab_rundir::ReportFile::RackCyclesParquet.file_name()),
    )?);
    let nodes_csv = report_dir.join(powerlab_rundir::ReportFile::NodesCsv.file_name());
    csv::write_rows(&node_rows, &nodes_csv)?;
    files.push(nodes_csv);
    let hosts = tables::host_rows(&states, &node_rows);
    let hosts_csv = report_dir.join(powerlab_rundir::ReportFile::HostsCsv.file_name());
    csv::write_rows(&hosts, &hosts_csv)?;
    files.push(hosts_csv);
    let starts_csv = report_dir.join(powerlab_rundir::ReportFile::StartsCsv.file_name());
    csv::write_rows(&starts, &starts_csv)?;
    files.push(starts_csv);
    let node_csv = report_dir.join(powerlab_rundir::ReportFile::NodeStatusCsv.file_name());
    csv::write_rows(&states, &node_csv)?;
    files.push(node_csv);
    for name in [
        powerlab_rundir::ReportFile::SummaryCsv.file_name(),
        powerlab_rundir::ReportFile::InPhaseVsStaggeredCsv.file_name(),
        powerlab_rundir::ReportFile::NodesCsv.file_name(),
    ] {
        files.extend(parquet::beside_csv(&report_dir.join(name))?);
    }
    let node_power_rows = node_power::rack_node_power(
        &usable
            .iter()
            .map(|&i| {
                (
                    runs[i].1.manifest.backend.node_id.clone(),
                    runs[i].0.report_dir(),
                )
            })
            .collect::<Vec<_>>(),
        states.len(),
    )?;
    if !node_power_rows.is_empty() {
        let p = report_dir.join(powerlab_rundir::ReportFile::NodePowerCsv.file_name());
        csv::write_rows(&node_power_rows, &p)?;
        files.push(p);
    }
    step("tables");
    files.extend(plots::write_plots(
        &curve,
        &reference,
        &rungs,
        &repeats,
        &compare,
        &cycles,
        &report_dir.join(powerlab_rundir::ReportFile::Plots.file_name()),
    )?);
    step("plots");
    let reused = node_reports
        .iter()
        .filter(|r| matches!(r, NodeReport::Reused | NodeReport::ReusedRawArchived))
        .count();
    files.push(markdown::rack::write_rack_report(
        rack,
        &markdown::rack::RackTables {
            nodes: &states,
            hosts: &hosts,
            starts: &starts,
            reused,
            recollated: node_reports.len() - reused,
            node_power: &node_power_rows,
        },
        &rungs,
        &compare,
        &report_dir,
    )?);
    files.push(crate::export::html::write_html(&report_dir, "rack run")?);
    Ok(RackOutput {
        report_dir,
        nodes: states,
        rungs,
        compare,
        starts,
        node_reports,
        gaps,
        files,
    })
}

/// The rack's composed cycle of every duty rung of `reference`: the sum of
/// every node's, in node order. A rung that some node could not fold (or a
/// node without a report) has that node's verdict instead, and the sum of
/// the nodes' means where every node has one (from its energy counter or
/// its cycle).
/// A rack rung built in part from a node's incomplete window (stopped,
/// killed) says so, naming the node, where the reader looks first: the
/// node's own mark, carried over.
fn mark_incomplete_nodes(
    rungs: &mut [RungSummary],
    states: &[tables::NodeState],
    summaries: &[Vec<NodeSummaryRow>],
) {
    for r in rungs.iter_mut() {
        let marks: Vec<String> = states
            .iter()
            .zip(summaries)
            .filter_map(|(st, rows)| {
                let row = rows.iter().find(|x| x.rung_id == r.rung.id)?;
                let m = row.incomplete.as_ref()?;
                Some(format!("node {}: {m}", st.node))
            })
            .collect();
        if marks.is_empty() {
            continue;
        }
        let own = r.incomplete.take();
        r.incomplete = Some(own.into_iter().chain(marks).collect::<Vec<_>>().join("; "));
    }
}

/// A rack cycle's step and intervals from its nodes' summaries (see
/// [`interval::summed`]): left without them unless every node states them.
fn with_node_intervals(c: &mut NodeCycle, rows: &[Option<&NodeSummaryRow>]) {
    let stated: Option<Vec<[Stated; 4]>> =
        rows.iter().map(|r| r.and_then(|r| r.stated())).collect();
    let steps: Option<f64> = rows.iter().map(|r| r.and_then(|r| r.step_w)).sum();
    let cycles = rows
        .iter()
        .map(|r| r.and_then(|r| r.cycles))
        .min()
        .flatten();
    let (Some(stated), Some(step), Some(cycles)) = (stated, steps, cycles) else {
        return;
    };
    let figure = |i: usize| stated.iter().map(|s| s[i]).collect::<Vec<_>>();
    let (m, p, s, w) = (figure(0), figure(1), figure(2), figure(3));
    c.step_w = step;
    c.interval = Some(interval::summed(&c.stats, [&m, &p, &s, &w], cycles));
}

fn rack_cycles(
    reference: &Run,
    runs: &[(RunDir, Run)],
    usable: &[usize],
    parts: &[BTreeMap<u32, CyclePart>],
    summaries: &[Vec<NodeSummaryRow>],
    reports: &[NodeReport],
    missing: Option<&String>,
) -> (Cycles, HashMap<u32, f64>) {
    let mut cycles: Cycles = HashMap::new();
    let mut means = HashMap::new();
    for r in &reference.rungs {
        let periodic = r.info.kind == PhaseKind::Duty
            && r.info.period_ms.is_some()
            && r.info.duty > 0.0
            && r.info.duty < 1.0;
        if !periodic {
            cycles.insert(r.info.id, Err(NoCycle::NotPeriodic));
            continue;
        }
        let mut found = Vec::new();
        let mut rows = Vec::new();
        let mut why = missing
            .map(|n| format!("node {n}: rack.json lists it, nodes/ has no directory for it"));
        for (k, (_, run)) in runs.iter().enumerate() {
            let node = &run.manifest.backend.node_id;
            let part = usable
                .iter()
                .position(|u| *u == k)
                .and_then(|p| parts[p].get(&r.info.id));
            match part {
                Some(c) => {
                    found.push(c);
                    rows.push(summaries[k].iter().find(|s| s.rung_id == r.info.id));
                }
                None if why.is_none() => {
                    let v = match &reports[k] {
                        NodeReport::Failed(e) => format!("its collation failed: {e}"),
                        _ => summaries[k]
                            .iter()
                            .find(|s| s.rung_id == r.info.id)
                            .and_then(|s| s.verdict.clone())
                            .unwrap_or_else(|| "no composed cycle for this rung".into()),
                    };
                    why = Some(format!("node {node}: {v}"));
                }
                None => {}
            }
        }
        match why {
            None => match sum_cycles(r, &found) {
                Some(mut c) => {
                    with_node_intervals(&mut c, &rows);
                    cycles.insert(r.info.id, Ok(c));
                }
                None => {
                    cycles.insert(
                        r.info.id,
                        Err(NoCycle::Verdict(
                            "the nodes' cycles are of different periods: not one rack run".into(),
                        )),
                    );
                }
            },
            Some(v) => {
                let node_means: Option<Vec<f64>> = summaries
                    .iter()
                    .map(|rows| {
                        rows.iter()
                            .find(|s| s.rung_id == r.info.id)
                            .and_then(|s| s.mean_w)
                    })
                    .collect();
                if let Some(m) = node_means.filter(|m| m.len() == runs.len() && missing.is_none()) {
                    means.insert(r.info.id, m.iter().sum());
                }
                cycles.insert(r.info.id, Err(NoCycle::Verdict(v)));
            }
        }
    }
    (cycles, means)
}
