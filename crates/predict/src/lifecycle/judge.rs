//! The lifecycle study's figures against the site's limits, each judged
//! on the worst instant of the waveform as written (a utility sees the
//! instant, not an iteration's mean): the largest step of any event
//! against `max_step_mw` (from the level the waveform holds just before
//! it to the one it reaches as its edge settles, the mean-to-mean step
//! beside it), a crash's loss from the iteration's peak against
//! `max_load_loss_mw`, the largest rise and fall within any second and
//! any minute against the `[grid]`'s MW/s (scaled to the job's GPUs) and
//! MW/min limits (the rates between consecutive means beside them), and
//! the highest mean over each supply window against the `[supply]`. A limit not declared is
//! stated without a verdict; a figure that cannot be measured is stated
//! as such, never judged.

use super::study::{ChannelFigures, EventFigure, INSTANT_S, Study};
use super::timeline::EventKind;
use powerlab_campaign::{Grid, Ramp, Supply};
use powerlab_core::units::W_PER_MW;
use serde::Serialize;

/// One figure against its limit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// The scenario.
    pub scenario: String,
    /// What is judged, in words.
    pub item: String,
    /// The figure (NaN: not measurable).
    pub value: f64,
    /// Its unit.
    pub unit: &'static str,
    /// The limit (None: not declared).
    pub limit: Option<f64>,
    /// Within it (None: no limit, or not measurable).
    pub pass: Option<bool>,
}

/// Every verdict of every scenario.
pub fn judge(s: &Study, grid: Option<&Grid>, supply: Option<&Supply>, gpus: u64) -> Vec<Verdict> {
    let mut v = Vec::new();
    for c in &s.channels {
        let mut add = |item: String, value: f64, unit: &'static str, limit: Option<f64>| {
            v.push(Verdict {
                scenario: c.label.clone(),
                item,
                value,
                unit,
                limit,
                pass: limit.filter(|_| value.is_finite()).map(|l| value <= l),
            });
        };
        steps(c, grid, &mut add);
        ramps(c, grid, gpus, &mut add);
        for &(ms, max) in &c.max_means {
            let limit = supply.and_then(|s| s.limit_at(ms)).map(|w| w / W_PER_MW);
            let item = match max {
                Some(_) => format!("highest {} mean", window_words(ms)),
                None => format!(
                    "highest {} mean: not measurable (shorter than the study's resolution, or longer than its span)",
                    window_words(ms)
                ),
            };
            add(item, max.unwrap_or(f64::NAN), "MW", limit);
        }
        if let Some(share) = c.band_share_pct {
            let limit = grid.and_then(|g| g.max_band_share_pct);
            add(
                "share of the swing's power in the band".into(),
                share,
                "%",
                limit,
            );
        }
    }
    v
}

/// [`INSTANT_S`] in ms, for the words.
const INSTANT_MS: f64 = INSTANT_S * 1000.0;

type Add<'a> = dyn FnMut(String, f64, &'static str, Option<f64>) + 'a;

/// The largest step up and down of any event at its worst instant
/// ([`EventFigure::instant_step_mw`]: for a crash in compute the plateau
/// to idle), the mean-to-mean step named beside it, and a crash's loss
/// from the iteration's peak: a crash may come there (its loss from the
/// mean is the typical one, named beside it).
fn steps(c: &ChannelFigures, grid: Option<&Grid>, add: &mut Add<'_>) {
    let limit = grid.and_then(|g| g.max_step_mw);
    let finite: Vec<&EventFigure> = c
        .events
        .iter()
        .filter(|e| e.step_mw().is_finite() && e.instant_step_mw().is_finite())
        .collect();
    for (sign, words) in [(1.0, "up"), (-1.0, "down")] {
        // Never below the mean-to-mean step: an event drawn where the
        // iteration stands low (a crash at an iteration's boundary, in
        // its communication) would read a step smaller than the levels'
        // (5.3 MW against 48.9 MW), and another instant of it is as likely.
        let instant = finite
            .iter()
            .map(|e| (sign * e.instant_step_mw()).max(sign * e.step_mw()))
            .fold(0.0, f64::max);
        let mean = finite
            .iter()
            .map(|e| sign * e.step_mw())
            .fold(0.0, f64::max);
        add(
            format!(
                "largest step {words} of an event at its worst instant (the waveform {} {INSTANT_MS:.0} ms before it to {} once its edge settled; {mean:.2} MW mean to mean)",
                if sign > 0.0 {
                    "lowest in the"
                } else {
                    "highest in the"
                },
                if sign > 0.0 {
                    "its highest"
                } else {
                    "its lowest"
                },
            ),
            instant,
            "MW",
            limit,
        );
    }
    let crashes: Vec<_> = c
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Crash && e.step_mw().is_finite())
        .collect();
    if crashes.is_empty() {
        return;
    }
    let worst = crashes
        .iter()
        .map(|e| e.peak_before_mw - e.after_mw)
        .fold(0.0, f64::max);
    let typical = crashes.iter().map(|e| -e.step_mw()).fold(0.0, f64::max);
    add(
        format!("load lost in a crash at the iteration's peak ({typical:.2} MW from its mean)"),
        worst,
        "MW",
        grid.and_then(|g| g.max_load_loss_mw),
    );
}

/// The largest rise and fall of the waveform within any second (MW/s, the
/// `[grid]`'s MW/s limits scaled to the job's GPUs) and any minute
/// (MW/min), the fastest between consecutive means of that window beside
/// each: a step within one second is a rate of that step per second,
/// whatever the means either side.
fn ramps(c: &ChannelFigures, grid: Option<&Grid>, gpus: u64, add: &mut Add<'_>) {
    for &(w, up, down) in &c.ramps {
        let within = c.swings.iter().find(|s| s.0 == w).map(|s| (s.1, s.2));
        let per_min = w >= 60.0;
        let (unit, k) = if per_min {
            ("MW/min", 60.0)
        } else {
            ("MW/s", 1.0)
        };
        let limit = |dir: Ramp| -> Option<f64> {
            let gr = grid?;
            match (per_min, dir) {
                (true, Ramp::Up) => gr.ramp_up_mw_per_min,
                (true, Ramp::Down) => gr.ramp_down_mw_per_min,
                (false, d) => gr
                    .ramp_limit_node_w_per_s(d, gpus as usize)
                    .map(|x| x / W_PER_MW),
            }
        };
        for (dir, words, rate, most) in [
            (Ramp::Up, "rise", up, within.map(|x| x.0)),
            (Ramp::Down, "fall", down, within.map(|x| x.1)),
        ] {
            let item = format!("fastest {words} between {w:.0} s means");
            match (most, rate) {
                (Some(m), r) => add(
                    format!(
                        "largest {words} within any {} of the waveform ({})",
                        window_words(w * 1000.0),
                        match r {
                            Some(r) => format!("{:.2} {unit} between {w:.0} s means", r * k),
                            None => format!("no two whole {w:.0} s means"),
                        }
                    ),
                    m * k / w,
                    unit,
                    limit(dir),
                ),
                (None, Some(r)) => add(item, r * k, unit, limit(dir)),
                (None, None) => add(
                    format!("{item}: not measurable (the span holds fewer than two windows)"),
                    f64::NAN,
                    unit,
                    limit(dir),
                ),
            }
        }
    }
}

/// A window in words: `20 ms`, `1 s`, `1 min`.
fn window_words(ms: f64) -> String {
    if ms >= 60_000.0 && (ms / 60_000.0).fract() == 0.0 {
        format!("{:.0} min", ms / 60_000.0)
    } else if ms >= 1000.0 {
        format!("{} s", ms / 1000.0)
    } else {
        format!("{ms} ms")
    }
}
