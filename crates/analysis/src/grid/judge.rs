//! A grid figure against the campaign's `[grid]`: its limit (a ramp limit
//! scaled to the node's GPUs), the margin and the verdict.

use super::{GridFigure, Metric};
use powerlab_campaign::{Grid, Ramp};
use serde::Serialize;

/// A grid figure's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GridVerdict {
    /// At or below the declared limit.
    Pass,
    /// Above the declared limit (a lower bound above it too).
    Fail,
    /// Only a lower bound, and it is below the limit: the figure may be
    /// either side.
    Undetermined,
    /// An interval that holds the limit: the figure may be either side.
    Undecided,
    /// The campaign declares no limit for this metric.
    NoLimit,
    /// No figure to judge.
    NotMeasured,
}

impl GridVerdict {
    /// The verdict in words, as `grid.csv` and `report.md` name it.
    pub const fn name(self) -> &'static str {
        match self {
            GridVerdict::Pass => "pass",
            GridVerdict::Fail => "fail",
            GridVerdict::Undetermined => "undetermined (lower bound below the limit)",
            GridVerdict::Undecided => "undecided (the interval holds the limit)",
            GridVerdict::NoLimit => "no limit declared",
            GridVerdict::NotMeasured => "not measured",
        }
    }
}

/// The declared limit of `metric` for `gpus` GPUs, in the figure's unit.
pub fn limit_of(spec: &Grid, metric: Metric, gpus: usize) -> Option<f64> {
    match metric {
        Metric::RampUp | Metric::RiseOver(_) => spec.ramp_limit_node_w_per_s(Ramp::Up, gpus),
        Metric::RampDown | Metric::FallOver(_) => spec.ramp_limit_node_w_per_s(Ramp::Down, gpus),
        Metric::DynamicRange => spec.max_dynamic_range_w,
        Metric::DynamicRangePct => spec.max_dynamic_range_pct,
        Metric::BandShare => spec.max_band_share_pct,
    }
}

/// `f` with its limit, margin and verdict.
pub fn judge(f: GridFigure, spec: Option<&Grid>, gpus: usize) -> GridFigure {
    let limit = spec.and_then(|s| limit_of(s, f.metric, gpus));
    let Some(l) = limit else {
        let verdict = if f.value.is_some() {
            GridVerdict::NoLimit
        } else {
            GridVerdict::NotMeasured
        };
        return GridFigure { verdict, ..f };
    };
    let Some(v) = f.value.filter(|v| v.is_finite()) else {
        return GridFigure {
            limit,
            verdict: GridVerdict::NotMeasured,
            ..f
        };
    };
    // A figure with a ± whose interval holds the limit is on neither
    // side of it: undecided, whichever side the point lies.
    let holds = f
        .plus_minus
        .is_some_and(|pm| !f.lower_bound && v - pm <= l && l < v + pm);
    let verdict = match (v <= l, f.lower_bound, f.upper) {
        _ if holds => GridVerdict::Undecided,
        (false, _, _) => GridVerdict::Fail,
        (true, _, Some(hi)) if hi > l => GridVerdict::Undecided,
        (true, false, _) => GridVerdict::Pass,
        (true, true, _) => GridVerdict::Undetermined,
    };
    GridFigure {
        limit,
        margin: Some(l - v),
        verdict,
        ..f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> Grid {
        Grid {
            gpus: Some(1000),
            ramp_up_w_per_s_per_gpu: None,
            ramp_up_mw_per_s: Some(1.0),
            ramp_down_w_per_s_per_gpu: Some(2_000.0),
            ramp_down_mw_per_s: None,
            band_hz: [0.1, 20.0],
            max_band_share_pct: Some(20.0),
            max_dynamic_range_pct: None,
            max_dynamic_range_w: None,
            modes: Vec::new(),
            retune_iteration_pct: None,
            max_step_mw: None,
            ramp_up_mw_per_min: None,
            ramp_down_mw_per_min: None,
            max_load_loss_mw: None,
            system: None,
        }
    }

    fn fig(metric: Metric, value: f64, lower_bound: bool) -> GridFigure {
        GridFigure {
            lower_bound,
            ..GridFigure::stated(metric, value, 1.0)
        }
    }

    #[test]
    fn each_declared_limit_judges_its_metric() {
        let s = spec();
        // 1 MW/s over 1000 GPUs: 1 kW/s per GPU, 8 kW/s for a node of 8.
        let up = judge(fig(Metric::RampUp, 7_000.0, false), Some(&s), 8);
        assert_eq!((up.limit, up.margin), (Some(8_000.0), Some(1_000.0)));
        assert_eq!(up.verdict, GridVerdict::Pass);
        let down = judge(fig(Metric::RampDown, 20_000.0, true), Some(&s), 8);
        assert_eq!(down.limit, Some(16_000.0));
        assert_eq!(down.verdict, GridVerdict::Fail);
        let bound = judge(fig(Metric::RampUp, 1_000.0, true), Some(&s), 8);
        assert_eq!(bound.verdict, GridVerdict::Undetermined);
        let share = judge(fig(Metric::BandShare, 35.0, false), Some(&s), 8);
        assert_eq!(share.margin, Some(-15.0));
        assert_eq!(share.verdict, GridVerdict::Fail);
        let range = judge(fig(Metric::DynamicRange, 900.0, false), Some(&s), 8);
        assert_eq!(range.verdict, GridVerdict::NoLimit);
        assert_eq!(range.margin, None);
        let none = judge(fig(Metric::RampUp, 1.0, false), None, 8);
        assert_eq!(none.verdict, GridVerdict::NoLimit);
        // An interval: over the limit even at its lower end, under it at
        // its upper end, or holding it.
        let between = |lo, hi| {
            judge(
                GridFigure::between(Metric::BandShare, lo, hi, 1.0),
                Some(&s),
                8,
            )
        };
        assert_eq!(between(25.0, 90.0).verdict, GridVerdict::Fail);
        assert_eq!(between(5.0, 15.0).verdict, GridVerdict::Pass);
        assert_eq!(between(5.0, 25.0).verdict, GridVerdict::Undecided);
        // A ± that holds the limit, either side of it: undecided.
        let pm = |v: f64, pm: f64| {
            let f = GridFigure {
                plus_minus: Some(pm),
                ..fig(Metric::RampUp, v, false)
            };
            judge(f, Some(&s), 8).verdict
        };
        assert_eq!(pm(7_700.0, 500.0), GridVerdict::Undecided);
        assert_eq!(pm(8_300.0, 500.0), GridVerdict::Undecided);
        assert_eq!(pm(7_000.0, 500.0), GridVerdict::Pass);
        assert_eq!(pm(9_000.0, 500.0), GridVerdict::Fail);
    }
}
