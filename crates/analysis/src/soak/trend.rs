//! The soak's statistics over time: 10 s bin means, the drift fitted
//! through them, and the time to thermal equilibrium.

use super::{BIN_S, EQUILIBRIUM_C, Equilibrium, LAST_WINDOW_C, Unreached, secs, values};
use powerlab_core::units::{ms_to_ns_f64, secs_to_ns_trunc};
use powerlab_samples::series::span;
use powerlab_samples::stats::{mean, t975};

/// Means of the samples in whole [`BIN_S`] bins from `from`: (bin centre
/// s since `from`, W). A bin with less than half its expected samples
/// (judged by the median spacing) is left out.
pub(super) fn bin_means(s: &[(i64, f64)], from: i64, to: i64) -> Vec<(f64, f64)> {
    let bin_ns = secs_to_ns_trunc(BIN_S);
    let spacing = ms_to_ns_f64(powerlab_samples::series::median_spacing_ms(s).unwrap_or(0.0));
    let mut out = Vec::new();
    let mut k = 0i64;
    while from + (k + 1) * bin_ns <= to {
        let (a, b) = (from + k * bin_ns, from + (k + 1) * bin_ns);
        let v = values(span(s, a, b));
        let expected = if spacing > 0.0 {
            bin_ns as f64 / spacing
        } else {
            1.0
        };
        if !v.is_empty() && v.len() as f64 >= 0.5 * expected {
            out.push((secs(a - from) + BIN_S / 2.0, mean(&v).unwrap_or_default()));
        }
        k += 1;
    }
    out
}

/// The least-squares slope through (s, W) points, in W per 10 min, with
/// its 95 % half-width and the number of points. The standard error is
/// widened by the residuals' lag-1 autocorrelation (the effective number
/// of points n(1 − ρ)/(1 + ρ) when ρ > 0), so slow wander does not read
/// as a precise trend. None below 4 points.
pub fn drift(points: &[(f64, f64)]) -> Option<(f64, f64, usize)> {
    let n = points.len();
    if n < 4 {
        return None;
    }
    let nf = n as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / nf;
    let my = points.iter().map(|p| p.1).sum::<f64>() / nf;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let slope = sxy / sxx;
    let resid: Vec<f64> = points
        .iter()
        .map(|p| p.1 - my - slope * (p.0 - mx))
        .collect();
    let ssr: f64 = resid.iter().map(|e| e * e).sum();
    let r0: f64 = ssr;
    let r1: f64 = resid.windows(2).map(|w| w[0] * w[1]).sum();
    let rho = if r0 > 0.0 {
        (r1 / r0).clamp(0.0, 0.95)
    } else {
        0.0
    };
    let n_eff = (nf * (1.0 - rho) / (1.0 + rho)).max(4.0);
    let se = (ssr / (nf - 2.0) / sxx).sqrt() * (nf / n_eff).sqrt();
    let half = t975(n_eff - 2.0) * se;
    Some((slope * 600.0, half * 600.0, n))
}

/// Time to equilibrium: the plateau is the mean temperature after
/// `last_start`; equilibrium is the start of the first [`BIN_S`] bin after
/// which every bin's mean temperature stays within [`EQUILIBRIUM_C`] of it.
/// Bin means, not single readings: NVML reads whole degrees, and a GPU on
/// its plateau flickers by one (59.0 °C held reads 58 now and then, more
/// than 1 °C from a 59.03 °C plateau).
///
/// Not reached: when that bin starts inside the last window; when the
/// temperature still moves by more than [`EQUILIBRIUM_C`] from there to the
/// end (the least-squares line through the bins: a steady climb stays
/// inside a ±1 °C band around its own last minute for a while); when the
/// last window's halves differ by more than [`LAST_WINDOW_C`]. Not judged:
/// too few readings in the last window to give a plateau, or too few bins
/// after the equilibrium point to show that it holds.
pub(super) fn equilibrium(
    temp: &[(i64, f64)],
    from: i64,
    to: i64,
    last_start: i64,
) -> (Option<f64>, Equilibrium) {
    let last: Vec<f64> = values(span(temp, last_start, to));
    let spacing_ns = ms_to_ns_f64(powerlab_samples::series::median_spacing_ms(temp).unwrap_or(0.0));
    let expected = if spacing_ns > 0.0 {
        (to - last_start) as f64 / spacing_ns
    } else {
        0.0
    };
    if last.len() < 2 || (last.len() as f64) < 0.5 * expected {
        return (
            None,
            Equilibrium::Unreached(Unreached::FewReadings(last.len())),
        );
    }
    let plateau = mean(&last).unwrap_or_default();
    let bins = bin_means(temp, from, to);
    let Some(last_bin) = bins.last() else {
        return (None, Equilibrium::Unreached(Unreached::NoWholeBin));
    };
    if (last_bin.1 - plateau).abs() > EQUILIBRIUM_C {
        return (
            None,
            Equilibrium::Unreached(Unreached::OffPlateau {
                from_s: last_bin.0 - BIN_S / 2.0,
                plateau_c: plateau,
            }),
        );
    }
    let first = bins
        .iter()
        .rposition(|b| (b.1 - plateau).abs() > EQUILIBRIUM_C)
        .map_or(0, |i| i + 1);
    let held = &bins[first..];
    let at_s = held[0].0 - BIN_S / 2.0;
    if from + secs_to_ns_trunc(at_s) >= last_start {
        return (
            None,
            Equilibrium::Unreached(if first == 0 {
                Unreached::NothingBefore
            } else {
                Unreached::StillMoving(plateau)
            }),
        );
    }
    // A steady climb stays within 1 °C of its own last minute for a while:
    // the plateau has to hold from the equilibrium point on.
    let Some((per_10min, _, _)) = drift(held) else {
        return (None, Equilibrium::Unreached(Unreached::FewBins(at_s)));
    };
    let span_s = held[held.len() - 1].0 - held[0].0 + BIN_S;
    let moved = per_10min / 600.0 * span_s;
    if moved.abs() > EQUILIBRIUM_C {
        return (
            None,
            Equilibrium::Unreached(Unreached::StillDrifting {
                moved_c: moved,
                from_s: at_s,
                per_10min,
            }),
        );
    }
    // ... and the last window's two halves must agree.
    let half = last.len() / 2;
    if let (Some(a), Some(b)) = (mean(&last[..half]), mean(&last[half..]))
        && (b - a).abs() > LAST_WINDOW_C
    {
        return (None, Equilibrium::Unreached(Unreached::HalvesApart(b - a)));
    }
    (Some(at_s), Equilibrium::Reached)
}
