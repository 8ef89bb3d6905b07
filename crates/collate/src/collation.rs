//! One node run's collation: the pipeline from the run directory's raw
//! samples to its `report/` (integrity checks, series, node curve, edges,
//! sensor model, composed cycles, rung summaries, sensor verdicts, NCCL),
//! and the staging directory that is swapped in only when complete. The
//! analyses compute; [`crate::export`] writes.

use crate::error::CollateError;
use crate::export::{csv, json, markdown, plots};
use crate::sensor::series::{EdgeIndex, SeriesSet};
use crate::{
    curve, cycle, edges, energy, handoff, integrity, load, nccl, node_power, per_gpu, sensor, soak,
    stats, summary,
};
use powerlab_core::units::{NS_PER_S, ms_to_ns_f64, ns_f64_to_s, ns_to_s};
use powerlab_rundir::PhaseKind;
use powerlab_rundir::RunDir;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Where a report keeps its Parquet copy of the raw files
/// (`report/raw/<gpu>.parquet`).
pub const RAW_PARQUET_DIR: &str = powerlab_rundir::ReportFile::RawParquet.file_name();

/// What `collate` produced.
#[derive(Debug, Clone)]
pub struct CollateOutput {
    /// `report/` directory.
    pub report_dir: PathBuf,
    /// Per-rung summaries.
    pub rungs: Vec<summary::RungSummary>,
    /// Across-repeat statistics.
    pub repeats: Vec<summary::RepeatStats>,
    /// In-phase vs staggered rows.
    pub compare: Vec<summary::PhaseCompare>,
    /// The sensor model and per-period verdicts.
    pub sensor: sensor::verdict::SensorReport,
    /// NCCL bandwidth rows (empty without an NCCL phase).
    pub nccl: Vec<nccl::NcclRow>,
    /// Raw rows read.
    pub raw_rows: usize,
    /// Files written.
    pub files: Vec<PathBuf>,
}

/// Regenerates everything under `report/` from the run directory. The new
/// report is written beside the old one and swapped in only when complete:
/// a collation that fails (a damaged file, Ctrl-C) leaves the previous
/// report as it was.
///
/// # Errors
///
/// Fails as [`collate_with`] does without `snapshot`: among others with
/// [`CollateError::Busy`] while the run is still being written.
pub fn collate(path: &Path) -> Result<CollateOutput, CollateError> {
    collate_with(path, CollateOptions::default())
}

/// How a collation treats a run directory another process is using.
#[derive(Debug, Default, Clone, Copy)]
pub struct CollateOptions {
    /// Collate a run that is still being written (its figures are marked
    /// "DID NOT FINISH"); without it such a run is refused.
    pub snapshot: bool,
    /// The soak analysis's first and last window, s (None: one minute,
    /// [`crate::soak::EDGE_S_DEFAULT`]).
    pub soak_edge_s: Option<f64>,
    /// Wait up to this long for another collation of the run (a
    /// `--snapshot` taken as the run ends) to finish, then collate, instead
    /// of refusing at once: the run's own end-of-run collation must not
    /// lose to a snapshot.
    pub wait_for_lock: Option<std::time::Duration>,
}

/// [`collate`] with options. One collation per run directory at a time: a
/// second one refuses, naming the holder's pid.
///
/// # Errors
///
/// Returns [`CollateError::RunDir`] when `path` holds no `manifest.json`, or
/// its manifest, event log, `raw/` directory or `collectives.csv` cannot be
/// read or parsed. Returns [`CollateError::Busy`] when the run is still
/// being written (unless `opts.snapshot`) or another collation holds the
/// run directory. Returns [`CollateError::BadRaw`] when an integrity check
/// fails: a file the run checksummed is missing or changed, or a raw file,
/// its index, `edges.csv` or a given `sensor.json` is damaged, foreign or
/// edited, or the samples span far longer than one run. Returns
/// [`CollateError::Io`] when a raw file, `edges.csv` or a given
/// `sensor.json` cannot be read, or the staging or report directory, or a
/// file in it, cannot be created, written, renamed or removed;
/// [`CollateError::Polars`] when a polars step fails; and
/// [`CollateError::Plot`] when a plot cannot be drawn or written. A failure
/// while the new report is being built leaves the previous one as it
/// was before.
pub fn collate_with(path: &Path, opts: CollateOptions) -> Result<CollateOutput, CollateError> {
    let dir = RunDir::open(path)?;
    if !opts.snapshot
        && let Some(holder) = powerlab_rundir::lock::holder(&dir.run_lock())
    {
        return Err(CollateError::Busy {
            path: dir.path.clone(),
            message: format!(
                "the run is still being written ({holder}); collate it when it ends, or pass --snapshot for a report of what is there now"
            ),
        });
    }
    let lock_path = dir.collate_lock();
    let held = match opts.wait_for_lock {
        Some(limit) => {
            powerlab_rundir::lock::hold_waiting(&lock_path, "collating this run", limit, |who| {
                tracing::info!("waiting for another collation of this run ({who}) to end")
            })
        }
        None => powerlab_rundir::lock::try_hold(&lock_path, "collating this run"),
    };
    let _lock = held.map_err(|e| CollateError::Busy {
        path: dir.path.clone(),
        message: format!("another collation is running: {e}; wait for it to end"),
    })?;
    let report_dir = dir.report_dir();
    // A snapshot of a run that ends meanwhile (its manifest sealed while
    // the snapshot was computed) is computed again from the sealed run: a
    // report must never contradict the manifest beside it.
    let mut attempts = 0;
    let (out, files) = loop {
        let run = load::load_run(&dir)?;
        let status = run.manifest.status.clone();
        attempts += 1;
        let current = || {
            attempts >= 3
                || powerlab_rundir::Manifest::read(&dir.manifest())
                    .is_ok_and(|m| m.status == status)
        };
        let built = staged_if(
            &dir.path,
            &report_dir,
            |staging| {
                collate_into(&dir, &run, staging, opts).map(|o| {
                    let files = o.files.clone();
                    (o, files)
                })
            },
            current,
        )?;
        if let Some(b) = built {
            break b;
        }
    };
    Ok(CollateOutput {
        report_dir,
        files,
        ..out
    })
}

/// Builds a report in a staging directory beside `report_dir` (with
/// `plots/`), and puts it in place only when `build` succeeds: a failed or
/// interrupted collation leaves the previous report as it was. Returns what
/// `build` returned, with the files it listed at their final paths.
pub(crate) fn staged<T>(
    parent: &Path,
    report_dir: &Path,
    build: impl FnOnce(&Path) -> Result<(T, Vec<PathBuf>), CollateError>,
) -> Result<(T, Vec<PathBuf>), CollateError> {
    staged_if(parent, report_dir, build, || true)?.ok_or_else(|| CollateError::Io {
        path: report_dir.to_path_buf(),
        source: std::io::Error::other("the report was built but not put in place"),
    })
}

/// [`staged`], putting the new report in place only if `current()` still
/// holds once it is built (what it was built from has not changed);
/// otherwise it is discarded and `None` returned.
fn staged_if<T>(
    parent: &Path,
    report_dir: &Path,
    build: impl FnOnce(&Path) -> Result<(T, Vec<PathBuf>), CollateError>,
    current: impl FnOnce() -> bool,
) -> Result<Option<(T, Vec<PathBuf>)>, CollateError> {
    tidy_leftovers(parent, report_dir);
    let staging = report_dir.with_file_name(format!("report.new-{}", std::process::id()));
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(|e| CollateError::io(&staging, e))?;
    }
    std::fs::create_dir_all(staging.join(powerlab_rundir::ReportFile::Plots.file_name()))
        .map_err(|e| CollateError::io(&staging, e))?;
    let (out, files) = match build(&staging) {
        Ok(x) => x,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(e);
        }
    };
    if !current() {
        let _ = std::fs::remove_dir_all(&staging);
        return Ok(None);
    }
    swap_in(&staging, report_dir)?;
    let files = files
        .iter()
        .map(|f| {
            f.strip_prefix(&staging)
                .map(|rel| report_dir.join(rel))
                .unwrap_or_else(|_| f.clone())
        })
        .collect();
    Ok(Some((out, files)))
}

/// Puts a complete new report (`staging`) in place of `report_dir`: the
/// old one moves aside, the new one takes its name, the old one goes.
fn swap_in(staging: &Path, report_dir: &Path) -> Result<(), CollateError> {
    let old = report_dir.with_file_name(format!("report.old-{}", std::process::id()));
    if report_dir.exists() {
        std::fs::rename(report_dir, &old).map_err(|e| CollateError::io(report_dir, e))?;
    }
    std::fs::rename(staging, report_dir).map_err(|e| CollateError::io(staging, e))?;
    remove_any(&old).map_err(|e| CollateError::io(&old, e))
}

/// Removes a directory with its content, or a file or link (a `report`
/// that was not a directory); nothing there is not an error.
fn remove_any(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Marks rungs whose window some GPU's readings do not cover; where the
/// GPUs disagree (one covers less than another) every node figure goes, the
/// method says `none`: a sum missing part of a GPU's draw is not the node's.
fn mark_incomplete(
    rungs: &mut [summary::RungSummary],
    coverage: &std::collections::BTreeMap<u32, integrity::Coverage>,
) {
    for r in rungs {
        let Some(c) = coverage.get(&r.rung.id) else {
            continue;
        };
        r.window_coverage = Some(stats::r3(c.worst));
        r.incomplete = c.mark();
        if r.incomplete.is_some() && c.withheld() {
            for f in [
                &mut r.mean_w,
                &mut r.peak_w,
                &mut r.p1_w,
                &mut r.p99_w,
                &mut r.spread_w,
                &mut r.swing_w,
                &mut r.energy_j,
                &mut r.raw_mean_w,
                &mut r.raw_peak_w,
                &mut r.raw_spread_w,
                &mut r.raw_swing_w,
                &mut r.instant_mean_w,
                &mut r.instant_spread_w,
                &mut r.average_field_mean_w,
                &mut r.average_field_spread_w,
                &mut r.average_field_swing_w,
            ] {
                *f = None;
            }
            r.method = "none".into();
        }
    }
}

/// Marks the rung the run was stopped in: its figures are those of the
/// part that ran (whole cycles, for a duty rung), and its coverage is that
/// part's share of the planned window.
fn mark_stopped(rungs: &mut [summary::RungSummary], run: &load::Run) {
    for w in &run.rungs {
        let Some(planned_end) = w.stopped_from_ns else {
            continue;
        };
        let Some(r) = rungs.iter_mut().find(|r| r.rung.id == w.info.id) else {
            continue;
        };
        let planned = (planned_end - w.measure_from_ns).max(1) as f64;
        let ran = (w.end_ns - w.measure_from_ns) as f64;
        let share = (ran / planned).min(r.window_coverage.unwrap_or(1.0));
        r.window_coverage = Some(stats::r3(share));
        let what = match w.info.period_ms.filter(|p| *p > 0.0) {
            Some(p) => format!("the {:.0} whole cycles", ran / ms_to_ns_f64(p)),
            None => "the part".to_string(),
        };
        let prior = r
            .incomplete
            .take()
            .map(|m| format!("; {m}"))
            .unwrap_or_default();
        r.incomplete = Some(if w.records_end {
            format!(
                "INCOMPLETE RAW DATA: the run's records end {:.1} s into this rung's {:.1} s window ({:.0} %; the run was killed, or is still being written): every GPU's samples and edges cover the rung that far (edges reach disk up to about a second late, so samples may run past them); figures cover {what} before it; its edges are those the GPUs reported while it ran{prior}",
                ns_f64_to_s(ran),
                ns_f64_to_s(planned),
                100.0 * share
            )
        } else {
            format!(
                "INCOMPLETE RAW DATA: the run was stopped {:.1} s into this rung's {:.1} s window ({:.0} %): figures cover the part that was sampled, {what} before the stop{prior}",
                ns_f64_to_s(ran),
                ns_f64_to_s(planned),
                100.0 * share
            )
        });
    }
}

/// Clears what a collation killed mid-way left behind (it held the lock we
/// now hold): half-written `report.new-*`, and a `report.old-*` that is put
/// back if it never got replaced.
fn tidy_leftovers(run: &Path, report_dir: &Path) {
    let Ok(entries) = std::fs::read_dir(run) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("report.old-") && !report_dir.exists() {
            let _ = std::fs::rename(e.path(), report_dir);
        } else if name.starts_with("report.new-") || name.starts_with("report.old-") {
            let _ = remove_any(&e.path());
        }
    }
}

/// Collates the run into `report_dir` (which exists, with `plots/`).
fn collate_into(
    dir: &RunDir,
    run: &load::Run,
    report_dir: &Path,
    opts: CollateOptions,
) -> Result<CollateOutput, CollateError> {
    let report_dir = report_dir.to_path_buf();

    // Step times at POWERLAB_LOG=info, for the collation benchmark.
    let t0 = std::time::Instant::now();
    let step = |what: &str| {
        tracing::info!(
            "collate: {what} done at {:.2} s",
            t0.elapsed().as_secs_f64()
        )
    };
    integrity::check_sums(dir, &run.manifest)?;
    integrity::check_format(dir, &run.manifest)?;
    // What this report is computed from, taken before reading: a rack
    // reuses the report only while these files stay as they are.
    let inputs = handoff::inputs_of(&dir.path)?;
    let mut raw = load::read_power(dir, run, Some(&report_dir.join(RAW_PARQUET_DIR)))?;
    step("reading raw samples");
    let raw_rows = raw.total_rows;
    let file_problems = std::mem::take(&mut raw.problems);
    let series = SeriesSet::from_frame(&raw.power);
    // Everything from here on reads the per-GPU series: free the frame.
    drop(raw);
    step("series by GPU");
    let mut raw_problems = integrity::check_files(dir, &run.manifest)?;
    raw_problems.extend(file_problems);
    let raw_end_ns = series.last_ts_ns();
    let edge_frame = edges::read_edges(dir)?;
    let edge_index = EdgeIndex::from_frame(edge_frame.as_ref());
    step("edges by rung");
    // A run killed (or still running) inside a rung: that rung ends where
    // its records do, as a stopped rung ends at the stop.
    let cut = load::cut_at_records_end(run, &series, &edge_index);
    let run = cut.as_ref().unwrap_or(run);
    let coverage = integrity::rung_coverage(
        &run.series,
        run.rungs
            .iter()
            .map(|r| (r.info.id, r.measure_from_ns, r.end_ns)),
        &series,
    );
    let curve = curve::node_curve(&series, run)?;
    step("node curve");
    let duty_ended = run
        .rungs
        .iter()
        .filter(|r| r.info.kind == PhaseKind::Duty && r.barrier_ok.is_some())
        .count();
    if edge_frame.is_none() && duty_ended > 0 {
        raw_problems.push(format!("edges.csv is missing or empty although {duty_ended} duty rung(s) ended: their cycles cannot be folded (energy-counter means only)"));
    }
    let model = sensor::source::model_for(dir, run, &series, &edge_index)?;
    let cycles: summary::Cycles = cycle::compose_all(run, &series, &edge_index, &model)
        .into_iter()
        .collect();
    step("node cycles");
    let gpus: Vec<String> = run
        .manifest
        .backend
        .gpus
        .iter()
        .map(|g| g.key.clone())
        .collect();
    let counter_means: HashMap<u32, energy::CounterMean> = run
        .rungs
        .iter()
        .filter(|r| {
            matches!(
                cycles.get(&r.info.id),
                Some(Err(cycle::NoCycle::Verdict(_)))
            )
        })
        .filter_map(|r| {
            energy::mean_w(&series, &gpus, r.measure_from_ns, r.end_ns).map(|m| (r.info.id, m))
        })
        .collect();
    let energy_means = counter_means.iter().map(|(id, m)| (*id, m.w)).collect();
    let edge_stats = edges::edge_stats(edge_frame.as_ref(), run)?;
    drop(edge_frame);
    // Where each rung's curve stops holding readings from before its window:
    // every GPU's first buffered sample inside it.
    let held_until: HashMap<u32, i64> = run
        .rungs
        .iter()
        .filter_map(|r| {
            run.series
                .iter()
                .map(|(node, gpu)| {
                    crate::sensor::series::span(
                        series.get_at(node, gpu, "buffered_w"),
                        r.measure_from_ns,
                        r.end_ns,
                    )
                    .first()
                    .map(|p| p.0)
                })
                .collect::<Option<Vec<i64>>>()
                .and_then(|v| v.into_iter().max())
                .map(|t| (r.info.id, t))
        })
        .collect();
    let mut rungs = summary::summarize(
        &curve,
        run,
        &edge_stats,
        &cycles,
        &energy_means,
        &held_until,
    );
    let short = cycle::short_on_phases(run, &series, &cycles);
    for r in &mut rungs {
        if let Some(m) = counter_means.get(&r.rung.id)
            && r.method == "energy counter"
        {
            // The reader must see that the mean is of part of the window.
            r.coverage = stats::r3(m.span_share);
            if m.span_share < 0.995 {
                let note = format!(
                    "the mean is over the energy counter's readings, which span {:.0} % of the window",
                    m.span_share * 100.0
                );
                r.verdict = Some(match r.verdict.take() {
                    Some(v) => format!("{v}; {note}"),
                    None => note,
                });
            }
        }
        if let Some(v) = short.get(&r.rung.id) {
            r.edges_verdict = Some(match r.edges_verdict.take() {
                Some(e) => format!("{e}; {v}"),
                None => v.clone(),
            });
        }
    }
    let visible = rungs.iter().map(|r| (r.rung.id, r.raw_swing_w)).collect();
    step("rung summaries");
    let sensor = sensor::verdict::analyse(run, &series, &edge_index, model, &curve, &visible);
    step("sensor analysis");
    for r in &mut rungs {
        if let Some(row) = sensor
            .rows
            .iter()
            .find(|x| x.rung_id == r.rung.id && x.instrument == "buffered_w")
        {
            r.instrument_verdict = Some(row.verdict.clone());
        }
    }
    mark_incomplete(&mut rungs, &coverage);
    mark_stopped(&mut rungs, run);
    let repeats = summary::repeat_stats(&rungs);
    let compare = summary::compare_modes(&rungs);
    let nccl_rows = nccl::nccl_rows(dir, run)?;
    let fabric = nccl::fabric_power(&rungs, nccl::nccl_ranks(&nccl_rows, run));
    let np = node_power_of(dir, run, &curve, &mut raw_problems)?;
    step("node power");
    let gpu_rows = per_gpu::per_gpu(run, &series);
    step("per-GPU table");
    let soak = soak::analyse(
        run,
        &series,
        opts.soak_edge_s.unwrap_or(soak::EDGE_S_DEFAULT),
    );
    step("soak analysis");

    let mut files = vec![
        csv::write_node_curve(&curve, &report_dir)?,
        handoff::write_curve(&curve, run, &report_dir)?,
        handoff::write_cycles(&cycles, &report_dir.join(handoff::CYCLES_FILE))?,
    ];
    files.extend(csv::write_summary_tables(
        &rungs,
        &repeats,
        &compare,
        &report_dir,
    )?);
    files.push(json::write_summary(
        &rungs,
        &repeats,
        &compare,
        &report_dir,
    )?);
    for name in [
        powerlab_rundir::ReportFile::SummaryCsv.file_name(),
        powerlab_rundir::ReportFile::RepeatsCsv.file_name(),
        powerlab_rundir::ReportFile::InPhaseVsStaggeredCsv.file_name(),
    ] {
        files.extend(crate::export::parquet::beside_csv(&report_dir.join(name))?);
    }
    files.extend(csv::write_nccl(&nccl_rows, &report_dir)?);
    files.push(json::write_sensor_model(&sensor.model, &report_dir)?);
    files.extend(csv::write_sensor_tables(&sensor, &report_dir)?);
    files.extend(plots::write_plots(
        &curve,
        run,
        &rungs,
        &repeats,
        &compare,
        &cycles,
        &report_dir.join(powerlab_rundir::ReportFile::Plots.file_name()),
    )?);
    files.extend(plots::write_nccl_plot(
        &nccl_rows,
        &report_dir.join(powerlab_rundir::ReportFile::Plots.file_name()),
    )?);
    files.extend(plots::write_sensor_plot(
        &sensor.answers,
        &report_dir.join(powerlab_rundir::ReportFile::Plots.file_name()),
    )?);
    let per_gpu_csv = report_dir.join(powerlab_rundir::ReportFile::PerGpuCsv.file_name());
    csv::write_rows(&gpu_rows, &per_gpu_csv)?;
    files.push(per_gpu_csv);
    files.extend(crate::export::parquet::beside_csv(
        &report_dir.join(powerlab_rundir::ReportFile::PerGpuCsv.file_name()),
    )?);
    if !soak.rows.is_empty() {
        let soak_csv = report_dir.join(powerlab_rundir::ReportFile::SoakCsv.file_name());
        csv::write_rows(&soak.rows, &soak_csv)?;
        files.push(soak_csv);
    }
    if let Some((label, lines)) = &soak.plot {
        files.extend(plots::write_soak_plot(
            label,
            lines,
            &report_dir.join(powerlab_rundir::ReportFile::Plots.file_name()),
        )?);
    }
    if !np.facts.is_empty() {
        let (a, b) = (
            report_dir.join(powerlab_rundir::ReportFile::NodePowerSourcesCsv.file_name()),
            report_dir.join(powerlab_rundir::ReportFile::NodePowerCsv.file_name()),
        );
        csv::write_rows(&np.facts, &a)?;
        csv::write_rows(&np.rungs, &b)?;
        files.extend([a, b]);
        files.extend(plots::write_node_power_plot(
            &np.plot,
            &report_dir.join(powerlab_rundir::ReportFile::Plots.file_name()),
        )?);
    }
    let tables = markdown::run::Tables {
        rungs: &rungs,
        repeats: &repeats,
        compare: &compare,
        nccl: &nccl_rows,
        fabric: &fabric,
        sensor: &sensor,
        raw_problems: &raw_problems,
        raw_end_ns,
        node_power: (&np.facts, &np.rungs),
        per_gpu: &gpu_rows,
        soak: &soak.rows,
    };
    files.push(markdown::run::write_report(
        run,
        &tables,
        raw_rows,
        &report_dir,
    )?);
    files.push(crate::export::html::write_html(
        &report_dir,
        &format!(
            "{} on {}",
            run.manifest.campaign, run.manifest.backend.node_id
        ),
    )?);
    // Last: a report is only handed to a rack once everything is written.
    files.push(handoff::write_inputs(&inputs, &report_dir)?);
    Ok(CollateOutput {
        report_dir,
        rungs,
        repeats,
        compare,
        sensor,
        nccl: nccl_rows,
        raw_rows,
        files,
    })
}

/// The node power analysis of a run, and its plot's lines.
struct NodePowerOut {
    facts: Vec<node_power::SourceFacts>,
    rungs: Vec<node_power::NodePowerRung>,
    plot: plots::NodePowerSeries,
}

/// Reads `node_power/` and joins it with the node curve. A damaged source
/// file is named among the raw problems and left out: node power is an
/// extra, and the GPU figures stand without it.
fn node_power_of(
    dir: &RunDir,
    run: &load::Run,
    curve: &curve::NodeCurve,
    problems: &mut Vec<String>,
) -> Result<NodePowerOut, CollateError> {
    let mut sources = Vec::new();
    for f in powerlab_rundir::node_power::node_power_files(&dir.path)? {
        match powerlab_rundir::node_power::read_node_power(&f) {
            Ok((mut rows, bad)) => {
                let name = powerlab_rundir::raw::raw_stem(&f);
                if bad > 0 {
                    problems.push(format!(
                        "node_power/{name}.csv: {bad} row(s) cut short or not in the format (dropped)"
                    ));
                }
                // A reading no running node can have (edited, or written by
                // another tool) is dropped and said, never summed.
                let before = rows.len();
                rows.retain(|r| {
                    r.watts
                        .is_none_or(powerlab_core::meter::is_plausible_node_w)
                });
                if rows.len() < before {
                    problems.push(format!(
                        "node_power/{name}.csv: {} reading(s) not finite, not above 0 or above {} W (dropped)",
                        before - rows.len(),
                        powerlab_core::meter::MAX_NODE_W
                    ));
                }
                let kind = rows.first().map(|r| r.kind.clone()).unwrap_or_default();
                let interval_ms = run.manifest.campaign_resolved["node_power"]
                    .as_array()
                    .and_then(|a| a.iter().find(|s| s["name"] == name.as_str()))
                    .and_then(|s| s["interval_ms"].as_f64());
                sources.push(node_power::SourceRows {
                    source: name,
                    kind,
                    interval_ms,
                    rows,
                });
            }
            Err(e) => problems.push(format!("{e}; that node power source is left out")),
        }
    }
    if sources.is_empty() {
        return Ok(NodePowerOut {
            facts: vec![],
            rungs: vec![],
            plot: plots::NodePowerSeries {
                gpu: vec![],
                sources: vec![],
            },
        });
    }
    let t_ns = crate::columns::i64_column(&curve.df, "t_ns");
    let w = crate::columns::f64_column(&curve.df, "node_buffered_w");
    let spans: Vec<node_power::RungSpan> = run
        .rungs
        .iter()
        .map(|r| node_power::RungSpan {
            id: r.info.id,
            label: r.info.label.clone(),
            kind: r.info.kind,
            period_ms: r.info.period_ms.filter(|_| r.info.kind == PhaseKind::Duty),
            from_ns: r.measure_from_ns,
            to_ns: r.end_ns,
        })
        .collect();
    let (facts, rungs) =
        node_power::analyse(&sources, &spans, &node_power::GpuSum { t_ns: &t_ns, w: &w });
    let t0 = run.manifest.started_ns;
    let secs = |t: i64| ns_to_s(t - t0);
    // The GPU sum in 1 s means, for the plot.
    let mut gpu = Vec::new();
    let mut acc = (0.0, 0usize, None::<i64>);
    for (t, v) in t_ns.iter().zip(&w) {
        let sec = (t - t0).div_euclid(NS_PER_S);
        if acc.2.is_some_and(|s| s != sec) && acc.1 > 0 {
            gpu.push((secs(*t), acc.0 / acc.1 as f64));
            acc = (0.0, 0, None);
        }
        if let Some(v) = v {
            acc = (acc.0 + v, acc.1 + 1, Some(sec));
        }
    }
    let plot = plots::NodePowerSeries {
        gpu,
        sources: sources
            .iter()
            .map(|s| {
                (
                    s.source.clone(),
                    s.rows
                        .iter()
                        .filter(|r| r.quantity == "node")
                        .filter_map(|r| r.watts.map(|w| (secs(r.recv_ns), w)))
                        .collect(),
                )
            })
            .collect(),
    };
    Ok(NodePowerOut { facts, rungs, plot })
}
