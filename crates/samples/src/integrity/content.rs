//! What one GPU's raw file may hold: that GPU's rows, of the run's node,
//! power readings a GPU can draw, and the enforced limit the manifest
//! states among its own readings. The rule and the faults found against
//! it are apart, so that [`check_content`]'s passes over a frame and the
//! collator's one pass over a file's arrays (`crate::split`) judge alike.

use super::{CEILING_FLOOR_W, MAX_LIMIT_MULTIPLE, MIN_READING_W, POWER, bad, file_key};
use crate::error::CollateError;
use polars::prelude::*;
use powerlab_core::Instrument;
use powerlab_core::hw::MAX_GPU_LIMIT_W;
use powerlab_rundir::Manifest;
use std::path::Path;

/// Checks one raw file's rows (already read): its GPU and node, and that
/// every power reading is physical. A copied, swapped, foreign or rescaled
/// file is an error naming it.
///
/// # Errors
///
/// Returns [`CollateError::BadRaw`] naming the file when it holds rows of
/// another GPU or of a node other than the manifest's, or when a power
/// reading lies outside [`MIN_READING_W`] to [`MAX_LIMIT_MULTIPLE`] times
/// the larger of the GPU's enforced limit and [`CEILING_FLOOR_W`]; naming
/// `manifest.json` when the file's own `power_limit_w` rows never recorded
/// the limit the manifest states. Returns [`CollateError::Polars`] when the
/// filter over the power readings fails.
pub fn check_content(path: &Path, df: &DataFrame, manifest: &Manifest) -> Result<(), CollateError> {
    let key = file_key(path);
    let m = &manifest.backend;
    // `check_listed` has refused files of GPUs the manifest lacks.
    let Some(gpu) = m.gpus.iter().find(|g| g.key == key) else {
        return Ok(());
    };
    let distinct = |name: &str| -> Vec<String> {
        df.column(name)
            .ok()
            .and_then(|c| c.unique().ok())
            .and_then(|c| {
                c.str()
                    .ok()
                    .map(|s| s.iter().flatten().map(str::to_string).collect())
            })
            .unwrap_or_default()
    };
    let rule = ContentRule::of(gpu, &m.node_id);
    let instruments = df
        .column("instrument")
        .and_then(|c| c.str())
        .map_err(CollateError::polars("reading the instrument column"))?;
    let values = df
        .column("value")
        .and_then(|c| c.f64())
        .map_err(CollateError::polars("reading the value column"))?;
    let mut faults = ContentFaults {
        other_gpu: distinct("gpu").into_iter().find(|g| *g != key),
        other_node: distinct("node").into_iter().find(|n| *n != m.node_id),
        ..ContentFaults::default()
    };
    for (i, v) in instruments.iter().zip(values.iter()) {
        if let (Some(i), Some(v)) = (i.and_then(Instrument::parse), v) {
            faults.reading(&rule, i, v);
        }
    }
    rule.judge(path, faults)
}

/// What one GPU's raw file may hold: that GPU's rows, of the run's node,
/// and power readings a GPU can draw.
pub(crate) struct ContentRule<'a> {
    gpu: &'a powerlab_core::hw::GpuIdentity,
    /// The run's node.
    pub node: &'a str,
    /// The highest power reading a GPU can draw, W.
    max_w: f64,
}

/// What a file's rows showed against its [`ContentRule`].
#[derive(Debug, Default)]
pub(crate) struct ContentFaults {
    /// A GPU key other than the file's.
    pub other_gpu: Option<String>,
    /// A node other than the run's.
    pub other_node: Option<String>,
    /// Power readings outside what a GPU can draw.
    off_power: usize,
    /// The first of them, in row order.
    first_off: Option<f64>,
    /// The file's enforced-limit readings, in row order.
    limits: Vec<f64>,
}

impl ContentFaults {
    /// Counts one reading of an analysed instrument.
    pub(crate) fn reading(&mut self, rule: &ContentRule<'_>, instrument: Instrument, v: f64) {
        if POWER.contains(&instrument) && (v > rule.max_w || v < MIN_READING_W) {
            self.off_power += 1;
            self.first_off.get_or_insert(v);
        } else if instrument == Instrument::PowerLimitW {
            self.limits.push(v);
        }
    }
}

impl<'a> ContentRule<'a> {
    /// The rule for `gpu`'s file in a run of `node`.
    pub(crate) fn of(gpu: &'a powerlab_core::hw::GpuIdentity, node: &'a str) -> ContentRule<'a> {
        // Never above any GPU's limit: a file in mW with its limit in mW too
        // (NVML's unit) had a ceiling of 2,100 kW.
        let limit = gpu.power_limit_w.clamp(CEILING_FLOOR_W, MAX_GPU_LIMIT_W);
        ContentRule {
            gpu,
            node,
            max_w: MAX_LIMIT_MULTIPLE * limit,
        }
    }

    /// The first fault of `faults`, as an error naming the file (or the
    /// manifest, for a limit the file never recorded).
    pub(crate) fn judge(&self, path: &Path, faults: ContentFaults) -> Result<(), CollateError> {
        let key = &self.gpu.key;
        if let Some(other) = faults.other_gpu {
            return Err(bad(
                path,
                format!(
                    "holds rows of `{other}`, not only of `{key}`: the file was copied from another GPU's or swapped; restore the original"
                ),
            ));
        }
        if let Some(other) = faults.other_node {
            return Err(bad(
                path,
                format!(
                    "holds rows of node `{other}`, but this run is node `{}`: the file comes from another run",
                    self.node
                ),
            ));
        }
        if let Some(first) = faults.first_off {
            return Err(bad(
                path,
                format!(
                    "{} power reading(s) outside what a GPU can draw (for example {first} W; allowed {MIN_READING_W} to {:.0} W, {MAX_LIMIT_MULTIPLE} × its {:.0} W limit taken between {CEILING_FLOOR_W:.0} W and {MAX_GPU_LIMIT_W:.0} W, the most any GPU has): the file is in another unit (mW written as W? NVML's own unit is mW) or corrupt",
                    faults.off_power, self.max_w, self.gpu.power_limit_w
                ),
            ));
        }
        check_limit(path, &faults.limits, self.gpu)
    }
}

/// The manifest's enforced limit of a GPU must be one its own raw file
/// recorded (`power_limit_w` rows, read all through the run): a limit
/// edited in the manifest would scale every "% of the limit" figure.
fn check_limit(
    path: &Path,
    limits: &[f64],
    gpu: &powerlab_core::hw::GpuIdentity,
) -> Result<(), CollateError> {
    if limits.is_empty() || limits.iter().any(|l| (l - gpu.power_limit_w).abs() <= 1.0) {
        return Ok(());
    }
    let (lo, hi) = limits
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), l| {
            (a.min(*l), b.max(*l))
        });
    Err(CollateError::BadRaw {
        path: path
            .parent()
            .and_then(Path::parent)
            .map(|d| d.join(powerlab_rundir::RunFile::Manifest.name()))
            .unwrap_or_else(|| powerlab_rundir::RunFile::Manifest.name().into()),
        message: format!(
            "gives {} an enforced limit of {:.0} W, but its raw file {} recorded {lo:.0} to {hi:.0} W: the manifest was edited; restore manifest.json from the original run directory",
            gpu.key,
            gpu.power_limit_w,
            path.display()
        ),
    })
}
