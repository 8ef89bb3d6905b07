//! The soak rows of one rung: each GPU's figures from its own series, and
//! the node's from the GPUs'.

use super::trend::{bin_means, drift, equilibrium};
use super::verdict::{Trend, judge, judge_node};
use super::{Equilibrium, NODE, SoakRow, THROTTLE_BITS, secs, values};
use crate::per_gpu::cap_share;
use powerlab_core::Instrument;
use powerlab_core::sample::ClockEventBits;
use powerlab_core::units::{ns_to_s, secs_to_ns_trunc};
use powerlab_samples::load::{Run, RungWindow};
use powerlab_samples::series::{SeriesSet, span};
use powerlab_samples::stats::{mean, r3};

/// The first and last window of `from..to`: (first end, last start, edge s).
fn edges(from: i64, to: i64, edge_s: f64) -> (i64, i64, f64) {
    let window_ns = (to - from).max(1);
    let edge_ns = secs_to_ns_trunc(edge_s).min(window_ns / 3).max(1);
    (from + edge_ns, to - edge_ns, ns_to_s(edge_ns))
}

/// Samples ending this much before the planned end mark a soak incomplete, s.
const INCOMPLETE_S: f64 = 2.0;

/// One GPU's soak row over the rung `r`, its first and last window
/// `edge_s` long (or shorter, see [`edges`]).
pub(super) fn gpu_row(
    r: &RungWindow,
    series: &SeriesSet,
    node: &str,
    gpu: &str,
    edge_s: f64,
) -> SoakRow {
    let from = r.measure_from_ns;
    // The window as far as this GPU's samples reach: a soak cut short is
    // analysed over the time it ran, and says so.
    let reached = span(
        series.get_at(node, gpu, Instrument::BufferedW),
        from,
        r.end_ns,
    )
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
    let get = |inst: Instrument| span(series.get_at(node, gpu, inst), from, to);
    let mean_in = |inst: Instrument, a: i64, b: i64| mean(&values(span(get(inst), a, b)));
    let power = get(Instrument::BufferedW);
    let first = mean_in(Instrument::BufferedW, from, first_end);
    let last = mean_in(Instrument::BufferedW, last_start, to);
    let fit = drift(&bin_means(power, from, to));
    let (equilibrium_s, equilibrium) = equilibrium(get(Instrument::GpuTempC), from, to, last_start);
    let onset = get(Instrument::ClockEvents).iter().find_map(|p| {
        let bits = ClockEventBits(p.1 as u64);
        let names: Vec<&str> = THROTTLE_BITS
            .iter()
            .filter(|b| bits.contains(**b))
            .flat_map(|b| ClockEventBits(*b).names())
            .collect();
        (!names.is_empty()).then(|| (secs(p.0 - from), names.join(" ")))
    });
    let trend = Trend {
        drift: fit.map(|f| (r3(f.0), r3(f.0 - f.1), r3(f.0 + f.1))),
        change_w: first.zip(last).map(|(a, b)| r3(b - a)),
        first_w: first.map(r3),
        window_s: r3(secs(to - from)),
    };
    SoakRow {
        rung_id: r.info.id,
        rung: r.info.label.clone(),
        gpu: gpu.to_string(),
        window_s: trend.window_s,
        planned_s: r3(secs(r.end_ns - from)),
        verdict: judge(trend, &incomplete),
        incomplete,
        edge_s: r3(edge_s),
        first_mean_w: trend.first_w,
        last_mean_w: last.map(r3),
        change_w: trend.change_w,
        drift_w_per_10min: trend.drift.map(|d| d.0),
        drift_lo_w_per_10min: trend.drift.map(|d| d.1),
        drift_hi_w_per_10min: trend.drift.map(|d| d.2),
        drift_bins: fit.map_or(0, |f| f.2),
        equilibrium_s: equilibrium_s.map(r3),
        equilibrium,
        temp_start_c: mean_in(Instrument::GpuTempC, from, first_end).map(r3),
        temp_end_c: mean_in(Instrument::GpuTempC, last_start, to).map(r3),
        sm_clock_start_mhz: mean_in(Instrument::SmClockMhz, from, first_end).map(r3),
        sm_clock_end_mhz: mean_in(Instrument::SmClockMhz, last_start, to).map(r3),
        throttle_onset_s: onset.as_ref().map(|o| r3(o.0)),
        throttle_bits: onset.map(|o| o.1).unwrap_or_default(),
        power_cap_share: cap_share(series, node, gpu, Instrument::PowerCapTimeNs, from, to),
        thermal_cap_share: cap_share(series, node, gpu, Instrument::ThermalCapTimeNs, from, to),
    }
}

/// The node: the GPUs' windows summed (a figure only where every GPU has
/// it), the slowest equilibrium and the earliest throttle onset.
pub(super) fn node_row(r: &RungWindow, series: &SeriesSet, run: &Run, gpus: &[SoakRow]) -> SoakRow {
    let (from, to) = (r.measure_from_ns, r.end_ns);
    let sum = |f: fn(&SoakRow) -> Option<f64>| -> Option<f64> {
        gpus.iter().map(f).sum::<Option<f64>>().map(r3)
    };
    let fit = drift(&node_bins(r, series, run));
    let (equilibrium_s, equilibrium) = node_equilibrium(gpus);
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
    let incomplete = short.join("; ");
    let trend = Trend {
        drift: fit.map(|f| (r3(f.0), r3(f.0 - f.1), r3(f.0 + f.1))),
        change_w: first.zip(last).map(|(a, b)| r3(b - a)),
        first_w: first,
        window_s: gpus
            .iter()
            .map(|g| g.window_s)
            .reduce(f64::min)
            .unwrap_or(r3(secs(to - from))),
    };
    SoakRow {
        rung_id: r.info.id,
        rung: r.info.label.clone(),
        gpu: NODE.to_string(),
        window_s: trend.window_s,
        planned_s: r3(secs(to - from)),
        verdict: judge_node(trend, &incomplete, gpus),
        incomplete,
        edge_s: gpus.first().map_or(0.0, |g| g.edge_s),
        first_mean_w: first,
        last_mean_w: last,
        change_w: trend.change_w,
        drift_w_per_10min: trend.drift.map(|d| d.0),
        drift_lo_w_per_10min: trend.drift.map(|d| d.1),
        drift_hi_w_per_10min: trend.drift.map(|d| d.2),
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

/// The node's 10 s means of the rung `r`: the sum of the GPUs' bins, at
/// the bins every GPU has.
fn node_bins(r: &RungWindow, series: &SeriesSet, run: &Run) -> Vec<(f64, f64)> {
    let (from, to) = (r.measure_from_ns, r.end_ns);
    let per_gpu: Vec<Vec<(f64, f64)>> = run
        .series
        .iter()
        .map(|(n, g)| {
            bin_means(
                span(series.get_at(n, g, Instrument::BufferedW), from, to),
                from,
                to,
            )
        })
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
    node_bins
}

/// The node's equilibrium: its slowest GPU's, where every GPU reached
/// one; else which GPUs did not (and why, where only one did not).
fn node_equilibrium(gpus: &[SoakRow]) -> (Option<f64>, Equilibrium) {
    let slowest = gpus
        .iter()
        .map(|g| g.equilibrium_s)
        .collect::<Option<Vec<f64>>>();
    match slowest {
        Some(v) if !v.is_empty() => {
            let worst = v.iter().copied().fold(f64::MIN, f64::max);
            let who = gpus
                .iter()
                .find(|g| g.equilibrium_s == Some(worst))
                .map_or("", |g| g.gpu.as_str());
            (Some(worst), Equilibrium::ReachedBySlowest(who.to_string()))
        }
        _ => {
            let not: Vec<&SoakRow> = gpus.iter().filter(|g| g.equilibrium_s.is_none()).collect();
            // One GPU: its reason too.
            let why = match not.as_slice() {
                [one] => match &one.equilibrium {
                    Equilibrium::Unreached(u) => Some(u.clone()),
                    _ => None,
                },
                _ => None,
            };
            let judged = not.iter().any(|g| match &g.equilibrium {
                Equilibrium::Unreached(u) => u.judged(),
                _ => true,
            });
            let gpus = not.iter().map(|g| g.gpu.clone()).collect();
            (None, Equilibrium::NotByAll { gpus, judged, why })
        }
    }
}
