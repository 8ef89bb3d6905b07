//! Every file of a run directory that is not raw data, by name and by what
//! it holds, so no other crate spells a file name. The types inside the
//! JSON files belong to the crates that produce them (the health capture,
//! the collator's sensor model, the rack's node list); this module owns
//! where they live and how they are written: pretty JSON with a final
//! newline, and the simulated node's true waveform as CSV.

use crate::layout::{RunDir, RunDirError};
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};

/// A file of a run directory (or of a rack's run directory).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunFile {
    /// `health.json`: the idle preflight's health capture (`powerlab_health::HealthReport`).
    Health,
    /// `health-report.md`: that capture for people.
    HealthReport,
    /// `health-under-load.json`: the capture taken a few seconds into the first loaded rung.
    HealthUnderLoad,
    /// `sensor.json`: the sensor model (`powerlab_collate::sensor::SensorModel`), given with
    /// `--sensor` (written with the first manifest, which records its length and CRC-32;
    /// the collator reads it only then) or calibrated by the run itself (written after
    /// collating, for later runs' `--sensor`).
    SensorModel,
    /// `sim-truth/`: the simulated node's true waveform per GPU (`--sim-truth`),
    /// the oracle of tests; the collator never reads it.
    SimTruth,
    /// `rack.json` at the root of a rack run: the nodes, their clocks and preflight verdicts.
    Rack,
}

impl RunFile {
    /// The file's name inside its directory.
    pub const fn name(self) -> &'static str {
        match self {
            RunFile::Health => "health.json",
            RunFile::HealthReport => "health-report.md",
            RunFile::HealthUnderLoad => "health-under-load.json",
            RunFile::SensorModel => "sensor.json",
            RunFile::SimTruth => "sim-truth",
            RunFile::Rack => "rack.json",
        }
    }

    /// The stem the health writer takes for a capture file (`health`,
    /// `health-under-load`); None for the other files.
    pub const fn health_stem(self) -> Option<&'static str> {
        match self {
            RunFile::Health | RunFile::HealthReport => Some("health"),
            RunFile::HealthUnderLoad => Some("health-under-load"),
            _ => None,
        }
    }

    /// The file inside directory `dir`.
    pub fn path_in(self, dir: &Path) -> PathBuf {
        dir.join(self.name())
    }
}

impl RunDir {
    /// One of the run directory's files.
    pub fn file(&self, f: RunFile) -> PathBuf {
        f.path_in(&self.path)
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
    use super::*;

    #[test]
    fn names_are_distinct_and_stems_match_the_health_files() {
        let all = [
            RunFile::Health,
            RunFile::HealthReport,
            RunFile::HealthUnderLoad,
            RunFile::SensorModel,
            RunFile::SimTruth,
            RunFile::Rack,
        ];
        let names: std::collections::BTreeSet<_> = all.iter().map(|f| f.name()).collect();
        assert_eq!(names.len(), all.len());
        assert_eq!(
            RunFile::Health
                .health_stem()
                .map(|s| format!("{s}.json"))
                .as_deref(),
            Some(RunFile::Health.name())
        );
        assert_eq!(
            RunFile::HealthReport
                .health_stem()
                .map(|s| format!("{s}-report.md"))
                .as_deref(),
            Some(RunFile::HealthReport.name())
        );
        assert_eq!(
            RunFile::HealthUnderLoad
                .health_stem()
                .map(|s| format!("{s}.json"))
                .as_deref(),
            Some(RunFile::HealthUnderLoad.name())
        );
    }

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
}
