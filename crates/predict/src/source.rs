//! The run a prediction is built from: one node run's report, computed
//! from its raw files (as `powerlab collate` computes it, nothing
//! written). A rack's report sums its nodes' cycles and keeps no GPU's
//! own: a prediction is made from one of its nodes.

use powerlab_collate::report::Report;
use powerlab_rundir::{RunDir, RunFile};
use powerlab_samples::error::CollateError;
use powerlab_samples::load;
use std::path::Path;

/// The report of the node run at `path`.
///
/// # Errors
///
/// [`CollateError::RunDir`] where `path` is not a run directory (a rack's
/// directory is named as such, with its nodes), [`CollateError::Busy`]
/// while the run is being written, and every error of a collation's
/// compute step.
pub fn report_of(path: &Path) -> Result<Report, CollateError> {
    let nodes = RunFile::Nodes.path_in(path);
    if nodes.is_dir() && !RunFile::Manifest.path_in(path).is_file() {
        return Err(CollateError::RunDir(powerlab_rundir::RunDirError::Format {
            path: path.to_path_buf(),
            message: format!(
                "a rack's directory: its report sums the nodes and keeps no GPU's own cycle; predict from one node, e.g. {}",
                first_node(&nodes).map_or_else(
                    || nodes.join("<node>").display().to_string(),
                    |n| n.display().to_string()
                )
            ),
        }));
    }
    let dir = RunDir::open(path)?;
    if let Some(holder) = powerlab_rundir::lock::holder(&dir.run_lock()) {
        return Err(CollateError::Busy {
            path: dir.path.clone(),
            message: format!(
                "the run is still being written ({holder}); predict from it when it ends"
            ),
        });
    }
    let run = load::load_run(&dir)?;
    powerlab_collate::report::node::compute(&dir, &run, None, None)
}

fn first_node(nodes: &Path) -> Option<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(nodes)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| RunFile::Manifest.path_in(p).is_file())
        .collect();
    v.sort();
    v.into_iter().next()
}
