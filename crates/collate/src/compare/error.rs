//! Why two runs cannot be compared.

use std::path::PathBuf;

/// Why `compare` could not compare two runs.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// The path is not a single-node run directory.
    #[error("{path}: not a single-node run directory: {why}")]
    NotARun {
        /// The path given.
        path: PathBuf,
        /// What is missing or wrong.
        why: String,
    },
    /// The run's report is missing or not up to date with its files.
    #[error(
        "{path}: its report is not up to date with its files ({why}): run `powerlab collate {path}` first, or pass --collate"
    )]
    NotCollated {
        /// The run directory.
        path: PathBuf,
        /// Why the report cannot stand for the run.
        why: String,
    },
    /// A report file does not read as the collator writes it.
    #[error("{path}: {message}")]
    BadReport {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// Collating a stale run (`--collate`) failed.
    #[error("collating {path}: {source}")]
    Collate {
        /// The run directory.
        path: PathBuf,
        /// The collator's error.
        source: crate::CollateError,
    },
    /// The two runs have nothing in common to compare: no rung matched, or
    /// no matched rung has a judged figure in both (a candidate stopped
    /// before its first rung). Never "no regression".
    #[error("cannot compare {b} with {a}: {why}")]
    Nothing {
        /// The baseline.
        a: PathBuf,
        /// The candidate.
        b: PathBuf,
        /// What is missing.
        why: String,
    },
    /// Writing an output failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}
