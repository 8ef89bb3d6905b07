//! What a node's report hands its rack (the node curve and composed cycles
//! at full precision, [`crate::handoff`]), or a rack's report its composed
//! cycles, as one exporter.

use crate::handoff::{CYCLES_FILE, write_curve, write_cycles};
use crate::report::{Report, Scope};
use powerlab_samples::error::CollateError;
use std::path::{Path, PathBuf};

/// The hand-off files of a report. The inputs record
/// ([`crate::handoff::write_inputs`]) is written apart, after every other
/// file.
pub struct Handoff;

impl super::Exporter for Handoff {
    fn export(&self, report: &Report, dir: &Path) -> Result<Vec<PathBuf>, CollateError> {
        Ok(match &report.scope {
            Scope::Node(_) => vec![
                write_curve(&report.curve, &report.run, dir)?,
                write_cycles(&report.cycles, &dir.join(CYCLES_FILE))?,
            ],
            Scope::Rack(_) => vec![write_cycles(
                &report.cycles,
                &dir.join(powerlab_rundir::ReportFile::RackCyclesParquet.file_name()),
            )?],
        })
    }
}
