//! The values of the options that take one of a fixed set (`--backend`,
//! `--sim-pace`, `--virus`, `--gemm-dtype`, `--sim-profile`, a capture's
//! phase), and what each means to the engine.

use clap::ValueEnum;

/// Which hardware.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    /// Real NVIDIA GPUs through CUDA and NVML (the default).
    Cuda,
    /// The simulated node (only when asked for).
    Sim,
}

/// How simulated time passes.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimPace {
    /// As fast as the machine computes (a 4-hour campaign in minutes).
    Virtual,
    /// In real time (for signal and wall-clock tests).
    Realtime,
}

/// The power-virus load on real GPUs.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum VirusArg {
    /// cuBLAS GEMM and HBM streaming on two streams at once (the default).
    Mixed,
    /// cuBLAS GEMM alone.
    Gemm,
    /// HBM streaming alone.
    Hbm,
    /// A register-only bf16 mma.sync kernel (a reference, ~75 % of the limit on H200).
    Mma,
}

impl VirusArg {
    /// The engine's load mode of this choice.
    pub fn mode(self) -> powerlab_cuda::VirusMode {
        use powerlab_cuda::VirusMode;
        match self {
            VirusArg::Mixed => VirusMode::Mixed,
            VirusArg::Gemm => VirusMode::Gemm,
            VirusArg::Hbm => VirusMode::Hbm,
            VirusArg::Mma => VirusMode::Mma,
        }
    }
}

/// The GEMM operand type.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum DtypeArg {
    /// bfloat16 (the default).
    Bf16,
    /// IEEE half precision.
    Fp16,
}

impl DtypeArg {
    /// The engine's operand type of this choice.
    pub fn dtype(self) -> powerlab_cuda::GemmDtype {
        match self {
            DtypeArg::Bf16 => powerlab_cuda::GemmDtype::Bf16,
            DtypeArg::Fp16 => powerlab_cuda::GemmDtype::Fp16,
        }
    }
}

/// The simulated GPU model.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimProfileArg {
    /// NVIDIA H200 (700 W), the default.
    H200,
    /// NVIDIA B300 (1100 W).
    B300,
    /// NVIDIA A10G (300 W), the rehearsal GPU.
    A10g,
}

impl SimProfileArg {
    /// The simulated node's physics profile of this model.
    pub fn profile(self) -> powerlab_sim::Profile {
        use powerlab_sim::Profile;
        match self {
            SimProfileArg::H200 => Profile::h200(),
            SimProfileArg::B300 => Profile::b300(),
            SimProfileArg::A10g => Profile::a10g(),
        }
    }
}

/// The state a health capture describes.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum CapturePhase {
    /// No load (the preflight before a run).
    Idle,
    /// Under load (a capture taken during a run).
    #[value(name = "under_load")]
    UnderLoad,
}

impl CapturePhase {
    /// The label written into the health file.
    pub fn as_str(self) -> &'static str {
        match self {
            CapturePhase::Idle => "idle",
            CapturePhase::UnderLoad => "under_load",
        }
    }
}
