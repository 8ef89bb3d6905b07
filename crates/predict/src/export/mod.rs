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

/// Writes every file of `p` into `dir` (with `plots/`): the waveform's
/// Parquet, the CSV tables, the plots, `report.md` and `report.html`;
/// returns their paths. The folder is written whole or not at all
/// ([`powerlab_collate::folder::write_whole`]): a temporary sibling takes
/// its name once complete, so a prediction that fails half-way leaves the
/// previous one as it was. A folder that holds anything but an earlier
/// prediction is refused, never replaced.
///
/// # Errors
///
/// [`CollateError::Io`] when a folder or file cannot be written, or `dir`
/// holds files that are not a prediction's;
/// [`CollateError::Polars`] or [`CollateError::Plot`] when the table or a
/// plot cannot be made.
pub fn write_prediction(p: &Prediction, dir: &Path) -> Result<Vec<PathBuf>, CollateError> {
    if !replaceable(dir) {
        return Err(CollateError::io(
            dir,
            std::io::Error::other(
                "it holds files that are not an earlier prediction's, which writing the prediction there would replace; give a new or empty folder (or one an earlier `powerlab predict` wrote)",
            ),
        ));
    }
    powerlab_collate::folder::write_whole(dir, |staging| write_into(p, staging), CollateError::io)
}

/// Whether `dir` may be replaced whole: absent, empty, or an earlier
/// prediction (its scenarios table or report there).
fn replaceable(dir: &Path) -> bool {
    match std::fs::read_dir(dir) {
        Err(_) => !dir.exists(),
        Ok(mut entries) => {
            entries.next().is_none()
                || dir
                    .join(powerlab_rundir::files::predict::SCENARIOS_CSV)
                    .is_file()
                || dir.join(ReportFile::ReportMd.file_name()).is_file()
        }
    }
}

/// Every file of `p`, into the (new, empty) folder `dir`.
fn write_into(p: &Prediction, dir: &Path) -> Result<Vec<PathBuf>, CollateError> {
    let plots_dir = dir.join(ReportFile::Plots.file_name());
    std::fs::create_dir_all(&plots_dir).map_err(|e| CollateError::io(&plots_dir, e))?;
    let mut files = vec![parquet::write_waveform(p, dir)?];
    files.extend(csv::write_tables(p, dir)?);
    files.extend(modes::write_modes(p, dir)?);
    files.extend(study::write_study(p, dir)?);
    files.extend(plots::write_plots(p, &plots_dir)?);
    files.extend(grid_files::write_grid(p, dir, &plots_dir)?);
    files.push(markdown::write_report(p, dir)?);
    files.push(powerlab_collate::render::write_html(dir, &p.title)?);
    Ok(files)
}
