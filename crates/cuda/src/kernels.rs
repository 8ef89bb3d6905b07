//! The helper kernels, compiled at run time by NVRTC for the GPU found.

use cudarc::nvrtc::{CompileOptions, Ptx, compile_ptx_with_opts};
use powerlab_core::HwError;

/// CUDA source of the helper kernels (`kernels/virus.cu`).
pub const VIRUS_CU: &str = include_str!("../../../kernels/virus.cu");

/// Kernel names in [`VIRUS_CU`].
pub const KERNELS: [&str; 6] = [
    "spin_until",
    "stamp",
    "burn_until",
    "hbm_stream",
    "mma_regs",
    "fill_random",
];

/// NVRTC architecture for a compute capability (sm_80 and newer).
///
/// # Errors
///
/// Returns [`HwError::Other`] for a compute capability not in the table
/// (anything older than 8.0, or a newer one this build does not know).
pub fn arch_for(major: i32, minor: i32) -> Result<&'static str, HwError> {
    Ok(match (major, minor) {
        (8, 0) => "sm_80",
        (8, 6) => "sm_86",
        (8, 7) => "sm_87",
        (8, 9) => "sm_89",
        (9, 0) => "sm_90",
        (10, 0) => "sm_100",
        (10, 3) => "sm_103",
        (12, 0) => "sm_120",
        (12, 1) => "sm_121",
        (m, n) => {
            return Err(HwError::Other(format!(
                "compute capability {m}.{n} is not supported by the power virus (it needs sm_80 or newer: A10G/A100, Hopper, Blackwell)"
            )));
        }
    })
}

/// Compiles the helper kernels for `arch`.
///
/// # Errors
///
/// Returns [`HwError::Other`], with NVRTC's message, if NVRTC cannot be
/// loaded or cannot compile `kernels/virus.cu` for `arch`.
pub fn compile(arch: &'static str) -> Result<Ptx, HwError> {
    let opts = CompileOptions {
        arch: Some(arch),
        name: Some("virus.cu".into()),
        ..Default::default()
    };
    compile_ptx_with_opts(VIRUS_CU, opts).map_err(|e| {
        HwError::Other(format!(
            "NVRTC could not compile kernels/virus.cu for {arch}: {e:?}"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::libs::CudaLib;

    /// Compiles every kernel for sm_80, sm_90 and sm_100 (no GPU needed).
    /// CI installs NVRTC and sets POWERLAB_REQUIRE_NVRTC=1, so there a
    /// missing NVRTC fails instead of skipping.
    #[test]
    fn kernels_compile_for_every_supported_generation() {
        if !CudaLib::Nvrtc.cudarc_finds() {
            assert!(
                std::env::var("POWERLAB_REQUIRE_NVRTC").is_err(),
                "POWERLAB_REQUIRE_NVRTC is set but NVRTC cannot be loaded: {:?}",
                CudaLib::Nvrtc.require()
            );
            eprintln!(
                "SKIPPED: NVRTC is not installed here; set POWERLAB_REQUIRE_NVRTC=1 to make this fail"
            );
            return;
        }
        for arch in ["sm_80", "sm_90", "sm_100"] {
            let ptx = compile(arch).unwrap_or_else(|e| panic!("{e}"));
            let src = ptx.to_src();
            for k in KERNELS {
                assert!(
                    src.contains(&format!(".entry {k}")),
                    "{arch}: {k} missing from PTX"
                );
            }
            assert!(
                src.contains("globaltimer"),
                "{arch}: edges must read the device clock"
            );
            assert!(
                src.contains("mma.sync.aligned.m16n8k16"),
                "{arch}: tensor instructions"
            );
        }
    }

    #[test]
    fn architectures_map_and_old_parts_are_refused() {
        assert_eq!(arch_for(9, 0).unwrap(), "sm_90");
        assert_eq!(arch_for(10, 3).unwrap(), "sm_103");
        assert!(
            arch_for(7, 0)
                .unwrap_err()
                .to_string()
                .contains("sm_80 or newer")
        );
    }

    #[test]
    fn missing_library_errors_name_it_and_the_fix() {
        // This machine (CI) has no NCCL unless installed; either way the
        // error path must name the library and what was searched.
        let names = CudaLib::Nccl.candidates();
        assert!(names.iter().any(|n| n == "libnccl.so.2"), "{names:?}");
        if let Err(e) = CudaLib::Nccl.require() {
            let s = e.to_string();
            assert!(
                s.contains("NCCL (libnccl)") && s.contains("libnccl.so") && s.contains("Fix:"),
                "{s}"
            );
        }
    }
}
