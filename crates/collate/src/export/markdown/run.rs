//! `report.md` of a node run: the qualifications of every number on its
//! first line, the verdict plots, the answer, the run's facts, the rung table, the workload rungs, edges, repeats, in phase
//! vs staggered, what the instruments can see, NCCL, faults, definitions
//! and the plots.

use super::cells::{code, text};
use super::sensor::write_sensor_section;
use powerlab_analysis::summary::{PhaseCompare, RungSummary};
use powerlab_core::units::{ns_to_ms, ns_to_s};
use powerlab_rundir::PlotFile;
use powerlab_rundir::{Manifest, PhaseKind, RunEvent};
use powerlab_samples::error::CollateError;
use std::fmt::Write;
use std::path::{Path, PathBuf};

pub use super::tables::NodeReport;

/// Writes `report/report.md`.
///
/// # Errors
///
/// Returns [`CollateError::Io`] when `report.md` cannot be written.
pub fn write_report(t: &NodeReport<'_>, dir: &Path) -> Result<PathBuf, CollateError> {
    let run = &t.report.run;
    let raw_rows = t.node.raw_rows;
    let mut s = String::new();
    // The first line states anything that must qualify every number below.
    super::headline::write_title(&mut s, run, t);
    // The verdict in two plots before any words.
    super::verdict::write_plots(&mut s, &t.report.rungs, &t.report.envelope, &t.report.grid);
    // Then the verdicts, one row per spec item, before any sentence.
    super::verdict_table::write_table(
        &mut s,
        &t.report.verdicts,
        super::verdict_table::Scale::Node,
        &super::verdict_table::against(&t.report.grid, "node"),
    );
    s.push_str(&super::answer::answer_block(t));
    write_facts(&mut s, &run.manifest, raw_rows);
    write_gpus(&mut s, &run.manifest);
    super::rungs::write_rungs(&mut s, &t.report.rungs);
    let not_its_own = super::headline::sensor_note(run, t);
    s.push_str(&not_its_own);
    super::workload::write_section(&mut s, &t.node.workload.rows);
    if !t.node.workload.rows.is_empty() {
        s.push_str(&not_its_own);
    }
    if let Some((edges, refused)) = t.lifecycle() {
        super::lifecycle::write_section(&mut s, edges, refused);
    }
    super::envelope::write_section(&mut s, &t.report.envelope);
    super::grid::write_section(&mut s, &t.report.grid);
    super::mitigation::write_section(&mut s, &t.node.mitigation);
    super::rungs::write_edges(&mut s, &run.campaign.limits, &t.report.rungs);
    super::rungs::write_repeats(&mut s, &t.report.repeats);
    super::rungs::write_in_phase_vs_staggered(&mut s, &t.report.compare);
    write_sensor_section(&mut s, &t.node.sensor);
    super::nccl_sections::write_collectives(&mut s, &t.node.nccl);
    super::nccl_sections::write_fabric_power(&mut s, &t.node.fabric);
    super::baseline::write_section(&mut s, &t.report.rungs, &t.node.per_gpu);
    super::soak::write_section(&mut s, &t.node.soak.rows);
    super::per_gpu::write_section(&mut s, &t.node.per_gpu);
    super::meter_section::write_section(&mut s, &t.node.node_power.facts, &t.node.node_power.rungs);
    write_faults(&mut s, &run.events);
    write_definitions(&mut s, run.grid_ns);
    write_plot_links(&mut s, &t.report.rungs, &t.report.compare);
    let path = dir.join(powerlab_rundir::ReportFile::ReportMd.file_name());
    std::fs::write(&path, s).map_err(|e| CollateError::io(&path, e))?;
    Ok(path)
}

/// Appends the run's facts: start, duration, backend, NCCL, tool, clock
/// and the raw rows read.
fn write_facts(s: &mut String, m: &Manifest, raw_rows: usize) {
    let _ = writeln!(s, "\n| | |\n|---|---|");
    let _ = writeln!(s, "| started | {} |", m.started_utc);
    if let Some(end) = m.ended_ns {
        let _ = writeln!(s, "| duration | {:.1} s |", ns_to_s(end - m.started_ns));
    }
    let _ = writeln!(
        s,
        "| backend | {} ({}) |",
        m.backend.backend, m.backend.driver
    );
    let _ = writeln!(
        s,
        "| NCCL | {} |",
        match &m.backend.nccl {
            powerlab_core::Capability::Present(v) => v.clone(),
            powerlab_core::Capability::Absent(e) => format!("absent: {e}"),
        }
    );
    let _ = writeln!(
        s,
        "| tool | {} {} ({}) |",
        m.tool.name, m.tool.version, m.tool.git_rev
    );
    let _ = writeln!(s, "| clock | {} |", m.clock);
    let _ = writeln!(s, "| raw rows | {raw_rows} |");
}

/// Appends "GPUs": key, UUID, name, enforced limit and power smoothing of
/// every GPU.
fn write_gpus(s: &mut String, m: &Manifest) {
    let _ = writeln!(
        s,
        "\n## GPUs\n\n| key | UUID | name | enforced limit | power smoothing |\n|---|---|---|---|---|"
    );
    for g in &m.backend.gpus {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.0} W | power smoothing: {} |",
            text(&g.key),
            text(&g.uuid),
            text(&g.name),
            g.power_limit_w,
            text(&g.power_smoothing.describe())
        );
    }
}

/// Appends "Faults and interlocks" (only where the event log has any).
fn write_faults(s: &mut String, events: &[RunEvent]) {
    let faults: Vec<&RunEvent> = events
        .iter()
        .filter(|e| matches!(e, RunEvent::Fault { .. } | RunEvent::Interlock { .. }))
        .collect();
    if !faults.is_empty() {
        let _ = writeln!(s, "\n## Faults and interlocks\n");
        for f in faults {
            match f {
                RunEvent::Fault {
                    ts_ns,
                    gpu,
                    kind,
                    detail,
                    fatal,
                } => {
                    let _ = writeln!(
                        s,
                        "- {} {} `{}` on {}: {}",
                        powerlab_rundir::layout::utc_rfc3339(*ts_ns),
                        if *fatal { "FATAL" } else { "warning" },
                        code(kind),
                        text(gpu.as_deref().unwrap_or("node")),
                        text(detail)
                    );
                }
                RunEvent::Interlock {
                    ts_ns,
                    limit,
                    reading,
                } => {
                    let _ = writeln!(
                        s,
                        "- {} INTERLOCK `{}`: {}",
                        powerlab_rundir::layout::utc_rfc3339(*ts_ns),
                        code(limit),
                        text(reading)
                    );
                }
                _ => {}
            }
        }
    }
}

/// Appends "Definitions": how every figure is made (`grid_ns`: the
/// sample-and-hold grid).
fn write_definitions(s: &mut String, grid_ns: i64) {
    let _ = writeln!(s, "\n## Definitions\n");
    let _ = writeln!(
        s,
        "- Node power of a duty rung (`composed cycle`): each GPU's buffered samples, each placed at the middle of its averaging window, folded on that GPU's recorded rising edges into one cycle; its harmonics divided by the window's attenuation (up to the harmonic the window still passes at ≥ 60 %); the GPUs' cycles shifted to their measured offsets and summed; figures from that cycle at ≤ 0.5 ms resolution. Every figure is GPU board power only, not the node's wall power."
    );
    let _ = writeln!(
        s,
        "- Node power of other rungs, and the NVML sample-and-hold columns: per-GPU readings aligned on a {} ms grid (latest reading at or before each point) and summed; a point where any GPU has no reading is left out (coverage column in summary.csv).",
        ns_to_ms(grid_ns)
    );
    let _ = writeln!(
        s,
        "- spread = p99 − p1; swing = p90 − p10; peak = maximum; energy = mean × measured window (ramp excluded)."
    );
    let _ = writeln!(
        s,
        "- start error: achieved − intended start of each GPU, where the intended start includes its deliberate stagger; skew = max − min of those errors."
    );
}

/// Appends "Plots": the spread and in-phase plots where they were drawn,
/// and every rung's.
fn write_plot_links(s: &mut String, rungs: &[RungSummary], compare: &[PhaseCompare]) {
    let _ = writeln!(s, "\n## Plots\n");
    if rungs.iter().any(|r| r.rung.kind == PhaseKind::Duty) {
        let _ = writeln!(
            s,
            "![node spread vs duty period]({})\n",
            PlotFile::SpreadVsPeriod.svg_link()
        );
    }
    if !compare.is_empty() {
        let _ = writeln!(
            s,
            "![in phase vs staggered]({})\n",
            PlotFile::InPhaseVsStaggered.svg_link()
        );
    }
    for r in rungs {
        let _ = writeln!(
            s,
            "![rung {} — {}]({})\n",
            r.rung.id,
            text(&r.rung.label),
            PlotFile::Rung(r.rung.id).svg_link()
        );
    }
}
