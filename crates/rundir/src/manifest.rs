//! `manifest.json`: what ran, where and how.

use crate::layout::RunDirError;
use powerlab_core::hw::BackendInfo;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Version of the run-directory format. Bump on any incompatible change.
/// Format 2: the manifest carries its own seal (see [`Manifest::seal`]),
/// every raw file an index, a finished run the checksums of its other
/// files, and a given sensor model its checksum; none of these may be
/// missing.
pub const FORMAT_VERSION: u32 = 2;

/// The oldest format this build reads: format 1 runs (written before the
/// seal) are read with the checks they carry.
pub const OLDEST_FORMAT: u32 = 1;

/// The seal's value while the seal is computed.
const SEAL_PLACEHOLDER: &str = "00000000";

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
    /// CRC-32 (8 hex digits) of the manifest's own text as written, with
    /// this value replaced by `00000000`: a manifest edited after the run
    /// wrote it (a limit, the backend, the GPU list, a checksum deleted) no
    /// longer matches. Written by [`Manifest::write`]; absent before format 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seal: Option<String>,
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
    /// Length and CRC-32 of the `sensor.json` given to the run (`run
    /// --sensor`), written with the first manifest; absent when the run was
    /// given none (a `sensor.json` found beside such a run is refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sensor: Option<FileSum>,
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
    /// The sum of `dir/file` now; `None` if it does not exist or is not a
    /// regular file.
    pub fn of(dir: &Path, file: &str) -> Option<FileSum> {
        let bytes = crate::layout::read_regular(&dir.join(file), None).ok()?;
        Some(FileSum::of_bytes(file, &bytes))
    }

    /// The sum of `bytes`, as the content of `file`.
    pub fn of_bytes(file: &str, bytes: &[u8]) -> FileSum {
        FileSum {
            file: file.to_string(),
            bytes: bytes.len() as u64,
            crc32: format!("{:08x}", crc32fast::hash(bytes)),
        }
    }

    /// Checks `dir/file` against this sum, reading no more than the
    /// recorded length.
    ///
    /// # Errors
    ///
    /// Returns [`RunDirError::Io`] when the file cannot be read (it is
    /// missing, say), and [`RunDirError::Format`] naming it when it is not a
    /// regular file, or its length or CRC-32 differ from the recorded ones.
    pub fn verify(&self, dir: &Path) -> Result<(), RunDirError> {
        let path = dir.join(&self.file);
        let bytes = crate::layout::read_regular(&path, Some(self.bytes))?;
        let now = FileSum::of_bytes(&self.file, &bytes);
        if now != *self {
            return Err(RunDirError::Format {
                path,
                message: format!(
                    "was changed after the run wrote it ({} bytes, CRC-32 {} recorded in the manifest; now {} bytes, {}): restore it from the original run directory",
                    self.bytes, self.crc32, now.bytes, now.crc32
                ),
            });
        }
        Ok(())
    }
}

/// CRC-32 of a manifest's text with its seal's value set to the placeholder.
fn seal_of(text: &str, seal: &str) -> String {
    let text = text.replacen(
        &format!("\"seal\": \"{seal}\""),
        &format!("\"seal\": \"{SEAL_PLACEHOLDER}\""),
        1,
    );
    format!("{:08x}", crc32fast::hash(text.as_bytes()))
}

impl Manifest {
    /// The run's GPU keys, in the manifest's order.
    pub fn gpu_keys(&self) -> Vec<String> {
        self.backend.gpus.iter().map(|g| g.key.clone()).collect()
    }

    /// Writes atomically (temp file, then rename).
    ///
    /// # Errors
    ///
    /// Returns [`RunDirError::Format`] if the manifest cannot be serialized
    /// to JSON, and [`RunDirError::Io`] if the temporary `*.json.tmp` file
    /// cannot be written or cannot be renamed onto `path`.
    pub fn write(&self, path: &Path) -> Result<(), RunDirError> {
        let tmp = path.with_extension("json.tmp");
        let mut sealed = self.clone();
        sealed.seal = Some(SEAL_PLACEHOLDER.into());
        let text = serde_json::to_string_pretty(&sealed).map_err(|e| RunDirError::Format {
            path: path.to_path_buf(),
            message: e.to_string(),
        })? + "\n";
        let seal = seal_of(&text, SEAL_PLACEHOLDER);
        let text = text.replacen(
            &format!("\"seal\": \"{SEAL_PLACEHOLDER}\""),
            &format!("\"seal\": \"{seal}\""),
            1,
        );
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

    /// Reads a manifest, and checks that it is the one the run wrote: its
    /// seal matches its text, and no integrity key its format requires is
    /// missing (see [`Manifest::check_keys`]).
    ///
    /// # Errors
    ///
    /// Returns [`RunDirError::Io`] if the file cannot be read (for instance
    /// because it does not exist), and [`RunDirError::Format`] if it is not
    /// a regular file, not valid manifest JSON, of a `format_version` this
    /// build does not read ([`OLDEST_FORMAT`] to [`FORMAT_VERSION`]), its
    /// seal does not match its text, or a key its format requires is missing.
    pub fn read(path: &Path) -> Result<Manifest, RunDirError> {
        let bytes = crate::layout::read_regular(path, Some(64 << 20))?;
        let text = String::from_utf8(bytes).map_err(|e| RunDirError::Format {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let m: Manifest = serde_json::from_str(&text).map_err(|e| RunDirError::Format {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let refuse = |message: String| RunDirError::Format {
            path: path.to_path_buf(),
            message,
        };
        if !(OLDEST_FORMAT..=FORMAT_VERSION).contains(&m.format_version) {
            return Err(refuse(format!(
                "run-directory format {} is not one this powerlab reads ({OLDEST_FORMAT} to {FORMAT_VERSION})",
                m.format_version
            )));
        }
        if let Some(seal) = &m.seal {
            let now = seal_of(&text, seal);
            if now != *seal {
                return Err(refuse(format!(
                    "was changed after the run wrote it (its seal is {seal}, its text now gives {now}): a limit, the backend, the GPU list, a status or a checksum was edited; restore manifest.json from the original run directory"
                )));
            }
        }
        m.check_keys().map_err(refuse)?;
        Ok(m)
    }

    /// Whether the run has ended (any status the runner writes together
    /// with the checksums of its files).
    pub fn finished(&self) -> bool {
        !matches!(self.status, RunStatus::Running)
    }

    /// Checks that every integrity key the manifest's format requires is
    /// there. Format 2: the seal, `raw_index`, and in a finished run its end
    /// and the checksum of `events.jsonl`. Format 1: a finished run that
    /// indexed its raw files also checksummed its other files.
    ///
    /// # Errors
    ///
    /// The missing key, in words, with what to do.
    pub fn check_keys(&self) -> Result<(), String> {
        let restore = "restore manifest.json from the original run directory";
        let missing = |key: &str| {
            format!(
                "has no `{key}`, which every format-{} manifest of {} carries: the manifest was edited, so nothing it vouches for can be checked; {restore}",
                self.format_version,
                if self.finished() {
                    "a finished run"
                } else {
                    "a run"
                }
            )
        };
        let has_events_sum = self
            .checksums
            .iter()
            .any(|c| c.file == crate::files::RunFile::Events.name());
        if self.format_version >= 2 {
            if self.seal.is_none() {
                return Err(missing("seal"));
            }
            if !self.raw_index {
                return Err(missing("raw_index"));
            }
            if self.finished() && self.ended_ns.is_none() {
                return Err(missing("ended_ns"));
            }
            if self.finished() && !has_events_sum {
                return Err(missing("checksums"));
            }
        } else if self.raw_index && self.finished() && !has_events_sum {
            // Every format-1 run with indexes that ended summed its events
            // (results/ holds nine): a list kept to edges.csv alone is a
            // manifest made to look older.
            return Err(missing("checksums"));
        }
        Ok(())
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
