//! Gradient averaging ([`GradientAveraging`], [`AveragingConfig`]): every
//! worker learns on its own experience, every gradient is averaged over all
//! workers, and all workers hold bit-identical parameters.

use serde::{Deserialize, Serialize};
use shoal_rl_core::{GradientLearner, Result};

use super::{
    Context, IterationRecord, Schedule, Strategy, WorkerStats, check_in_sync, hash_parameters,
};
use crate::comm::CommReducer;

/// The averaging strategy's [`Strategy::name`].
const NAME: &str = "averaging";

/// Settings of [`GradientAveraging`].
///
/// ```
/// use shoal_rl_parallel::{AveragingConfig, Schedule};
/// let config = AveragingConfig::new(Schedule::default().iterations(50).episodes_per_iteration(2));
/// assert!(config.check_sync);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AveragingConfig {
    /// Iterations, episodes per worker and iteration
    /// ([`GradientLearner::learn_averaged`]), evaluations and memory
    /// gathering. Default: [`Schedule::default`].
    pub schedule: Schedule,
    /// Check after every iteration that all workers' parameters are
    /// bit-identical (a hash of each, compared on rank 0); a learner that
    /// updates without the reducer then fails loudly. Default: true.
    pub check_sync: bool,
}

impl Default for AveragingConfig {
    fn default() -> Self {
        AveragingConfig::new(Schedule::default())
    }
}

impl AveragingConfig {
    /// Averaging on `schedule`, checking the workers agree.
    pub fn new(schedule: Schedule) -> Self {
        AveragingConfig {
            schedule,
            check_sync: true,
        }
    }

    /// Sets whether workers' parameters are checked for equality every iteration.
    #[must_use]
    pub fn check_sync(mut self, check: bool) -> Self {
        self.check_sync = check;
        self
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

    fn schedule(&self) -> &Schedule {
        &self.config.schedule
    }

    fn start(&mut self, ctx: &Context<'_>, learner: &mut L) -> Result<()> {
        let comm = ctx.comm();
        // Rank 0's configuration is authoritative.
        let root_config = comm.is_root().then(|| {
            self.config
                .schedule
                .validate(NAME)
                .map(|()| self.config.clone())
        });
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
            .learn_averaged(config.schedule.episodes_per_iteration, &mut reducer)
            .map(|report| {
                let mut stats = WorkerStats::from_report(&report);
                if config.check_sync {
                    stats.parameter_hash = Some(hash_parameters(&learner.parameters()));
                }
                stats
            });
        ctx.share_record(outcome, |stats| {
            check_in_sync(
                stats,
                stats.len(),
                iteration,
                "the learner must pass every gradient and running statistic through the reducer",
            )?;
            let mut record = ctx.record(stats);
            record.scalars = stats[0].scalars.clone();
            ctx.evaluate_into(learner, &config.schedule, &mut record)?;
            Ok(record)
        })
    }
}
