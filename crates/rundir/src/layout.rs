//! Names and creation of run directories.

use crate::files::{ReportFile, RunFile};
use powerlab_core::units::{NS_PER_MS, NS_PER_S};
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Errors creating or reading run directories.
#[derive(Debug, thiserror::Error)]
pub enum RunDirError {
    /// The directory already exists: never write into an existing run.
    #[error(
        "run directory {0} already exists; a run never writes into an existing directory (wait a second or choose another --results)"
    )]
    Exists(PathBuf),
    /// Any I/O problem, with the path.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A file that does not parse.
    #[error("{path}: {message}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

impl RunDirError {
    /// Wraps an I/O error with its path.
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        RunDirError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Largest file of a run directory read whole when the run recorded no
/// size for it (a killed run's event log, a raw file): 16 GiB.
pub const MAX_UNRECORDED_BYTES: u64 = 16 << 30;

/// Reads a file of a run directory: it must be a regular file (never a
/// link, a device or a directory: the run writes only regular files), and
/// no longer than `max_bytes` (the size the run recorded, or
/// [`MAX_UNRECORDED_BYTES`]); at most that many bytes are read.
///
/// # Errors
///
/// Returns [`RunDirError::Io`] when the file cannot be examined or read
/// (for instance because it does not exist), and [`RunDirError::Format`]
/// naming it when it is not a regular file or is longer than `max_bytes`.
pub fn read_regular(path: &Path, max_bytes: Option<u64>) -> Result<Vec<u8>, RunDirError> {
    read_regular_into(path, max_bytes, Vec::new())
}

/// As [`read_regular`], into `buffer` (emptied first): a caller reading
/// many large files in turn passes the same buffer again, so that its
/// memory is not handed back to the system and faulted in afresh, page by
/// page, for each file.
///
/// # Errors
///
/// As [`read_regular`].
pub fn read_regular_into(
    path: &Path,
    max_bytes: Option<u64>,
    buffer: Vec<u8>,
) -> Result<Vec<u8>, RunDirError> {
    use std::io::Read;
    let meta = std::fs::symlink_metadata(path).map_err(|e| RunDirError::io(path, e))?;
    if !meta.file_type().is_file() {
        let what = if meta.file_type().is_symlink() {
            "a link"
        } else if meta.is_dir() {
            "a directory"
        } else {
            "a device, pipe or socket"
        };
        return Err(RunDirError::Format {
            path: path.to_path_buf(),
            message: format!(
                "is not a regular file ({what}): a run directory holds only the regular files the run wrote; restore the file from the original run directory"
            ),
        });
    }
    let max = max_bytes.unwrap_or(MAX_UNRECORDED_BYTES);
    if meta.len() > max {
        return Err(RunDirError::Format {
            path: path.to_path_buf(),
            message: format!(
                "is {} bytes, more than the {max} bytes the run recorded or allows: it was changed after the run; restore it from the original run directory",
                meta.len()
            ),
        });
    }
    let file = std::fs::File::open(path).map_err(|e| RunDirError::io(path, e))?;
    let mut out = buffer;
    out.clear();
    out.reserve(meta.len() as usize);
    file.take(max.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| RunDirError::io(path, e))?;
    if out.len() as u64 > max {
        return Err(RunDirError::Format {
            path: path.to_path_buf(),
            message: format!(
                "grew beyond {max} bytes while it was read: a run directory being written is collated with --snapshot only"
            ),
        });
    }
    Ok(out)
}

/// A run directory and the names inside it.
#[derive(Debug, Clone)]
pub struct RunDir {
    /// The directory.
    pub path: PathBuf,
}

/// Formats epoch ns as `YYYYMMDDTHHMMSSZ` (UTC).
pub fn utc_stamp(epoch_ns: i64) -> String {
    let secs = epoch_ns.div_euclid(NS_PER_S);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        sod / 3600,
        (sod / 60) % 60,
        sod % 60
    )
}

/// Formats epoch ns as RFC 3339 UTC with milliseconds.
pub fn utc_rfc3339(epoch_ns: i64) -> String {
    let secs = epoch_ns.div_euclid(NS_PER_S);
    let ms = epoch_ns.rem_euclid(NS_PER_S) / NS_PER_MS;
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let sod = secs.rem_euclid(86_400);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z",
        sod / 3600,
        (sod / 60) % 60,
        sod % 60
    )
}

// Howard Hinnant's days-to-civil algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

impl RunDir {
    /// Creates `root/<campaign>-<UTC>-<host>/` and its `raw/`; fails if it exists.
    ///
    /// # Errors
    ///
    /// Returns [`RunDirError::Exists`] if the run directory is already there
    /// (two runs of one campaign on one host within the same second), and
    /// [`RunDirError::Io`] if `root`, the run directory or its `raw/` cannot
    /// be created.
    pub fn create(
        root: &Path,
        campaign: &str,
        host: &str,
        start_ns: i64,
    ) -> Result<RunDir, RunDirError> {
        std::fs::create_dir_all(root).map_err(|e| RunDirError::io(root, e))?;
        let path = root.join(format!(
            "{}-{}-{}",
            sanitize(campaign),
            utc_stamp(start_ns),
            sanitize(host)
        ));
        match std::fs::create_dir(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(RunDirError::Exists(path));
            }
            Err(e) => return Err(RunDirError::io(&path, e)),
        }
        let raw = RunFile::Raw.path_in(&path);
        std::fs::create_dir(&raw).map_err(|e| RunDirError::io(&raw, e))?;
        Ok(RunDir { path })
    }

    /// Creates exactly `path` (a node's directory inside a rack run, whose
    /// name rank 0 chose) and its `raw/`; fails if it exists.
    ///
    /// # Errors
    ///
    /// Returns [`RunDirError::Exists`] if `path` is already there, and
    /// [`RunDirError::Io`] if its parent directories, `path` itself or its
    /// `raw/` cannot be created.
    pub fn create_exact(path: &Path) -> Result<RunDir, RunDirError> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| RunDirError::io(parent, e))?;
        }
        match std::fs::create_dir(path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(RunDirError::Exists(path.to_path_buf()));
            }
            Err(e) => return Err(RunDirError::io(path, e)),
        }
        let raw = RunFile::Raw.path_in(path);
        std::fs::create_dir(&raw).map_err(|e| RunDirError::io(&raw, e))?;
        Ok(RunDir {
            path: path.to_path_buf(),
        })
    }

    /// Opens an existing run directory for reading.
    ///
    /// # Errors
    ///
    /// Returns [`RunDirError::Format`] if `path` has no `manifest.json`
    /// file, i.e. it is not a run directory. Nothing else is checked here.
    pub fn open(path: &Path) -> Result<RunDir, RunDirError> {
        let manifest = RunFile::Manifest.path_in(path);
        if !manifest.is_file() {
            return Err(RunDirError::Format {
                path: path.to_path_buf(),
                message: "not a run directory: manifest.json is missing".into(),
            });
        }
        Ok(RunDir {
            path: path.to_path_buf(),
        })
    }

    /// The path of `manifest.json`, the run's description.
    pub fn manifest(&self) -> PathBuf {
        self.file(RunFile::Manifest)
    }
    /// The path of `raw/`, the directory of per-GPU sample files.
    pub fn raw_dir(&self) -> PathBuf {
        self.file(RunFile::Raw)
    }
    /// The path of `events.jsonl`, the run's event log.
    pub fn events(&self) -> PathBuf {
        self.file(RunFile::Events)
    }
    /// `.run.lock`: held (flock) by the process writing the run.
    pub fn run_lock(&self) -> PathBuf {
        self.file(RunFile::RunLock)
    }
    /// `.collate.lock`: held (flock) by the process collating the run.
    pub fn collate_lock(&self) -> PathBuf {
        self.file(RunFile::CollateLock)
    }
    /// The path of `edges.csv`, intended against achieved load edges.
    pub fn edges(&self) -> PathBuf {
        self.file(RunFile::Edges)
    }

    /// The path of `collectives.csv`, the timed collective measurements.
    pub fn collectives(&self) -> PathBuf {
        self.file(RunFile::Collectives)
    }
    /// `report/` (derived; regenerated by collate).
    pub fn report_dir(&self) -> PathBuf {
        self.file(RunFile::Report)
    }

    /// Raw CSV files (`*.csv`, or `*.csv.gz` for archived runs), sorted by name.
    ///
    /// # Errors
    ///
    /// Returns [`RunDirError::Io`] if the `raw/` directory cannot be listed
    /// (for instance because it is missing). Entries that cannot be read
    /// while listing are skipped, not reported.
    pub fn raw_files(&self) -> Result<Vec<PathBuf>, RunDirError> {
        let dir = self.raw_dir();
        let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map_err(|e| RunDirError::io(&dir, e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.extension().is_some_and(|x| x == "csv")
                    || p.to_string_lossy().ends_with(".csv.gz")
            })
            .collect();
        v.sort();
        // One GPU's samples in two files (`gpu1.csv` beside a `gzip -k`
        // copy `gpu1.csv.gz`) would be read twice and summed as two GPUs'.
        for pair in v.windows(2) {
            let stem = |p: &Path| {
                let name = p.to_string_lossy();
                name.strip_suffix(".gz").unwrap_or(&name).to_string()
            };
            if stem(&pair[0]) == stem(&pair[1]) {
                return Err(RunDirError::Format {
                    path: pair[1].clone(),
                    message: format!(
                        "holds the same GPU's samples as {}: keep one of the two (the run writes `.csv`; `.csv.gz` is its archived copy)",
                        pair[0].display()
                    ),
                });
            }
        }
        Ok(v)
    }
}

impl RunDir {
    /// One of the run directory's files.
    pub fn file(&self, f: RunFile) -> PathBuf {
        f.path_in(&self.path)
    }

    /// One of the files under the run directory's `report/`.
    pub fn report(&self, f: ReportFile) -> PathBuf {
        f.path_in(&self.report_dir())
    }

    /// The simulated node's true waveform of one GPU: `sim-truth/<gpu>.csv`.
    pub fn sim_truth(&self, gpu: &str) -> PathBuf {
        self.file(RunFile::SimTruth).join(format!("{gpu}.csv"))
    }
}

/// Writes `value` as pretty JSON with a final newline.
///
/// # Errors
/// The value does not serialise, or the file cannot be written (named).
pub fn write_json(path: &Path, value: &impl Serialize) -> Result<(), RunDirError> {
    let text = serde_json::to_string_pretty(value).map_err(|e| RunDirError::Format {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    std::fs::write(path, text + "\n").map_err(|e| RunDirError::io(path, e))
}

/// Writes one GPU's true waveform (`t_ns,true_power_w`, one row per step
/// from `start_ns`) as `sim-truth/<gpu>.csv`.
///
/// # Errors
/// The directory or file cannot be written (named).
pub fn write_sim_truth(
    dir: &RunDir,
    gpu: &str,
    start_ns: i64,
    step_ns: i64,
    power_w: &[f32],
) -> Result<(), RunDirError> {
    let folder = dir.file(RunFile::SimTruth);
    std::fs::create_dir_all(&folder).map_err(|e| RunDirError::io(&folder, e))?;
    let path = dir.sim_truth(gpu);
    let io = |e| RunDirError::io(&path, e);
    let mut w = std::io::BufWriter::new(std::fs::File::create(&path).map_err(io)?);
    writeln!(w, "t_ns,true_power_w").map_err(io)?;
    for (k, p) in power_w.iter().enumerate() {
        writeln!(w, "{},{:.2}", start_ns + k as i64 * step_ns, p).map_err(io)?;
    }
    w.flush().map_err(io)
}

#[cfg(test)]
mod tests {
    #[test]
    fn sim_truth_rows_step_from_the_start() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = RunDir {
            path: tmp.path().to_path_buf(),
        };
        write_sim_truth(&dir, "gpu1", 1_000, 1_000_000, &[100.0, 250.125]).unwrap();
        let text = std::fs::read_to_string(tmp.path().join("sim-truth/gpu1.csv")).unwrap();
        assert_eq!(text, "t_ns,true_power_w\n1000,100.00\n1001000,250.12\n");
    }

    use super::*;

    #[test]
    fn stamps_are_utc() {
        // 2026-11-30T00:03:47Z
        assert_eq!(utc_stamp(1_795_997_027_000_000_000), "20261130T000347Z");
        assert_eq!(utc_rfc3339(0), "1970-01-01T00:00:00.000Z");
    }

    #[test]
    fn never_reuses_a_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let a = RunDir::create(tmp.path(), "demo", "host", 0).unwrap();
        assert!(a.raw_dir().is_dir());
        assert!(matches!(
            RunDir::create(tmp.path(), "demo", "host", 0),
            Err(RunDirError::Exists(_))
        ));
    }
}
