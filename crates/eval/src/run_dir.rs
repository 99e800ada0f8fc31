//! The layout of a run directory: where each file of a training run lives.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use shoal_rl_core::Result;

use crate::fsio::{atomic_write, create_dir_all, read_text};
use crate::lock::{LOCK_FILE, RunLock};

/// File name of the fully resolved configuration in a run directory.
pub const CONFIG_FILE: &str = "config.toml";
/// File name of the metrics log in a run directory.
pub const METRICS_FILE: &str = "metrics.jsonl";
/// File name of the end-of-run summary in a run directory.
pub const SUMMARY_FILE: &str = "summary.json";
/// Folder of numbered checkpoints in a run directory.
pub const CHECKPOINTS_DIR: &str = "checkpoints";
/// Folder of PNG learning curves in a run directory.
pub const PLOTS_DIR: &str = "plots";

/// A run directory:
///
/// ```text
/// <run>/config.toml      fully resolved configuration (written by the CLI)
/// <run>/metrics.jsonl    one JSON record per line (MetricsLog)
/// <run>/summary.json     Summary
/// <run>/checkpoints/     numbered checkpoints and a `latest` pointer
/// <run>/plots/           PNG learning curves (plot_runs)
/// <run>/run.lock         held by the process training here (RunLock)
/// ```
///
/// [`RunDir::lock`] claims the directory for one process; the claim travels
/// with clones of the `RunDir` and ends when the last one is dropped.
///
/// ```
/// use shoal_rl_eval::RunDir;
/// let run = RunDir::new("runs/worm-1");
/// assert!(run.metrics().ends_with("metrics.jsonl"));
/// assert!(run.checkpoints().ends_with("checkpoints"));
/// ```
#[derive(Clone, Debug)]
pub struct RunDir {
    root: PathBuf,
    lock: Option<Arc<RunLock>>,
}

impl PartialEq for RunDir {
    fn eq(&self, other: &Self) -> bool {
        self.root == other.root
    }
}

impl Eq for RunDir {}

impl RunDir {
    /// Names a run directory; nothing is created until [`RunDir::create`].
    pub fn new(root: impl Into<PathBuf>) -> Self {
        RunDir {
            root: root.into(),
            lock: None,
        }
    }

    /// Claims the (existing) directory for this process with an exclusive
    /// [`RunLock`] on `<run>/run.lock`, held until this `RunDir` and its
    /// clones are dropped. Another holder is an error naming it.
    pub fn lock(mut self) -> Result<Self> {
        if self.lock.is_none() {
            self.lock = Some(Arc::new(RunLock::acquire(&self.root)?));
        }
        Ok(self)
    }

    /// Whether this process holds the directory's lock through this value.
    pub fn is_locked(&self) -> bool {
        self.lock.is_some()
    }

    /// Creates the directory with its `checkpoints/` and `plots/` folders.
    pub fn create(&self) -> Result<()> {
        create_dir_all(&self.checkpoints())?;
        create_dir_all(&self.plots())
    }

    /// The run directory itself.
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// `<run>/config.toml`.
    pub fn config(&self) -> PathBuf {
        self.root.join(CONFIG_FILE)
    }

    /// `<run>/metrics.jsonl`.
    pub fn metrics(&self) -> PathBuf {
        self.root.join(METRICS_FILE)
    }

    /// `<run>/summary.json`.
    pub fn summary(&self) -> PathBuf {
        self.root.join(SUMMARY_FILE)
    }

    /// `<run>/checkpoints`.
    pub fn checkpoints(&self) -> PathBuf {
        self.root.join(CHECKPOINTS_DIR)
    }

    /// `<run>/plots`.
    pub fn plots(&self) -> PathBuf {
        self.root.join(PLOTS_DIR)
    }

    /// `<run>/run.lock`.
    pub fn lock_file(&self) -> PathBuf {
        self.root.join(LOCK_FILE)
    }

    /// Writes the resolved configuration atomically (creating the directory).
    pub fn write_config(&self, toml_text: &str) -> Result<()> {
        create_dir_all(&self.root)?;
        atomic_write(self.config(), toml_text.as_bytes())
    }

    /// Reads the resolved configuration text.
    pub fn read_config(&self) -> Result<String> {
        read_text(&self.config())
    }
}

impl AsRef<Path> for RunDir {
    fn as_ref(&self) -> &Path {
        &self.root
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsio::testutil::TempDir;

    #[test]
    fn create_makes_subfolders_and_config_round_trips() {
        let tmp = TempDir::new("rundir");
        let run = RunDir::new(tmp.path().join("run"));
        run.create().unwrap();
        assert!(run.checkpoints().is_dir());
        assert!(run.plots().is_dir());
        run.write_config("preset = \"worm-reinforce\"\n").unwrap();
        assert_eq!(run.read_config().unwrap(), "preset = \"worm-reinforce\"\n");
    }

    #[test]
    fn reading_missing_config_names_the_file() {
        let tmp = TempDir::new("rundir-missing");
        let err = RunDir::new(tmp.path()).read_config().unwrap_err();
        assert!(err.to_string().contains("config.toml"), "{err}");
    }
}
