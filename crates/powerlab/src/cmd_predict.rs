//! `powerlab predict RUN`: a thin layer over `powerlab_collate::predict`.
//! The schedule is the file with the command line's flags applied; the
//! run's report is computed from its raw files; the prediction is written
//! to `--out` (default `<RUN>/predict/<job name>`). Exit 0 when written, 2
//! when the schedule, the run or an output is refused.

use crate::cli::PredictArgs;
use anyhow::{Context, Result};
use powerlab_collate::predict::{self, Prediction, source};
use toml::{Table, Value};

pub fn predict(a: &PredictArgs) -> Result<i32> {
    let schedule = match schedule_of(a) {
        Ok(s) => s,
        Err(e) => {
            errln!("error: {e:#}");
            return Ok(crate::exit::TROUBLE);
        }
    };
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| a.run.join("predict").join(folder_name(&schedule.job.name)));
    if let Some(why) = inside_the_run(&a.run, &out) {
        errln!("error: --out {}: {why}", out.display());
        return Ok(crate::exit::TROUBLE);
    }
    if let Some(run) = crate::cmd_compare::inside_a_report(&out) {
        errln!(
            "error: --out {} lies inside the report/ folder of run {}, which every collation replaces whole; write it elsewhere, e.g. --out {}",
            out.display(),
            run.display(),
            run.join("predict").display()
        );
        return Ok(crate::exit::TROUBLE);
    }
    let t0 = std::time::Instant::now();
    let report = match source::report_of(&a.run) {
        Ok(r) => r,
        Err(e) => {
            errln!("error: {e}");
            return Ok(crate::exit::TROUBLE);
        }
    };
    let t_report = t0.elapsed().as_secs_f64();
    let p = match predict::predict(&report, &schedule) {
        Ok(p) => p,
        Err(e) => {
            errln!("error: {e}");
            return Ok(crate::exit::TROUBLE);
        }
    };
    let t_predict = t0.elapsed().as_secs_f64() - t_report;
    match predict::export::write_prediction(&p, &out) {
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
    use powerlab_collate::format::{fmt_power, fmt_power_pm};
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

/// The schedule: the file (if any) with the flags applied, validated.
fn schedule_of(a: &PredictArgs) -> Result<powerlab_campaign::schedule::Schedule> {
    let (name, text) = match &a.schedule {
        Some(p) => (
            p.display().to_string(),
            std::fs::read_to_string(p)
                .with_context(|| format!("cannot read the schedule {}", p.display()))?,
        ),
        None => ("(command line)".to_string(), String::new()),
    };
    let overrides = overrides(a);
    if overrides.is_empty() {
        if a.schedule.is_none() {
            anyhow::bail!(
                "no schedule: pass --schedule FILE (schedules/llm-100k.toml shows every key) or at least --gpus, --iteration-ms and --compute-fraction"
            );
        }
        return Ok(powerlab_campaign::schedule::parse_schedule_str(
            &name, &text,
        )?);
    }
    let mut table: Table = toml::from_str(&text).with_context(|| {
        format!("{name} is not TOML; powerlab validate-style errors come once it parses")
    })?;
    if overrides.iter().any(|o| o.0 == "spread") {
        table.remove("spread");
    }
    for (t, k, v) in overrides {
        let sub = table.entry(t).or_insert_with(|| Value::Table(Table::new()));
        if let Value::Table(s) = sub {
            s.insert(k.to_string(), v);
        }
    }
    let merged = toml::to_string(&table).context("the schedule with the flags applied")?;
    let label = format!("{name} with the command line's flags");
    Ok(powerlab_campaign::schedule::parse_schedule_str(
        &label, &merged,
    )?)
}

/// The flags given, as (table, key, value).
fn overrides(a: &PredictArgs) -> Vec<(&'static str, &'static str, Value)> {
    let mut v = Vec::new();
    let int = |x: u64| Value::Integer(i64::try_from(x).unwrap_or(i64::MAX));
    if let Some(x) = a.gpus {
        v.push(("job", "gpus", int(x)));
    }
    if let Some(x) = a.gpus_per_node {
        v.push(("job", "gpus_per_node", int(u64::from(x))));
    }
    if let Some(x) = a.iteration_ms {
        v.push(("job", "iteration_ms", Value::Float(x)));
    }
    if let Some(x) = a.compute_fraction {
        v.push(("job", "compute_fraction", Value::Float(x)));
    }
    if let Some(x) = &a.mitigation {
        v.push(("mitigation", "profile", Value::String(x.clone())));
    }
    if let Some(x) = a.stagger_groups {
        v.push(("mitigation", "stagger_groups", int(u64::from(x))));
    }
    if let Some(x) = a.spread_sigma_ms {
        v.push(("spread", "kind", Value::String("normal".into())));
        v.push(("spread", "sigma_ms", Value::Float(x)));
    }
    if let Some(x) = a.span_s {
        v.push(("output", "span_s", Value::Float(x)));
    }
    if let Some(x) = a.resolution_ms {
        v.push(("output", "resolution_ms", Value::Float(x)));
    }
    v
}
