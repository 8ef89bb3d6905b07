//! `waveform.parquet`: the headline waveform, one row per point, its start
//! time (`t_s`) and power (`power_w`).

use super::super::Prediction;
use polars::prelude::*;
use powerlab_samples::error::CollateError;
use std::path::{Path, PathBuf};

/// The waveform's file name.
pub use powerlab_rundir::files::predict::WAVEFORM_PARQUET;

/// Writes `dir/waveform.parquet`: `t_s` (each point's start, s) and
/// `power_w` (W).
///
/// # Errors
///
/// [`CollateError::Io`] when the file cannot be created;
/// [`CollateError::Polars`] when the frame cannot be made or written.
pub fn write_waveform(p: &Prediction, dir: &Path) -> Result<PathBuf, CollateError> {
    let n = p.waveform.len();
    let t: Vec<f64> = (0..n)
        .map(|i| i as f64 * p.resolution_ms / 1000.0)
        .collect();
    let mut df = DataFrame::new(
        n,
        vec![
            Column::new("t_s".into(), t),
            Column::new("power_w".into(), p.waveform.clone()),
        ],
    )
    .map_err(CollateError::polars("building the waveform"))?;
    powerlab_samples::parquet_io::write_frame(&mut df, &dir.join(WAVEFORM_PARQUET))
}
