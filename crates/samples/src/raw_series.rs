//! A run's raw samples read file by file into series, on every core: each
//! raw file holds one GPU, so its parsing, checks, Parquet copy and split
//! into series run beside the others', and no frame of the whole run is
//! held.

use crate::error::CollateError;
use crate::load::{Run, read_raw_file, sample_bounds};
use crate::series::SeriesSet;
use powerlab_rundir::RunDir;
use powerlab_rundir::raw::StoredSum;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The raw samples of a run split into series, read file by file.
pub struct RawSeries {
    /// Every analysed instrument's series by (node, GPU, instrument).
    pub series: SeriesSet,
    /// Rows read in total (all instruments).
    pub total_rows: usize,
    /// Raw files cut short or with an unindexed tail, in words.
    pub problems: Vec<String>,
    /// Each file read, with the size and CRC-32 of its bytes as read.
    pub read: Vec<(PathBuf, StoredSum)>,
}

/// One raw file read and split: its rows, its series, its problems, the
/// sum of its bytes.
type FileSeries = (usize, SeriesSet, Vec<String>, StoredSum);

/// As [`read_power`](crate::load::read_power), but each file is split into its series as soon as it
/// is read, on every core (a file holds one GPU): no frame of the whole
/// run is held (1.9 GB at the peak of a 4-hour 8-GPU run's collation), and
/// the parsing, checking and Parquet copy of each file run beside the
/// others'. The series are those [`SeriesSet::from_frame`] makes of
/// [`read_power`](crate::load::read_power)'s frame; the first file (in `raw/`'s order) that fails
/// gives the error.
///
/// # Errors
///
/// As [`read_power`](crate::load::read_power).
pub fn read_series(
    dir: &RunDir,
    run: &Run,
    parquet_dir: Option<&Path>,
) -> Result<RawSeries, CollateError> {
    let bounds = sample_bounds(run);
    let files = dir.raw_files()?;
    if let Some(out) = parquet_dir {
        std::fs::create_dir_all(out).map_err(|e| CollateError::io(out, e))?;
    }
    // The buffers files were read into, handed to the next file read: a
    // fresh one would be faulted in and zeroed page by page each time.
    let spare: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());
    let read_one = |path: &PathBuf| -> Result<FileSeries, CollateError> {
        crate::integrity::check_listed(path, &run.manifest)?;
        let mut problems = Vec::new();
        let buffer = spare
            .lock()
            .ok()
            .and_then(|mut s| s.pop())
            .unwrap_or_default();
        let read = read_raw_file(path, run, parquet_dir, &mut problems, buffer)?;
        if let Ok(mut s) = spare.lock() {
            s.push(read.buffer);
        }
        let series = crate::split::checked_series(path, &read.df, bounds, &run.manifest)?;
        Ok((read.df.height(), series, problems, read.stored))
    };
    let (mut total_rows, mut problems) = (0, Vec::new());
    let mut parts = Vec::with_capacity(files.len());
    let mut read = Vec::with_capacity(files.len());
    for (path, result) in files
        .iter()
        .zip(crate::parallel::map_in_order(&files, read_one))
    {
        let (rows, series, found, sum) = result?;
        total_rows += rows;
        problems.extend(found);
        parts.push(series);
        read.push((path.clone(), sum));
    }
    Ok(RawSeries {
        series: SeriesSet::merged(parts),
        total_rows,
        problems,
        read,
    })
}
