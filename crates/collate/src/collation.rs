//! One node run's collation: the pipeline from the run directory's raw
//! samples to its `report/` (integrity checks, series, node curve, edges,
//! sensor model, composed cycles, rung summaries, sensor verdicts, NCCL),
//! and the staging directory that is swapped in only when complete. The
//! analyses compute; [`crate::export`] writes.

use crate::handoff;
use crate::report::Scope;
use powerlab_analysis::{nccl, sensor, summary};
use powerlab_rundir::RunDir;
use powerlab_samples::error::CollateError;
use powerlab_samples::load;
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
    /// The verdict table's rows (the report's first table).
    pub verdicts: Vec<crate::report::verdicts::SpecRow>,
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
    /// [`powerlab_analysis::soak::EDGE_S_DEFAULT`]).
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

/// Collates the run into `report_dir` (which exists, with `plots/`):
/// computes its report, writes every format, and last the record of what
/// it was computed from.
fn collate_into(
    dir: &RunDir,
    run: &load::Run,
    report_dir: &Path,
    opts: CollateOptions,
) -> Result<CollateOutput, CollateError> {
    let raw_parquet = report_dir.join(RAW_PARQUET_DIR);
    let report = crate::report::node::compute(dir, run, opts.soak_edge_s, Some(&raw_parquet))?;
    let mut files = crate::export::export_all(&report, report_dir)?;
    let Scope::Node(node) = report.scope else {
        unreachable!("a node run computes a node report")
    };
    // Last: a report is only handed to a rack once everything is written.
    files.push(handoff::write_inputs(&node.inputs, report_dir)?);
    Ok(CollateOutput {
        report_dir: report_dir.to_path_buf(),
        rungs: report.rungs,
        repeats: report.repeats,
        compare: report.compare,
        sensor: node.sensor,
        nccl: node.nccl,
        verdicts: report.verdicts,
        raw_rows: node.raw_rows,
        files,
    })
}
