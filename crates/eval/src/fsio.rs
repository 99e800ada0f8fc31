//! Crash-safe file writing: write a temp file beside the target, fsync, rename.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use shoal_rl_core::{Error, Result};

/// Distinguishes temp files of concurrent writers within one process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Replaces the file at `path` with `bytes` so that a reader (or a crash at
/// any moment) sees either the old content or the new, never a mix.
///
/// The bytes go to a temp file in the same directory (so the rename cannot
/// cross file systems), which is flushed to disk before it is renamed over
/// `path`; the directory is then synced so the rename itself survives a power
/// cut. On failure the temp file is removed and `path` is untouched.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("shoal-doc-atomic-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("note.txt");
/// shoal_rl_eval::atomic_write(&path, b"hello").unwrap();
/// assert_eq!(std::fs::read(&path).unwrap(), b"hello");
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn atomic_write(path: impl AsRef<Path>, bytes: &[u8]) -> Result<()> {
    atomic_write_with(path.as_ref(), |file| file.write_all(bytes))
}

/// [`atomic_write`] with the content produced by `fill`, which may fail part
/// way (tests use that to simulate a crash mid-write).
pub(crate) fn atomic_write_with(
    path: &Path,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> Result<()> {
    let dir = parent_dir(path);
    let temp = temp_path_beside(path);
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        fill(&mut file)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&temp, path)
    })();
    if let Err(source) = result {
        // Best effort: the temp file may not exist if `open` failed.
        let _ = fs::remove_file(&temp);
        return Err(Error::io(format!("writing {}", path.display()), source));
    }
    sync_dir(&dir);
    Ok(())
}

/// A fresh, hidden path in the same directory as `path`.
fn temp_path_beside(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let unique = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    parent_dir(path).join(format!(".{name}.tmp.{}.{unique}", std::process::id()))
}

/// The directory holding `path` (`.` for a bare file name).
pub(crate) fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Flushes a directory entry table so renames in it are durable. Some file
/// systems refuse to sync directories; durability there is the OS's business,
/// so failures are ignored.
pub(crate) fn sync_dir(dir: &Path) {
    if let Ok(handle) = File::open(dir) {
        let _ = handle.sync_all();
    }
}

/// Reads a whole file, naming it in the error.
pub(crate) fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    fs::read(path).map_err(|e| Error::io(format!("reading {}", path.display()), e))
}

/// Reads a whole UTF-8 file, naming it in the error.
pub(crate) fn read_text(path: &Path) -> Result<String> {
    let bytes = read_bytes(path)?;
    String::from_utf8(bytes).map_err(|_| Error::file(path, "not valid UTF-8 text"))
}

/// Creates a directory and its parents, naming it in the error.
pub(crate) fn create_dir_all(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).map_err(|e| Error::io(format!("creating {}", dir.display()), e))
}

#[cfg(test)]
pub(crate) mod testutil {
    //! Throw-away directories for tests, removed on drop.
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicU64, Ordering};

    static NEXT: AtomicU64 = AtomicU64::new(0);

    /// A fresh empty directory under the system temp dir.
    pub struct TempDir(PathBuf);

    impl TempDir {
        pub fn new(label: &str) -> Self {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let path = std::env::temp_dir().join(format!(
                "shoal-rl-eval-test-{}-{label}-{n}",
                std::process::id()
            ));
            let _ = std::fs::remove_dir_all(&path);
            std::fs::create_dir_all(&path).unwrap();
            TempDir(path)
        }

        pub fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// The names in `dir`, sorted: what a test expects to be left there.
    pub fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::{TempDir, entries};
    use super::*;

    #[test]
    fn atomic_write_replaces_content() {
        let dir = TempDir::new("replace");
        let path = dir.path().join("a.json");
        atomic_write(&path, b"old").unwrap();
        atomic_write(&path, b"new content").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"new content");
        assert_eq!(entries(dir.path()), vec!["a.json"]);
    }

    #[test]
    fn failure_mid_write_leaves_old_content_and_no_temp_file() {
        let dir = TempDir::new("fail");
        let path = dir.path().join("summary.json");
        atomic_write(&path, b"{\"episodes\": 1}").unwrap();
        let err = atomic_write_with(&path, |file| {
            file.write_all(b"{\"episo")?;
            Err(io::Error::other("disk full (simulated)"))
        })
        .unwrap_err();
        assert!(err.to_string().contains("summary.json"), "{err}");
        assert!(err.to_string().contains("disk full"), "{err}");
        assert_eq!(fs::read(&path).unwrap(), b"{\"episodes\": 1}");
        assert_eq!(entries(dir.path()), vec!["summary.json"]);
    }

    #[test]
    fn write_into_missing_directory_is_an_io_error_naming_the_path() {
        let dir = TempDir::new("missing");
        let path = dir.path().join("no-such-dir").join("x.txt");
        let err = atomic_write(&path, b"x").unwrap_err();
        assert!(matches!(err, Error::Io { .. }));
        assert!(err.to_string().contains("x.txt"), "{err}");
    }
}
