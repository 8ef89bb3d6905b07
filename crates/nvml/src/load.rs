//! Loading NVML, with errors that say what to do.

use nvml_wrapper::Nvml;

/// NVML could not be used.
#[derive(Debug, thiserror::Error)]
pub enum NvmlError {
    /// The library or driver is absent.
    #[error(
        "NVML could not be initialised ({detail}). libnvidia-ml.so.1 comes with the NVIDIA kernel driver: on a GPU node install the driver; \
         on a machine without NVIDIA GPUs use `--backend sim` to run on the simulated node"
    )]
    Unavailable {
        /// What NVML said.
        detail: String,
    },
}

/// Initialises NVML once for the process.
///
/// # Errors
///
/// Returns [`NvmlError::Unavailable`], carrying NVML's own message, if
/// `nvmlInit` fails: most often because `libnvidia-ml.so.1` cannot be
/// loaded (no NVIDIA driver on this machine) or the driver is not running.
pub fn init_nvml() -> Result<Nvml, NvmlError> {
    Nvml::init().map_err(|e| NvmlError::Unavailable {
        detail: e.to_string(),
    })
}
