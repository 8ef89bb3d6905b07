//! Statistics across repeats: rungs of one configuration grouped by
//! [`GroupKey`] and summarised as mean, SD and 95 % half-width.

use super::RungSummary;
use powerlab_core::units::PeriodMs;
use powerlab_core::units::{fraction_to_ppm, ms_to_us_rounded};
use powerlab_rundir::{Mode, PhaseKind};
use powerlab_samples::stats::{mean_sd_ci, r3};

/// Statistics across repeats of one rung configuration.
#[derive(Debug, Clone, serde::Serialize, PartialEq)]
pub struct RepeatStats {
    /// The rung's label without its `/r<repeat>` suffix (what the repeats
    /// have in common).
    pub label: String,
    /// The campaign phase the repeats belong to.
    pub phase: String,
    /// The rungs' kind (`idle`, `sustained`, `duty`, `nccl`, `soak` or
    /// `ramp_up`).
    pub kind: PhaseKind,
    /// The rungs' mode: `in_phase` or `staggered`.
    pub mode: Mode,
    /// Period the campaign asked for, ms (repeats are grouped by it).
    pub period_ms: Option<f64>,
    /// Period the GPUs ran, ms.
    pub achieved_period_ms: Option<f64>,
    /// The rungs' duty fraction: the share of each period the GPUs run
    /// (that of the group's first repeat).
    pub duty: f64,
    /// Whether the rungs ran a mitigation (their label names it; not a
    /// column).
    #[serde(skip)]
    pub smoothed: bool,
    /// Repeats with a value.
    pub n: usize,
    /// Mean of the rung means, W.
    pub mean_w: Option<f64>,
    /// SD of the rung means.
    pub mean_w_sd: Option<f64>,
    /// 95% CI half-width of the mean.
    pub mean_w_ci95: Option<f64>,
    /// Mean peak, W.
    pub peak_w: Option<f64>,
    /// SD of peaks.
    pub peak_w_sd: Option<f64>,
    /// 95% CI half-width.
    pub peak_w_ci95: Option<f64>,
    /// Mean spread, W.
    pub spread_w: Option<f64>,
    /// SD of spreads.
    pub spread_w_sd: Option<f64>,
    /// 95% CI half-width.
    pub spread_w_ci95: Option<f64>,
    /// Mean swing, W.
    pub swing_w: Option<f64>,
    /// SD of swings.
    pub swing_w_sd: Option<f64>,
    /// 95% CI half-width.
    pub swing_w_ci95: Option<f64>,
    /// Mean of the raw (sample-and-hold) spreads, W: what NVML sampled.
    pub raw_spread_w: Option<f64>,
    /// Mean of the raw swings, W.
    pub raw_swing_w: Option<f64>,
}

/// Repeats of one configuration share their label (less the `/r<repeat>`
/// suffix), phase, kind, mode, requested period and duty. Two rungs of one
/// phase that differ in any of these (the NCCL sweep and the fabric rung;
/// two duty fractions at one period) are never pooled as repeats.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct GroupKey {
    label: String,
    pub(super) phase: String,
    pub(super) kind: PhaseKind,
    pub(super) mode: Mode,
    pub(super) period_us: Option<i64>,
    pub(super) duty_ppm: i64,
    /// The mitigation's label part (`floor60`; None: a plain rung).
    pub(super) smoothing: Option<String>,
}

/// The label shared by every repeat of a rung: `swing/p100ms/in_phase/r2`
/// → `swing/p100ms/in_phase`.
pub fn base_label(r: &RungSummary) -> String {
    base_label_of(&r.rung.label, r.rung.repeat)
}

/// [`base_label`] of a rung known by its label and repeat number (a row
/// read back from `summary.csv`).
pub fn base_label_of(label: &str, repeat: u32) -> String {
    let suffix = format!("/r{repeat}");
    label.strip_suffix(&suffix).unwrap_or(label).to_string()
}

/// The configuration `r` is a repeat of.
fn group_key(r: &RungSummary) -> GroupKey {
    GroupKey {
        label: base_label(r),
        phase: r.rung.phase.clone(),
        kind: r.rung.kind,
        mode: r.rung.mode,
        period_us: r
            .rung
            .requested_period_ms()
            .map(PeriodMs::ms)
            .map(ms_to_us_rounded),
        duty_ppm: fraction_to_ppm(r.rung.duty),
        smoothing: r.rung.smoothing.map(|s| s.label()),
    }
}

/// The rungs grouped by configuration, in order of first appearance.
pub(super) fn groups(rungs: &[RungSummary]) -> Vec<(GroupKey, Vec<&RungSummary>)> {
    let mut out: Vec<(GroupKey, Vec<&RungSummary>)> = Vec::new();
    for r in rungs {
        let key = group_key(r);
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some((_, g)) => g.push(r),
            None => out.push((key, vec![r])),
        }
    }
    out
}

/// The figures `f` of the rungs `g` that have one.
pub(super) fn pick(g: &[&RungSummary], f: fn(&RungSummary) -> Option<f64>) -> Vec<f64> {
    g.iter().filter_map(|r| f(r)).collect()
}

/// Groups the repeats of each rung (see [`GroupKey`]) and summarizes across them.
pub fn repeat_stats(rungs: &[RungSummary]) -> Vec<RepeatStats> {
    let mut out = Vec::new();
    for (_, g) in groups(rungs) {
        // Mean (None without values), SD and CI half-width, rounded.
        let st = |f: fn(&RungSummary) -> Option<f64>| {
            let v = pick(&g, f);
            let (m, sd, ci) = mean_sd_ci(&v);
            ((!v.is_empty()).then(|| r3(m)), sd.map(r3), ci.map(r3))
        };
        let (m, m_sd, m_ci) = st(|r| r.mean_w);
        let (p, p_sd, p_ci) = st(|r| r.peak_w);
        let (s, s_sd, s_ci) = st(|r| r.spread_w);
        let (w, w_sd, w_ci) = st(|r| r.swing_w);
        let (rs, _, _) = st(|r| r.raw_spread_w);
        let (rw, _, _) = st(|r| r.raw_swing_w);
        out.push(RepeatStats {
            label: base_label(g[0]),
            phase: g[0].rung.phase.clone(),
            kind: g[0].rung.kind,
            mode: g[0].rung.mode,
            period_ms: g[0].rung.requested_period_ms().map(PeriodMs::ms),
            achieved_period_ms: g[0].rung.period_ms.map(PeriodMs::ms),
            duty: g[0].rung.duty,
            smoothed: g[0].rung.smoothed(),
            n: pick(&g, |r| r.mean_w).len(),
            mean_w: m,
            mean_w_sd: m_sd,
            mean_w_ci95: m_ci,
            peak_w: p,
            peak_w_sd: p_sd,
            peak_w_ci95: p_ci,
            spread_w: s,
            spread_w_sd: s_sd,
            spread_w_ci95: s_ci,
            swing_w: w,
            swing_w_sd: w_sd,
            swing_w_ci95: w_ci,
            raw_spread_w: rs,
            raw_swing_w: rw,
        });
    }
    out
}
