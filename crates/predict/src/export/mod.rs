//! A prediction's files, one writer per format: [`parquet`] (the headline
//! waveform), [`csv`] (the spectrum, the scenarios, the envelope and grid
//! metrics), [`plots`] (the waveform and the envelope against the supply),
//! [`markdown`] (`report.md`: the answer first, then the tables) and
//! `report.html` (the same page, the plots inlined). They format what a
//! [`Prediction`] holds and compute nothing new.

pub mod comtrade;
pub mod csv;
pub mod grid_files;
pub mod grid_section;
pub mod markdown;
pub mod modes;
pub mod parquet;
pub mod plots;
pub mod study;
pub mod study_csv;
pub mod verdicts;

mod answer;
mod sections;
#[cfg(test)]
mod tests;
mod units;

use super::Prediction;
use powerlab_rundir::ReportFile;
use powerlab_samples::error::CollateError;
use std::path::{Path, PathBuf};

/// Writes every file of `p` into `dir` (created, with `plots/`): the
/// waveform's Parquet, the CSV tables, the plots, `report.md` and
/// `report.html`; returns their paths.
///
/// # Errors
///
/// [`CollateError::Io`] when a folder or file cannot be written;
/// [`CollateError::Polars`] or [`CollateError::Plot`] when the table or a
/// plot cannot be made.
pub fn write_prediction(p: &Prediction, dir: &Path) -> Result<Vec<PathBuf>, CollateError> {
    // An earlier prediction's report and study go first: one that fails
    // half-way must not leave them beside its own new files.
    for old in [
        dir.join(ReportFile::ReportMd.file_name()),
        dir.join(study::STUDY_DIR),
    ] {
        let gone = if old.is_dir() {
            std::fs::remove_dir_all(&old)
        } else {
            std::fs::remove_file(&old)
        };
        match gone {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(CollateError::io(&old, e));
            }
            _ => {}
        }
    }
    let plots_dir = dir.join(ReportFile::Plots.file_name());
    std::fs::create_dir_all(&plots_dir).map_err(|e| CollateError::io(&plots_dir, e))?;
    let mut files = vec![parquet::write_waveform(p, dir)?];
    files.extend(csv::write_tables(p, dir)?);
    files.extend(modes::write_modes(p, dir)?);
    files.extend(study::write_study(p, dir)?);
    files.extend(plots::write_plots(p, &plots_dir)?);
    files.extend(grid_files::write_grid(p, dir, &plots_dir)?);
    files.push(markdown::write_report(p, dir)?);
    files.push(powerlab_collate::export::html::write_html(dir, &p.title)?);
    Ok(files)
}
