//! The in-phase vs staggered comparison of each duty period.

use super::RungSummary;
use super::repeats::{groups, pick};
use crate::cycle::Bounds;
use powerlab_core::units::PeriodMs;
use powerlab_rundir::{Mode, PhaseKind};
use powerlab_samples::stats::{mean_sd_ci, r3, welch_difference};

/// In-phase vs staggered at one period of one phase: each figure's mean
/// over the repeats of both modes, and the difference with its 95 %
/// half-width: Welch's interval across repeats (two or more a side) and
/// the rungs' own intervals within their runs, in quadrature (None when
/// neither exists).
#[derive(Debug, Clone, serde::Serialize, PartialEq)]
pub struct PhaseCompare {
    /// The campaign phase compared.
    pub phase: String,
    /// Period the campaign asked for, ms.
    pub period_ms: f64,
    /// Period the GPUs ran, ms.
    pub achieved_period_ms: f64,
    /// The duty fraction: the share of each period the GPUs run (that of
    /// the first in-phase repeat).
    pub duty: f64,
    /// Repeats in phase / staggered.
    pub n: String,
    /// Mean, in phase.
    pub in_phase_mean_w: Option<f64>,
    /// Mean, staggered.
    pub staggered_mean_w: Option<f64>,
    /// Staggered − in phase.
    pub delta_mean_w: Option<f64>,
    /// 95% half-width of the difference.
    pub delta_mean_w_ci95: Option<f64>,
    /// Peak, in phase.
    pub in_phase_peak_w: Option<f64>,
    /// Peak, staggered.
    pub staggered_peak_w: Option<f64>,
    /// Staggered − in phase.
    pub delta_peak_w: Option<f64>,
    /// 95% half-width of the difference.
    pub delta_peak_w_ci95: Option<f64>,
    /// Spread, in phase.
    pub in_phase_spread_w: Option<f64>,
    /// Spread, staggered.
    pub staggered_spread_w: Option<f64>,
    /// Staggered − in phase.
    pub delta_spread_w: Option<f64>,
    /// 95% half-width of the difference.
    pub delta_spread_w_ci95: Option<f64>,
    /// Swing, in phase.
    pub in_phase_swing_w: Option<f64>,
    /// Swing, staggered.
    pub staggered_swing_w: Option<f64>,
    /// Staggered − in phase.
    pub delta_swing_w: Option<f64>,
    /// 95% half-width of the difference.
    pub delta_swing_w_ci95: Option<f64>,
    /// What NVML sampled (sample and hold): spread in phase, W.
    pub raw_in_phase_spread_w: Option<f64>,
    /// What NVML sampled: spread staggered, W.
    pub raw_staggered_spread_w: Option<f64>,
}

/// The 95 % half-width, within their runs, of the mean of the figures `f`
/// of rungs `g`: their own intervals' half-widths ([`RungSummary`]'s
/// `*_ci95`) added in quadrature, over the count. None unless every rung
/// with a figure has an interval.
fn within_run_half_width(
    g: &[&RungSummary],
    f: fn(&RungSummary) -> Option<f64>,
    ci: fn(&RungSummary) -> Option<Bounds>,
) -> Option<f64> {
    powerlab_samples::stats::half_width_of_mean(
        g.iter()
            .filter(|r| f(r).is_some())
            .map(|r| ci(r).map(|b| b.width() / 2.0)),
    )
}

/// Pairs the in-phase and staggered repeats of each duty period. Each
/// difference's 95 % half-width combines Welch's interval across repeats
/// (two or more a side) with the rungs' own intervals within their runs,
/// so one repeat a side still has one.
pub fn compare_modes(rungs: &[RungSummary]) -> Vec<PhaseCompare> {
    let gs = groups(rungs);
    let mut out = Vec::new();
    for (ka, a) in &gs {
        // A mitigation's two modes are compared in its own table.
        if ka.mode != Mode::InPhase
            || ka.kind != PhaseKind::Duty
            || ka.period_us.is_none()
            || ka.smoothing.is_some()
        {
            continue;
        }
        let Some((_, b)) = gs.iter().find(|(kb, _)| {
            kb.mode == Mode::Staggered
                && kb.kind == ka.kind
                && kb.phase == ka.phase
                && kb.period_us == ka.period_us
                && kb.duty_ppm == ka.duty_ppm
                && kb.smoothing == ka.smoothing
        }) else {
            continue;
        };
        // Means of each side (None without a value) and the difference,
        // its half-width the Welch interval across repeats and each rung's
        // own interval within its run, combined in quadrature.
        let cmp = |f: fn(&RungSummary) -> Option<f64>, ci: fn(&RungSummary) -> Option<Bounds>| {
            let (xa, xb) = (pick(a, f), pick(b, f));
            let mean = |x: &[f64]| (!x.is_empty()).then(|| r3(mean_sd_ci(x).0));
            let (d, welch) = welch_difference(&xa, &xb);
            let both = !xa.is_empty() && !xb.is_empty();
            let within = within_run_half_width(a, f, ci)
                .zip(within_run_half_width(b, f, ci))
                .map(|(ha, hb)| (ha * ha + hb * hb).sqrt());
            let half = match (welch, within) {
                (Some(w), Some(h)) => Some((w * w + h * h).sqrt()),
                (w, h) => w.or(h),
            };
            (
                mean(&xa),
                mean(&xb),
                both.then(|| r3(d)),
                half.filter(|_| both).map(r3),
            )
        };
        let (ma, mb, md, mci) = cmp(|r| r.mean_w, |r| r.mean_ci95);
        let (pa, pb, pd, pci) = cmp(|r| r.peak_w, |r| r.peak_ci95);
        let (sa, sb, sd, sci) = cmp(|r| r.spread_w, |r| r.spread_ci95);
        let (wa, wb, wd, wci) = cmp(|r| r.swing_w, |r| r.swing_ci95);
        let (ra, rb, _, _) = cmp(|r| r.raw_spread_w, |_| None);
        out.push(PhaseCompare {
            phase: ka.phase.clone(),
            period_ms: a[0]
                .rung
                .requested_period_ms()
                .map(PeriodMs::ms)
                .unwrap_or(0.0),
            achieved_period_ms: a[0].rung.period_ms.map(PeriodMs::ms).unwrap_or(0.0),
            duty: a[0].rung.duty,
            n: format!(
                "{}/{}",
                pick(a, |r| r.spread_w).len(),
                pick(b, |r| r.spread_w).len()
            ),
            in_phase_mean_w: ma,
            staggered_mean_w: mb,
            delta_mean_w: md,
            delta_mean_w_ci95: mci,
            in_phase_peak_w: pa,
            staggered_peak_w: pb,
            delta_peak_w: pd,
            delta_peak_w_ci95: pci,
            in_phase_spread_w: sa,
            staggered_spread_w: sb,
            delta_spread_w: sd,
            delta_spread_w_ci95: sci,
            in_phase_swing_w: wa,
            staggered_swing_w: wb,
            delta_swing_w: wd,
            delta_swing_w_ci95: wci,
            raw_in_phase_spread_w: ra,
            raw_staggered_spread_w: rb,
        });
    }
    out
}
