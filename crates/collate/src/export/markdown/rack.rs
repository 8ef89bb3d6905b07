//! `report.md` of a rack run: which nodes ran and how their runs ended,
//! the rack's power per rung, and in phase vs staggered across the rack.

use super::cells::{code, o, text};
use crate::rack::tables::{HostRungRow, NodeState, RackStart};
use powerlab_analysis::metric::{self, Cell, RungMetric};
use powerlab_analysis::summary::{PhaseCompare, RungSummary};
use powerlab_samples::error::CollateError;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// "v W [lo, hi]" with the figure's 95 % interval where it has one.
fn with_interval(v: Option<f64>, b: Option<powerlab_analysis::cycle::Bounds>) -> String {
    match b {
        Some(b) if v.is_some() => format!("{} W [{:.0}, {:.0}]", fmt_w(v), b.lo, b.hi),
        _ => format!("{} W", fmt_w(v)),
    }
}

/// A metric's cell in the rack's rung table: watts without decimals, a
/// figure with its interval.
fn rack_cell(r: &RungSummary, m: &dyn RungMetric, how: Cell) -> String {
    let v = metric::value(m, r);
    match how {
        Cell::Figure => with_interval(v.value, v.ci95),
        Cell::Plain | Cell::UnlessAliased => format!("{} W", fmt_w(v.value)),
    }
}

/// Watts without decimals, or a dash for none.
fn fmt_w(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.0}")).unwrap_or_else(|| "–".into())
}

/// The rack's own tables, as the report shows them.
#[derive(Clone, Copy)]
pub struct RackTables<'a> {
    /// Every node and how its run ended.
    pub nodes: &'a [NodeState],
    /// Every host's ranks summed, per rung.
    pub hosts: &'a [HostRungRow],
    /// Every rung's start across the rack.
    pub starts: &'a [RackStart],
    /// Node reports reused (up to date with their raw files).
    pub reused: usize,
    /// Node reports collated again by this collation.
    pub recollated: usize,
    /// The nodes' own power meters, added per rung.
    pub node_power: &'a [crate::rack::meter_sums::RackNodePowerRow],
    /// The excursion envelope of the rack's sum, every rung.
    pub envelope: &'a powerlab_analysis::envelope::Envelope,
    /// The grid metrics of the rack's sum, every rung.
    pub grid: &'a powerlab_analysis::grid::GridMetrics,
    /// The verdict table's rows, judged on the rack's sum.
    pub verdicts: &'a [crate::report::verdicts::SpecRow],
}

/// The rack's answer block: the lines a node's has for the whole rack
/// (limit sum from the nodes' manifests), the nodes' own meters added, and
/// where the per-GPU answers are (each node's report).
fn answer(
    s: &mut String,
    rack: &Path,
    nodes: &[NodeState],
    rungs: &[RungSummary],
    compare: &[PhaseCompare],
    node_power: &[crate::rack::meter_sums::RackNodePowerRow],
) {
    let _ = writeln!(
        s,
        "\n## The answer (GPU draw only: board power of the GPUs, not the nodes' wall power)\n"
    );
    // Every node's enforced limits at its start; unknown if any manifest
    // cannot be read (a partial sum would read as the rack's).
    let limits: Option<f64> = nodes
        .iter()
        .map(|n| {
            powerlab_rundir::Manifest::read(
                &rack
                    .join(powerlab_rundir::RunFile::Nodes.name())
                    .join(&n.node)
                    .join(powerlab_rundir::RunFile::Manifest.name()),
            )
            .ok()
            .map(|m| m.backend.gpus.iter().map(|g| g.power_limit_w).sum::<f64>())
        })
        .sum();
    super::answer::power_lines(
        s,
        &super::answer::Scope {
            name: "rack",
            limit_sum_w: limits.unwrap_or(0.0),
            gpus: nodes.iter().map(|n| n.gpus).sum(),
        },
        rungs,
        compare,
    );
    if let Some(r) = node_power.iter().find(|r| r.non_gpu_w.is_some()) {
        let _ = writeln!(
            s,
            "- **The nodes at their own meters (`{}`, {} of {} nodes):** {} W in `{}`, of which {} W is not GPU board power.",
            code(&r.source),
            r.nodes,
            r.of_nodes,
            fmt_w(r.chassis_mean_w),
            code(&r.rung),
            fmt_w(r.non_gpu_w)
        );
    }
    let _ = writeln!(
        s,
        "- **Per GPU (throttling, limiters), idle baselines, soak, instrument:** in each node's own report (`nodes/<node>/report/report.md`)."
    );
}

/// Writes the rack's `report.md`: the nodes and how their runs ended, rack
/// power per rung with the start skew across the rack, and in phase vs
/// staggered for the whole rack.
///
/// # Errors
///
/// Returns [`CollateError::Io`] when `report.md` cannot be written.
pub fn write_rack_report(
    rack: &Path,
    tables: &RackTables<'_>,
    rungs: &[RungSummary],
    compare: &[PhaseCompare],
    dir: &Path,
) -> Result<PathBuf, CollateError> {
    let t = tables;
    let mut s = String::new();
    write_title(&mut s, rack, t.nodes);
    // The verdict in two plots before any words.
    super::verdict::write_plots(&mut s, rungs, t.envelope, t.grid);
    super::verdict_table::write_table(
        &mut s,
        t.verdicts,
        super::verdict_table::Scale::Node,
        &super::verdict_table::against(t.grid, "rack"),
    );
    answer(&mut s, rack, t.nodes, rungs, compare, t.node_power);
    // The supply and the grid, judged on the rack's sum, as a node's are.
    let loaded: Vec<u32> = rungs
        .iter()
        .filter(|r| r.rung.kind != powerlab_rundir::PhaseKind::Idle)
        .map(|r| r.rung.id)
        .collect();
    let plain_duty: Vec<u32> = rungs
        .iter()
        .filter(|r| r.rung.kind == powerlab_rundir::PhaseKind::Duty && !r.rung.smoothed())
        .map(|r| r.rung.id)
        .collect();
    super::answer_grid::supply_line(&mut s, t.envelope, &loaded);
    super::answer_grid::grid_line(&mut s, t.grid, &plain_duty);
    write_sources(&mut s, t.nodes.len(), t.reused, t.recollated);
    write_nodes(&mut s, t.nodes);
    write_hosts(&mut s, t.hosts);
    write_rack_power(&mut s, rungs, t.starts);
    super::envelope::write_section(&mut s, t.envelope);
    super::grid::write_section(&mut s, t.grid);
    write_in_phase_vs_staggered(&mut s, compare);
    write_notes(&mut s, t.nodes);
    write_node_power(&mut s, t.node_power);
    let path = dir.join(powerlab_rundir::ReportFile::ReportMd.file_name());
    std::fs::write(&path, s).map_err(|e| CollateError::io(&path, e))?;
    Ok(path)
}

/// Appends the rack report's title: complete, with its nodes and GPUs, or
/// `# ⚠` and every node whose run did not complete or whose report is
/// missing.
fn write_title(s: &mut String, rack: &Path, nodes: &[NodeState]) {
    let gpus: usize = nodes.iter().map(|n| n.gpus).sum();
    let bad: Vec<&NodeState> = nodes
        .iter()
        .filter(|n| n.status != "complete" || n.collate_error.is_some())
        .collect();
    let name = rack
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if bad.is_empty() {
        let _ = writeln!(
            s,
            "# {name} — complete rack run: {} nodes, {}",
            nodes.len(),
            super::cells::gpus(gpus)
        );
    } else {
        let list: Vec<String> = bad
            .iter()
            .map(|n| match (&n.collate_error, n.status.as_str()) {
                (Some(e), "complete") => {
                    format!("{}: no report (its collation failed: {e})", n.node)
                }
                _ => format!("{}: {}", n.node, n.status),
            })
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
}

/// Appends where the rack's figures come from: the nodes' reports (reused
/// or collated now) and how rack power is summed.
fn write_sources(s: &mut String, nodes: usize, reused: usize, recollated: usize) {
    let _ = writeln!(
        s,
        "\nBuilt from the reports of {} nodes ({reused} up to date and reused, {recollated} collated now), never from their raw files. Rack power is the sum of the node curves on the grid they share (each the sum of its GPUs' driver-buffered samples); a duty rung's figures are its nodes' composed cycles added at the rung's shared epoch, or, where any node could not fold the rung, that node's verdict and the sum of the nodes' energy-counter means.",
        nodes
    );
}

/// Appends "Nodes": every node, its host, GPUs and how its run ended.
fn write_nodes(s: &mut String, nodes: &[NodeState]) {
    let _ = writeln!(
        s,
        "\n## Nodes\n\n| node | host | GPUs | status | rungs started |\n|---|---|---|---|---|"
    );
    for n in nodes {
        let extra = n
            .collate_error
            .as_ref()
            .map(|e| format!(" (its own collation failed: {e})"))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "| {} | {} | {} | {}{extra} | {} |",
            text(&n.node),
            text(&n.host),
            n.gpus,
            n.status,
            n.rungs_started
        );
    }
}

/// Appends "Hosts with several ranks" (only where a host ran several).
fn write_hosts(s: &mut String, hosts: &[HostRungRow]) {
    let shared: Vec<&HostRungRow> = hosts.iter().filter(|h| h.nodes.contains(' ')).collect();
    if !shared.is_empty() {
        let _ = writeln!(
            s,
            "\n## Hosts with several ranks\n\nEach rank is a node of the rack; a host's mean is the sum of its ranks' means (peaks and spreads of ranks on one host are in the rack curve, not summed here).\n\n| host | ranks | rung | mean |\n|---|---|---|---|"
        );
        for h in shared {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} |",
                text(&h.host),
                text(&h.nodes),
                text(&h.label),
                h.mean_w
                    .map(|w| format!("{w:.0} W"))
                    .unwrap_or_else(|| "–".into())
            );
        }
    }
}

/// Appends "Rack power per rung": each rung's figures with their
/// intervals and its start skew across the rack.
fn write_rack_power(s: &mut String, rungs: &[RungSummary], starts: &[RackStart]) {
    let cols = metric::table(|m| m.rack_table());
    let heads: Vec<&str> = cols.iter().map(|(_, c)| c.header).collect();
    let _ = writeln!(
        s,
        "\n## Rack power per rung\n\n| rung | method | start skew across the rack | {} | coverage |\n|{}",
        heads.join(" | "),
        "---|".repeat(heads.len() + 4)
    );
    for r in rungs {
        let skew = starts
            .iter()
            .find(|x| x.rung_id == r.rung.id)
            .and_then(|x| x.start_skew_us)
            .map(|v| format!("{v:.0} µs"))
            .unwrap_or_else(|| "–".into());
        let mut method = match &r.verdict {
            Some(v) => format!("{}: **{}**", r.method, text(v)),
            None => r.method.to_string(),
        };
        if let Some(i) = &r.incomplete {
            method = format!("**{}** — {method}", text(i));
        }
        match &r.resolution {
            Some(u) if u.unbounded() => {
                method = format!("{method}; **unresolved: {}**", text(&u.to_string()));
            }
            Some(u) => method = format!("{method}; {}", text(&u.to_string())),
            None => {}
        }
        let _ = writeln!(
            s,
            "| {} | {method} | {skew} | {} | {:.0} % |",
            text(&r.rung.label),
            cols.iter()
                .map(|(m, c)| rack_cell(r, *m, c.cell))
                .collect::<Vec<_>>()
                .join(" | "),
            r.coverage * 100.0
        );
    }
}

/// Appends "In phase vs staggered, whole rack" (only where a phase ran
/// both ways).
fn write_in_phase_vs_staggered(s: &mut String, compare: &[PhaseCompare]) {
    if !compare.is_empty() {
        let _ = writeln!(
            s,
            "\n## In phase vs staggered, whole rack\n\n| phase | period | mean in phase | mean staggered | peak in phase | peak staggered | spread in phase | spread staggered |\n|---|---|---|---|---|---|---|---|"
        );
        for c in compare {
            let _ = writeln!(
                s,
                "| {} | {} ms | {} W | {} W | {} W | {} W | {} W | {} W |",
                text(&c.phase),
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
}

/// Appends the notes on start epochs and skew, and the rack's files.
fn write_notes(s: &mut String, nodes: &[NodeState]) {
    let without: Vec<&str> = nodes
        .iter()
        .filter(|n| n.collate_error.is_some())
        .map(|n| n.node.as_str())
        .collect();
    if without.is_empty() {
        let _ = writeln!(
            s,
            "\nEvery rung started at one epoch on every node (checked from each node's events). Start skew is measured on each node's own clock; rack.json gives each node's clock offset against rank 0."
        );
    } else {
        let _ = writeln!(
            s,
            "\nEvery rung started at one epoch on every node whose run directory is here (checked from each node's events). The start skew covers only the {} of {} nodes with a report: {} {} not in it. Start skew is measured on each node's own clock; rack.json gives each node's clock offset against rank 0.",
            nodes.len() - without.len(),
            nodes.len(),
            without.join(", "),
            if without.len() == 1 { "is" } else { "are" }
        );
    }
    let _ = writeln!(
        s,
        "\nFiles: `rack_curve.{{csv,parquet}}`, `rack_cycles.parquet` (the rack's composed cycle per duty rung), `summary.{{csv,parquet}}`, `in_phase_vs_staggered.{{csv,parquet}}`, `nodes.{{csv,parquet}}` (each node's own figures per rung), `hosts.csv` (a host's ranks summed), `starts.csv`, `node_status.csv`; each node's full report is in `nodes/<node>/report/`."
    );
}

/// Appends "Node power, whole rack" (only where nodes have their own
/// meters).
fn write_node_power(s: &mut String, node_power: &[crate::rack::meter_sums::RackNodePowerRow]) {
    if !node_power.is_empty() {
        let _ = writeln!(
            s,
            "\n## Node power, whole rack (each node's own meters added; GPU sum over the same spans)\n\n| rung | source | nodes | chassis mean W | GPU sum W | non-GPU W | non-GPU share | least coverage | verdict |\n|---|---|---|---|---|---|---|---|---|"
        );
        for r in node_power {
            let _ = writeln!(
                s,
                "| {} | {} | {} of {} | {} | {} | {} | {} | {:.0} % | {} |",
                text(&r.rung),
                text(&r.source),
                r.nodes,
                r.of_nodes,
                o(r.chassis_mean_w),
                o(r.gpu_sum_w),
                o(r.non_gpu_w),
                r.non_gpu_share
                    .map(|x| format!("{:.1} %", x * 100.0))
                    .unwrap_or_else(|| "—".into()),
                r.min_coverage * 100.0,
                r.verdict
            );
        }
    }
}
