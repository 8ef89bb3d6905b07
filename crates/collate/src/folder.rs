//! A folder written whole or not at all, as a collation writes `report/`:
//! every file goes into a temporary sibling (`<name>.new-<pid>`), which
//! takes the folder's name only once complete; the folder it replaces
//! moves aside first (`<name>.old-<pid>`) and goes last. A writer that
//! fails half-way (a full disk, a plot that cannot be drawn) leaves the
//! previous folder exactly as it was, never new files beside old ones.

use std::path::{Path, PathBuf};

/// `target` with `tag` appended to its last component.
fn sibling(target: &Path, tag: &str) -> PathBuf {
    let mut name = target
        .file_name()
        .map(std::ffi::OsStr::to_os_string)
        .unwrap_or_default();
    name.push(format!(".{tag}-{}", std::process::id()));
    target.with_file_name(name)
}

/// Builds the folder `target` with `build` (given the temporary folder to
/// write into; it returns the files it wrote) and puts it in place when
/// `build` succeeds; returns the files at their final paths. `io` turns
/// an I/O failure on a path into the caller's error.
///
/// # Errors
/// `build`'s error (the temporary folder removed, `target` untouched), or
/// an I/O error making, moving or removing a folder.
pub fn write_whole<E>(
    target: &Path,
    build: impl FnOnce(&Path) -> Result<Vec<PathBuf>, E>,
    io: impl Fn(&Path, std::io::Error) -> E,
) -> Result<Vec<PathBuf>, E> {
    let staging = sibling(target, "new");
    if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| io(parent, e))?;
    }
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(|e| io(&staging, e))?;
    }
    std::fs::create_dir_all(&staging).map_err(|e| io(&staging, e))?;
    let files = match build(&staging) {
        Ok(f) => f,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(e);
        }
    };
    let old = sibling(target, "old");
    if target.exists() {
        std::fs::rename(target, &old).map_err(|e| io(target, e))?;
    }
    if let Err(e) = std::fs::rename(&staging, target) {
        // Put the previous folder back: the new one could not take its place.
        let _ = std::fs::rename(&old, target);
        let _ = std::fs::remove_dir_all(&staging);
        return Err(io(&staging, e));
    }
    if old.exists() {
        std::fs::remove_dir_all(&old).map_err(|e| io(&old, e))?;
    }
    Ok(files
        .into_iter()
        .map(|f| {
            f.strip_prefix(&staging)
                .map(|rel| target.join(rel))
                .unwrap_or(f)
        })
        .collect())
}

/// Writes files into `dir` (a folder that holds other things too: the
/// user's `--out`): `build` writes them into a temporary folder inside
/// `dir`, and each is renamed over its name in `dir` only once all are
/// written; returns the files at their final paths.
///
/// # Errors
/// As [`write_whole`].
pub fn write_files<E>(
    dir: &Path,
    build: impl FnOnce(&Path) -> Result<Vec<PathBuf>, E>,
    io: impl Fn(&Path, std::io::Error) -> E,
) -> Result<Vec<PathBuf>, E> {
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let staging = dir.join(format!(".powerlab.new-{}", std::process::id()));
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(|e| io(&staging, e))?;
    }
    std::fs::create_dir(&staging).map_err(|e| io(&staging, e))?;
    let files = match build(&staging) {
        Ok(f) => f,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(e);
        }
    };
    let mut out = Vec::with_capacity(files.len());
    for f in files {
        let to = f
            .strip_prefix(&staging)
            .map(|rel| dir.join(rel))
            .unwrap_or_else(|_| f.clone());
        std::fs::rename(&f, &to).map_err(|e| io(&to, e))?;
        out.push(to);
    }
    std::fs::remove_dir_all(&staging).map_err(|e| io(&staging, e))?;
    Ok(out)
}
