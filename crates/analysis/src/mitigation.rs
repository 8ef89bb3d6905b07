//! What each mitigation buys and what it costs: every mitigation rung
//! (a floor, ramps, a hysteresis: NVIDIA's power-smoothing profile's
//! terms) set against the plain rung of the same phase, period, mode and
//! repeat. It buys a smaller node swing (the composed cycle's p90 − p10)
//! and costs energy (the extra mean power, from the energy counter, with
//! the buffered samples' figure beside it as a cross-check). Per GPU:
//! the floor achieved against the floor asked, and the ramp rates
//! achieved against those asked, from the GPU's own folded cycle.

use crate::cycle::{Bounds, NodeCycle};
use crate::grid::{self, Metric};
use crate::per_gpu::GpuRungRow;
use crate::summary::{Cycles, RungSummary};
use powerlab_campaign::Ramp;
use powerlab_core::smoothing::SmoothingSpec;
use powerlab_core::units::{PeriodMs, ms_to_ns_f64, ns_f64_to_ms, ns_to_ms};
use powerlab_rundir::Mode;
use powerlab_rundir::smoothing::{GpuSmoothingNote, SmoothingNote, smoothing_notes};
use powerlab_samples::load::Run;
use serde::Serialize;

/// A mitigation rung against its plain rung.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MitigationRow {
    /// The mitigation rung.
    pub rung_id: u32,
    /// Its label.
    pub label: String,
    /// Period asked, ms.
    pub period_ms: f64,
    /// In phase or staggered.
    pub mode: Mode,
    /// What it asked (per GPU).
    #[serde(skip)]
    pub spec: SmoothingSpec,
    /// Its label part (`floor60`, `up12k-down12k`).
    pub mitigation: String,
    /// Floor asked, % of each GPU's limit.
    pub floor_pct: f64,
    /// Ramp-up rate asked, W/s per GPU.
    pub ramp_up_w_per_s: Option<f64>,
    /// Ramp-down rate asked, W/s per GPU.
    pub ramp_down_w_per_s: Option<f64>,
    /// Ramp-down hysteresis asked, ms.
    pub ramp_down_hysteresis_ms: f64,
    /// The plain rung it is set against (None: the run has none).
    pub plain_label: Option<String>,
    /// Node swing (p90 − p10 of the composed cycle), W, and its 95 % interval.
    pub swing_w: Option<f64>,
    /// Half-width of the swing's 95 % interval, W.
    pub swing_ci95_w: Option<f64>,
    /// The plain rung's swing, W.
    pub plain_swing_w: Option<f64>,
    /// Half-width of the plain swing's 95 % interval, W.
    pub plain_swing_ci95_w: Option<f64>,
    /// What the mitigation cut from the swing, % of the plain swing.
    pub swing_cut_pct: Option<f64>,
    /// Its 95 % half-width, percentage points (both swings' intervals).
    pub swing_cut_ci95_pct: Option<f64>,
    /// Node mean over the measured window (the composed cycle's), W.
    pub mean_w: Option<f64>,
    /// The plain rung's, W.
    pub plain_mean_w: Option<f64>,
    /// Extra mean power against the plain rung, W.
    pub extra_w: Option<f64>,
    /// Its uncertainty, W: the larger of the energy counters'
    /// disagreement and the composed means' 95 % intervals in quadrature.
    pub extra_ci95_w: Option<f64>,
    /// Extra energy, % of the plain rung's.
    pub energy_pct: Option<f64>,
    /// Its 95 % half-width, percentage points.
    pub energy_ci95_pct: Option<f64>,
    /// The same extra from the GPUs' energy counters, W (cross-check; over
    /// the span between their first and last readings in the window).
    pub extra_counter_w: Option<f64>,
    /// Why a figure is missing, or what limits it (the caveats included).
    pub note: String,
    /// What qualifies its figures (cut short, a floor not held, a ramp
    /// filling its phase): the answer line carries them.
    #[serde(skip)]
    pub caveats: Vec<String>,
    /// Why the rung is not credited with a swing cut or an energy figure
    /// ([`not_credited`]): the wave it ran is not the one asked. Its
    /// comparisons with the plain rung are left empty, the reason in
    /// `note` and first in `caveats`; None when it is credited.
    #[serde(skip)]
    pub withheld: Option<String>,
}

impl MitigationRow {
    /// Leaves out every figure set against the plain rung (the swing cut,
    /// the extra power and energy), for `why`: its own swing and mean stay,
    /// as measured.
    fn withhold(&mut self, why: String) {
        self.swing_cut_pct = None;
        self.swing_cut_ci95_pct = None;
        self.extra_w = None;
        self.extra_ci95_w = None;
        self.energy_pct = None;
        self.energy_ci95_pct = None;
        self.extra_counter_w = None;
        self.caveats.insert(
            0,
            format!("NOT CREDITED (no swing cut, no energy figure): {why}"),
        );
        self.withheld = Some(why);
    }
}

/// A mitigation rung's off-phase drawing more than its on-phase by more
/// than this share of its plain rung's step is a wave upside down (a
/// floor near the work's own draw may sit a little above it, in noise).
pub const INVERTED_STEP_SHARE: f64 = 0.05;

/// Why mitigation rung `r` is not credited against its plain rung: the
/// wave it ran is not the one asked, so what it "cut" is not a
/// mitigation's doing. Its edges out of tolerance (or its on-phases short
/// of the sustained level: the rung's `edges_verdict`), or its node's
/// settled off level above its settled on level (a negative step) by more
/// than [`INVERTED_STEP_SHARE`] of the plain rung's step (of nothing,
/// without a plain step). None when neither.
pub fn not_credited(r: &RungSummary, plain: Option<&RungSummary>) -> Option<String> {
    let mut why = Vec::new();
    if let Some(v) = r.edges_verdict.as_deref().filter(|v| !v.is_empty()) {
        why.push(format!("its edges are out of tolerance ({v})"));
    }
    let plain_step = plain.and_then(|p| p.step_w).filter(|w| *w > 0.0);
    if let Some(step) = r.step_w
        && step < -INVERTED_STEP_SHARE * plain_step.unwrap_or(0.0)
    {
        why.push(format!(
            "its off-phase drew {:.0} W more than its on-phase (node step {step:.0} W{}): the wave ran upside down",
            -step,
            plain_step.map_or(String::new(), |p| format!(", the plain rung's {p:+.0} W"))
        ));
    }
    (!why.is_empty()).then(|| {
        format!(
            "{}; so the mitigation did not run as asked: its swing and mean stand as measured, and only a rerun that runs it as asked (ramps its phases let finish, edges within `[limits]`) can be credited",
            why.join("; ")
        )
    })
}

/// One GPU of a mitigation rung: asked against achieved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MitigationGpuRow {
    /// The mitigation rung.
    pub rung_id: u32,
    /// Its label.
    pub label: String,
    /// GPU key.
    pub gpu: String,
    /// The floor asked, W (`floor_pct` of the limit; None: no floor).
    pub asked_floor_w: Option<f64>,
    /// The floor held in the settled part of the off-phase, W.
    pub achieved_floor_w: Option<f64>,
    /// (achieved − asked) / asked, %.
    pub floor_error_pct: Option<f64>,
    /// The lowest 10 ms mean anywhere in the off-phase, W: what the supply
    /// sees as the step's foot (a floor that sags after the fall, or the
    /// work's tail still decaying at the rise, shows here).
    pub off_trough_w: Option<f64>,
    /// The ramp-up rate asked, W/s.
    pub asked_up_w_per_s: Option<f64>,
    /// The fastest 10–90 % rise of the GPU's cycle, W/s (see `up_lower_bound`).
    pub achieved_up_w_per_s: Option<f64>,
    /// Its ±, W/s.
    pub achieved_up_pm_w_per_s: Option<f64>,
    /// The rise is faster than the cycle resolves: a lower bound ("≥").
    pub up_lower_bound: bool,
    /// The ramp-down rate asked, W/s.
    pub asked_down_w_per_s: Option<f64>,
    /// The fastest 10–90 % fall, W/s.
    pub achieved_down_w_per_s: Option<f64>,
    /// Its ±, W/s.
    pub achieved_down_pm_w_per_s: Option<f64>,
    /// The fall is faster than the cycle resolves: a lower bound.
    pub down_lower_bound: bool,
    /// The time resolution the rates rest on, ms.
    pub rate_resolution_ms: Option<f64>,
    /// Idle draw measured by the calibration, W.
    pub idle_w: Option<f64>,
    /// The work's draw measured by the calibration, W.
    pub work_w: Option<f64>,
    /// The calibration's notes (a floor beyond reach, steps without samples).
    pub calibration_notes: String,
    /// Why a figure is missing.
    pub note: String,
}

/// Every mitigation rung of a node run, by rung and by GPU.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Mitigation {
    /// One row per mitigation rung.
    pub rows: Vec<MitigationRow>,
    /// One row per mitigation rung and GPU.
    pub gpus: Vec<MitigationGpuRow>,
}

/// A floor is read at least this long after the hysteresis and the ramp
/// down, ms (the buffered samples' window smears each edge by about half
/// of it).
const FLOOR_GUARD_MS: f64 = 10.0;
/// And ends this long before the next rise, ms: a sample placed there
/// (at the middle of its ~6 ms window) does not reach the rise.
const END_GUARD_MS: f64 = 4.0;

/// The mitigation rungs of `run` set against their plain rungs.
pub fn mitigation(
    run: &Run,
    rungs: &[RungSummary],
    cycles: &Cycles,
    per_gpu: &[GpuRungRow],
) -> Mitigation {
    let notes = smoothing_notes(&run.events);
    let mut out = Mitigation::default();
    for r in rungs.iter().filter(|r| r.rung.smoothed()) {
        let Some(spec) = r.rung.smoothing else {
            continue;
        };
        let plain = plain_of(r, rungs);
        let note = notes
            .iter()
            .rev()
            .find(|n| n.rung_id == r.rung.id && n.label == r.rung.label);
        let cycle = cycles.get(&r.rung.id).and_then(|c| c.as_ref().ok());
        let gpus: Vec<MitigationGpuRow> = run
            .manifest
            .backend
            .gpus
            .iter()
            .map(|g| {
                let cal = note.and_then(|n| n.gpus.iter().find(|x| x.gpu == g.key));
                let asked = (spec.floor_pct > 0.0).then(|| {
                    // From the spec and the manifest's limit, never the
                    // note's own figure; not below the calibrated idle.
                    let w = spec.floor_pct / 100.0 * g.power_limit_w;
                    cal.map_or(w, |c| w.max(c.idle_w))
                });
                gpu_row(r, &spec, (&g.key, asked), cal, cycle, note.is_some())
            })
            .collect();
        let mut row = row(r, plain, spec, per_gpu);
        row.caveats = caveats(r, plain, note, &gpus);
        if let Some(why) = not_credited(r, plain) {
            row.withhold(why);
        }
        if !row.caveats.is_empty() {
            let all = [row.note.as_str()]
                .into_iter()
                .filter(|n| !n.is_empty())
                .chain(row.caveats.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join("; ");
            row.note = all;
        }
        out.rows.push(row);
        out.gpus.extend(gpus);
    }
    out
}

/// What qualifies a mitigation rung's figures, for the reader who looks
/// at its row or its answer line first: a rung (or its plain rung) cut
/// short, a floor not held within 5 %, a ramp or hold that fills its
/// phase.
fn caveats(
    r: &RungSummary,
    plain: Option<&RungSummary>,
    note: Option<&SmoothingNote>,
    gpus: &[MitigationGpuRow],
) -> Vec<String> {
    let mut out = Vec::new();
    for (which, s) in [("the rung", Some(r)), ("its plain rung", plain)] {
        if let Some(why) = s.and_then(|s| s.incomplete.as_deref()) {
            out.push(format!("INCOMPLETE: {which}: {why}"));
        }
    }
    for g in gpus {
        if let (Some(e), Some(a), Some(h)) =
            (g.floor_error_pct, g.asked_floor_w, g.achieved_floor_w)
            && e.abs() > FLOOR_MET_PCT
        {
            out.push(format!(
                "floor not held: {} held {h:.0} W of {a:.0} W asked ({e:+.0} %)",
                g.gpu
            ));
        }
    }
    let period_ns = r.rung.period_ms.map_or(0.0, |p| ms_to_ns_f64(p.ms()));
    let on_ns = r.rung.duty * period_ns;
    for g in note.map_or(&[][..], |n| &n.gpus[..]) {
        if g.ramp_up_ns as f64 >= on_ns && on_ns > 0.0 {
            out.push(format!(
                "{}: the {:.1} ms ramp-up fills the {:.1} ms on-phase: the work never runs alone",
                g.gpu,
                ns_to_ms(g.ramp_up_ns),
                ns_f64_to_ms(on_ns)
            ));
        }
        let settle = (g.hysteresis_ns + g.ramp_down_ns) as f64;
        if g.spec.floor_pct > 0.0 && settle >= period_ns - on_ns && period_ns > 0.0 {
            out.push(format!(
                "{}: the hold and ramp down ({:.1} ms) fill the off-phase: the floor is never reached",
                g.gpu,
                ns_f64_to_ms(settle)
            ));
        }
    }
    out
}

/// A floor held within this share of the asked one (%) is met.
pub const FLOOR_MET_PCT: f64 = 5.0;

/// The plain rung of the same phase, requested period, mode and repeat.
fn plain_of<'a>(r: &RungSummary, rungs: &'a [RungSummary]) -> Option<&'a RungSummary> {
    rungs.iter().find(|p| {
        !p.rung.smoothed()
            && p.rung.kind == r.rung.kind
            && p.rung.phase == r.rung.phase
            && p.rung.mode == r.rung.mode
            && p.rung.repeat == r.rung.repeat
            && p.rung.requested_period_ms() == r.rung.requested_period_ms()
            && p.rung.duty == r.rung.duty
    })
}

/// The 95 % half-width of 100 × (p − s) / p, percentage points, from
/// the swings' own (first-order propagation).
fn cut_half_width(s: Option<(f64, f64)>, p: Option<(f64, f64)>) -> Option<f64> {
    let ((s, hs), (p, hp)) = (s?, p?);
    (p > 0.0).then(|| 100.0 * (hs * hs + (s / p * hp).powi(2)).sqrt() / p)
}

/// Half-width of an interval.
fn half(b: Option<Bounds>) -> Option<f64> {
    b.map(|b| b.width() / 2.0)
}

/// Node mean of rung `id` from the GPUs' energy counters (every GPU's;
/// over the span between each counter's first and last reading inside
/// the window, which need not hold whole cycles).
fn counter_mean(id: u32, per_gpu: &[GpuRungRow]) -> Option<f64> {
    let rows: Vec<&GpuRungRow> = per_gpu.iter().filter(|g| g.rung_id == id).collect();
    (!rows.is_empty())
        .then(|| rows.iter().map(|g| g.counter_mean_w).sum::<Option<f64>>())
        .flatten()
}

/// One mitigation rung's row.
fn row(
    r: &RungSummary,
    plain: Option<&RungSummary>,
    spec: SmoothingSpec,
    per_gpu: &[GpuRungRow],
) -> MitigationRow {
    // The composed cycles' means cover the measured window exactly; the
    // energy counters read about once a second cover whatever whole
    // readings fall inside it (10.5 of 13 cycles at 500 ms on an H200):
    // the cross-check, and their disagreement bounds the figure.
    let (mean_w, plain_mean_w) = (r.mean_w, plain.and_then(|p| p.mean_w));
    let extra_w = mean_w.zip(plain_mean_w).map(|(a, b)| a - b);
    let extra_counter_w = counter_mean(r.rung.id, per_gpu)
        .zip(plain.and_then(|p| counter_mean(p.rung.id, per_gpu)))
        .map(|(a, b)| a - b);
    let composed = half(r.mean_ci95)
        .zip(plain.and_then(|p| half(p.mean_ci95)))
        .map(|(a, b)| a.hypot(b));
    let disagreement = extra_w.zip(extra_counter_w).map(|(a, b)| (a - b).abs());
    let extra_ci95_w = match (composed, disagreement) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    let plain_swing_w = plain.and_then(|p| p.swing_w);
    let mut note = Vec::new();
    if plain.is_none() {
        note.push(
            "no plain rung of the same period, mode and repeat: nothing to cost it against"
                .to_string(),
        );
    }
    if r.swing_w.is_none() {
        note.push(
            r.verdict
                .clone()
                .unwrap_or_else(|| "no composed cycle: no swing".into()),
        );
    }
    MitigationRow {
        rung_id: r.rung.id,
        label: r.rung.label.clone(),
        period_ms: r.rung.requested_period_ms().map_or(0.0, PeriodMs::ms),
        mode: r.rung.mode,
        spec,
        mitigation: spec.label(),
        floor_pct: spec.floor_pct,
        ramp_up_w_per_s: spec.ramp_up_w_per_s,
        ramp_down_w_per_s: spec.ramp_down_w_per_s,
        ramp_down_hysteresis_ms: spec.ramp_down_hysteresis_ms,
        plain_label: plain.map(|p| p.rung.label.clone()),
        swing_w: r.swing_w,
        swing_ci95_w: half(r.swing_ci95),
        plain_swing_w,
        plain_swing_ci95_w: plain.and_then(|p| half(p.swing_ci95)),
        swing_cut_pct: r
            .swing_w
            .zip(plain_swing_w)
            .filter(|(_, p)| *p > 0.0)
            .map(|(s, p)| 100.0 * (p - s) / p),
        swing_cut_ci95_pct: cut_half_width(
            r.swing_w.zip(half(r.swing_ci95)),
            plain_swing_w.zip(plain.and_then(|p| half(p.swing_ci95))),
        ),
        mean_w,
        plain_mean_w,
        extra_w,
        extra_ci95_w,
        energy_pct: extra_w
            .zip(plain_mean_w)
            .filter(|(_, p)| *p > 0.0)
            .map(|(e, p)| 100.0 * e / p),
        energy_ci95_pct: extra_ci95_w
            .zip(plain_mean_w)
            .filter(|(_, p)| *p > 0.0)
            .map(|(e, p)| 100.0 * e / p),
        extra_counter_w,
        note: note.join("; "),
        caveats: Vec::new(),
        withheld: None,
    }
}

/// One GPU of a mitigation rung: the floor asked and achieved.
fn gpu_row(
    r: &RungSummary,
    spec: &SmoothingSpec,
    (gpu, asked_floor_w): (&str, Option<f64>),
    cal: Option<&GpuSmoothingNote>,
    cycle: Option<&NodeCycle>,
    noted: bool,
) -> MitigationGpuRow {
    let mut note = Vec::new();
    if cal.is_none() {
        note.push(if noted {
            format!("the calibration note has no entry for {gpu}")
        } else {
            "no calibration note for this rung (events.jsonl): asked figures unknown".to_string()
        });
    }
    let values = cycle.and_then(|c| c.gpu_cycles.iter().find(|(g, _)| g == gpu).map(|x| &x.1));
    let levels = cycle.and_then(|c| c.gpu_levels.iter().find(|(g, _)| g == gpu).map(|x| &x.1));
    let period_ms = cycle.map_or(0.0, |c| c.period_ms);
    let settled_ms = cal.map_or(spec.ramp_down_hysteresis_ms, |c| {
        ns_to_ms(c.hysteresis_ns + c.ramp_down_ns)
    });
    let achieved_floor_w = levels.and_then(|v| {
        let f = off_plateau(v, r.rung.duty, period_ms, settled_ms);
        if f.is_none() {
            note.push(format!(
                "the off-phase holds no settled floor after the {settled_ms:.1} ms hysteresis and ramp down"
            ));
        }
        f
    });
    if values.is_none() {
        note.push("no composed cycle: no floor, no rates".into());
    }
    let rate = |dir: Ramp| {
        let (Some(c), Some(v)) = (cycle, values) else {
            return None;
        };
        let metric = match dir {
            Ramp::Up => Metric::RampUp,
            Ramp::Down => Metric::RampDown,
        };
        let res_ms = grid::cycle_resolution_ms(c);
        Some(grid::edge_rate(
            v,
            c.period_ms,
            res_ms,
            c.interval.as_ref(),
            metric,
            dir,
        ))
    };
    let (up, down) = (rate(Ramp::Up), rate(Ramp::Down));
    for f in up.iter().chain(&down) {
        if let Some(w) = &f.withheld {
            note.push(format!("{}: {w}", f.metric.name()));
        }
    }
    MitigationGpuRow {
        rung_id: r.rung.id,
        label: r.rung.label.clone(),
        gpu: gpu.to_string(),
        asked_floor_w,
        achieved_floor_w,
        floor_error_pct: asked_floor_w
            .zip(achieved_floor_w)
            .map(|(a, b)| 100.0 * (b - a) / a),
        off_trough_w: levels.and_then(|v| off_trough(v, r.rung.duty, period_ms)),
        asked_up_w_per_s: spec.ramp_up_w_per_s,
        achieved_up_w_per_s: up.as_ref().and_then(|f| f.value),
        achieved_up_pm_w_per_s: up.as_ref().and_then(|f| f.plus_minus),
        up_lower_bound: up.as_ref().is_some_and(|f| f.lower_bound),
        asked_down_w_per_s: spec.ramp_down_w_per_s,
        achieved_down_w_per_s: down.as_ref().and_then(|f| f.value),
        achieved_down_pm_w_per_s: down.as_ref().and_then(|f| f.plus_minus),
        down_lower_bound: down.as_ref().is_some_and(|f| f.lower_bound),
        rate_resolution_ms: up.as_ref().and_then(|f| f.resolution_ms),
        idle_w: cal.map(|c| c.idle_w),
        work_w: cal.map(|c| c.work_w),
        calibration_notes: cal.map(|c| c.notes.join("; ")).unwrap_or_default(),
        note: note.join("; "),
    }
}

/// The mean of a GPU's cycle `v` (phase 0 at its rise, `period_ms` long)
/// over the second half of its off-phase after the hysteresis and the
/// ramp down (`settled_ms` after the fall; the work's tail still decays
/// in the first half: 60 W above idle 25 ms into an H200's 100 ms
/// rung), at least [`FLOOR_GUARD_MS`] after them and [`END_GUARD_MS`]
/// before the next rise; None when nothing is left. Where the off-phase
/// still drifts there (the work's tail, the cap's clocks recovering) the
/// figure is the mean of a slope: `off_trough` gives its foot.
pub fn off_plateau(v: &[f64], duty: f64, period_ms: f64, settled_ms: f64) -> Option<f64> {
    let m = v.len();
    if m == 0 || period_ms <= 0.0 {
        return None;
    }
    let at = |ms: f64| ((ms / period_ms) * m as f64).round() as usize;
    let fall_ms = duty * period_ms;
    let rest_ms = period_ms - fall_ms - settled_ms;
    let from = at(fall_ms + settled_ms + (rest_ms / 2.0).max(FLOOR_GUARD_MS));
    let to = at(period_ms - END_GUARD_MS).min(m);
    (to > from).then(|| v[from..to].iter().sum::<f64>() / (to - from) as f64)
}

/// The window of [`off_trough`], ms.
const TROUGH_WINDOW_MS: f64 = 10.0;

/// The lowest [`TROUGH_WINDOW_MS`] mean of a GPU's cycle `v` (phase 0 at
/// its rise) whose window lies in the off-phase, [`FLOOR_GUARD_MS`] after
/// the fall and [`END_GUARD_MS`] before the rise; None when none fits.
pub fn off_trough(v: &[f64], duty: f64, period_ms: f64) -> Option<f64> {
    let m = v.len();
    if m == 0 || period_ms <= 0.0 {
        return None;
    }
    let at = |ms: f64| ((ms / period_ms) * m as f64).round() as usize;
    let (from, to) = (
        at(duty * period_ms + FLOOR_GUARD_MS),
        at(period_ms - END_GUARD_MS).min(m),
    );
    let w = at(TROUGH_WINDOW_MS).max(1);
    (from + w <= to).then(|| {
        (from..=to - w)
            .map(|a| v[a..a + w].iter().sum::<f64>() / w as f64)
            .fold(f64::INFINITY, f64::min)
    })
}

#[cfg(test)]
mod tests;
