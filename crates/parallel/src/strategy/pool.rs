//! The branch-and-merge pool ([`Pool`], [`PoolConfig`]): every iteration each
//! worker improves a copy of the best agent so far, the candidates are
//! evaluated with the policy frozen, and the best one is promoted.

use serde::{Deserialize, Serialize};
use shoal_core::{Learner, Result, derive_seed};

use super::{Context, IterationRecord, RecordValue, Schedule, Strategy, WorkerStats, require};

/// The pool's [`Strategy::name`].
const NAME: &str = "pool";

/// Settings of [`Pool`].
///
/// ```
/// use shoal_parallel::{PoolConfig, Schedule};
/// assert_eq!(PoolConfig::default().schedule.episodes_per_iteration, 10);
/// let config = PoolConfig::new(Schedule::default().iterations(500)).selection_episodes(3);
/// assert_eq!((config.schedule.iterations, config.selection_episodes), (500, 3));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PoolConfig {
    /// Iterations, training episodes each worker runs per iteration, the
    /// evaluation of the promoted agent (on the fixed seed
    /// `schedule.seed`, apart from the selection) and memory gathering.
    /// Default: [`Schedule::default`] with 10 episodes per iteration.
    pub schedule: Schedule,
    /// Frozen-policy episodes per candidate per iteration, on which the
    /// winner is selected. Iteration `i` selects on the seed
    /// `derive_seed(schedule.seed ^ SELECTION_STREAM, i)`, which all
    /// candidates share (the same starting states) and the evaluation never
    /// sees. Default: 5.
    pub selection_episodes: usize,
}

/// Keeps the selection seeds apart from the evaluation seed.
const SELECTION_STREAM: u64 = 0x5e1e_c710_0000_0000;

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig::new(Schedule::default().episodes_per_iteration(10))
    }
}

impl PoolConfig {
    /// A pool on `schedule`, selecting on 5 episodes per candidate.
    pub fn new(schedule: Schedule) -> Self {
        PoolConfig {
            schedule,
            selection_episodes: 5,
        }
    }

    /// Sets the selection episodes per candidate.
    #[must_use]
    pub fn selection_episodes(mut self, episodes: usize) -> Self {
        self.selection_episodes = episodes;
        self
    }

    fn validate(&self) -> Result<()> {
        self.schedule.validate(NAME)?;
        require(self.selection_episodes > 0, || {
            "pool: selection_episodes must be at least 1".into()
        })
    }
}

/// The branch-and-merge pool, for any [`Learner`].
///
/// Each iteration:
/// 1. every worker holds the best agent so far (at the start: rank 0's
///    learner, or the resumed state), loaded with [`Learner::load_state`];
/// 2. it trains for `episodes_per_iteration` episodes ([`Learner::learn`]);
/// 3. every candidate is evaluated with the policy frozen
///    ([`Learner::evaluate`]) on the same selection seed;
/// 4. the candidate with the best mean return is promoted (ties go to the
///    lowest rank; a NaN mean never wins) and every worker loads it;
/// 5. every `eval_interval` iterations rank 0 evaluates the promoted agent
///    again, on the run's fixed evaluation seed: the best of several noisy
///    scores overstates the winner, so the selection score is recorded
///    apart (`pool/selection_return_mean` in [`IterationRecord::fields`]) and the curve that compares
///    with a single learner's is this evaluation's.
///
/// Workers differ only through their learners: their own random streams and
/// any hyperparameters the learner factory sets from the rank. By convention
/// worker 0 uses 1/10 of the learning rates, which guards against steps that
/// are too large. Hyperparameters are not part of the state, so they survive
/// the promotion.
///
/// The [`IterationRecord`] carries the winner, every worker's selection
/// mean, the winner's selection evaluation and, on evaluation iterations,
/// the unbiased evaluation; when `on_iteration` runs, rank 0's learner
/// already holds the winner, so it can be checkpointed.
///
/// ```
/// use shoal_core::{EvalReport, LearnReport, Learner, Result};
/// use shoal_parallel::{
///     Communicator, Pool, PoolConfig, RecordValue, Schedule, Strategy, keep_going, run_threads,
/// };
///
/// /// Skill grows by `rate` per episode.
/// struct Climber { skill: f64, rate: f64 }
/// impl Learner for Climber {
///     fn learn(&mut self, episodes: usize) -> Result<LearnReport> {
///         self.skill += self.rate * episodes as f64;
///         Ok(LearnReport { episode_returns: vec![self.skill; episodes], episode_lengths: vec![1; episodes], ..Default::default() })
///     }
///     fn evaluate(&mut self, episodes: usize, _seed: u64) -> Result<EvalReport> {
///         Ok(EvalReport { episodes, return_mean: self.skill, return_std: 0.0, length_mean: 1.0, success_rate: None })
///     }
///     fn save_state(&self) -> Vec<u8> { self.skill.to_le_bytes().to_vec() }
///     fn load_state(&mut self, bytes: &[u8]) -> Result<()> {
///         self.skill = f64::from_le_bytes(bytes.try_into().map_err(|_| shoal_core::Error::Shape("8 bytes".into()))?);
///         Ok(())
///     }
/// }
///
/// let winners = run_threads(2, |comm: &dyn Communicator| {
///     // The factory: worker 0 learns at 1/10 of the rate.
///     let mut learner = Climber { skill: 0.0, rate: if comm.rank() == 0 { 0.1 } else { 1.0 } };
///     let schedule = Schedule::default().iterations(3).episodes_per_iteration(2);
///     let mut pool = Pool::new(PoolConfig::new(schedule));
///     let summary = pool.run(comm, &mut learner, &mut keep_going)?;
///     Ok((summary.last.unwrap().field("pool/winner").cloned(), learner.skill))
/// })
/// .unwrap();
/// let winner = Some(RecordValue::Count(1));
/// assert_eq!(winners, vec![(winner.clone(), 6.0), (winner, 6.0)]);
/// ```
#[derive(Clone, Debug)]
pub struct Pool {
    config: PoolConfig,
}

impl Pool {
    /// A pool starting from rank 0's learner.
    pub fn new(config: PoolConfig) -> Self {
        Pool { config }
    }

    /// The configuration.
    pub fn config(&self) -> &PoolConfig {
        &self.config
    }
}

impl<L: Learner + ?Sized> Strategy<L> for Pool {
    fn name(&self) -> &str {
        NAME
    }

    fn schedule(&self) -> &Schedule {
        &self.config.schedule
    }

    fn start(&mut self, ctx: &Context<'_>, learner: &mut L) -> Result<()> {
        // Rank 0's configuration is authoritative.
        let root_config = ctx
            .comm()
            .is_root()
            .then(|| self.config.validate().map(|()| self.config.clone()));
        self.config = ctx.share(root_config)?;
        ctx.start_from_root(learner)?;
        ctx.restore_memories(learner)
    }

    fn iteration(&mut self, ctx: &Context<'_>, learner: &mut L) -> Result<IterationRecord> {
        let config = &self.config;
        let selection_seed = derive_seed(config.schedule.seed ^ SELECTION_STREAM, ctx.iteration());
        let outcome = learner
            .learn(config.schedule.episodes_per_iteration)
            .and_then(|report| {
                let mut stats = WorkerStats::from_report(&report);
                stats.eval = Some(learner.evaluate(config.selection_episodes, selection_seed)?);
                Ok(stats)
            });
        let mut record =
            ctx.share_record(outcome, |stats| Ok(promote(ctx.record(stats), stats)))?;
        let comm = ctx.comm();
        let winner = winner_of(&record);
        let mut state = if comm.rank() == winner {
            learner.save_state()
        } else {
            Vec::new()
        };
        comm.broadcast_bytes(&mut state, winner)?;
        learner.load_state(&state)?;
        if ctx.is_due(config.schedule.eval_interval) {
            let evaluated = comm.is_root().then(|| {
                ctx.evaluate_into(learner, &config.schedule, &mut record)?;
                Ok(record)
            });
            record = ctx.share(evaluated)?;
        }
        Ok(record)
    }
}

/// Rank 0's decision: the record of an iteration, naming the winner.
fn promote(mut record: IterationRecord, stats: &[WorkerStats]) -> IterationRecord {
    let means: Vec<f64> = stats
        .iter()
        .map(|s| s.eval.as_ref().map_or(f64::NAN, |e| e.return_mean))
        .collect();
    // Strictly greater, scanning in rank order: ties go to the lowest rank.
    let mut winner = 0;
    for (rank, mean) in means.iter().enumerate() {
        let best = means[winner];
        if !mean.is_nan() && (best.is_nan() || *mean > best) {
            winner = rank;
        }
    }
    record.scalars = stats[winner].scalars.clone();
    record.set_field(WINNER, RecordValue::Count(winner as u64));
    record.set_field(WORKER_EVAL_MEANS, RecordValue::Numbers(means));
    // The winner's selection score: the best of the candidates' and so
    // biased upward; the record's `eval` is the unbiased one.
    if let Some(selection) = &stats[winner].eval {
        record.set_field(
            "pool/selection_return_mean",
            RecordValue::Number(selection.return_mean),
        );
        if let Some(rate) = selection.success_rate {
            record.set_field("pool/selection_success_rate", RecordValue::Number(rate));
        }
    }
    record
}

/// The rank whose candidate was promoted.
const WINNER: &str = "pool/winner";
/// Every candidate's selection mean return, by rank.
const WORKER_EVAL_MEANS: &str = "pool/worker_eval_means";

/// The winner `promote` named in `record`.
fn winner_of(record: &IterationRecord) -> usize {
    match record.field(WINNER) {
        Some(RecordValue::Count(rank)) => *rank as usize,
        _ => unreachable!("the pool always names a winner"),
    }
}

#[cfg(test)]
mod tests {
    use shoal_core::EvalReport;

    use super::super::record::record_from_stats;
    use super::*;
    use crate::Counters;

    fn stats_with_mean(mean: f64) -> WorkerStats {
        WorkerStats {
            episodes: 10,
            env_steps: 100,
            eval: Some(EvalReport {
                episodes: 2,
                return_mean: mean,
                return_std: 0.0,
                length_mean: 5.0,
                success_rate: None,
            }),
            ..Default::default()
        }
    }

    #[test]
    fn best_mean_wins_and_ties_go_to_the_lowest_rank() {
        let stats: Vec<_> = [1.0, 3.0, 3.0, 2.0].map(stats_with_mean).into();
        let record = promote(
            record_from_stats("pool", &mut Counters::default(), &stats),
            &stats,
        );
        assert_eq!(winner_of(&record), 1);
        assert_eq!(
            record.field(WORKER_EVAL_MEANS),
            Some(&RecordValue::Numbers(vec![1.0, 3.0, 3.0, 2.0]))
        );
        assert_eq!(
            (record.episodes, record.env_steps, record.eval_env_steps),
            (40, 400, 40)
        );
    }

    #[test]
    fn a_nan_mean_never_wins() {
        let stats: Vec<_> = [f64::NAN, -5.0, f64::NAN].map(stats_with_mean).into();
        assert_eq!(
            winner_of(&promote(
                IterationRecord::new("pool", 2, Counters::default()),
                &stats
            )),
            1
        );
        let all_nan: Vec<_> = [f64::NAN, f64::NAN].map(stats_with_mean).into();
        assert_eq!(
            winner_of(&promote(
                IterationRecord::new("pool", 2, Counters::default()),
                &all_nan
            )),
            0
        );
    }

    #[test]
    fn zero_episodes_per_iteration_is_a_config_error() {
        let config_error = |config: PoolConfig| match config.validate() {
            Err(shoal_core::Error::Config(message)) => message,
            other => panic!("expected a config error, got {other:?}"),
        };
        assert_eq!(
            config_error(PoolConfig::new(
                Schedule::default().episodes_per_iteration(0)
            )),
            "pool: episodes_per_iteration must be at least 1"
        );
        assert_eq!(
            config_error(PoolConfig::default().selection_episodes(0)),
            "pool: selection_episodes must be at least 1"
        );
        assert_eq!(
            config_error(PoolConfig::new(
                Schedule::default()
                    .episodes_per_iteration(10)
                    .eval_episodes(0)
            )),
            "pool: eval_episodes must be at least 1 when eval_interval is set"
        );
        PoolConfig::new(
            Schedule::default()
                .episodes_per_iteration(1)
                .eval_interval(0)
                .eval_episodes(0),
        )
        .selection_episodes(1)
        .validate()
        .expect("one episode of each is enough");
    }
}
