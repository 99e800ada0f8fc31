//! Gradient averaging ([`GradientAveraging`], [`AveragingConfig`]): every
//! worker learns on its own experience, every gradient is averaged over all
//! workers, and all workers hold bit-identical parameters.

use serde::{Deserialize, Serialize};
use shoal_core::{Error, GradientLearner, Result};

use super::{
    Context, IterationRecord, Strategy, WorkerStats, check_eval, hash_parameters, require,
};
use crate::comm::CommReducer;

/// The averaging strategy's [`Strategy::name`].
const NAME: &str = "averaging";

/// Settings of [`GradientAveraging`].
///
/// ```
/// use shoal_parallel::AveragingConfig;
/// let config = AveragingConfig::default().iterations(50).episodes_per_iteration(2);
/// assert!(config.check_sync);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AveragingConfig {
    /// Total iterations of the run, counting those done before a resume.
    /// Default: 100.
    pub iterations: u64,
    /// Episodes each worker trains per iteration
    /// ([`GradientLearner::learn_averaged`]). Default: 1.
    pub episodes_per_iteration: usize,
    /// Rank 0 evaluates every this many iterations (and after the last);
    /// 0 never evaluates. Default: 10.
    pub eval_interval: u64,
    /// Frozen-policy evaluation episodes. Default: 5.
    pub eval_episodes: usize,
    /// Seed of the evaluation environments, the same for every evaluation
    /// (as a single learner's run evaluates). Default: 0.
    pub seed: u64,
    /// Check after every iteration that all workers' parameters are
    /// bit-identical (a hash of each, compared on rank 0); a learner that
    /// updates without the reducer then fails loudly. Default: true.
    pub check_sync: bool,
    /// Every this many iterations (and after the last) each worker's replay
    /// memory is gathered into [`IterationRecord::memories`] for a
    /// checkpoint; 0 never. Default: 0.
    pub memory_interval: u64,
}

impl Default for AveragingConfig {
    fn default() -> Self {
        AveragingConfig {
            iterations: 100,
            episodes_per_iteration: 1,
            eval_interval: 10,
            eval_episodes: 5,
            seed: 0,
            check_sync: true,
            memory_interval: 0,
        }
    }
}

impl AveragingConfig {
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

    /// Sets whether workers' parameters are checked for equality every iteration.
    #[must_use]
    pub fn check_sync(mut self, check: bool) -> Self {
        self.check_sync = check;
        self
    }

    /// Sets how often every worker's memory is gathered (0: never).
    #[must_use]
    pub fn memory_interval(mut self, interval: u64) -> Self {
        self.memory_interval = interval;
        self
    }

    fn validate(&self) -> Result<()> {
        require(self.episodes_per_iteration > 0, || {
            "averaging: episodes_per_iteration must be at least 1".into()
        })?;
        check_eval("averaging", self.eval_interval, self.eval_episodes)
    }
}

/// Gradient parallelism for any [`GradientLearner`], as the HER paper ran
/// DDPG over MPI: every worker keeps its own environment and replay buffer,
/// computes gradients on its own samples, and averages them with the others
/// before every optimiser step.
///
/// At the start rank 0's parameters are broadcast to every worker; a
/// [`Resume::state`](super::Resume::state) given on rank 0 is first broadcast and loaded on *every*
/// worker (so optimiser moments agree too). Each iteration every worker calls
/// [`GradientLearner::learn_averaged`] with a [`CommReducer`], which
/// all-reduces and divides by the world size; since the sum is the same bits
/// on every rank, all workers then hold bit-identical parameters
/// (checked each iteration unless `check_sync` is off).
///
/// The learner must call the reducer the same number of times on every
/// worker (for example a fixed number of updates per episode or per cycle);
/// the threads and processes backends report a mismatch as an error.
#[derive(Clone, Debug)]
pub struct GradientAveraging {
    config: AveragingConfig,
}

impl GradientAveraging {
    /// A run starting from rank 0's parameters.
    pub fn new(config: AveragingConfig) -> Self {
        GradientAveraging { config }
    }

    /// The configuration.
    pub fn config(&self) -> &AveragingConfig {
        &self.config
    }
}

impl<L: GradientLearner + ?Sized> Strategy<L> for GradientAveraging {
    fn name(&self) -> &str {
        NAME
    }

    fn iterations(&self) -> u64 {
        self.config.iterations
    }

    fn memory_interval(&self) -> u64 {
        self.config.memory_interval
    }

    fn start(&mut self, ctx: &Context<'_>, learner: &mut L) -> Result<()> {
        let comm = ctx.comm();
        // Rank 0's configuration is authoritative.
        let root_config = comm
            .is_root()
            .then(|| self.config.validate().map(|()| self.config.clone()));
        self.config = ctx.share(root_config)?;
        // A resumed state reaches every worker, so optimiser moments agree
        // too; a fresh run shares only rank 0's parameters.
        if ctx.share(
            comm.is_root()
                .then(|| Ok(ctx.resume_point().state.is_some())),
        )? {
            ctx.start_from_root(learner)?;
        }
        let mut parameters = learner.parameters();
        comm.broadcast(&mut parameters, 0)?;
        if !comm.is_root() {
            learner.set_parameters(&parameters)?;
        }
        drop(parameters);
        ctx.restore_memories(learner)
    }

    fn iteration(&mut self, ctx: &Context<'_>, learner: &mut L) -> Result<IterationRecord> {
        let config = &self.config;
        let iteration = ctx.iteration();
        let mut reducer = CommReducer::new(ctx.comm());
        let outcome = learner
            .learn_averaged(config.episodes_per_iteration, &mut reducer)
            .map(|report| {
                let mut stats = WorkerStats::from_report(&report);
                if config.check_sync {
                    stats.parameter_hash = Some(hash_parameters(&learner.parameters()));
                }
                stats
            });
        ctx.share_record(outcome, |stats| {
            let reference = stats[0].parameter_hash;
            if let Some(rank) = stats.iter().position(|s| s.parameter_hash != reference) {
                return Err(Error::Comm(format!(
                    "parameters of rank {rank} differ from rank 0 after iteration \
                     {iteration}: the learner must pass every gradient and running \
                     statistic through the reducer"
                )));
            }
            let mut record = ctx.record(stats);
            record.scalars = stats[0].scalars.clone();
            if ctx.is_due(config.eval_interval) {
                ctx.evaluate_into(learner, config.eval_episodes, config.seed, &mut record)?;
            }
            Ok(record)
        })
    }
}
