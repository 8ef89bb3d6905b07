//! Verdicts: what each path's raw readings can make of each duty rung's
//! period (resolvable, instrument limit, aliased), each rung folded on its
//! recorded rising edges per GPU and path, the node's answer per period
//! (board follows, board attenuates, instrument limit, aliased) and the
//! spectrum of each rung's node curve.

use super::fold::{Folded, fold, shape, sinc};
use super::model::{PathModel, SensorModel};
use super::spectrum;
use crate::curve::NodeCurve;
use crate::cycle::rises_of;
use powerlab_campaign::CALIBRATION_PHASE;
use powerlab_core::Instrument;
use powerlab_core::units::PeriodMs;
use powerlab_core::units::{ms_to_ns_trunc, ns_to_ms, ns_to_s};
use powerlab_rundir::{Mode, PhaseKind};
use powerlab_samples::load::{Run, RungWindow};
use powerlab_samples::series::{EdgeIndex, SeriesSet, changes, span};
use powerlab_samples::stats::quantile;
use serde::Serialize;
use std::collections::BTreeMap;

/// What a path's raw readings can make of a duty rung's period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RawVerdict {
    /// The period is at least two updates and its shorter half two windows.
    Resolvable,
    /// The path's window is too wide for the rung's shorter half.
    InstrumentLimit,
    /// The period is shorter than two updates of the path.
    Aliased,
}

impl std::fmt::Display for RawVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Resolvable => "resolvable",
            Self::InstrumentLimit => "instrument limit",
            Self::Aliased => "aliased",
        })
    }
}

impl Serialize for RawVerdict {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// What a path can make of a square wave of `period_ms` and `duty`.
pub fn raw_verdict(m: &PathModel, period_ms: f64, duty: f64) -> RawVerdict {
    let u = m.update_period_ms.unwrap_or(100.0);
    let w = m.window_ms.unwrap_or(u);
    if period_ms < 2.0 * u {
        RawVerdict::Aliased
    } else if duty.min(1.0 - duty) * period_ms < 2.0 * w {
        RawVerdict::InstrumentLimit
    } else {
        RawVerdict::Resolvable
    }
}

/// The node's answer for one period: how the board follows it, or why
/// no path reconstructed it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PeriodVerdict {
    /// Reconstructed, with no reconstructed long period to judge it
    /// against (written as nothing).
    Unjudged,
    /// The board follows: at least 80 % of the long-period swing.
    Follows,
    /// The board attenuates: this share of the long-period swing.
    Attenuates(f64),
    /// Not reconstructed: the samples stayed phase-locked to the period,
    /// covering this share of the cycle; the buffered path's raw verdict.
    PhaseLocked(f64, RawVerdict),
    /// Not reconstructed: the buffered readings alias the period.
    Aliased,
    /// Not reconstructed: no path's window passes the period.
    InstrumentLimit,
}

impl std::fmt::Display for PeriodVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unjudged => Ok(()),
            Self::Follows => f.write_str("board follows"),
            Self::Attenuates(frac) => write!(
                f,
                "board attenuates ({:.0} % of the long-period swing)",
                100.0 * frac
            ),
            Self::PhaseLocked(cov, raw) => write!(
                f,
                "not reconstructed: samples phase-locked to the period ({:.0} % of the cycle covered); raw readings {raw}",
                100.0 * cov
            ),
            Self::Aliased => f.write_str("aliased"),
            Self::InstrumentLimit => f.write_str("instrument limit"),
        }
    }
}

impl Serialize for PeriodVerdict {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// One duty rung seen by one path of one GPU.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RungPathRow {
    /// Rung id.
    pub rung_id: u32,
    /// The rung's label.
    pub rung: String,
    /// Period, ms.
    pub period_ms: f64,
    /// The rung's duty fraction: the share of each period the GPUs run.
    pub duty: f64,
    /// In phase or staggered.
    pub mode: Mode,
    /// GPU key.
    pub gpu: String,
    /// The power path read: `buffered_w` or `instant_w`.
    pub instrument: Instrument,
    /// resolvable / instrument limit / aliased (the raw readings).
    pub verdict: RawVerdict,
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
    pub verdict: PeriodVerdict,
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

/// Folds samples `s` of rung `r` on its rises over its period of `period_ms`.
fn fold_rung(
    s: &[(i64, f64)],
    r: &RungWindow,
    period_ms: f64,
    rises: &[i64],
    shift_ns: i64,
) -> Folded {
    let p = ms_to_ns_trunc(period_ms);
    let bins = (ns_to_ms(p).round() as usize).clamp(8, 200);
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
    curve: &NodeCurve,
    visible_node_swing: &BTreeMap<u32, Option<f64>>,
) -> SensorReport {
    // Every duty rung states its period (`load::load_run` refuses one that does not).
    let duty: Vec<(&RungWindow, f64)> = run
        .rungs
        .iter()
        .filter(|r| r.info.kind == PhaseKind::Duty)
        .filter_map(|r| r.info.period_ms.map(PeriodMs::ms).map(|p| (r, p)))
        .collect();
    // Rung by rung on every core, in the rungs' order.
    let rows: Vec<RungPathRow> =
        powerlab_samples::parallel::map_in_order(&duty, |&(r, period_ms)| {
            rung_rows(run, series, edges, &model, r, period_ms)
        })
        .into_iter()
        .flatten()
        .collect();
    let answers = answers(run, &rows, visible_node_swing);
    let spectra = spectra(run, curve);
    SensorReport {
        model,
        rows,
        answers,
        spectra,
    }
}

/// Every GPU's and instrument's row of one duty rung of `period_ms`.
fn rung_rows(
    run: &Run,
    series: &SeriesSet,
    edges: &EdgeIndex,
    model: &SensorModel,
    r: &RungWindow,
    period_ms: f64,
) -> Vec<RungPathRow> {
    let mut rows = Vec::new();
    for (gi, g) in run.manifest.backend.gpus.iter().enumerate() {
        let rises = rises_of(edges, r, gi, &g.key);
        for inst in [Instrument::BufferedW, Instrument::InstantW] {
            let Some(m) = model.path(&g.key, inst) else {
                continue;
            };
            let raw = series.get(&g.key, inst);
            let shift = ms_to_ns_trunc(m.latency_ms.unwrap_or(0.0));
            // Held fields: only the first read of each new value is a sample of the sensor.
            // This rung's readings, plus the one before (so its first change counts).
            let lo = raw
                .partition_point(|x| x.0 < r.measure_from_ns + shift)
                .saturating_sub(1);
            let window = &raw[lo..raw.partition_point(|x| x.0 < r.end_ns + shift).max(lo)];
            let updates;
            let samples: &[(i64, f64)] = if inst == Instrument::BufferedW {
                window
            } else {
                updates = changes(window);
                &updates
            };
            let f = fold_rung(samples, r, period_ms, &rises, shift);
            let vis: Vec<f64> = span(raw, r.measure_from_ns, r.end_ns)
                .iter()
                .map(|x| x.1)
                .collect();
            let visible = quantile(&vis, 0.9)
                .zip(quantile(&vis, 0.1))
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
                mode: r.info.mode,
                gpu: g.key.clone(),
                instrument: inst,
                verdict: raw_verdict(m, period_ms, r.info.duty),
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
    rows
}

fn answers(
    run: &Run,
    rows: &[RungPathRow],
    visible: &BTreeMap<u32, Option<f64>>,
) -> Vec<PeriodAnswer> {
    let n_gpus = run.manifest.backend.gpus.len();
    let mut out: Vec<PeriodAnswer> = Vec::new();
    for r in run.rungs.iter().filter(|r| {
        r.info.kind == PhaseKind::Duty
            && r.info.mode == Mode::InPhase
            && r.info.phase != CALIBRATION_PHASE
            && !r.info.smoothed()
    }) {
        let mine: Vec<&RungPathRow> = rows.iter().filter(|x| x.rung_id == r.info.id).collect();
        // Prefer the buffered path; the instant field where the buffered window nulls the period.
        let mut pick = None;
        for inst in [Instrument::BufferedW, Instrument::InstantW] {
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
            .find(|x| x.instrument == Instrument::BufferedW)
            .map_or(RawVerdict::Aliased, |x| x.verdict);
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
            period_ms: r.info.period_ms.map(PeriodMs::ms).unwrap_or(0.0),
            visible_swing_w: visible.get(&r.info.id).copied().flatten(),
            reconstructed_swing_w: pick.map(|p| p.1),
            reconstructed_by: pick
                .map(|p| p.0.to_string())
                .unwrap_or_else(|| "none".into()),
            fraction_of_long_period: None,
            verdict: match (pick.is_some(), locked, raw) {
                (true, _, _) => PeriodVerdict::Unjudged,
                (false, Some(cov), raw) => PeriodVerdict::PhaseLocked(cov, raw),
                (false, None, RawVerdict::Aliased) => PeriodVerdict::Aliased,
                (false, None, _) => PeriodVerdict::InstrumentLimit,
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
                PeriodVerdict::Follows
            } else {
                PeriodVerdict::Attenuates(frac)
            };
        }
    }
    out
}

fn spectra(run: &Run, curve: &NodeCurve) -> Vec<(u32, String, spectrum::Spectrum)> {
    let (t, b) = (&curve.columns().t_ns, &curve.columns().buffered_w);
    let step_s = ns_to_s(run.grid_ns);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raw_verdict_writes_the_words_it_always_wrote() {
        let m = super::super::model::path_model(Instrument::BufferedW, 100.0, 25.0, None, 0.0);
        assert_eq!(raw_verdict(&m, 150.0, 0.5), RawVerdict::Aliased);
        assert_eq!(raw_verdict(&m, 200.0, 0.1), RawVerdict::InstrumentLimit);
        assert_eq!(raw_verdict(&m, 2000.0, 0.5), RawVerdict::Resolvable);
        let words: Vec<String> = [
            RawVerdict::Resolvable,
            RawVerdict::InstrumentLimit,
            RawVerdict::Aliased,
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        assert_eq!(words, ["resolvable", "instrument limit", "aliased"]);
    }

    #[test]
    fn a_period_verdict_writes_the_words_it_always_wrote() {
        assert_eq!(PeriodVerdict::Unjudged.to_string(), "");
        assert_eq!(PeriodVerdict::Follows.to_string(), "board follows");
        assert_eq!(
            PeriodVerdict::Attenuates(0.426).to_string(),
            "board attenuates (43 % of the long-period swing)"
        );
        assert_eq!(
            PeriodVerdict::PhaseLocked(0.25, RawVerdict::Resolvable).to_string(),
            "not reconstructed: samples phase-locked to the period (25 % of the cycle covered); raw readings resolvable"
        );
        assert_eq!(PeriodVerdict::Aliased.to_string(), "aliased");
        assert_eq!(
            PeriodVerdict::InstrumentLimit.to_string(),
            "instrument limit"
        );
    }
}
