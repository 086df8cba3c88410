//! One `schemaops apply` per data folder at a time: the objects file it
//! rewrites (`objects.json`) has no other arbiter. Registries on the same
//! folder need no lock (SQLite arbitrates between them and apply).
//!
//! The lock is an exclusive advisory lock (`flock`) on `apply.lock` in the
//! folder, which holds the holder's PID for the message a second apply
//! prints. The operating system releases it when the holder exits, however
//! it exits, so a killed apply leaves nothing to clean up.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

/// The lock file inside a data folder.
pub const FILE_NAME: &str = "apply.lock";

/// Why the folder could not be locked.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds the lock.
    #[error(
        "another `schemaops apply` ({holder}) is applying to the data folder {}; \
         run this one when it has finished",
        folder.display()
    )]
    Held {
        /// The data folder.
        folder: PathBuf,
        /// "PID 1234", or what is known of the holder.
        holder: String,
    },
    /// The lock file could not be created, read or locked.
    #[error("failed to lock the data folder with {}", path.display())]
    Io {
        /// The lock file.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
}

/// The held lock; released when dropped (or when the process ends).
#[derive(Debug)]
pub struct ApplyLock {
    _file: File,
}

impl ApplyLock {
    /// Takes the lock on `folder` (creating the folder when absent), or
    /// fails at once when another process holds it.
    ///
    /// # Errors
    /// [`LockError::Held`] naming the holder's PID; [`LockError::Io`].
    pub fn acquire(folder: &Path) -> Result<Self, LockError> {
        let path = folder.join(FILE_NAME);
        let io = |source| LockError::Io {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(folder).map_err(io)?;
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut text = String::new();
                let holder = match file.read_to_string(&mut text) {
                    Ok(_) if text.trim().parse::<u32>().is_ok() => format!("PID {}", text.trim()),
                    _ => "PID unknown".to_owned(),
                };
                return Err(LockError::Held {
                    folder: folder.to_owned(),
                    holder,
                });
            }
            Err(TryLockError::Error(source)) => return Err(io(source)),
        }
        file.set_len(0).map_err(io)?;
        file.rewind().map_err(io)?;
        write!(file, "{}", std::process::id()).map_err(io)?;
        Ok(Self { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_one_folder_names_the_first_holder_and_the_lock_frees_on_drop() {
        let folder = tempfile::tempdir().unwrap();
        let first = ApplyLock::acquire(folder.path()).unwrap();
        let error = ApplyLock::acquire(folder.path()).unwrap_err();
        assert!(
            error.to_string().contains(&format!("PID {}", std::process::id())),
            "{error}"
        );
        drop(first);
        ApplyLock::acquire(folder.path()).unwrap();
    }
}
