//! The run directory of one run, from its creation to its sealed manifest.
//!
//! Before anything is written this module checks that the results root can
//! take the run (a writable directory outside every run, with room for the
//! files it will write, see [`powerlab_campaign::disk`]), so a refused run
//! leaves nothing behind. It then creates the directory, holds its write
//! lock, writes the first manifest and the idle preflight, reserves the
//! space the end of the run needs, and at the end seals the manifest with
//! the final status and the checksums of the files written.

use crate::error::RunError;
use crate::options::RunOptions;
use powerlab_campaign::{Campaign, Plan};
use powerlab_core::RunClock;
use powerlab_core::hw::BackendInfo;
use powerlab_core::units::BYTES_PER_MB;
use powerlab_rundir::{FORMAT_VERSION, Manifest, RunDir, RunDirError, RunStatus};
use std::path::Path;

/// The run directory while this process writes it.
pub(crate) struct RunFiles {
    /// The directory.
    pub dir: RunDir,
    /// The manifest, rewritten when the run ends.
    manifest: Manifest,
    /// Held while this process writes the directory: a collation meanwhile
    /// refuses (unless asked for a snapshot) instead of reading half a run.
    _run_lock: powerlab_rundir::lock::Held,
    /// Space taken at the start and given back for the closing writes (the
    /// last events and the sealed manifest), so that a disk the run filled
    /// still takes them.
    reserve: Option<std::path::PathBuf>,
}

/// The hidden file that holds the space the end of a run needs.
const RESERVE_FILE: &str = ".space-reserve";

/// Takes `bytes` of real space (written, not a sparse file) in `path`;
/// None if that fails (a disk already too full: the run goes on without).
fn reserve_space(path: &Path, bytes: usize) -> Option<std::path::PathBuf> {
    use std::io::Write;
    let mut f = std::fs::File::create(path).ok()?;
    let chunk = vec![0u8; 64 * 1024];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len());
        if f.write_all(&chunk[..n]).is_err() {
            let _ = std::fs::remove_file(path);
            return None;
        }
        left -= n;
    }
    if f.sync_all().is_err() {
        let _ = std::fs::remove_file(path);
        return None;
    }
    Some(path.to_path_buf())
}

impl RunFiles {
    /// Checks the results root, then creates the run directory with its
    /// manifest (status running) and, if given, the idle preflight.
    pub fn create(
        campaign: &Campaign,
        plan: &Plan,
        backend: &BackendInfo,
        clock: RunClock,
        opts: &RunOptions,
        start_ns: i64,
    ) -> Result<RunFiles, RunError> {
        let parent = match &opts.rack {
            Some(r) => r
                .node_dir
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| r.node_dir.clone()),
            None => opts.results_root.clone(),
        };
        check_results_root(&parent).map_err(RunError::Results)?;
        let estimate = powerlab_campaign::disk::estimate(campaign, plan);
        let needed = opts.min_free_bytes.unwrap_or(estimate.needed_bytes);
        check_free_space(&parent, needed, &estimate).map_err(RunError::Results)?;
        let dir = match &opts.rack {
            Some(r) => RunDir::create_exact(&r.node_dir)?,
            None => RunDir::create(&opts.results_root, &campaign.name, &backend.host, start_ns)?,
        };
        let run_lock = powerlab_rundir::lock::try_hold(
            &dir.run_lock(),
            &format!("writing this run (campaign `{}`)", campaign.name),
        )
        .map_err(|e| RunError::Results(e.to_string()))?;
        let sensor_file = powerlab_rundir::RunFile::SensorModel;
        let sensor = opts
            .sensor
            .as_ref()
            .map(|bytes| -> Result<_, RunError> {
                write_bytes(&dir.file(sensor_file), bytes)?;
                Ok(powerlab_rundir::FileSum::of_bytes(
                    sensor_file.name(),
                    bytes,
                ))
            })
            .transpose()?;
        let manifest = Manifest {
            format_version: FORMAT_VERSION,
            seal: None,
            tool: opts.tool.clone(),
            campaign: campaign.name.clone(),
            campaign_resolved: serde_json::to_value(campaign).unwrap_or_default(),
            plan: serde_json::to_value(plan).unwrap_or_default(),
            backend: backend.clone(),
            clock: clock.describe().into(),
            started_ns: start_ns,
            ended_ns: None,
            started_utc: powerlab_rundir::layout::utc_rfc3339(start_ns),
            status: RunStatus::Running,
            allow_unhealthy: opts.allow_unhealthy,
            command: opts.command.clone(),
            raw_index: true,
            checksums: Vec::new(),
            sensor,
            gpu_binding: opts.gpu_binding.clone(),
        };
        manifest.write(&dir.manifest())?;
        // Room for the closing events and a manifest holding checksums.
        let manifest_len = std::fs::metadata(dir.manifest()).map_or(0, |m| m.len() as usize);
        let reserve = reserve_space(&dir.path.join(RESERVE_FILE), 2 * manifest_len + 256 * 1024);
        if let Some((json, md)) = &opts.health {
            write_file(
                &dir.file(powerlab_rundir::RunFile::Health),
                &(serde_json::to_string_pretty(json).unwrap_or_default() + "\n"),
            )?;
            write_file(&dir.file(powerlab_rundir::RunFile::HealthReport), md)?;
        }
        Ok(RunFiles {
            dir,
            manifest,
            _run_lock: run_lock,
            reserve,
        })
    }

    /// Gives back the space reserved at the start (for the closing writes).
    pub fn release_reserve(&mut self) {
        if let Some(p) = self.reserve.take() {
            let _ = std::fs::remove_file(p);
        }
    }

    /// Rewrites the manifest with how the run ended and the checksums of
    /// the files written. Every other file must be flushed by now.
    pub fn seal(&mut self, status: &RunStatus, end_ns: i64) -> Result<(), RunError> {
        self.release_reserve();
        self.manifest.ended_ns = Some(end_ns);
        self.manifest.status = status.clone();
        let meters: Vec<String> = powerlab_rundir::node_power::node_power_files(&self.dir.path)
            .unwrap_or_default()
            .iter()
            .filter_map(|p| p.strip_prefix(&self.dir.path).ok())
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        self.manifest.checksums = [
            powerlab_rundir::RunFile::Edges.name(),
            powerlab_rundir::RunFile::Collectives.name(),
            powerlab_rundir::RunFile::Events.name(),
        ]
        .iter()
        .map(|f| f.to_string())
        .chain(meters)
        .filter_map(|f| powerlab_rundir::FileSum::of(&self.dir.path, &f))
        .collect();
        self.manifest.write(&self.dir.manifest())?;
        Ok(())
    }
}

fn write_file(path: &Path, text: &str) -> Result<(), RunError> {
    write_bytes(path, text.as_bytes())
}

fn write_bytes(path: &Path, bytes: &[u8]) -> Result<(), RunError> {
    std::fs::write(path, bytes).map_err(|e| RunError::RunDir(RunDirError::io(path, e)))
}

/// Refuses a results directory with less than `needed` bytes available to
/// an unprivileged writer; the message states what the run's files need.
fn check_free_space(
    dir: &Path,
    needed: u64,
    estimate: &powerlab_campaign::DiskEstimate,
) -> Result<(), String> {
    let free = rustix::fs::statvfs(dir)
        .map(|s| s.f_frsize.saturating_mul(s.f_bavail))
        .map_err(|e| {
            format!(
                "cannot read free space of {}: {}",
                dir.display(),
                std::io::Error::from(e)
            )
        })?;
    if free < needed {
        return Err(format!(
            "{} has {} MB free, the run needs about {} MB: its files need {}; free space or choose another --results",
            dir.display(),
            free / BYTES_PER_MB,
            needed / BYTES_PER_MB,
            estimate.describe()
        ));
    }
    Ok(())
}

/// The results root must be a writable directory outside every run
/// directory (a run inside another's `report/` would be deleted by the next
/// collate of the outer one). Creates it if needed.
///
/// # Errors
/// The path cannot be made absolute or created, lies inside a run
/// directory, or is not writable; the message names it and what to do.
pub fn check_results_root(root: &Path) -> Result<(), String> {
    let abs = std::path::absolute(root)
        .map_err(|e| format!("results directory {}: {e}", root.display()))?;
    for dir in abs.ancestors() {
        if dir
            .join(powerlab_rundir::RunFile::Manifest.name())
            .is_file()
        {
            return Err(format!(
                "results directory {} is inside the run directory {} (it holds a manifest.json); choose a --results outside any run",
                root.display(),
                dir.display()
            ));
        }
    }
    std::fs::create_dir_all(root).map_err(|e| {
        format!(
            "cannot create the results directory {}: {e}",
            root.display()
        )
    })?;
    let probe = root.join(format!(".powerlab-write-test-{}", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e)
            if e.kind() == std::io::ErrorKind::PermissionDenied
                || e.kind() == std::io::ErrorKind::ReadOnlyFilesystem =>
        {
            Err(format!(
                "results directory {} is not writable ({e}); choose another --results",
                root.display()
            ))
        }
        Err(e) => Err(format!(
            "cannot write into the results directory {}: {e}",
            root.display()
        )),
    }
}
