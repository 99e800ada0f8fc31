//! Checkpoints: numbered, checksummed, atomically committed snapshots of a run.
//!
//! ```text
//! <run>/checkpoints/latest                 "ckpt-000007\n": the checkpoint to resume from
//! <run>/checkpoints/ckpt-000007/meta.json  CheckpointMeta: progress, lengths and CRC-32s
//! <run>/checkpoints/ckpt-000007/config.toml the resolved config the run was started with
//! <run>/checkpoints/ckpt-000007/learner.bin one file per named blob; "worker-1/replay"
//! <run>/checkpoints/ckpt-000007/worker-1/replay.bin   lives in a subfolder
//! <run>/checkpoints/best                   "best-000004\n": the best-evaluated model
//! <run>/checkpoints/best-000004/…          its learner state (no replay memory)
//! ```
//!
//! A commit writes the whole new checkpoint under a temp name, syncs it,
//! renames it into place, then atomically rewrites `latest`, then prunes all
//! but the newest few. A crash at any point leaves `latest` naming a complete
//! checkpoint (or absent if none was ever completed). Loading verifies every
//! file's length and checksum, so a damaged checkpoint is an error naming the
//! file rather than a silently wrong agent. One process (rank 0) writes a
//! run's checkpoints. The best-evaluated model ([`CheckpointWriter::commit_best`])
//! is a series of its own, of which only the newest is kept, so pruning the
//! numbered checkpoints never removes it.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use shoal_rl_core::{Error, Result};

use crate::fsio::{atomic_write, create_dir_all, read_bytes, sync_dir};
use crate::run_dir::CHECKPOINTS_DIR;

/// Version of the on-disk checkpoint layout written by this crate.
pub const CHECKPOINT_FORMAT_VERSION: u32 = 1;

/// Name of the pointer file inside `checkpoints/`.
const LATEST_FILE: &str = "latest";
const META_FILE: &str = "meta.json";
const CONFIG_FILE: &str = "config.toml";
const BLOB_EXTENSION: &str = ".bin";
const DIR_PREFIX: &str = "ckpt-";

/// A series of checkpoint folders `<prefix>NNNNNN` and the pointer file
/// naming the current one.
struct Series {
    prefix: &'static str,
    pointer: &'static str,
}

/// The checkpoints a run resumes from.
const NUMBERED: Series = Series {
    prefix: DIR_PREFIX,
    pointer: LATEST_FILE,
};
/// The best-evaluated model.
const BEST: Series = Series {
    prefix: "best-",
    pointer: "best",
};
const TEMP_PREFIX: &str = ".tmp-";
/// Checkpoints kept after a commit unless [`CheckpointWriter::keep`] says otherwise.
const DEFAULT_KEEP: usize = 2;

/// How far training had got when a checkpoint was taken.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    /// Training episodes finished.
    pub episodes: u64,
    /// Training environment steps taken.
    pub env_steps: u64,
    /// Training wall time so far, in seconds.
    pub wall_s: f64,
    /// Strategy iterations finished (0 for strategies without iterations).
    pub iteration: u64,
    /// The run's base seed.
    pub seed: u64,
}

/// Length and CRC-32 of one stored file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileCheck {
    /// Length in bytes.
    pub len: u64,
    /// CRC-32 (IEEE) of the bytes.
    pub crc32: u32,
}

impl FileCheck {
    fn of(bytes: &[u8]) -> Self {
        FileCheck {
            len: bytes.len() as u64,
            crc32: crc32fast::hash(bytes),
        }
    }
}

/// Contents of a checkpoint's `meta.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckpointMeta {
    /// Layout version ([`CHECKPOINT_FORMAT_VERSION`] when written).
    pub format_version: u32,
    /// Training progress at the time of the checkpoint.
    #[serde(flatten)]
    pub progress: Progress,
    /// Check of `config.toml`.
    pub config: FileCheck,
    /// Check of every blob, by name.
    pub blobs: BTreeMap<String, FileCheck>,
    /// Caller-defined values (best score so far, strategy state, …).
    #[serde(default)]
    pub extra: BTreeMap<String, Value>,
}

/// Builds and commits one checkpoint.
///
/// ```
/// use shoal_rl_eval::{CheckpointWriter, Progress, load_latest};
/// let run = std::env::temp_dir().join(format!("shoal-doc-ckpt-{}", std::process::id()));
/// let progress = Progress { episodes: 40, env_steps: 2000, wall_s: 9.5, iteration: 4, seed: 7 };
/// CheckpointWriter::new(&run, "seed = 7\n", progress)
///     .blob("learner", vec![1u8, 2, 3])
///     .blob("worker-1/replay", &[9u8; 16][..])
///     .commit()
///     .unwrap();
/// let checkpoint = load_latest(&run).unwrap();
/// assert_eq!(checkpoint.progress().episodes, 40);
/// assert_eq!(checkpoint.blob("learner").unwrap(), &[1, 2, 3]);
/// assert!(checkpoint.blob("replay").is_err());
/// # std::fs::remove_dir_all(&run).unwrap();
/// ```
#[derive(Debug)]
#[must_use = "a checkpoint is written only by `commit`"]
pub struct CheckpointWriter<'a> {
    run_dir: PathBuf,
    config: String,
    progress: Progress,
    blobs: Vec<(String, Cow<'a, [u8]>)>,
    extra: BTreeMap<String, Value>,
    keep: usize,
    /// First problem met while building; reported by `commit`.
    invalid: Option<String>,
}

impl<'a> CheckpointWriter<'a> {
    /// Starts a checkpoint of the run in `run_dir`, storing the resolved
    /// config text next to the state.
    pub fn new(run_dir: impl AsRef<Path>, config_toml: &str, progress: Progress) -> Self {
        CheckpointWriter {
            run_dir: run_dir.as_ref().to_path_buf(),
            config: config_toml.to_string(),
            progress,
            blobs: Vec::new(),
            extra: BTreeMap::new(),
            keep: DEFAULT_KEEP,
            invalid: None,
        }
    }

    /// Adds a named state blob (`"learner"`, `"replay"`, `"worker-1/replay"`).
    /// Names are `/`-separated parts of ASCII letters, digits, `-`, `_` and
    /// `.` (not `.` or `..`); a bad or repeated name makes `commit` fail.
    pub fn blob(mut self, name: &str, bytes: impl Into<Cow<'a, [u8]>>) -> Self {
        if self.invalid.is_none() {
            if let Err(reason) = validate_blob_name(name) {
                self.invalid = Some(reason);
            } else if self.blobs.iter().any(|(n, _)| n == name) {
                self.invalid = Some(format!("blob \"{name}\" is added twice"));
            }
        }
        self.blobs.push((name.to_string(), bytes.into()));
        self
    }

    /// Stores a caller-defined JSON value in the meta file.
    pub fn extra(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.extra.insert(key.into(), value.into());
        self
    }

    /// How many checkpoints to keep after committing (default 2, at least 1).
    pub fn keep(mut self, count: usize) -> Self {
        self.keep = count.max(1);
        self
    }

    /// Writes the checkpoint, points `latest` at it and prunes older ones.
    /// Returns the new checkpoint's directory. On error, `latest` and every
    /// existing checkpoint are unchanged.
    pub fn commit(self) -> Result<PathBuf> {
        self.commit_to(&NUMBERED)
    }

    /// Writes the checkpoint as the run's best model: `checkpoints/best`
    /// points at it and the previous best is removed. The numbered
    /// checkpoints and `latest` are untouched. Returns its directory.
    pub fn commit_best(self) -> Result<PathBuf> {
        self.keep(1).commit_to(&BEST)
    }

    fn commit_to(self, series: &Series) -> Result<PathBuf> {
        let checkpoints = self.run_dir.join(CHECKPOINTS_DIR);
        if let Some(reason) = &self.invalid {
            return Err(Error::file(
                &checkpoints,
                format!("cannot write checkpoint: {reason}"),
            ));
        }
        create_dir_all(&checkpoints)?;
        let number = numbered_dirs(&checkpoints, series)?
            .last()
            .map_or(1, |(n, _)| n + 1);
        let name = format!("{}{number:06}", series.prefix);
        let temp = checkpoints.join(format!("{TEMP_PREFIX}{name}-{}", std::process::id()));
        let final_dir = checkpoints.join(&name);

        if let Err(error) = self.write_files(&temp) {
            let _ = fs::remove_dir_all(&temp);
            return Err(error);
        }
        if let Err(source) = fs::rename(&temp, &final_dir) {
            let _ = fs::remove_dir_all(&temp);
            return Err(Error::io(
                format!("renaming checkpoint into {}", final_dir.display()),
                source,
            ));
        }
        sync_dir(&checkpoints);
        atomic_write(
            checkpoints.join(series.pointer),
            format!("{name}\n").as_bytes(),
        )?;
        // Pruning is housekeeping: the checkpoint is already committed, so a
        // failure to delete an old one must not be reported as a failed save.
        prune(&checkpoints, series, self.keep);
        Ok(final_dir)
    }

    /// Writes every file of the checkpoint into `dir`, synced to disk.
    fn write_files(&self, dir: &Path) -> Result<()> {
        let _ = fs::remove_dir_all(dir);
        create_dir_all(dir)?;
        let mut dirs_written = vec![dir.to_path_buf()];
        let mut blobs = BTreeMap::new();
        for (name, bytes) in &self.blobs {
            let path = dir.join(format!("{name}{BLOB_EXTENSION}"));
            let parent = path.parent().unwrap_or(dir).to_path_buf();
            if !dirs_written.contains(&parent) {
                create_dir_all(&parent)?;
                dirs_written.push(parent);
            }
            write_synced(&path, bytes)?;
            blobs.insert(name.clone(), FileCheck::of(bytes));
        }
        write_synced(&dir.join(CONFIG_FILE), self.config.as_bytes())?;
        let meta = CheckpointMeta {
            format_version: CHECKPOINT_FORMAT_VERSION,
            progress: self.progress.clone(),
            config: FileCheck::of(self.config.as_bytes()),
            blobs,
            extra: self.extra.clone(),
        };
        let meta_path = dir.join(META_FILE);
        let mut meta_text = serde_json::to_vec_pretty(&meta).map_err(|e| {
            Error::file(&meta_path, format!("cannot serialise checkpoint meta: {e}"))
        })?;
        meta_text.push(b'\n');
        write_synced(&meta_path, &meta_text)?;
        // Deepest first, so each folder's entry is durable before its parent's.
        for written in dirs_written.iter().rev() {
            sync_dir(written);
        }
        Ok(())
    }
}

/// A loaded, verified checkpoint.
#[derive(Clone, Debug)]
pub struct Checkpoint {
    dir: PathBuf,
    meta: CheckpointMeta,
    config: String,
    blobs: BTreeMap<String, Vec<u8>>,
}

impl Checkpoint {
    /// Loads the checkpoint stored in `dir` (one `ckpt-NNNNNN` folder),
    /// verifying the length and CRC-32 of every file.
    pub fn load(dir: impl AsRef<Path>) -> Result<Self> {
        Self::load_filtered(dir.as_ref(), &|_| true)
    }

    /// Loads only the named blobs (and the config), verifying just those:
    /// what an evaluation needs from a checkpoint whose replay memory is
    /// damaged or was deleted to save space. Names the checkpoint lacks are
    /// an error when asked for with [`Checkpoint::blob`], not here.
    pub fn load_only(dir: impl AsRef<Path>, names: &[&str]) -> Result<Self> {
        Self::load_filtered(dir.as_ref(), &|name| names.contains(&name))
    }

    fn load_filtered(dir: &Path, wanted: &dyn Fn(&str) -> bool) -> Result<Self> {
        let dir = dir.to_path_buf();
        let meta_path = dir.join(META_FILE);
        let meta: CheckpointMeta = serde_json::from_slice(&read_bytes(&meta_path)?)
            .map_err(|e| Error::file(&meta_path, format!("not valid checkpoint meta: {e}")))?;
        if meta.format_version > CHECKPOINT_FORMAT_VERSION {
            return Err(Error::file(
                &meta_path,
                format!(
                    "checkpoint format version {} is newer than this build understands ({})",
                    meta.format_version, CHECKPOINT_FORMAT_VERSION
                ),
            ));
        }
        let config_bytes = read_verified(&dir.join(CONFIG_FILE), meta.config)?;
        let config = String::from_utf8(config_bytes)
            .map_err(|_| Error::file(dir.join(CONFIG_FILE), "not valid UTF-8 text"))?;
        let mut blobs = BTreeMap::new();
        for (name, check) in &meta.blobs {
            validate_blob_name(name).map_err(|reason| Error::file(&meta_path, reason))?;
            if !wanted(name) {
                continue;
            }
            let path = dir.join(format!("{name}{BLOB_EXTENSION}"));
            blobs.insert(name.clone(), read_verified(&path, *check)?);
        }
        Ok(Checkpoint {
            dir,
            meta,
            config,
            blobs,
        })
    }

    /// The checkpoint's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Everything in `meta.json`.
    pub fn meta(&self) -> &CheckpointMeta {
        &self.meta
    }

    /// Training progress when the checkpoint was taken.
    pub fn progress(&self) -> &Progress {
        &self.meta.progress
    }

    /// The resolved config text the run was started with.
    pub fn config(&self) -> &str {
        &self.config
    }

    /// The bytes of a named blob; an error lists the blobs that exist.
    pub fn blob(&self, name: &str) -> Result<&[u8]> {
        self.blobs
            .get(name)
            .map(Vec::as_slice)
            .ok_or_else(|| self.missing_blob(name))
    }

    /// Moves a named blob out (avoids copying a large replay buffer).
    pub fn take_blob(&mut self, name: &str) -> Result<Vec<u8>> {
        self.blobs
            .remove(name)
            .ok_or_else(|| self.missing_blob(name))
    }

    /// Names of the blobs still held, sorted.
    pub fn blob_names(&self) -> impl Iterator<Item = &str> {
        self.blobs.keys().map(String::as_str)
    }

    fn missing_blob(&self, name: &str) -> Error {
        let names: Vec<&str> = self.blob_names().collect();
        Error::file(
            &self.dir,
            format!(
                "checkpoint has no blob \"{name}\" (it has: {})",
                names.join(", ")
            ),
        )
    }
}

/// Which checkpoint of a run to load: what `--checkpoint` accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckpointSelector {
    /// The one `checkpoints/latest` points to.
    Latest,
    /// The best-evaluated model, which `checkpoints/best` points to.
    Best,
    /// `checkpoints/ckpt-NNNNNN` by its number.
    Number(u64),
    /// A checkpoint folder given by path.
    Dir(PathBuf),
}

impl CheckpointSelector {
    /// `latest`, `best`, a number (`3`), a folder name (`ckpt-000003`) or a path.
    ///
    /// ```
    /// use shoal_rl_eval::CheckpointSelector as S;
    /// assert_eq!(S::parse("latest"), S::Latest);
    /// assert_eq!(S::parse("best"), S::Best);
    /// assert_eq!(S::parse("3"), S::Number(3));
    /// assert_eq!(S::parse("ckpt-000003"), S::Number(3));
    /// assert_eq!(S::parse("runs/a/checkpoints/ckpt-000003"), S::Dir("runs/a/checkpoints/ckpt-000003".into()));
    /// ```
    pub fn parse(text: &str) -> Self {
        let text = text.trim();
        if text == LATEST_FILE {
            CheckpointSelector::Latest
        } else if text == BEST.pointer {
            CheckpointSelector::Best
        } else if let Some(n) = text.parse::<u64>().ok().or_else(|| parse_dir_number(text)) {
            CheckpointSelector::Number(n)
        } else {
            CheckpointSelector::Dir(PathBuf::from(text))
        }
    }
}

/// Loads the checkpoint `<run>/checkpoints/latest` points to, verified.
///
/// A missing pointer, a pointer to nothing, or a corrupt or truncated file is
/// an [`Error::File`] naming the file at fault and, when an older checkpoint
/// loads, naming the newest intact one and how to select it
/// (`--checkpoint N`, see [`CheckpointSelector`]). Nothing on disk is
/// changed.
pub fn load_latest(run_dir: impl AsRef<Path>) -> Result<Checkpoint> {
    load_checkpoint(run_dir, &CheckpointSelector::Latest, None)
}

/// Loads the selected checkpoint of a run, verified: every blob, or with
/// `only` just those blobs (see [`Checkpoint::load_only`]). Errors as
/// [`load_latest`]'s; a number that does not exist lists the ones that do.
pub fn load_checkpoint(
    run_dir: impl AsRef<Path>,
    which: &CheckpointSelector,
    only: Option<&[&str]>,
) -> Result<Checkpoint> {
    let load = |dir: &Path| match only {
        Some(names) => Checkpoint::load_only(dir, names),
        None => Checkpoint::load(dir),
    };
    let checkpoints = run_dir.as_ref().join(CHECKPOINTS_DIR);
    let dir = match which {
        CheckpointSelector::Dir(dir) => return load(dir),
        CheckpointSelector::Number(n) => {
            let dir = checkpoints.join(format!("{DIR_PREFIX}{n:06}"));
            if !dir.is_dir() {
                let numbers: Vec<String> = list_checkpoints(run_dir.as_ref())?
                    .iter()
                    .filter_map(|d| d.file_name()?.to_str().and_then(parse_dir_number))
                    .map(|n| n.to_string())
                    .collect();
                let have = if numbers.is_empty() {
                    "none".to_string()
                } else {
                    numbers.join(", ")
                };
                return Err(Error::file(
                    &checkpoints,
                    format!("has no checkpoint {n} (checkpoints: {have})"),
                ));
            }
            return load(&dir);
        }
        CheckpointSelector::Latest => match current_dir(&checkpoints, &NUMBERED) {
            Ok(dir) => dir,
            Err(error) => return Err(with_intact_hint(error, &checkpoints, None, &load)),
        },
        CheckpointSelector::Best => return load(&current_dir(&checkpoints, &BEST)?),
    };
    load(&dir).map_err(|error| with_intact_hint(error, &checkpoints, Some(&dir), &load))
}

/// The folder the series' pointer (`checkpoints/latest`, `checkpoints/best`)
/// names, checked to exist.
fn current_dir(checkpoints: &Path, series: &Series) -> Result<PathBuf> {
    if !checkpoints.is_dir() {
        return Err(Error::file(
            checkpoints,
            "no checkpoints: this run directory has never saved one",
        ));
    }
    let pointer = checkpoints.join(series.pointer);
    if !pointer.exists() {
        let what = match series.pointer {
            LATEST_FILE => "checkpoint pointer is missing",
            _ => "is missing: no evaluation of this run has been kept as its best",
        };
        return Err(Error::file(&pointer, what));
    }
    let name = crate::fsio::read_text(&pointer)?.trim().to_string();
    if parse_series_number(&name, series).is_none() {
        return Err(Error::file(
            &pointer,
            format!("does not name a checkpoint folder: {name:?}"),
        ));
    }
    let dir = checkpoints.join(&name);
    if !dir.is_dir() {
        return Err(Error::file(
            &pointer,
            format!("points to {name}, which does not exist"),
        ));
    }
    Ok(dir)
}

/// Adds to a file error the newest checkpoint other than `failed` that
/// loads, and the selector that picks it.
fn with_intact_hint(
    error: Error,
    checkpoints: &Path,
    failed: Option<&Path>,
    load: &dyn Fn(&Path) -> Result<Checkpoint>,
) -> Error {
    let Error::File { path, reason } = error else {
        return error;
    };
    let dirs = if checkpoints.is_dir() {
        numbered_dirs(checkpoints, &NUMBERED).unwrap_or_default()
    } else {
        Vec::new()
    };
    let intact = dirs
        .iter()
        .rev()
        .filter(|(_, dir)| Some(dir.as_path()) != failed)
        .find(|(_, dir)| load(dir).is_ok());
    let reason = match intact {
        Some((n, dir)) => format!(
            "{reason}; the newest intact checkpoint is {} (select it with --checkpoint {n})",
            dir.display()
        ),
        None if !dirs.is_empty() => format!("{reason}; no other checkpoint is intact"),
        None => reason,
    };
    Error::File { path, reason }
}

/// The complete checkpoint folders of a run, oldest first.
pub fn list_checkpoints(run_dir: impl AsRef<Path>) -> Result<Vec<PathBuf>> {
    let checkpoints = run_dir.as_ref().join(CHECKPOINTS_DIR);
    if !checkpoints.is_dir() {
        return Ok(Vec::new());
    }
    Ok(numbered_dirs(&checkpoints, &NUMBERED)?
        .into_iter()
        .map(|(_, dir)| dir)
        .collect())
}

/// `ckpt-NNNNNN` folders in `checkpoints`, sorted by number.
fn numbered_dirs(checkpoints: &Path, series: &Series) -> Result<Vec<(u64, PathBuf)>> {
    let entries = fs::read_dir(checkpoints)
        .map_err(|e| Error::io(format!("listing {}", checkpoints.display()), e))?;
    let mut dirs = Vec::new();
    for entry in entries {
        let entry =
            entry.map_err(|e| Error::io(format!("listing {}", checkpoints.display()), e))?;
        let name = entry.file_name();
        if let Some(number) = name.to_str().and_then(|n| parse_series_number(n, series))
            && entry.path().is_dir()
        {
            dirs.push((number, entry.path()));
        }
    }
    dirs.sort();
    Ok(dirs)
}

fn parse_dir_number(name: &str) -> Option<u64> {
    parse_series_number(name, &NUMBERED)
}

fn parse_series_number(name: &str, series: &Series) -> Option<u64> {
    let digits = name.strip_prefix(series.prefix)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Removes all but the newest `keep` checkpoints and this process's
/// leftovers of failed commits.
fn prune(checkpoints: &Path, series: &Series, keep: usize) {
    if let Ok(dirs) = numbered_dirs(checkpoints, series) {
        let excess = dirs.len().saturating_sub(keep);
        for (_, dir) in &dirs[..excess] {
            let _ = fs::remove_dir_all(dir);
        }
    }
    // Only this process's leftovers: another process's temp folder may be a
    // commit in progress (the run lock keeps shoal itself out, but not
    // every writer takes it).
    let own_suffix = format!("-{}", std::process::id());
    if let Ok(entries) = fs::read_dir(checkpoints) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with(TEMP_PREFIX) && name.ends_with(&own_suffix) {
                let _ = fs::remove_dir_all(entry.path());
            }
        }
    }
    sync_dir(checkpoints);
}

fn validate_blob_name(name: &str) -> std::result::Result<(), String> {
    let part_ok = |part: &str| {
        !part.is_empty()
            && part != "."
            && part != ".."
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    if name.split('/').all(part_ok) {
        Ok(())
    } else {
        Err(format!(
            "invalid blob name {name:?}: use /-separated parts of letters, digits, '-', '_' and '.'"
        ))
    }
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    let result = fs::File::create(path).and_then(|mut file| {
        file.write_all(bytes)?;
        file.sync_all()
    });
    result.map_err(|e| Error::io(format!("writing {}", path.display()), e))
}

/// Reads a file and checks it against its recorded length and CRC-32.
fn read_verified(path: &Path, check: FileCheck) -> Result<Vec<u8>> {
    if !path.exists() {
        return Err(Error::file(path, "missing from the checkpoint"));
    }
    let bytes = read_bytes(path)?;
    if bytes.len() as u64 != check.len {
        return Err(Error::file(
            path,
            format!(
                "truncated or damaged: {} bytes where the checkpoint recorded {}",
                bytes.len(),
                check.len
            ),
        ));
    }
    let crc32 = crc32fast::hash(&bytes);
    if crc32 != check.crc32 {
        return Err(Error::file(
            path,
            format!(
                "corrupt: CRC-32 {crc32:08x} does not match the recorded {:08x}",
                check.crc32
            ),
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsio::testutil::TempDir;

    const CONFIG: &str = "preset = \"worm-reinforce\"\nseed = 1\n";

    fn progress(episodes: u64) -> Progress {
        Progress {
            episodes,
            env_steps: episodes * 1000,
            wall_s: episodes as f64,
            iteration: 0,
            seed: 1,
        }
    }

    fn commit(run: &Path, episodes: u64, learner: &[u8]) -> PathBuf {
        CheckpointWriter::new(run, CONFIG, progress(episodes))
            .blob("learner", learner)
            .blob("replay", vec![episodes as u8; 100])
            .commit()
            .unwrap()
    }

    fn listing(run: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(run.join(CHECKPOINTS_DIR))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    fn snapshot(run: &Path) -> Vec<(PathBuf, Vec<u8>)> {
        fn walk(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
            for entry in fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    walk(&path, out);
                } else {
                    out.push((path.clone(), fs::read(&path).unwrap()));
                }
            }
        }
        let mut files = Vec::new();
        walk(run, &mut files);
        files.sort();
        files
    }

    #[test]
    fn round_trip_keeps_blobs_config_progress_and_extra() {
        let dir = TempDir::new("ckpt-roundtrip");
        let written = CheckpointWriter::new(dir.path(), CONFIG, progress(7))
            .blob("learner", vec![1, 2, 3, 4])
            .blob("worker-1/replay", vec![5; 1000])
            .blob("empty", Vec::new())
            .extra("best_return", 12.5)
            .commit()
            .unwrap();
        let checkpoint = load_latest(dir.path()).unwrap();
        assert_eq!(checkpoint.dir(), written);
        assert_eq!(checkpoint.progress(), &progress(7));
        assert_eq!(checkpoint.config(), CONFIG);
        assert_eq!(checkpoint.blob("learner").unwrap(), &[1, 2, 3, 4]);
        assert_eq!(checkpoint.blob("worker-1/replay").unwrap(), &[5; 1000][..]);
        assert_eq!(checkpoint.blob("empty").unwrap(), &[] as &[u8]);
        assert_eq!(checkpoint.meta().extra["best_return"], 12.5);
        assert_eq!(checkpoint.meta().format_version, CHECKPOINT_FORMAT_VERSION);
        let names: Vec<&str> = checkpoint.blob_names().collect();
        assert_eq!(names, vec!["empty", "learner", "worker-1/replay"]);
    }

    #[test]
    fn the_best_model_is_a_series_of_its_own_that_pruning_never_touches() {
        let dir = TempDir::new("ckpt-best");
        let best = |n: u8| {
            CheckpointWriter::new(dir.path(), CONFIG, progress(u64::from(n)))
                .blob("learner", vec![n; 4])
                .extra("score", f64::from(n))
                .commit_best()
                .unwrap()
        };
        commit(dir.path(), 1, b"one");
        let none = load_checkpoint(dir.path(), &CheckpointSelector::Best, None).unwrap_err();
        assert!(none.to_string().contains("no evaluation"), "{none}");
        let first = best(3);
        // Numbered checkpoints come and go around it.
        for n in 2..6 {
            commit(dir.path(), n, b"later");
        }
        let kept = load_checkpoint(dir.path(), &CheckpointSelector::Best, None).unwrap();
        assert_eq!(
            (kept.dir(), kept.blob("learner").unwrap()),
            (first.as_path(), &[3u8; 4][..])
        );
        assert_eq!(load_latest(dir.path()).unwrap().progress().episodes, 5);
        assert_eq!(list_checkpoints(dir.path()).unwrap().len(), 2);
        // A better model replaces it; only one best folder remains.
        let second = best(4);
        assert!(!first.exists() && second.exists());
        let kept = load_checkpoint(dir.path(), &CheckpointSelector::Best, None).unwrap();
        assert_eq!(kept.meta().extra["score"], 4.0);
        assert_eq!(load_latest(dir.path()).unwrap().progress().episodes, 5);
    }

    #[test]
    fn missing_blob_error_lists_available_blobs() {
        let dir = TempDir::new("ckpt-missing-blob");
        commit(dir.path(), 1, b"state");
        let mut checkpoint = load_latest(dir.path()).unwrap();
        let message = checkpoint.blob("critic").unwrap_err().to_string();
        assert!(
            message.contains("\"critic\"") && message.contains("learner, replay"),
            "{message}"
        );
        assert_eq!(checkpoint.take_blob("replay").unwrap(), vec![1; 100]);
        assert!(checkpoint.blob("replay").is_err());
    }

    #[test]
    fn commits_keep_the_last_two_and_latest_is_newest() {
        let dir = TempDir::new("ckpt-prune");
        for episodes in 1..=4 {
            commit(dir.path(), episodes, &[episodes as u8]);
        }
        assert_eq!(
            listing(dir.path()),
            vec!["ckpt-000003", "ckpt-000004", "latest"]
        );
        assert_eq!(load_latest(dir.path()).unwrap().progress().episodes, 4);
        assert_eq!(list_checkpoints(dir.path()).unwrap().len(), 2);
    }

    #[test]
    fn keep_setting_is_honoured_and_only_own_temp_dirs_are_pruned() {
        let dir = TempDir::new("ckpt-keep");
        commit(dir.path(), 1, b"a");
        let checkpoints = dir.path().join(CHECKPOINTS_DIR);
        let own = format!(".tmp-ckpt-000009-{}", std::process::id());
        // Another process's commit in progress (pid 1 is never a test run).
        let other = ".tmp-ckpt-000009-1";
        fs::create_dir_all(checkpoints.join(&own)).unwrap();
        fs::create_dir_all(checkpoints.join(other).join("worker-1")).unwrap();
        fs::write(checkpoints.join(other).join("learner.bin"), b"half").unwrap();
        CheckpointWriter::new(dir.path(), CONFIG, progress(2))
            .blob("learner", &b"b"[..])
            .keep(1)
            .commit()
            .unwrap();
        assert_eq!(
            listing(dir.path()),
            vec![".tmp-ckpt-000009-1", "ckpt-000002", "latest"]
        );
        assert_eq!(
            fs::read(checkpoints.join(other).join("learner.bin")).unwrap(),
            b"half"
        );
    }

    #[test]
    fn checkpoints_are_selected_by_number_name_or_path() {
        let dir = TempDir::new("ckpt-select");
        commit(dir.path(), 1, b"one");
        let second = commit(dir.path(), 2, b"two");
        let load = |which: &str| {
            load_checkpoint(dir.path(), &CheckpointSelector::parse(which), None)
                .map(|c| c.blob("learner").unwrap().to_vec())
        };
        assert_eq!(load("1").unwrap(), b"one");
        assert_eq!(load("ckpt-000001").unwrap(), b"one");
        assert_eq!(load("latest").unwrap(), b"two");
        assert_eq!(load(second.to_str().unwrap()).unwrap(), b"two");
        let message = load("7").unwrap_err().to_string();
        assert!(
            message.contains("has no checkpoint 7 (checkpoints: 1, 2)"),
            "{message}"
        );
    }

    #[test]
    fn damaged_latest_names_the_newest_intact_checkpoint_and_its_selector() {
        let dir = TempDir::new("ckpt-intact");
        commit(dir.path(), 1, b"one");
        let second = commit(dir.path(), 2, b"two");
        let third = CheckpointWriter::new(dir.path(), CONFIG, progress(3))
            .blob("learner", &b"three"[..])
            .blob("replay", vec![3u8; 100])
            .keep(3)
            .commit()
            .unwrap();
        fs::write(third.join("learner.bin"), b"thr3e").unwrap();
        let message = load_latest(dir.path()).unwrap_err().to_string();
        assert!(
            message.contains("ckpt-000003/learner.bin: corrupt"),
            "{message}"
        );
        assert!(
            message.contains(&format!(
                "the newest intact checkpoint is {} (select it with --checkpoint 2)",
                second.display()
            )),
            "{message}"
        );
        // Damage the second too: the hint moves on to the first.
        fs::remove_file(second.join("replay.bin")).unwrap();
        let message = load_latest(dir.path()).unwrap_err().to_string();
        assert!(message.contains("--checkpoint 1)"), "{message}");
    }

    #[test]
    fn load_only_ignores_damage_to_blobs_it_was_not_asked_for() {
        let dir = TempDir::new("ckpt-only");
        let newest = commit(dir.path(), 1, b"state");
        fs::remove_file(newest.join("replay.bin")).unwrap();
        assert!(load_latest(dir.path()).is_err());
        let only =
            load_checkpoint(dir.path(), &CheckpointSelector::Latest, Some(&["learner"])).unwrap();
        assert_eq!(only.blob("learner").unwrap(), b"state");
        let message = only.blob("replay").unwrap_err().to_string();
        assert!(message.contains("no blob \"replay\""), "{message}");
    }

    #[test]
    fn flipped_byte_is_a_checksum_error_and_previous_checkpoint_still_loads() {
        let dir = TempDir::new("ckpt-corrupt");
        let previous = commit(dir.path(), 1, b"first learner state");
        let newest = commit(dir.path(), 2, b"second learner state");
        let state = newest.join("learner.bin");
        let mut bytes = fs::read(&state).unwrap();
        bytes[3] ^= 0x40;
        fs::write(&state, &bytes).unwrap();
        let before = snapshot(dir.path());

        let err = load_latest(dir.path()).unwrap_err();
        let message = err.to_string();
        let Error::File { path, .. } = &err else {
            panic!("expected a file error, got {err}")
        };
        assert_eq!(path, &state);
        assert!(
            message.contains("corrupt") && message.contains("CRC-32"),
            "{message}"
        );
        assert!(message.contains("ckpt-000001"), "{message}");
        assert_eq!(
            snapshot(dir.path()),
            before,
            "loading must not change anything"
        );

        let older = Checkpoint::load(&previous).unwrap();
        assert_eq!(older.blob("learner").unwrap(), b"first learner state");
    }

    #[test]
    fn truncated_state_is_a_length_error() {
        let dir = TempDir::new("ckpt-truncated");
        commit(dir.path(), 1, b"first");
        let newest = commit(dir.path(), 2, b"a longer learner state");
        let state = newest.join("replay.bin");
        fs::write(&state, vec![2u8; 40]).unwrap();
        let message = load_latest(dir.path()).unwrap_err().to_string();
        assert!(message.contains("replay.bin"), "{message}");
        assert!(
            message.contains("40 bytes where the checkpoint recorded 100"),
            "{message}"
        );
    }

    #[test]
    fn deleted_state_file_is_reported_as_missing() {
        let dir = TempDir::new("ckpt-deleted");
        let newest = commit(dir.path(), 1, b"x");
        fs::remove_file(newest.join("learner.bin")).unwrap();
        let message = load_latest(dir.path()).unwrap_err().to_string();
        assert!(message.contains("learner.bin: missing"), "{message}");
    }

    #[test]
    fn missing_pointer_is_a_file_error_and_checkpoints_are_untouched() {
        let dir = TempDir::new("ckpt-no-pointer");
        let first = commit(dir.path(), 1, b"one");
        let pointer = dir.path().join(CHECKPOINTS_DIR).join(LATEST_FILE);
        fs::remove_file(&pointer).unwrap();
        let before = snapshot(dir.path());
        let err = load_latest(dir.path()).unwrap_err();
        let Error::File { path, reason } = &err else {
            panic!("expected a file error, got {err}")
        };
        assert_eq!(path, &pointer);
        assert!(
            reason.contains("pointer is missing") && reason.contains("ckpt-000001"),
            "{reason}"
        );
        assert_eq!(snapshot(dir.path()), before);
        assert_eq!(
            Checkpoint::load(&first).unwrap().blob("learner").unwrap(),
            b"one"
        );
    }

    #[test]
    fn run_without_checkpoints_and_dangling_pointer_are_clear_errors() {
        let dir = TempDir::new("ckpt-none");
        let message = load_latest(dir.path()).unwrap_err().to_string();
        assert!(message.contains("no checkpoints"), "{message}");
        let checkpoints = dir.path().join(CHECKPOINTS_DIR);
        fs::create_dir_all(&checkpoints).unwrap();
        fs::write(checkpoints.join(LATEST_FILE), "ckpt-000042\n").unwrap();
        assert!(
            load_latest(dir.path())
                .unwrap_err()
                .to_string()
                .contains("does not exist")
        );
        fs::write(checkpoints.join(LATEST_FILE), "../../etc\n").unwrap();
        assert!(
            load_latest(dir.path())
                .unwrap_err()
                .to_string()
                .contains("does not name")
        );
    }

    #[test]
    fn bad_blob_names_fail_commit_without_writing() {
        let dir = TempDir::new("ckpt-bad-name");
        for name in ["", "../escape", "a//b", "with space", "/abs"] {
            let err = CheckpointWriter::new(dir.path(), CONFIG, progress(1))
                .blob(name, vec![1])
                .commit()
                .unwrap_err();
            assert!(
                err.to_string().contains("invalid blob name"),
                "{name}: {err}"
            );
        }
        let err = CheckpointWriter::new(dir.path(), CONFIG, progress(1))
            .blob("learner", vec![1])
            .blob("learner", vec![2])
            .commit()
            .unwrap_err();
        assert!(err.to_string().contains("added twice"), "{err}");
        assert!(list_checkpoints(dir.path()).unwrap().is_empty());
    }

    #[test]
    fn corrupt_config_text_is_detected() {
        let dir = TempDir::new("ckpt-config");
        let newest = commit(dir.path(), 1, b"x");
        fs::write(newest.join(CONFIG_FILE), CONFIG.replace('1', "2")).unwrap();
        let message = load_latest(dir.path()).unwrap_err().to_string();
        assert!(message.contains("config.toml: corrupt"), "{message}");
    }
}
