//! The collator: turns a run directory's raw samples into node power curves,
//! per-rung summaries, statistics across repeats, the in-phase vs staggered
//! comparison, a Markdown report and plots — from the run directory alone,
//! so `powerlab collate` regenerates exactly what `powerlab run` wrote.
//!
//! Node curves sum per-GPU driver-buffered and instant readings on a common
//! time grid (polars as-of joins). The 1 s average field is never summed
//! into a result: it is carried as a labelled comparison column, because
//! summing it is what flattened every swing in the devlog's rehearsal.

pub mod curve;
pub mod edges;
pub mod error;
pub mod load;
pub mod nccl;
pub mod plots;
pub mod rack;
pub mod report;
pub mod sensor;
pub mod stats;
pub mod summary;

pub use error::CollateError;

use powerlab_rundir::RunDir;
use std::path::{Path, PathBuf};

/// What `collate` produced.
#[derive(Debug, Clone)]
pub struct CollateOutput {
    /// `report/` directory.
    pub report_dir: PathBuf,
    /// Per-rung summaries.
    pub rungs: Vec<summary::RungSummary>,
    /// Across-repeat statistics.
    pub repeats: Vec<summary::RepeatStats>,
    /// In-phase vs staggered rows.
    pub compare: Vec<summary::PhaseCompare>,
    /// The sensor model and per-period verdicts.
    pub sensor: sensor::SensorReport,
    /// NCCL bandwidth rows (empty without an NCCL phase).
    pub nccl: Vec<nccl::NcclRow>,
    /// Raw rows read.
    pub raw_rows: usize,
    /// Files written.
    pub files: Vec<PathBuf>,
}

/// Regenerates everything under `report/` from the run directory.
pub fn collate(path: &Path) -> Result<CollateOutput, CollateError> {
    let dir = RunDir::open(path)?;
    let run = load::load_run(&dir)?;
    let report_dir = dir.report_dir();
    if report_dir.exists() {
        std::fs::remove_dir_all(&report_dir).map_err(|e| CollateError::io(&report_dir, e))?;
    }
    std::fs::create_dir_all(report_dir.join("plots")).map_err(|e| CollateError::io(&report_dir, e))?;

    // Step times at POWERLAB_LOG=info, for the collation benchmark.
    let t0 = std::time::Instant::now();
    let step = |what: &str| tracing::info!("collate: {what} done at {:.2} s", t0.elapsed().as_secs_f64());
    let raw = load::read_power(&dir, load::sample_bounds(&run))?;
    step("reading raw samples");
    let raw_rows = raw.total_rows;
    let curve = curve::node_curve(&raw.power, &run)?;
    step("node curve");
    let edge_stats = edges::edge_stats(&dir, &run)?;
    let mut rungs = summary::summarize(&curve, &run, &edge_stats)?;
    let visible = rungs.iter().map(|r| (r.rung_id, r.swing_w)).collect();
    step("rung summaries");
    let sensor = sensor::analyse(&dir, &run, &raw.power, &curve, &visible)?;
    step("sensor analysis");
    for r in &mut rungs {
        if let Some(row) = sensor.rows.iter().find(|x| x.rung_id == r.rung_id && x.instrument == r.instrument) {
            if row.verdict == "aliased" {
                r.swing_w = None;
            }
            r.instrument_verdict = Some(row.verdict.clone());
        }
    }
    let repeats = summary::repeat_stats(&rungs);
    let compare = summary::compare_modes(&repeats);
    let nccl_rows = nccl::nccl_rows(&dir, &run)?;
    let fabric = nccl::fabric_power(&rungs);

    let mut files = Vec::new();
    files.push(curve::write_curve(&curve, &report_dir)?);
    files.extend(summary::write_tables(&rungs, &repeats, &compare, &report_dir)?);
    files.extend(nccl::write_nccl(&nccl_rows, &report_dir)?);
    files.extend(sensor::write_sensor(&sensor, &report_dir)?);
    files.extend(plots::write_plots(&curve, &run, &rungs, &repeats, &compare, &report_dir.join("plots"))?);
    files.extend(plots::write_nccl_plot(&nccl_rows, &report_dir.join("plots"))?);
    files.extend(plots::write_sensor_plot(&sensor.answers, &report_dir.join("plots"))?);
    let tables = report::Tables { rungs: &rungs, repeats: &repeats, compare: &compare, nccl: &nccl_rows, fabric: &fabric, sensor: &sensor };
    files.push(report::write_report(&run, &tables, raw_rows, &report_dir)?);
    Ok(CollateOutput { report_dir, rungs, repeats, compare, sensor, nccl: nccl_rows, raw_rows, files })
}
