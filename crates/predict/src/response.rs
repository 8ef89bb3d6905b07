//! The measured responses a prediction is built from: every duty rung of
//! the run with a composed cycle, as each of its GPUs' own cycle (each at
//! its own rising edge) and their mean, grouped by mitigation profile and
//! period.

use powerlab_analysis::cycle::NodeCycle;
use powerlab_analysis::grid::cycle_resolution_ms;
use powerlab_analysis::summary::RungSummary;
use powerlab_campaign::PhaseKind;
use powerlab_collate::report::Report;
use powerlab_core::kind::Mode;
use std::collections::BTreeMap;

/// The profile name of a rung that ran no mitigation.
pub const PLAIN: &str = "plain";

/// One measured rung as one GPU's response.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// Rung id.
    pub rung_id: u32,
    /// Rung label.
    pub label: String,
    /// The period the GPUs ran, ms.
    pub period_ms: f64,
    /// The on-phase's share of it.
    pub duty: f64,
    /// How the run's GPUs were started (in phase or staggered): an
    /// in-phase scenario's ± comes from in-phase rungs, a staggered one's
    /// from staggered rungs.
    pub mode: Mode,
    /// One GPU's power over one cycle (the mean of the run's GPUs), phase
    /// 0 at its rising edge, evenly spaced, W.
    pub gpu_w: Vec<f64>,
    /// Each of the run's GPUs' own cycle on the same grid, in the run's
    /// GPU order: a job's GPU slot s follows the run's GPU s mod n, so a
    /// staggered job keeps the differences between GPUs' levels.
    pub gpu_each: Vec<Vec<f64>>,
    /// The cycle's time resolution, ms (its restored harmonics).
    pub resolution_ms: f64,
    /// The highest frequency the cycle holds, Hz.
    pub highest_hz: f64,
    /// The 95 % interval's half-width relative to the figure, of the mean
    /// and of the swing (None: the cycle has no interval).
    pub rel_pm: Option<RelPm>,
    /// Why the rung's own figures are qualified (cut short, incomplete).
    pub caveat: Option<String>,
}

/// Relative half-widths of a cycle's 95 % intervals.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RelPm {
    /// Of the mean.
    pub mean: f64,
    /// Of the swing (p90 − p10).
    pub swing: f64,
    /// Of the spread (p99 − p1).
    pub spread: f64,
}

/// Every measured response of a run, by profile (`plain` or the
/// mitigation's label), each list in order of period.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Responses {
    /// By profile.
    pub profiles: BTreeMap<String, Vec<Measured>>,
    /// GPUs of the run.
    pub gpus: usize,
    /// One GPU's mean in the run's sustained rungs, W (None: none).
    pub sustained_w: Option<f64>,
    /// The run's sustained rungs' largest swing (p90 − p10 of the node),
    /// per GPU, W: what a constant load still moves (None: none).
    pub sustained_swing_w: Option<f64>,
    /// One GPU's enforced power limit, the mean of the run's GPUs' as the
    /// manifest records them, W (None: not recorded).
    pub limit_w: Option<f64>,
    /// A flat job's own recorded stretch: its constant load is that
    /// stretch, not the run's sustained rung.
    pub flat_job: bool,
}

impl Responses {
    /// The measured periods of `profile`, ms, ascending, each once.
    pub fn periods(&self, profile: &str) -> Vec<f64> {
        self.profiles
            .get(profile)
            .map_or_else(Vec::new, |v| periods_of(v))
    }
}

/// The measured periods of `list`, ms, ascending, each once.
pub fn periods_of(list: &[Measured]) -> Vec<f64> {
    let mut p: Vec<f64> = list.iter().map(|m| m.period_ms).collect();
    p.sort_unstable_by(f64::total_cmp);
    p.dedup_by(|a, b| same_period(*a, *b));
    p
}

/// Two periods within 2 % are one (a detuned rung and its repeats).
pub fn same_period(a: f64, b: f64) -> bool {
    (a - b).abs() <= 0.02 * a.abs().max(b.abs())
}

/// The responses of every duty rung of `report` with a composed cycle and
/// per-GPU cycles (a node report; a rack's sum has none), less the
/// mitigation rungs the report does not credit (`mitigation.csv`: the
/// wave they ran is not the one asked).
pub fn responses(report: &Report) -> Responses {
    let gpus = report.run.series.len();
    let mut profiles: BTreeMap<String, Vec<Measured>> = BTreeMap::new();
    let withheld: Vec<u32> = report.node().map_or_else(Vec::new, |n| {
        n.mitigation
            .rows
            .iter()
            .filter(|m| m.withheld.is_some())
            .map(|m| m.rung_id)
            .collect()
    });
    for s in &report.rungs {
        let r = &s.rung;
        if r.kind != PhaseKind::Duty || r.swinging.is_some() || withheld.contains(&r.id) {
            continue;
        }
        let Some(Ok(c)) = report.cycles.get(&r.id) else {
            continue;
        };
        let Some(m) = measured(s, c) else {
            continue;
        };
        let profile = r
            .smoothing
            .filter(|x| !x.is_none())
            .map_or_else(|| PLAIN.to_string(), |x| x.label());
        profiles.entry(profile).or_default().push(m);
    }
    for v in profiles.values_mut() {
        v.sort_by(|a, b| {
            a.period_ms
                .total_cmp(&b.period_ms)
                .then(a.rung_id.cmp(&b.rung_id))
        });
    }
    let sustained: Vec<f64> = report
        .rungs
        .iter()
        .filter(|s| s.rung.kind == PhaseKind::Sustained && s.verdict.is_none())
        .filter_map(|s| s.mean_w)
        .collect();
    let sustained_w = (!sustained.is_empty())
        .then(|| sustained.iter().sum::<f64>() / sustained.len() as f64 / gpus.max(1) as f64);
    let sustained_swing_w = report
        .rungs
        .iter()
        .filter(|s| s.rung.kind == PhaseKind::Sustained && s.verdict.is_none())
        .filter_map(|s| s.swing_w)
        .reduce(f64::max)
        .map(|w| w / gpus.max(1) as f64);
    let limits = limits_w(report);
    let limit_w = (!limits.is_empty()).then(|| limits.iter().sum::<f64>() / limits.len() as f64);
    Responses {
        profiles,
        gpus,
        sustained_w,
        sustained_swing_w,
        limit_w,
        flat_job: false,
    }
}

/// The run's GPUs' enforced power limits as its manifest recorded them at
/// the start, W (those recorded).
pub fn limits_w(report: &Report) -> Vec<f64> {
    report
        .run
        .manifest
        .backend
        .gpus
        .iter()
        .map(|g| g.power_limit_w)
        .filter(|w| w.is_finite() && *w > 0.0)
        .collect()
}

/// One rung's response: the mean of its GPUs' own cycles.
pub(crate) fn measured(s: &RungSummary, c: &NodeCycle) -> Option<Measured> {
    let n = c.gpu_cycles.len();
    let m = c.values.len();
    if n == 0 || m < 8 || c.period_ms <= 0.0 {
        return None;
    }
    let mut gpu_w = vec![0.0; m];
    for (_, v) in &c.gpu_cycles {
        if v.len() != m || v.iter().any(|x| !x.is_finite()) {
            return None;
        }
        for (a, x) in gpu_w.iter_mut().zip(v) {
            *a += x / n as f64;
        }
    }
    let rel = |b: powerlab_analysis::cycle::Bounds, v: f64| 0.5 * b.width() / v.abs().max(1e-9);
    let rel_pm = c.interval.map(|i| RelPm {
        mean: rel(i.mean, c.stats.mean_w),
        swing: rel(i.swing, c.stats.p90_w - c.stats.p10_w),
        spread: rel(i.spread, c.stats.p99_w - c.stats.p1_w),
    });
    Some(Measured {
        rung_id: s.rung.id,
        label: s.rung.label.clone(),
        period_ms: c.period_ms,
        duty: s.rung.duty,
        mode: s.rung.mode,
        gpu_w,
        gpu_each: c.gpu_cycles.iter().map(|(_, v)| v.clone()).collect(),
        resolution_ms: cycle_resolution_ms(c),
        highest_hz: c.harmonics as f64 / (c.period_ms / 1000.0),
        rel_pm,
        caveat: s.verdict.clone(),
    })
}
