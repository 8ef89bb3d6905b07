//! Sensor truth: what each NVML power path can see, and whether each rung's
//! numbers are a swing of the board or an artefact of the instrument.
//!
//! The sensor model (update period, averaging window, latency per GPU and
//! path) comes from the run's own calibration rungs when it has them
//! (`calibrate = true`, `powerlab calibrate`), else from a `sensor.json` in
//! the run directory, else from nominal H200 values, and the report says
//! which. Every duty rung is then folded on its recorded rising edges
//! (equivalent-time sampling): the fundamental of the folded cycle gives the
//! swing independent of latency and window shape, and dividing by the
//! window's attenuation gives the board's swing where the window does not
//! null that period. Verdict per period: board follows / board attenuates /
//! instrument limit / aliased.

pub mod fit;
pub mod fold;
pub mod spectrum;

use crate::curve::{f64_column, i64_column};
use crate::error::CollateError;
use crate::load::{Run, RungWindow};
use fold::{Folded, fold, shape, sinc};
use polars::prelude::*;
use powerlab_campaign::CALIBRATION_PHASE;
use powerlab_rundir::RunDir;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The model of one power path of one GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathModel {
    /// `buffered_w`, `instant_w`, `average_w` or `energy_mj`.
    pub instrument: String,
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
    /// Path.
    pub instrument: String,
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

/// `sensor.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SensorModel {
    /// Where it came from, in words (the report prints it).
    pub source: String,
    /// Where it came from.
    #[serde(default = "nominal_kind")]
    pub kind: ModelKind,
    /// Per GPU.
    pub gpus: Vec<GpuSensor>,
}

fn nominal_kind() -> ModelKind {
    ModelKind::Nominal
}

/// One path of a built-in or nominal model: update period, window and
/// latency (ms) with the window's uncertainty.
fn path_model(
    instrument: &str,
    update: f64,
    window: f64,
    window_ci: Option<f64>,
    latency: f64,
) -> PathModel {
    PathModel {
        instrument: instrument.into(),
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
        path_model("buffered_w", 20.0, 6.0, Some(2.5), 1.0),
        path_model("instant_w", 100.0, 20.0, Some(15.0), 14.0),
        path_model("average_w", 100.0, 975.0, Some(15.0), 10.0),
    ]
}

impl SensorModel {
    /// The model of `gpu`'s `instrument` (any GPU's if that one is missing).
    pub fn path(&self, gpu: &str, instrument: &str) -> Option<&PathModel> {
        fn find<'a>(g: &'a GpuSensor, instrument: &str) -> Option<&'a PathModel> {
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

/// Every raw series by (node, GPU, instrument), time-sorted.
pub struct SeriesSet {
    by: BTreeMap<(String, String, String), Vec<(i64, f64)>>,
}

impl SeriesSet {
    /// Splits the raw power frame. A handful of keys over millions of rows:
    /// the key of the previous row is tried first (a raw file holds one
    /// GPU), then the few seen so far, so no key is allocated per row.
    pub fn from_frame(power: &DataFrame) -> SeriesSet {
        let mut by = BTreeMap::new();
        let col = |name: &str| power.column(name).ok();
        let (Some(ts), Some(v), Some(node), Some(gpu), Some(inst)) = (
            col("ts_ns"),
            col("value"),
            col("node"),
            col("gpu"),
            col("instrument"),
        ) else {
            return SeriesSet { by };
        };
        let (Ok(ts), Ok(v), Ok(node), Ok(gpu), Ok(inst)) =
            (ts.i64(), v.f64(), node.str(), gpu.str(), inst.str())
        else {
            return SeriesSet { by };
        };
        type Keyed<'a> = (&'a str, &'a str, &'a str, Vec<(i64, f64)>);
        let mut keys: Vec<Keyed<'_>> = Vec::new();
        let mut last = 0usize;
        for ((((t, val), n), g), i) in ts
            .iter()
            .zip(v.iter())
            .zip(node.iter())
            .zip(gpu.iter())
            .zip(inst.iter())
        {
            let (Some(t), Some(val), Some(n), Some(g), Some(i)) = (t, val, n, g, i) else {
                continue;
            };
            let same = |k: &(&str, &str, &str, Vec<(i64, f64)>)| k.2 == i && k.1 == g && k.0 == n;
            if !keys.get(last).is_some_and(same) {
                last = match keys.iter().position(same) {
                    Some(k) => k,
                    None => {
                        keys.push((n, g, i, Vec::new()));
                        keys.len() - 1
                    }
                };
            }
            keys[last].3.push((t, val));
        }
        for (n, g, i, mut s) in keys {
            if !s.windows(2).all(|w| w[0].0 <= w[1].0) {
                s.sort_by_key(|x| x.0);
            }
            by.insert((n.to_string(), g.to_string(), i.to_string()), s);
        }
        SeriesSet { by }
    }

    /// One series of a single-node run (empty if absent).
    pub fn get(&self, gpu: &str, instrument: &str) -> &[(i64, f64)] {
        self.by
            .iter()
            .find(|((_, g, i), _)| g == gpu && i == instrument)
            .map(|(_, v)| v.as_slice())
            .unwrap_or(&[])
    }

    /// The latest reading of any series, epoch ns.
    pub fn last_ts_ns(&self) -> Option<i64> {
        self.by.values().filter_map(|s| s.last().map(|x| x.0)).max()
    }

    /// One series of one node (empty if absent).
    pub fn get_at(&self, node: &str, gpu: &str, instrument: &str) -> &[(i64, f64)] {
        self.by
            .get(&(node.to_string(), gpu.to_string(), instrument.to_string()))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }
}

fn median(v: Vec<f64>) -> Option<f64> {
    crate::stats::median(&v)
}

fn quantile(v: &mut [f64], q: f64) -> Option<f64> {
    crate::stats::quantile(v, q)
}

/// The readings of a time-sorted series with `from <= t < to`.
fn span(s: &[(i64, f64)], from: i64, to: i64) -> &[(i64, f64)] {
    let lo = s.partition_point(|x| x.0 < from);
    let hi = s.partition_point(|x| x.0 < to).max(lo);
    &s[lo..hi]
}

/// Readings where the value changed, at the first read that showed it.
fn changes(s: &[(i64, f64)]) -> Vec<(i64, f64)> {
    s.windows(2)
        .filter(|w| w[1].1 != w[0].1)
        .map(|w| w[1])
        .collect()
}

/// Median time between consecutive points, ms.
fn median_spacing_ms(s: &[(i64, f64)]) -> Option<f64> {
    median(
        s.windows(2)
            .map(|w| (w[1].0 - w[0].0) as f64 / 1e6)
            .filter(|d| *d > 0.0)
            .collect(),
    )
}

/// Achieved edge times by (rung, GPU, kind), grouped once: a long campaign
/// has millions of edges and every rung of every GPU asks for its own.
pub struct EdgeIndex(BTreeMap<(u32, String, String), Vec<i64>>);

impl EdgeIndex {
    /// Groups the edges frame ([`crate::edges::read_edges`]) by rung, GPU
    /// and kind (columnar: one partition per key).
    pub fn from_frame(edges: Option<&DataFrame>) -> EdgeIndex {
        let mut m: BTreeMap<(u32, String, String), Vec<i64>> = BTreeMap::new();
        let Some(parts) =
            edges.and_then(|df| df.partition_by(["rung_id", "gpu", "kind"], true).ok())
        else {
            return EdgeIndex(m);
        };
        for part in parts {
            let rung = part
                .column("rung_id")
                .ok()
                .and_then(|c| c.u32().ok().and_then(|c| c.get(0)));
            let text = |name: &str| {
                part.column(name)
                    .ok()
                    .and_then(|c| c.str().ok().and_then(|s| s.get(0).map(str::to_string)))
            };
            let (Some(rung), Some(gpu), Some(kind)) = (rung, text("gpu"), text("kind")) else {
                continue;
            };
            let Ok(at) = part.column("achieved_ns").and_then(|c| c.i64().cloned()) else {
                continue;
            };
            m.entry((rung, gpu, kind))
                .or_default()
                .extend(at.into_no_null_iter());
        }
        EdgeIndex(m)
    }

    /// Achieved times of one rung's edges of one kind on one GPU.
    pub fn get(&self, rung: u32, gpu: &str, kind: &str) -> &[i64] {
        self.0
            .get(&(rung, gpu.to_string(), kind.to_string()))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }
}

/// Normalised falling-step points (ms after each fall, 1 = on, 0 = off) of
/// `s`, with the on and off levels taken from `levels` (every read).
fn step_points(
    s: &[(i64, f64)],
    levels: &[(i64, f64)],
    falls: &[i64],
    half_period_ms: f64,
) -> (Vec<(f64, f64)>, Vec<f64>) {
    let mut pts = Vec::new();
    let mut heights = Vec::new();
    let h = half_period_ms;
    let after = |f: i64, ms: f64| f + (ms * 1e6) as i64;
    for &f in falls {
        let at = |a: f64, b: f64| -> Vec<f64> {
            span(levels, after(f, a), after(f, b))
                .iter()
                .map(|x| x.1)
                .collect()
        };
        let (Some(on), Some(off)) = (
            median(at(-0.45 * h, -0.1 * h)),
            median(at(0.6 * h, 0.95 * h)),
        ) else {
            continue;
        };
        if (on - off).abs() < 1.0 {
            continue;
        }
        heights.push(on - off);
        for (t, v) in span(s, after(f, -0.2 * h), after(f, 0.95 * h)) {
            pts.push(((*t - f) as f64 / 1e6, (v - off) / (on - off)));
        }
    }
    (pts, heights)
}

/// p2p of a boxcar-W average of a 50 % square wave of period P, over the step.
fn boxcar_ratio(w: f64, p: f64) -> f64 {
    if w <= 0.0 {
        return 1.0;
    }
    let r = w.rem_euclid(p);
    (r.min(p - r) / w).min(1.0)
}

/// Groups of falls fitted separately for a fit's uncertainty.
const CAL_GROUPS: usize = 4;

/// Why a step fit is not physical, if it is not: a reading that responds
/// before the power changed, a fit that does not follow the step, or a
/// window the groups of edges disagree on by more than its own size.
fn unphysical(f: &fit::StepFit, window_ci: Option<f64>, latency_ci: Option<f64>) -> Option<String> {
    let l_ci = latency_ci.unwrap_or(0.0);
    if f.latency_ms + l_ci < -0.5 {
        return Some(format!(
            "negative latency {:.1} ± {:.1} ms: the reading would change before the power did",
            f.latency_ms, l_ci
        ));
    }
    if f.rms > 0.15 {
        return Some(format!(
            "the fit does not follow the step (rms {:.0} % of it)",
            100.0 * f.rms
        ));
    }
    if let Some(w_ci) = window_ci
        && w_ci > f.window_ms.max(2.0)
    {
        return Some(format!(
            "the window is not pinned down: {:.1} ± {w_ci:.1} ms across groups of edges",
            f.window_ms
        ));
    }
    None
}

fn calibration_rungs(run: &Run) -> Vec<&RungWindow> {
    run.rungs
        .iter()
        .filter(|r| r.info.phase == CALIBRATION_PHASE)
        .collect()
}

/// Derives the sensor model from the run's calibration rungs (None without them).
pub fn calibrate(run: &Run, series: &SeriesSet, edges: &EdgeIndex) -> Option<SensorModel> {
    let cal = calibration_rungs(run);
    // The step rungs are the long ones: the shortest for the fast paths,
    // the longest for the 1 s average.
    let mut steps: Vec<&RungWindow> = cal
        .iter()
        .copied()
        .filter(|r| r.info.period_ms.is_some_and(|p| p >= 300.0))
        .collect();
    steps.sort_by(|a, b| {
        a.info
            .period_ms
            .unwrap_or(0.0)
            .total_cmp(&b.info.period_ms.unwrap_or(0.0))
    });
    let (fast, slow) = (*steps.first()?, steps.last().copied());
    let mut gpus = Vec::new();
    for g in &run.manifest.backend.gpus {
        let key = g.key.as_str();
        let mut paths = Vec::new();
        let mut probes = Vec::new();
        let mut board_tau = None;
        for (inst, timestamped) in [
            ("buffered_w", true),
            ("instant_w", false),
            ("average_w", false),
            ("energy_mj", false),
        ] {
            let s = series.get(key, inst);
            if s.len() < 10 {
                continue;
            }
            let read = median_spacing_ms(s);
            // A timestamped path updates with every sample. A held path whose
            // every read shows a new value updates at least as often as it
            // was read: its period is not measured.
            let update = if timestamped {
                read
            } else {
                median_spacing_ms(&changes(s)).filter(|u| read.is_none_or(|r| *u > 1.5 * r))
            };
            let mut m = PathModel {
                instrument: inst.into(),
                update_period_ms: update,
                window_ms: None,
                window_ms_ci95: None,
                latency_ms: None,
                latency_ms_ci95: None,
                refused: None,
                board_fall_tau_ms: None,
                fit_rms: None,
                edges_used: 0,
                read_period_ms: read,
            };
            if inst != "energy_mj" {
                let rung = if inst == "average_w" {
                    slow.unwrap_or(fast)
                } else {
                    fast
                };
                let half = rung.info.period_ms.unwrap_or(1000.0) / 2.0;
                let falls = edges.get(rung.info.id, key, "fall");
                // A held field is fitted on its updates only (the first read of
                // each new value), which removes the hold from the model.
                let updates;
                let fit_on: &[(i64, f64)] = if timestamped {
                    s
                } else {
                    updates = changes(s);
                    &updates
                };
                let (pts, heights) = step_points(fit_on, s, falls, half);
                let tau = board_tau.unwrap_or(0.0);
                let fit_pts = |p: &[(f64, f64)]| {
                    if timestamped {
                        fit::fit_timestamped(p, 0.4 * half)
                    } else {
                        fit::fit_updates(p, tau, 0.9 * half, update.unwrap_or(100.0).max(20.0))
                    }
                };
                if pts.len() >= 20 {
                    let f = fit_pts(&pts);
                    m.window_ms = Some(f.window_ms);
                    m.latency_ms = Some(f.latency_ms);
                    m.fit_rms = Some(f.rms);
                    m.edges_used = heights.len();
                    // Uncertainty: the same fit on independent groups of falls.
                    let groups: Vec<fit::StepFit> = (0..CAL_GROUPS)
                        .filter_map(|k| {
                            let sub: Vec<i64> = falls
                                .iter()
                                .enumerate()
                                .filter(|(i, _)| i % CAL_GROUPS == k)
                                .map(|(_, f)| *f)
                                .collect();
                            let (p, _) = step_points(fit_on, s, &sub, half);
                            (p.len() >= 10).then(|| fit_pts(&p))
                        })
                        .collect();
                    if groups.len() >= 2 {
                        let ci = |v: Vec<f64>| crate::stats::mean_sd_ci(&v).2;
                        m.window_ms_ci95 = ci(groups.iter().map(|g| g.window_ms).collect());
                        m.latency_ms_ci95 = ci(groups.iter().map(|g| g.latency_ms).collect());
                    }
                    m.refused = unphysical(&f, m.window_ms_ci95, m.latency_ms_ci95);
                    if timestamped && m.refused.is_none() {
                        m.board_fall_tau_ms = Some(f.tau_ms);
                        board_tau = Some(f.tau_ms);
                    }
                }
                // Aliasing probes: observed swing over the step height.
                if let (Some(height), Some(w)) = (median(heights), m.window_ms) {
                    for r in cal
                        .iter()
                        .filter(|r| r.info.period_ms.is_some_and(|p| p < 200.0))
                    {
                        let p = r.info.period_ms.unwrap_or(0.0);
                        let mut v: Vec<f64> = span(s, r.measure_from_ns, r.end_ns)
                            .iter()
                            .map(|x| x.1)
                            .collect();
                        if let (Some(lo), Some(hi)) =
                            (quantile(&mut v, 0.01), quantile(&mut v, 0.99))
                        {
                            probes.push(Probe {
                                instrument: inst.into(),
                                period_ms: p,
                                observed_ratio: (hi - lo) / height,
                                predicted_ratio: boxcar_ratio(w, p),
                            });
                        }
                    }
                }
            } else {
                // A counter's window is its own update period (when measured).
                m.window_ms = update;
            }
            paths.push(m);
        }
        gpus.push(GpuSensor {
            gpu: key.into(),
            paths,
            probes,
        });
    }
    Some(SensorModel {
        source: "calibrated in this run".into(),
        kind: ModelKind::Calibrated,
        gpus,
    })
}

/// The model this run's numbers are judged by, and where it came from:
/// its own calibration rungs; else a `sensor.json` given to the run; else
/// the built-in profile of its GPU model; else nominal values. A path whose
/// calibration fit was refused takes the next source's values for that path.
pub fn model_for(
    dir: &RunDir,
    run: &Run,
    series: &SeriesSet,
    edges: &EdgeIndex,
) -> Result<SensorModel, CollateError> {
    let keys: Vec<String> = run
        .manifest
        .backend
        .gpus
        .iter()
        .map(|g| g.key.clone())
        .collect();
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
                if let Some(f) = fallback.path(&g.gpu, &r.instrument) {
                    g.paths.push(f.clone());
                }
            }
        }
        return Ok(m);
    }
    let given = dir.path.join("sensor.json");
    if given.exists() {
        let mut m = read_model(&given)?;
        m.source = format!("sensor.json given to the run ({})", m.source);
        m.kind = ModelKind::Given;
        return Ok(m);
    }
    Ok(fallback)
}

/// Reads a sensor model written by `powerlab calibrate`; a file that is
/// missing or is not one is an error naming it (never a silent fallback).
pub fn read_model(path: &Path) -> Result<SensorModel, CollateError> {
    let text = std::fs::read_to_string(path).map_err(|e| CollateError::io(path, e))?;
    serde_json::from_str::<SensorModel>(&text).map_err(|e| CollateError::BadRaw {
        path: path.to_path_buf(),
        message: format!("not a sensor model written by `powerlab calibrate`: {e}"),
    })
}

/// What a path can make of a square wave of `period_ms` and `duty`.
pub fn raw_verdict(m: &PathModel, period_ms: f64, duty: f64) -> &'static str {
    let u = m.update_period_ms.unwrap_or(100.0);
    let w = m.window_ms.unwrap_or(u);
    if period_ms < 2.0 * u {
        "aliased"
    } else if duty.min(1.0 - duty) * period_ms < 2.0 * w {
        "instrument limit"
    } else {
        "resolvable"
    }
}

/// One duty rung seen by one path of one GPU.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RungPathRow {
    /// Rung id.
    pub rung_id: u32,
    /// Label.
    pub rung: String,
    /// Period, ms.
    pub period_ms: f64,
    /// Duty.
    pub duty: f64,
    /// In phase or staggered.
    pub mode: String,
    /// GPU key.
    pub gpu: String,
    /// Path.
    pub instrument: String,
    /// resolvable / instrument limit / aliased (the raw readings).
    pub verdict: String,
    /// p90 − p10 of the raw readings, W (what a plain summary would call the swing).
    pub visible_swing_w: Option<f64>,
    /// Square-wave swing of the folded cycle, W (before the window correction).
    pub folded_swing_w: Option<f64>,
    /// The window's gain at this period, sinc(W/P).
    pub window_gain: Option<f64>,
    /// Folded swing divided by the window gain, W (None where the window nulls the period).
    pub reconstructed_swing_w: Option<f64>,
    /// Fraction of phase bins with samples.
    pub phase_coverage: f64,
    /// Cycles folded.
    pub cycles: usize,
    /// Rise 10→90 %, ms, as this path sees it (its window included).
    pub rise_ms: Option<f64>,
    /// Fall 90→10 %, ms.
    pub fall_ms: Option<f64>,
    /// Overshoot above the settled on level after the rise, W.
    pub overshoot_w: Option<f64>,
    /// Overshoot duration, ms.
    pub overshoot_ms: Option<f64>,
    /// Rising ramp rate, W/s.
    pub ramp_w_per_s: Option<f64>,
}

/// The per-period answer for the node (in-phase duty rungs).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PeriodAnswer {
    /// Rung label.
    pub rung: String,
    /// Period, ms.
    pub period_ms: f64,
    /// Node p90 − p10 of the buffered curve, W (what NVML shows).
    pub visible_swing_w: Option<f64>,
    /// Sum over GPUs of the reconstructed swing, W.
    pub reconstructed_swing_w: Option<f64>,
    /// Which path reconstructed it.
    pub reconstructed_by: String,
    /// Reconstructed over the longest period's reconstructed swing.
    pub fraction_of_long_period: Option<f64>,
    /// board follows / board attenuates / instrument limit / aliased.
    pub verdict: String,
}

/// Everything the sensor analysis produced.
#[derive(Debug, Clone)]
pub struct SensorReport {
    /// The model used.
    pub model: SensorModel,
    /// Per rung, GPU and path.
    pub rows: Vec<RungPathRow>,
    /// Per period, node level.
    pub answers: Vec<PeriodAnswer>,
    /// Spectrum of each rung's node curve.
    pub spectra: Vec<(u32, String, spectrum::Spectrum)>,
}

fn fold_rung(s: &[(i64, f64)], r: &RungWindow, rises: &[i64], shift_ns: i64) -> Folded {
    let p = (r.info.period_ms.unwrap_or(1000.0) * 1e6) as i64;
    let bins = ((p as f64 / 1e6).round() as usize).clamp(8, 200);
    let pts: Vec<(i64, f64)> = span(s, r.measure_from_ns + shift_ns, r.end_ns + shift_ns)
        .iter()
        .map(|(t, v)| (t - shift_ns, *v))
        .collect();
    fold(&pts, rises, p, bins)
}

/// Analyses every duty rung of the run against `model`.
pub fn analyse(
    run: &Run,
    series: &SeriesSet,
    edges: &EdgeIndex,
    model: SensorModel,
    curve: &crate::curve::NodeCurve,
    visible_node_swing: &BTreeMap<u32, Option<f64>>,
) -> SensorReport {
    let mut rows = Vec::new();
    for r in run
        .rungs
        .iter()
        .filter(|r| r.info.kind == "duty" && r.info.period_ms.is_some())
    {
        let period_ms = r.info.period_ms.unwrap_or(0.0);
        for (gi, g) in run.manifest.backend.gpus.iter().enumerate() {
            let rises = crate::cycle::rises_of(edges, r, gi, &g.key);
            for inst in ["buffered_w", "instant_w"] {
                let Some(m) = model.path(&g.key, inst) else {
                    continue;
                };
                let raw = series.get(&g.key, inst);
                let shift = (m.latency_ms.unwrap_or(0.0) * 1e6) as i64;
                // Held fields: only the first read of each new value is a sample of the sensor.
                // This rung's readings, plus the one before (so its first change counts).
                let lo = raw
                    .partition_point(|x| x.0 < r.measure_from_ns + shift)
                    .saturating_sub(1);
                let window = &raw[lo..raw.partition_point(|x| x.0 < r.end_ns + shift).max(lo)];
                let updates;
                let samples: &[(i64, f64)] = if inst == "buffered_w" {
                    window
                } else {
                    updates = changes(window);
                    &updates
                };
                let f = fold_rung(samples, r, &rises, shift);
                let mut vis: Vec<f64> = span(raw, r.measure_from_ns, r.end_ns)
                    .iter()
                    .map(|x| x.1)
                    .collect();
                let visible = quantile(&mut vis.clone(), 0.9)
                    .zip(quantile(&mut vis, 0.1))
                    .map(|(a, b)| a - b);
                let w = m.window_ms.or(m.update_period_ms).unwrap_or(0.0);
                let gain = sinc(w / period_ms);
                let folded = f.usable().then(|| f.square_swing(r.info.duty)).flatten();
                let reconstructed = folded.filter(|_| gain.abs() >= 0.3).map(|s| s / gain.abs());
                let sh = f.usable().then(|| shape(&f, r.info.duty)).flatten();
                rows.push(RungPathRow {
                    rung_id: r.info.id,
                    rung: r.info.label.clone(),
                    period_ms,
                    duty: r.info.duty,
                    mode: r.info.mode.clone(),
                    gpu: g.key.clone(),
                    instrument: inst.into(),
                    verdict: raw_verdict(m, period_ms, r.info.duty).into(),
                    visible_swing_w: visible,
                    folded_swing_w: folded,
                    window_gain: Some(gain),
                    reconstructed_swing_w: reconstructed,
                    phase_coverage: f.coverage(),
                    cycles: f.cycles,
                    rise_ms: sh.map(|s| s.rise_ms),
                    fall_ms: sh.map(|s| s.fall_ms),
                    overshoot_w: sh.map(|s| s.overshoot_w),
                    overshoot_ms: sh.map(|s| s.overshoot_ms),
                    ramp_w_per_s: sh.map(|s| s.ramp_w_per_s).filter(|v| v.is_finite()),
                });
            }
        }
    }
    let answers = answers(run, &rows, visible_node_swing);
    let spectra = spectra(run, curve);
    SensorReport {
        model,
        rows,
        answers,
        spectra,
    }
}

fn answers(
    run: &Run,
    rows: &[RungPathRow],
    visible: &BTreeMap<u32, Option<f64>>,
) -> Vec<PeriodAnswer> {
    let n_gpus = run.manifest.backend.gpus.len();
    let mut out: Vec<PeriodAnswer> = Vec::new();
    for r in run.rungs.iter().filter(|r| {
        r.info.kind == "duty" && r.info.mode == "in_phase" && r.info.phase != CALIBRATION_PHASE
    }) {
        let mine: Vec<&RungPathRow> = rows.iter().filter(|x| x.rung_id == r.info.id).collect();
        // Prefer the buffered path; the instant field where the buffered window nulls the period.
        let mut pick = None;
        for inst in ["buffered_w", "instant_w"] {
            let per: Vec<&&RungPathRow> = mine.iter().filter(|x| x.instrument == inst).collect();
            if per.len() == n_gpus && per.iter().all(|x| x.reconstructed_swing_w.is_some()) {
                pick = Some((
                    inst,
                    per.iter()
                        .filter_map(|x| x.reconstructed_swing_w)
                        .sum::<f64>(),
                ));
                break;
            }
        }
        let raw = mine
            .iter()
            .find(|x| x.instrument == "buffered_w")
            .map(|x| x.verdict.clone())
            .unwrap_or_else(|| "aliased".into());
        // A path whose window passes this period but whose samples stayed
        // phase-locked to it (a period that is a multiple of the sampling
        // grid) could not be folded: say so instead of blaming the window.
        let locked = mine
            .iter()
            .filter(|x| x.window_gain.is_some_and(|g| g.abs() >= 0.3) && x.folded_swing_w.is_none())
            .map(|x| x.phase_coverage)
            .fold(None, |a: Option<f64>, c| Some(a.map_or(c, |a| a.max(c))));
        out.push(PeriodAnswer {
            rung: r.info.label.clone(),
            period_ms: r.info.period_ms.unwrap_or(0.0),
            visible_swing_w: visible.get(&r.info.id).copied().flatten(),
            reconstructed_swing_w: pick.map(|p| p.1),
            reconstructed_by: pick.map(|p| p.0.to_string()).unwrap_or_else(|| "none".into()),
            fraction_of_long_period: None,
            verdict: match (pick.is_some(), locked) {
                (true, _) => String::new(),
                (false, Some(cov)) => format!("not reconstructed: samples phase-locked to the period ({:.0} % of the cycle covered); raw readings {raw}", 100.0 * cov),
                (false, None) if raw == "aliased" => "aliased".into(),
                (false, None) => "instrument limit".into(),
            },
        });
    }
    // Judge each against the longest reconstructed period of the run
    // (mean over its repeats).
    let longest = out
        .iter()
        .filter(|a| a.reconstructed_swing_w.is_some())
        .map(|a| a.period_ms)
        .fold(0.0, f64::max);
    let refs: Vec<f64> = out
        .iter()
        .filter(|a| a.period_ms == longest)
        .filter_map(|a| a.reconstructed_swing_w)
        .collect();
    let reference = (!refs.is_empty()).then(|| refs.iter().sum::<f64>() / refs.len() as f64);
    for a in out.iter_mut() {
        if let (Some(rec), Some(refw)) = (a.reconstructed_swing_w, reference.as_ref()) {
            let frac = rec / refw;
            a.fraction_of_long_period = Some(frac);
            a.verdict = if frac >= 0.8 {
                "board follows".into()
            } else {
                format!(
                    "board attenuates ({:.0} % of the long-period swing)",
                    100.0 * frac
                )
            };
        }
    }
    out
}

fn spectra(run: &Run, curve: &crate::curve::NodeCurve) -> Vec<(u32, String, spectrum::Spectrum)> {
    let t = i64_column(&curve.df, "t_ns");
    let b = f64_column(&curve.df, "node_buffered_w");
    let step_s = run.grid_ns as f64 / 1e9;
    let mut out = Vec::new();
    for r in &run.rungs {
        let lo = t.partition_point(|x| *x < r.measure_from_ns);
        let hi = t.partition_point(|x| *x < r.end_ns);
        if hi <= lo || b.len() < hi {
            continue;
        }
        let v: Vec<f64> = b[lo..hi].iter().flatten().copied().collect();
        if let Some(s) = spectrum::spectrum(&v, step_s) {
            out.push((r.info.id, r.info.label.clone(), s));
        }
    }
    out
}

/// Writes `sensor.json`, `sensor_rungs.csv`, `sensor_periods.csv` and `spectrum.csv` under `report/`.
pub fn write_sensor(s: &SensorReport, report_dir: &Path) -> Result<Vec<PathBuf>, CollateError> {
    let json = report_dir.join("sensor.json");
    std::fs::write(
        &json,
        serde_json::to_string_pretty(&s.model).unwrap_or_default() + "\n",
    )
    .map_err(|e| CollateError::io(&json, e))?;
    let mut files = vec![json];
    if !s.rows.is_empty() {
        let p = report_dir.join("sensor_rungs.csv");
        crate::summary::write_csv(&s.rows, &p)?;
        files.push(p);
    }
    if !s.answers.is_empty() {
        let p = report_dir.join("sensor_periods.csv");
        crate::summary::write_csv(&s.answers, &p)?;
        files.push(p);
    }
    #[derive(Serialize)]
    struct Row<'a> {
        rung_id: u32,
        rung: &'a str,
        #[serde(flatten)]
        s: spectrum::Spectrum,
    }
    let rows: Vec<Row<'_>> = s
        .spectra
        .iter()
        .map(|(id, l, sp)| Row {
            rung_id: *id,
            rung: l,
            s: *sp,
        })
        .collect();
    if !rows.is_empty() {
        let p = report_dir.join("spectrum.csv");
        let mut w = csv::Writer::from_path(&p)
            .map_err(|e| CollateError::io(&p, std::io::Error::other(e)))?;
        for r in &rows {
            w.write_record([
                r.rung_id.to_string(),
                r.rung.to_string(),
                format!("{:.4}", r.s.dominant_hz),
                format!("{:.4}", r.s.share_0_1_to_2_hz),
                format!("{:.4}", r.s.share_2_to_20_hz),
                format!("{:.1}", r.s.nyquist_hz),
            ])
            .map_err(|e| CollateError::io(&p, std::io::Error::other(e)))?;
        }
        w.flush().map_err(|e| CollateError::io(&p, e))?;
        files.push(p);
    }
    Ok(files)
}
