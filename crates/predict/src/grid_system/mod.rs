//! What the grid sees (issue 60): the schedule's `[grid.system]` names a
//! case of a real dynamic simulator and the facility's bus. From the
//! case's modal model ([`model`]: the simulator's own eigenanalysis) the
//! analytic [`screen`] gives the steady forced oscillation of every
//! scenario's facility waveform, the largest GPU count within the
//! declared limits over a sweep of iteration periods (`safe_gpus.csv`),
//! the danger bands, what a small period change buys, the spec's band
//! shares and every lifecycle event's swing-equation RoCoF. The
//! [`windows`] (the steady job and one around each kind of lifecycle
//! event, per scenario) are played through the modal model here and, by
//! [`playback`], through the simulator itself; [`metrics`] reads both
//! the same way.

pub mod metrics;
pub mod model;
pub mod playback;
pub mod screen;
pub mod windows;

use crate::lifecycle::timeline::EventKind;
use crate::lifecycle::{Channel, LifecycleStudy};
use metrics::{Response, Series, WindowKind};
use model::{F_BUS, ModalModel, P_TIE};
use powerlab_campaign::{Grid, GridSystem};
use screen::{Limits, ModeKind, ScreenMode};
use serde::Serialize;
use std::path::Path;
use windows::PlayWindow;

/// One scenario's steady job as the screen takes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioInput {
    /// Its label.
    pub label: String,
    /// One iteration of its expected waveform, W, evenly spaced.
    pub expected_w: Vec<f64>,
    /// The highest frequency its measured cycles hold, Hz.
    pub highest_hz: f64,
}

/// One lifecycle event's step in one scenario, over the whole study.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventStep {
    /// The scenario.
    pub scenario: String,
    /// The event.
    pub kind: EventKind,
    /// When, s.
    pub t_s: f64,
    /// Its step (after − before), MW.
    pub step_mw: f64,
}

/// One scenario's steady oscillation at the job's own period and GPUs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SteadyRow {
    /// The scenario.
    pub scenario: String,
    /// Peak-to-peak: bus and COI frequency (mHz), tie (MW; NaN: none).
    pub pp: [f64; 3],
    /// Each mode whose band a significant harmonic meets and the
    /// harmonic, in words, `; `-joined (None: none).
    pub danger: Option<String>,
    /// The spec's bands' shares of the fluctuation, % (low, high).
    pub bands: Vec<screen::BandShare>,
}

/// One point of the period sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SafeRow {
    /// The scenario.
    pub scenario: String,
    /// The iteration period, s.
    pub period_s: f64,
    /// Peak-to-peak at the job's GPUs: bus, COI (mHz), tie (MW).
    pub pp: [f64; 3],
    /// The largest GPU count within every declared limit (None: no limit
    /// declared).
    pub safe_gpus: Option<u64>,
    /// The output that sets it.
    pub limited_by: Option<&'static str>,
    /// The mode and harmonic whose band a significant harmonic meets.
    pub danger: Option<String>,
}

/// A band of periods where a significant harmonic of the headline meets
/// a mode's half-power band.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DangerBand {
    /// The mode, in words.
    pub mode: String,
    /// The harmonic number.
    pub harmonic: usize,
    /// The periods, s.
    pub period_s: [f64; 2],
}

/// What a small change of the period buys.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Retune {
    /// The scenario.
    pub scenario: String,
    /// The oscillation at the job's period over its limit (the largest
    /// over the declared limits; without one, the bus's mHz).
    pub load: f64,
    /// The nearest period within the range where every limit holds (else
    /// the one with the least oscillation), s.
    pub to_period_s: f64,
    /// Whether every limit holds there.
    pub safe: bool,
    /// The oscillation there, as `load`.
    pub to_load: f64,
}

impl Retune {
    /// How many times smaller the oscillation is at the retuned period.
    pub fn ratio(&self) -> f64 {
        self.load / self.to_load
    }
}

/// The oscillation at the inter-area mode's resonance and one second
/// away, the headline at the job's GPUs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Resonance {
    /// 1 / the mode's frequency, s.
    pub period_s: f64,
    /// Peak-to-peak there: bus, COI (mHz), tie (MW).
    pub pp_at: [f64; 3],
    /// One second longer.
    pub pp_away: [f64; 3],
}

/// The screen's results.
#[derive(Debug, Clone, PartialEq)]
pub struct Screen {
    /// The modes, classified.
    pub modes: Vec<ScreenMode>,
    /// Per scenario at the job's period.
    pub steady: Vec<SteadyRow>,
    /// The period sweep.
    pub safe: Vec<SafeRow>,
    /// The danger bands.
    pub danger_bands: Vec<DangerBand>,
    /// Per scenario, what retuning buys.
    pub retune: Vec<Retune>,
    /// The resonance check (None: no inter-area mode).
    pub resonance: Option<Resonance>,
    /// Every window played through the modal model, in order.
    pub windows: Vec<Response>,
    /// Each window's Δf at the bus through the modal model, mHz.
    pub bus_mhz: Vec<Vec<f64>>,
    /// Every lifecycle event's swing-equation RoCoF, Hz/s.
    pub swing_hz_per_s: Vec<f64>,
}

/// The grid study.
#[derive(Debug, Clone, PartialEq)]
pub struct GridStudy {
    /// `[grid.system]`.
    pub system: GridSystem,
    /// GPUs in the job.
    pub gpus: u64,
    /// The job's iteration, s.
    pub period_s: f64,
    /// The retuning range, ± %.
    pub retune_pct: f64,
    /// The declared oscillation limits.
    pub limits: Limits,
    /// Every scenario's steady job.
    pub scenarios: Vec<ScenarioInput>,
    /// The played windows.
    pub windows: Vec<PlayWindow>,
    /// Every lifecycle event of every scenario.
    pub events: Vec<EventStep>,
    /// The modal model and where it came from (None: none for this case
    /// and bus without ANDES).
    pub model: Option<(ModalModel, String)>,
    /// The screen (None: no model).
    pub screen: Option<Screen>,
    /// The simulator's environment and settings (None: not run).
    pub playback: Option<playback::Playback>,
    /// Per window, the simulator's figures or why there are none (empty:
    /// not run).
    pub simulated: Vec<Result<Response, String>>,
    /// What the reader must know first.
    pub notes: Vec<String>,
}

/// The study of `grid`'s `[grid.system]` for the scenarios `built`
/// (None: none declared).
///
/// # Errors
///
/// As [`study`].
pub(crate) fn of_built(
    grid: Option<&Grid>,
    job: &powerlab_campaign::schedule::Job,
    built: &crate::scenario::Built,
    lifecycle: Option<&LifecycleStudy>,
) -> Result<Option<GridStudy>, String> {
    grid.and_then(|g| g.system.as_ref().map(|sys| (g, sys)))
        .map(|(g, sys)| {
            study(
                sys,
                g,
                job,
                &built.channels,
                &built.channel_highest_hz,
                lifecycle,
            )
        })
        .transpose()
}

/// Builds the study: the windows, the events, and the screen where a
/// committed modal model covers the case and bus.
///
/// # Errors
///
/// In words, when a committed model does not parse or the lifecycle
/// cannot be streamed.
pub fn study(
    sys: &GridSystem,
    grid: &Grid,
    job: &powerlab_campaign::schedule::Job,
    channels: &[Channel],
    highest_hz: &[f64],
    lifecycle: Option<&LifecycleStudy>,
) -> Result<GridStudy, String> {
    let scenarios: Vec<ScenarioInput> = channels
        .iter()
        .zip(highest_hz.iter().chain(std::iter::repeat(&f64::INFINITY)))
        .map(|(c, h)| ScenarioInput {
            label: c.label.clone(),
            expected_w: crate::waveform::expected(&c.iterations, &c.layout),
            highest_hz: *h,
        })
        .collect();
    let mut wins: Vec<PlayWindow> = channels.iter().map(|c| windows::steady(c, sys)).collect();
    let mut events = Vec::new();
    if let Some(l) = lifecycle {
        wins.extend(
            windows::events(&l.plan, sys)
                .map_err(|e| format!("the grid study's event windows: {e}"))?,
        );
        for c in &l.study.channels {
            events.extend(c.events.iter().map(|e| EventStep {
                scenario: c.label.clone(),
                kind: e.kind,
                t_s: e.t_s,
                step_mw: e.step_mw(),
            }));
        }
    }
    // A file of that name beside the user is the case the simulator
    // loads (it looks there first), so the shipped case's model is not
    // its model: ANDES's own eigenanalysis of it is needed.
    let local = std::path::Path::new(&sys.case).is_file();
    let model = (if local {
        Ok(None)
    } else {
        model::committed(&sys.case, sys.bus)
    })
    .map_err(|e| e.to_string())?
    .map(|(m, path)| {
        let src = format!(
            "the committed modal model {path} ({}, {})",
            m.tool, m.andes_version
        );
        (m, src)
    });
    let mut notes = Vec::new();
    if local {
        notes.push(format!(
            "Case `{}` is a file here, not the case ANDES ships: the committed modal models are not its own, and the screen takes ANDES's eigenanalysis of it",
            sys.case
        ));
    } else if model.is_none() {
        notes.push(format!(
            "No committed modal model for case `{}` at bus {}: the screen needs ANDES's own (`{}`, then predict again with it)",
            sys.case, sys.bus, playback::SETUP
        ));
    }
    let mut s = GridStudy {
        system: sys.clone(),
        gpus: job.gpus,
        period_s: job.iteration_ms / 1000.0,
        retune_pct: grid
            .retune_iteration_pct
            .unwrap_or(powerlab_campaign::DEFAULT_RETUNE_ITERATION_PCT),
        limits: Limits {
            pp_mhz: sys.max_osc_pp_mhz,
            pp_tie_mw: sys.max_osc_pp_tie_mw,
        },
        scenarios,
        windows: wins,
        events,
        model,
        screen: None,
        playback: None,
        simulated: Vec::new(),
        notes,
    };
    s.screen = s.model.as_ref().map(|(m, _)| screen_of(&s, m));
    Ok(s)
}

/// Plays every window through the simulator at `py` (None: not set up),
/// its folders under `dir`; a model from the simulator where none was
/// committed, and the screen with it. What fails is said in the notes:
/// the screen stands without the simulator. Returns the note that says
/// the playback did not run or failed (None: it played).
pub fn simulate(s: &mut GridStudy, py: Option<&Path>, dir: &Path) -> Option<String> {
    let not_run = |s: &mut GridStudy, why: String| {
        s.notes.push(why.clone());
        Some(why)
    };
    let Some(py) = playback::python(py) else {
        return not_run(
            s,
            format!(
                "Time-domain playback not run: no ANDES environment; install it with `{}` (or pass --andes-python PATH); the analytic screen is given.",
                playback::SETUP
            ),
        );
    };
    let version = match playback::version(&py) {
        Ok(v) => v,
        Err(e) => return not_run(s, format!("Time-domain playback not run: {e}.")),
    };
    if s.model.is_none() {
        let p0 = s
            .windows
            .first()
            .and_then(|w| w.p_mw.first())
            .copied()
            .unwrap_or(0.0);
        match playback::modes(&py, &s.system, p0, dir) {
            Ok(m) => {
                let src = format!("ANDES {}'s eigenanalysis at {p0:.1} MW", m.andes_version);
                s.screen = Some(screen_of(s, &m));
                s.model = Some((m, src));
            }
            Err(e) => s.notes.push(format!("No modal model: {e}.")),
        }
    }
    match playback::play(&py, version, &s.system, &s.windows, dir) {
        Ok(p) => {
            s.simulated = p
                .series
                .iter()
                .zip(&s.windows)
                .map(|(r, w)| r.clone().map(|x| metrics::response(&x, w.kind)))
                .collect();
            s.playback = Some(p);
            None
        }
        Err(e) => not_run(s, format!("Time-domain playback failed: {e}.")),
    }
}

/// A window played through the modal model: absolute series.
pub fn linear_series(m: &ModalModel, p_mw: &[f64], step_s: f64) -> Series {
    let [fb, fc, tie] = m.play(p_mw, step_s);
    let tie0 = m.tie.as_ref().map(|t| t.p0_mw);
    Series {
        step_s,
        p_mw: p_mw.to_vec(),
        f_bus_hz: fb.iter().map(|x| m.f0_hz + x).collect(),
        f_coi_hz: fc.iter().map(|x| m.f0_hz + x).collect(),
        p_tie_mw: tie0.map_or_else(Vec::new, |t0| tie.iter().map(|x| t0 + x).collect()),
    }
}

/// Δf at the bus, mHz, from the series' first value.
pub fn bus_mhz(x: &Series) -> Vec<f64> {
    let f0 = x.f_bus_hz.first().copied().unwrap_or(0.0);
    x.f_bus_hz
        .iter()
        .map(|f| metrics::MHZ_PER_HZ * (f - f0))
        .collect()
}

/// The mode in words: `inter-area 0.56 Hz (ζ 3.1 %)`.
pub fn mode_words(x: &ScreenMode) -> String {
    let kind = match x.kind {
        ModeKind::InterArea => "inter-area",
        ModeKind::Oscillatory => "mode",
        ModeKind::Minor => "minor mode",
    };
    format!(
        "{kind} {:.3} Hz (ζ {:.1} %)",
        x.freq_hz,
        100.0 * x.damping_ratio
    )
}

fn screen_of(s: &GridStudy, m: &ModalModel) -> Screen {
    let modes = screen::modes(m);
    let gpus = s.gpus as f64;
    let danger_words = |d: Vec<(usize, usize)>| {
        let w: Vec<String> = d
            .iter()
            .map(|(i, k)| format!("harmonic {k} in the {}", mode_words(&modes[*i])))
            .collect();
        (!w.is_empty()).then(|| w.join("; "))
    };
    let periods = screen::sweep_periods(s.period_s);
    let mut steady = Vec::new();
    let mut safe = Vec::new();
    let mut retune = Vec::new();
    for sc in &s.scenarios {
        let c = screen::harmonics(&sc.expected_w, s.gpus);
        let sig = screen::significant(&c);
        steady.push(SteadyRow {
            scenario: sc.label.clone(),
            pp: screen::steady_pp(m, &c, s.period_s, gpus),
            danger: danger_words(screen::danger(&modes, &sig, s.period_s)),
            bands: screen::band_shares(&sc.expected_w, s.period_s * 1000.0, sc.highest_hz),
        });
        for &t in &periods {
            let one = screen::steady_pp(m, &c, t, 1.0);
            let load = s.limits.load(one);
            safe.push(SafeRow {
                scenario: sc.label.clone(),
                period_s: t,
                pp: one.map(|x| x * gpus),
                safe_gpus: load.map(|(x, _)| safe_count(x)),
                limited_by: load.map(|(_, k)| model::OUTPUTS[k]),
                danger: danger_words(screen::danger(&modes, &sig, t)),
            });
        }
        retune.push(retuned(s, m, &c, &sc.label));
    }
    let first = s
        .scenarios
        .first()
        .map(|sc| screen::harmonics(&sc.expected_w, s.gpus));
    let danger_bands = first
        .as_ref()
        .map(|c| bands(&modes, &screen::significant(c), &periods))
        .unwrap_or_default();
    let resonance = modes
        .iter()
        .find(|x| x.kind == ModeKind::InterArea)
        .zip(first.as_ref())
        .map(|(x, c)| {
            let t = 1.0 / x.freq_hz;
            Resonance {
                period_s: t,
                pp_at: screen::steady_pp(m, c, t, gpus),
                pp_away: screen::steady_pp(m, c, t + 1.0, gpus),
            }
        });
    let step_s = s.system.step_ms / 1000.0;
    let series: Vec<Series> = s
        .windows
        .iter()
        .map(|w| linear_series(m, &w.p_mw, step_s))
        .collect();
    Screen {
        windows: series
            .iter()
            .zip(&s.windows)
            .map(|(x, w)| metrics::response(x, w.kind))
            .collect(),
        bus_mhz: series.iter().map(bus_mhz).collect(),
        swing_hz_per_s: s
            .events
            .iter()
            .map(|e| m.swing_rocof_hz_per_s(e.step_mw))
            .collect(),
        modes,
        steady,
        safe,
        danger_bands,
        retune,
        resonance,
    }
}

/// The largest whole GPU count whose oscillation per GPU over the limit
/// is `per_gpu`.
fn safe_count(per_gpu: f64) -> u64 {
    if per_gpu <= 0.0 {
        return powerlab_campaign::schedule::MAX_JOB_GPUS;
    }
    (1.0 / per_gpu)
        .floor()
        .min(powerlab_campaign::schedule::MAX_JOB_GPUS as f64) as u64
}

/// The period ranges where a significant harmonic meets a mode's band.
fn bands(modes: &[ScreenMode], sig: &[usize], periods: &[f64]) -> Vec<DangerBand> {
    let a = periods.first().copied().unwrap_or(screen::SWEEP_S.0);
    let b = periods.last().copied().unwrap_or(screen::SWEEP_S.1);
    let mut out = Vec::new();
    for x in modes.iter().filter(|x| x.kind != ModeKind::Minor) {
        for &k in sig {
            let lo = k as f64 / x.band_hz[1];
            let hi = k as f64 / x.band_hz[0].max(f64::MIN_POSITIVE);
            if hi < a || lo > b {
                continue;
            }
            out.push(DangerBand {
                mode: mode_words(x),
                harmonic: k,
                period_s: [lo.max(a), hi.min(b)],
            });
        }
    }
    out
}

/// The nearest period within ± the retuning range where every limit
/// holds at the job's GPUs (else the one with the least oscillation).
fn retuned(
    s: &GridStudy,
    m: &ModalModel,
    c: &[powerlab_analysis::fft::Complex<f64>],
    label: &str,
) -> Retune {
    let gpus = s.gpus as f64;
    let load = |t: f64| {
        let pp = screen::steady_pp(m, c, t, gpus);
        s.limits.load(pp).map_or(pp[F_BUS], |x| x.0)
    };
    let l0 = load(s.period_s);
    let n = screen::RETUNE_STEPS as i64;
    let mut tried: Vec<(f64, f64)> = (-n..=n)
        .map(|i| {
            let t = s.period_s * (1.0 + s.retune_pct / 100.0 * i as f64 / n as f64);
            (t, load(t))
        })
        .collect();
    tried.sort_by(|a, b| {
        (a.0 - s.period_s)
            .abs()
            .total_cmp(&(b.0 - s.period_s).abs())
    });
    let limited = s.limits.pp_mhz.is_some() || s.limits.pp_tie_mw.is_some();
    let ok = tried.iter().find(|x| limited && x.1 <= 1.0).copied();
    let (t, l) = ok.unwrap_or_else(|| {
        tried
            .iter()
            .copied()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap_or((s.period_s, l0))
    });
    Retune {
        scenario: label.to_string(),
        load: l0,
        to_period_s: t,
        safe: ok.is_some(),
        to_load: l,
    }
}

/// Whether a window is steady (for the writers).
pub fn is_steady(w: &PlayWindow) -> bool {
    w.kind == WindowKind::Steady
}

/// The tie's index, for the writers.
pub const TIE: usize = P_TIE;
