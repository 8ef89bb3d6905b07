//! Reading a run directory: manifest, rung windows from the event log, and
//! the raw power samples into a polars frame.

use crate::campaign::RunCampaign;
use crate::error::CollateError;
use crate::series::{EdgeIndex, SeriesSet};
use polars::prelude::*;
use powerlab_core::Instrument;
use powerlab_core::shape::EdgeKind;
use powerlab_core::units::PeriodMs;
use powerlab_core::units::{NS_PER_MS, ms_to_ns, ms_to_ns_trunc};
use powerlab_rundir::events::read_events_at_most;
use powerlab_rundir::{Manifest, PhaseKind, RunDir, RunEvent, RungInfo};
use std::path::Path;
use std::sync::Arc;

/// One rung's window as the run recorded it.
#[derive(Debug, Clone)]
pub struct RungWindow {
    /// The rung's facts as the `rung_started` event recorded them: id, label,
    /// phase, kind, mode, period, duty and repeat.
    pub info: RungInfo,
    /// Window start (barrier epoch).
    pub epoch_ns: i64,
    /// Measured window start (after the ramp).
    pub measure_from_ns: i64,
    /// Window end: the planned one, or, where the run was stopped inside
    /// the window, the end of the last whole cycle (a duty rung) or the
    /// moment (any other rung) before the stop.
    pub end_ns: i64,
    /// The planned window end, where the run was stopped before it.
    pub stopped_from_ns: Option<i64>,
    /// The run's records end inside this window (killed, or still being
    /// written): `end_ns` is where every GPU's samples and edges still
    /// cover it ([`cut_at_records_end`]).
    pub records_end: bool,
    /// Intended offsets.
    pub offsets_ns: Vec<i64>,
    /// Start errors, when the rung ended.
    pub start_error_ns: Option<Vec<i64>>,
    /// Barrier verdict, when the rung ended.
    pub barrier_ok: Option<bool>,
    /// Barrier lead.
    pub lead_ns: Option<i64>,
}

/// Everything but the raw samples.
#[derive(Debug, Clone)]
pub struct Run {
    /// The manifest.
    pub manifest: Manifest,
    /// The resolved campaign's tables, read once from the manifest.
    pub campaign: RunCampaign,
    /// Every event.
    pub events: Vec<RunEvent>,
    /// Rungs that started, in order.
    pub rungs: Vec<RungWindow>,
    /// Node-curve grid, ns.
    pub grid_ns: i64,
    /// (node, GPU key) of every series expected from the manifest.
    pub series: Vec<(String, String)>,
    /// Rungs the plan lists that have no `rung_started` record in the
    /// event log, by label: never reached in a run that did not finish,
    /// or lost from the log. Named on the report's first line.
    pub missing_rungs: Vec<MissingRung>,
}

/// A rung the plan lists without a record in the event log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingRung {
    /// Its label.
    pub label: String,
    /// Whether a later rung of the plan has a record (so this one's was
    /// lost from the log, not just never reached).
    pub lost: bool,
}

/// The plan's rungs (id, label) without a `rung_started` record.
fn missing_rungs(manifest: &Manifest, rungs: &[RungWindow]) -> Vec<MissingRung> {
    let planned: Vec<(u64, String)> = manifest
        .plan
        .get("rungs")
        .and_then(|r| r.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|r| {
                    Some((
                        r.get("id")?.as_u64()?,
                        r.get("label")?.as_str()?.to_string(),
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    let started: std::collections::BTreeSet<u64> =
        rungs.iter().map(|r| u64::from(r.info.id)).collect();
    let last = started.iter().next_back().copied();
    planned
        .into_iter()
        .filter(|(id, _)| !started.contains(id))
        .map(|(id, label)| MissingRung {
            label,
            lost: last.is_some_and(|l| id < l),
        })
        .collect()
}

/// Reads manifest and events.
///
/// # Errors
///
/// Returns [`CollateError::RunDir`] when the manifest or the event log
/// cannot be read, does not parse, or the manifest is of another
/// run-directory format version.
pub fn load_run(dir: &RunDir) -> Result<Run, CollateError> {
    let manifest = Manifest::read(&dir.manifest())?;
    // No further than the length the run recorded at its end.
    let recorded = manifest
        .checksums
        .iter()
        .find(|c| c.file == powerlab_rundir::RunFile::Events.name())
        .map(|c| c.bytes);
    let events = read_events_at_most(&dir.events(), recorded)?;
    let mut rungs: Vec<RungWindow> = Vec::new();
    let mut leads = std::collections::HashMap::new();
    for e in &events {
        match e {
            RunEvent::Barrier {
                rung_id, lead_ns, ..
            } => {
                leads.insert(*rung_id, *lead_ns);
            }
            RunEvent::RungStarted {
                rung,
                epoch_ns,
                measure_from_ns,
                end_ns,
                offsets_ns,
                ..
            } => {
                check_period(rung, &dir.events())?;
                rungs.push(RungWindow {
                    info: rung.clone(),
                    epoch_ns: *epoch_ns,
                    measure_from_ns: *measure_from_ns,
                    end_ns: *end_ns,
                    stopped_from_ns: None,
                    records_end: false,
                    offsets_ns: offsets_ns.clone(),
                    start_error_ns: None,
                    barrier_ok: None,
                    lead_ns: leads.get(&rung.id).copied(),
                })
            }
            RunEvent::RungEnded {
                rung_id,
                start_error_ns,
                barrier_ok,
                ..
            } => {
                if let Some(r) = rungs.iter_mut().find(|r| r.info.id == *rung_id) {
                    r.start_error_ns = Some(start_error_ns.clone());
                    r.barrier_ok = Some(*barrier_ok);
                }
            }
            RunEvent::Note { topic, detail, .. }
                if topic == powerlab_rundir::events::STOPPED_IN_RUNG_TOPIC =>
            {
                let id = detail["rung_id"].as_u64();
                if let (Some(r), Some(at)) = (
                    rungs.iter_mut().find(|r| Some(u64::from(r.info.id)) == id),
                    detail["stopped_at_ns"].as_i64(),
                ) {
                    cut_at_stop(r, at);
                }
            }
            _ => {}
        }
    }
    let campaign = RunCampaign::of(&manifest.campaign_resolved, &dir.manifest())?;
    // A canonical order, so node sums do not depend on the order GPUs were listed in.
    let mut series: Vec<(String, String)> = manifest
        .backend
        .gpus
        .iter()
        .map(|g| (manifest.backend.node_id.clone(), g.key.clone()))
        .collect();
    series.sort();
    let missing = missing_rungs(&manifest, &rungs);
    Ok(Run {
        grid_ns: ms_to_ns_trunc(campaign.sampling.grid_ms),
        manifest,
        campaign,
        events,
        rungs,
        series,
        missing_rungs: missing,
    })
}

/// A duty or ramp-up rung must state its period: every figure of its
/// cycle is computed over it, and none is ever assumed.
fn check_period(rung: &RungInfo, events: &Path) -> Result<(), CollateError> {
    if !matches!(rung.kind, PhaseKind::Duty | PhaseKind::RampUp) {
        return Ok(());
    }
    match rung.period_ms.map(PeriodMs::ms) {
        Some(p) if p.is_finite() && p > 0.0 => Ok(()),
        other => Err(CollateError::BadRaw {
            path: events.to_path_buf(),
            message: format!(
                "rung {} (id {}) is a {} rung with {}: its cycle cannot be folded without one; the event log was edited or damaged: restore it from the original run directory",
                rung.label,
                rung.id,
                rung.kind,
                other.map_or_else(
                    || "no period_ms".to_string(),
                    |p| format!("period_ms = {p}")
                )
            ),
        }),
    }
}

/// Ends a rung's window where the run stopped inside it (`at`, run
/// clock): a duty rung at the end of its last whole cycle before the stop,
/// any other rung at the stop. A window that keeps less than one cycle (or
/// nothing) stays as planned: its readings' coverage says what is missing.
/// A soak keeps its planned window: its analysis judges it on the time it
/// ran and says so itself.
fn cut_at_stop(r: &mut RungWindow, at: i64) {
    // A GPU with no sample or edge in the window yet gives `at` = i64::MIN:
    // nothing to cut to (a subtraction from it wrapped to 14.8e9 cycles).
    if at >= r.end_ns
        || at <= r.measure_from_ns
        || r.barrier_ok.is_some()
        || r.info.kind == PhaseKind::Soak
    {
        return;
    }
    let end = match r.info.period_ms.map(PeriodMs::ms).filter(|p| *p > 0.0) {
        Some(p) => {
            let p = ms_to_ns(p);
            r.measure_from_ns + (at - r.measure_from_ns) / p * p
        }
        None => at,
    };
    if end > r.measure_from_ns {
        r.stopped_from_ns = Some(r.end_ns);
        r.end_ns = end;
    }
}

/// A run that did not record its end (its manifest still says running and
/// its event log has no end: killed, or still being written and collated as
/// a snapshot): the rung its records end in (started, neither ended nor
/// cut by a logged stop) is cut as a stopped rung is, where the records of
/// every GPU still cover it: the earliest over the GPUs of its last
/// buffered sample and, for a duty rung, of the time before which no edge
/// can be missing (its last recorded edge plus the shorter phase, less
/// 1 ms). None when no rung is cut.
pub fn cut_at_records_end(run: &Run, series: &SeriesSet, edges: &EdgeIndex) -> Option<Run> {
    if run.manifest.finished()
        || run
            .events
            .iter()
            .any(|e| matches!(e, RunEvent::RunEnded { .. }))
    {
        return None;
    }
    let i = run.rungs.iter().rposition(|r| {
        r.barrier_ok.is_none() && r.stopped_from_ns.is_none() && r.info.kind != PhaseKind::Soak
    })?;
    let r = &run.rungs[i];
    // No edge follows another sooner than the shorter phase.
    let gap = r
        .info
        .period_ms
        .map(PeriodMs::ms)
        .map_or(0, |p| {
            ms_to_ns_trunc(r.info.duty.min(1.0 - r.info.duty) * p) - NS_PER_MS
        })
        .max(0);
    let mut at = i64::MAX;
    for (_, gpu) in &run.series {
        let sample = series
            .get(gpu, Instrument::BufferedW)
            .iter()
            .map(|x| x.0)
            .max();
        let edge = [EdgeKind::Start, EdgeKind::Rise, EdgeKind::Fall]
            .into_iter()
            .filter_map(|k| edges.get(r.info.id, gpu, k).iter().copied().max())
            .max()
            .map(|e| e + gap);
        let last = match (sample, r.info.kind == PhaseKind::Duty) {
            (Some(s), true) => edge.map(|e| e.min(s)),
            (s, _) => s,
        };
        at = at.min(last.unwrap_or(i64::MIN));
    }
    let mut cut = run.clone();
    let w = &mut cut.rungs[i];
    cut_at_stop(w, at);
    w.records_end = w.stopped_from_ns.is_some();
    w.records_end.then_some(cut)
}

/// A polars parse error without its advice to the user to switch the
/// check off (`ignore_errors`, `infer_schema_length`): a damaged raw file
/// is to be restored, not read past.
pub fn without_hints(message: &str) -> String {
    let cut = message
        .find("You might want to try")
        .unwrap_or(message.len());
    message[..cut]
        .trim_end()
        .trim_end_matches([',', ';'])
        .to_string()
}

/// The power samples of a run.
pub struct RawPower {
    /// Columns: `ts_ns` (i64), `node`, `gpu`, `instrument` (str), `value` (f64);
    /// only power instruments, in file order (each series is sorted by time
    /// where it is used).
    pub power: DataFrame,
    /// Rows read in total (all instruments).
    pub total_rows: usize,
    /// Raw files cut short or with an unindexed tail, in words.
    pub problems: Vec<String>,
}

pub(crate) fn raw_schema() -> SchemaRef {
    let [ts, node, gpu, instrument, value] = powerlab_rundir::raw::RAW_COLUMNS;
    Arc::new(Schema::from_iter([
        Field::new(ts.into(), DataType::Int64),
        Field::new(node.into(), DataType::String),
        Field::new(gpu.into(), DataType::String),
        Field::new(instrument.into(), DataType::String),
        Field::new(value.into(), DataType::Float64),
    ]))
}

/// A run-directory error reading a raw file, as the collator says it: an
/// I/O failure, or the file named as bad raw data.
fn bad_raw(path: &Path, e: powerlab_rundir::RunDirError) -> CollateError {
    match e {
        powerlab_rundir::RunDirError::Io { source, .. } => CollateError::io(path, source),
        powerlab_rundir::RunDirError::Format { message, .. } => CollateError::BadRaw {
            path: path.to_path_buf(),
            message,
        },
        other => CollateError::BadRaw {
            path: path.to_path_buf(),
            message: other.to_string(),
        },
    }
}

/// The span a run's samples may fall in: from a minute before it started
/// (the driver's buffer holds ~2.4 s of history) to a minute after it
/// ended, or, for a run that never recorded its end (killed), two hours
/// after its last event.
pub fn sample_bounds(run: &Run) -> (i64, i64) {
    const SLACK: i64 = 60_000_000_000;
    let start = run.manifest.started_ns.saturating_sub(SLACK);
    let end = match run.manifest.ended_ns {
        Some(e) => e.saturating_add(SLACK),
        None => run
            .events
            .iter()
            .map(|e| e.ts_ns())
            .max()
            .unwrap_or(run.manifest.started_ns)
            .saturating_add(7_200_000_000_000),
    };
    (start, end)
}

/// Reads every raw CSV (a torn last line from a killed run is dropped). A
/// file with timestamps outside `bounds` is refused by name: it belongs to
/// another run or is corrupt, and a node curve over its span would be wrong
/// (and unbounded).
///
/// Each file must hold its own GPU's rows (named by the file, listed in the
/// manifest, on the manifest's node) and power values a GPU can draw (within
/// three times the larger of its enforced limit and 1000 W): a copied, swapped or rescaled file is
/// refused by name rather than summed into a plausible node.
///
/// # Errors
///
/// Returns [`CollateError::RunDir`] when the `raw/` directory cannot be
/// listed, and [`CollateError::Io`] when a raw file cannot be read.
/// Returns [`CollateError::BadRaw`] naming the file when it belongs to a GPU
/// the manifest does not list, is not a readable gzip file, fails its index
/// check ([`verify_raw`](crate::integrity::verify_raw)), has the wrong
/// header, does not parse as raw samples, has a row with an empty timestamp
/// or value, a value that is not finite or a timestamp outside
/// [`sample_bounds`], or fails
/// [`check_content`](crate::integrity::check_content). Returns
/// [`CollateError::Polars`] when filtering a file's samples or combining
/// the files fails.
/// With `parquet_dir`, every raw file is also written there whole (every
/// instrument, the raw files' columns) as `<gpu>.parquet`, for polars,
/// DuckDB or Spark; [`CollateError::Io`] or [`CollateError::Polars`] when
/// that fails.
pub fn read_power(
    dir: &RunDir,
    run: &Run,
    parquet_dir: Option<&Path>,
) -> Result<RawPower, CollateError> {
    let bounds = sample_bounds(run);
    let files = dir.raw_files()?;
    if let Some(out) = parquet_dir {
        std::fs::create_dir_all(out).map_err(|e| CollateError::io(out, e))?;
    }
    let mut frames = Vec::new();
    let mut total_rows = 0;
    let mut problems = Vec::new();
    for path in &files {
        crate::integrity::check_listed(path, &run.manifest)?;
        let df = read_raw_file(path, run, parquet_dir, &mut problems, Vec::new())?.df;
        total_rows += df.height();
        let df = analysed_rows(df)?;
        check_rows(path, &df, bounds)?;
        crate::integrity::check_content(path, &df, &run.manifest)?;
        frames.push(df);
    }
    let power = if frames.is_empty() {
        DataFrame::empty_with_schema(&Schema::from_iter([
            Field::new("ts_ns".into(), DataType::Int64),
            Field::new("node".into(), DataType::String),
            Field::new("gpu".into(), DataType::String),
            Field::new("instrument".into(), DataType::String),
            Field::new("value".into(), DataType::Float64),
        ]))
    } else {
        let mut frames = frames.into_iter();
        let mut all = frames.next().unwrap_or_default();
        for f in frames {
            // One chunk per file, as before: a rechunk would copy every
            // sample once more at the peak of the collation's memory.
            all.vstack_mut_owned(f)
                .map_err(CollateError::polars("combining raw files"))?;
        }
        all
    };
    Ok(RawPower {
        power,
        total_rows,
        problems,
    })
}

/// The instruments a collation reads: the power paths, the energy counter,
/// and the status instruments for the per-GPU table.
pub(crate) const ANALYSED: [Instrument; 11] = [
    Instrument::BufferedW,
    Instrument::InstantW,
    Instrument::AverageW,
    Instrument::EnergyMj,
    Instrument::PowerLimitW,
    Instrument::SmClockMhz,
    Instrument::GpuTempC,
    Instrument::MemTempC,
    Instrument::ClockEvents,
    Instrument::PowerCapTimeNs,
    Instrument::ThermalCapTimeNs,
];

/// The rows of the instruments a collation reads ([`ANALYSED`]).
pub(crate) fn analysed_rows(df: DataFrame) -> Result<DataFrame, CollateError> {
    let wanted = df
        .column("instrument")
        .and_then(|c| c.str())
        .map_err(CollateError::polars("filtering raw samples"))?
        .iter()
        .map(|i| {
            i.and_then(Instrument::parse)
                .is_some_and(|i| ANALYSED.contains(&i))
        })
        .collect::<BooleanChunked>();
    df.select(["ts_ns", "node", "gpu", "instrument", "value"])
        .and_then(|d| d.filter(&wanted))
        .map_err(CollateError::polars("filtering raw samples"))
}

/// Refuses a raw file with an empty timestamp or value, a value that is not
/// finite, or a timestamp outside the run's span (`bounds`).
pub(crate) fn check_rows(
    path: &Path,
    df: &DataFrame,
    bounds: (i64, i64),
) -> Result<(), CollateError> {
    let mut faults = RowFaults {
        empty: df.column("value").map(|c| c.null_count()).unwrap_or(0)
            + df.column("ts_ns").map(|c| c.null_count()).unwrap_or(0),
        ..RowFaults::default()
    };
    if let Ok(v) = df.column("value").and_then(|c| c.f64().cloned()) {
        faults.not_finite = v.iter().flatten().filter(|x| !x.is_finite()).count();
    }
    if let Ok(ts) = df.column("ts_ns").and_then(|c| c.i64().cloned()) {
        faults.outside = ts
            .iter()
            .flatten()
            .filter(|t| *t < bounds.0 || *t > bounds.1)
            .count();
    }
    faults.judge(path, bounds)
}

/// What a file's analysed rows showed against [`check_rows`]' rules.
#[derive(Debug, Default)]
pub(crate) struct RowFaults {
    /// Empty timestamps and values.
    pub empty: usize,
    /// Values that are not finite.
    pub not_finite: usize,
    /// Timestamps outside the run's span.
    pub outside: usize,
}

impl RowFaults {
    /// The first fault, as an error naming the file.
    pub(crate) fn judge(&self, path: &Path, bounds: (i64, i64)) -> Result<(), CollateError> {
        let bad = |message: String| CollateError::BadRaw {
            path: path.to_path_buf(),
            message,
        };
        if self.empty > 0 {
            return Err(bad("a row has an empty timestamp or value".into()));
        }
        if self.not_finite > 0 {
            return Err(bad(format!(
                "{} row(s) have a value that is not a finite number (inf or NaN)",
                self.not_finite
            )));
        }
        if self.outside > 0 {
            return Err(bad(format!(
                "{} row(s) have timestamps outside this run ({} .. {} ns, the run's span with a minute's slack): the file belongs to another run or is corrupt",
                self.outside, bounds.0, bounds.1
            )));
        }
        Ok(())
    }
}

mod raw_file;
pub(crate) use raw_file::read_raw_file;

#[cfg(test)]
mod tests;
