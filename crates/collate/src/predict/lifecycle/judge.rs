//! The lifecycle study's figures against the site's limits: the largest
//! step of any event against `max_step_mw`, a crash's step against
//! `max_load_loss_mw`, the fastest ramps between consecutive second and
//! minute means against the `[grid]`'s MW/s (scaled to the job's GPUs) and
//! MW/min limits, and the highest mean over each supply window against the
//! `[supply]`. A limit not declared is stated without a verdict.

use super::study::{ChannelFigures, Study};
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
    /// The figure.
    pub value: f64,
    /// Its unit.
    pub unit: &'static str,
    /// The limit (None: not declared).
    pub limit: Option<f64>,
    /// Within it (None: no limit).
    pub pass: Option<bool>,
}

/// Every verdict of every scenario.
pub fn judge(s: &Study, grid: Option<&Grid>, supply: Option<&Supply>, gpus: u64) -> Vec<Verdict> {
    s.channels
        .iter()
        .flat_map(|c| channel(c, grid, supply, gpus))
        .collect()
}

fn channel(
    c: &ChannelFigures,
    grid: Option<&Grid>,
    supply: Option<&Supply>,
    gpus: u64,
) -> Vec<Verdict> {
    let mut v = Vec::new();
    let mut add = |item: String, value: f64, unit: &'static str, limit: Option<f64>| {
        v.push(Verdict {
            scenario: c.label.clone(),
            item,
            value,
            unit,
            limit,
            pass: limit.map(|l| value <= l),
        });
    };
    let steps = |f: &dyn Fn(EventKind) -> bool| {
        c.events
            .iter()
            .filter(|e| f(e.kind))
            .map(|e| e.step_mw())
            .filter(|x| x.is_finite())
            .collect::<Vec<f64>>()
    };
    let all = steps(&|_| true);
    let up = all.iter().copied().fold(0.0, f64::max);
    let down = all.iter().map(|x| -x).fold(0.0, f64::max);
    let g = |f: fn(&Grid) -> Option<f64>| grid.and_then(f);
    add(
        "largest step up of an event".into(),
        up,
        "MW",
        g(|g| g.max_step_mw),
    );
    add(
        "largest step down of an event".into(),
        down,
        "MW",
        g(|g| g.max_step_mw),
    );
    let crash = steps(&|k| k == EventKind::Crash);
    if !crash.is_empty() {
        let loss = crash.iter().map(|x| -x).fold(0.0, f64::max);
        add(
            "load lost in a crash".into(),
            loss,
            "MW",
            g(|g| g.max_load_loss_mw),
        );
    }
    for &(w, up, down) in &c.ramps {
        let per_min = w >= 60.0;
        let (unit, k) = if per_min {
            ("MW/min", 60.0)
        } else {
            ("MW/s", 1.0)
        };
        let limit = |dir: Ramp| -> Option<f64> {
            let gr = grid?;
            if per_min {
                match dir {
                    Ramp::Up => gr.ramp_up_mw_per_min,
                    Ramp::Down => gr.ramp_down_mw_per_min,
                }
            } else {
                gr.ramp_limit_node_w_per_s(dir, gpus as usize)
                    .map(|x| x / W_PER_MW)
            }
        };
        if let Some(u) = up {
            add(
                format!("fastest rise between {w:.0} s means"),
                u * k,
                unit,
                limit(Ramp::Up),
            );
        }
        if let Some(d) = down {
            add(
                format!("fastest fall between {w:.0} s means"),
                d * k,
                unit,
                limit(Ramp::Down),
            );
        }
    }
    for &(ms, max) in &c.max_means {
        if let Some(m) = max {
            let limit = supply.and_then(|s| s.limit_at(ms)).map(|w| w / W_PER_MW);
            add(format!("highest {} mean", window_words(ms)), m, "MW", limit);
        }
    }
    if let Some(share) = c.band_share_pct {
        add(
            "share of the swing's power in the band".into(),
            share,
            "%",
            g(|g| g.max_band_share_pct),
        );
    }
    v
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
