//! Advisory locks (flock) that name their holder: one campaign per node, one
//! writer per run directory, one collation per run directory at a time. A
//! lock dies with its process, so a killed run never leaves one behind.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

/// A held lock; released when dropped (or when the process dies).
#[derive(Debug)]
pub struct Held {
    _file: File,
    /// The lock file.
    pub path: PathBuf,
}

/// Why a lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another live process holds it.
    #[error("{path} is held by {holder}")]
    Busy {
        /// The lock file.
        path: PathBuf,
        /// What the holder wrote into it (`pid N …`).
        holder: String,
    },
    /// The lock file cannot be opened or locked.
    #[error("cannot open the lock {path}: {source}")]
    Io {
        /// The lock file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

fn open(path: &Path) -> Result<File, LockError> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|source| LockError::Io {
            path: path.to_path_buf(),
            source,
        })
}

fn holder_of(file: &mut File) -> String {
    let mut who = String::new();
    let _ = file.read_to_string(&mut who);
    if who.trim().is_empty() {
        "an unknown process".to_string()
    } else {
        who.trim().to_string()
    }
}

/// Takes the lock at `path` for `holder` (written into it with this pid),
/// or says who holds it.
///
/// # Errors
///
/// Returns [`LockError::Busy`], with what the holder wrote into the file, if
/// another live process holds the lock, and [`LockError::Io`] if the lock
/// file cannot be opened or created, or the `flock` call itself fails.
/// Failing to write this process's name into the file is not an error.
pub fn try_hold(path: &Path, holder: &str) -> Result<Held, LockError> {
    let mut file = open(path)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            return Err(LockError::Busy {
                path: path.to_path_buf(),
                holder: holder_of(&mut file),
            });
        }
        Err(std::fs::TryLockError::Error(source)) => {
            return Err(LockError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    }
    let _ = file.set_len(0);
    let _ = file.rewind();
    let _ = write!(file, "pid {} {holder}", std::process::id());
    let _ = file.flush();
    Ok(Held {
        _file: file,
        path: path.to_path_buf(),
    })
}

/// Takes the lock at `path` for `holder`, waiting up to `limit` while
/// another live process holds it; `waiting` is called once, with the
/// holder's words, when the first try finds the lock held.
///
/// # Errors
///
/// Returns [`LockError::Busy`] if the lock is still held after `limit`, and
/// [`LockError::Io`] if the lock file cannot be opened or locked.
pub fn hold_waiting(
    path: &Path,
    holder: &str,
    limit: std::time::Duration,
    mut waiting: impl FnMut(&str),
) -> Result<Held, LockError> {
    let until = std::time::Instant::now() + limit;
    let mut told = false;
    loop {
        match try_hold(path, holder) {
            Err(LockError::Busy { holder: who, .. }) if std::time::Instant::now() < until => {
                if !told {
                    waiting(&who);
                    told = true;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            other => return other,
        }
    }
}

/// Who holds the lock at `path`, if a live process does (a missing file or
/// a lock left by a dead process is free).
pub fn holder(path: &Path) -> Option<String> {
    let mut file = std::fs::OpenOptions::new().read(true).open(path).ok()?;
    match file.try_lock_shared() {
        Ok(()) => {
            let _ = file.unlock();
            None
        }
        Err(std::fs::TryLockError::WouldBlock) => Some(holder_of(&mut file)),
        Err(std::fs::TryLockError::Error(_)) => None,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_second_holder_is_refused_by_name_and_a_released_lock_is_free() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("x.lock");
        assert_eq!(super::holder(&p), None);
        let held = super::try_hold(&p, "collating").unwrap();
        match super::try_hold(&p, "another") {
            Err(super::LockError::Busy { holder, .. }) => assert!(
                holder.contains(&format!("pid {} collating", std::process::id())),
                "{holder}"
            ),
            other => panic!("expected busy, got {other:?}"),
        }
        assert!(super::holder(&p).is_some_and(|h| h.contains("collating")));
        drop(held);
        assert_eq!(super::holder(&p), None);
        assert!(super::try_hold(&p, "another").is_ok());
    }
}
