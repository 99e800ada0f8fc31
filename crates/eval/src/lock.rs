//! Ownership of a run directory: an exclusive lock on `<run>/run.lock`,
//! held by the one process that trains in the directory.
//!
//! The lock is the operating system's advisory file lock (`flock` on Unix),
//! so it is released when the holder exits for any reason, SIGKILL included;
//! nothing stale is ever left to clean up. The file itself stays (deleting it
//! would let a late opener lock an orphaned inode while a newcomer locks a
//! fresh one); while the lock is held it names the holder — pid, host and
//! start time — so a refused second process can say who is in the way.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use shoal_rl_core::{Error, Result};

/// File name of the lock file in a run directory.
pub const LOCK_FILE: &str = "run.lock";

/// An exclusive claim on a run directory, released on drop (or when the
/// process ends).
///
/// ```
/// use shoal_rl_eval::RunLock;
/// let dir = std::env::temp_dir().join(format!("shoal-doc-lock-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let held = RunLock::acquire(&dir).unwrap();
/// let refused = RunLock::acquire(&dir).unwrap_err().to_string();
/// assert!(refused.contains("in use by another shoal process"), "{refused}");
/// assert!(refused.contains(&format!("pid {}", std::process::id())), "{refused}");
/// drop(held);
/// RunLock::acquire(&dir).unwrap();
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
#[derive(Debug)]
pub struct RunLock {
    file: File,
    path: PathBuf,
}

impl RunLock {
    /// Locks `<dir>/run.lock` (creating the file, not the directory) and
    /// writes this process's pid, host and start time into it. If another
    /// process holds it, the error names that holder and nothing is written.
    pub fn acquire(dir: impl AsRef<Path>) -> Result<Self> {
        let dir = dir.as_ref();
        let path = dir.join(LOCK_FILE);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                let holder = if holder.is_empty() {
                    "a process that is just starting".to_string()
                } else {
                    holder.to_string()
                };
                return Err(Error::file(
                    dir,
                    format!(
                        "run directory is in use by another shoal process ({holder}); \
                         wait for it to finish, or choose another directory"
                    ),
                ));
            }
            Err(TryLockError::Error(e)) => {
                return Err(Error::io(format!("locking {}", path.display()), e));
            }
        }
        let holder = format!(
            "pid {} on host {}, started {}\n",
            std::process::id(),
            host_name(),
            utc_now()
        );
        let written = file
            .set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)))
            .and_then(|_| file.write_all(holder.as_bytes()))
            .and_then(|()| file.sync_data());
        written.map_err(|e| Error::io(format!("writing {}", path.display()), e))?;
        Ok(RunLock { file, path })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for RunLock {
    fn drop(&mut self) {
        // Forget the holder while still holding the lock, so a finished run
        // leaves an empty file rather than the name of a process long gone.
        let _ = self.file.set_len(0);
        let _ = self.file.unlock();
    }
}

/// This machine's name, for telling holders on a shared file system apart.
fn host_name() -> String {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown".into())
}

/// The current time as `YYYY-MM-DD HH:MM:SS UTC`.
fn utc_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days as i64);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Gregorian date of a day count since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsio::testutil::TempDir;

    #[test]
    fn dates_match_known_days() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        // 2000-02-29: 10 957 days to 2000-01-01, plus 59.
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
    }

    #[test]
    fn second_lock_is_refused_naming_the_holder_and_leaves_the_file() {
        let dir = TempDir::new("lock");
        let held = RunLock::acquire(dir.path()).unwrap();
        let before = std::fs::read(held.path()).unwrap();
        let text = String::from_utf8(before.clone()).unwrap();
        assert!(
            text.starts_with(&format!("pid {} on host ", std::process::id())),
            "{text}"
        );
        let err = RunLock::acquire(dir.path()).unwrap_err().to_string();
        assert!(err.contains(text.trim()), "{err}");
        assert_eq!(std::fs::read(held.path()).unwrap(), before);
        let path = held.path().to_path_buf();
        drop(held);
        assert_eq!(std::fs::read(&path).unwrap(), b"");
        let again = RunLock::acquire(dir.path()).unwrap();
        assert!(!std::fs::read(again.path()).unwrap().is_empty());
    }
}
