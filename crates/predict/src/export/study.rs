//! The lifecycle study's files, in `study/` beside the report: the
//! facility waveform streamed again (the same draws as the figures) into
//! COMTRADE ([`comtrade`](super::comtrade)) and a plain CSV
//! ([`study_csv`](super::study_csv)), one channel per scenario, MW; the
//! headline's events as `lifecycle_events.csv`; the figures and verdicts
//! as `lifecycle.json`; and the report's "Lifecycle" section.

use super::comtrade::{COMTRADE_STEM, ComtradeWriter, STUDY_EPOCH_NS};
use super::study_csv::{EventRow, WAVEFORM_CSV, WaveformCsvWriter, write_events};
use super::units::{fmt_energy_mwh, fmt_figure, fmt_mw, fmt_mw_signed};
use crate::Prediction;
use crate::lifecycle::study::{Sink, study};
use crate::lifecycle::{LifecycleStudy, study::EventFigure};
use powerlab_collate::render::text;
use powerlab_samples::error::CollateError;
use powerlab_samples::format::fmt_ms;
use std::fmt::Write;
use std::io;
use std::path::{Path, PathBuf};

/// The study's folder beside the report.
pub const STUDY_DIR: &str = "study";
/// The figures and verdicts.
pub use powerlab_rundir::files::predict::LIFECYCLE_JSON;

/// Both writers, fed one row at a time.
struct Files {
    csv: WaveformCsvWriter,
    comtrade: ComtradeWriter,
}

impl Sink for Files {
    fn row(&mut self, _t_s: f64, mw: &[f64]) -> io::Result<()> {
        self.csv.push(mw)?;
        self.comtrade.push(mw)
    }
}

/// Writes `dir/study/` for a prediction with a lifecycle (nothing
/// without one); returns the files.
///
/// # Errors
///
/// [`CollateError::Io`] when a file cannot be written, or the waveform
/// streamed again does not give the figures the prediction states (a
/// fault of this program: the draws are seeded).
pub fn write_study(p: &Prediction, dir: &Path) -> Result<Vec<PathBuf>, CollateError> {
    let Some(l) = &p.lifecycle else {
        return Ok(Vec::new());
    };
    let out = dir.join(STUDY_DIR);
    std::fs::create_dir_all(&out).map_err(|e| CollateError::io(&out, e))?;
    let names: Vec<&str> = l.plan.channels.iter().map(|c| c.label.as_str()).collect();
    let r = l.plan.lc.resolution_ms;
    let io_at = |path: PathBuf| move |e: io::Error| CollateError::io(&path, e);
    let mut files = Files {
        csv: WaveformCsvWriter::create(&out.join(WAVEFORM_CSV), &names, r)
            .map_err(io_at(out.join(WAVEFORM_CSV)))?,
        comtrade: ComtradeWriter::create(&out, COMTRADE_STEM, &p.title, &names, r, STUDY_EPOCH_NS)
            .map_err(io_at(out.join(COMTRADE_STEM)))?,
    };
    let again = study(&l.plan, &mut files).map_err(io_at(out.clone()))?;
    // Compared as written (a figure that is NaN is not equal to itself).
    if format!("{again:?}") != format!("{:?}", l.study) {
        return Err(CollateError::io(
            &out,
            io::Error::other(
                "the lifecycle waveform streamed again differs from the one the figures were computed from; report this as a bug",
            ),
        ));
    }
    files.csv.finish().map_err(io_at(out.join(WAVEFORM_CSV)))?;
    files
        .comtrade
        .finish()
        .map_err(io_at(out.join(COMTRADE_STEM)))?;
    let events = write_events(&out, &event_rows(l)).map_err(io_at(out.clone()))?;
    let json = out.join(LIFECYCLE_JSON);
    let body = serde_json::json!({
        "study": l.study, "verdicts": l.verdicts, "notes": l.plan.notes,
        "events": l.plan.events,
    });
    std::fs::write(&json, serde_json::to_vec_pretty(&body).unwrap_or_default())
        .map_err(io_at(json.clone()))?;
    Ok(vec![
        out.join(WAVEFORM_CSV),
        out.join(format!("{COMTRADE_STEM}.cfg")),
        out.join(format!("{COMTRADE_STEM}.dat")),
        out.join(super::comtrade::COMTRADE_JSON),
        events,
        json,
    ])
}

/// The headline scenario's events as table rows.
fn event_rows(l: &LifecycleStudy) -> Vec<EventRow> {
    l.study
        .channels
        .first()
        .map(|c| {
            c.events
                .iter()
                .map(|e| EventRow {
                    time_s: e.t_s,
                    event: e.kind.name().to_string(),
                    mw_before: e.before_mw,
                    mw_after: e.after_mw,
                    duration_ms: e.t10_90_ms,
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Appends the "Lifecycle" section (nothing without a lifecycle).
pub(super) fn section(s: &mut String, p: &Prediction) {
    let Some(l) = &p.lifecycle else { return };
    let lc = &l.plan.lc;
    let _ = writeln!(
        s,
        "\n## Lifecycle: start, checkpoints, crashes, end\n\n{} GPUs over {} s at {} ms, streamed ({} points; files in `{STUDY_DIR}/`: COMTRADE `{COMTRADE_STEM}.cfg`/`.dat`, `{WAVEFORM_CSV}`, `lifecycle_events.csv`). Each event's level is the mean over whole iterations (at least 1 s) before it and once its edge has settled; its time is the edge's 10–90 %. Its step at its worst instant runs from the waveform's highest (a fall) or lowest (a rise) point in the 100 ms before it to its lowest or highest once its edge has settled: for a crash in compute, the plateau to idle. The step and ramp verdicts judge the waveform as written at its worst instant (the largest change within any second or minute), the figures between means beside them.\n",
        p.schedule.job.gpus,
        lc.span_s,
        fmt_ms(lc.resolution_ms),
        l.study.points
    );
    for n in &l.plan.notes {
        let _ = writeln!(s, "- {}", text(n));
    }
    verdicts(s, l);
    if let Some(c) = l.study.channels.first() {
        events(s, &c.label, &c.events);
    }
    let states: Vec<String> = l
        .study
        .states
        .iter()
        .map(|(st, secs)| format!("{} {secs:.0} s", st.name()))
        .collect();
    let _ = writeln!(s, "\nTime in each state: {}.", states.join(", "));
}

/// The verdict table: every scenario's figures against the limits.
fn verdicts(s: &mut String, l: &LifecycleStudy) {
    let _ = writeln!(
        s,
        "\n| scenario | figure | value | limit | verdict |\n|---|---|---|---|---|"
    );
    for v in &l.verdicts {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} |",
            text(&v.scenario),
            v.item,
            if v.value.is_finite() {
                fmt_figure(v.value, v.unit)
            } else {
                "not measurable".into()
            },
            v.limit
                .map_or_else(|| "not declared".to_string(), |x| fmt_figure(x, v.unit)),
            match v.pass {
                Some(true) => "✔",
                Some(false) => "✘ over",
                None => "–",
            }
        );
    }
}

/// The event table of one scenario.
fn events(s: &mut String, label: &str, ev: &[EventFigure]) {
    let _ = writeln!(
        s,
        "\nEvents of `{}`:\n\n| t s | event | before | after | step (means) | step at its worst instant | delay to 10 % | 10–90 % | energy not drawn |\n|---|---|---|---|---|---|---|---|---|",
        text(label)
    );
    for e in ev {
        let _ = writeln!(
            s,
            "| {:.1} | {}{} | {} | {} | {} | {} | {} ms | {} ms | {} |",
            e.t_s,
            e.kind.name(),
            if e.drawn { " (drawn)" } else { "" },
            fmt_mw(e.before_mw),
            fmt_mw(e.after_mw),
            fmt_mw_signed(e.step_mw()),
            fmt_mw_signed(e.instant_step_mw()),
            fmt_ms(e.t10_ms),
            fmt_ms(e.t10_90_ms),
            fmt_energy_mwh(e.deficit_mwh)
        );
    }
}

/// "The answer"'s lifecycle line: the headline's largest steps, its
/// fastest per-minute ramps and every limit it breaks.
pub(super) fn answer_line(s: &mut String, p: &Prediction) {
    let Some(l) = &p.lifecycle else { return };
    let Some(c) = l.study.channels.first() else {
        return;
    };
    let worst = |down: bool| {
        c.events
            .iter()
            .filter(|e| e.instant_step_mw().is_finite())
            .max_by(|a, b| {
                let k = if down { -1.0 } else { 1.0 };
                (k * a.instant_step_mw()).total_cmp(&(k * b.instant_step_mw()))
            })
            .map(|e| {
                format!(
                    "{} at its worst instant ({} mean to mean) at the {} at {:.0} s (10–90 % in {} ms)",
                    fmt_mw_signed(e.instant_step_mw()),
                    fmt_mw_signed(e.step_mw()),
                    e.kind.name(),
                    e.t_s,
                    fmt_ms(e.t10_90_ms)
                )
            })
    };
    let over: Vec<String> = l
        .verdicts
        .iter()
        .filter(|v| v.scenario == c.label && v.pass == Some(false))
        .map(|v| {
            format!(
                "{} {} > {}",
                v.item,
                fmt_figure(v.value, v.unit),
                fmt_figure(v.limit.unwrap_or(f64::NAN), v.unit)
            )
        })
        .collect();
    let _ = writeln!(
        s,
        "- **Lifecycle** (`{}`): largest step up {}, down {}; {}.",
        text(&c.label),
        worst(false).unwrap_or_else(|| "none".into()),
        worst(true).unwrap_or_else(|| "none".into()),
        if over.is_empty() {
            "every declared lifecycle limit holds".to_string()
        } else {
            format!("**✘ over its limit:** {}", over.join("; "))
        }
    );
}
