//! The analytic screen held against the simulator on Kundur's two-area
//! case (issue 60, "must show"): a steady oscillation at a period that
//! excites the inter-area mode within 15 %, a crash's RoCoF within 10 % of
//! ΔP·f0/(2ΣHS), and the ratio of the oscillation at resonance to one
//! second away, from both.
//!
//! Needs the ANDES environment: `bash scripts/grid/setup-andes.sh`, then
//! `POWERLAB_ANDES_PYTHON=.venv-andes/bin/python cargo test -p
//! powerlab-predict --test grid_andes -- --ignored --nocapture` (a few
//! minutes: three windows of 20–90 s are simulated).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking

use powerlab_campaign::GridSystem;
use powerlab_predict::grid_system::metrics::{Response, WindowKind, response};
use powerlab_predict::grid_system::model::{self, F_BUS, ModalModel, P_TIE};
use powerlab_predict::grid_system::screen::{self, ModeKind};
use powerlab_predict::grid_system::windows::PlayWindow;
use powerlab_predict::grid_system::{linear_series, playback};

const STEP_MS: f64 = 20.0;
const STEADY_S: f64 = 90.0;
/// The facility: 60 MW idle between steps of a 3/4 compute phase at
/// 100 MW (about a 100,000-GPU job's levels), the edges 40 ms long.
const LOW_MW: f64 = 60.0;
const HIGH_MW: f64 = 100.0;

fn system() -> GridSystem {
    GridSystem {
        case: "kundur/kundur_full.xlsx".into(),
        bus: 7,
        steady_window_s: STEADY_S,
        event_window_s: 20.0,
        step_ms: STEP_MS,
        max_df_mhz: None,
        max_rocof_hz_per_s: None,
        max_osc_pp_mhz: None,
        max_osc_pp_tie_mw: None,
    }
}

/// One iteration of `period_s` at `n` points: compute for 3/4 of it,
/// linear 40 ms edges.
fn iteration(period_s: f64, n: usize) -> Vec<f64> {
    let edge = 0.04;
    (0..n)
        .map(|i| {
            let t = i as f64 / n as f64 * period_s;
            let on = 0.75 * period_s;
            let up = (t / edge).min(1.0);
            let down = if t > on {
                ((t - on) / edge).min(1.0)
            } else {
                0.0
            };
            LOW_MW + (HIGH_MW - LOW_MW) * (up - down).clamp(0.0, 1.0)
        })
        .collect()
}

fn steady(period_s: f64) -> Vec<f64> {
    let step = STEP_MS / 1000.0;
    let per = (period_s / step).round() as usize;
    let it = iteration(per as f64 * step, per);
    (0..(STEADY_S / step) as usize)
        .map(|i| it[i % per])
        .collect()
}

fn window(name: &str, kind: WindowKind, p: Vec<f64>) -> PlayWindow {
    PlayWindow {
        scenario: "check".into(),
        window: name.into(),
        kind,
        t_event_s: None,
        p_mw: p,
    }
}

/// The screen's analytic p-p at `period_s` (the harmonics of one
/// iteration, at the playback's own step).
fn screen_pp(m: &ModalModel, period_s: f64) -> [f64; 3] {
    let step = STEP_MS / 1000.0;
    let per = (period_s / step).round() as usize;
    // In W, as the screen takes a waveform.
    let it: Vec<f64> = iteration(per as f64 * step, per)
        .iter()
        .map(|mw| mw * powerlab_core::units::W_PER_MW)
        .collect();
    let c = screen::harmonics(&it, 1);
    screen::steady_pp(m, &c, per as f64 * step, 1.0)
}

#[test]
#[ignore = "needs the ANDES environment (bash scripts/grid/setup-andes.sh; POWERLAB_ANDES_PYTHON)"]
fn the_screen_holds_against_andes_on_kundur() {
    let Some(py) = playback::python(None) else {
        panic!(
            "set POWERLAB_ANDES_PYTHON to the ANDES venv's python ({})",
            playback::SETUP
        );
    };
    let version = playback::version(&py).expect("the ANDES environment answers");
    let sys = system();
    let dir = tempfile::tempdir().unwrap();
    // The model the screen uses: ANDES's own at the facility's mean.
    let m = playback::modes(&py, &sys, 0.5 * (LOW_MW + HIGH_MW), dir.path()).unwrap();
    let committed = model::committed(&sys.case, sys.bus).unwrap();
    let modes = screen::modes(&m);
    let ia = modes
        .iter()
        .find(|x| x.kind == ModeKind::InterArea)
        .expect("Kundur has an inter-area mode");
    let t_res = ((1.0 / ia.freq_hz) / (STEP_MS / 1000.0)).round() * STEP_MS / 1000.0;
    let t_away = t_res + 1.0;
    let step_s = STEP_MS / 1000.0;
    let mut crash: Vec<f64> = vec![HIGH_MW; (20.0 / step_s) as usize];
    for (i, p) in crash.iter_mut().enumerate().skip(100) {
        *p = if i == 100 {
            0.5 * (HIGH_MW + LOW_MW)
        } else {
            LOW_MW
        };
    }
    let windows = vec![
        window("resonance", WindowKind::Steady, steady(t_res)),
        window("one second away", WindowKind::Steady, steady(t_away)),
        window("crash", WindowKind::Event { lead_ms: 2000 }, crash),
    ];
    let pb = playback::play(&py, version, &sys, &windows, dir.path()).unwrap();
    let sim: Vec<Response> = pb
        .series
        .iter()
        .zip(&windows)
        .map(|(s, w)| response(s.as_ref().expect("converged"), w.kind))
        .collect();
    let lin: Vec<Response> = windows
        .iter()
        .map(|w| response(&linear_series(&m, &w.p_mw, step_s), w.kind))
        .collect();
    let (at, away) = (screen_pp(&m, t_res), screen_pp(&m, t_away));
    let swing = m.swing_rocof_hz_per_s(HIGH_MW - LOW_MW);
    println!("ANDES {} settings {}", pb.version.andes, pb.play.settings);
    println!(
        "inter-area mode {:.4} Hz ζ {:.4}; resonance period {t_res:.3} s",
        ia.freq_hz, ia.damping_ratio
    );
    println!(
        "committed model: {}",
        committed.map_or("none".into(), |c| c.0.tool)
    );
    for (k, name, unit) in [(F_BUS, "bus", "mHz"), (P_TIE, "tie", "MW")] {
        let s = |r: &Response| {
            if k == F_BUS {
                r.osc_pp_bus_mhz
            } else {
                r.osc_pp_tie_mw
            }
        };
        let (sa, sw) = (s(&sim[0]).unwrap(), s(&sim[1]).unwrap());
        println!(
            "steady p-p {name}: at resonance screen {:.3} (linear playback {:.3}) vs ANDES {:.3} {unit} ({:+.1} %); one second away screen {:.3} vs ANDES {:.3}; ratio screen {:.2}, ANDES {:.2}",
            at[k],
            s(&lin[0]).unwrap(),
            sa,
            100.0 * (at[k] - sa) / sa,
            away[k],
            sw,
            at[k] / away[k],
            sa / sw
        );
        assert!(
            (at[k] - sa).abs() <= 0.15 * sa,
            "{name}: screen {} vs ANDES {sa}",
            at[k]
        );
        assert!(at[k] / away[k] > 1.0 && sa / sw > 1.0);
    }
    let r = sim[2].rocof_coi_100ms_hz_per_s;
    println!(
        "crash of {} MW: RoCoF COI 100 ms ANDES {r:.5} Hz/s, bus {:.5}; swing equation {swing:.5} Hz/s ({:+.1} %); screen's linear playback {:.5}",
        HIGH_MW - LOW_MW,
        sim[2].rocof_bus_100ms_hz_per_s,
        100.0 * (r - swing) / swing,
        lin[2].rocof_coi_100ms_hz_per_s
    );
    assert!((r - swing).abs() <= 0.10 * swing, "{r} vs {swing}");
}
