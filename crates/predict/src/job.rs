//! A prediction from the user's own job: a workload rung of the run (the
//! user's training command, sampled like any rung) or an imported
//! `observe --csv` recording (one workload rung). Its iteration is the
//! measured one, folded at the period the collator found in its samples,
//! not a square wave: the schedule changes only what the recording cannot
//! know (GPU count, spread, stragglers, stagger groups); where it asks for
//! another iteration period, the notes say how far that is from the
//! measured one. A job without a period (steps back to back) is its
//! recorded stretch itself, repeated.

use super::PredictError;
use super::response::{Measured, PLAIN, Responses};
use powerlab_analysis::lifecycle::EdgeKind;
use powerlab_campaign::PhaseKind;
use powerlab_campaign::schedule::{Communication, Schedule};
use powerlab_collate::report::Report;
use powerlab_core::units::NS_PER_MS;
use powerlab_samples::columns::{f64_column, i64_column};

/// Where a prediction's iteration comes from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum From {
    /// A workload rung where the run has one (named when it has several),
    /// else the duty rungs' square waves. Rungs that measured a kill or a
    /// clean exit (`stop = "sigkill"` / `"exit"`: lifecycle edges, as the
    /// demo's are) are passed over where the run has other rungs to
    /// predict from; name one to predict from it.
    #[default]
    Auto,
    /// The workload rung of this label.
    Rung(String),
    /// The duty rungs' square waves, whatever else the run holds.
    SquareWaves,
}

/// The measured job a prediction is built from.
#[derive(Debug, Clone)]
pub struct Job {
    /// Its rung's label.
    pub label: String,
    /// Its iteration as one GPU's response (period and on-fraction found
    /// in the samples; a flat job: its recorded stretch).
    pub measured: Measured,
    /// Whether an iteration period was found (false: a flat job).
    pub periodic: bool,
    /// The recorded stretch's swing per GPU, W (p90 − p10 of its
    /// samples): what a flat job still moves.
    pub flat_swing_w: Option<f64>,
    /// What each measured mitigation profile held and achieved.
    pub mitigations: Vec<(String, super::job_mitigation::Limits)>,
    /// The workload rung as the report states it (period ±, jitter).
    pub row: Option<powerlab_collate::report::workload::WorkloadRow>,
}

/// The stretch of a flat job's node curve repeated as its iteration, ms.
pub const FLAT_STRETCH_MS: f64 = 10_000.0;

/// The workload rungs `From::Auto` chooses among: those that measured a
/// kill or a clean exit (lifecycle probes, whose point is the job's end)
/// are left out where the run has duty rungs or other workload rungs to
/// predict from.
fn candidates<'a>(
    report: &Report,
    workloads: Vec<&'a powerlab_analysis::summary::RungSummary>,
) -> Vec<&'a powerlab_analysis::summary::RungSummary> {
    let probes: Vec<&str> = report
        .node()
        .map(|n| {
            n.lifecycle
                .iter()
                .filter(|e| matches!(e.kind, EdgeKind::StopKill | EdgeKind::StopExit))
                .flat_map(|e| e.rungs.iter().map(String::as_str))
                .collect()
        })
        .unwrap_or_default();
    let jobs: Vec<_> = workloads
        .iter()
        .copied()
        .filter(|s| !probes.contains(&s.rung.label.as_str()))
        .collect();
    let duty = report.rungs.iter().any(|s| s.rung.kind == PhaseKind::Duty);
    if jobs.is_empty() && !duty {
        workloads
    } else {
        jobs
    }
}

/// The job to predict from, as `from` asks (None: the duty rungs).
///
/// # Errors
///
/// [`PredictError::NoJob`] when `from` names a rung that is not a workload
/// rung of the run, or the run has several and `from` names none.
pub fn job_of(report: &Report, from: &From) -> Result<Option<Job>, PredictError> {
    let all: Vec<&powerlab_analysis::summary::RungSummary> = report
        .rungs
        .iter()
        .filter(|s| s.rung.kind == PhaseKind::Workload)
        .collect();
    let workloads = match from {
        From::Auto => candidates(report, all),
        _ => all,
    };
    let labels = || {
        let l: Vec<&str> = workloads.iter().map(|s| s.rung.label.as_str()).collect();
        if l.is_empty() {
            "none".to_string()
        } else {
            l.join(", ")
        }
    };
    let chosen = match from {
        From::SquareWaves => return Ok(None),
        From::Auto if workloads.is_empty() => return Ok(None),
        From::Auto if workloads.len() > 1 => {
            return Err(PredictError::NoJob(format!(
                "the run has {} workload rungs ({}); name the one to predict from with --from-rung LABEL (or --square-waves for the duty rungs)",
                workloads.len(),
                labels()
            )));
        }
        From::Auto => workloads[0],
        From::Rung(l) => *workloads.iter().find(|s| &s.rung.label == l).ok_or_else(|| {
            PredictError::NoJob(format!(
                "--from-rung {l}: the run has no workload rung of that label; its workload rungs: {}",
                labels()
            ))
        })?,
    };
    let id = chosen.rung.id;
    let row = report
        .node()
        .and_then(|n| n.workload.rows.iter().find(|r| r.rung_id == id))
        .cloned();
    let periodic = match (
        report.cycles.get(&id),
        row.as_ref().and_then(|r| r.on_fraction),
    ) {
        (Some(Ok(c)), Some(on)) => super::response::measured(chosen, c).map(|mut m| {
            // The share of the iteration above its mid-level: its compute phase.
            m.duty = on;
            m
        }),
        _ => None,
    };
    let gpus = report.run.series.len().max(1) as f64;
    let flat_swing_w = chosen.raw_swing_w.or(chosen.swing_w).map(|w| w / gpus);
    if let Some(measured) = periodic {
        return Ok(Some(
            Job {
                label: chosen.rung.label.clone(),
                measured,
                periodic: true,
                flat_swing_w,
                mitigations: Vec::new(),
                row,
            }
            .with_mitigations(report),
        ));
    }
    let measured = flat(report, chosen).ok_or_else(|| {
        PredictError::NoJob(format!(
            "workload rung `{}` has neither an iteration period nor {} s of node power to repeat; run the job longer",
            chosen.rung.label,
            FLAT_STRETCH_MS / 1000.0
        ))
    })?;
    Ok(Some(
        Job {
            label: chosen.rung.label.clone(),
            measured,
            periodic: false,
            flat_swing_w,
            mitigations: Vec::new(),
            row,
        }
        .with_mitigations(report),
    ))
}

/// A flat job's iteration: the middle [`FLAT_STRETCH_MS`] of its rung's
/// node curve (buffered samples, sample and hold), per GPU.
fn flat(report: &Report, s: &powerlab_analysis::summary::RungSummary) -> Option<Measured> {
    let w = report.run.rungs.iter().find(|w| w.info.id == s.rung.id)?;
    let t = i64_column(&report.curve.df, "t_ns");
    let v = f64_column(&report.curve.df, "node_buffered_w");
    let stretch_ns = (FLAT_STRETCH_MS * NS_PER_MS as f64) as i64;
    let mid = (w.measure_from_ns + w.end_ns) / 2;
    let (a, b) = (mid - stretch_ns / 2, mid + stretch_ns / 2);
    if a < w.measure_from_ns || b > w.end_ns {
        return None;
    }
    let gpus = report.run.series.len().max(1) as f64;
    let values: Vec<f64> = t
        .iter()
        .zip(&v)
        .filter(|(t, _)| **t >= a && **t < b)
        .filter_map(|(_, v)| v.map(|x| x / gpus))
        .collect();
    if values.len() < 100 {
        return None;
    }
    // Each grid point held over its own step at 1 ms: read between its
    // points, a linear interpolation would average away the extremes
    // the samples show (a back-to-back job's p90 − p10: 122.6 W against
    // the samples' 145.7 W on an H100).
    let hold = (report.run.grid_ns / NS_PER_MS).max(1) as usize;
    let values: Vec<f64> = values
        .iter()
        .flat_map(|v| std::iter::repeat_n(*v, hold))
        .collect();
    let step_ms = FLAT_STRETCH_MS / values.len() as f64;
    Some(Measured {
        rung_id: s.rung.id,
        label: s.rung.label.clone(),
        period_ms: FLAT_STRETCH_MS,
        duty: 1.0,
        mode: s.rung.mode,
        gpu_each: vec![values.clone()],
        gpu_w: values,
        resolution_ms: report.run.grid_ns as f64 / NS_PER_MS as f64,
        highest_hz: 1000.0 / (2.0 * step_ms),
        rel_pm: None,
        caveat: s.verdict.clone(),
    })
}

impl Job {
    /// Each measured mitigation as the job runs it, in words.
    fn mitigation_notes(&self) -> Vec<String> {
        self.mitigations
            .iter()
            .map(|(p, l)| {
                let mut parts = Vec::new();
                if let Some(f) = l.floor_w {
                    parts.push(format!("a floor at {f:.0} W per GPU"));
                }
                if let Some(u) = l.up_w_per_ms {
                    parts.push(format!("rises of at most {:.0} W/s per GPU (not applied to the job: a rise limit slows its compute, which the recording cannot show; run the job under it)", u * 1000.0));
                }
                if let Some(d) = l.down_w_per_ms {
                    parts.push(format!("falls of at most {:.0} W/s per GPU", d * 1000.0));
                }
                if parts.is_empty() {
                    parts.push("nothing beyond the plain rungs' own levels and slopes".into());
                }
                format!(
                    "Mitigation `{p}` on the job: its rungs held and achieved {}; the job's measured iteration is put through its floor and fall limit",
                    parts.join(", ")
                )
            })
            .collect()
    }

    /// The job with what each measured mitigation held and achieved.
    fn with_mitigations(mut self, report: &Report) -> Job {
        let base = super::response::responses(report);
        self.mitigations = base
            .profiles
            .keys()
            .filter(|p| *p != PLAIN)
            .filter_map(|p| super::job_mitigation::limits(report, p).map(|x| (p.clone(), x)))
            .collect();
        self
    }

    /// The run's responses with this job's iteration as the only plain
    /// one, and each measured mitigation as the job runs it.
    pub fn responses(&self, base: &Responses) -> Responses {
        let mut r = base.clone();
        // Each measured mitigation: the job's iteration under what its
        // rungs held and achieved.
        for (p, list) in r.profiles.iter_mut().filter(|(p, _)| *p != PLAIN) {
            *list = self
                .mitigations
                .iter()
                .find(|(q, _)| q == p)
                .map(|(_, l)| vec![super::job_mitigation::mitigated(&self.measured, l)])
                .unwrap_or_default();
        }
        r.profiles.retain(|_, l| !l.is_empty());
        r.profiles.insert(PLAIN.into(), vec![self.measured.clone()]);
        // A flat job's swing is its recorded stretch's own, not a
        // constant load's bound.
        r.sustained_swing_w = None;
        r.flat_job = !self.periodic;
        r
    }

    /// The schedule as the job runs it: the measured iteration's period
    /// and on-fraction, its own communication.
    pub fn schedule(&self, asked: &Schedule) -> Schedule {
        let mut s = asked.clone();
        s.job.iteration_ms = self.measured.period_ms;
        s.job.compute_fraction = self.measured.duty;
        s.communication = Communication::Off;
        s
    }

    /// What the reader must know first: where the iteration comes from,
    /// and what of the schedule it replaces.
    pub fn notes(&self, asked: &Schedule) -> Vec<String> {
        let m = &self.measured;
        let r = self.row.as_ref();
        let pm = r
            .and_then(|r| r.period_ci95_ms)
            .map_or_else(String::new, |x| format!(" ± {x:.2}"));
        let jitter = r
            .and_then(|r| r.jitter_ms)
            .map_or_else(String::new, |x| format!(", jitter {x:.1} ms"));
        let cycles = r
            .and_then(|r| r.cycles)
            .map_or_else(String::new, |x| format!(", {x} iterations"));
        let mut first = if self.periodic {
            format!(
                "FROM THE JOB: the iteration is the one measured in workload rung `{}` ({:.2}{pm} ms{jitter}{cycles}, {:.0} % of it above the mid-level), folded from its own samples, not a square wave",
                self.label,
                m.period_ms,
                100.0 * m.duty
            )
        } else {
            format!(
                "FROM THE JOB: workload rung `{}` shows no iteration period (steps back to back, or too irregular): its middle {:.0} s of node power is repeated as the job, every GPU drawing it together (an upper bound across GPUs only: the samples' own 20 ms averaging may hide faster dips; {:.0} W p90 − p10 per GPU in its samples)",
                self.label,
                FLAT_STRETCH_MS / 1000.0,
                self.flat_swing_w.unwrap_or(f64::NAN)
            )
        };
        let off = 100.0 * (asked.job.iteration_ms - m.period_ms) / m.period_ms;
        if self.periodic && (off.abs() > 1.0 || (asked.job.compute_fraction - m.duty).abs() > 0.01)
        {
            first.push_str(&format!(
                "; the schedule's iteration_ms = {} ({off:+.0} % from it) and compute_fraction = {} are not used (a job of another iteration has another shape: record that job)",
                asked.job.iteration_ms, asked.job.compute_fraction
            ));
        }
        let mut notes = vec![first];
        notes.extend(self.mitigation_notes());
        if !matches!(asked.communication, Communication::Off) {
            notes.push("The schedule's `[communication]` is not used: the measured iteration holds the job's own communication.".into());
        }
        notes
    }
}
