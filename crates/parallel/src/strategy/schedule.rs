//! [`Schedule`]: when a strategy trains, evaluates and gathers memories —
//! the settings every strategy's config shares.

use serde::{Deserialize, Serialize};
use shoal_rl_core::{Error, Result};

/// How long a strategy runs and what it does along the way. Every built-in
/// strategy's config holds one ([`PoolConfig`](crate::PoolConfig),
/// [`GatherConfig`](crate::GatherConfig),
/// [`AveragingConfig`](crate::AveragingConfig)), and a strategy of one's
/// own can too.
///
/// ```
/// use shoal_rl_parallel::Schedule;
/// let schedule = Schedule::default().iterations(50).episodes_per_iteration(2).eval_interval(5);
/// assert!(schedule.validate("local-sgd").is_ok());
/// assert!(Schedule::default().episodes_per_iteration(0).validate("local-sgd").is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Schedule {
    /// Total iterations of the run, counting those done before a resume.
    /// Default: 100.
    pub iterations: u64,
    /// Training episodes each worker runs (or collects) per iteration.
    /// Default: 1.
    pub episodes_per_iteration: usize,
    /// Rank 0 evaluates every this many iterations (and after the last);
    /// 0 never evaluates. Default: 10.
    pub eval_interval: u64,
    /// Frozen-policy evaluation episodes. Default: 5.
    pub eval_episodes: usize,
    /// Seed of the evaluation environments, the same for every evaluation
    /// (as a single learner's run evaluates). Default: 0.
    pub seed: u64,
    /// Every this many iterations (and after the last) each worker's replay
    /// memory is gathered into
    /// [`IterationRecord::memories`](crate::IterationRecord::memories) for a
    /// checkpoint; 0 never. Default: 0.
    pub memory_interval: u64,
    /// Training env steps over all workers: the run ends after the
    /// iteration that reaches them (Stable-Baselines3's `total_timesteps`),
    /// or after `iterations`, whichever comes first. Default: none.
    pub env_steps: Option<u64>,
}

impl Default for Schedule {
    fn default() -> Self {
        Schedule {
            iterations: 100,
            episodes_per_iteration: 1,
            eval_interval: 10,
            eval_episodes: 5,
            seed: 0,
            memory_interval: 0,
            env_steps: None,
        }
    }
}

impl Schedule {
    /// Sets the total number of iterations.
    #[must_use]
    pub fn iterations(mut self, iterations: u64) -> Self {
        self.iterations = iterations;
        self
    }

    /// Sets the episodes per worker per iteration.
    #[must_use]
    pub fn episodes_per_iteration(mut self, episodes: usize) -> Self {
        self.episodes_per_iteration = episodes;
        self
    }

    /// Sets how often rank 0 evaluates (0: never).
    #[must_use]
    pub fn eval_interval(mut self, interval: u64) -> Self {
        self.eval_interval = interval;
        self
    }

    /// Sets the evaluation episodes.
    #[must_use]
    pub fn eval_episodes(mut self, episodes: usize) -> Self {
        self.eval_episodes = episodes;
        self
    }

    /// Sets the evaluation seed.
    #[must_use]
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Sets how often every worker's memory is gathered (0: never).
    #[must_use]
    pub fn memory_interval(mut self, interval: u64) -> Self {
        self.memory_interval = interval;
        self
    }

    /// Sets a budget in training env steps over all workers.
    #[must_use]
    pub fn env_steps(mut self, steps: Option<u64>) -> Self {
        self.env_steps = steps;
        self
    }

    /// Whether `env_steps` training steps spend the budget, if there is one.
    pub fn is_spent(&self, env_steps: u64) -> bool {
        self.env_steps.is_some_and(|budget| env_steps >= budget)
    }

    /// Checks the schedule of strategy `strategy` (named in the error):
    /// at least one episode per iteration, and evaluation episodes when it
    /// evaluates.
    pub fn validate(&self, strategy: &str) -> Result<()> {
        require(self.episodes_per_iteration > 0, || {
            format!("{strategy}: episodes_per_iteration must be at least 1")
        })?;
        require(self.eval_interval == 0 || self.eval_episodes > 0, || {
            format!("{strategy}: eval_episodes must be at least 1 when eval_interval is set")
        })
    }
}

/// `Ok` if `ok`, else [`Error::Config`] with `message()`: how strategy
/// configs refuse bad settings in one line.
pub fn require(ok: bool, message: impl FnOnce() -> String) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(Error::Config(message()))
    }
}
