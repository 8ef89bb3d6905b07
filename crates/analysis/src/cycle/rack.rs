//! The rack's cycle of a rung: its nodes' composed cycles summed.

use super::{CyclePart, CycleStats, NodeCycle, window_levels};
use crate::fft::Complex64;
use crate::fft::Planner;
use crate::metric::{self, MetricValue, MetricValues};
use powerlab_core::units::ms_to_ns;
use powerlab_samples::load::RungWindow;

/// The rack's cycle of one rung: its nodes' composed cycles (each phase 0
/// at the rung's epoch, which every node of a rack shares) added point by
/// point in the order given, then laid over the rung's window `r` as a
/// node cycle is. Cycles of different lengths (nodes that kept different
/// harmonics) are first resampled to the longest through their spectra
/// ([`resample`]). Harmonics and coverage are the lowest of any node, samples the
/// sum. None without parts or when the nodes ran different periods.
pub fn sum_cycles(r: &RungWindow, parts: &[&CyclePart]) -> Option<NodeCycle> {
    let first = parts.first()?;
    if parts
        .iter()
        .any(|c| (c.period_ms - first.period_ms).abs() > 1e-9 || c.values.is_empty())
    {
        return None;
    }
    let m = parts.iter().map(|c| c.values.len()).max()?;
    let mut planner = Planner::new();
    let mut values = vec![0.0; m];
    for c in parts {
        let own;
        let v = if c.values.len() == m {
            &c.values
        } else {
            own = resample(&mut planner, &c.values, m);
            &own
        };
        for (acc, x) in values.iter_mut().zip(v) {
            *acc += x;
        }
    }
    let p = ms_to_ns(first.period_ms);
    let levels = window_levels(
        &values,
        p,
        r.measure_from_ns - r.epoch_ns,
        r.end_ns - r.measure_from_ns,
    );
    // The registry's own metrics, read from the sum's levels; their
    // intervals are the nodes' summed (the rack's collation adds them).
    let mut metrics = MetricValues::default();
    for m in metric::own() {
        if let Some(v) = m.of(&levels) {
            let value = Some(v);
            metrics.set(m.column(), MetricValue { value, ci95: None });
        }
    }
    Some(NodeCycle {
        rung_id: r.info.id,
        period_ms: first.period_ms,
        harmonics: parts.iter().map(|c| c.harmonics).min().unwrap_or(0),
        values,
        coverage: parts.iter().map(|c| c.coverage).fold(1.0, f64::min),
        samples: parts.iter().map(|c| c.samples).sum(),
        gpu_on_w: Vec::new(),
        gpu_cycles: Vec::new(),
        gpu_levels: Vec::new(),
        range_step_w: None,
        step_w: f64::NAN,
        stats: CycleStats::of(&levels),
        interval: None,
        metrics,
    })
}

/// A cycle synthesised from harmonics, evaluated at `m` evenly spaced
/// points instead: its spectrum padded with zeros. Exact for a cycle
/// [`compose`](super::compose) wrote (its harmonics stop below half its length), so the
/// mean and every harmonic are kept, unlike a linear interpolation.
pub(super) fn resample(planner: &mut Planner, values: &[f64], m: usize) -> Vec<f64> {
    let n = values.len();
    let mut spec: Vec<Complex64> = values.iter().map(|v| Complex64::new(*v, 0.0)).collect();
    planner.forward(&mut spec);
    let mut out = vec![Complex64::new(0.0, 0.0); m];
    let half = (n - 1) / 2;
    out[0] = spec[0] / n as f64;
    for k in 1..=half.min((m - 1) / 2) {
        out[k] = spec[k] / n as f64;
        out[m - k] = spec[n - k] / n as f64;
    }
    planner.inverse(&mut out);
    out.iter().map(|c| c.re).collect()
}
