//! The rungs of each phase: the phases' run order, each phase's periods
//! (detuned from the sampling grid), NCCL steps, modes and repeats, and the
//! offsets of a staggered rung's GPUs.

use super::schedule::{RackPosition, Rung, fmt_num, plan_error, secs};
use crate::error::CampaignError;
use crate::model::{
    CALIBRATION_PHASE, Campaign, Mode, NcclStep, PeriodMs, Phase, PhaseKind, RackStagger, Stagger,
};
use powerlab_core::smoothing::SmoothingSpec;
use powerlab_core::units::{ms_to_ns, ns_to_ms};

/// Orders the phases: NCCL before the first duty phase (unless
/// `nccl_first = false`), soak last. Returns the order and notes.
pub(super) fn order_phases(c: &Campaign) -> (Vec<&Phase>, Vec<String>) {
    let mut notes = Vec::new();
    let mut ordered: Vec<&Phase> = c
        .phases
        .iter()
        .filter(|p| p.kind != PhaseKind::Soak)
        .collect();
    if c.nccl_first
        && let Some(first_duty) = ordered.iter().position(|p| p.kind == PhaseKind::Duty)
    {
        let late_nccl: Vec<&Phase> = ordered[first_duty..]
            .iter()
            .filter(|p| p.kind == PhaseKind::Nccl)
            .copied()
            .collect();
        if !late_nccl.is_empty() {
            ordered.retain(|p| !late_nccl.iter().any(|q| std::ptr::eq(*p, *q)));
            for (i, p) in late_nccl.iter().enumerate() {
                ordered.insert(first_duty + i, p);
                notes.push(format!("phase `{}` (nccl) moved before the first duty phase: the fabric is measured first (set nccl_first = false to keep file order)", p.name));
            }
        }
    }
    let soaks: Vec<&Phase> = c
        .phases
        .iter()
        .filter(|p| p.kind == PhaseKind::Soak)
        .collect();
    if let Some(last_non_soak) = c.phases.iter().rposition(|p| p.kind != PhaseKind::Soak)
        && c.phases
            .iter()
            .position(|p| p.kind == PhaseKind::Soak)
            .is_some_and(|s| s < last_non_soak)
    {
        notes.push("soak phases moved to the end: the soak runs last".to_string());
    }
    ordered.extend(soaks);
    (ordered, notes)
}

/// What every phase of one expansion shares: the campaign, this node's
/// GPUs and place in the rack, the CLI's `--repeats`.
pub(super) struct Node<'a> {
    /// The campaign.
    pub(super) c: &'a Campaign,
    /// GPUs of this node.
    pub(super) gpu_count: usize,
    /// This node's place in the rack.
    pub(super) pos: RackPosition,
    /// `--repeats`, replacing the repeats of idle, sustained and duty phases.
    pub(super) repeats_override: Option<u32>,
}

/// The period a duty rung runs and its settling time, per requested period.
type Timing = (Option<PeriodMs>, i64);

impl Node<'_> {
    /// Appends the rungs of `phase` (repeats × NCCL steps × periods ×
    /// mitigations × modes, in that nesting: the in-phase and staggered
    /// rungs of one mitigation sit side by side) and its notes.
    pub(super) fn phase_rungs(
        &self,
        phase: &Phase,
        rungs: &mut Vec<Rung>,
        notes: &mut Vec<String>,
    ) -> Result<(), CampaignError> {
        let repeats = match (phase.kind, self.repeats_override) {
            _ if phase.name == CALIBRATION_PHASE => 1,
            (PhaseKind::Idle | PhaseKind::Sustained | PhaseKind::Duty, Some(n)) => n,
            _ => phase.repeats,
        };
        let periods: Vec<Option<PeriodMs>> = if phase.kind == PhaseKind::Duty {
            phase.periods_ms.iter().map(|p| Some(*p)).collect()
        } else {
            vec![None]
        };
        // Once per period: the search for a detuned period is the costly part.
        let timings: Vec<Timing> = periods.iter().map(|p| timing(phase, *p)).collect();
        notes.extend(detune_note(phase, &periods, &timings));
        notes.extend(no_plain_note(phase));
        let steps = nccl_steps(phase);
        // Without a `smoothing` list: one pass, no label part.
        let mitigations: Vec<Option<&SmoothingSpec>> = if phase.smoothing.is_empty() {
            vec![None]
        } else {
            phase.smoothing.iter().map(Some).collect()
        };
        for repeat in 1..=repeats {
            for step in &steps {
                for (period, &timing) in periods.iter().zip(&timings) {
                    for smoothing in &mitigations {
                        for mode in &phase.modes {
                            let rung = RungAt {
                                phase,
                                repeat,
                                repeats,
                                step: *step,
                                period: *period,
                                timing,
                                smoothing: *smoothing,
                                mode: *mode,
                            };
                            let id = rungs.len() as u32;
                            rungs.push(self.rung(&rung, id)?);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// One rung of a phase, after its offsets and the consent an in-phase
    /// swing of more than 4 GPUs needs.
    fn rung(&self, at: &RungAt<'_>, id: u32) -> Result<Rung, CampaignError> {
        let (c, phase) = (self.c, at.phase);
        let (achieved, settle_ns) = at.timing;
        let offsets_ns = offsets(c, phase, at.mode, achieved, self.gpu_count, self.pos)?;
        self.check_swing(phase, at.mode)?;
        let duration_ns = secs(phase.duration_s);
        Ok(Rung {
            id,
            phase: phase.name.clone(),
            kind: phase.kind,
            label: at.label(),
            mode: at.mode,
            period_ms: achieved,
            nominal_period_ms: at.period,
            duty: match phase.kind {
                PhaseKind::Idle => 0.0,
                PhaseKind::Duty => phase.duty,
                _ => 1.0,
            },
            repeat: at.repeat,
            repeats: at.repeats,
            warmup_ns: secs(phase.warmup_s),
            ramp_ns: secs(phase.ramp_s),
            settle_ns,
            duration_ns: match (at.step, &phase.nccl) {
                (Some(NcclStep::Sweep), Some(n)) => secs(n.sweep_s),
                _ => duration_ns,
            },
            cooldown_ns: secs(phase.cooldown_s),
            offsets_ns,
            nccl: phase.nccl.clone(),
            nccl_step: at.step,
            no_context: false,
            swinging: None,
            smoothing: at.smoothing.filter(|s| !s.is_none()).copied(),
            workload: phase.workload.clone(),
        })
    }

    /// An in-phase duty rung across more than 4 GPUs (of the node or the
    /// rack) needs `confirm_node_swing = true`.
    fn check_swing(&self, phase: &Phase, mode: Mode) -> Result<(), CampaignError> {
        let swinging = self.gpu_count * self.pos.nodes;
        if phase.kind == PhaseKind::Duty
            && mode == Mode::InPhase
            && swinging > 4
            && phase.duty < 1.0
            && !self.c.confirm_node_swing
        {
            let whole = if self.pos.nodes > 1 { "rack" } else { "node" };
            return Err(plan_error(
                self.c,
                format!("phases.{}", phase.name),
                format!(
                    "an in-phase duty rung across {swinging} GPUs swings the whole {whole} (kilowatts in milliseconds)"
                ),
                Some(
                    "confirm_node_swing = true in [campaign], after checking the supply can take it",
                ),
            ));
        }
        Ok(())
    }
}

/// Where a rung sits in its phase.
struct RungAt<'a> {
    phase: &'a Phase,
    repeat: u32,
    repeats: u32,
    step: Option<NcclStep>,
    /// The period as requested.
    period: Option<PeriodMs>,
    timing: Timing,
    /// The entry of the phase's `smoothing` list (None: the phase has none).
    smoothing: Option<&'a SmoothingSpec>,
    mode: Mode,
}

impl RungAt<'_> {
    /// `phase/p500ms/staggered/sweep/r2`, `phase/p100ms/floor60/in_phase`:
    /// the parts that tell the phase's rungs apart.
    fn label(&self) -> String {
        let mut label = self.phase.name.clone();
        if let Some(p) = self.period {
            label.push_str(&format!("/p{}ms", fmt_num(p.ms())));
        }
        if let Some(s) = self.smoothing {
            label.push_str(&format!("/{}", s.label()));
        }
        if self.phase.kind == PhaseKind::Duty {
            label.push_str(&format!("/{}", self.mode.as_str()));
        }
        if let Some(s) = self.step {
            label.push_str(&format!("/{}", s.as_str()));
        }
        if self.repeats > 1 {
            label.push_str(&format!("/r{}", self.repeat));
        }
        label
    }
}

/// The period a duty rung runs (detuned from the sampling grid unless the
/// phase keeps exact periods) and its settling time, for the requested
/// `nominal` period.
fn timing(phase: &Phase, nominal: Option<PeriodMs>) -> Timing {
    let Some(p) = nominal.filter(|_| phase.kind == PhaseKind::Duty && phase.duty < 1.0) else {
        return (nominal, 0);
    };
    let duration_ns = secs(phase.duration_s);
    let ramp_ns = secs(phase.ramp_s);
    let settle = crate::detune::settle_ns(p.ns(), duration_ns - ramp_ns);
    let window_ms = ns_to_ms(duration_ns - ramp_ns - settle);
    let achieved = if phase.exact_period {
        p
    } else {
        PeriodMs(crate::detune::detuned_period_ms(p.ms(), window_ms))
    };
    (
        Some(achieved),
        crate::detune::whole_cycles_settle_ns(settle, duration_ns - ramp_ns, achieved.ns()),
    )
}

/// The note naming the periods the planner detuned, if any.
fn detune_note(phase: &Phase, periods: &[Option<PeriodMs>], timings: &[Timing]) -> Option<String> {
    let detuned: Vec<String> = periods
        .iter()
        .zip(timings)
        .filter_map(|(p, t)| p.map(|p| (p, t.0.unwrap_or(p))))
        .filter(|(p, a)| a != p)
        .map(|(p, a)| format!("{} → {} ms", fmt_num(p.ms()), fmt_num(a.ms())))
        .collect();
    if detuned.is_empty() {
        return None;
    }
    Some(format!(
        "phase `{}`: periods detuned from the {} ms sampling grid so that the samples sweep every phase of the cycle: {} (exact_period = true keeps them; such a rung is folded only where its samples happen to cover the cycle, else it reports a verdict instead of node figures)",
        phase.name,
        crate::detune::SAMPLE_GRID_MS,
        detuned.join(", ")
    ))
}

/// The note for a phase whose `smoothing` list has no plain entry: a
/// mitigation is costed against the plain rung of its period and mode.
fn no_plain_note(phase: &Phase) -> Option<String> {
    if phase.smoothing.is_empty() || phase.smoothing.iter().any(SmoothingSpec::is_none) {
        return None;
    }
    Some(format!(
        "phase `{}`: `smoothing` lists no plain entry (`{{}}`), so no plain rung is planned: the energy cost of each mitigation needs a plain rung of the same period and mode to compare with (add `{{}}` to the list, or compare against another run's)",
        phase.name
    ))
}

/// An NCCL phase is a sweep, a fabric rung and optionally a
/// bulk-synchronous rung; any other phase has one step.
fn nccl_steps(phase: &Phase) -> Vec<Option<NcclStep>> {
    match &phase.nccl {
        Some(n) if phase.kind == PhaseKind::Nccl => {
            let mut v = vec![Some(NcclStep::Sweep), Some(NcclStep::Fabric)];
            if n.bsp_compute_ms.is_some() {
                v.push(Some(NcclStep::Bsp));
            }
            v
        }
        _ => vec![None],
    }
}

/// Offsets of this node's GPUs. Across a rack, `stagger = "gpu"` numbers
/// every GPU globally (rank × GPUs per node + local index) and explicit lists
/// give one value per GPU of the rack; `stagger = "node"` gives all GPUs of a
/// node the node's offset and explicit lists give one value per node.
pub(super) fn offsets(
    c: &Campaign,
    phase: &Phase,
    mode: Mode,
    period: Option<PeriodMs>,
    n: usize,
    pos: RackPosition,
) -> Result<Vec<i64>, CampaignError> {
    let Some(period) = period else {
        return Ok(vec![0; n]);
    };
    if mode == Mode::InPhase {
        return Ok(vec![0; n]);
    }
    let period_ns = period.ns_f64();
    let frac_to_ns = |f: f64| ((f.rem_euclid(1.0)) * period_ns).round() as i64;
    // (slot of each local GPU, number of slots in the rack).
    let (slots, count): (Vec<usize>, usize) = match c.rack.stagger {
        RackStagger::Gpu => ((0..n).map(|i| pos.rank * n + i).collect(), pos.nodes * n),
        RackStagger::Node => (vec![pos.rank; n], pos.nodes),
    };
    let (one, many) = if c.rack.stagger == RackStagger::Node {
        ("node of the rack", "nodes of the rack")
    } else if pos.nodes > 1 {
        ("GPU of the rack", "GPUs of the rack")
    } else {
        ("selected GPU", "selected GPUs")
    };
    let v: Vec<i64> = match &phase.stagger {
        Stagger::Even => slots
            .iter()
            .map(|&k| frac_to_ns(k as f64 / count as f64))
            .collect(),
        Stagger::StepDeg(d) => slots
            .iter()
            .map(|&k| frac_to_ns(k as f64 * d / 360.0))
            .collect(),
        Stagger::OffsetsDeg(list) | Stagger::OffsetsMs(list) if list.len() != count => {
            return Err(plan_error(
                c,
                format!("phases.{}.offsets", phase.name),
                format!("{} offsets are given for {count} {many}", list.len()),
                Some(&format!("one offset per {one}")),
            ));
        }
        Stagger::OffsetsDeg(list) => slots.iter().map(|&k| frac_to_ns(list[k] / 360.0)).collect(),
        Stagger::OffsetsMs(list) => slots.iter().map(|&k| ms_to_ns(list[k])).collect(),
    };
    Ok(v)
}
