//! What a scenario's figures come with in words: the limiter's trim
//! ([`allowed_w`], [`limit_note`]) and what the reader must know
//! ([`notes`]), in the order [`ordered_notes`] gives.

use super::super::Ctx;
use super::super::response::{Measured, periods_of, same_period};
use super::super::template::{self, Target};

/// The most one GPU may draw over the limiter's window, W: its enforced
/// limit, or more where the run measured more at the target's period (at
/// any duty: each iteration's compute phase starts with the same burst
/// from the communication level, which a 2 s rung held at 719 W for a
/// second under a 700 W limit) (None: no limit recorded).
pub(super) fn allowed_w(ctx: &Ctx<'_>, list: &[Measured], t: &Target) -> Option<f64> {
    let limit = ctx.responses.limit_w?;
    let measured = list
        .iter()
        .filter(|m| same_period(m.period_ms, t.period_ms))
        .flat_map(|m| {
            m.gpu_each
                .iter()
                .chain(std::iter::once(&m.gpu_w))
                .map(|v| (v, m.period_ms))
        })
        .map(|(v, p)| template::max_running_mean(v, p, template::LIMIT_WINDOW_MS))
        .fold(limit, f64::max);
    Some(measured)
}

/// A trim of more than this share of the held mean leads the notes, %.
pub const LIMIT_NOTE_FIRST_PCT: f64 = 1.0;

/// The note where the splice drew more than the limiter lets a GPU hold,
/// and whether it leads (a trim over [`LIMIT_NOTE_FIRST_PCT`]).
pub(super) fn limit_note(clamped: Option<f64>, allowed: Option<f64>) -> Option<(String, bool)> {
    let (top, a) = (clamped?, allowed?);
    let pct = 100.0 * (top - a) / a;
    Some((
        format!(
            "POWER LIMIT: the measured cycles spliced to this iteration draw {top:.0} W per GPU over {:.0} s, {pct:.1} % above the {a:.0} W the GPUs may hold (their enforced limit, or the most the run measured over 1 s at this period); what rose above the level that holds it there is cut off (the limiter trims the burst, not the plateau)",
            template::LIMIT_WINDOW_MS / 1000.0
        ),
        pct > LIMIT_NOTE_FIRST_PCT,
    ))
}

/// The scenario's notes: the limiter's first where it trims much, last
/// where it trims little.
pub(super) fn ordered_notes(limit: Option<(String, bool)>, rest: Vec<String>) -> Vec<String> {
    match limit {
        Some((n, true)) => std::iter::once(n).chain(rest).collect(),
        Some((n, false)) => rest.into_iter().chain(std::iter::once(n)).collect(),
        None => rest,
    }
}

/// What the reader must know about a scenario's figures.
pub(super) fn notes(
    ctx: &Ctx<'_>,
    list: &[Measured],
    used: &[&Measured],
    t: &Target,
    groups: u32,
) -> Vec<String> {
    let mut out = Vec::new();
    let periods = periods_of(list);
    let (Some(lo), Some(hi)) = (periods.first(), periods.last()) else {
        return vec!["no measured rung for this profile".into()];
    };
    let p = t.period_ms;
    if p < lo * 0.98 || p > hi * 1.02 {
        out.push(format!(
            "EXTRAPOLATED: the {p} ms iteration is outside the measured periods ({lo:.1}–{hi:.1} ms); the nearest measured cycle's rise and fall are held or cut to fit"
        ));
    }
    if let Some(c) = ctx.schedule.job.compute_w_per_gpu {
        out.push(format!(
            "DECLARED LEVELS: the compute phase is scaled to the schedule's declared compute_w_per_gpu = {c:.0} W (the measured square waves' rise, overshoot and fall kept in proportion){}; the figures are as good as that declaration",
            match ctx.comm_w {
                Some(w) => format!(", the communication phase to {w:.0} W"),
                None => String::new(),
            }
        ));
    }
    let res = used.iter().map(|m| m.resolution_ms).fold(0.0, f64::max);
    let on = t.compute_fraction * p;
    let off = p - on;
    for (what, ms) in [("compute", on), ("communication", off)] {
        if ms > 0.0 && ms < 2.0 * res {
            out.push(format!(
                "BEYOND THE INSTRUMENT: the {ms:.2} ms {what} phase is shorter than twice what the measured cycles resolve ({res:.2} ms): its shape is the measured edges' cut short, not measured"
            ));
        }
    }
    if t.compute_fraction >= 1.0 {
        // A flat job is its own recorded stretch, not the sustained rung.
        if !ctx.responses.flat_job {
            out.push(match ctx.responses.sustained_w {
                Some(w) => format!("Compute fraction 1: a constant load at the run's sustained rung, {w:.1} W per GPU; its swing's ± is what that rung itself swung, per GPU times the job's GPUs."),
                None => "Compute fraction 1: a constant load at the measured on-phase's settled level (the run has no sustained rung).".into(),
            });
        }
    } else if let Some(m) = used
        .iter()
        .find(|m| (m.duty - t.compute_fraction).abs() > 0.05)
    {
        out.insert(0, format!(
            "EXTRAPOLATED IN DUTY: the measured rungs ran a duty of {:.2} and the schedule a compute fraction of {:.2}: the phases are the measured ones cut, or held at their settled levels, and the ± does not hold what that misses (on the simulated H200, 5–12 % of the mean): measure a duty rung at this compute fraction for a figure to sign.",
            m.duty, t.compute_fraction
        ));
    }
    if groups > 1 && ctx.responses.gpus < 2 {
        out.push("Staggered from a one-GPU run: the swing left is the edges' and the GPUs' differences in level, and one GPU shows no such difference; with few GPUs per group read the staggered swing as the edges' alone (on the committed H200 pair, 30 % under at 2 s, off by 2–3× at 50–100 ms).".to_string());
    }
    for m in used.iter().filter(|m| m.caveat.is_some()) {
        out.push(format!(
            "Source rung `{}` is qualified: {}",
            m.label,
            m.caveat.as_deref().unwrap_or("")
        ));
    }
    out
}
