//! `powerlab predict`: a training job of N GPUs built from one run's
//! measured responses, never from square waves.
//!
//! 1. [`response`]: every duty rung with a composed cycle becomes one
//!    GPU's measured cycle (the mean of the run's GPUs, each at its own
//!    rising edge), by mitigation profile and period;
//! 2. [`template`]: one GPU's iteration at the schedule's period and
//!    compute fraction, spliced from the measured rise and fall at the
//!    nearest measured periods and blended between them;
//! 3. [`waveform`]: N GPUs, each node at an offset drawn every iteration
//!    (stagger group, spread, stragglers), summed as it is drawn;
//! 4. [`figures`]: the run report's own envelope, grid metrics and
//!    spectrum on the result; [`scenario`] repeats 2–4 for the plain wave
//!    and every measured mitigation (the mitigation table), and for each
//!    set of repeats (the ±);
//! 5. [`export`]: the prediction's files (`waveform.parquet`, the CSV
//!    tables, the plots, `report.md` and `report.html`), formatted from
//!    the [`Prediction`] alone.

pub mod export;
pub mod figures;
pub mod grid_system;
pub mod job;
pub mod job_mitigation;
pub mod lifecycle;
pub mod response;
pub mod scenario;
pub mod source;
pub mod stream;
pub mod template;
pub mod waveform;

use figures::SpectrumBand;
use powerlab_analysis::envelope::Envelope;
use powerlab_analysis::grid::GridMetrics;
use powerlab_campaign::DEFAULT_BAND_HZ;
use powerlab_campaign::schedule::{Communication, Schedule, Spread};
use powerlab_collate::report::Report;
use response::{PLAIN, Responses};
pub use scenario::{Scenario, VsPlain};

/// Why a prediction cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum PredictError {
    /// No measured response to build from.
    #[error(
        "the run has no duty rung with a composed cycle per GPU to build a prediction from; predict from a node run (not a rack's report) with at least one duty phase whose report states composed-cycle figures"
    )]
    NoResponses,
    /// The schedule's mitigation was not measured.
    #[error(
        "the schedule's mitigation profile `{asked}` was not measured in this run; measured: {measured}; run a campaign whose duty phase lists it under `smoothing`, or pick one of these"
    )]
    UnknownProfile {
        /// What the schedule asked for.
        asked: String,
        /// What the run has.
        measured: String,
    },
    /// The schedule's mitigation was measured, but every rung of it was
    /// refused credit (edges out of tolerance, or it ran upside down).
    #[error(
        "the schedule's mitigation profile `{asked}` was measured in this run but not credited: {why} (mitigation.csv says so per rung); predict from a run where it ran as asked, or pick one of: {measured}"
    )]
    NotCredited {
        /// What the schedule asked for.
        asked: String,
        /// Why its rungs were refused, the first's reason.
        why: String,
        /// What the run has that is credited.
        measured: String,
    },
    /// The schedule's `[lifecycle]` cannot be built from this run.
    #[error("{0}")]
    Lifecycle(String),
    /// The workload rung asked for cannot be predicted from.
    #[error("{0}")]
    NoJob(String),
    /// `communication.source = "fabric"` without a fabric rung.
    #[error(
        "the schedule takes the communication power from the run's NCCL fabric rung, but the run has none with a mean; declare `[communication] source = \"given\"` with `w_per_gpu`, or run a campaign with an NCCL phase on two or more GPUs"
    )]
    NoFabric,
    /// `communication.w_per_gpu` above what the run's GPUs can draw.
    #[error(
        "the schedule's `communication.w_per_gpu` = {w_per_gpu} W is above the {limit_w} W enforced power limit of the run's GPUs (manifest.json): no GPU of this run can draw it; declare at most {limit_w} W, or take the level from the run with `source = \"off\"` or `\"fabric\"`"
    )]
    CommAboveLimit {
        /// The declared draw per GPU, W.
        w_per_gpu: f64,
        /// The highest enforced power limit among the run's GPUs, W.
        limit_w: f64,
    },
}

/// A prediction: every scenario's figures, the headline's waveform and
/// spectrum, the envelope and grid metrics of every scenario, and what the
/// reader must know first.
#[derive(Debug, Clone)]
pub struct Prediction {
    /// `<job> from <campaign> on <node>`.
    pub title: String,
    /// The schedule as validated.
    pub schedule: Schedule,
    /// Nodes in the job.
    pub nodes: u64,
    /// GPUs per node.
    pub gpus_per_node: u32,
    /// What a GPU draws while it communicates, W (None: the measured
    /// off-phase), and where that comes from, in words.
    pub comm: (Option<f64>, String),
    /// The spread in words.
    pub spread: String,
    /// The iteration's points' spacing, ms.
    pub step_ms: f64,
    /// The waveform's resolution, ms.
    pub resolution_ms: f64,
    /// Every scenario; the first is the schedule's own.
    pub scenarios: Vec<Scenario>,
    /// The headline scenario's waveform, W, one point per `resolution_ms`.
    pub waveform: Vec<f64>,
    /// Its spectrum.
    pub spectrum: Vec<SpectrumBand>,
    /// Every scenario's envelope against the schedule's `[supply]`.
    pub envelope: Envelope,
    /// Every scenario's grid metrics against the `[grid]`.
    pub grid: GridMetrics,
    /// The headline's forcing of the `[grid]`'s declared modes over one
    /// expected iteration, and the retuned period (None: no modes).
    pub modes: Option<powerlab_analysis::grid::modes::ModeStudy>,
    /// The schedule's `[lifecycle]` streamed: its plan, figures and
    /// verdicts (None: none declared).
    pub lifecycle: Option<lifecycle::LifecycleStudy>,
    /// The `[grid.system]` study: the screen, the windows and, once
    /// played ([`grid_system::simulate`]), the simulator's (None: none).
    pub grid_system: Option<grid_system::GridStudy>,
    /// What the figures rest on that the reader must know first
    /// (extrapolated periods, phases the instrument does not resolve,
    /// qualified source rungs).
    pub notes: Vec<String>,
}

/// What every scenario shares.
pub(crate) struct Ctx<'a> {
    pub(crate) schedule: &'a Schedule,
    pub(crate) responses: &'a Responses,
    pub(crate) comm_w: Option<f64>,
    pub(crate) spread_bins: Vec<(i64, f64)>,
    pub(crate) nodes: u64,
    pub(crate) step_ms: f64,
    pub(crate) per_output: usize,
    pub(crate) gpus_per_node: u32,
}

/// Smallest spacing of an iteration's points, ms: the composed cycles'
/// own grid.
pub const FINEST_STEP_MS: f64 = 0.5;

/// Predicts the schedule's job from `report`'s measured responses.
///
/// # Errors
///
/// [`PredictError`] when the run has no response to build from, lacks the
/// schedule's mitigation profile or its fabric rung, or the schedule
/// declares a communication draw above the run's GPUs' enforced limit.
pub fn predict(report: &Report, schedule: &Schedule) -> Result<Prediction, PredictError> {
    predict_from(report, schedule, &job::From::Auto)
}

/// Predicts the schedule's job from `report`: from its workload rung
/// (the user's own job, the measured iteration) or its duty rungs'
/// square waves, as `from` asks.
///
/// # Errors
///
/// As [`predict`], and [`PredictError::NoJob`] when `from` names no
/// workload rung of the run or the run has several and `from` names none.
pub fn predict_from(
    report: &Report,
    asked: &Schedule,
    from: &job::From,
) -> Result<Prediction, PredictError> {
    let job = job::job_of(report, from)?;
    let base = response::responses(report);
    let (responses, schedule) = match &job {
        Some(j) => (j.responses(&base), j.schedule(asked)),
        None => (base, asked.clone()),
    };
    let mut p = predict_with(report, &schedule, responses)?;
    if let Some(j) = &job {
        let mut notes = j.notes(asked);
        notes.append(&mut p.notes);
        p.notes = notes;
        p.comm = (None, "the job's own, as measured".into());
    }
    Ok(p)
}

fn predict_with(
    report: &Report,
    schedule: &Schedule,
    responses: Responses,
) -> Result<Prediction, PredictError> {
    if responses.profiles.is_empty() {
        return Err(PredictError::NoResponses);
    }
    let profile = profile_of(report, schedule, &responses)?;
    let job = &schedule.job;
    let gpn = job
        .gpus_per_node
        .unwrap_or(responses.gpus.max(1) as u32)
        .min(job.gpus.min(u64::from(u32::MAX)) as u32)
        .max(1);
    let nodes = job.gpus.div_ceil(u64::from(gpn));
    let r = schedule.output.resolution_ms;
    let per_output = ((r / FINEST_STEP_MS).ceil() as usize).clamp(1, 20);
    let step_ms = r / per_output as f64;
    let comm = communication(report, schedule, responses.gpus)?;
    let (spread_bins, spread) = spread_of(report, schedule.spread, step_ms);
    let ctx = Ctx {
        schedule,
        responses: &responses,
        comm_w: comm.0,
        spread_bins,
        nodes,
        step_ms,
        per_output,
        gpus_per_node: gpn,
    };
    let grid_spec = schedule
        .grid
        .clone()
        .or_else(|| powerlab_analysis::grid::grid_of(&report.run));
    let band_hz = grid_spec.as_ref().map_or(DEFAULT_BAND_HZ, |g| g.band_hz);
    let built = scenario::all(&ctx, &profile, band_hz, grid_spec.as_ref());
    let modes = grid_spec
        .as_ref()
        .and_then(|g| mode_study(g, &built.expected, job.iteration_ms, built.highest_hz));
    let lifecycle = schedule
        .lifecycle
        .as_ref()
        .map(|lc| {
            let plan = lifecycle_plan(report, schedule, lc, &built.channels, step_ms, band_hz)?;
            lifecycle::LifecycleStudy::of(plan, grid_spec.as_ref(), schedule.supply.as_ref())
                .map_err(|e| PredictError::Lifecycle(format!("the lifecycle study failed: {e}")))
        })
        .transpose()?;
    let grid_system = grid_system::of_built(grid_spec.as_ref(), job, &built, lifecycle.as_ref())
        .map_err(PredictError::Lifecycle)?;
    let mut notes = unfinished(report);
    if let Some(n) = report.node().filter(|n| !n.raw_problems.is_empty()) {
        notes.push(format!(
            "INCOMPLETE RAW DATA in the run: {}; rungs whose figures are qualified are named below",
            n.raw_problems.join("; ")
        ));
    }
    if schedule.grid.is_none() && grid_spec.is_some() {
        notes.push("The schedule declares no `[grid]`: the run campaign's `[grid]` is judged, its ramp limits scaled to the job's GPUs (a `max_dynamic_range_w` there is a node's).".into());
    }
    notes.extend(built.notes);
    if let Some(h) = built.scenarios.first() {
        notes.extend(counter_check(report, schedule, &profile, h.mean_w.value));
    }
    if schedule.spread == Spread::Measured && measured_skew_us(report) <= 0.0 {
        notes.push(format!("The schedule asks for the measured spread, but the run measured no start skew: {spread}."));
    }
    Ok(Prediction {
        title: format!("{} from {}", job.name, report.title),
        schedule: schedule.clone(),
        nodes,
        gpus_per_node: gpn,
        comm,
        spread,
        step_ms,
        resolution_ms: r,
        spectrum: figures::spectrum(&built.waveform, r),
        waveform: built.waveform,
        envelope: Envelope {
            supply: schedule.supply.clone(),
            sample_window_ms: r,
            rungs: built.envelopes,
        },
        grid: GridMetrics {
            spec: grid_spec,
            band_hz,
            gpus: job.gpus as usize,
            rungs: built.grids,
        },
        modes,
        lifecycle,
        grid_system,
        scenarios: built.scenarios,
        notes,
    })
}

/// The schedule's mitigation profile, measured and credited in the run.
fn profile_of(
    report: &Report,
    schedule: &Schedule,
    responses: &Responses,
) -> Result<String, PredictError> {
    let profile = schedule
        .mitigation
        .profile
        .clone()
        .unwrap_or_else(|| PLAIN.into());
    if responses.profiles.contains_key(&profile) {
        return Ok(profile);
    }
    if responses.profiles.is_empty() {
        return Err(PredictError::NoResponses);
    }
    let measured = responses
        .profiles
        .keys()
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    let refused = report.node().and_then(|n| {
        n.mitigation
            .rows
            .iter()
            .find(|r| r.mitigation == profile && r.withheld.is_some())
            .and_then(|r| r.withheld.clone())
    });
    Err(match refused {
        Some(why) => PredictError::NotCredited {
            asked: profile,
            why,
            measured,
        },
        None => PredictError::UnknownProfile {
            asked: profile,
            measured,
        },
    })
}

/// The headline's forcing of the grid's modes over its expected
/// iteration (None: no modes declared).
fn mode_study(
    g: &powerlab_campaign::Grid,
    expected: &[f64],
    iteration_ms: f64,
    highest_hz: f64,
) -> Option<powerlab_analysis::grid::modes::ModeStudy> {
    let pct = g
        .retune_iteration_pct
        .unwrap_or(powerlab_campaign::DEFAULT_RETUNE_ITERATION_PCT);
    // The iteration's points lie period / len apart (step_ms where that
    // divides the period).
    let step = iteration_ms / expected.len().max(1) as f64;
    let mut m = powerlab_analysis::grid::modes::mode_study(expected, step, &g.modes, pct)?;
    // A band above what the measured cycles hold is not "clear": its
    // forcing there is the splice's, not measured.
    for f in &mut m.modes {
        if f.band_hi_hz > highest_hz && !f.flagged {
            f.unresolved_above_hz = Some(highest_hz);
        }
    }
    Some(m)
}

/// The lifecycle study's plan: every scenario's running job at the
/// study's resolution (a whole number of the iteration's points), the
/// run's measured edges, the supply's windows and the band.
fn lifecycle_plan(
    report: &Report,
    schedule: &Schedule,
    lc: &powerlab_campaign::schedule::Lifecycle,
    channels: &[lifecycle::Channel],
    step_ms: f64,
    band_hz: [f64; 2],
) -> Result<lifecycle::Plan, PredictError> {
    let per = (lc.resolution_ms / step_ms).round().max(1.0);
    if (per * step_ms - lc.resolution_ms).abs() > 1e-9 * lc.resolution_ms {
        return Err(PredictError::Lifecycle(format!(
            "lifecycle.resolution_ms = {} ms is not a whole number of the iteration's {step_ms} ms points (set by output.resolution_ms = {} ms): declare a multiple of {step_ms} ms",
            lc.resolution_ms, schedule.output.resolution_ms
        )));
    }
    let channels = channels
        .iter()
        .map(|c| {
            let mut c = c.clone();
            c.layout.per_output = per as usize;
            c
        })
        .collect();
    let limit = enforced_limit_w(report);
    let declared = [
        ("lifecycle.idle_w_per_gpu", lc.idle_w_per_gpu),
        (
            "lifecycle.checkpoint_w_per_gpu",
            lc.checkpoint.and_then(|c| c.w_per_gpu),
        ),
    ];
    for (key, w) in declared {
        if let (Some(w), Some(l)) = (w, limit)
            && w > l
        {
            return Err(PredictError::Lifecycle(format!(
                "the schedule's {key} = {w} W is above the {l} W enforced power limit of the run's GPUs (manifest.json): no GPU of this run can draw it; declare at most {l} W, or leave it out for the run's measured level"
            )));
        }
    }
    let measured = report.node().map_or(&[][..], |n| n.lifecycle.as_slice());
    let job = &schedule.job;
    let mut plan = lifecycle::plan(
        lc,
        measured,
        job.gpus,
        job.iteration_ms,
        schedule.output.seed,
        channels,
    )
    .map_err(|e| {
        PredictError::Lifecycle(format!(
            "{e}; or pass --no-lifecycle to predict the steady job alone"
        ))
    })?;
    plan.windows_ms = schedule
        .supply
        .as_ref()
        .map(|s| s.excursions.iter().map(|e| e.duration_ms).collect())
        .unwrap_or_default();
    plan.band_hz = band_hz;
    if lc.idle_w_per_gpu.is_none() && report.run.manifest.backend.backend != "sim" {
        plan.notes.insert(0, format!(
            "IDLE WITH THE HARNESS'S CONTEXT: on real GPUs the harness keeps its own CUDA context through a workload rung, so the measured kill and exit settle at a context-held idle ({:.1} W per GPU here), above what a GPU whose process died draws once the driver has torn its context down (an H100 read 69.8 W in nvidia-smi before such a run, 123 W after its kills): the crash's and the end's steps are understated by up to that difference times {} GPUs; declare lifecycle.idle_w_per_gpu with the node's bare idle for the full step",
            plan.edges.idle_w, job.gpus
        ));
    }
    Ok(plan)
}

/// A run that did not finish (killed, interrupted, failed), how it ended
/// and the planned rungs it never reached, as the run's report states
/// them: the prediction rests on the rungs that ran, and says so first.
fn unfinished(report: &Report) -> Vec<String> {
    use powerlab_collate::render::{missing_rungs_warning, status_warning};
    let raw_end_ns = report.node().and_then(|n| n.raw_end_ns);
    let run = &report.run;
    let mut notes: Vec<String> = status_warning(run, raw_end_ns)
        .map(|w| {
            format!("{w}; this prediction is built only from the rungs measured before it stopped")
        })
        .into_iter()
        .collect();
    notes.extend(missing_rungs_warning(run, &run.manifest, raw_end_ns));
    notes
}

/// The highest enforced power limit among the run's GPUs, W, as its
/// manifest recorded them at the start (None: none recorded).
fn enforced_limit_w(report: &Report) -> Option<f64> {
    response::limits_w(report).into_iter().reduce(f64::max)
}

/// What a GPU draws while it communicates, W, and where that comes from.
fn communication(
    report: &Report,
    schedule: &Schedule,
    gpus: usize,
) -> Result<(Option<f64>, String), PredictError> {
    match schedule.communication {
        Communication::Off => Ok((
            None,
            "the measured off-phase (no separate communication power)".into(),
        )),
        Communication::Given { w_per_gpu } => match enforced_limit_w(report) {
            Some(limit_w) if w_per_gpu > limit_w => {
                Err(PredictError::CommAboveLimit { w_per_gpu, limit_w })
            }
            _ => Ok((
                Some(w_per_gpu),
                format!("{w_per_gpu:.0} W per GPU, as declared"),
            )),
        },
        Communication::Fabric => {
            let row = report.rungs.iter().find(|s| {
                s.rung.kind == powerlab_campaign::PhaseKind::Nccl
                    && s.rung.label.rsplit('/').next() == Some("fabric")
                    && s.mean_w.is_some()
            });
            let Some(s) = row else {
                return Err(PredictError::NoFabric);
            };
            let w = s.mean_w.unwrap_or(f64::NAN) / gpus.max(1) as f64;
            Ok((
                Some(w),
                format!(
                    "{w:.0} W per GPU, the mean of the run's fabric rung `{}`",
                    s.rung.label
                ),
            ))
        }
    }
}

/// The spread's bins in steps of `step_ms`, and the spread in words.
fn spread_of(report: &Report, spread: Spread, step_ms: f64) -> (Vec<(i64, f64)>, String) {
    match spread {
        Spread::None => (vec![(0, 1.0)], "none: every node starts together".into()),
        Spread::Normal { sigma_ms } => (
            waveform::normal_bins(sigma_ms / step_ms),
            format!("normal, σ {sigma_ms} ms, drawn per node every iteration"),
        ),
        Spread::Uniform { width_ms } => (
            waveform::uniform_bins(width_ms / step_ms),
            format!("uniform over {width_ms} ms, drawn per node every iteration"),
        ),
        Spread::Measured => {
            let skew_us = measured_skew_us(report);
            if skew_us <= 0.0 {
                return (
                    vec![(0, 1.0)],
                    "none measured (one GPU, or no start records): every node starts together"
                        .into(),
                );
            }
            let w = skew_us / 1000.0;
            (
                waveform::uniform_bins(w / step_ms),
                format!("uniform over {w:.3} ms, the largest start skew the run measured"),
            )
        }
    }
}

/// The largest start skew the run measured, µs (0: none).
fn measured_skew_us(report: &Report) -> f64 {
    report
        .rungs
        .iter()
        .filter_map(|s| s.start_skew_us)
        .fold(0.0_f64, f64::max)
}

/// A predicted mean off by more than this share of the run's own
/// energy-counter mean at the same period and duty is said first, %.
pub const COUNTER_CHECK_PCT: f64 = 5.0;

/// The run's energy-counter means of rungs at the schedule's period and
/// compute fraction that have no composed cycle (too short for the
/// instrument): where the prediction's mean per GPU is off by more than
/// [`COUNTER_CHECK_PCT`], a note with both.
fn counter_check(
    report: &Report,
    schedule: &Schedule,
    profile: &str,
    mean_w: f64,
) -> Option<String> {
    let job = &schedule.job;
    if !matches!(schedule.communication, Communication::Off) {
        return None;
    }
    let gpus = report.run.series.len().max(1) as f64;
    let counted: Vec<f64> = report
        .rungs
        .iter()
        .filter(|s| {
            s.rung.kind == powerlab_campaign::PhaseKind::Duty
                && s.method == powerlab_rundir::summary::Method::EnergyCounter
        })
        .filter(|s| {
            let p = s
                .rung
                .smoothing
                .filter(|x| !x.is_none())
                .map_or_else(|| PLAIN.to_string(), |x| x.label());
            p == profile
                && (s.rung.duty - job.compute_fraction).abs() < 0.05
                && s.rung
                    .period_ms
                    .is_some_and(|p| response::same_period(p.ms(), job.iteration_ms))
        })
        .filter_map(|s| s.mean_w.map(|m| m / gpus))
        .collect();
    if counted.is_empty() {
        return None;
    }
    let counter = counted.iter().sum::<f64>() / counted.len() as f64;
    let predicted = mean_w / job.gpus.max(1) as f64;
    let off = 100.0 * (predicted - counter) / counter;
    (off.abs() > COUNTER_CHECK_PCT).then(|| format!(
        "CHECK FAILED: at this period and duty the run's energy counter measured {counter:.0} W per GPU, the prediction's mean is {predicted:.0} W ({off:+.1} %): the measured cycles do not resolve this iteration; trust the counter's mean, not this waveform"
    ))
}
