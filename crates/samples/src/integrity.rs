//! Whether the raw files are this run's, whole and physical. Every file
//! belongs to a GPU of the manifest and holds only that GPU's rows on the
//! manifest's node; its power values are ones a GPU can draw; and it is not
//! shorter than its index (`raw/<gpu>.idx`) says was written. Per rung: how
//! much of the window each GPU's samples cover. A rung some GPU covers less
//! than the others gets no node figures (the sum would miss that GPU's
//! share); any rung not wholly covered is marked incomplete, with its
//! coverage, in the summary and on the report's first line.

use crate::error::CollateError;
use crate::series::SeriesSet;
use powerlab_core::Instrument;
use powerlab_core::units::ns_to_s;
use powerlab_rundir::{Manifest, RunDir};
use std::collections::BTreeMap;
use std::path::Path;

/// Largest physical power reading, as a multiple of the GPU's limit (the
/// larger of its enforced limit and [`CEILING_FLOOR_W`]).
pub const MAX_LIMIT_MULTIPLE: f64 = 3.0;
/// The limit the ceiling is taken from is never below this, W: a GPU whose
/// enforced limit was lowered (to 250 W, say) still draws transients far
/// above it before its power controller reacts, so the ceiling may not
/// follow a lowered limit down. A file rescaled from mW (×1000) is still
/// refused.
pub const CEILING_FLOOR_W: f64 = 1000.0;
/// Lowest physical power reading, W (a little below zero for sensor offsets).
pub const MIN_READING_W: f64 = -5.0;
/// Below this coverage a rung gives no node figures even when every GPU
/// stops together: what was sampled is too little of the rung to stand
/// for it.
pub const MIN_FIGURE_COVERAGE: f64 = 0.5;
/// A rung whose window some GPU covers less than this is incomplete: any
/// loss at all (an intact run covers every window wholly, its readings
/// being at most a few driver periods apart).
pub const MIN_COVERAGE: f64 = 0.9999;
/// Two readings further apart than this leave a hole in the data (the
/// driver's buffered samples come every 20 ms; a few dropped ones stay
/// well below it).
pub const MAX_GAP_NS: i64 = 100_000_000;
/// GPUs whose coverage differs by more than this share of the window give
/// no node figures (a smaller difference is marked, the figures kept).
pub const MAX_UNEVEN: f64 = 0.01;
/// The power instruments, in order of preference for coverage.
const POWER: [Instrument; 3] = [
    Instrument::BufferedW,
    Instrument::InstantW,
    Instrument::AverageW,
];

/// The GPU key a raw file is named for (`raw/gpu3.csv` → `gpu3`; a GPU's
/// rows split over several files: `raw/gpu3-part2.csv` → `gpu3`).
pub fn file_key(path: &Path) -> String {
    let stem = powerlab_rundir::raw::raw_stem(path);
    match stem.rsplit_once("-part") {
        Some((key, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => key.to_string(),
        _ => stem.to_string(),
    }
}

fn bad(path: &Path, message: String) -> CollateError {
    CollateError::BadRaw {
        path: path.to_path_buf(),
        message,
    }
}

mod content;
pub use content::check_content;
pub(crate) use content::{ContentFaults, ContentRule};

/// Refuses a raw file for a GPU the manifest does not list (before anything
/// else is said of it).
///
/// # Errors
///
/// Returns [`CollateError::BadRaw`] naming the file when the GPU key its
/// name carries is not one of the manifest's GPUs.
pub fn check_listed(path: &Path, manifest: &Manifest) -> Result<(), CollateError> {
    let key = file_key(path);
    if manifest.backend.gpus.iter().any(|g| g.key == key) {
        return Ok(());
    }
    let keys: Vec<&str> = manifest
        .backend
        .gpus
        .iter()
        .map(|g| g.key.as_str())
        .collect();
    Err(bad(
        path,
        format!(
            "`{key}` is not a GPU of this run (the manifest lists {}): the manifest was edited or the file comes from another run",
            keys.join(", ")
        ),
    ))
}

/// Checks a raw file's bytes against its index (`raw/<gpu>.idx`) in a run
/// that wrote indexes: the index must be there, whole, and this run's and
/// this GPU's; every checkpoint the file still reaches must match its
/// CRC-32. A file changed after the run wrote it, rows added after a
/// complete run, or an index that is missing, damaged or another run's, are
/// errors naming the file. A file cut short, or a tail the run never got to
/// index (it was killed), is returned as a problem to state.
///
/// # Errors
///
/// In a run that wrote indexes, returns [`CollateError::BadRaw`] naming the
/// file when its index is missing or cannot be read or parsed, when the
/// index has no owner line or was written by another run, node or GPU, when
/// a checkpoint the file reaches does not match its CRC-32, or when a
/// complete run's file has bytes after its last checkpoint.
pub fn verify_raw(
    path: &Path,
    bytes: &[u8],
    manifest: &Manifest,
) -> Result<Option<String>, CollateError> {
    if !manifest.raw_index {
        return Ok(None);
    }
    let key = file_key(path);
    let index = powerlab_rundir::raw::index_path(path);
    let restore = "restore the raw file and its index from the original run directory";
    let file = match powerlab_rundir::read_index_file(path) {
        Ok(Some(f)) => f,
        Ok(None) => {
            return Err(bad(
                path,
                format!(
                    "its index {} is missing, so the file cannot be checked against what the run wrote; {restore}",
                    index.display()
                ),
            ));
        }
        Err(e) => {
            return Err(bad(
                path,
                format!(
                    "its index is damaged ({e}), so the file cannot be checked against what the run wrote; {restore}"
                ),
            ));
        }
    };
    match &file.owner {
        Some(o)
            if o.run_start_ns == manifest.started_ns
                && o.node == manifest.backend.node_id
                && o.gpu == key => {}
        Some(o) => {
            return Err(bad(
                path,
                format!(
                    "its index was written by run {} for node {} GPU {}, not by this run ({}, node {}, {key}): the pair comes from another run or GPU",
                    o.run_start_ns, o.node, o.gpu, manifest.started_ns, manifest.backend.node_id
                ),
            ));
        }
        None => {
            return Err(bad(
                path,
                format!(
                    "its index {} has no first line naming its run: it is damaged; {restore}",
                    index.display()
                ),
            ));
        }
    }
    check_checkpoints(path, bytes, &file, restore)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let header = powerlab_rundir::raw::RAW_HEADER.len() + 1;
    let indexed = file
        .checkpoints
        .last()
        .map(|c| c.bytes as usize)
        .unwrap_or(header);
    let complete = matches!(manifest.status, powerlab_rundir::RunStatus::Complete);
    if indexed > bytes.len() {
        let c = file.checkpoints.last().copied();
        return Ok(Some(format!(
            "raw/{name} is cut short: {} of the {indexed} bytes written are there{}",
            bytes.len(),
            c.map(|c| format!(
                " ({} rows were written, the last {:.1} s into the run)",
                c.rows,
                ns_to_s(c.last_ts_ns - manifest.started_ns)
            ))
            .unwrap_or_default()
        )));
    }
    let tail = bytes.len() - indexed;
    if tail > 0 && complete {
        return Err(bad(
            path,
            format!(
                "{tail} bytes after its last index checkpoint were never indexed; in a complete run the index covers the whole file, so rows were added after the run; {restore}"
            ),
        ));
    }
    Ok((tail > 0).then(|| format!("raw/{name}: the last {tail} bytes were never indexed (the run stopped before its next flush): used, unchecked")))
}

/// Checks every checkpoint of `file` that `bytes` still reach against its
/// CRC-32, in one pass; a mismatch is an error naming `path`, advising
/// `restore`. Checkpoints past the end of `bytes` are not checked.
fn check_checkpoints(
    path: &Path,
    bytes: &[u8],
    file: &powerlab_rundir::IndexFile,
    restore: &str,
) -> Result<(), CollateError> {
    let mut h = crc32fast::Hasher::new();
    let mut at = 0usize;
    for c in &file.checkpoints {
        let end = c.bytes as usize;
        if end > bytes.len() {
            break;
        }
        h.update(&bytes[at..end]);
        at = end;
        let got = h.clone().finalize();
        if got != c.crc32 {
            return Err(bad(
                path,
                format!(
                    "its first {} bytes do not match the checksum the run recorded in its index ({:08x}, now {got:08x}): the file was edited, reordered or damaged after it was written; {restore}",
                    c.bytes, c.crc32
                ),
            ));
        }
    }
    Ok(())
}

/// Checks the files whose length and CRC-32 the run recorded at its end
/// (`edges.csv`, `collectives.csv`, `events.jsonl`, and in format 2 every
/// `node_power/*.csv`): one missing or changed, or a node-power file the
/// run did not sum, is an error naming it.
///
/// # Errors
///
/// Returns [`CollateError::BadRaw`] naming the file when a file the
/// manifest holds a checksum for is missing, or its length or CRC-32 now
/// differs from the recorded one.
pub fn check_sums(dir: &RunDir, manifest: &Manifest) -> Result<(), CollateError> {
    // A node-power file a sealed format-2 run did not sum was added after it.
    if manifest.format_version >= 2 && manifest.finished() {
        for f in powerlab_rundir::node_power::node_power_files(&dir.path)? {
            let rel = f
                .strip_prefix(&dir.path)
                .unwrap_or(&f)
                .to_string_lossy()
                .into_owned();
            if !manifest.checksums.iter().any(|c| c.file == rel) {
                return Err(bad(
                    &f,
                    "is not among the files the run summed when it ended: it was added or renamed afterwards; remove it, or restore the run directory".to_string(),
                ));
            }
        }
    }
    for sum in &manifest.checksums {
        let path = dir.path.join(&sum.file);
        if std::fs::symlink_metadata(&path).is_err() {
            return Err(bad(
                &path,
                format!(
                    "is missing; the run wrote {} bytes of it: restore it from the original run directory",
                    sum.bytes
                ),
            ));
        }
        sum.verify(&dir.path).map_err(|e| match e {
            powerlab_rundir::RunDirError::Format { message, .. } => bad(&path, message),
            other => bad(&path, other.to_string()),
        })?;
    }
    Ok(())
}

/// Refuses a manifest that claims an older format than its raw files'
/// indexes were written by (a format-2 run's manifest made to look like a
/// format-1 one, whose seal is not required), or that says the run wrote
/// no index beside raw files that have one.
///
/// # Errors
///
/// Returns [`CollateError::BadRaw`] naming `manifest.json` when an index
/// was written by a newer format than the manifest states, or when the
/// manifest says there are no indexes but one is there. Returns
/// [`CollateError::RunDir`] when `raw/` cannot be listed.
pub fn check_format(dir: &RunDir, manifest: &Manifest) -> Result<(), CollateError> {
    let restore = "restore manifest.json from the original run directory";
    for path in dir.raw_files()? {
        let index = powerlab_rundir::raw::index_path(&path);
        if std::fs::symlink_metadata(&index).is_err() {
            continue;
        }
        if !manifest.raw_index {
            return Err(bad(
                &dir.manifest(),
                format!(
                    "says the run wrote no raw index, but {} is there: the manifest was edited; {restore}",
                    index.display()
                ),
            ));
        }
        if let Ok(Some(f)) = powerlab_rundir::read_index_file(&path)
            && let Some(o) = f.owner.filter(|o| o.format > manifest.format_version)
        {
            return Err(bad(
                &dir.manifest(),
                format!(
                    "states run-directory format {}, but {} was written by a format-{} run: the manifest was edited to look older; {restore}",
                    manifest.format_version,
                    index.display(),
                    o.format
                ),
            ));
        }
    }
    Ok(())
}

/// A GPU of the manifest without a raw file, in words. This does not stop
/// the collation: the rungs it touches are marked.
///
/// # Errors
///
/// Returns [`CollateError::RunDir`] when the run's `raw/` directory cannot
/// be listed.
pub fn check_files(dir: &RunDir, manifest: &Manifest) -> Result<Vec<String>, CollateError> {
    let files = dir.raw_files()?;
    Ok(manifest
        .backend
        .gpus
        .iter()
        .filter(|g| !files.iter().any(|p| file_key(p) == g.key))
        .map(|g| format!("raw/{}.csv is missing: {} has no samples", g.key, g.key))
        .collect())
}

/// One rung's coverage: the lowest and highest share of the window that a
/// GPU's readings cover, and the GPU with the lowest.
#[derive(Debug, Clone, PartialEq)]
pub struct Coverage {
    /// Lowest share of the window a GPU covers.
    pub worst: f64,
    /// Highest share.
    pub best: f64,
    /// The GPU with the lowest.
    pub gpu: String,
}

impl Coverage {
    /// Whether the GPUs disagree: one covers noticeably less of the window
    /// than another, so a node sum would miss part of a GPU's draw.
    pub fn uneven(&self) -> bool {
        self.best - self.worst > MAX_UNEVEN
    }

    /// Whether the rung's node figures are withheld: the GPUs disagree, or
    /// less than half the window was sampled.
    pub fn withheld(&self) -> bool {
        self.uneven() || self.worst < MIN_FIGURE_COVERAGE
    }

    /// The mark for the summary and the report, if the window is not whole.
    pub fn mark(&self) -> Option<String> {
        (self.worst < MIN_COVERAGE).then(|| {
            let pct = if self.worst > 0.99 {
                format!("{:.2}", 100.0 * self.worst)
            } else {
                format!("{:.0}", 100.0 * self.worst)
            };
            let what = if self.uneven() {
                "no node figures: the sum would miss part of a GPU's draw"
            } else if self.withheld() {
                "no node figures: too little of the rung was sampled"
            } else {
                "every GPU stops together: figures cover the part that was sampled"
            };
            format!(
                "INCOMPLETE RAW DATA: {} covers {pct} % of the window ({what})",
                self.gpu
            )
        })
    }
}

/// Share of `[a, b)` covered by readings no more than `MAX_GAP_NS` apart.
fn covered(samples: &[(i64, f64)], a: i64, b: i64) -> f64 {
    if b <= a {
        return 1.0;
    }
    let lo = samples.partition_point(|s| s.0 < a - MAX_GAP_NS);
    let hi = samples.partition_point(|s| s.0 <= b + MAX_GAP_NS);
    let mut total = 0i64;
    let near = &samples[lo..hi];
    for w in near.windows(2) {
        let (t0, t1) = (w[0].0, w[1].0);
        if t1 - t0 <= MAX_GAP_NS {
            total += (t1.min(b) - t0.max(a)).max(0);
        }
    }
    // Between the window's edge and the nearest reading, with none beyond
    // the edge: a reading not yet due (a last rung with no cooldown ended
    // 17 ms after its last sample, and read 99.7 %), no loss, where no
    // longer than a gap that counts as covered.
    if let Some(f) = near.first().filter(|f| f.0 > a && f.0 - a <= MAX_GAP_NS) {
        total += f.0.min(b) - a;
    }
    if let Some(l) = near.last().filter(|l| l.0 < b && b - l.0 <= MAX_GAP_NS) {
        total += b - l.0.max(a);
    }
    (total as f64 / (b - a) as f64).min(1.0)
}

/// Per rung (`(rung id, window start, window end)`, epoch ns), the coverage
/// of its measured window by the readings of every (node, GPU) in `gpus`.
pub fn rung_coverage(
    gpus: &[(String, String)],
    windows: impl Iterator<Item = (u32, i64, i64)>,
    series: &SeriesSet,
) -> BTreeMap<u32, Coverage> {
    let mut out = BTreeMap::new();
    let gpu_series: Vec<(&str, &[(i64, f64)])> = gpus
        .iter()
        .map(|(node, gpu)| {
            (
                gpu.as_str(),
                POWER
                    .iter()
                    .map(|&i| series.get_at(node, gpu, i))
                    .find(|s| !s.is_empty())
                    .unwrap_or(&[]),
            )
        })
        .collect();
    for (id, from_ns, end_ns) in windows {
        let mut cov = Coverage {
            worst: 1.0,
            best: 0.0,
            gpu: String::new(),
        };
        for (gpu, s) in &gpu_series {
            let c = covered(s, from_ns, end_ns);
            if c < cov.worst || cov.gpu.is_empty() {
                cov.worst = c.min(cov.worst);
                cov.gpu = gpu.to_string();
            }
            cov.best = cov.best.max(c);
        }
        out.insert(id, cov);
    }
    out
}

#[cfg(test)]
mod tests;
