//! `powerlab predict RUN`: a thin layer over `powerlab_predict`.
//! The schedule is the file with the command line's flags applied (each
//! error located in the file as written, or at the flag); the
//! run's report is computed from its raw files; the prediction is written
//! to `--out` (default `<RUN>/predict/<job name>`). Exit 0 when written, 2
//! when the schedule, the run or an output is refused.

use crate::cli::PredictArgs;
use anyhow::{Context, Result};
use powerlab_campaign::schedule::{Override, Setting};
use powerlab_predict::{self as predict, Prediction, job, source};

pub fn predict(a: &PredictArgs) -> Result<i32> {
    let t0 = std::time::Instant::now();
    // A recording (`observe --csv`) is imported first: a run directory of
    // one workload rung, in a folder that lives as long as the prediction.
    let imported = match recording_run(&a.run) {
        Ok(i) => i,
        Err(e) => {
            errln!("error: {e:#}");
            return Ok(crate::exit::TROUBLE);
        }
    };
    let run_dir = imported.as_ref().map_or(a.run.clone(), |(_, d)| d.clone());
    let report = match source::report_of(&run_dir) {
        Ok(r) => r,
        Err(e) => {
            errln!("error: {e}");
            return Ok(crate::exit::TROUBLE);
        }
    };
    let from = match (&a.from_rung, a.square_waves) {
        (Some(l), _) => job::From::Rung(l.clone()),
        (None, true) => job::From::SquareWaves,
        (None, false) => job::From::Auto,
    };
    let measured = match job::job_of(&report, &from) {
        Ok(j) => j.map(|j| (j.label.clone(), j.measured.period_ms, j.measured.duty)),
        Err(e) => {
            errln!("error: {e}");
            return Ok(crate::exit::TROUBLE);
        }
    };
    // A flag that would be ignored is refused: the job's iteration is measured.
    if let Some((label, period_ms, duty)) = &measured
        && (a.iteration_ms.is_some() || a.compute_fraction.is_some())
    {
        errln!(
            "error: --iteration-ms and --compute-fraction shape a square-wave job; this prediction is built from workload rung `{label}`, whose measured iteration ({period_ms:.2} ms, {:.0} % above its mid-level) is the job's: drop the flag, or pass --square-waves to predict from the duty rungs",
            100.0 * duty
        );
        return Ok(crate::exit::TROUBLE);
    }
    let measured = measured.map(|(_, p, d)| (p, d));
    let schedule = match schedule_of(a, measured) {
        Ok(mut s) => {
            if a.no_lifecycle {
                s.lifecycle = None;
            }
            s
        }
        Err(e) => {
            errln!("error: {e:#}");
            return Ok(crate::exit::TROUBLE);
        }
    };
    let Some(out) = out_dir(a, imported.is_some(), &schedule.job.name, &run_dir) else {
        return Ok(crate::exit::TROUBLE);
    };
    let t_report = t0.elapsed().as_secs_f64();
    let mut p = match predict::predict_from(&report, &schedule, &from) {
        Ok(p) => p,
        Err(e) => {
            errln!("error: {e}");
            return Ok(crate::exit::TROUBLE);
        }
    };
    // The simulator's files go to a sibling of the folder first: the
    // prediction replaces `out` whole, and refuses a folder holding files
    // that are not a prediction's.
    let played = grid_play_dir(&out);
    play_grid(a, &mut p, &played);
    let t_predict = t0.elapsed().as_secs_f64() - t_report;
    let written = predict::export::write_prediction(&p, &out).and_then(|files| {
        keep_grid_play(&played, &out)?;
        Ok(files)
    });
    let _ = std::fs::remove_dir_all(&played);
    match written {
        Ok(files) => {
            for f in files {
                errln!("wrote {}", f.display());
            }
        }
        Err(e) => {
            errln!("error: {e}");
            return Ok(crate::exit::TROUBLE);
        }
    }
    errln!(
        "times: run report {t_report:.2} s, prediction {t_predict:.2} s, written {:.2} s",
        t0.elapsed().as_secs_f64() - t_report - t_predict
    );
    print_summary(&p, a.json);
    Ok(0)
}

/// Where the simulator's windows are played: a hidden sibling of `out`
/// (moved to `<out>/grid/` once the prediction is written).
fn grid_play_dir(out: &std::path::Path) -> std::path::PathBuf {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "prediction".into());
    out.with_file_name(format!(".{name}.grid-play-{}", std::process::id()))
}

/// Moves the simulator's files (if it ran) into the written prediction's
/// `grid/` folder.
fn keep_grid_play(
    played: &std::path::Path,
    out: &std::path::Path,
) -> Result<(), powerlab_samples::error::CollateError> {
    if !played.is_dir() {
        return Ok(());
    }
    let dest = out.join(powerlab_rundir::files::predict::GRID_DIR);
    let _ = std::fs::remove_dir_all(&dest);
    std::fs::rename(played, &dest).map_err(|e| powerlab_samples::error::CollateError::io(&dest, e))
}

/// Plays the `[grid.system]`'s windows into the simulator (unless
/// `--no-grid-playback`), its files under `dir`; what fails is
/// said in the report, the screen stands.
fn play_grid(a: &PredictArgs, p: &mut Prediction, dir: &std::path::Path) {
    let Some(g) = p.grid_system.as_mut() else {
        return;
    };
    if a.no_grid_playback {
        g.notes.push(
            "Time-domain playback not run (--no-grid-playback): the analytic screen alone.".into(),
        );
        return;
    }
    errln!(
        "grid: playing {} windows into {} (bus {}) ...",
        g.windows.len(),
        g.system.case,
        g.system.bus
    );
    if let Some(n) = predict::grid_system::simulate(g, a.andes_python.as_deref(), dir) {
        errln!("grid: {n}");
    }
}

/// The folder the prediction is written to: `--out`, else beside the
/// recording (`<file>.predict/<job name>`, an `imported` one) or in the
/// run (`<RUN>/predict/<job name>`); None, said, when it lies inside the
/// run directory or a run's report/ folder.
fn out_dir(
    a: &PredictArgs,
    imported: bool,
    job_name: &str,
    run_dir: &std::path::Path,
) -> Option<std::path::PathBuf> {
    let out = a.out.clone().unwrap_or_else(|| {
        if imported {
            // Beside the recording: `<file>.predict/<job name>`.
            let mut f = a.run.clone().into_os_string();
            f.push(".predict");
            std::path::PathBuf::from(f).join(folder_name(job_name))
        } else {
            a.run.join("predict").join(folder_name(job_name))
        }
    });
    if let Some(why) = inside_the_run(run_dir, &out) {
        errln!("error: --out {}: {why}", out.display());
        return None;
    }
    if let Some(run) = crate::cmd_compare::inside_a_report(&out) {
        errln!(
            "error: --out {} lies inside the report/ folder of run {}, which every collation replaces whole; write it elsewhere, e.g. --out {}",
            out.display(),
            run.display(),
            run.join("predict").display()
        );
        return None;
    }
    Some(out)
}

/// A recording given in place of a run directory, imported into a
/// temporary folder (kept while the returned guard lives); None for a
/// run directory.
fn recording_run(
    path: &std::path::Path,
) -> Result<Option<(tempfile::TempDir, std::path::PathBuf)>> {
    if !path.is_file() {
        return Ok(None);
    }
    let tmp = tempfile::tempdir().context("cannot create a folder to import the recording into")?;
    let dir = crate::recording::import(path, tmp.path())
        .with_context(|| format!("importing the recording {}", path.display()))?;
    Ok(Some((tmp, dir)))
}

/// The job's name as one path-safe folder name: every character outside
/// A-Z a-z 0-9 . _ - becomes `_`, and a leading dot too.
fn folder_name(name: &str) -> String {
    let mut f: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if f.starts_with('.') || f.is_empty() {
        f.insert(0, '_');
    }
    f
}

/// Why `out` may not hold a prediction: inside the run directory but not
/// under its `predict/` (the run's own files would be mixed with it).
fn inside_the_run(run: &std::path::Path, out: &std::path::Path) -> Option<String> {
    let lexical = |p: &std::path::Path| -> Option<std::path::PathBuf> {
        let abs = std::path::absolute(p).ok()?;
        let mut norm = std::path::PathBuf::new();
        for c in abs.components() {
            match c {
                std::path::Component::ParentDir => {
                    norm.pop();
                }
                std::path::Component::CurDir => {}
                c => norm.push(c),
            }
        }
        Some(norm)
    };
    let (run, out) = (lexical(run)?, lexical(out)?);
    (out.starts_with(&run) && !out.starts_with(run.join("predict")) || out == run.join("predict"))
        .then(|| format!("lies inside the run directory {} but not in a folder of its predict/; write it to {} or outside the run", run.display(), run.join("predict").join("<name>").display()))
}

/// The scenarios as JSON, or a line each.
fn print_summary(p: &Prediction, json: bool) {
    if json {
        let v = serde_json::json!({
            "title": p.title,
            "notes": p.notes,
            "scenarios": p.scenarios,
        });
        outln!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return;
    }
    for n in &p.notes {
        outln!("NOTE: {n}");
    }
    use powerlab_samples::format::{fmt_power, fmt_power_pm};
    for s in &p.scenarios {
        outln!(
            "{:<24} mean {}, swing (p90-p10) {}, peak {}",
            s.label,
            fmt_power_pm(s.mean_w.value, s.mean_w.plus_minus),
            fmt_power_pm(s.swing_w.value, s.swing_w.plus_minus),
            fmt_power(s.levels.peak_w)
        );
    }
}

/// The schedule: the file (if any) with the flags applied, validated. An
/// error in the file is located at its own line and column; one in a
/// flag's value names the flag.
fn schedule_of(
    a: &PredictArgs,
    measured: Option<(f64, f64)>,
) -> Result<powerlab_campaign::schedule::Schedule> {
    let (name, text) = match &a.schedule {
        Some(p) => (
            p.display().to_string(),
            std::fs::read_to_string(p)
                .with_context(|| format!("cannot read the schedule {}", p.display()))?,
        ),
        None => ("(command line)".to_string(), String::new()),
    };
    let mut overrides = overrides(a);
    // Every key of the job's shape that nothing gives is named at once,
    // with the flag that sets it, before the schedule's own checks (which
    // stop at the first).
    let missing = missing_shape(a, &text, measured.is_some());
    if !missing.is_empty() {
        let flags = listed(
            missing
                .iter()
                .map(|k| format!("{} ({})", k.flag, k.allowed)),
        );
        match &a.schedule {
            None => anyhow::bail!(
                "{}predict needs the job's shape: add {flags}, or give --schedule schedules/llm-100k.toml, which declares them all (the flags then override it)",
                if overrides.is_empty() {
                    ""
                } else {
                    "the command line's flags: "
                }
            ),
            Some(p) => anyhow::bail!(
                "{}: the schedule lacks {}: add {} to its [job] table, or pass {flags}",
                p.display(),
                listed(missing.iter().map(|k| format!("`job.{}`", k.key))),
                if missing.len() == 1 { "it" } else { "them" },
            ),
        }
    }
    let first = powerlab_campaign::schedule::parse_schedule_with(&name, &text, &overrides);
    // From the user's job, its measured iteration stands in for the keys
    // the schedule leaves out.
    match (first, measured) {
        (Err(e), Some((period_ms, duty)))
            if e.message.ends_with("is required")
                && matches!(
                    e.field.as_deref(),
                    Some("job.iteration_ms" | "job.compute_fraction")
                ) =>
        {
            let flag = "(the measured job)".to_string();
            if a.iteration_ms.is_none() {
                overrides.push(Override {
                    flag: flag.clone(),
                    setting: Setting::IterationMs(period_ms),
                });
            }
            if a.compute_fraction.is_none() {
                overrides.push(Override {
                    flag,
                    setting: Setting::ComputeFraction(duty),
                });
            }
            powerlab_campaign::schedule::parse_schedule_with(&name, &text, &overrides)
                .map_err(|e| anyhow::anyhow!(located(&e)))
        }
        (r, _) => r.map_err(|e| anyhow::anyhow!(located(&e))),
    }
}

/// A key of the job's shape that the schedule requires.
struct ShapeKey {
    /// The key in the `[job]` table.
    key: &'static str,
    /// The flag that sets it, with its value's placeholder.
    flag: &'static str,
    /// The values it takes.
    allowed: String,
}

/// The keys of the job's shape (`job.gpus`, `job.iteration_ms`,
/// `job.compute_fraction`) that neither the schedule file's `text`, a flag
/// nor the `measured` job (its iteration) gives. Empty where the text is
/// not TOML: the schedule's own error says where.
fn missing_shape(a: &PredictArgs, text: &str, measured: bool) -> Vec<ShapeKey> {
    use powerlab_campaign::schedule::{ITERATION_MS_RANGE, MAX_JOB_GPUS};
    let Ok(file) = text.parse::<toml::Table>() else {
        return Vec::new();
    };
    let in_file = |key: &str| {
        file.get("job")
            .and_then(toml::Value::as_table)
            .is_some_and(|j| j.contains_key(key))
    };
    let (lo, hi) = ITERATION_MS_RANGE;
    [
        (
            "gpus",
            "--gpus N",
            format!("1..={MAX_JOB_GPUS}"),
            a.gpus.is_some(),
        ),
        (
            "iteration_ms",
            "--iteration-ms T",
            format!("{lo}..={hi}"),
            a.iteration_ms.is_some() || measured,
        ),
        (
            "compute_fraction",
            "--compute-fraction C",
            "0 < C <= 1".to_string(),
            a.compute_fraction.is_some() || measured,
        ),
    ]
    .into_iter()
    .filter(|(key, _, _, given)| !given && !in_file(key))
    .map(|(key, flag, allowed, _)| ShapeKey { key, flag, allowed })
    .collect()
}

/// `a`, `a and b`, `a, b and c`.
fn listed(items: impl Iterator<Item = String>) -> String {
    let v: Vec<String> = items.collect();
    match v.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// A schedule error as the user reads it: `file:line:column: …`, or, for
/// one not in the file (a flag's value, line 0), `where: …`.
fn located(e: &powerlab_campaign::CampaignError) -> String {
    if e.line > 0 {
        return e.to_string();
    }
    let field = e
        .field
        .as_ref()
        .map(|f| format!("field `{f}`: "))
        .unwrap_or_default();
    let allowed = e
        .allowed
        .as_ref()
        .map(|a| format!(" (allowed: {a})"))
        .unwrap_or_default();
    let hint = e
        .field
        .as_deref()
        .and_then(flag_of)
        .filter(|_| e.message.ends_with("is required"))
        .map(|f| format!("; pass {f} or --schedule FILE"))
        .unwrap_or_default();
    format!("{}: {field}{}{allowed}{hint}", e.file, e.message)
}

/// The flag that sets a schedule key, where one does.
fn flag_of(field: &str) -> Option<&'static str> {
    Some(match field {
        "job.gpus" => "--gpus",
        "job.gpus_per_node" => "--gpus-per-node",
        "job.iteration_ms" => "--iteration-ms",
        "job.compute_fraction" => "--compute-fraction",
        "mitigation.profile" => "--mitigation",
        "mitigation.stagger_groups" => "--stagger-groups",
        "spread.sigma_ms" => "--spread-sigma-ms",
        "output.span_s" => "--span-s",
        "output.resolution_ms" => "--resolution-ms",
        _ => return None,
    })
}

/// The flags given, as the keys they set.
fn overrides(a: &PredictArgs) -> Vec<Override> {
    let mut v = Vec::new();
    let mut set = |flag: &str, setting: Setting| {
        v.push(Override {
            flag: flag.to_string(),
            setting,
        });
    };
    if let Some(x) = a.gpus {
        set("--gpus", Setting::Gpus(x));
    }
    if let Some(x) = a.gpus_per_node {
        set("--gpus-per-node", Setting::GpusPerNode(x));
    }
    if let Some(x) = a.iteration_ms {
        set("--iteration-ms", Setting::IterationMs(x));
    }
    if let Some(x) = a.compute_fraction {
        set("--compute-fraction", Setting::ComputeFraction(x));
    }
    if let Some(x) = &a.mitigation {
        set("--mitigation", Setting::Profile(x.clone()));
    }
    if let Some(x) = a.stagger_groups {
        set("--stagger-groups", Setting::StaggerGroups(x));
    }
    if let Some(x) = a.spread_sigma_ms {
        set("--spread-sigma-ms", Setting::SpreadSigmaMs(x));
    }
    if let Some(x) = a.span_s {
        set("--span-s", Setting::SpanS(x));
    }
    if let Some(x) = a.resolution_ms {
        set("--resolution-ms", Setting::ResolutionMs(x));
    }
    v
}
