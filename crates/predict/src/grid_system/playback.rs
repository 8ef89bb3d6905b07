//! The time-domain playback: every window written as CSV at the declared
//! step, one `python -m powerlab_andes play` call for all of them, the
//! series it returns read back (the metrics are computed in Rust, as the
//! screen's). The interpreter is the caller's choice (`--andes-python`,
//! `POWERLAB_ANDES_PYTHON`, `.venv-andes/bin/python`), never a schedule's.

use super::metrics::Series;
use super::model::ModalModel;
use super::windows::PlayWindow;
use powerlab_campaign::GridSystem;
use powerlab_rundir::files::predict::{
    GRID_MODES_JSON, GRID_PLAY_JSON, GRID_WINDOWS_JSON, grid_window_csv,
};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The environment variable that names the interpreter.
pub const PYTHON_ENV: &str = "POWERLAB_ANDES_PYTHON";
/// The venv the setup script makes, under the current directory.
pub const DEFAULT_VENV_PYTHON: &str = ".venv-andes/bin/python";
/// The one command that sets the environment up.
pub const SETUP: &str = "bash scripts/grid/setup-andes.sh";
/// The Python module.
pub const MODULE: &str = "powerlab_andes";

/// Why the playback did not run.
#[derive(Debug, thiserror::Error)]
pub enum PlaybackError {
    /// No interpreter, or one without the package.
    #[error(
        "the ANDES environment is not set up ({0}): run `{SETUP}` (a venv in .venv-andes), or pass --andes-python PATH or set {PYTHON_ENV}; the analytic screen is given without it"
    )]
    NoEnv(String),
    /// A file could not be written or read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What happened.
        source: std::io::Error,
    },
    /// The simulator failed as a whole.
    #[error(
        "`python -m {MODULE} {cmd}` failed (exit {code}): {stderr}; rerun it by hand to see why, or run `{SETUP}` again"
    )]
    Failed {
        /// The subcommand.
        cmd: String,
        /// Its exit status.
        code: String,
        /// The end of what it wrote to stderr.
        stderr: String,
    },
    /// What it wrote is not what the interface says.
    #[error(
        "{path}: not what `python -m {MODULE}` writes ({why}); the package and this build disagree: run `{SETUP}` again"
    )]
    Format {
        /// The file.
        path: PathBuf,
        /// Why.
        why: String,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> PlaybackError + '_ {
    move |source| PlaybackError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The interpreter: `flag`, else the environment variable, else the
/// default venv under the current directory where it exists.
pub fn python(flag: Option<&Path>) -> Option<PathBuf> {
    flag.map(Path::to_path_buf)
        .or_else(|| std::env::var_os(PYTHON_ENV).map(PathBuf::from))
        .or_else(|| {
            let p = PathBuf::from(DEFAULT_VENV_PYTHON);
            p.exists().then_some(p)
        })
}

/// `PY -m powerlab_andes version`, as it prints it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Version {
    /// The package's version.
    pub powerlab_andes: String,
    /// ANDES's.
    pub andes: String,
    /// Python's.
    pub python: String,
}

fn run(py: &Path, args: &[&std::ffi::OsStr], cmd: &str) -> Result<String, PlaybackError> {
    let out = Command::new(py)
        .arg("-m")
        .arg(MODULE)
        .args(args)
        .output()
        .map_err(|e| PlaybackError::NoEnv(format!("{}: {e}", py.display())))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: String = err.lines().rev().take(6).collect::<Vec<_>>().join(" | ");
        return Err(PlaybackError::Failed {
            cmd: cmd.into(),
            code: out
                .status
                .code()
                .map_or_else(|| "by a signal".into(), |c| c.to_string()),
            stderr: tail,
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Checks the environment: `PY -m powerlab_andes version`.
///
/// # Errors
///
/// [`PlaybackError::NoEnv`] when it does not answer as the interface says.
pub fn version(py: &Path) -> Result<Version, PlaybackError> {
    let out = run(py, &[std::ffi::OsStr::new("version")], "version").map_err(|e| match e {
        PlaybackError::NoEnv(w) => PlaybackError::NoEnv(w),
        other => PlaybackError::NoEnv(format!("{}: {other}", py.display())),
    })?;
    let line = out.lines().rev().find(|l| l.trim_start().starts_with('{'));
    line.and_then(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| {
            PlaybackError::NoEnv(format!(
                "{} -m {MODULE} version printed no version line",
                py.display()
            ))
        })
}

/// `PY -m powerlab_andes modes` at `p0_mw`, written to `dir`.
///
/// # Errors
///
/// [`PlaybackError`] when it fails or writes something else.
pub fn modes(
    py: &Path,
    sys: &GridSystem,
    p0_mw: f64,
    dir: &Path,
) -> Result<ModalModel, PlaybackError> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let out = dir.join(GRID_MODES_JSON);
    let bus = sys.bus.to_string();
    let p0 = format!("{p0_mw}");
    let args: [&std::ffi::OsStr; 8] = [
        "modes".as_ref(),
        "--case".as_ref(),
        sys.case.as_ref(),
        "--bus".as_ref(),
        bus.as_ref(),
        "--p-mw".as_ref(),
        p0.as_ref(),
        "--out".as_ref(),
    ];
    let mut all: Vec<&std::ffi::OsStr> = args.to_vec();
    all.push(out.as_os_str());
    run(py, &all, "modes")?;
    let text = std::fs::read_to_string(&out).map_err(io(&out))?;
    ModalModel::parse(&text).map_err(|e| PlaybackError::Format {
        path: out.clone(),
        why: e.to_string(),
    })
}

/// What `play.json` says of one window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlayedWindow {
    /// The window's name.
    pub name: String,
    /// Its output, relative to the out folder.
    pub file: String,
    /// Whether the simulation converged.
    pub converged: bool,
    /// Simulated time, s.
    #[serde(default)]
    pub sim_s: f64,
    /// Wall time, s.
    #[serde(default)]
    pub wall_s: f64,
    /// Why it failed.
    #[serde(default)]
    pub error: Option<String>,
}

/// `play.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlayJson {
    /// ANDES's version.
    pub andes_version: String,
    /// The simulator's settings as the adapter chose them.
    pub settings: serde_json::Value,
    /// Every window.
    pub windows: Vec<PlayedWindow>,
}

/// The playback's result: the simulator's settings, and per window (in
/// the windows' order) its series, or why there is none.
#[derive(Debug, Clone, PartialEq)]
pub struct Playback {
    /// The environment.
    pub version: Version,
    /// What `play.json` said.
    pub play: PlayJson,
    /// Per window: the series, or the simulator's error.
    pub series: Vec<Result<Series, String>>,
    /// Wall time of the whole call, s.
    pub wall_s: f64,
}

#[derive(Serialize)]
struct WindowsJson<'a> {
    step_ms: f64,
    windows: Vec<WindowEntry<'a>>,
}

#[derive(Serialize)]
struct WindowEntry<'a> {
    name: String,
    file: &'a str,
}

/// Writes every window (`dir/in/NNN.csv`, `dir/windows.json`), calls
/// `play` once and reads `dir/out/`.
///
/// # Errors
///
/// [`PlaybackError`] when a file cannot be written, the call fails as a
/// whole, or its output is not what the interface says.
pub fn play(
    py: &Path,
    version: Version,
    sys: &GridSystem,
    windows: &[PlayWindow],
    dir: &Path,
) -> Result<Playback, PlaybackError> {
    let t0 = std::time::Instant::now();
    let inputs = dir.join("in");
    let outputs = dir.join("out");
    for d in [&inputs, &outputs] {
        std::fs::create_dir_all(d).map_err(io(d))?;
    }
    let step_s = sys.step_ms / 1000.0;
    let names: Vec<String> = (0..windows.len()).map(grid_window_csv).collect();
    for (w, name) in windows.iter().zip(&names) {
        let path = dir.join(name);
        let mut text = String::from("t_s,p_mw\n");
        for (j, p) in w.p_mw.iter().enumerate() {
            text.push_str(&format!("{},{p}\n", j as f64 * step_s));
        }
        std::fs::write(&path, text).map_err(io(&path))?;
    }
    let spec = WindowsJson {
        step_ms: sys.step_ms,
        windows: windows
            .iter()
            .zip(&names)
            .map(|(w, f)| WindowEntry {
                name: w.name(),
                file: f,
            })
            .collect(),
    };
    let wj = dir.join(GRID_WINDOWS_JSON);
    let text = serde_json::to_string_pretty(&spec).map_err(|e| PlaybackError::Format {
        path: wj.clone(),
        why: e.to_string(),
    })?;
    std::fs::write(&wj, text).map_err(io(&wj))?;
    let bus = sys.bus.to_string();
    let args: [&std::ffi::OsStr; 9] = [
        "play".as_ref(),
        "--case".as_ref(),
        sys.case.as_ref(),
        "--bus".as_ref(),
        bus.as_ref(),
        "--windows".as_ref(),
        wj.as_os_str(),
        "--out-dir".as_ref(),
        outputs.as_os_str(),
    ];
    run(py, &args, "play")?;
    let pj = outputs.join(GRID_PLAY_JSON);
    let text = std::fs::read_to_string(&pj).map_err(io(&pj))?;
    let play: PlayJson = serde_json::from_str(&text).map_err(|e| PlaybackError::Format {
        path: pj.clone(),
        why: e.to_string(),
    })?;
    let series = (0..windows.len())
        .map(|i| match play.windows.get(i) {
            None => Err("the simulator returned no result for this window".to_string()),
            Some(w) if !w.converged => {
                Err(w.error.clone().unwrap_or_else(|| "did not converge".into()))
            }
            Some(w) => read_series(&outputs.join(&w.file), step_s).map_err(|e| e.to_string()),
        })
        .collect();
    Ok(Playback {
        version,
        play,
        series,
        wall_s: t0.elapsed().as_secs_f64(),
    })
}

/// One output CSV: `t_s,p_load_mw,f_bus_hz,f_coi_hz,p_tie_mw` (the tie
/// empty without one).
///
/// # Errors
///
/// [`PlaybackError`] when it cannot be read or is out of shape.
pub fn read_series(path: &Path, step_s: f64) -> Result<Series, PlaybackError> {
    let bad = |why: String| PlaybackError::Format {
        path: path.to_path_buf(),
        why,
    };
    let mut r = csv::Reader::from_path(path).map_err(|e| bad(e.to_string()))?;
    let header: Vec<String> = r
        .headers()
        .map_err(|e| bad(e.to_string()))?
        .iter()
        .map(str::to_string)
        .collect();
    let want = ["t_s", "p_load_mw", "f_bus_hz", "f_coi_hz", "p_tie_mw"];
    if header != want {
        return Err(bad(format!(
            "header {} where {} belongs",
            header.join(","),
            want.join(",")
        )));
    }
    let mut s = Series {
        step_s,
        ..Series::default()
    };
    for rec in r.records() {
        let rec = rec.map_err(|e| bad(e.to_string()))?;
        let num = |i: usize| -> Result<Option<f64>, PlaybackError> {
            let t = rec.get(i).unwrap_or("").trim();
            if t.is_empty() {
                return Ok(None);
            }
            t.parse::<f64>()
                .map(Some)
                .map_err(|e| bad(format!("`{t}`: {e}")))
        };
        let need = |i: usize| num(i)?.ok_or_else(|| bad(format!("an empty {} cell", want[i])));
        s.p_mw.push(need(1)?);
        s.f_bus_hz.push(need(2)?);
        s.f_coi_hz.push(need(3)?);
        if let Some(t) = num(4)? {
            s.p_tie_mw.push(t);
        }
    }
    Ok(s)
}
