//! `manifest.json`: what ran, where and how.

use crate::layout::RunDirError;
use powerlab_core::hw::BackendInfo;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Version of the run-directory format. Bump on any incompatible change.
pub const FORMAT_VERSION: u32 = 1;

/// The tool that wrote the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolInfo {
    /// The tool's name (`powerlab`).
    pub name: String,
    /// Crate version.
    pub version: String,
    /// Git revision of the build (`unknown` outside a checkout).
    pub git_rev: String,
}

/// How the run ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum RunStatus {
    /// Still running (or killed hard: the raw files up to the last flush stand).
    Running,
    /// Every rung ran.
    Complete,
    /// Stopped by a signal or the user.
    Interrupted {
        /// Why the run was interrupted.
        reason: String,
    },
    /// Stopped by a fault or an interlock.
    Failed {
        /// Why the run failed.
        reason: String,
    },
}

/// The manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Run-directory format version.
    pub format_version: u32,
    /// The build that wrote the run.
    pub tool: ToolInfo,
    /// Campaign name.
    pub campaign: String,
    /// The resolved campaign (every default filled in).
    pub campaign_resolved: serde_json::Value,
    /// The expanded plan.
    pub plan: serde_json::Value,
    /// Backend facts (node id, host, GPUs by UUID, driver, NCCL).
    pub backend: BackendInfo,
    /// The declared clock of every timestamp.
    pub clock: String,
    /// Run start, epoch ns.
    pub started_ns: i64,
    /// Run end, epoch ns (None while running).
    pub ended_ns: Option<i64>,
    /// Start as RFC 3339.
    pub started_utc: String,
    /// How the run ended (or that it is still running).
    pub status: RunStatus,
    /// Preflight was overridden with `--allow-unhealthy`.
    pub allow_unhealthy: bool,
    /// The command line.
    pub command: Vec<String>,
    /// Every raw file has an index (`raw/<gpu>.idx`) with checkpoints and
    /// checksums; runs written before indexes say false, and are read
    /// without that check.
    #[serde(default)]
    pub raw_index: bool,
    /// Length and CRC-32 of the run's other files (`edges.csv`,
    /// `collectives.csv`, `events.jsonl`) at its end; empty for a run that
    /// never ended (killed) or was written before checksums.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checksums: Vec<FileSum>,
    /// How this process's GPUs were chosen when a launcher started several
    /// ranks on its host (absent for a single-process run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_binding: Option<String>,
}

/// Length and CRC-32 of one file of the run directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileSum {
    /// File name, relative to the run directory.
    pub file: String,
    /// Length, bytes.
    pub bytes: u64,
    /// CRC-32, 8 hex digits.
    pub crc32: String,
}

impl FileSum {
    /// The sum of `dir/file` now; `None` if it does not exist.
    pub fn of(dir: &Path, file: &str) -> Option<FileSum> {
        let bytes = std::fs::read(dir.join(file)).ok()?;
        Some(FileSum {
            file: file.to_string(),
            bytes: bytes.len() as u64,
            crc32: format!("{:08x}", crc32fast::hash(&bytes)),
        })
    }
}

impl Manifest {
    /// Writes atomically (temp file, then rename).
    ///
    /// # Errors
    ///
    /// Returns [`RunDirError::Format`] if the manifest cannot be serialized
    /// to JSON, and [`RunDirError::Io`] if the temporary `*.json.tmp` file
    /// cannot be written or cannot be renamed onto `path`.
    pub fn write(&self, path: &Path) -> Result<(), RunDirError> {
        let tmp = path.with_extension("json.tmp");
        let text = serde_json::to_string_pretty(self).map_err(|e| RunDirError::Format {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let text = text + "\n";
        if let Err(e) = std::fs::write(&tmp, &text).and_then(|()| std::fs::rename(&tmp, path)) {
            // A full disk: no temporary file left behind; the manifest is
            // rewritten in place, where its old blocks take most of it.
            let _ = std::fs::remove_file(&tmp);
            if !path.exists() {
                return Err(RunDirError::io(&tmp, e));
            }
            return write_in_place(path, text.as_bytes()).map_err(|e2| {
                RunDirError::io(
                    path,
                    std::io::Error::new(
                        e2.kind(),
                        format!("{e2} (and through a temporary file: {e})"),
                    ),
                )
            });
        }
        Ok(())
    }

    /// Reads a manifest.
    ///
    /// # Errors
    ///
    /// Returns [`RunDirError::Io`] if the file cannot be read (for instance
    /// because it does not exist), and [`RunDirError::Format`] if it is not
    /// valid manifest JSON or its `format_version` is not
    /// [`FORMAT_VERSION`], the one this build reads.
    pub fn read(path: &Path) -> Result<Manifest, RunDirError> {
        let text = std::fs::read_to_string(path).map_err(|e| RunDirError::io(path, e))?;
        let m: Manifest = serde_json::from_str(&text).map_err(|e| RunDirError::Format {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        if m.format_version != FORMAT_VERSION {
            return Err(RunDirError::Format {
                path: path.to_path_buf(),
                message: format!(
                    "run-directory format {} is not {FORMAT_VERSION}, which this powerlab reads",
                    m.format_version
                ),
            });
        }
        Ok(m)
    }
}

/// Overwrites `path` with `text` without a temporary file: written over
/// the old content first, then cut to length.
fn write_in_place(path: &Path, text: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().write(true).open(path)?;
    f.write_all(text)?;
    f.set_len(text.len() as u64)?;
    f.sync_all()
}
