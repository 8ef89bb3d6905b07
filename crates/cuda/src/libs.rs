//! Presence checks for the dynamically loaded CUDA libraries. cudarc panics
//! when a library is absent at first use; these checks run first and turn
//! absence into an error naming the library, what was searched and the fix.

use powerlab_core::HwError;

/// A library the backend can load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CudaLib {
    /// libcuda (driver API).
    Driver,
    /// libnvrtc (run-time compiler).
    Nvrtc,
    /// cuBLAS (`libcublas`).
    Cublas,
    /// cuBLASLt (`libcublasLt`).
    CublasLt,
    /// NCCL (`libnccl`).
    Nccl,
}

impl CudaLib {
    fn base(self) -> &'static str {
        match self {
            CudaLib::Driver => "cuda",
            CudaLib::Nvrtc => "nvrtc",
            CudaLib::Cublas => "cublas",
            CudaLib::CublasLt => "cublasLt",
            CudaLib::Nccl => "nccl",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            CudaLib::Driver => "libcuda (the CUDA driver API)",
            CudaLib::Nvrtc => "libnvrtc (the CUDA run-time compiler)",
            CudaLib::Cublas => "libcublas",
            CudaLib::CublasLt => "libcublasLt",
            CudaLib::Nccl => "NCCL (libnccl)",
        }
    }

    fn fix(self) -> &'static str {
        match self {
            CudaLib::Driver => {
                "install the NVIDIA driver (libcuda.so.1 ships with it) and check `ldconfig -p | grep libcuda`; without GPUs use --backend sim"
            }
            CudaLib::Nvrtc | CudaLib::Cublas | CudaLib::CublasLt => {
                "install the CUDA 13 toolkit libraries (or the nvidia-cuda-nvrtc / nvidia-cublas pip wheels) and add their lib directory to LD_LIBRARY_PATH"
            }
            CudaLib::Nccl => {
                "install NCCL (apt install libnccl2, or the nvidia-nccl-cu13 wheel) and add its lib directory to LD_LIBRARY_PATH, or remove the nccl phase"
            }
        }
    }

    /// File names the loader is asked for, in order.
    pub fn candidates(self) -> Vec<String> {
        let mut v = cudarc::get_lib_name_candidates(self.base());
        let extra = match self {
            CudaLib::Driver => vec!["libcuda.so.1"],
            CudaLib::Nccl => vec!["libnccl.so.2"],
            _ => vec![],
        };
        v.extend(extra.into_iter().map(String::from));
        v.dedup();
        v
    }

    /// The first candidate that loads, if any.
    pub fn find(self) -> Option<String> {
        self.candidates().into_iter().find(|name| {
            // SAFETY: loading a shared library runs its initialisers; these
            // are the vendor's CUDA libraries, loaded the same way cudarc would.
            unsafe { libloading::Library::new(name) }.is_ok()
        })
    }

    /// Whether cudarc itself will find it (it does not try `.so.2` / `.so.1` names).
    pub fn cudarc_finds(self) -> bool {
        // SAFETY: as above; cudarc's own probe.
        unsafe {
            match self {
                CudaLib::Driver => cudarc::driver::sys::is_culib_present(),
                CudaLib::Nvrtc => cudarc::nvrtc::sys::is_culib_present(),
                CudaLib::Cublas => cudarc::cublas::sys::is_culib_present(),
                CudaLib::CublasLt => cudarc::cublaslt::sys::is_culib_present(),
                CudaLib::Nccl => cudarc::nccl::sys::is_culib_present(),
            }
        }
    }

    /// Ok if cudarc can load it; else the error to show.
    ///
    /// # Errors
    ///
    /// Returns [`HwError::Missing`] if cudarc cannot load the library under
    /// any of the names it looks for; the detail says whether another
    /// version of it loads (one cudarc does not look for) or none at all,
    /// and the fix says what to install.
    pub fn require(self) -> Result<String, HwError> {
        if self.cudarc_finds() {
            return Ok(self.find().unwrap_or_else(|| format!("lib{}", self.base())));
        }
        let found_elsewhere = self.find();
        let detail = match found_elsewhere {
            Some(name) => format!(
                "only `{name}` loads, and the bindings look for {}",
                cudarc::get_lib_name_candidates(self.base()).join(", ")
            ),
            None => format!("none of {} could be loaded", self.candidates().join(", ")),
        };
        Err(HwError::Missing {
            what: self.describe().into(),
            detail,
            fix: self.fix().into(),
        })
    }
}

/// Set in the environment of a re-executed process: the directory holding
/// the `libnccl.so` link (so the re-execution happens once).
pub const NCCL_SHIM_ENV: &str = "POWERLAB_NCCL_SHIM";

/// Where NCCL ships only as `libnccl.so.2` (the usual apt and pip layout),
/// cudarc's loader, which asks for `libnccl.so` and `libnccl.so.<CUDA major>`,
/// does not find it. This makes a private directory with a `libnccl.so` link
/// to the library that does load and returns it; the caller re-executes the
/// binary with that directory first on `LD_LIBRARY_PATH` (the dynamic loader
/// reads the variable only at process start). None when nothing is needed,
/// when NCCL is absent altogether (the capability check reports that), or
/// after the re-execution.
pub fn nccl_shim_dir() -> Option<std::path::PathBuf> {
    if std::env::var_os(NCCL_SHIM_ENV).is_some() || CudaLib::Nccl.cudarc_finds() {
        return None;
    }
    let name = CudaLib::Nccl.find()?;
    // SAFETY: as in `find`: the vendor's library, loaded to learn its path.
    let _lib = unsafe { libloading::Library::new(&name) }.ok()?;
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let path = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| p.contains("/libnccl.so"))?
        .to_string();
    let dir = std::env::temp_dir().join(format!("powerlab-nccl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let link = dir.join("libnccl.so");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&path, &link).ok()?;
    Some(dir)
}
