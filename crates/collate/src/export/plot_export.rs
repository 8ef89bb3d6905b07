//! The plots of a report, as one exporter over [`super::plots`]'s writers.

use super::plots;
use crate::error::CollateError;
use crate::report::{NodeParts, Report, Scope};
use powerlab_rundir::ReportFile;
use std::path::{Path, PathBuf};

/// Every plot of a node or a rack report, under `plots/`.
pub struct Plots;

impl super::Exporter for Plots {
    fn export(&self, report: &Report, dir: &Path) -> Result<Vec<PathBuf>, CollateError> {
        let plots_dir = dir.join(ReportFile::Plots.file_name());
        let mut files = plots::write_plots(
            &report.curve,
            &report.run,
            &report.rungs,
            &report.repeats,
            &report.compare,
            &report.cycles,
            &plots_dir,
        )?;
        if let Scope::Node(n) = &report.scope {
            files.extend(node_plots(n, &plots_dir)?);
        }
        Ok(files)
    }
}

/// A node's own plots: NCCL, the sensor, the soak and the node's meters
/// (those the run has).
fn node_plots(n: &NodeParts, plots_dir: &Path) -> Result<Vec<PathBuf>, CollateError> {
    let mut files = plots::write_nccl_plot(&n.nccl, plots_dir)?;
    files.extend(plots::write_sensor_plot(&n.sensor.answers, plots_dir)?);
    if let Some((label, lines)) = &n.soak.plot {
        files.extend(plots::write_soak_plot(label, lines, plots_dir)?);
    }
    if !n.node_power.facts.is_empty() {
        files.extend(plots::write_node_power_plot(&n.node_power.plot, plots_dir)?);
    }
    Ok(files)
}
