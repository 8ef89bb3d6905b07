//! Soak analysis: whether the node held its power over a long constant
//! load, or drifted. For every soak rung, every GPU and the node (the sum
//! of the GPUs: GPU draw only): the means of the first and last minute
//! (the edge window, configurable), the drift as a least-squares slope
//! through 10 s means with its 95 % interval (widened for the residuals'
//! lag-1 autocorrelation), the time to thermal equilibrium (the GPU's
//! 10 s mean temperature within 1 °C of its final plateau from then on,
//! and the plateau holding to the end), the throttle
//! onset (the first clock-event reading with a slowdown bit other than
//! the software power cap), the share of the window under the power and
//! thermal caps from NVML's cumulative counters, and the SM clock and
//! temperature at the start and the end.

use crate::load::{Run, RungWindow};
use crate::per_gpu::cap_share;
use crate::sensor::series::{SeriesSet, span};
use crate::stats::mean;
use crate::stats::{r3, t975};
use powerlab_core::sample::ClockEventBits;
use powerlab_core::units::{NS_PER_S, ms_to_ns_f64, ns_to_s, secs_to_ns_trunc};
use powerlab_rundir::PhaseKind;
use serde::Serialize;

/// Default length of the first and last window, s.
pub const EDGE_S_DEFAULT: f64 = 60.0;
/// The bins the drift is fitted through, s.
pub const BIN_S: f64 = 10.0;
/// Thermal equilibrium: within this many °C of the final plateau.
pub const EQUILIBRIUM_C: f64 = 1.0;
/// ... and the last window's two halves within this many °C of each other.
pub const LAST_WINDOW_C: f64 = 0.5;
/// The slowdown bits that count as throttling (everything but the
/// software power cap, which is the board at its limit, as expected).
pub const THROTTLE_BITS: [u64; 4] = [
    ClockEventBits::HW_SLOWDOWN,
    ClockEventBits::SW_THERMAL_SLOWDOWN,
    ClockEventBits::HW_THERMAL_SLOWDOWN,
    ClockEventBits::HW_POWER_BRAKE_SLOWDOWN,
];

/// The node row's GPU key.
pub const NODE: &str = "node";

/// One GPU (or the node) over one soak rung.
#[derive(Debug, Clone, Serialize)]
pub struct SoakRow {
    /// Rung id.
    pub rung_id: u32,
    /// Rung label.
    pub rung: String,
    /// GPU key, or `node` (the sum of the GPUs).
    pub gpu: String,
    /// Measured window: from its start to the last buffered sample in it
    /// (the node: its shortest GPU), s.
    pub window_s: f64,
    /// The window the plan gave the rung, s.
    pub planned_s: f64,
    /// Why the figures are from incomplete data (empty: they are not): a
    /// soak that ran short of its plan (a lost GPU, an interlock, a stop).
    pub incomplete: String,
    /// Length of the first and last window used, s.
    pub edge_s: f64,
    /// Mean over the first window, W.
    pub first_mean_w: Option<f64>,
    /// Mean over the last window, W.
    pub last_mean_w: Option<f64>,
    /// Last − first, W.
    pub change_w: Option<f64>,
    /// Least-squares slope through the 10 s means, W per 10 min.
    pub drift_w_per_10min: Option<f64>,
    /// 95 % interval of the slope, low end.
    pub drift_lo_w_per_10min: Option<f64>,
    /// 95 % interval of the slope, high end.
    pub drift_hi_w_per_10min: Option<f64>,
    /// 10 s means the slope was fitted through.
    pub drift_bins: usize,
    /// Time from the window's start until the GPU temperature stays within
    /// 1 °C of its final plateau, s (the node: its slowest GPU).
    pub equilibrium_s: Option<f64>,
    /// How the equilibrium was judged (`reached`, or why not).
    pub equilibrium: String,
    /// Mean GPU temperature over the first window, °C.
    pub temp_start_c: Option<f64>,
    /// Mean GPU temperature over the last window, °C.
    pub temp_end_c: Option<f64>,
    /// Mean SM clock over the first window, MHz.
    pub sm_clock_start_mhz: Option<f64>,
    /// Mean SM clock over the last window, MHz.
    pub sm_clock_end_mhz: Option<f64>,
    /// Time from the window's start of the first throttle bit, s (the node:
    /// its earliest GPU).
    pub throttle_onset_s: Option<f64>,
    /// The throttle bits of that first reading, by name (the node: with
    /// the GPU that set them).
    pub throttle_bits: String,
    /// Share of the window under the power cap (cumulative counter).
    pub power_cap_share: Option<f64>,
    /// Share of the window under thermal caps (cumulative counter).
    pub thermal_cap_share: Option<f64>,
}

/// One GPU's lines for the soak plot, against seconds since the soak's start.
#[derive(Debug, Clone, Default)]
pub struct SoakLines {
    /// GPU key.
    pub gpu: String,
    /// 1 s means of the buffered samples: (s, W).
    pub power_w: Vec<(f64, f64)>,
    /// GPU temperature readings: (s, °C).
    pub temp_c: Vec<(f64, f64)>,
    /// SM clock readings: (s, MHz).
    pub sm_clock_mhz: Vec<(f64, f64)>,
}

/// The soak analysis of a run.
#[derive(Debug, Clone, Default)]
pub struct Soak {
    /// Per soak rung: every GPU, then the node.
    pub rows: Vec<SoakRow>,
    /// The plot's lines of the first soak rung, and its label.
    pub plot: Option<(String, Vec<SoakLines>)>,
}

/// Analyses every soak rung of the run; `edge_s` is the first and last
/// window's length (shortened to a third of the window when the soak is
/// shorter than three of them).
pub fn analyse(run: &Run, series: &SeriesSet, edge_s: f64) -> Soak {
    let mut out = Soak::default();
    for r in run.rungs.iter().filter(|r| r.info.kind == PhaseKind::Soak) {
        let gpus: Vec<SoakRow> = run
            .series
            .iter()
            .map(|(node, gpu)| gpu_row(r, series, node, gpu, edge_s))
            .collect();
        let node = node_row(r, series, run, &gpus);
        if out.plot.is_none() {
            let lines = run
                .series
                .iter()
                .map(|(node, gpu)| plot_lines(r, series, node, gpu))
                .collect();
            out.plot = Some((r.info.label.clone(), lines));
        }
        out.rows.extend(gpus);
        out.rows.push(node);
    }
    out
}

/// The first and last window of `from..to`: (first end, last start, edge s).
fn edges(from: i64, to: i64, edge_s: f64) -> (i64, i64, f64) {
    let window_ns = (to - from).max(1);
    let edge_ns = secs_to_ns_trunc(edge_s).min(window_ns / 3).max(1);
    (from + edge_ns, to - edge_ns, ns_to_s(edge_ns))
}

/// Samples ending this much before the planned end mark a soak incomplete, s.
const INCOMPLETE_S: f64 = 2.0;

fn gpu_row(r: &RungWindow, series: &SeriesSet, node: &str, gpu: &str, edge_s: f64) -> SoakRow {
    let from = r.measure_from_ns;
    // The window as far as this GPU's samples reach: a soak cut short is
    // analysed over the time it ran, and says so.
    let reached = span(series.get_at(node, gpu, "buffered_w"), from, r.end_ns)
        .last()
        .map_or(from, |p| p.0 + 1)
        .min(r.end_ns);
    let short = secs(r.end_ns - reached) > INCOMPLETE_S;
    let to = if short { reached } else { r.end_ns };
    let incomplete = if short {
        format!(
            "ran {:.0} of {:.0} s",
            secs(to - from),
            secs(r.end_ns - from)
        )
    } else {
        String::new()
    };
    let (first_end, last_start, edge_s) = edges(from, to, edge_s);
    let get = |inst: &str| span(series.get_at(node, gpu, inst), from, to);
    let mean_in = |inst: &str, a: i64, b: i64| mean(&values(span(get(inst), a, b)));
    let power = get("buffered_w");
    let first = mean_in("buffered_w", from, first_end);
    let last = mean_in("buffered_w", last_start, to);
    let fit = drift(&bin_means(power, from, to));
    let (equilibrium_s, equilibrium) = equilibrium(get("gpu_temp_c"), from, to, last_start);
    let onset = get("clock_events").iter().find_map(|p| {
        let bits = ClockEventBits(p.1 as u64);
        let names: Vec<&str> = THROTTLE_BITS
            .iter()
            .filter(|b| bits.contains(**b))
            .flat_map(|b| ClockEventBits(*b).names())
            .collect();
        (!names.is_empty()).then(|| (secs(p.0 - from), names.join(" ")))
    });
    SoakRow {
        rung_id: r.info.id,
        rung: r.info.label.clone(),
        gpu: gpu.to_string(),
        window_s: r3(secs(to - from)),
        planned_s: r3(secs(r.end_ns - from)),
        incomplete,
        edge_s: r3(edge_s),
        first_mean_w: first.map(r3),
        last_mean_w: last.map(r3),
        change_w: first.zip(last).map(|(a, b)| r3(b - a)),
        drift_w_per_10min: fit.map(|f| r3(f.0)),
        drift_lo_w_per_10min: fit.map(|f| r3(f.0 - f.1)),
        drift_hi_w_per_10min: fit.map(|f| r3(f.0 + f.1)),
        drift_bins: fit.map_or(0, |f| f.2),
        equilibrium_s: equilibrium_s.map(r3),
        equilibrium,
        temp_start_c: mean_in("gpu_temp_c", from, first_end).map(r3),
        temp_end_c: mean_in("gpu_temp_c", last_start, to).map(r3),
        sm_clock_start_mhz: mean_in("sm_clock_mhz", from, first_end).map(r3),
        sm_clock_end_mhz: mean_in("sm_clock_mhz", last_start, to).map(r3),
        throttle_onset_s: onset.as_ref().map(|o| r3(o.0)),
        throttle_bits: onset.map(|o| o.1).unwrap_or_default(),
        power_cap_share: cap_share(series, node, gpu, "power_cap_time_ns", from, to),
        thermal_cap_share: cap_share(series, node, gpu, "thermal_cap_time_ns", from, to),
    }
}

/// The node: the GPUs' windows summed (a figure only where every GPU has
/// it), the slowest equilibrium and the earliest throttle onset.
fn node_row(r: &RungWindow, series: &SeriesSet, run: &Run, gpus: &[SoakRow]) -> SoakRow {
    let (from, to) = (r.measure_from_ns, r.end_ns);
    let sum = |f: fn(&SoakRow) -> Option<f64>| -> Option<f64> {
        gpus.iter().map(f).sum::<Option<f64>>().map(r3)
    };
    // The node's 10 s means: bins every GPU has.
    let per_gpu: Vec<Vec<(f64, f64)>> = run
        .series
        .iter()
        .map(|(n, g)| bin_means(span(series.get_at(n, g, "buffered_w"), from, to), from, to))
        .collect();
    let mut node_bins: Vec<(f64, f64)> = Vec::new();
    if let Some(first) = per_gpu.first() {
        for &(t, _) in first {
            let v: Option<f64> = per_gpu
                .iter()
                .map(|b| b.iter().find(|p| p.0 == t).map(|p| p.1))
                .sum();
            if let Some(v) = v {
                node_bins.push((t, v));
            }
        }
    }
    let fit = drift(&node_bins);
    let slowest = gpus
        .iter()
        .map(|g| g.equilibrium_s)
        .collect::<Option<Vec<f64>>>();
    let (equilibrium_s, equilibrium) = match slowest {
        Some(v) if !v.is_empty() => {
            let worst = v.iter().copied().fold(f64::MIN, f64::max);
            let who = gpus
                .iter()
                .find(|g| g.equilibrium_s == Some(worst))
                .map_or("", |g| g.gpu.as_str());
            (Some(worst), format!("reached (slowest: {who})"))
        }
        _ => {
            let not: Vec<&SoakRow> = gpus.iter().filter(|g| g.equilibrium_s.is_none()).collect();
            let names: Vec<&str> = not.iter().map(|g| g.gpu.as_str()).collect();
            // One GPU: its reason too.
            let why = match not.as_slice() {
                [one] => format!(
                    ": {}",
                    one.equilibrium
                        .strip_prefix("not reached: ")
                        .or_else(|| one.equilibrium.strip_prefix("not judged: "))
                        .unwrap_or(&one.equilibrium)
                ),
                _ => String::new(),
            };
            let judged = not.iter().any(|g| !g.equilibrium.starts_with("not judged"));
            let word = if judged {
                "not reached by"
            } else {
                "not judged for"
            };
            (None, format!("{word} {}{why}", names.join(", ")))
        }
    };
    let onset = gpus
        .iter()
        .filter_map(|g| g.throttle_onset_s.map(|t| (t, g)))
        .min_by(|a, b| a.0.total_cmp(&b.0));
    let max_of = |f: fn(&SoakRow) -> Option<f64>| gpus.iter().filter_map(f).reduce(f64::max);
    let mean_of = |f: fn(&SoakRow) -> Option<f64>| {
        let v: Vec<f64> = gpus.iter().filter_map(f).collect();
        mean(&v).map(r3)
    };
    let first = sum(|g| g.first_mean_w);
    let last = sum(|g| g.last_mean_w);
    let short: Vec<String> = gpus
        .iter()
        .filter(|g| !g.incomplete.is_empty())
        .map(|g| format!("{} {}", g.gpu, g.incomplete))
        .collect();
    SoakRow {
        rung_id: r.info.id,
        rung: r.info.label.clone(),
        gpu: NODE.to_string(),
        window_s: gpus
            .iter()
            .map(|g| g.window_s)
            .reduce(f64::min)
            .unwrap_or(r3(secs(to - from))),
        planned_s: r3(secs(to - from)),
        incomplete: short.join("; "),
        edge_s: gpus.first().map_or(0.0, |g| g.edge_s),
        first_mean_w: first,
        last_mean_w: last,
        change_w: first.zip(last).map(|(a, b)| r3(b - a)),
        drift_w_per_10min: fit.map(|f| r3(f.0)),
        drift_lo_w_per_10min: fit.map(|f| r3(f.0 - f.1)),
        drift_hi_w_per_10min: fit.map(|f| r3(f.0 + f.1)),
        drift_bins: fit.map_or(0, |f| f.2),
        equilibrium_s,
        equilibrium,
        temp_start_c: max_of(|g| g.temp_start_c),
        temp_end_c: max_of(|g| g.temp_end_c),
        sm_clock_start_mhz: mean_of(|g| g.sm_clock_start_mhz),
        sm_clock_end_mhz: mean_of(|g| g.sm_clock_end_mhz),
        throttle_onset_s: onset.map(|o| o.0),
        throttle_bits: onset
            .map(|o| format!("{}: {}", o.1.gpu, o.1.throttle_bits))
            .unwrap_or_default(),
        power_cap_share: max_of(|g| g.power_cap_share),
        thermal_cap_share: max_of(|g| g.thermal_cap_share),
    }
}

/// Means of the samples in whole [`BIN_S`] bins from `from`: (bin centre
/// s since `from`, W). A bin with less than half its expected samples
/// (judged by the median spacing) is left out.
fn bin_means(s: &[(i64, f64)], from: i64, to: i64) -> Vec<(f64, f64)> {
    let bin_ns = secs_to_ns_trunc(BIN_S);
    let spacing = ms_to_ns_f64(crate::sensor::series::median_spacing_ms(s).unwrap_or(0.0));
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
fn equilibrium(temp: &[(i64, f64)], from: i64, to: i64, last_start: i64) -> (Option<f64>, String) {
    let last: Vec<f64> = values(span(temp, last_start, to));
    let spacing_ns = ms_to_ns_f64(crate::sensor::series::median_spacing_ms(temp).unwrap_or(0.0));
    let expected = if spacing_ns > 0.0 {
        (to - last_start) as f64 / spacing_ns
    } else {
        0.0
    };
    if last.len() < 2 || (last.len() as f64) < 0.5 * expected {
        return (
            None,
            format!(
                "not judged: {} temperature reading(s) in the last window",
                last.len()
            ),
        );
    }
    let plateau = mean(&last).unwrap_or_default();
    let bins = bin_means(temp, from, to);
    let Some(last_bin) = bins.last() else {
        return (
            None,
            "not judged: no whole 10 s bin of temperature readings".into(),
        );
    };
    if (last_bin.1 - plateau).abs() > EQUILIBRIUM_C {
        return (
            None,
            format!(
                "not reached: the 10 s from {:.0} s are off the plateau ({plateau:.1} °C)",
                last_bin.0 - BIN_S / 2.0
            ),
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
            if first == 0 {
                "not judged: no temperature readings before the last window".into()
            } else {
                format!("not reached: still moving in the last window (plateau {plateau:.1} °C)")
            },
        );
    }
    // A steady climb stays within 1 °C of its own last minute for a while:
    // the plateau has to hold from the equilibrium point on.
    let Some((per_10min, _, _)) = drift(held) else {
        return (
            None,
            format!(
                "not judged: under 4 whole 10 s bins from {at_s:.0} s to show the plateau holds"
            ),
        );
    };
    let span_s = held[held.len() - 1].0 - held[0].0 + BIN_S;
    let moved = per_10min / 600.0 * span_s;
    if moved.abs() > EQUILIBRIUM_C {
        return (
            None,
            format!(
                "not reached: still {} {:.1} °C from {at_s:.0} s to the end ({:+.2} °C/min)",
                if moved > 0.0 { "climbing" } else { "falling" },
                moved.abs(),
                per_10min / 10.0
            ),
        );
    }
    // ... and the last window's two halves must agree.
    let half = last.len() / 2;
    if let (Some(a), Some(b)) = (mean(&last[..half]), mean(&last[half..]))
        && (b - a).abs() > LAST_WINDOW_C
    {
        return (
            None,
            format!(
                "not reached: {:+.1} °C between the halves of the last window",
                b - a
            ),
        );
    }
    (Some(at_s), "reached".into())
}

fn plot_lines(r: &RungWindow, series: &SeriesSet, node: &str, gpu: &str) -> SoakLines {
    let (from, to) = (r.measure_from_ns, r.end_ns);
    let rel = |s: &[(i64, f64)]| s.iter().map(|p| (secs(p.0 - from), p.1)).collect();
    let power = span(series.get_at(node, gpu, "buffered_w"), from, to);
    let mut power_w = Vec::new();
    let mut k = 0i64;
    while from + k * NS_PER_S < to {
        let (a, b) = (from + k * NS_PER_S, from + (k + 1) * NS_PER_S);
        if let Some(m) = mean(&values(span(power, a, b))) {
            power_w.push((secs(a - from) + 0.5, m));
        }
        k += 1;
    }
    SoakLines {
        gpu: gpu.to_string(),
        power_w,
        temp_c: rel(span(series.get_at(node, gpu, "gpu_temp_c"), from, to)),
        sm_clock_mhz: rel(span(series.get_at(node, gpu, "sm_clock_mhz"), from, to)),
    }
}

fn secs(ns: i64) -> f64 {
    ns_to_s(ns)
}

fn values(s: &[(i64, f64)]) -> Vec<f64> {
    s.iter().map(|p| p.1).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slope_and_its_interval_hold_a_known_trend() {
        // 30 bins of 10 s, 1 W per minute (10 W per 10 min) plus a
        // deterministic ±2 W alternation.
        let pts: Vec<(f64, f64)> = (0..30)
            .map(|i| {
                let t = 5.0 + 10.0 * i as f64;
                (t, 700.0 + t / 60.0 + if i % 2 == 0 { 2.0 } else { -2.0 })
            })
            .collect();
        let (slope, half, n) = drift(&pts).unwrap();
        assert_eq!(n, 30);
        // The alternation itself tilts the fit by −0.8 W/10 min over 30 points.
        assert!((slope - 10.0).abs() < 1.0, "{slope}");
        assert!(
            half > 0.0 && slope - half < 10.0 && 10.0 < slope + half,
            "{slope} ± {half}"
        );
        // A flat series: an interval around zero.
        let flat: Vec<(f64, f64)> = pts
            .iter()
            .map(|p| (p.0, 700.0 + (p.1 - 700.0 - p.0 / 60.0)))
            .collect();
        let (s0, h0, _) = drift(&flat).unwrap();
        assert!(s0 - h0 <= 0.0 && 0.0 <= s0 + h0, "{s0} ± {h0}");
        // Too few points: nothing.
        assert!(drift(&pts[..3]).is_none());
    }

    #[test]
    fn autocorrelated_wander_widens_the_interval() {
        // A slow sine (one period over the window) on a flat level: the
        // naive interval would call its tilt a trend.
        let wave = |i: usize| 5.0 * (i as f64 / 30.0 * std::f64::consts::TAU).sin();
        let pts: Vec<(f64, f64)> = (0..30)
            .map(|i| (10.0 * i as f64, 700.0 + wave(i)))
            .collect();
        let (s, h, _) = drift(&pts).unwrap();
        let white: Vec<(f64, f64)> = (0..30)
            .map(|i| (10.0 * i as f64, 700.0 + wave((i * 7) % 30)))
            .collect();
        let (_, hw, _) = drift(&white).unwrap();
        assert!(h > 2.0 * hw, "wander ±{h} vs shuffled ±{hw}");
        assert!(s.abs() <= h, "{s} ± {h}");
    }

    #[test]
    fn equilibrium_is_when_the_temperature_stays_near_its_plateau() {
        let s = 1_000_000_000i64;
        // Rising 1 °C per 5 s from 40 to 70 °C (at 150 s), then flat to 300 s.
        let temp: Vec<(i64, f64)> = (0..=300)
            .map(|t| (t * s, (40.0 + t as f64 / 5.0).min(70.0)))
            .collect();
        let (at, how) = equilibrium(&temp, 0, 301 * s, 240 * s);
        assert_eq!(how, "reached");
        // The 10 s bin from 140 s averages 68.9 °C (1.1 °C off the 70 °C
        // plateau); from 150 s every bin is on it.
        let at = at.unwrap();
        assert!((at - 150.0).abs() < 1e-9, "{at}");
        // Still rising through the last window: not reached.
        let rising: Vec<(i64, f64)> = (0..=300).map(|t| (t * s, 40.0 + t as f64 / 10.0)).collect();
        let (none, why) = equilibrium(&rising, 0, 301 * s, 240 * s);
        assert!(none.is_none() && why.starts_with("not reached"), "{why}");
        // Flat throughout: reached at once.
        let flat: Vec<(i64, f64)> = (0..100).map(|t| (t * s, 60.0)).collect();
        assert_eq!(equilibrium(&flat, 0, 100 * s, 60 * s).0, Some(0.0));
    }

    #[test]
    fn a_steady_climb_is_not_a_plateau() {
        // 0.8 °C a minute all the way: within 1 °C of the last minute's
        // mean from about 190 s, but still climbing.
        let ms = 1_000_000i64;
        let temp: Vec<(i64, f64)> = (0..1500)
            .map(|i| (i * 200 * ms, 60.0 + 0.8 * (i as f64 * 0.2) / 60.0))
            .collect();
        let (at, why) = equilibrium(&temp, 0, 300_000 * ms, 240_000 * ms);
        assert_eq!(at, None);
        assert!(why.starts_with("not reached: still climbing"), "{why}");
        assert!(why.contains("+0.80 °C/min"), "{why}");
        // The same climb over 300 s but only 0.9 °C in all stays within
        // the 1 °C the rule allows.
        let slow: Vec<(i64, f64)> = (0..1500)
            .map(|i| (i * 200 * ms, 60.0 + 0.9 * (i as f64 / 1500.0)))
            .collect();
        assert_eq!(
            equilibrium(&slow, 0, 300_000 * ms, 240_000 * ms).1,
            "reached"
        );
    }

    #[test]
    fn missing_readings_are_not_judged_as_equilibrium() {
        let ms = 1_000_000i64;
        let flat = |from_s: i64, to_s: i64| -> Vec<(i64, f64)> {
            (from_s * 5..to_s * 5)
                .map(|i| (i * 200 * ms, 60.0))
                .collect()
        };
        // Readings only in the last window: nothing before it to judge.
        let late = flat(240, 300);
        let (at, why) = equilibrium(&late, 0, 300_000 * ms, 240_000 * ms);
        assert_eq!(at, None);
        assert!(
            why.starts_with("not judged: no temperature readings before"),
            "{why}"
        );
        // Readings from 100 s: equilibrium from the first bin there is, not 0 s.
        let gap = flat(100, 300);
        assert_eq!(
            equilibrium(&gap, 0, 300_000 * ms, 240_000 * ms).0,
            Some(100.0)
        );
        // One reading in the last window is no plateau.
        let mut sparse = flat(0, 230);
        sparse.push((299_000 * ms, 60.0));
        let (at, why) = equilibrium(&sparse, 0, 300_000 * ms, 240_000 * ms);
        assert_eq!(at, None);
        assert!(
            why.starts_with("not judged: 1 temperature reading"),
            "{why}"
        );
    }

    #[test]
    fn whole_degree_flicker_on_the_plateau_is_equilibrium() {
        // As a real H200 read it: whole degrees, 57 °C until 120 s, then 59
        // with a 60 every 20th reading and a 58 every 37th (plateau about
        // 59.02 °C, so each 58 is more than 1 °C off it), 5 readings a second.
        let ms = 1_000_000i64;
        let temp: Vec<(i64, f64)> = (0..1500)
            .map(|i| {
                let t = i * 200 * ms;
                let v = if t < 120_000 * ms {
                    57.0
                } else if i % 37 == 0 {
                    58.0
                } else if i % 20 == 0 {
                    60.0
                } else {
                    59.0
                };
                (t, v)
            })
            .collect();
        let (at, how) = equilibrium(&temp, 0, 300_000 * ms, 240_000 * ms);
        assert_eq!(how, "reached");
        assert_eq!(at, Some(120.0));
        // A single reading would have called it still moving: a 58 lies in
        // the last window, more than 1 °C off the plateau.
        let plateau = mean(&values(span(&temp, 240_000 * ms, 300_000 * ms))).unwrap();
        assert!(
            span(&temp, 240_000 * ms, 300_000 * ms)
                .iter()
                .any(|p| (p.1 - plateau).abs() > EQUILIBRIUM_C)
        );
    }
}
