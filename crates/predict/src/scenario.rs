//! One prediction per scenario (the schedule's own, the plain wave, each
//! measured mitigation, the schedule's stagger alone), each with its ±:
//! the measured rungs of a profile in the scenario's own mode (in phase
//! for a scenario without stagger groups, staggered for one with them;
//! every mode only where the run measured none of it, said so) form sets
//! (the first repeat of every period, the second, …), each set gives an
//! expected waveform, and a figure's ± is half the range over the sets
//! combined with the measured cycles' own 95 % intervals (relative), in
//! quadrature. Modes never count as repeats of each other: a staggered
//! rung's per-GPU cycles differ from an in-phase rung's by more than one
//! in-phase repeat from the next.

use super::Ctx;
use super::figures::{self, Estimate, GridInputs, Levels, levels};
use super::response::{Measured, PLAIN, RelPm, periods_of, same_period};
use super::template::{self, Target, bracket};
use super::waveform::{self, Layout};
use powerlab_analysis::envelope::RungEnvelope;
use powerlab_analysis::grid::RungGrid;
use powerlab_campaign::Grid;
use powerlab_core::kind::Mode;
use powerlab_core::units::W_PER_MW;
use serde::Serialize;

mod notes;

pub use notes::LIMIT_NOTE_FIRST_PCT;
use notes::{allowed_w, limit_note, notes, ordered_notes};

/// One scenario's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scenario {
    /// Its row number (0: the schedule's own).
    pub id: u32,
    /// `plain`, a profile label, with `-stagger<k>` when staggered.
    pub label: String,
    /// The measured profile the GPUs follow.
    pub profile: String,
    /// Stagger groups.
    pub stagger_groups: u32,
    /// Mean, W.
    pub mean_w: Estimate,
    /// p90 − p10, W.
    pub swing_w: Estimate,
    /// p99 − p1, W.
    pub spread_w: Estimate,
    /// The drawn waveform's levels.
    pub levels: Levels,
    /// Energy over the span, MWh.
    pub energy_mwh: f64,
    /// Sets of measured rungs behind the ±.
    pub sets: usize,
    /// Which rungs formed the sets: `in_phase`, `staggered`, or
    /// `every mode` where the run measured none of the scenario's mode.
    pub sets_from: String,
    /// The measured rungs used, by label.
    pub sources: Vec<String>,
    /// Against the plain wave without stagger (None for that one).
    pub vs_plain: Option<VsPlain>,
    /// What its figures rest on.
    pub notes: Vec<String>,
}

/// What a scenario buys and costs against the plain wave.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct VsPlain {
    /// Swing taken off, W.
    pub swing_cut_w: Estimate,
    /// The same as a share of the plain swing, %.
    pub swing_cut_pct: f64,
    /// Mean power added, W.
    pub extra_mean_w: Estimate,
    /// Energy added over the span, MWh.
    pub extra_energy_mwh: f64,
}

/// Every scenario's results.
pub(crate) struct Built {
    pub(crate) scenarios: Vec<Scenario>,
    pub(crate) waveform: Vec<f64>,
    /// The headline scenario's expected waveform: exactly one iteration,
    /// W, `ctx.step_ms` apart.
    pub(crate) expected: Vec<f64>,
    /// The highest frequency the headline's measured cycles hold, Hz.
    pub(crate) highest_hz: f64,
    /// Every scenario's running job, for the lifecycle study.
    pub(crate) channels: Vec<super::lifecycle::Channel>,
    /// The highest frequency each channel's measured cycles hold, Hz.
    pub(crate) channel_highest_hz: Vec<f64>,
    pub(crate) envelopes: Vec<RungEnvelope>,
    pub(crate) grids: Vec<RungGrid>,
    pub(crate) notes: Vec<String>,
}

/// The scenarios: the schedule's own first, then the plain wave, every
/// other measured profile, and the schedule's stagger on the plain wave.
pub(crate) fn all(ctx: &Ctx<'_>, profile: &str, band_hz: [f64; 2], spec: Option<&Grid>) -> Built {
    let k = ctx.schedule.mitigation.stagger_groups.max(1);
    let mut wanted: Vec<(String, u32)> = vec![(profile.to_string(), k), (PLAIN.into(), 1)];
    wanted.extend(ctx.responses.profiles.keys().map(|p| (p.clone(), 1)));
    wanted.push((PLAIN.into(), k));
    let mut seen = Vec::new();
    wanted.retain(|w| {
        let new = !seen.contains(w) && ctx.responses.profiles.contains_key(&w.0);
        seen.push(w.clone());
        new
    });
    let mut built = Built {
        scenarios: Vec::new(),
        waveform: Vec::new(),
        expected: Vec::new(),
        highest_hz: f64::INFINITY,
        channels: Vec::new(),
        channel_highest_hz: Vec::new(),
        envelopes: Vec::new(),
        grids: Vec::new(),
        notes: Vec::new(),
    };
    for (i, (p, g)) in wanted.iter().enumerate() {
        let one = one(ctx, i as u32, p, *g, band_hz, spec);
        if i == 0 {
            built.waveform = one.realized;
            built.expected = one.expected;
            built.highest_hz = one.highest_hz;
            built.notes = one.scenario.notes.clone();
        }
        built.channels.push(one.channel);
        built.channel_highest_hz.push(one.highest_hz);
        built.envelopes.push(one.envelope);
        built.grids.push(one.grid);
        built.scenarios.push(one.scenario);
    }
    let plain = built
        .scenarios
        .iter()
        .find(|s| s.profile == PLAIN && s.stagger_groups == 1)
        .cloned();
    if let Some(plain) = plain {
        let span_h = ctx.schedule.output.span_s / 3600.0;
        for s in built
            .scenarios
            .iter_mut()
            .filter(|s| s.label != plain.label)
        {
            s.vs_plain = Some(vs(&plain, s, span_h));
        }
    }
    built
}

fn vs(plain: &Scenario, s: &Scenario, span_h: f64) -> VsPlain {
    let diff = |a: Estimate, b: Estimate| Estimate {
        value: a.value - b.value,
        plus_minus: a.plus_minus.zip(b.plus_minus).map(|(x, y)| x.hypot(y)),
    };
    let extra = diff(s.mean_w, plain.mean_w);
    VsPlain {
        swing_cut_w: diff(plain.swing_w, s.swing_w),
        swing_cut_pct: 100.0 * (plain.swing_w.value - s.swing_w.value) / plain.swing_w.value,
        extra_mean_w: extra,
        extra_energy_mwh: extra.value * span_h / W_PER_MW,
    }
}

struct One {
    scenario: Scenario,
    realized: Vec<f64>,
    expected: Vec<f64>,
    highest_hz: f64,
    channel: super::lifecycle::Channel,
    envelope: RungEnvelope,
    grid: RungGrid,
}

/// The rungs of `list` run in `mode`, and which mode they are: every
/// rung (`every mode`) where none was run in it; of those, at each
/// measured period only the rungs of the duty nearest `duty` (a rung of
/// another duty is no repeat of them either).
fn of_mode(list: &[Measured], mode: Mode, duty: f64) -> (Vec<Measured>, String) {
    let own: Vec<Measured> = list.iter().filter(|m| m.mode == mode).cloned().collect();
    let (pool, from) = if own.is_empty() {
        (list.to_vec(), EVERY_MODE.to_string())
    } else {
        (own, mode.as_str().to_string())
    };
    let nearest = |p: f64| {
        pool.iter()
            .filter(|m| same_period(m.period_ms, p))
            .map(|m| (m.duty - duty).abs())
            .fold(f64::INFINITY, f64::min)
    };
    let kept = pool
        .iter()
        .filter(|m| (m.duty - duty).abs() <= nearest(m.period_ms) + 1e-9)
        .cloned()
        .collect();
    (kept, from)
}

/// What `sets_from` says where the run measured none of a scenario's mode.
pub const EVERY_MODE: &str = "every mode";

/// Sets of the rungs the target blends: the r-th rung of each of its
/// (one or two) measured periods; a period measured fewer times than the
/// other lends its rungs again, but only the blended periods count (at a
/// measured period, its own repeats are the sets).
fn sets<'a>(list: &[&'a Measured]) -> Vec<Vec<&'a Measured>> {
    let mut groups: Vec<Vec<&Measured>> = Vec::new();
    for &m in list {
        match groups
            .iter_mut()
            .find(|g| same_period(g[0].period_ms, m.period_ms))
        {
            Some(g) => g.push(m),
            None => groups.push(vec![m]),
        }
    }
    let r = groups.iter().map(Vec::len).max().unwrap_or(0);
    (0..r)
        .map(|i| groups.iter().map(|g| g[i % g.len()]).collect())
        .collect()
}

fn one(
    ctx: &Ctx<'_>,
    id: u32,
    profile: &str,
    groups: u32,
    band_hz: [f64; 2],
    spec: Option<&Grid>,
) -> One {
    let s = ctx.schedule;
    let all = ctx
        .responses
        .profiles
        .get(profile)
        .map_or(&[][..], Vec::as_slice);
    let want = if groups > 1 {
        Mode::Staggered
    } else {
        Mode::InPhase
    };
    let (of_mode, sets_from) = of_mode(all, want, s.job.compute_fraction);
    let list = of_mode.as_slice();
    let target = Target {
        period_ms: s.job.iteration_ms,
        compute_fraction: s.job.compute_fraction,
        comm_w: ctx.comm_w,
        step_ms: ctx.step_ms,
        floor_holds: profile != PLAIN,
        sustained_w: ctx.responses.sustained_w,
    };
    let used = used(list, target.period_ms);
    let sets = sets(&used);
    let allowed = allowed_w(ctx, all, &target);
    let (by_group, clamped) = iterations(ctx, &sets, &target, groups, allowed);
    let mean_t: Vec<Vec<f64>> = (0..by_group.first().map_or(0, Vec::len))
        .map(|g| {
            let of_g: Vec<Vec<f64>> = by_group.iter().map(|t| t[g].clone()).collect();
            average(&of_g, target.points())
        })
        .collect();
    let layout = Layout {
        nodes: ctx.nodes,
        gpus: s.job.gpus,
        groups,
        spread: ctx.spread_bins.clone(),
        stragglers: s
            .stragglers
            .map(|x| (x.share, (x.delay_ms / ctx.step_ms).round() as i64)),
        period_ms: s.job.iteration_ms,
        step_ms: ctx.step_ms,
        per_output: ctx.per_output,
        seed: s.output.seed,
    };
    let realized = waveform::realized(&mean_t, &layout, s.output.span_s * 1000.0);
    let expected = waveform::expected(&mean_t, &layout);
    let lv = levels(&realized);
    let by_set: Vec<Levels> = by_group
        .iter()
        .map(|t| levels(&waveform::expected(t, &layout)))
        .collect();
    let (mean_w, swing_w, spread_w) = estimates(&by_set, mean_rel(&used), &lv, groups);
    let label = if groups > 1 {
        format!("{profile}-stagger{groups}")
    } else {
        profile.to_string()
    };
    let r = s.output.resolution_ms;
    let grid_in_highest_hz = used
        .iter()
        .map(|m| m.highest_hz)
        .fold(f64::INFINITY, f64::min);
    let grid_in = GridInputs {
        expected: &expected,
        period_ms: s.job.iteration_ms,
        realized: &realized,
        resolution_ms: r,
        source_resolution_ms: used.iter().map(|m| m.resolution_ms).fold(0.0, f64::max),
        source_highest_hz: grid_in_highest_hz,
        range_pm: spread_w.plus_minus,
        edges_cancel: figures::edges_cancel(
            groups,
            s.job.compute_fraction,
            s.job.iteration_ms,
            used.iter().map(|m| m.resolution_ms).fold(r, f64::max),
        ),
    };
    let scenario = Scenario {
        id,
        label: label.clone(),
        profile: profile.to_string(),
        stagger_groups: groups,
        mean_w,
        swing_w: constant_load_swing(swing_w, ctx, &target),
        spread_w,
        levels: lv,
        energy_mwh: lv.mean_w * s.output.span_s / 3600.0 / W_PER_MW,
        sets: sets.len(),
        sets_from,
        sources: used.iter().map(|m| m.label.clone()).collect(),
        vs_plain: None,
        notes: ordered_notes(
            limit_note(clamped, allowed),
            notes(ctx, list, &used, &target, groups),
        ),
    };
    One {
        envelope: figures::envelope_of(id, &label, &realized, r, s.supply.as_ref()),
        grid: figures::grid_of(id, &label, grid_in, band_hz, spec, s.job.gpus as usize),
        scenario,
        realized,
        expected,
        highest_hz: grid_in_highest_hz,
        channel: super::lifecycle::Channel {
            label,
            iterations: mean_t,
            layout,
        },
    }
}

/// The mean, swing and spread of the drawn waveform's levels `lv`, each
/// with its ±: half the range over the sets' levels `by_set`, and the
/// measured cycles' relative intervals `rel` in quadrature. A measured
/// cycle's interval relative to its own figure carries over to the job's
/// mean, and to its swing in phase; a staggered job's swing is what is
/// left of the edges in another geometry than the measured rung's (an
/// 8-way stagger's nearly flat swing, ± relative to it, put ± 7.3 kW on a
/// 1.3 kW three-group swing): there the sets alone.
fn estimates(
    by_set: &[Levels],
    rel: Option<RelPm>,
    lv: &Levels,
    groups: u32,
) -> (Estimate, Estimate, Estimate) {
    let est = |v: f64, f: &dyn Fn(&Levels) -> f64, r: &dyn Fn(&RelPm) -> f64, carries: bool| {
        let half = half_range(by_set.iter().map(f));
        let rel = rel.filter(|_| carries);
        let boot = rel.as_ref().map_or(0.0, |x| r(x) * v.abs());
        Estimate {
            value: v,
            plus_minus: (by_set.len() > 1 || rel.is_some()).then(|| half.hypot(boot)),
        }
    };
    let in_phase = groups <= 1;
    (
        est(lv.mean_w, &|l| l.mean_w, &|r| r.mean, true),
        est(lv.swing_w(), &|l| l.swing_w(), &|r| r.swing, in_phase),
        est(lv.spread_w(), &|l| l.spread_w(), &|r| r.spread, in_phase),
    )
}

/// Per set, each stagger group's GPU iteration (its slots' iterations,
/// weighted), each slot's held to `allowed` W over the limiter's window;
/// and the highest 1 s mean before, where one was held.
fn iterations(
    ctx: &Ctx<'_>,
    sets: &[Vec<&Measured>],
    target: &Target,
    groups: u32,
    allowed: Option<f64>,
) -> (Vec<Vec<Vec<f64>>>, Option<f64>) {
    let slots = group_slots(ctx, groups);
    let mut clamped: Option<f64> = None;
    let by_group = sets
        .iter()
        .map(|set| {
            let each: Vec<Vec<f64>> = (0..slots.n_src)
                .map(|k| {
                    let mut it = template::blended(set, target, Some(k));
                    if let Some(c) = ctx.schedule.job.compute_w_per_gpu {
                        template::declared(&mut it, target, c);
                    }
                    if let Some(a) = allowed
                        && let Some(top) = template::limited(&mut it, target.period_ms, a)
                    {
                        clamped = Some(clamped.map_or(top, |c: f64| c.max(top)));
                    }
                    it
                })
                .collect();
            slots
                .counts
                .iter()
                .map(|c| weighted(&each, c, target.points()))
                .collect()
        })
        .collect();
    (by_group, clamped)
}

/// Which of the run's GPUs each stagger group's GPUs follow: a job's GPU
/// slot s (node n holds slots n · per node ..) follows the run's GPU
/// s mod n_src, and node n is in group n mod groups.
struct Slots {
    /// The run's GPUs.
    n_src: usize,
    /// Per group, how many of its GPUs follow each of the run's GPUs
    /// (counted over its first n_src nodes: the pattern repeats).
    counts: Vec<Vec<usize>>,
}

fn group_slots(ctx: &Ctx<'_>, groups: u32) -> Slots {
    let n_src = ctx.responses.gpus.max(1);
    let gpn = ctx.gpus_per_node as usize;
    let k = u64::from(groups.max(1));
    let counts = (0..k)
        .map(|g| {
            let mut c = vec![0usize; n_src];
            let in_group = ctx.nodes / k + u64::from(g < ctx.nodes % k);
            for j in 0..in_group.min(n_src as u64) {
                let node = (g + k * j) as usize;
                for i in 0..gpn {
                    c[(node * gpn + i) % n_src] += 1;
                }
            }
            c
        })
        .collect();
    Slots { n_src, counts }
}

/// The mean of `each` weighted by `counts`.
fn weighted(each: &[Vec<f64>], counts: &[usize], n: usize) -> Vec<f64> {
    let total: usize = counts.iter().sum();
    let mut out = vec![0.0; n];
    for (t, c) in each.iter().zip(counts).filter(|x| *x.1 > 0) {
        let w = *c as f64 / total.max(1) as f64;
        for (o, v) in out.iter_mut().zip(t) {
            *o += w * v;
        }
    }
    out
}

/// The point-by-point mean of equally long templates.
fn average(templates: &[Vec<f64>], n: usize) -> Vec<f64> {
    let mut out = vec![0.0; n];
    for t in templates {
        for (o, v) in out.iter_mut().zip(t) {
            *o += v / templates.len() as f64;
        }
    }
    out
}

fn half_range(v: impl Iterator<Item = f64>) -> f64 {
    let (lo, hi) = v.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    if hi >= lo { 0.5 * (hi - lo) } else { 0.0 }
}

/// A constant load (compute fraction 1) still moves as the run's
/// sustained rung did: its swing's ± is at least that swing per GPU times
/// the job's GPUs (as if every GPU moved together: a bound).
fn constant_load_swing(e: Estimate, ctx: &Ctx<'_>, t: &Target) -> Estimate {
    match ctx.responses.sustained_swing_w {
        Some(w) if t.compute_fraction >= 1.0 => {
            let moved = w * ctx.schedule.job.gpus as f64;
            Estimate {
                plus_minus: Some(e.plus_minus.unwrap_or(0.0).max(moved)),
                ..e
            }
        }
        _ => e,
    }
}

/// The measured rungs at the periods the target blends.
fn used(list: &[Measured], period_ms: f64) -> Vec<&Measured> {
    let (a, b, w) = bracket(&periods_of(list), period_ms);
    list.iter()
        .filter(|m| same_period(m.period_ms, a) || (w > 0.0 && same_period(m.period_ms, b)))
        .collect()
}

/// The mean relative intervals of the rungs that have one.
fn mean_rel(used: &[&Measured]) -> Option<RelPm> {
    let r: Vec<RelPm> = used.iter().filter_map(|m| m.rel_pm).collect();
    (!r.is_empty()).then(|| {
        let n = r.len() as f64;
        RelPm {
            mean: r.iter().map(|x| x.mean).sum::<f64>() / n,
            swing: r.iter().map(|x| x.swing).sum::<f64>() / n,
            spread: r.iter().map(|x| x.spread).sum::<f64>() / n,
        }
    })
}
