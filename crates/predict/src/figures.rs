//! A predicted waveform's figures, by the run report's own arithmetic:
//! mean and percentiles, the excursion envelope ([`powerlab_analysis::envelope`]'s
//! running means), the grid metrics ([`powerlab_analysis::grid`]'s edge rates, range
//! and band share, judged by its `judge`), and the spectrum in bands.

use powerlab_analysis::envelope::{self, RungEnvelope, Source, Unsupported, WINDOWS_MS};
use powerlab_analysis::fft;
use powerlab_analysis::grid::{
    GridFigure, Metric, RungGrid, Withheld, edge_rate, judge, shape, window_changes,
};
use powerlab_campaign::{Grid, Ramp, Supply};
use powerlab_core::units::ms_to_ns;
use powerlab_samples::stats::quantile_sorted;
use serde::Serialize;

/// A figure and its ± (95 %, where stated).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Estimate {
    /// The figure.
    pub value: f64,
    /// Its ± (None: not stated).
    pub plus_minus: Option<f64>,
}

/// The level figures of a waveform, W.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Levels {
    /// Mean.
    pub mean_w: f64,
    /// Highest point.
    pub peak_w: f64,
    /// Lowest point.
    pub min_w: f64,
    /// 1st percentile.
    pub p1_w: f64,
    /// 10th.
    pub p10_w: f64,
    /// 90th.
    pub p90_w: f64,
    /// 99th.
    pub p99_w: f64,
}

impl Levels {
    /// p90 − p10.
    pub fn swing_w(&self) -> f64 {
        self.p90_w - self.p10_w
    }
    /// p99 − p1.
    pub fn spread_w(&self) -> f64 {
        self.p99_w - self.p1_w
    }
}

/// The level figures of `values`.
pub fn levels(values: &[f64]) -> Levels {
    let mut s = values.to_vec();
    s.sort_unstable_by(f64::total_cmp);
    let n = s.len().max(1);
    Levels {
        mean_w: s.iter().sum::<f64>() / n as f64,
        peak_w: s.last().copied().unwrap_or(f64::NAN),
        min_w: s.first().copied().unwrap_or(f64::NAN),
        p1_w: quantile_sorted(&s, 0.01),
        p10_w: quantile_sorted(&s, 0.10),
        p90_w: quantile_sorted(&s, 0.90),
        p99_w: quantile_sorted(&s, 0.99),
    }
}

/// The envelope of a series of `resolution_ms` points over `span_ms`.
pub fn envelope_of(
    id: u32,
    label: &str,
    values: &[f64],
    resolution_ms: f64,
    supply: Option<&Supply>,
) -> RungEnvelope {
    let points: Vec<Option<f64>> = values.iter().map(|v| Some(*v)).collect();
    let span_ms = resolution_ms * values.len() as f64;
    let span_ns = ms_to_ns(span_ms);
    let grid_ns = ms_to_ns(resolution_ms).max(1);
    let windows = windows_ms(span_ms, supply);
    let figures = envelope::curve_figures(&points, grid_ns, span_ns, resolution_ms, &windows);
    RungEnvelope {
        rung_id: id,
        label: label.to_string(),
        source: Source::Prediction,
        finest_ms: resolution_ms,
        points: windows
            .iter()
            .zip(figures)
            .map(|(&w, f)| {
                let f = match f {
                    Err(Unsupported::ShorterThanSamples(_)) => {
                        Err(Unsupported::ShorterThanResolution(resolution_ms))
                    }
                    x => x,
                };
                rated(envelope::point(w, f, supply), supply)
            })
            .collect(),
    }
}

/// A window longer than every declared excursion is held to the supply's
/// rated (continuous) power, where it declares one.
fn rated(p: envelope::EnvelopePoint, supply: Option<&Supply>) -> envelope::EnvelopePoint {
    let Some(s) = supply else { return p };
    let longest = s
        .excursions
        .iter()
        .map(|e| e.duration_ms)
        .fold(0.0, f64::max);
    match (p.limit_w, s.rated_w) {
        (None, Some(r)) if p.window_ms > longest => envelope::EnvelopePoint {
            limit_w: Some(r),
            margin_w: p.max_mean_w.map(|w| r - w),
            ..p
        },
        _ => p,
    }
}

/// Windows beyond the run report's longest a job's waveform also holds, ms.
pub const LONG_WINDOWS_MS: [f64; 4] = [30_000.0, 60_000.0, 300_000.0, 600_000.0];

/// A prediction's envelope windows: the run report's, the longer ones and
/// every duration the supply declares, as far as the span reaches.
fn windows_ms(span_ms: f64, supply: Option<&Supply>) -> Vec<f64> {
    let mut w: Vec<f64> = WINDOWS_MS
        .iter()
        .chain(LONG_WINDOWS_MS.iter().filter(|x| **x <= span_ms))
        .copied()
        .chain(
            supply
                .iter()
                .flat_map(|s| s.excursions.iter().map(|e| e.duration_ms))
                .filter(|x| *x <= span_ms),
        )
        .collect();
    w.sort_unstable_by(f64::total_cmp);
    w.dedup();
    w
}

/// What the grid figures of a prediction rest on.
#[derive(Debug, Clone, Copy)]
pub struct GridInputs<'a> {
    /// One iteration of the expected waveform, evenly spaced.
    pub expected: &'a [f64],
    /// The iteration, ms.
    pub period_ms: f64,
    /// The drawn waveform.
    pub realized: &'a [f64],
    /// Its points' spacing, ms.
    pub resolution_ms: f64,
    /// The coarsest time resolution of the measured cycles used, ms.
    pub source_resolution_ms: f64,
    /// The lowest highest frequency of the measured cycles used, Hz.
    pub source_highest_hz: f64,
    /// The range's ± (from the spread's), W.
    pub range_pm: Option<f64>,
    /// One stagger group's rise falls within the measured cycles'
    /// resolution of another's fall: the two smoothed edges partly cancel
    /// in the sum, so what is left of them bounds nothing.
    pub edges_cancel: bool,
}

/// Whether, with `groups` stagger groups started evenly across the
/// iteration and each computing for `compute_fraction` of it, a group's
/// rise lies within `NUMBER_ABOVE_RESOLUTION` × `res_ms` of another
/// group's fall.
pub fn edges_cancel(groups: u32, compute_fraction: f64, period_ms: f64, res_ms: f64) -> bool {
    let g = groups.max(1);
    if g < 2 || compute_fraction >= 1.0 {
        return false;
    }
    let near = powerlab_analysis::grid::NUMBER_ABOVE_RESOLUTION * res_ms;
    (0..g).any(|a| {
        (0..g).filter(|b| *b != a).any(|b| {
            let rise = f64::from(a) / f64::from(g) * period_ms;
            let fall = (f64::from(b) / f64::from(g) + compute_fraction) * period_ms;
            let d = (rise - fall).rem_euclid(period_ms);
            d.min(period_ms - d) < near
        })
    })
}

/// The grid metrics of a prediction, judged against `spec` for `gpus`:
/// the rates from the expected iteration (an edge at the measured cycles'
/// resolution is a lower bound, as in the run report), the range and the
/// band share from the drawn waveform.
pub fn grid_of(
    id: u32,
    label: &str,
    g: GridInputs<'_>,
    band_hz: [f64; 2],
    spec: Option<&Grid>,
    gpus: usize,
) -> RungGrid {
    let res = g.source_resolution_ms.max(g.resolution_ms);
    let rate = |m, d| edge_rate(g.expected, g.period_ms, res, None, m, d);
    let lv = levels(g.realized);
    let range = lv.peak_w - lv.min_w;
    let mut r = GridFigure::stated(Metric::DynamicRange, range, g.resolution_ms);
    r.plus_minus = g.range_pm;
    let mut pct = GridFigure::stated(
        Metric::DynamicRangePct,
        100.0 * range / lv.peak_w,
        g.resolution_ms,
    );
    pct.plus_minus = g.range_pm.map(|p| 100.0 * p / lv.peak_w);
    let nyquist = 0.5 / (g.resolution_ms / 1000.0);
    let highest = nyquist.min(g.source_highest_hz);
    let step_s = g.resolution_ms / 1000.0;
    let share = if band_hz[1] > highest {
        powerlab_analysis::grid::share_bounds(
            g.realized,
            (step_s, g.resolution_ms),
            band_hz,
            highest,
            shape::Unresolved::AsDrawn,
        )
    } else {
        match shape::band_share(g.realized, step_s, band_hz) {
            Some(s) => GridFigure::stated(Metric::BandShare, 100.0 * s, g.resolution_ms),
            None => GridFigure::withheld(Metric::BandShare, Withheld::Flat),
        }
    };
    let share = GridFigure {
        highest_hz: Some(nyquist.min(g.source_highest_hz)),
        ..share
    };
    let step_ms = g.period_ms / g.expected.len().max(1) as f64;
    let cancel = g.edges_cancel.then_some(Withheld::EdgesCancel);
    let bounded = |f: GridFigure| match cancel {
        Some(why) if f.lower_bound => GridFigure::withheld(f.metric, why),
        _ => f,
    };
    RungGrid {
        rung_id: id,
        label: label.to_string(),
        source: Source::Prediction,
        figures: [
            rate(Metric::RampUp, Ramp::Up),
            rate(Metric::RampDown, Ramp::Down),
            r,
            pct,
            share,
        ]
        .into_iter()
        .chain(window_changes(g.expected, step_ms, res, [None, None]))
        .map(bounded)
        .map(|f| judge::judge(f, spec, gpus))
        .collect(),
    }
}

/// One band of the spectrum.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SpectrumBand {
    /// Lower edge, Hz.
    pub lo_hz: f64,
    /// Upper edge, Hz.
    pub hi_hz: f64,
    /// Share of the fluctuation's energy (variance) in the band, %.
    pub share_pct: f64,
    /// The band's RMS fluctuation, W.
    pub rms_w: f64,
}

/// Bands per decade of the spectrum.
pub const BANDS_PER_DECADE: f64 = 5.0;

/// The spectrum of `values` (spaced `resolution_ms`) in bands of a fifth
/// of a decade from the lowest frequency the span holds to Nyquist: each
/// band's share of the variance and its RMS.
pub fn spectrum(values: &[f64], resolution_ms: f64) -> Vec<SpectrumBand> {
    let n = values.len();
    if n < 4 {
        return Vec::new();
    }
    let df = 1000.0 / (n as f64 * resolution_ms);
    // Bins 1 ..= n/2 (the fluctuation has no DC).
    let energy = fft::one_sided_energy(&fft::of_fluctuation(values));
    let energy = &energy[1..];
    let total: f64 = energy.iter().sum();
    let mut out = Vec::new();
    let mut lo = df;
    let top = df * (n / 2) as f64;
    while lo <= top {
        let hi = lo * 10f64.powf(1.0 / BANDS_PER_DECADE);
        let e: f64 = energy
            .iter()
            .enumerate()
            .filter(|(i, _)| {
                let f = (*i + 1) as f64 * df;
                f >= lo && f < hi
            })
            .map(|(_, e)| e)
            .sum();
        out.push(SpectrumBand {
            lo_hz: lo,
            hi_hz: hi,
            share_pct: if total > 0.0 { 100.0 * e / total } else { 0.0 },
            rms_w: e.sqrt() / n as f64,
        });
        lo = hi;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_groups_rise_on_anothers_fall_cancels_and_apart_it_does_not() {
        // Two groups at half the iteration, compute half of it: group 1
        // falls where group 0 rises.
        assert!(edges_cancel(2, 0.5, 1000.0, 5.0));
        // Three quarters: a quarter of the iteration between them.
        assert!(!edges_cancel(2, 0.75, 1000.0, 5.0));
        // One group, or no communication phase: nothing to cancel.
        assert!(!edges_cancel(1, 0.5, 1000.0, 5.0));
        assert!(!edges_cancel(4, 1.0, 1000.0, 5.0));
        // Four groups at 0.25: each fall meets the next group's rise.
        assert!(edges_cancel(4, 0.25, 1000.0, 1.0));
    }

    #[test]
    fn a_sine_sits_in_its_band_with_its_rms() {
        // 5 Hz, amplitude 100 W, over 10 s at 1 ms.
        let v: Vec<f64> = (0..10_000)
            .map(|j| 1000.0 + 100.0 * (2.0 * std::f64::consts::PI * 5.0 * j as f64 / 1000.0).sin())
            .collect();
        let s = spectrum(&v, 1.0);
        let band = s
            .iter()
            .find(|b| b.lo_hz <= 5.0 && b.hi_hz > 5.0)
            .unwrap_or(&s[0]);
        assert!((band.share_pct - 100.0).abs() < 1e-6, "{band:?}");
        assert!((band.rms_w - 100.0 / 2f64.sqrt()).abs() < 1e-6, "{band:?}");
        let total: f64 = s.iter().map(|b| b.share_pct).sum();
        assert!((total - 100.0).abs() < 1e-6);
        let l = levels(&v);
        assert!((l.mean_w - 1000.0).abs() < 1e-6);
        assert!((l.peak_w - 1100.0).abs() < 1e-3);
    }
}
