//! shoal-rl-run: the training runtime. Give it a [`RunSpec`] (budget,
//! schedule, seed, the resolved config to save), a learner factory and, for
//! a parallel run, a strategy factory; it gives the run what `shoal train`
//! gives every preset:
//!
//! - a run directory, claimed and locked (`--out`, `runs/<name>-N`, or the
//!   one to `--resume`), with `config.toml`;
//! - `metrics.jsonl` in one schema (`episode`, `update`, `iteration`, `eval`
//!   lines), periodic frozen-policy evaluations on a fixed seed stream;
//! - checkpoints with the learner's state and every rank's replay memory,
//!   and an exact resume from any of them;
//! - targets and time-to-target in `summary.json`, an optional stop at the
//!   target;
//! - a clean stop: on SIGINT or SIGTERM the episode or iteration in progress
//!   ends (within `train.stop_grace_s`), a checkpoint and a summary marked
//!   `interrupted` are written, and the call returns
//!   [`Error::Interrupted`](shoal_rl_core::Error::Interrupted); a second signal
//!   exits at once.
//!
//! Envs, learners and strategies come in through shoal-rl-core's and
//! shoal-rl-parallel's traits, so one written outside shoal gets all of it.
//!
//! # Example: a learner of one's own, with a run directory
//!
//! ```
//! use shoal_rl_core::{EvalReport, LearnReport, Learner, Result};
//! use shoal_rl_run::{RunOptions, RunSpec, TrainConfig, train};
//!
//! /// Counts its episodes; its "return" is the count.
//! struct Counter(u64);
//! impl Learner for Counter {
//!     fn learn(&mut self, episodes: usize) -> Result<LearnReport> {
//!         self.0 += episodes as u64;
//!         Ok(LearnReport {
//!             episode_returns: vec![self.0 as f64; episodes],
//!             episode_lengths: vec![1; episodes],
//!             ..LearnReport::default()
//!         })
//!     }
//!     fn evaluate(&mut self, episodes: usize, _seed: u64) -> Result<EvalReport> {
//!         Ok(EvalReport::from_episodes(&vec![self.0 as f64; episodes], &vec![1.0; episodes], None))
//!     }
//!     fn save_state(&self) -> Vec<u8> { self.0.to_le_bytes().to_vec() }
//!     fn load_state(&mut self, bytes: &[u8]) -> Result<()> {
//!         self.0 = u64::from_le_bytes(bytes.try_into().map_err(|_| {
//!             shoal_rl_core::Error::Shape("a counter is 8 bytes".into())
//!         })?);
//!         Ok(())
//!     }
//! }
//!
//! let dir = std::env::temp_dir().join(format!("shoal-rl-run-doc-{}", std::process::id()));
//! # let _ = std::fs::remove_dir_all(&dir);
//! let train_cfg = TrainConfig { episodes: 30, eval_every: 10, checkpoint_every: 10, ..TrainConfig::default() };
//! let spec = RunSpec::new("counter", "episodes = 30\n").train(train_cfg);
//! let (run, summary) = train(&spec, &RunOptions::out(&dir).quiet(true), || Ok(Counter(0)))?;
//! assert_eq!(summary.episodes, 30);
//! assert!(run.join("metrics.jsonl").is_file() && run.join("summary.json").is_file());
//!
//! // Ask for more episodes and continue where the checkpoint left off.
//! let more = TrainConfig { episodes: 50, ..spec.train.clone() };
//! let spec = spec.train(more);
//! let (_, summary) = train(&spec, &RunOptions::resume(&dir).quiet(true), || Ok(Counter(0)))?;
//! assert_eq!(summary.eval_return_mean, Some(50.0));
//! # std::fs::remove_dir_all(&dir).unwrap();
//! # Ok::<(), shoal_rl_core::Error>(())
//! ```
#![deny(missing_docs)]

mod claim;
mod finish;
mod parallel;
mod progress;
pub mod projection;
mod recorder;
mod single;
mod spec;
mod stop;

use std::path::PathBuf;

use shoal_rl_core::{Learner, Result};
use shoal_rl_eval::RunDir;

pub use parallel::{StrategySetup, train_parallel};
pub use progress::ProgressReporter;
pub use recorder::{
    DEFAULT_TARGET_SUCCESS, NO_STOP_TARGET, STATE_BLOB, eval_seed, memory_blob, run_target,
};
/// What a run returns and how workers talk, re-exported so a user of this
/// crate alone can name them.
pub use shoal_rl_eval::Summary;
pub use shoal_rl_parallel::Backend;
pub use spec::{MigrateFn, ParallelSpec, Reference, ReferenceFn, RunOptions, RunSpec, TrainConfig};
pub use stop::{INTERRUPTED_EXIT, stop_on_signals};

use crate::stop::stop_guard;

/// Trains one learner, built by `make_learner`, through the whole run of
/// `spec` in the directory `options` names; returns the run directory and
/// its summary. See the crate docs for what the run directory holds.
pub fn train<L, M>(
    spec: &RunSpec,
    options: &RunOptions,
    make_learner: M,
) -> Result<(PathBuf, Summary)>
where
    L: Learner,
    M: FnOnce() -> Result<L>,
{
    let guard = stop_guard(spec, options)?;
    let mut learner = make_learner()?;
    let (run, checkpoint) = claim::open_run(spec, options)?;
    let recorder =
        recorder::Recorder::new(spec, RunDir::new(run.path()), checkpoint.as_ref(), options)?;
    let summary = single::train_single(
        spec,
        &mut learner,
        recorder,
        checkpoint.as_ref(),
        guard.flag(),
    )?;
    Ok((run.path().to_path_buf(), summary))
}

/// The README's example, compiled with the doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The documented fields of [`TrainConfig`], from its source.
pub fn config_docs(name: &str) -> Option<Vec<shoal_rl_core::docs::FieldDoc>> {
    shoal_rl_core::docs::struct_docs(&[include_str!("spec.rs")], name)
}
