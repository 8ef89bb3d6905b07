//! CSV outputs: the summary tables (`summary.csv`, `repeats.csv`,
//! `in_phase_vs_staggered.csv`), the node curve (`node_curve.csv`), the
//! NCCL table (`nccl.csv`), the sensor tables (`sensor_rungs.csv`,
//! `sensor_periods.csv`, `spectrum.csv`), the envelope (`envelope.csv`),
//! the grid metrics (`grid.csv`), the workload rungs (`workload.csv`), the
//! lifecycle edges (`lifecycle_edges.csv`) and any frame or row set the
//! rack writes.
//! Rows of a serializable type are written with a header named by its
//! fields; frames with polars' writer; the spectrum table as fixed-
//! precision records under [`SPECTRUM_HEADER`].

use crate::report::{NodeParts, RackParts, Report, Scope};
use polars::prelude::*;
use powerlab_analysis::curve::{CURVE_INSTRUMENTS, NodeCurve};
use powerlab_analysis::envelope::{Envelope, Verdict};
use powerlab_analysis::grid::GridMetrics;
use powerlab_analysis::nccl::NcclRow;
use powerlab_analysis::sensor::verdict::SensorReport;
use powerlab_analysis::summary::{PhaseCompare, RepeatStats, RungSummary};
use powerlab_rundir::ReportFile;
use powerlab_samples::error::CollateError;
use powerlab_samples::stats::r3;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// A `csv` crate error as an I/O error on `path`.
fn csv_error(path: &Path) -> impl Fn(csv::Error) -> CollateError + '_ {
    move |e| CollateError::io(path, std::io::Error::other(e))
}

/// Writes `rows` to `path`, one line each, with a header of the row type's
/// field names (nothing at all for no rows).
///
/// # Errors
///
/// Returns [`CollateError::Io`] naming `path` when the file cannot be
/// created, a row cannot be serialized or written, or the flush fails.
pub fn write_rows<T: Serialize>(rows: &[T], path: &Path) -> Result<(), CollateError> {
    let mut w = csv::Writer::from_path(path).map_err(csv_error(path))?;
    for r in rows {
        w.serialize(r).map_err(csv_error(path))?;
    }
    w.flush().map_err(|e| CollateError::io(path, e))
}

/// Writes a frame to `path` with polars' CSV writer (a header of its column
/// names).
///
/// # Errors
///
/// Returns [`CollateError::Io`] when `path` cannot be created, and
/// [`CollateError::Polars`] when polars' writer fails.
pub fn write_frame(df: &mut DataFrame, path: &Path) -> Result<(), CollateError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let step = format!("writing {name}");
    let file = std::fs::File::create(path).map_err(|e| CollateError::io(path, e))?;
    CsvWriter::new(std::io::BufWriter::new(file))
        .finish(df)
        .map_err(CollateError::polars(&step))
}

/// Writes `summary.csv`, `repeats.csv` and `in_phase_vs_staggered.csv`.
///
/// # Errors
///
/// Returns [`CollateError::Io`] naming the file when one of the three
/// cannot be created or written (see [`write_rows`]).
pub fn write_summary_tables(
    rungs: &[RungSummary],
    repeats: &[RepeatStats],
    compare: &[PhaseCompare],
    dir: &Path,
) -> Result<Vec<PathBuf>, CollateError> {
    let paths = vec![
        dir.join(powerlab_rundir::ReportFile::SummaryCsv.file_name()),
        dir.join(powerlab_rundir::ReportFile::RepeatsCsv.file_name()),
        dir.join(powerlab_rundir::ReportFile::InPhaseVsStaggeredCsv.file_name()),
    ];
    let rows: Vec<_> = rungs.iter().map(RungSummary::row).collect();
    powerlab_rundir::summary::write_summary(&rows, &paths[0])?;
    write_rows(repeats, &paths[1])?;
    write_rows(compare, &paths[2])?;
    Ok(paths)
}

/// Writes `node_curve.csv`: time and the node sums present, rounded to
/// three decimals.
///
/// # Errors
///
/// Returns [`CollateError::Polars`] when selecting and rounding the curve's
/// columns or writing the frame fails, and [`CollateError::Io`] when
/// `node_curve.csv` cannot be created.
pub fn write_node_curve(curve: &NodeCurve, dir: &Path) -> Result<PathBuf, CollateError> {
    let path = dir.join(powerlab_rundir::ReportFile::NodeCurveCsv.file_name());
    let mut names = vec!["t_ns".to_string()];
    names.extend(
        CURVE_INSTRUMENTS
            .iter()
            .map(|(_, n)| n.to_string())
            .filter(|n| curve.df.column(n).is_ok()),
    );
    let mut df = curve
        .df
        .select(names.iter().map(String::as_str))
        .map_err(CollateError::polars("selecting the node curve"))?;
    for n in names.iter().filter(|n| *n != "t_ns") {
        df.try_apply(n.as_str(), |s| s.round(3, RoundMode::HalfToEven))
            .map_err(CollateError::polars("rounding the node curve"))?;
    }
    write_frame(&mut df, &path)?;
    Ok(path)
}

/// Writes `nccl.csv` (a run without NCCL rows writes nothing).
///
/// # Errors
///
/// Returns [`CollateError::Io`] when there are rows and `nccl.csv` cannot
/// be created or written.
pub fn write_nccl(rows: &[NcclRow], dir: &Path) -> Result<Vec<PathBuf>, CollateError> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let path = dir.join(powerlab_rundir::ReportFile::NcclCsv.file_name());
    write_rows(rows, &path)?;
    Ok(vec![path])
}

/// The columns of `spectrum.csv`, one row per rung: the node curve's
/// dominant frequency (DC excluded), the shares of its variance in 0.1–2 Hz
/// and in 2–20 Hz, and the highest frequency its grid resolves.
pub const SPECTRUM_HEADER: [&str; 6] = [
    "rung_id",
    "label",
    "dominant_hz",
    "share_0_1_to_2_hz",
    "share_2_to_20_hz",
    "nyquist_hz",
];

/// Writes `sensor_rungs.csv`, `sensor_periods.csv` and `spectrum.csv`,
/// each only when it has rows.
///
/// # Errors
///
/// Returns [`CollateError::Io`] naming the file when one of the tables
/// cannot be created, serialized or written.
pub fn write_sensor_tables(s: &SensorReport, dir: &Path) -> Result<Vec<PathBuf>, CollateError> {
    let mut files = Vec::new();
    if !s.rows.is_empty() {
        let p = dir.join(powerlab_rundir::ReportFile::SensorRungsCsv.file_name());
        write_rows(&s.rows, &p)?;
        files.push(p);
    }
    if !s.answers.is_empty() {
        let p = dir.join(powerlab_rundir::ReportFile::SensorPeriodsCsv.file_name());
        write_rows(&s.answers, &p)?;
        files.push(p);
    }
    if !s.spectra.is_empty() {
        let p = dir.join(powerlab_rundir::ReportFile::SpectrumCsv.file_name());
        let mut w = csv::Writer::from_path(&p).map_err(csv_error(&p))?;
        w.write_record(SPECTRUM_HEADER).map_err(csv_error(&p))?;
        for (id, label, sp) in &s.spectra {
            w.write_record([
                id.to_string(),
                label.to_string(),
                format!("{:.4}", sp.dominant_hz),
                format!("{:.4}", sp.share_0_1_to_2_hz),
                format!("{:.4}", sp.share_2_to_20_hz),
                format!("{:.1}", sp.nyquist_hz),
            ])
            .map_err(csv_error(&p))?;
        }
        w.flush().map_err(|e| CollateError::io(&p, e))?;
        files.push(p);
    }
    Ok(files)
}

/// One row of `envelope.csv`: one rung and window length.
#[derive(Serialize)]
struct EnvelopeRow<'a> {
    rung_id: u32,
    label: &'a str,
    window_ms: f64,
    max_mean_w: Option<f64>,
    source: &'static str,
    unsupported_reason: Option<String>,
    limit_w: Option<f64>,
    margin_w: Option<f64>,
    verdict: Option<&'static str>,
}

/// Writes `envelope.csv`: one row per rung and window length, its figure
/// (three decimals) or why it has none, and the supply's limit, margin and
/// verdict where declared.
///
/// # Errors
///
/// Returns [`CollateError::Io`] when `envelope.csv` cannot be created or
/// written.
pub fn write_envelope(e: &Envelope, dir: &Path) -> Result<PathBuf, CollateError> {
    let rows: Vec<EnvelopeRow<'_>> = e
        .rungs
        .iter()
        .flat_map(|r| {
            r.points.iter().map(|p| EnvelopeRow {
                rung_id: r.rung_id,
                label: &r.label,
                window_ms: p.window_ms,
                max_mean_w: p.max_mean_w.map(r3),
                source: r.source.name(),
                unsupported_reason: p.unsupported.map(|u| u.to_string()),
                limit_w: p.limit_w.map(r3),
                margin_w: p.margin_w.map(r3),
                verdict: p.verdict().map(Verdict::name),
            })
        })
        .collect();
    table(&rows, dir, ReportFile::EnvelopeCsv)
}

/// One row of `grid.csv`: one rung and metric.
#[derive(Serialize)]
struct GridRow<'a> {
    rung_id: u32,
    label: &'a str,
    metric: &'static str,
    value: Option<f64>,
    unit: &'static str,
    plus_minus: Option<f64>,
    lower_bound: bool,
    upper: Option<f64>,
    resolution_ms: Option<f64>,
    highest_hz: Option<f64>,
    limit: Option<f64>,
    verdict: &'static str,
    margin: Option<f64>,
    source: &'static str,
    reason: Option<String>,
}

/// Writes `grid.csv`: one row per rung and grid metric, its figure (three
/// decimals) with its ±, whether it is a lower bound, the upper end of an
/// interval (`value` its lower end), the resolution it
/// rests on, or why it has none; the declared limit, verdict and margin.
///
/// # Errors
///
/// Returns [`CollateError::Io`] when `grid.csv` cannot be created or
/// written.
pub fn write_grid(g: &GridMetrics, dir: &Path) -> Result<PathBuf, CollateError> {
    let rows: Vec<GridRow<'_>> = g
        .rungs
        .iter()
        .flat_map(|r| {
            r.figures.iter().map(|f| GridRow {
                rung_id: r.rung_id,
                label: &r.label,
                metric: f.metric.name(),
                value: f.value.map(r3),
                unit: f.metric.unit(),
                plus_minus: f.plus_minus.map(r3),
                lower_bound: f.lower_bound,
                upper: f.upper.map(r3),
                resolution_ms: f.resolution_ms.map(r3),
                highest_hz: f.highest_hz.map(r3),
                limit: f.limit.map(r3),
                verdict: f.verdict.name(),
                margin: f.margin.map(r3),
                source: r.source.name(),
                reason: f.withheld.map(|w| w.to_string()),
            })
        })
        .collect();
    table(&rows, dir, ReportFile::GridCsv)
}

/// The CSV tables of a report.
pub struct Csv;

impl super::Exporter for Csv {
    fn export(&self, report: &Report, dir: &Path) -> Result<Vec<PathBuf>, CollateError> {
        let mut files = Vec::new();
        if let Scope::Node(_) = &report.scope {
            files.push(write_node_curve(&report.curve, dir)?);
        }
        files.extend(write_summary_tables(
            &report.rungs,
            &report.repeats,
            &report.compare,
            dir,
        )?);
        files.push(write_envelope(&report.envelope, dir)?);
        files.push(write_grid(&report.grid, dir)?);
        match &report.scope {
            Scope::Node(n) => files.extend(node_tables(n, dir)?),
            Scope::Rack(r) => files.extend(rack_tables(r, dir)?),
        }
        Ok(files)
    }
}

/// Writes `rows` to `dir/<file>` and names it.
fn table<T: Serialize>(rows: &[T], dir: &Path, file: ReportFile) -> Result<PathBuf, CollateError> {
    let path = dir.join(file.file_name());
    write_rows(rows, &path)?;
    Ok(path)
}

/// A node's own tables: NCCL, the sensor, every GPU, the soak and the
/// node's own meters (those the run has).
fn node_tables(n: &NodeParts, dir: &Path) -> Result<Vec<PathBuf>, CollateError> {
    let mut files = write_nccl(&n.nccl, dir)?;
    files.extend(write_sensor_tables(&n.sensor, dir)?);
    files.push(table(&n.per_gpu, dir, ReportFile::PerGpuCsv)?);
    if !n.soak.rows.is_empty() {
        files.push(table(&n.soak.rows, dir, ReportFile::SoakCsv)?);
    }
    if !n.mitigation.rows.is_empty() {
        files.push(table(&n.mitigation.rows, dir, ReportFile::MitigationCsv)?);
        files.push(table(
            &n.mitigation.gpus,
            dir,
            ReportFile::MitigationGpusCsv,
        )?);
    }
    if !n.workload.rows.is_empty() {
        files.push(table(&n.workload.rows, dir, ReportFile::WorkloadCsv)?);
    }
    // Only a run that recorded a process's lifecycle (every report made
    // before lifecycle rungs stays as it was).
    if n.lifecycle_moments > 0 {
        files.push(table(
            &powerlab_analysis::lifecycle::rows::rows(&n.lifecycle),
            dir,
            ReportFile::LifecycleEdgesCsv,
        )?);
    }
    if !n.node_power.facts.is_empty() {
        files.push(table(
            &n.node_power.facts,
            dir,
            ReportFile::NodePowerSourcesCsv,
        )?);
        files.push(table(&n.node_power.rungs, dir, ReportFile::NodePowerCsv)?);
    }
    Ok(files)
}

/// A rack's own tables: the rack curve, nodes, hosts, starts, the nodes'
/// states and their own meters added.
fn rack_tables(r: &RackParts, dir: &Path) -> Result<Vec<PathBuf>, CollateError> {
    let curve_csv = dir.join(ReportFile::RackCurveCsv.file_name());
    write_frame(&mut r.curve_table.clone(), &curve_csv)?;
    let mut files = vec![
        curve_csv,
        table(&r.node_rows, dir, ReportFile::NodesCsv)?,
        table(&r.hosts, dir, ReportFile::HostsCsv)?,
        table(&r.starts, dir, ReportFile::StartsCsv)?,
        table(&r.nodes, dir, ReportFile::NodeStatusCsv)?,
    ];
    if !r.node_power.is_empty() {
        files.push(table(&r.node_power, dir, ReportFile::NodePowerCsv)?);
    }
    Ok(files)
}
