//! Calibration: the sensor model fitted on a run's own calibration rungs.
//! The long step rungs give each path's window and latency (a step fit on
//! the readings after every recorded fall, and the same fit on independent
//! groups of falls for its uncertainty); a fit that is not physical is
//! refused with the reason; the short rungs are aliasing probes.

use super::fit;
use super::model::{GpuSensor, MeasuredGpu, ModelKind, PathModel, Probe, SensorModel};
use powerlab_campaign::CALIBRATION_PHASE;
use powerlab_core::Instrument;
use powerlab_core::shape::EdgeKind;
use powerlab_core::units::PeriodMs;
use powerlab_core::units::{ms_to_ns_trunc, ns_to_ms};
use powerlab_samples::load::{Run, RungWindow};
use powerlab_samples::series::{EdgeIndex, SeriesSet, changes, median_spacing_ms, span};
use powerlab_samples::stats::{mean_sd_ci, median, quantile};

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
    let after = |f: i64, ms: f64| f + ms_to_ns_trunc(ms);
    for &f in falls {
        let at = |a: f64, b: f64| -> Vec<f64> {
            span(levels, after(f, a), after(f, b))
                .iter()
                .map(|x| x.1)
                .collect()
        };
        let (Some(on), Some(off)) = (
            median(&at(-0.45 * h, -0.1 * h)),
            median(&at(0.6 * h, 0.95 * h)),
        ) else {
            continue;
        };
        if (on - off).abs() < 1.0 {
            continue;
        }
        heights.push(on - off);
        for (t, v) in span(s, after(f, -0.2 * h), after(f, 0.95 * h)) {
            pts.push((ns_to_ms(*t - f), (v - off) / (on - off)));
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

/// The run's calibration rungs, in run order.
fn calibration_rungs(run: &Run) -> Vec<&RungWindow> {
    run.rungs
        .iter()
        .filter(|r| r.info.phase == CALIBRATION_PHASE)
        .collect()
}

/// The instruments calibrated, in this order (the buffered path first: its
/// board fall time serves the held paths' fits), and whether each one's
/// readings are timestamped.
const INSTRUMENTS: [(Instrument, bool); 4] = [
    (Instrument::BufferedW, true),
    (Instrument::InstantW, false),
    (Instrument::AverageW, false),
    (Instrument::EnergyMj, false),
];

/// Derives the sensor model from the run's calibration rungs (None without them).
pub fn calibrate(run: &Run, series: &SeriesSet, edges: &EdgeIndex) -> Option<SensorModel> {
    let cal = calibration_rungs(run);
    let steps = step_rungs(&cal)?;
    let gpus = run
        .manifest
        .backend
        .gpus
        .iter()
        .map(|g| gpu_sensor(g.key.as_str(), series, edges, &cal, steps))
        .collect();
    let measured_on = run
        .manifest
        .backend
        .gpus
        .iter()
        .map(|g| MeasuredGpu {
            gpu: g.key.clone(),
            name: g.name.clone(),
            uuid: g.uuid.clone(),
        })
        .collect();
    Some(SensorModel {
        source: "calibrated in this run".into(),
        kind: ModelKind::Calibrated,
        measured_on,
        gpus,
    })
}

/// The step rungs the paths are fitted on: the long calibration rungs, the
/// shortest for the fast paths, the longest for the 1 s average (None
/// without a long one).
fn step_rungs<'a>(cal: &[&'a RungWindow]) -> Option<(&'a RungWindow, &'a RungWindow)> {
    let mut steps: Vec<&RungWindow> = cal
        .iter()
        .copied()
        .filter(|r| {
            r.info
                .period_ms
                .map(PeriodMs::ms)
                .is_some_and(|p| p >= 300.0)
        })
        .collect();
    steps.sort_by(|a, b| {
        a.info
            .period_ms
            .map(PeriodMs::ms)
            .unwrap_or(0.0)
            .total_cmp(&b.info.period_ms.map(PeriodMs::ms).unwrap_or(0.0))
    });
    Some((*steps.first()?, *steps.last()?))
}

/// One GPU's calibrated paths and aliasing probes: every instrument with at
/// least 10 readings, fitted on the `(fast, slow)` step rung's falls (a
/// counter: its window is its update period).
fn gpu_sensor(
    key: &str,
    series: &SeriesSet,
    edges: &EdgeIndex,
    cal: &[&RungWindow],
    (fast, slow): (&RungWindow, &RungWindow),
) -> GpuSensor {
    let mut paths = Vec::new();
    let mut probes = Vec::new();
    let mut board_tau = None;
    for (inst, timestamped) in INSTRUMENTS {
        let s = series.get(key, inst);
        if s.len() < 10 {
            continue;
        }
        let mut m = path_model(inst, s, timestamped);
        if inst == Instrument::EnergyMj {
            // A counter's window is its own update period (when measured).
            m.window_ms = m.update_period_ms;
        } else {
            let rung = if inst == Instrument::AverageW {
                slow
            } else {
                fast
            };
            let falls = edges.get(rung.info.id, key, EdgeKind::Fall);
            let heights = fit_step(&mut m, s, falls, rung, timestamped, board_tau);
            if m.board_fall_tau_ms.is_some() {
                board_tau = m.board_fall_tau_ms;
            }
            if let (Some(height), Some(w)) = (median(&heights), m.window_ms) {
                probes.extend(aliasing_probes(cal, s, inst, height, w));
            }
        }
        paths.push(m);
    }
    GpuSensor {
        gpu: key.into(),
        paths,
        probes,
    }
}

/// A path's model before any fit: how often `s` was read and how often
/// its value updates. A timestamped path updates with every sample. A held
/// path whose every read shows a new value updates at least as often as it
/// was read: its period is not measured.
fn path_model(inst: Instrument, s: &[(i64, f64)], timestamped: bool) -> PathModel {
    let read = median_spacing_ms(s);
    let update = if timestamped {
        read
    } else {
        median_spacing_ms(&changes(s)).filter(|u| read.is_none_or(|r| *u > 1.5 * r))
    };
    PathModel {
        instrument: inst,
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
    }
}

/// Fits the step of path `m` (its readings `s`) after the `falls` of the
/// step rung `rung`: its window and latency, their 95 % intervals from the
/// same fit on [`CAL_GROUPS`] independent groups of falls, and the reason
/// a fit is refused. A held field (not `timestamped`) is fitted on its
/// updates only (the first read of each new value), which removes the hold
/// from the model, with the board's fall time `board_tau` (from the
/// buffered path). Returns the step heights of the falls.
fn fit_step(
    m: &mut PathModel,
    s: &[(i64, f64)],
    falls: &[i64],
    rung: &RungWindow,
    timestamped: bool,
    board_tau: Option<f64>,
) -> Vec<f64> {
    let half = rung.info.period_ms.map(PeriodMs::ms).unwrap_or(1000.0) / 2.0;
    let updates;
    let fit_on: &[(i64, f64)] = if timestamped {
        s
    } else {
        updates = changes(s);
        &updates
    };
    let (pts, heights) = step_points(fit_on, s, falls, half);
    let (tau, update) = (board_tau.unwrap_or(0.0), m.update_period_ms);
    let fit_pts = |p: &[(f64, f64)]| {
        if timestamped {
            fit::fit_timestamped(p, 0.4 * half)
        } else {
            fit::fit_updates(p, tau, 0.9 * half, update.unwrap_or(100.0).max(20.0))
        }
    };
    if pts.len() < 20 {
        // No fit: the path's window and latency are unknown, and the
        // fallback's values judge it, said as a refusal.
        m.refused = Some(format!(
            "too few readings after the falls to fit the step ({} points, 20 needed)",
            pts.len()
        ));
        return heights;
    }
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
        let ci = |v: Vec<f64>| mean_sd_ci(&v).2;
        m.window_ms_ci95 = ci(groups.iter().map(|g| g.window_ms).collect());
        m.latency_ms_ci95 = ci(groups.iter().map(|g| g.latency_ms).collect());
    }
    m.refused = unphysical(&f, m.window_ms_ci95, m.latency_ms_ci95);
    if timestamped && m.refused.is_none() {
        m.board_fall_tau_ms = Some(f.tau_ms);
    }
    heights
}

/// Aliasing probes of path `inst` (its readings `s`) on the short
/// calibration rungs: the observed swing (p99 − p1) over the step
/// `height`, against a `w` ms boxcar's prediction.
fn aliasing_probes(
    cal: &[&RungWindow],
    s: &[(i64, f64)],
    inst: Instrument,
    height: f64,
    w: f64,
) -> Vec<Probe> {
    let mut probes = Vec::new();
    for r in cal.iter().filter(|r| {
        r.info
            .period_ms
            .map(PeriodMs::ms)
            .is_some_and(|p| p < 200.0)
    }) {
        let p = r.info.period_ms.map(PeriodMs::ms).unwrap_or(0.0);
        let v: Vec<f64> = span(s, r.measure_from_ns, r.end_ns)
            .iter()
            .map(|x| x.1)
            .collect();
        if let (Some(lo), Some(hi)) = (quantile(&v, 0.01), quantile(&v, 0.99)) {
            probes.push(Probe {
                instrument: inst,
                period_ms: p,
                observed_ratio: (hi - lo) / height,
                predicted_ratio: boxcar_ratio(w, p),
            });
        }
    }
    probes
}
