//! What `shoal train` was asked to do ([`Plan`]): a resolved config, and
//! where and how its run lives.

use std::path::PathBuf;

use shoal_rl_core::StopFlag;
use shoal_rl_parallel::ProcessConfig;
use shoal_rl_run::RunOptions;

use crate::config::RunConfig;

/// The evaluation seed of a run.
pub fn eval_seed(cfg: &RunConfig) -> u64 {
    cfg.eval_seed()
}

/// What `shoal train` was asked to do, resolved but not yet acted on: the
/// config, and where and how the run lives.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The run's configuration.
    pub cfg: RunConfig,
    /// Where the run lives and how it reports and stops: `--out`,
    /// `--resume`, `--checkpoint`, `--quiet`, the status interval, the stop
    /// flag, how worker processes start.
    pub options: RunOptions,
}

impl Plan {
    /// A new run of `cfg` in `runs/<name>-N`, with progress output.
    pub fn new(cfg: RunConfig) -> Self {
        Self {
            cfg,
            options: RunOptions::default(),
        }
    }

    /// Trains in `dir` (a new or empty directory).
    #[must_use]
    pub fn out(mut self, dir: impl Into<PathBuf>) -> Self {
        self.options.out = Some(dir.into());
        self
    }

    /// Continues the run in `dir` from its latest checkpoint.
    #[must_use]
    pub fn resume(mut self, dir: impl Into<PathBuf>) -> Self {
        self.options.resume = Some(dir.into());
        self
    }

    /// Without progress output.
    #[must_use]
    pub fn quiet(mut self) -> Self {
        self.options.quiet = true;
        self
    }

    /// Stopped cleanly (as by Ctrl-C) when `flag` is raised, leaving the
    /// process's signals alone: for a program with signal handling of its
    /// own, such as a Python interpreter.
    #[must_use]
    pub fn stop(mut self, flag: StopFlag) -> Self {
        self.options.stop = Some(flag);
        self
    }

    /// Worker processes (the processes backend) start as `workers` says
    /// instead of re-running this process's command line.
    #[must_use]
    pub fn worker_processes(mut self, workers: ProcessConfig) -> Self {
        self.options.worker_processes = Some(workers);
        self
    }
}
