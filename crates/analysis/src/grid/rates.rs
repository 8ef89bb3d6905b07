//! A composed cycle's edges as grid figures: its fastest 10–90 % rise and
//! fall ([`edge_rate`]) and its fastest change over each window
//! ([`window_changes`]).

use super::{GridFigure, MAX_STEP_NOISE, Metric, NUMBER_ABOVE_RESOLUTION, Window, Withheld, shape};
use crate::cycle::CycleInterval;
use powerlab_campaign::Ramp;
use powerlab_core::units::ms_to_s;

/// The fastest rise and fall of the cyclic `values` (spaced `step_ms`)
/// over every [`Window`], resting on resolution `res_ms`: a window under
/// the resolution is withheld, one under [`NUMBER_ABOVE_RESOLUTION`] × the
/// resolution sees an edge smoothed by it, and its figure is a lower
/// bound. Where the cycle cannot time the
/// direction's 10–90 % edge (`untimed`: up, down), those short windows are
/// withheld for the same reason: the reconstruction's ripple, not the
/// node, sets their fastest change (on the simulated node, a staggered
/// 1 s rung's 10 ms rise read 28 % above the truth); where the cycle's
/// step is within its noise, every window is (a staggered 100 ms rung's
/// 1 s change read 2.7 × the truth).
pub fn window_changes(
    values: &[f64],
    step_ms: f64,
    res_ms: f64,
    untimed: [Option<Withheld>; 2],
) -> Vec<GridFigure> {
    let one = |metric: Metric, w: Window, dir: Ramp| {
        let lower_bound = w.ms() < NUMBER_ABOVE_RESOLUTION * res_ms;
        let why = match dir {
            Ramp::Up => untimed[0],
            Ramp::Down => untimed[1],
        };
        // A step within the cycle's noise: every window reads the noise.
        let noisy = matches!(why, Some(Withheld::StepInNoise(_, _)));
        if let Some(why) = why.filter(|_| lower_bound || noisy) {
            return GridFigure::withheld(metric, why);
        }
        // Under the resolution the cycle holds no change of its own: its
        // restored harmonics ring, and a staggered 500 ms rung's 1 ms
        // rise read 24 % above the truth.
        if w.ms() < res_ms {
            return GridFigure::withheld(metric, Withheld::ShorterThanResolution(res_ms));
        }
        match shape::fastest_change(values, step_ms, w.ms(), dir) {
            Some(v) => GridFigure {
                lower_bound,
                ..GridFigure::stated(metric, v, res_ms)
            },
            None => GridFigure::withheld(metric, Withheld::ShorterThanStep(step_ms)),
        }
    };
    Window::ALL
        .iter()
        .map(|w| one(Metric::RiseOver(*w), *w, Ramp::Up))
        .chain(
            Window::ALL
                .iter()
                .map(|w| one(Metric::FallOver(*w), *w, Ramp::Down)),
        )
        .collect()
}

/// The fastest 10–90 % rise or fall of a cycle `values` (one period of
/// `period_ms`, cyclic), 0.8 × step / time, W/s, resting on resolution
/// `res_ms`; the noise check and the step's ± come from `interval` (the
/// composed cycle's bootstrap), where there is one.
pub fn edge_rate(
    values: &[f64],
    period_ms: f64,
    res_ms: f64,
    interval: Option<&CycleInterval>,
    metric: Metric,
    dir: Ramp,
) -> GridFigure {
    let step_ms = period_ms / values.len().max(1) as f64;
    let Some(s) = shape::plateaus(values) else {
        return GridFigure::withheld(metric, Withheld::Flat);
    };
    let noise = interval.map_or(0.0, |i| 0.5 * i.swing.width());
    if noise > MAX_STEP_NOISE * s.height() {
        return GridFigure::withheld(metric, Withheld::StepInNoise(s.height(), noise));
    }
    let Some(edge) = shape::fastest_edge(values, s, dir, step_ms) else {
        return GridFigure::withheld(metric, Withheld::NoEdge);
    };
    let t_steps = edge.steps;
    // The cycle cannot time an edge shorter than its resolution: a
    // shorter one (a wiggle of the reconstruction, or an edge it cut)
    // is timed as the resolution, and the rate is a lower bound.
    let t_ms = (t_steps * step_ms).max(res_ms);
    let value = 0.8 * edge.height / ms_to_s(t_ms);
    let mut f = GridFigure::stated(metric, value, res_ms);
    if t_ms < NUMBER_ABOVE_RESOLUTION * res_ms {
        f.lower_bound = true;
    } else {
        // The edge alone may be as short as √(t² − r²); each crossing
        // is placed to half a grid step; the step's height to the
        // bootstrap's swing interval.
        let edge = (t_ms / (t_ms * t_ms - res_ms * res_ms).sqrt() - 1.0).max(0.0);
        let timing = step_ms / t_ms;
        let height = interval.map_or(0.0, |i| {
            0.5 * i.swing.width() / i.swing.centre.abs().max(f64::MIN_POSITIVE)
        });
        f.plus_minus = Some(value * (edge + timing + height));
    }
    f
}
