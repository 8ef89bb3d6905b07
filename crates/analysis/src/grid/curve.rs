//! The grid figures of a rung without a composed cycle, from the node
//! curve's buffered points inside it ([`curve_figures`]).

use super::{GridFigure, Metric, Withheld, pct_of, share_figure};
use powerlab_core::units::ms_to_s;

/// The node curve's grid step and what one sample stands for, ms.
#[derive(Debug, Clone, Copy)]
pub(super) struct Spacing {
    pub(super) step_ms: f64,
    pub(super) sample_window_ms: f64,
}

/// Every metric of the node curve's buffered points inside a rung (held
/// over gaps): no rates; the range of the points unless the rung is
/// periodic (`period_ms`); the band share where the band and the rung's
/// fundamental stay below the samples' Nyquist frequency.
pub(super) fn curve_figures(
    points: &[Option<f64>],
    Spacing {
        step_ms,
        sample_window_ms,
    }: Spacing,
    band_hz: [f64; 2],
    period_ms: Option<f64>,
) -> Vec<GridFigure> {
    let mut held = Vec::with_capacity(points.len());
    let mut last = None;
    for p in points {
        last = p.or(last);
        if let Some(v) = last {
            held.push(v);
        }
    }
    let rates =
        [Metric::RampUp, Metric::RampDown].map(|m| GridFigure::withheld(m, Withheld::NoCycle));
    let windows = Metric::ALL
        .iter()
        .filter(|m| matches!(m, Metric::RiseOver(_) | Metric::FallOver(_)))
        .map(|m| GridFigure::withheld(*m, Withheld::NoCycle))
        .collect::<Vec<_>>();
    if held.len() < 4 {
        let rest = [
            Metric::DynamicRange,
            Metric::DynamicRangePct,
            Metric::BandShare,
        ]
        .map(|m| GridFigure::withheld(m, Withheld::TooFewPoints));
        return rates.into_iter().chain(rest).chain(windows).collect();
    }
    let (min, max) = held
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(*v), b.max(*v))
        });
    let res_ms = sample_window_ms.max(step_ms);
    let nyquist_hz = 0.5 / ms_to_s(res_ms);
    let fundamental_hz = period_ms.map(|p| 1.0 / ms_to_s(p));
    let share = match fundamental_hz {
        _ if band_hz[1] > nyquist_hz => {
            GridFigure::withheld(Metric::BandShare, Withheld::AboveNyquist(nyquist_hz))
        }
        Some(f) if f > nyquist_hz => GridFigure::withheld(Metric::BandShare, Withheld::Aliased(f)),
        _ => share_figure(&held, ms_to_s(step_ms), band_hz, res_ms),
    };
    let range = |m: Metric, v: f64| match period_ms {
        Some(_) => GridFigure::withheld(m, Withheld::HeldSum),
        None => GridFigure::stated(m, v, res_ms),
    };
    rates
        .into_iter()
        .chain([
            range(Metric::DynamicRange, max - min),
            range(Metric::DynamicRangePct, pct_of(max - min, max)),
            GridFigure {
                highest_hz: Some(nyquist_hz),
                ..share
            },
        ])
        .chain(windows)
        .collect()
}
