//! One GPU's iteration found in its buffered samples ([`find_iteration`]),
//! or why it has none ([`NoPeriod`]).

use super::autocorr::{Peak, autocorrelation, period_peak};
use super::crossings::{Levels, intervals, on_fraction, rising_crossings};
use super::fit::{PeriodFit, fit_period};
use super::lag::crossing_lag_ns;
use super::resample::{median_spacing_ns, placed, resample, step_for};
use super::spectral;
use super::{FLAT_SHARE, MAX_JITTER_SHARE, MAX_LAG_MS, MIN_CROSSING_SHARE, MIN_CYCLES, MIN_LAG_MS};
use crate::fft::Planner;
use powerlab_core::units::{ms_to_ns, ms_to_ns_f64, ns_f64_to_ms, ns_to_ms};
use powerlab_samples::stats::t975;

/// One GPU's iteration as its samples show it.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuIteration {
    /// GPU key.
    pub gpu: String,
    /// The period fitted to the rising crossings, ms.
    pub period_ms: f64,
    /// Its 95 % half-width, ms: the fit's slope error, never under the
    /// sample spacing over the fitted cycles.
    pub period_ci95_ms: f64,
    /// The autocorrelation's period, ms (before the crossings refine it).
    pub autocorr_period_ms: f64,
    /// The autocorrelation's peak height, share of lag 0.
    pub autocorr_peak: f64,
    /// Cycle-to-cycle jitter: standard deviation of the crossings about
    /// the fitted t0 + k·P, ms (it holds the crossings' own placement
    /// error, up to about a sample spacing where the rise is sparse).
    pub jitter_ms: f64,
    /// Standard deviation of successive crossing intervals, ms.
    pub interval_sd_ms: f64,
    /// Rising crossings fitted (iterations seen).
    pub cycles: usize,
    /// Mean share of a cycle at or above the mid-level.
    pub on_fraction: f64,
    /// The mid-level, W (halfway between p10 and p90 of the samples).
    pub mid_w: f64,
    /// The level-crossing lag taken off each crossing, ms.
    pub lag_ms: f64,
    /// The sample spacing, ms (the median).
    pub spacing_ms: f64,
    /// Each fitted crossing less the lag: the iterations' starts, ns.
    pub starts_ns: Vec<i64>,
}

/// Why a GPU's samples give no period.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NoPeriod {
    /// The sensor model states no buffered window and latency.
    #[error("the sensor model states no buffered_w window and latency for this GPU")]
    NoSensorModel,
    /// Too few samples in the window.
    #[error("{samples} buffered samples in the window, too few to look for a period")]
    TooFewSamples {
        /// Samples in the window.
        samples: usize,
    },
    /// The draw does not move.
    #[error(
        "the draw is flat: p90 − p10 = {swing_w:.1} W, {:.1} % of its {mean_w:.0} W mean (back-to-back steps, or no iterations at all)",
        100.0 * swing_w / mean_w.abs().max(f64::MIN_POSITIVE)
    )]
    Flat {
        /// p90 − p10, W.
        swing_w: f64,
        /// Mean, W.
        mean_w: f64,
    },
    /// No autocorrelation peak high enough.
    #[error(
        "aperiodic: no autocorrelation peak of at least {:.1} of lag 0 between {MIN_LAG_MS:.0} ms and {max_lag_ms:.0} ms{}",
        super::MIN_PEAK,
        best.map_or(String::new(), |(l, h)| format!(" (the highest: {h:.2} at {l:.0} ms)"))
    )]
    NoPeak {
        /// The longest lag searched, ms.
        max_lag_ms: f64,
        /// The highest local maximum: lag ms, height.
        best: Option<(f64, f64)>,
    },
    /// Too few iterations show a rising crossing.
    #[error(
        "too few cycles: {found} rising crossings of the mid-level fit a period of {period_ms:.1} ms, a period needs {MIN_CYCLES} and {:.0} % of the window's ~{expected:.0}",
        100.0 * MIN_CROSSING_SHARE
    )]
    TooFewCycles {
        /// Crossings fitted.
        found: usize,
        /// Cycles the window holds at the autocorrelation's period.
        expected: f64,
        /// That period, ms.
        period_ms: f64,
    },
    /// The crossings stray from any steady period.
    #[error(
        "aperiodic: the rising crossings scatter by {jitter_ms:.1} ms about a steady {period_ms:.1} ms period, over {:.0} % of it",
        100.0 * MAX_JITTER_SHARE
    )]
    Irregular {
        /// Their scatter, ms.
        jitter_ms: f64,
        /// The fitted period, ms.
        period_ms: f64,
    },
}

/// Finds `gpu`'s iteration in its buffered `samples` (time-sorted, at
/// their timestamps) over `[from_ns, to_ns)`; each sample averages
/// `window_ms` ending `lag_ms` before its timestamp. See the module
/// [`super`] for the method.
///
/// # Errors
///
/// [`NoPeriod`], saying why, when the window holds too few samples, the
/// draw is flat, the autocorrelation has no peak of [`super::MIN_PEAK`],
/// fewer than [`MIN_CYCLES`] (or [`MIN_CROSSING_SHARE`] of the window's)
/// iterations show a crossing, or the crossings scatter by more than
/// [`MAX_JITTER_SHARE`] of the period.
pub fn find_iteration(
    planner: &mut Planner,
    gpu: &str,
    samples: &[(i64, f64)],
    (from_ns, to_ns): (i64, i64),
    window_ms: f64,
    lag_ms: f64,
) -> Result<GpuIteration, NoPeriod> {
    let points = placed(samples, from_ns, to_ns, ms_to_ns(lag_ms + window_ms / 2.0));
    let too_few = NoPeriod::TooFewSamples {
        samples: points.len(),
    };
    if points.len() < 4 * MIN_CYCLES {
        return Err(too_few);
    }
    let levels = Levels::of(points.iter().map(|p| p.1)).ok_or(too_few.clone())?;
    if levels.swing() < FLAT_SHARE * levels.mean.abs() {
        return Err(NoPeriod::Flat {
            swing_w: levels.swing(),
            mean_w: levels.mean,
        });
    }
    let span = to_ns - from_ns;
    let even = resample(&points, step_for(span)).ok_or(too_few)?;
    let step_ms = even.step_ms();
    let spacing_ns = median_spacing_ns(&points).unwrap_or(even.step_ns);
    let max_lag_ms = MAX_LAG_MS.min(ns_to_ms(span) / 3.0);
    let max_lag = (max_lag_ms / step_ms) as usize;
    let r = autocorrelation(planner, &even.values, max_lag + 1);
    let by_autocorr = period_peak(&r, (MIN_LAG_MS / step_ms).ceil() as usize, max_lag)
        .map_err(|best| NoPeriod::NoPeak {
            max_lag_ms,
            best: best.map(|b: Peak| (b.lag * step_ms, b.height)),
        })
        .and_then(|peak| {
            let guess_ns = peak.lag * even.step_ns as f64;
            fit_at(&points, &levels, span, guess_ns).map(|f| (f, guess_ns, peak.height))
        });
    // Where the autocorrelation points elsewhere (a back-to-back job's
    // shallow steps beat with the sampling), the spectrum's line; where
    // its crossings follow no steady period either (its shallow dips
    // cross the mid-level at any phase), iterations at t0 + k·P.
    let (fit, guess_ns, height, timed) = match by_autocorr {
        Ok((fit, guess_ns, height)) => (fit, guess_ns, height, true),
        Err(why) => {
            let line = spectral::line(
                planner,
                &even,
                ns_to_ms(spacing_ns),
                (MIN_LAG_MS, max_lag_ms),
            )
            .ok_or_else(|| why.clone())?;
            let guess_ns = spectral::refine(&points, ms_to_ns_f64(line.period_ms));
            // A line of a few cycles is the window's own shape (a cold
            // start's ramp read as one 3.4 s "cycle"), not an iteration.
            if (span as f64) < spectral::MIN_CYCLES as f64 * guess_ns {
                return Err(why);
            }
            let k =
                ((guess_ns / even.step_ns as f64).round() as usize).min(r.len().saturating_sub(1));
            let height = r.get(k).copied().unwrap_or(f64::NAN);
            match fit_at(&points, &levels, span, guess_ns) {
                Ok(fit) => (fit, guess_ns, height, true),
                Err(_) => (placed_fit(&points, guess_ns), guess_ns, height, false),
            }
        }
    };
    let rises: Vec<i64> = fit.used.iter().map(|u| u.1).collect();
    let p = fit.period_ns.round() as i64;
    let lag_ns = lag_of(timed, &points, &rises, p, &levels);
    let sd = |v: &[f64]| powerlab_samples::stats::mean_sd_ci(v).1.unwrap_or(0.0);
    Ok(GpuIteration {
        gpu: gpu.to_string(),
        period_ms: ns_f64_to_ms(fit.period_ns),
        period_ci95_ms: ns_f64_to_ms(period_ci95_ns(&fit, spacing_ns)),
        autocorr_period_ms: ns_f64_to_ms(guess_ns),
        autocorr_peak: height,
        // Iterations placed at t0 + k·P show no jitter of their own.
        jitter_ms: if timed {
            ns_f64_to_ms(fit.residual_sd_ns)
        } else {
            f64::NAN
        },
        interval_sd_ms: if timed {
            ns_f64_to_ms(sd(&intervals(&rises, p)))
        } else {
            f64::NAN
        },
        cycles: fit.used.len(),
        on_fraction: on_fraction(&even, &rises, p, levels.mid()).unwrap_or(f64::NAN),
        mid_w: levels.mid(),
        lag_ms: ns_to_ms(lag_ns),
        spacing_ms: ns_to_ms(spacing_ns),
        starts_ns: rises.iter().map(|t| t - lag_ns).collect(),
    })
}

/// The level-crossing lag to take off `rises` (ns): none where they are
/// placed at t0 + k·P (`timed` false), as they start where the fold's
/// rise does.
fn lag_of(timed: bool, points: &[(i64, f64)], rises: &[i64], p: i64, levels: &Levels) -> i64 {
    if timed {
        crossing_lag_ns(points, rises, p, levels)
    } else {
        0
    }
}

/// Iterations of `points` at `period_ns` placed by the fold
/// ([`spectral::starts`]), as a fit with no scatter of its own: its
/// period's ± is the sample spacing over the iterations it spans.
fn placed_fit(points: &[(i64, f64)], period_ns: f64) -> PeriodFit {
    let starts = spectral::starts(points, period_ns);
    PeriodFit {
        period_ns,
        t0_ns: starts.first().copied().unwrap_or(0) as f64,
        period_se_ns: 0.0,
        residual_sd_ns: 0.0,
        used: starts
            .iter()
            .enumerate()
            .map(|(k, t)| (k as i64, *t))
            .collect(),
    }
}

/// The rising crossings of `points` fitted to a period near `guess_ns`
/// over a window of `span` ns.
///
/// # Errors
///
/// [`NoPeriod::TooFewCycles`] where fewer than [`MIN_CYCLES`] (or
/// [`MIN_CROSSING_SHARE`] of the window's) iterations show a crossing,
/// [`NoPeriod::Irregular`] where they scatter by more than
/// [`MAX_JITTER_SHARE`] of the period.
fn fit_at(
    points: &[(i64, f64)],
    levels: &Levels,
    span: i64,
    guess_ns: f64,
) -> Result<PeriodFit, NoPeriod> {
    let crossings = rising_crossings(points, levels, (0.5 * guess_ns) as i64);
    let expected = span as f64 / guess_ns;
    let fit = fit_period(&crossings, guess_ns)
        .filter(|f| {
            f.used.len() >= MIN_CYCLES
                && f.used.len() as f64 >= MIN_CROSSING_SHARE * expected.floor()
        })
        .ok_or(NoPeriod::TooFewCycles {
            found: crossings.len(),
            expected,
            period_ms: ns_f64_to_ms(guess_ns),
        })?;
    if fit.residual_sd_ns > MAX_JITTER_SHARE * fit.period_ns {
        return Err(NoPeriod::Irregular {
            jitter_ms: ns_f64_to_ms(fit.residual_sd_ns),
            period_ms: ns_f64_to_ms(fit.period_ns),
        });
    }
    Ok(fit)
}

/// The period's 95 % half-width, ns: Student's t times the fit's slope
/// error, and never less than the sample spacing over the cycles the fit
/// spans (each end's crossing is placed within about a spacing).
pub fn period_ci95_ns(fit: &PeriodFit, spacing_ns: i64) -> f64 {
    let df = fit.used.len().saturating_sub(2).max(1) as f64;
    let floor = spacing_ns as f64 / fit.span_cycles().max(1) as f64;
    (t975(df) * fit.period_se_ns).max(floor)
}
