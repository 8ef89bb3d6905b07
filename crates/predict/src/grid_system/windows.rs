//! The windows the grid study plays: per scenario, the steady job (drawn
//! as the waveform is, over the steady window) and a window around the
//! first of each kind of lifecycle event (start, checkpoint in and out,
//! crash, restart, end), cut from the streamed lifecycle study. Each is
//! the facility's absolute load in MW on the playback's even step (each
//! point the mean of the waveform's points that start within it). A long
//! span is never played whole.

use super::metrics::WindowKind;
use crate::lifecycle::study::{Sink, study};
use crate::lifecycle::timeline::EventKind;
use crate::lifecycle::{Channel, Plan};
use crate::stream::Realizer;
use powerlab_campaign::{EVENT_LEAD_S, GridSystem};
use powerlab_core::units::W_PER_MW;
use serde::Serialize;

/// One window handed to the simulator and to the screen.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlayWindow {
    /// The scenario's label.
    pub scenario: String,
    /// `steady`, or the event's name.
    pub window: String,
    /// Steady or around an event.
    pub kind: WindowKind,
    /// The event's time in the lifecycle study, s.
    pub t_event_s: Option<f64>,
    /// The facility's load, MW, one point per step.
    #[serde(skip)]
    pub p_mw: Vec<f64>,
}

impl PlayWindow {
    /// `scenario/window`: the name in `windows.json`.
    pub fn name(&self) -> String {
        format!("{}/{}", self.scenario, self.window)
    }
}

/// The name of a steady window.
pub const STEADY: &str = "steady";

/// Means of `values` (spaced `res_ms`) over bins of `step_ms`: each bin
/// the mean of the points that start within it; an empty bin (a step
/// finer than the points) repeats the one before.
pub fn binned(values: &[f64], res_ms: f64, step_ms: f64, bins: usize) -> Vec<f64> {
    let mut acc = vec![(0.0, 0u32); bins];
    for (i, v) in values.iter().enumerate() {
        let j = (i as f64 * res_ms / step_ms + 1e-9).floor() as usize;
        if let Some(a) = acc.get_mut(j) {
            a.0 += v;
            a.1 += 1;
        }
    }
    filled(&acc)
}

fn filled(acc: &[(f64, u32)]) -> Vec<f64> {
    let first = acc
        .iter()
        .find(|a| a.1 > 0)
        .map_or(0.0, |a| a.0 / f64::from(a.1));
    let mut last = first;
    acc.iter()
        .map(|a| {
            if a.1 > 0 {
                last = a.0 / f64::from(a.1);
            }
            last
        })
        .collect()
}

/// The steady window of `ch`: its waveform drawn from the start, MW.
pub fn steady(ch: &Channel, sys: &GridSystem) -> PlayWindow {
    let l = &ch.layout;
    let res_ms = l.step_ms * l.per_output.max(1) as f64;
    let n = (sys.steady_window_s * 1000.0 / res_ms).ceil() as usize;
    let mut w = vec![0.0; n];
    Realizer::new(&ch.iterations, l).fill(&mut w);
    let mw: Vec<f64> = w.iter().map(|x| x / W_PER_MW).collect();
    let bins = (sys.steady_window_s * 1000.0 / sys.step_ms).round() as usize;
    PlayWindow {
        scenario: ch.label.clone(),
        window: STEADY.into(),
        kind: WindowKind::Steady,
        t_event_s: None,
        p_mw: binned(&mw, res_ms, sys.step_ms, bins),
    }
}

/// Collects the streamed study's rows inside the windows.
struct Capture {
    /// Each window's start, s.
    t0_s: Vec<f64>,
    step_s: f64,
    bins: usize,
    /// `[window][channel][bin]`: sum and count.
    acc: Vec<Vec<Vec<(f64, u32)>>>,
}

impl Sink for Capture {
    fn row(&mut self, t_s: f64, mw: &[f64]) -> std::io::Result<()> {
        for (w, t0) in self.acc.iter_mut().zip(&self.t0_s) {
            let x = (t_s - t0) / self.step_s;
            if x < -1e-9 {
                continue;
            }
            let j = (x + 1e-9).floor() as usize;
            if j >= self.bins {
                continue;
            }
            for (c, v) in w.iter_mut().zip(mw) {
                c[j].0 += v;
                c[j].1 += 1;
            }
        }
        Ok(())
    }
}

/// The event windows of `plan`: the first event of each kind, every
/// scenario, from [`EVENT_LEAD_S`] before it for `event_window_s`
/// (clipped to the study's span).
///
/// # Errors
///
/// None in practice: the capture does not fail.
pub fn events(plan: &Plan, sys: &GridSystem) -> std::io::Result<Vec<PlayWindow>> {
    let mut firsts: Vec<(EventKind, f64)> = Vec::new();
    for e in &plan.events {
        if !firsts.iter().any(|f| f.0 == e.kind) {
            firsts.push((e.kind, e.t_s));
        }
    }
    let step_s = sys.step_ms / 1000.0;
    let span = plan.lc.span_s;
    let t0_s: Vec<f64> = firsts
        .iter()
        .map(|(_, t)| (t - EVENT_LEAD_S).clamp(0.0, (span - sys.event_window_s).max(0.0)))
        .collect();
    let bins = (sys.event_window_s.min(span) / step_s).round() as usize;
    let mut cap = Capture {
        t0_s: t0_s.clone(),
        step_s,
        bins,
        acc: vec![vec![vec![(0.0, 0); bins]; plan.channels.len()]; firsts.len()],
    };
    study(plan, &mut cap)?;
    let mut out = Vec::new();
    for (c, ch) in plan.channels.iter().enumerate() {
        for (w, (kind, t)) in firsts.iter().enumerate() {
            let lead_ms = ((t - t0_s[w]) * 1000.0).round().max(0.0) as u32;
            out.push(PlayWindow {
                scenario: ch.label.clone(),
                window: kind.name().to_string(),
                kind: WindowKind::Event { lead_ms },
                t_event_s: Some(*t),
                p_mw: filled(&cap.acc[w][c]),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_hold_the_mean_of_their_points_and_empty_ones_repeat() {
        let v = [1.0, 3.0, 5.0, 7.0];
        assert_eq!(binned(&v, 10.0, 20.0, 2), vec![2.0, 6.0]);
        assert_eq!(
            binned(&v, 10.0, 5.0, 8),
            vec![1.0, 1.0, 3.0, 3.0, 5.0, 5.0, 7.0, 7.0]
        );
        // Points beyond the last bin are left out.
        assert_eq!(binned(&v, 10.0, 20.0, 1), vec![2.0]);
    }
}
