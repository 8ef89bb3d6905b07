//! Collator errors.

use std::path::{Path, PathBuf};

/// Why collation failed.
#[derive(Debug, thiserror::Error)]
pub enum CollateError {
    /// The run directory is unreadable or malformed.
    #[error(transparent)]
    RunDir(#[from] powerlab_rundir::RunDirError),
    /// polars failed (names the step).
    #[error("{step}: {source}")]
    Polars {
        /// What was being done.
        step: String,
        /// The error.
        source: polars::prelude::PolarsError,
    },
    /// Writing an output failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A raw file has bad content.
    #[error("{path}: {message}")]
    BadRaw {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// Another process is writing or collating the run directory.
    #[error("{path}: {message}")]
    Busy {
        /// The run directory.
        path: PathBuf,
        /// Who holds it and what to do.
        message: String,
    },
    /// Plotting failed.
    #[error("plot {path}: {message}")]
    Plot {
        /// The file.
        path: PathBuf,
        /// What failed.
        message: String,
    },
}

impl CollateError {
    /// I/O error with its path.
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        CollateError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    /// Wraps a polars error with the step.
    pub fn polars(step: &str) -> impl FnOnce(polars::prelude::PolarsError) -> CollateError + '_ {
        move |source| CollateError::Polars {
            step: step.to_string(),
            source,
        }
    }
}
