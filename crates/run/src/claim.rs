//! Claiming a run directory: a fresh one (`--out`, or `runs/<name>-N`) or
//! the one to resume, locked for as long as the run lives, with its config
//! written and checked against the checkpoint it continues from.

use std::path::{Path, PathBuf};

use shoal_rl_core::{Error, Result};
use shoal_rl_eval::{
    CONFIG_FILE, Checkpoint, CheckpointSelector, LOCK_FILE, RunDir, Summary, list_checkpoints,
    load_checkpoint, truncate_metrics,
};

use crate::spec::{RunOptions, RunSpec};

/// A claimed run directory and the checkpoint to resume from, if any.
pub(crate) type OpenRun = (RunDir, Option<Checkpoint>);

/// Claims the run directory — a fresh one, or the one to resume, locked
/// for as long as the returned [`RunDir`] lives — and writes its config.
pub(crate) fn open_run(spec: &RunSpec, options: &RunOptions) -> Result<OpenRun> {
    if options.checkpoint.is_some() && options.resume.is_none() {
        return Err(Error::Config(
            "a checkpoint to continue from needs the run to resume: give its directory too \
             (--resume DIR; RunOptions::resume)"
                .into(),
        ));
    }
    let (run, checkpoint) = match &options.resume {
        Some(dir) => {
            let run = claim_run_to_resume(dir)?;
            if options.checkpoint.is_none()
                && !run.checkpoints().join("latest").exists()
                && list_checkpoints(run.path())?.is_empty()
            {
                // The run died before its first checkpoint: nothing to
                // continue, so it starts again in place (its config must
                // still match, and its partial metrics go).
                let saved = run.read_config()?;
                config_must_match(spec, &saved, &run.config())?;
                truncate_metrics(run.path(), 0)?;
                run.create()?;
                run.write_config(&spec.config_toml)?;
                return Ok((run, None));
            }
            let which = options
                .checkpoint
                .as_deref()
                .map_or(CheckpointSelector::Latest, CheckpointSelector::parse);
            let ckpt = load_checkpoint(run.path(), &which, None)?;
            config_must_match(spec, ckpt.config(), ckpt.dir())?;
            let done = ckpt.progress().episodes;
            // A run stopped after its last checkpoint but before its final
            // summary (killed in the final evaluation, or interrupted) is
            // not finished, and is not refused.
            let unfinished = !Summary::read(run.path()).is_ok_and(|s| !s.is_interrupted())
                && options.checkpoint.is_none();
            if done >= spec.train.episodes && !unfinished {
                return Err(Error::Config(format!(
                    "{} already trained {done} episodes; to continue, raise train.episodes \
                     above {done}",
                    ckpt.dir().display()
                )));
            }
            (run, Some(ckpt))
        }
        None => {
            let run = match options.out.as_deref() {
                Some(out) => claim_out_dir(out)?,
                None => claim_numbered_dir(&spec.name)?,
            };
            run.create()?;
            (run, None)
        }
    };
    run.write_config(&spec.config_toml)?;
    Ok((run, checkpoint))
}

/// The names in `dir`, or an error naming it.
fn dir_entries(dir: &Path) -> Result<Vec<String>> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| Error::io(format!("listing {}", dir.display()), e))?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(format!("listing {}", dir.display()), e))?;
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    Ok(names)
}

/// `--out DIR` for a fresh run: a new or empty directory, locked. A
/// directory that already holds a run, or anything else, is refused with
/// nothing written (not even the lock file).
fn claim_out_dir(out: &Path) -> Result<RunDir> {
    if out.exists() && !out.is_dir() {
        return Err(Error::file(
            out,
            "exists and is not a directory; give a directory as --out",
        ));
    }
    std::fs::create_dir_all(out)
        .map_err(|e| Error::io(format!("creating {}", out.display()), e))?;
    let refuse = |names: &[String]| -> Result<()> {
        if names.iter().any(|n| n == CONFIG_FILE) {
            return Err(Error::Config(format!(
                "{} already holds a run; resume it (--resume {}; RunOptions::resume) or write \
                 another directory",
                out.display(),
                out.display()
            )));
        }
        if names.iter().any(|n| n != LOCK_FILE) {
            return Err(Error::Config(format!(
                "{} is not empty and holds no shoal run; refusing to write into it \
                 (give a new or empty --out)",
                out.display()
            )));
        }
        Ok(())
    };
    let names = dir_entries(out)?;
    // A lock file means a shoal process may be starting here right now: its
    // lock is what tells, so take (or fail to take) it before judging.
    if !names.iter().any(|n| n == LOCK_FILE) {
        refuse(&names)?;
    }
    let run = RunDir::new(out).lock()?;
    refuse(&dir_entries(out)?)?;
    Ok(run)
}

/// `runs/<name>`, else `runs/<name>-2`, `-3`, …: the first that this
/// process creates itself (`create_dir` is atomic, so two runs started at
/// once never share a number), locked.
fn claim_numbered_dir(name: &str) -> Result<RunDir> {
    let parent = PathBuf::from("runs");
    std::fs::create_dir_all(&parent)
        .map_err(|e| Error::io(format!("creating {}", parent.display()), e))?;
    for n in 1u64.. {
        let dir = if n == 1 {
            name.to_string()
        } else {
            format!("{name}-{n}")
        };
        let candidate = parent.join(dir);
        match std::fs::create_dir(&candidate) {
            Ok(()) => return claim_out_dir(&candidate),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(Error::io(format!("creating {}", candidate.display()), e)),
        }
    }
    unreachable!("some run number is free")
}

/// `--resume DIR`: a directory holding a run, locked.
fn claim_run_to_resume(dir: &Path) -> Result<RunDir> {
    let run = RunDir::new(dir);
    if !run.config().is_file() {
        return Err(Error::file(
            dir,
            "holds no shoal run to resume (no config.toml)",
        ));
    }
    run.lock()
}

/// Checks the spec's config against the config text saved at `origin`;
/// only [`RunSpec::resume_may_change`] may differ.
pub(crate) fn config_must_match(spec: &RunSpec, saved: &str, origin: &Path) -> Result<()> {
    let migrated = spec.migrate_saved_config.as_ref().and_then(|m| m(saved));
    let saved = migrated.as_deref().unwrap_or(saved);
    let may_change: Vec<&str> = spec.resume_may_change.iter().map(String::as_str).collect();
    shoal_rl_eval::check_config_matches(saved, &spec.config_toml, &may_change).map_err(|e| {
        let detail = match e {
            Error::Config(message) => message,
            other => other.to_string(),
        };
        Error::Config(format!("cannot resume from {}: {detail}", origin.display()))
    })
}
