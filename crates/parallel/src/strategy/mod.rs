//! The [`Strategy`] trait and what a strategy answers each iteration
//! ([`OnIteration`], [`Control`]). What it sees of its run is a
//! [`Context`]; what it reports is an [`IterationRecord`]; when it trains,
//! evaluates and gathers memories is a [`Schedule`].

use serde::{Deserialize, Serialize};
use shoal_rl_core::{Error, Learner, Result};

use crate::comm::Communicator;
use crate::profile::TimedComm;

pub(crate) mod averaging;
mod context;
pub(crate) mod gather;
pub(crate) mod pool;
mod record;
mod schedule;

pub use context::{Context, decode, encode, own_error_first};
pub(crate) use context::{decide, due, share};
pub(crate) use record::check_in_sync;
pub use record::{
    Counters, IterationRecord, RecordValue, Resume, RunSummary, WorkerStats, eval_steps,
    hash_parameters, worker_seed,
};
pub use schedule::{Schedule, require};

/// shoal's own strategies, re-exported at the crate's root: a new one is
/// its module above and its line here.
pub mod builtin {
    pub use super::averaging::{AveragingConfig, GradientAveraging};
    pub use super::gather::{GatherConfig, RolloutGather};
    pub use super::pool::{GroupPool, Pool, PoolConfig};
}

/// A way of training one learner per rank together, written against
/// [`Communicator`] and a learner trait from shoal-rl-core.
///
/// Shaped like ripgrep's `Sink`: three required methods — [`name`],
/// [`schedule`] and [`iteration`], one round of the strategy on this rank
/// — and hooks with defaults. The provided [`run`] and [`resume`] drive
/// them on every rank the same way for every strategy: rank 0's counters
/// are shared, [`start`] brings every worker to the same starting point,
/// then each iteration's record goes to the `on_iteration` callback on rank
/// 0 (with every worker's replay memory on the iterations
/// [`memory_interval`] names), whose [`Control`] every rank follows.
///
/// Build the learner of each rank from the rank (seeding its generators
/// with [`worker_seed`]). The returned [`RunSummary`] is the same on every
/// rank. A failure on any rank (a learner error, an observer error) ends
/// the run on every rank: the failing rank returns its own error, the
/// others an [`Error::Comm`] naming it — [`Context`] has the helpers that
/// make this so.
///
/// [`name`]: Strategy::name
/// [`schedule`]: Strategy::schedule
/// [`iteration`]: Strategy::iteration
/// [`run`]: Strategy::run
/// [`resume`]: Strategy::resume
/// [`start`]: Strategy::start
/// [`memory_interval`]: Strategy::memory_interval
///
/// ```
/// use shoal_rl_core::{GradientLearner, Result};
/// use shoal_rl_parallel::{Context, IterationRecord, Schedule, Strategy, WorkerStats};
///
/// /// Local SGD: train alone, then average the parameters.
/// struct LocalSgd { schedule: Schedule }
///
/// impl<L: GradientLearner + ?Sized> Strategy<L> for LocalSgd {
///     fn name(&self) -> &str { "local-sgd" }
///     fn schedule(&self) -> &Schedule { &self.schedule }
///     fn iteration(&mut self, ctx: &Context<'_>, learner: &mut L) -> Result<IterationRecord> {
///         // 1. Train alone; rank 0 builds the record from everyone's stats,
///         //    and a failure anywhere ends the run before any all-reduce.
///         let outcome = learner
///             .learn(self.schedule.episodes_per_iteration)
///             .map(|r| WorkerStats::from_report(&r));
///         let record = ctx.share_record(outcome, |stats| Ok(ctx.record(stats)))?;
///         // 2. Average the parameters.
///         let mut params = learner.parameters();
///         ctx.comm().all_reduce_sum(&mut params)?;
///         let n = ctx.comm().size() as f32;
///         params.iter_mut().for_each(|p| *p /= n);
///         learner.set_parameters(&params)?;
///         Ok(record)
///     }
/// }
/// ```
pub trait Strategy<L: Learner + ?Sized> {
    /// The strategy's one name: in configs (`parallel.strategy`), records
    /// and summaries (`pool`, `gather`, `averaging`).
    fn name(&self) -> &str;

    /// How long the run is and what it does along the way: the driver runs
    /// [`Schedule::iterations`] in all (counting those done before a
    /// resume) and reads it after [`Strategy::start`], so a strategy that
    /// shares its configuration from rank 0 there answers with rank 0's.
    fn schedule(&self) -> &Schedule;

    /// Runs iteration [`Context::iteration`] on this rank and returns its
    /// record, the same on every rank, with counters one iteration past
    /// [`Context::counters`] ([`Context::record`] builds such a record and
    /// [`Context::share_record`] shares it).
    fn iteration(&mut self, ctx: &Context<'_>, learner: &mut L) -> Result<IterationRecord>;

    /// Every this many iterations (and after the last) each worker's replay
    /// memory is gathered into [`IterationRecord::memories`] for a
    /// checkpoint; 0 never. Default: the schedule's
    /// [`Schedule::memory_interval`].
    fn memory_interval(&self) -> u64 {
        self.schedule().memory_interval
    }

    /// Called on every rank before the first iteration. Default: every
    /// worker starts from rank 0's learner, or the resumed state
    /// ([`Context::start_from_root`]), and gets its own replay memory back
    /// ([`Context::restore_memories`]).
    fn start(&mut self, ctx: &Context<'_>, learner: &mut L) -> Result<()> {
        ctx.start_from_root(learner)?;
        ctx.restore_memories(learner)
    }

    /// Trains `learner` together with the learners of the other ranks, from
    /// the start.
    fn run(
        &mut self,
        comm: &dyn Communicator,
        learner: &mut L,
        on_iteration: &mut OnIteration<'_, L>,
    ) -> Result<RunSummary> {
        self.resume(comm, learner, &Resume::default(), on_iteration)
    }

    /// Trains `learner` together with the learners of the other ranks,
    /// continuing the run that `from` describes (meaningful on rank 0; the
    /// other ranks receive what they need from it).
    fn resume(
        &mut self,
        comm: &dyn Communicator,
        learner: &mut L,
        from: &Resume,
        on_iteration: &mut OnIteration<'_, L>,
    ) -> Result<RunSummary> {
        let counters = share(comm, comm.is_root().then_some(Ok(from.counters)))?;
        let name = self.name().to_string();
        // Every collective goes through the timer, so each record can carry
        // where every worker's time went (`IterationRecord::profile`).
        let timer = TimedComm::new(comm);
        let mut ctx = Context {
            comm: &timer,
            timer: &timer,
            resume: from,
            counters,
            iterations: 0,
            name: &name,
        };
        self.start(&ctx, learner)?;
        ctx.iterations = self.schedule().iterations;
        let mut last = None;
        let mut stopped_early = false;
        let schedule = *self.schedule();
        while ctx.counters.iteration < ctx.iterations && !schedule.is_spent(ctx.counters.env_steps)
        {
            let mut record = self.iteration(&ctx, learner)?;
            if record.iteration != ctx.iteration() {
                return Err(Error::Config(format!(
                    "strategy {name} reported iteration {} where {} was due",
                    record.iteration,
                    ctx.iteration()
                )));
            }
            ctx.counters = record.counters();
            if let Some(stop) = &from.stop {
                record.stop_requested =
                    share(comm, comm.is_root().then(|| Ok(stop.is_requested())))?;
            }
            record.budget_spent = schedule.is_spent(ctx.counters.env_steps);
            let memories = record.stop_requested
                || record.budget_spent
                || due(
                    self.memory_interval(),
                    ctx.counters.iteration,
                    ctx.iterations,
                );
            let control = decide(comm, &mut record, &*learner, memories, on_iteration)?;
            let (stop_requested, record_spent) = (record.stop_requested, record.budget_spent);
            last = Some(record);
            if control == Control::Stop || stop_requested {
                stopped_early = ctx.counters.iteration < ctx.iterations;
                break;
            }
            if record_spent {
                break;
            }
        }
        Ok(RunSummary {
            counters: ctx.counters,
            last,
            stopped_early,
        })
    }
}

/// The callback a [`Strategy`] calls on rank 0 after every iteration: write a
/// line of `metrics.jsonl`, advance a progress bar, save a checkpoint from the
/// learner, or stop early.
///
/// ```
/// use shoal_rl_parallel::{Control, IterationRecord, OnIteration};
/// struct Toy;
/// let mut seen = Vec::new();
/// let mut log = |record: &IterationRecord, _learner: &Toy| {
///     seen.push(record.iteration);
///     Ok(if record.iteration >= 3 { Control::Stop } else { Control::Continue })
/// };
/// let callback: &mut OnIteration<'_, Toy> = &mut log;
/// # let _ = callback;
/// ```
pub type OnIteration<'a, L> = dyn FnMut(&IterationRecord, &L) -> Result<Control> + 'a;

/// An [`OnIteration`] callback that records nothing and never stops.
pub fn keep_going<L: ?Sized>(_record: &IterationRecord, _learner: &L) -> Result<Control> {
    Ok(Control::Continue)
}

/// What the rank-0 callback asks the strategy to do next.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Control {
    /// Run the next iteration.
    #[default]
    Continue,
    /// Stop after this iteration (for example a time budget ran out).
    Stop,
}

#[cfg(test)]
mod tests;
