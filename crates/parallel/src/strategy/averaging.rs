//! Gradient averaging ([`GradientAveraging`], [`AveragingConfig`]): every
//! worker learns on its own experience, every gradient is averaged over all
//! workers, and all workers hold bit-identical parameters.

use serde::{Deserialize, Serialize};
use shoal_core::{Error, GradientLearner, Result, derive_seed};

use super::{
    Control, Counters, IterationRecord, OnIteration, Resume, RunSummary, Strategy, WorkerStats,
    decide, eval_steps, gather_outcomes, hash_parameters, memory_due, own_error_first,
    record_from_stats, require, restore_memories, share,
};
use crate::comm::{CommReducer, Communicator};

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
    /// Seed of the evaluation environments (iteration `i` uses
    /// `derive_seed(seed, i)`). Default: 0.
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
        require(self.eval_interval == 0 || self.eval_episodes > 0, || {
            "averaging: eval_episodes must be at least 1 when eval_interval is set".into()
        })
    }

    fn evaluates_at(&self, iteration: u64) -> bool {
        self.eval_interval > 0
            && (iteration.is_multiple_of(self.eval_interval) || iteration == self.iterations)
    }
}

/// Gradient parallelism for any [`GradientLearner`], as the HER paper ran
/// DDPG over MPI: every worker keeps its own environment and replay buffer,
/// computes gradients on its own samples, and averages them with the others
/// before every optimiser step.
///
/// At the start rank 0's parameters are broadcast to every worker; a
/// [`Resume::state`] given on rank 0 is first broadcast and loaded on *every*
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
    resume: Resume,
}

impl GradientAveraging {
    /// A run starting from rank 0's parameters.
    pub fn new(config: AveragingConfig) -> Self {
        GradientAveraging {
            config,
            resume: Resume::default(),
        }
    }

    /// Continues a run from `resume` (see the type's documentation).
    #[must_use]
    pub fn resume(mut self, resume: Resume) -> Self {
        self.resume = resume;
        self
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

    fn run(
        &mut self,
        comm: &dyn Communicator,
        learner: &mut L,
        on_iteration: &mut OnIteration<'_, L>,
    ) -> Result<RunSummary> {
        // Rank 0's configuration and counters are authoritative.
        let root_config = comm
            .is_root()
            .then(|| self.config.validate().map(|()| self.config.clone()));
        let config = share(comm, root_config)?;
        let root_counters = comm.is_root().then_some(Ok(self.resume.counters));
        let mut counters: Counters = share(comm, root_counters)?;
        let has_state = share(
            comm,
            comm.is_root().then(|| Ok(self.resume.state.is_some())),
        )?;
        if has_state {
            let mut state = match (&self.resume.state, comm.is_root()) {
                (Some(state), true) => state.clone(),
                _ => Vec::new(),
            };
            comm.broadcast_bytes(&mut state, 0)?;
            learner.load_state(&state)?;
        }
        let mut parameters = learner.parameters();
        comm.broadcast(&mut parameters, 0)?;
        if !comm.is_root() {
            learner.set_parameters(&parameters)?;
        }
        drop(parameters);
        restore_memories(comm, &self.resume.memories, learner)?;

        let mut last = None;
        let mut stopped_early = false;
        while counters.iteration < config.iterations {
            let iteration = counters.iteration + 1;
            let mut reducer = CommReducer::new(comm);
            let outcome = learner
                .learn_averaged(config.episodes_per_iteration, &mut reducer)
                .map(|report| {
                    let mut stats = WorkerStats::from_report(&report);
                    if config.check_sync {
                        stats.parameter_hash = Some(hash_parameters(&learner.parameters()));
                    }
                    stats
                });
            let gathered = match gather_outcomes(comm, &outcome) {
                Ok(gathered) => gathered,
                // A rank that failed inside `learn_averaged` left its peers in
                // a reduction: report its own error, not the mismatch it caused.
                Err(error) => return Err(outcome.err().unwrap_or(error)),
            };
            let from_root = gathered.map(|all| {
                let stats = all.map_err(Error::Comm)?;
                let reference = stats[0].parameter_hash;
                if let Some(rank) = stats.iter().position(|s| s.parameter_hash != reference) {
                    return Err(Error::Comm(format!(
                        "parameters of rank {rank} differ from rank 0 after iteration \
                         {iteration}: the learner must pass every gradient and running \
                         statistic through the reducer"
                    )));
                }
                let mut next = counters;
                let mut record = record_from_stats(NAME, &mut next, &stats);
                record.scalars = stats[0].scalars.clone();
                if config.evaluates_at(iteration) {
                    let eval = learner
                        .evaluate(config.eval_episodes, derive_seed(config.seed, iteration))?;
                    record.eval_env_steps += eval_steps(&eval);
                    record.eval = Some(eval);
                }
                Ok::<IterationRecord, Error>(record)
            });
            let mut record: IterationRecord = own_error_first(outcome, share(comm, from_root))?;
            counters = record.counters();

            let memories = memory_due(config.memory_interval, iteration, config.iterations);
            let control = decide(comm, &mut record, &*learner, memories, on_iteration)?;
            last = Some(record);
            if control == Control::Stop {
                stopped_early = counters.iteration < config.iterations;
                break;
            }
        }
        Ok(RunSummary {
            counters,
            last,
            stopped_early,
        })
    }
}
