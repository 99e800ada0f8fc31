//! What a run is: the budget and schedule ([`TrainConfig`]), the facts
//! about its task and workers the runtime needs ([`RunSpec`]), and where it
//! lives on disk ([`RunOptions`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use shoal_rl_core::{Error, Result, StopFlag};
use shoal_rl_parallel::{Backend, ProcessConfig};

/// How long to train and how often to evaluate and checkpoint: the `train`
/// table of a run's `config.toml`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TrainConfig {
    /// Training episodes in total (over all workers). Default 10 000.
    pub episodes: u64,
    /// Training env steps: the run ends after the update (the learner's
    /// `episodes_per_update`: a PPO rollout, a DDPG cycle; else the
    /// episode), or a parallel run after the iteration, in which its
    /// training steps (all workers') reach this (Stable-Baselines3's
    /// `total_timesteps`; evaluation steps do not count), or at `episodes`,
    /// whichever comes first; `shoal train --steps N` sets both to N.
    /// Default absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env_steps: Option<u64>,
    /// Evaluate the frozen policy every this many episodes. Default 500.
    pub eval_every: u64,
    /// Episodes per periodic evaluation. Default 5.
    pub eval_episodes: usize,
    /// Episodes of the final evaluation written to `summary.json`. Default 20.
    pub final_eval_episodes: usize,
    /// Write a checkpoint every this many episodes. Default 1 000.
    pub checkpoint_every: u64,
    /// The evaluation return that counts as reaching the target, for
    /// `summary.json`'s `*_to_target` numbers. Default (absent): the task's
    /// reference return (the worm's best travelling-wave gait); no return
    /// target for tasks without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_return: Option<f64>,
    /// The evaluation success rate that counts as reaching the target, for
    /// goal tasks. Default (absent): 0.9 on goal tasks. Takes precedence
    /// over `target_return`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_success: Option<f64>,
    /// End the run at the first evaluation that reaches the target (as
    /// Stable-Baselines3's `StopTrainingOnRewardThreshold`); the final
    /// evaluation, checkpoint and `summary.json` follow as after the last
    /// episode. A parallel run then checkpoints at every evaluation, so it
    /// can end at any of them with every worker's replay memory. Default false.
    pub stop_at_target: bool,
    /// Seconds a run may take, after SIGINT or SIGTERM, to finish the
    /// episode or iteration it is in and write its checkpoint; past them it
    /// exits without one (the previous checkpoint stays). Default 20.
    pub stop_grace_s: f64,
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            episodes: 10_000,
            env_steps: None,
            eval_every: 500,
            eval_episodes: 5,
            final_eval_episodes: 20,
            checkpoint_every: 1_000,
            target_return: None,
            target_success: None,
            stop_at_target: false,
            stop_grace_s: 20.0,
        }
    }
}

impl TrainConfig {
    /// Whether `env_steps` training steps spend the step budget, if the run
    /// has one (`env_steps`).
    pub fn steps_spent(&self, env_steps: u64) -> bool {
        self.env_steps.is_some_and(|budget| env_steps >= budget)
    }

    /// `stop_grace_s` as a duration, or the one-line error for a value
    /// outside (0, 86 400] seconds.
    pub fn stop_grace(&self) -> Result<Duration> {
        let seconds = self.stop_grace_s;
        if !(seconds.is_finite() && seconds > 0.0 && seconds <= 86_400.0) {
            return Err(Error::Config(format!(
                "train.stop_grace_s must be in (0, 86400] seconds, got {seconds}"
            )));
        }
        Ok(Duration::from_secs_f64(seconds))
    }
}

pub use shoal_rl_eval::Reference;

/// Computes a task's [`Reference`] on rank 0 when the run needs it (a gait
/// search can take a second: worker processes never pay for it).
pub type ReferenceFn = Arc<dyn Fn() -> Option<Reference> + Send + Sync>;

/// Rewrites a `config.toml` saved by an earlier version as today's version
/// would write it (renamed keys migrated, new keys at their defaults), so
/// a resume compares like with like; `None` keeps the text as it is.
pub type MigrateFn = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// How the workers of a parallel run are started and watched.
#[derive(Clone, Debug, PartialEq)]
pub struct ParallelSpec {
    /// Number of workers (ranks). Default 1.
    pub workers: usize,
    /// Where they run. Default threads.
    pub backend: Backend,
    /// The strategy's [`Strategy::name`](shoal_rl_parallel::Strategy::name):
    /// written into records and `summary.json`, and checked against the
    /// strategy the run builds. Default `none` (one learner).
    pub strategy: String,
    /// Training episodes per worker and iteration. Default 1.
    pub episodes_per_iteration: usize,
    /// How long a silent worker process is waited for. Default 60 s.
    pub timeout: Duration,
    /// Whether iteration lines carry where every worker's time went
    /// (`time/*`). Default false.
    pub profile: bool,
    /// Fields added to every iteration line (the pool's per-worker
    /// settings, `pool/worker_settings`).
    pub iteration_fields: Vec<(String, serde_json::Value)>,
}

impl Default for ParallelSpec {
    fn default() -> Self {
        ParallelSpec {
            workers: 1,
            backend: Backend::Threads,
            strategy: "none".into(),
            episodes_per_iteration: 1,
            timeout: Duration::from_secs(60),
            profile: false,
            iteration_fields: Vec::new(),
        }
    }
}

/// Everything the runtime needs to know about a run, taken from the
/// caller's own configuration type: shoal's presets build one in the
/// `shoal` binary, a library user builds one by hand.
///
/// ```
/// use shoal_rl_run::{RunSpec, TrainConfig};
///
/// let spec = RunSpec::new("reacher", "seed = 3\n")
///     .seed(3)
///     .goal_task(true)
///     .train(TrainConfig { episodes: 200, ..TrainConfig::default() });
/// assert_eq!(spec.train.episodes, 200);
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct RunSpec {
    /// The run's name: a fresh run without `--out` goes to `runs/<name>`
    /// (`runs/<name>-2`, … when taken).
    pub name: String,
    /// The run's seed; evaluation episodes draw from a stream derived from it.
    pub seed: u64,
    /// The fully resolved configuration, written as `config.toml` and into
    /// every checkpoint; a resume must present the same, outside
    /// [`RunSpec::resume_may_change`].
    pub config_toml: String,
    /// Budget and schedule.
    pub train: TrainConfig,
    /// Whether the task reports success (goal tasks): their default target
    /// is an evaluation success rate of 0.9.
    pub goal_task: bool,
    /// The task's reference performance, if it has one.
    pub reference: Option<ReferenceFn>,
    /// Top-level tables or dotted keys of `config_toml` that may change on
    /// resume. Default: `train` (budget and schedule).
    pub resume_may_change: Vec<String>,
    /// Brings a saved config up to today's form before comparing.
    pub migrate_saved_config: Option<MigrateFn>,
    /// Workers and backend.
    pub parallel: ParallelSpec,
    /// Facts about the run that `summary.json` records beside its results,
    /// e.g. which matrix kernels ran (a seed's records depend on them).
    pub summary_fields: Vec<(String, serde_json::Value)>,
}

impl std::fmt::Debug for RunSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunSpec")
            .field("name", &self.name)
            .field("seed", &self.seed)
            .field("train", &self.train)
            .field("goal_task", &self.goal_task)
            .field("parallel", &self.parallel)
            .finish_non_exhaustive()
    }
}

impl RunSpec {
    /// A run called `name` whose resolved configuration is `config_toml`,
    /// with seed 0, the default schedule and one learner.
    pub fn new(name: impl Into<String>, config_toml: impl Into<String>) -> Self {
        RunSpec {
            name: name.into(),
            seed: 0,
            config_toml: config_toml.into(),
            train: TrainConfig::default(),
            goal_task: false,
            reference: None,
            resume_may_change: vec!["train".into()],
            migrate_saved_config: None,
            parallel: ParallelSpec::default(),
            summary_fields: Vec::new(),
        }
    }

    /// Sets the seed.
    #[must_use]
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Sets the budget and schedule.
    #[must_use]
    pub fn train(mut self, train: TrainConfig) -> Self {
        self.train = train;
        self
    }

    /// Marks the task as goal-conditioned (success rates, target 0.9).
    #[must_use]
    pub fn goal_task(mut self, goal: bool) -> Self {
        self.goal_task = goal;
        self
    }

    /// Sets how the task's reference performance is found.
    #[must_use]
    pub fn reference(mut self, reference: ReferenceFn) -> Self {
        self.reference = Some(reference);
        self
    }

    /// Sets the keys a resume may change.
    #[must_use]
    pub fn resume_may_change(mut self, keys: &[&str]) -> Self {
        self.resume_may_change = keys.iter().map(|k| k.to_string()).collect();
        self
    }

    /// Sets how a saved config is brought up to date before comparing.
    #[must_use]
    pub fn migrate_saved_config(mut self, migrate: MigrateFn) -> Self {
        self.migrate_saved_config = Some(migrate);
        self
    }

    /// Sets workers and backend.
    #[must_use]
    pub fn parallel(mut self, parallel: ParallelSpec) -> Self {
        self.parallel = parallel;
        self
    }

    /// Adds a fact `summary.json` records under `key`.
    #[must_use]
    pub fn summary_field(
        mut self,
        key: impl Into<String>,
        value: impl Into<serde_json::Value>,
    ) -> Self {
        self.summary_fields.push((key.into(), value.into()));
        self
    }
}

/// Where a run lives: a fresh directory or one to resume, and how it talks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunOptions {
    /// Directory of a fresh run (new or empty); default `runs/<name>`.
    pub out: Option<PathBuf>,
    /// A run directory to continue.
    pub resume: Option<PathBuf>,
    /// Which checkpoint of `resume` to continue from: a number or a path
    /// (default: the latest).
    pub checkpoint: Option<String>,
    /// No progress output.
    pub quiet: bool,
    /// What stops the run early. Default (`None`): SIGINT and SIGTERM,
    /// whose first stops the run cleanly and whose second exits at once. A
    /// flag of the caller's leaves the signals alone.
    pub stop: Option<StopFlag>,
    /// Off a terminal, the time between two status lines on stderr.
    /// Default (`None`): 10 seconds.
    pub status_every: Option<Duration>,
    /// How the processes backend starts its workers: program, arguments,
    /// environment (its timeout is the config's `parallel.timeout`).
    /// Default (`None`): each worker re-runs this process's command line,
    /// as `shoal train` wants; an embedding program that cannot be re-run
    /// (a Python interpreter running a script) names its worker entry here.
    pub worker_processes: Option<ProcessConfig>,
}

impl RunOptions {
    /// A fresh run in `dir`.
    pub fn out(dir: impl Into<PathBuf>) -> Self {
        RunOptions {
            out: Some(dir.into()),
            ..RunOptions::default()
        }
    }

    /// Continues the run in `dir` from its latest checkpoint.
    pub fn resume(dir: impl Into<PathBuf>) -> Self {
        RunOptions {
            resume: Some(dir.into()),
            ..RunOptions::default()
        }
    }

    /// Without progress output.
    #[must_use]
    pub fn quiet(mut self, quiet: bool) -> Self {
        self.quiet = quiet;
        self
    }

    /// Off a terminal, a status line every `every`.
    #[must_use]
    pub fn status_every(mut self, every: Duration) -> Self {
        self.status_every = Some(every);
        self
    }
}
