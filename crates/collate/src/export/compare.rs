//! The outputs of `powerlab compare`: `compare.csv` (one row per figure
//! compared, node rungs then GPUs), `compare.json` (the whole comparison)
//! and `compare.md` ([`super::markdown::compare`]).

use crate::compare::rungs::FigureDelta;
use crate::compare::{CompareError, Comparison};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// One figure compared, as a row of `compare.csv`.
#[derive(Debug, Serialize)]
pub struct CompareRow<'a> {
    /// `node` or `gpu`.
    pub scope: &'a str,
    /// The rung label.
    pub rung: &'a str,
    /// A's GPU key (GPU rows).
    pub gpu_a: &'a str,
    /// A's GPU UUID.
    pub uuid_a: &'a str,
    /// B's GPU key.
    pub gpu_b: &'a str,
    /// B's GPU UUID.
    pub uuid_b: &'a str,
    /// `mean`, `peak`, `spread` or `swing`.
    pub figure: &'a str,
    /// A's repeats with a value.
    pub n_a: usize,
    /// B's repeats with a value.
    pub n_b: usize,
    /// A, W (mean over repeats).
    pub a_w: Option<f64>,
    /// B, W.
    pub b_w: Option<f64>,
    /// B − A, W.
    pub delta_w: Option<f64>,
    /// (B − A) / A, %.
    pub delta_pct: Option<f64>,
    /// 95 % Welch half-width, W.
    pub ci95_w: Option<f64>,
    /// The interval in words.
    pub interval: &'a str,
    /// Judged against the threshold.
    pub judged: bool,
    /// Beyond the threshold (and interval).
    pub regression: bool,
    /// A repeat of the rung, in either run, was collated from incomplete raw data.
    pub incomplete_data: bool,
    /// What qualifies the rung's figures, `; `-separated.
    pub notes: String,
}

/// The rows of `compare.csv`.
pub fn rows(c: &Comparison) -> Vec<CompareRow<'_>> {
    let mut out = Vec::new();
    for r in &c.rungs {
        for f in &r.figures {
            out.push(make(
                "node",
                &r.label,
                None,
                f,
                r.incomplete_data,
                r.notes.join("; "),
            ));
        }
    }
    for g in &c.gpus {
        for f in &g.figures {
            let incomplete = c
                .rungs
                .iter()
                .any(|r| r.label == g.label && r.incomplete_data);
            out.push(make(
                "gpu",
                &g.label,
                Some(&g.pair),
                f,
                incomplete,
                String::new(),
            ));
        }
    }
    out
}

fn make<'a>(
    scope: &'a str,
    rung: &'a str,
    pair: Option<&'a crate::compare::gpus::GpuPair>,
    f: &'a FigureDelta,
    incomplete_data: bool,
    notes: String,
) -> CompareRow<'a> {
    let d = &f.delta;
    CompareRow {
        scope,
        rung,
        gpu_a: pair.map_or("", |p| p.gpu_a.as_str()),
        uuid_a: pair.map_or("", |p| p.uuid_a.as_str()),
        gpu_b: pair.map_or("", |p| p.gpu_b.as_str()),
        uuid_b: pair.map_or("", |p| p.uuid_b.as_str()),
        figure: &f.figure,
        n_a: d.n_a,
        n_b: d.n_b,
        a_w: d.a_w,
        b_w: d.b_w,
        delta_w: d.delta_w,
        delta_pct: d.delta_pct,
        ci95_w: d.ci95_w,
        interval: &d.interval,
        judged: f.judged,
        regression: f.regression,
        incomplete_data,
        notes,
    }
}

/// The comparison as pretty JSON, with a final newline.
pub fn json(c: &Comparison) -> String {
    serde_json::to_string_pretty(c).unwrap_or_default() + "\n"
}

/// Writes `compare.csv`, `compare.json` and `compare.md` into `dir`
/// (created if missing).
///
/// # Errors
///
/// Returns [`CompareError::Io`] when `dir` cannot be created or a file
/// cannot be written.
pub fn write_all(c: &Comparison, dir: &Path) -> Result<Vec<PathBuf>, CompareError> {
    let io = |path: &Path, source| CompareError::Io {
        path: path.to_path_buf(),
        source,
    };
    crate::folder::write_files(dir, |staging| write_into(c, staging), io)
}

/// The three files, into `dir`.
fn write_into(c: &Comparison, dir: &Path) -> Result<Vec<PathBuf>, CompareError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| CompareError::Io { path, source }
    };
    let csv_path = dir.join(powerlab_rundir::CompareFile::Csv.file_name());
    crate::export::csv::write_rows(&rows(c), &csv_path).map_err(|e| CompareError::Io {
        path: csv_path.clone(),
        source: std::io::Error::other(e.to_string()),
    })?;
    let json_path = dir.join(powerlab_rundir::CompareFile::Json.file_name());
    std::fs::write(&json_path, json(c)).map_err(io(&json_path))?;
    let md_path = dir.join(powerlab_rundir::CompareFile::Md.file_name());
    std::fs::write(&md_path, super::markdown::compare::markdown(c)).map_err(io(&md_path))?;
    Ok(vec![csv_path, json_path, md_path])
}
