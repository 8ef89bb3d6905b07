//! Which sensor model a run's numbers are judged by: its own calibration
//! when it has one, else a `sensor.json` given to the run, else the
//! built-in profile of its GPU model, else nominal values. A refused
//! calibration fit is replaced path by path from the fallback.

use super::calibration::calibrate;
use super::model::{ModelKind, PathModel, SensorModel, read_model};
use powerlab_rundir::RunDir;
use powerlab_samples::error::CollateError;
use powerlab_samples::load::Run;
use powerlab_samples::series::{EdgeIndex, SeriesSet};

/// The model this run's numbers are judged by, and where it came from:
/// its own calibration rungs; else a `sensor.json` given to the run; else
/// the built-in profile of its GPU model; else nominal values. A path whose
/// calibration fit was refused takes the next source's values for that path.
///
/// # Errors
///
/// Only when the run has no calibration of its own but has a
/// `sensor.json`: returns [`CollateError::BadRaw`] naming it when the run
/// was given none (its manifest records no checksum for it), when it is
/// missing or differs from the one the run was given, when it is not a
/// sensor model, or when it lacks one of the run's GPUs or a GPU's
/// buffered-sample path ([`SensorModel::check_covers`]); a missing
/// instant-field path is said in the model's source; [`CollateError::Io`]
/// when it cannot be read.
pub fn model_for(
    dir: &RunDir,
    run: &Run,
    series: &SeriesSet,
    edges: &EdgeIndex,
) -> Result<SensorModel, CollateError> {
    let keys = run.manifest.gpu_keys();
    let name = run
        .manifest
        .backend
        .gpus
        .first()
        .map(|g| g.name.clone())
        .unwrap_or_default();
    let fallback =
        SensorModel::builtin(&name, &keys).unwrap_or_else(|| SensorModel::nominal(&name, &keys));
    if let Some(mut m) = calibrate(run, series, edges) {
        // A refused path keeps its fit on record and is judged by the fallback's values.
        for g in &mut m.gpus {
            let refused: Vec<PathModel> = g
                .paths
                .iter()
                .filter(|p| p.refused.is_some())
                .cloned()
                .collect();
            for r in refused {
                if let Some(f) = fallback.path(&g.gpu, r.instrument) {
                    g.paths.push(f.clone());
                }
            }
        }
        return Ok(m);
    }
    let given = dir.file(powerlab_rundir::RunFile::SensorModel);
    if std::fs::symlink_metadata(&given).is_ok() || run.manifest.sensor.is_some() {
        check_bound(dir, run)?;
        let mut m = read_model(&given)?;
        m.check_covers(&keys).map_err(|why| CollateError::BadRaw {
            path: given.clone(),
            message: format!("cannot judge this run: {why}"),
        })?;
        let gaps = m.optional_gaps(&keys);
        let gaps = if gaps.is_empty() {
            String::new()
        } else {
            format!("; {}", gaps.join("; "))
        };
        m.source = format!("sensor.json given to the run ({}){gaps}", m.source);
        m.kind = ModelKind::Given;
        return Ok(m);
    }
    Ok(fallback)
}

/// A `sensor.json` judges the run only if it is the one the run was given:
/// the manifest records its length and CRC-32.
fn check_bound(dir: &RunDir, run: &Run) -> Result<(), CollateError> {
    let path = dir.file(powerlab_rundir::RunFile::SensorModel);
    let Some(sum) = &run.manifest.sensor else {
        return Err(CollateError::BadRaw {
            path,
            message: "this run was given no sensor model (its manifest records none), so this file was added after the run and would change every duty rung's figures; remove it (to judge the run by a calibration of this node, run the campaign again with `run --sensor`)".into(),
        });
    };
    sum.verify(&dir.path).map_err(|e| CollateError::BadRaw {
        path: path.clone(),
        message: match e {
            powerlab_rundir::RunDirError::Format { message, .. } => message,
            other => format!(
                "cannot be read ({other}); the run was given a sensor model of {} bytes: restore it from the original run directory",
                sum.bytes
            ),
        },
    })
}
