//! The sensor model's types: what each NVML power path of each GPU does
//! (update period, averaging window, latency), what the aliasing probes
//! showed, where a model came from, and the built-in H200 profile that runs
//! on measured GPU models fall back to. A model is data; which one a run is
//! judged by is decided in `sensor::source`.

use powerlab_core::Instrument;
use powerlab_samples::error::CollateError;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The model of one power path of one GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathModel {
    /// `buffered_w`, `instant_w`, `average_w` or `energy_mj`.
    pub instrument: Instrument,
    /// Time between new values, ms.
    pub update_period_ms: Option<f64>,
    /// Averaging window, ms.
    pub window_ms: Option<f64>,
    /// 95 % half-width of the window across independent groups of edges, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_ms_ci95: Option<f64>,
    /// Delay between the power and the reading, ms.
    pub latency_ms: Option<f64>,
    /// 95 % half-width of the latency, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms_ci95: Option<f64>,
    /// Why a fit was refused (its values are then not used), if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// The board's own fall time constant seen in the fit, ms (buffered only).
    pub board_fall_tau_ms: Option<f64>,
    /// RMS residual of the step fit (fraction of the step).
    pub fit_rms: Option<f64>,
    /// Falling edges folded for the fit.
    pub edges_used: usize,
    /// Median time between reads of this path, ms (a field polled slower
    /// than a third of its update period cannot be timed well).
    pub read_period_ms: Option<f64>,
}

/// What an aliasing probe rung showed on one path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    /// The power path the probe was read on: its instrument name, as in
    /// [`PathModel::instrument`].
    pub instrument: Instrument,
    /// Square-wave period, ms.
    pub period_ms: f64,
    /// p99 − p1 of the readings over the step height.
    pub observed_ratio: f64,
    /// The same predicted by the fitted window for a board that follows.
    pub predicted_ratio: f64,
}

/// The model of one GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuSensor {
    /// GPU key.
    pub gpu: String,
    /// One model per path.
    pub paths: Vec<PathModel>,
    /// Aliasing probes.
    pub probes: Vec<Probe>,
}

/// Where a sensor model came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelKind {
    /// Fitted on this run's own calibration rungs.
    Calibrated,
    /// A `sensor.json` given to the run (`run --sensor`).
    Given,
    /// The built-in profile of a GPU model measured before.
    BuiltIn,
    /// No measurement of this GPU model: assumed values.
    Nominal,
}

/// A GPU a sensor model was measured on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MeasuredGpu {
    /// Its key in the run that measured it (`gpu0`).
    pub gpu: String,
    /// Its NVML name (`NVIDIA H200`).
    pub name: String,
    /// Its UUID (`GPU-…`).
    pub uuid: String,
}

/// `sensor.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SensorModel {
    /// Where it came from, in words (the report prints it).
    pub source: String,
    /// Where it came from.
    #[serde(default = "nominal_kind")]
    pub kind: ModelKind,
    /// The GPUs it was measured on (a calibration records them; a built-in
    /// or nominal model has none): `run --sensor` takes a model only for
    /// the GPUs it was measured on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub measured_on: Vec<MeasuredGpu>,
    /// Per GPU.
    pub gpus: Vec<GpuSensor>,
}

/// The narrowest averaging window a sensor model may state, ms: no
/// calibration has shown a power path averaging less (the H200's buffered
/// samples average 4–9 ms, its instant field 2–33 ms).
pub const MIN_WINDOW_MS: f64 = 1.0;

/// The narrowest window as a share of the path's update period: a window
/// of 0.1 ms on a path updated every 20 ms would turn rungs the instrument
/// cannot resolve into reported swings.
pub const MIN_WINDOW_SHARE: f64 = 0.02;

fn nominal_kind() -> ModelKind {
    ModelKind::Nominal
}

/// One path of a built-in or nominal model: update period, window and
/// latency (ms) with the window's uncertainty.
pub(super) fn path_model(
    instrument: Instrument,
    update: f64,
    window: f64,
    window_ci: Option<f64>,
    latency: f64,
) -> PathModel {
    PathModel {
        instrument,
        update_period_ms: Some(update),
        window_ms: Some(window),
        window_ms_ci95: window_ci,
        latency_ms: Some(latency),
        latency_ms_ci95: None,
        refused: None,
        board_fall_tau_ms: None,
        fit_rms: None,
        edges_used: 0,
        read_period_ms: None,
    }
}

/// The H200's paths as measured (results/h200x2-2026-11-30, six fits on
/// two machines, driver 580.159): buffered samples on an exact 20 ms grid
/// averaging 4–9 ms (6 ms taken, ±2.5), about 1 ms after their timestamps;
/// the fields every 100 ms, the instant one over a window not pinned down
/// (2–33 ms; 20 ms taken), the average one over ~975 ms.
fn h200_paths() -> Vec<PathModel> {
    vec![
        path_model(Instrument::BufferedW, 20.0, 6.0, Some(2.5), 1.0),
        path_model(Instrument::InstantW, 100.0, 20.0, Some(15.0), 14.0),
        path_model(Instrument::AverageW, 100.0, 975.0, Some(15.0), 10.0),
    ]
}

impl SensorModel {
    /// The model of `gpu`'s `instrument` (any GPU's if that one is missing).
    pub fn path(&self, gpu: &str, instrument: Instrument) -> Option<&PathModel> {
        fn find(g: &GpuSensor, instrument: Instrument) -> Option<&PathModel> {
            g.paths
                .iter()
                .find(|p| p.instrument == instrument && p.refused.is_none())
        }
        self.gpus
            .iter()
            .find(|g| g.gpu == gpu)
            .and_then(|g| find(g, instrument))
            .or_else(|| self.gpus.iter().find_map(|g| find(g, instrument)))
    }

    /// The built-in profile of a GPU model that has been measured (by its
    /// NVML name), if there is one.
    pub fn builtin(device_name: &str, gpus: &[String]) -> Option<SensorModel> {
        if !device_name.contains("H200") {
            return None;
        }
        Some(SensorModel {
            source: format!(
                "built-in H200 profile (measured on 2 × H200, driver 580.159: buffered samples every 20 ms averaging 6 ± 2.5 ms) for {device_name}"
            ),
            kind: ModelKind::BuiltIn,
            measured_on: Vec::new(),
            gpus: gpus
                .iter()
                .map(|g| GpuSensor {
                    gpu: g.clone(),
                    paths: h200_paths(),
                    probes: Vec::new(),
                })
                .collect(),
        })
    }

    /// For a GPU model never measured: the H200's values, said as such on
    /// every verdict. Run `powerlab calibrate` on such a GPU.
    pub fn nominal(device_name: &str, gpus: &[String]) -> SensorModel {
        SensorModel {
            source: format!(
                "nominal (not calibrated): {device_name} has not been measured, so the H200's values are assumed (buffered 20 ms / 6 ms, fields 100 ms); run `powerlab calibrate` on this GPU"
            ),
            kind: ModelKind::Nominal,
            measured_on: Vec::new(),
            gpus: gpus
                .iter()
                .map(|g| GpuSensor {
                    gpu: g.clone(),
                    paths: h200_paths(),
                    probes: Vec::new(),
                })
                .collect(),
        }
    }
}

/// Reads a sensor model written by `powerlab calibrate`; a file that is
/// missing or is not one is an error naming it (never a silent fallback).
///
/// # Errors
///
/// Returns [`CollateError::Io`] when the file cannot be read, and
/// [`CollateError::BadRaw`] naming it when its content does not parse as a
/// sensor model.
pub fn read_model(path: &Path) -> Result<SensorModel, CollateError> {
    let text = std::fs::read_to_string(path).map_err(|e| CollateError::io(path, e))?;
    let model = serde_json::from_str::<SensorModel>(&text).map_err(|e| CollateError::BadRaw {
        path: path.to_path_buf(),
        message: format!("not a sensor model written by `powerlab calibrate`: {e}"),
    })?;
    model.check().map_err(|why| CollateError::BadRaw {
        path: path.to_path_buf(),
        message: format!("{why}: not a model of a real instrument; calibrate the node again"),
    })?;
    Ok(model)
}

impl SensorModel {
    /// Whether every value could come from a real instrument: at least one
    /// GPU with a path; periods and time constants finite and above zero;
    /// windows, intervals and latencies finite and within 10 s; and each
    /// power path that was not refused within its instrument's bounds
    /// ([`super::bounds::BOUNDS`]: a 500 ms latency is no power path's).
    ///
    /// # Errors
    ///
    /// The first impossible value, named by GPU, instrument and field.
    pub fn check(&self) -> Result<(), String> {
        if self.gpus.is_empty() || self.gpus.iter().all(|g| g.paths.is_empty()) {
            return Err("no GPU with an instrument path".into());
        }
        const MAX_MS: f64 = 10_000.0;
        for g in &self.gpus {
            for p in &g.paths {
                if !p.instrument.is_power() && p.instrument != Instrument::EnergyMj {
                    return Err(format!(
                        "{} {}: not a power path (a model states buffered_w, instant_w, average_w or energy_mj)",
                        g.gpu, p.instrument
                    ));
                }
                let fields = [
                    ("update_period_ms", p.update_period_ms, 0.0, false),
                    ("read_period_ms", p.read_period_ms, 0.0, false),
                    ("board_fall_tau_ms", p.board_fall_tau_ms, 0.0, false),
                    ("window_ms", p.window_ms, 0.0, true),
                    ("window_ms_ci95", p.window_ms_ci95, 0.0, true),
                    ("latency_ms", p.latency_ms, -MAX_MS, true),
                    ("latency_ms_ci95", p.latency_ms_ci95, 0.0, true),
                ];
                for (name, v, lo, zero_ok) in fields {
                    let Some(v) = v else { continue };
                    let ok = v.is_finite() && v <= MAX_MS && (v > lo || (zero_ok && v >= lo));
                    if !ok {
                        return Err(format!("{} {}: {name} = {v}", g.gpu, p.instrument));
                    }
                }
                check_window(&g.gpu, p)?;
                if p.refused.is_none() {
                    super::bounds::check(&g.gpu, p.instrument, stated(p))?;
                }
            }
        }
        Ok(())
    }

    /// Whether this model can judge every GPU of a run (`keys`): each has
    /// its own entry with a buffered-sample path (not refused) stating its
    /// update period, window and latency: every duty rung's cycle is
    /// folded with them, and no value is ever assumed or borrowed from
    /// another GPU.
    ///
    /// # Errors
    ///
    /// The first GPU the model cannot judge, naming it, the path or the
    /// field, and what to do.
    pub fn check_covers(&self, keys: &[String]) -> Result<(), String> {
        let redo = "run `powerlab calibrate` on this node and give the sensor.json it wrote";
        for key in keys {
            let Some(g) = self.gpus.iter().find(|g| &g.gpu == key) else {
                let has: Vec<&str> = self.gpus.iter().map(|g| g.gpu.as_str()).collect();
                return Err(format!(
                    "the model has no entry for {key} (it has {}): each GPU's instruments are its own; {redo}",
                    has.join(", ")
                ));
            };
            let buffered = g
                .paths
                .iter()
                .filter(|p| p.instrument == Instrument::BufferedW);
            let Some(p) = buffered.clone().find(|p| p.refused.is_none()) else {
                let why = buffered
                    .filter_map(|p| p.refused.as_deref())
                    .next()
                    .map_or_else(
                        || "has no buffered_w path".to_string(),
                        |r| format!("has only a refused buffered_w fit ({r})"),
                    );
                return Err(format!(
                    "{key} {why}: every duty rung of {key} is folded on its buffered samples with that path's window and latency; {redo}"
                ));
            };
            for (field, v) in [
                ("update_period_ms", p.update_period_ms),
                ("window_ms", p.window_ms),
                ("latency_ms", p.latency_ms),
            ] {
                if v.is_none() {
                    return Err(format!(
                        "{key} buffered_w states no {field}: every duty rung of {key} is folded with it; {redo}"
                    ));
                }
            }
        }
        Ok(())
    }

    /// What this model lacks that the collator can do without, for the
    /// GPUs `keys`, in words (empty: nothing): a GPU without an instant
    /// field path is not judged on that field (or borrows another GPU's,
    /// said so); the average field's path is never used to judge a rung.
    pub fn optional_gaps(&self, keys: &[String]) -> Vec<String> {
        let usable = |g: &GpuSensor| {
            g.paths
                .iter()
                .any(|p| p.instrument == Instrument::InstantW && p.refused.is_none())
        };
        let lenders: Vec<&str> = self
            .gpus
            .iter()
            .filter(|g| usable(g))
            .map(|g| g.gpu.as_str())
            .collect();
        keys.iter()
            .filter(|k| !self.gpus.iter().any(|g| &g.gpu == *k && usable(g)))
            .map(|k| match lenders.first() {
                Some(l) => format!("{k} has no instant_w path: its instant-field verdicts use {l}'s"),
                None => format!(
                    "{k} has no instant_w path: the instant field is not judged for {k} and cannot stand in where the buffered window nulls a period"
                ),
            })
            .collect()
    }

    /// Whether this model may judge a run on `gpus` (the node's GPUs): it
    /// names the GPUs it was measured on, all of this node's model, and
    /// every GPU of the node is one of them (by UUID). A calibration of
    /// another GPU model, or of other GPUs, is refused.
    ///
    /// # Errors
    ///
    /// What does not fit, naming the GPU models or UUIDs, and what to do.
    pub fn check_fits(&self, gpus: &[powerlab_core::hw::GpuIdentity]) -> Result<(), String> {
        let redo = "run `powerlab calibrate` on this node and give its sensor.json";
        if self.measured_on.is_empty() {
            return Err(format!(
                "the model does not say which GPUs it was measured on (written before sensor models named them, or by hand); {redo}"
            ));
        }
        for g in gpus {
            if let Some(m) = self.measured_on.iter().find(|m| m.name != g.name) {
                return Err(format!(
                    "the model was measured on {} ({}), but {} of this node is {}: another GPU model's instruments; {redo}",
                    m.name, m.uuid, g.key, g.name
                ));
            }
            if !self.measured_on.iter().any(|m| m.uuid == g.uuid) {
                let on: Vec<&str> = self.measured_on.iter().map(|m| m.uuid.as_str()).collect();
                return Err(format!(
                    "the model was measured on {}, not on {} ({}) of this node: each GPU's instruments are its own; {redo}",
                    on.join(", "),
                    g.key,
                    g.uuid
                ));
            }
        }
        Ok(())
    }
}

/// What a path states, for [`super::bounds::check`].
fn stated(p: &PathModel) -> super::bounds::Stated {
    super::bounds::Stated {
        update_ms: p.update_period_ms,
        window_ms: p.window_ms,
        latency_ms: p.latency_ms,
        latency_ci_ms: p.latency_ms_ci95,
    }
}

/// A stated averaging window no calibration has ever shown: narrower than
/// [`MIN_WINDOW_MS`] or than [`MIN_WINDOW_SHARE`] of the path's update
/// period. A refused fit's values are not used and not judged.
fn check_window(gpu: &str, p: &PathModel) -> Result<(), String> {
    let (Some(w), None) = (p.window_ms, &p.refused) else {
        return Ok(());
    };
    if !p.instrument.is_power() {
        return Ok(());
    }
    let floor = p
        .update_period_ms
        .map(|u| (MIN_WINDOW_SHARE * u).max(MIN_WINDOW_MS))
        .unwrap_or(MIN_WINDOW_MS);
    if w < floor {
        return Err(format!(
            "{gpu} {}: window_ms = {w} is narrower than any power path has been measured to average ({floor} ms at least for an update period of {} ms)",
            p.instrument,
            p.update_period_ms
                .map(|u| u.to_string())
                .unwrap_or_else(|| "–".into())
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_with_an_impossible_value_is_refused_naming_it() {
        let gpus = vec!["gpu0".to_string()];
        let good = SensorModel::builtin("NVIDIA H200", &gpus).unwrap();
        assert_eq!(good.check(), Ok(()));
        let dir = tempfile::tempdir().unwrap();
        let path = dir
            .path()
            .join(powerlab_rundir::RunFile::SensorModel.name());
        let bad = |f: &dyn Fn(&mut PathModel)| {
            let mut m = good.clone();
            f(&mut m.gpus[0].paths[0]);
            std::fs::write(&path, serde_json::to_string(&m).unwrap()).unwrap();
            read_model(&path).unwrap_err().to_string()
        };
        assert!(bad(&|p| p.window_ms = Some(-6.0)).contains("window_ms = -6"));
        assert!(bad(&|p| p.update_period_ms = Some(0.0)).contains("update_period_ms = 0"));
        // A buffered window of 0.1 ms on a 20 ms path: never measured.
        assert!(bad(&|p| p.window_ms = Some(0.1)).contains("window_ms = 0.1 is narrower"));
        assert!(bad(&|p| p.latency_ms = Some(1e300)).contains("latency_ms"));
        let mut empty = good.clone();
        empty.gpus.clear();
        std::fs::write(&path, serde_json::to_string(&empty).unwrap()).unwrap();
        assert!(
            read_model(&path)
                .unwrap_err()
                .to_string()
                .contains("no GPU")
        );
        // The file given as it is written reads back.
        std::fs::write(&path, serde_json::to_string(&good).unwrap()).unwrap();
        assert!(read_model(&path).is_ok());
    }
}
