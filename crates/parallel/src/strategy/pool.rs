//! The branch-and-merge pool ([`Pool`], [`PoolConfig`]): every iteration each
//! worker improves a copy of the best agent so far, the candidates are
//! evaluated with the policy frozen, and the best one is promoted.

use serde::{Deserialize, Serialize};
use shoal_core::{Learner, Result, derive_seed};

use super::{
    Context, Counters, IterationRecord, Strategy, WorkerStats, check_eval, record_from_stats,
    require,
};

/// The pool's [`Strategy::name`].
const NAME: &str = "pool";

/// Settings of the branch-and-merge [`Pool`].
///
/// ```
/// use shoal_parallel::PoolConfig;
/// let config = PoolConfig::default().iterations(500).selection_episodes(3);
/// assert_eq!(config.episodes_per_iteration, 10);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PoolConfig {
    /// Total iterations of the run, counting those done before a resume.
    /// Default: 100.
    pub iterations: u64,
    /// Training episodes each worker runs per iteration. Default: 10.
    pub episodes_per_iteration: usize,
    /// Frozen-policy episodes per candidate per iteration, on which the
    /// winner is selected. Default: 5.
    pub selection_episodes: usize,
    /// Rank 0 evaluates the promoted agent every this many iterations (and
    /// after the last) on the fixed seed [`PoolConfig::seed`], apart from
    /// the selection; 0 never. Default: 10.
    pub eval_interval: u64,
    /// Episodes of that evaluation. Default: 5.
    pub eval_episodes: usize,
    /// The evaluation seed, the same for every evaluation, as a single
    /// learner's run uses it. Iteration `i` selects on the seed
    /// `derive_seed(seed ^ SELECTION_STREAM, i)`, which all candidates share
    /// (the same starting states) and the evaluation never sees. Default: 0.
    pub seed: u64,
    /// Every this many iterations (and after the last) each worker's replay
    /// memory is gathered into [`IterationRecord::memories`] for a
    /// checkpoint; 0 never. Default: 0.
    pub memory_interval: u64,
}

/// Keeps the selection seeds apart from the evaluation seed.
const SELECTION_STREAM: u64 = 0x5e1e_c710_0000_0000;

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            iterations: 100,
            episodes_per_iteration: 10,
            selection_episodes: 5,
            eval_interval: 10,
            eval_episodes: 5,
            seed: 0,
            memory_interval: 0,
        }
    }
}

impl PoolConfig {
    /// Sets the total number of iterations.
    #[must_use]
    pub fn iterations(mut self, iterations: u64) -> Self {
        self.iterations = iterations;
        self
    }

    /// Sets the training episodes per worker per iteration.
    #[must_use]
    pub fn episodes_per_iteration(mut self, episodes: usize) -> Self {
        self.episodes_per_iteration = episodes;
        self
    }

    /// Sets the selection episodes per candidate.
    #[must_use]
    pub fn selection_episodes(mut self, episodes: usize) -> Self {
        self.selection_episodes = episodes;
        self
    }

    /// Sets how often rank 0 evaluates the promoted agent (0: never).
    #[must_use]
    pub fn eval_interval(mut self, interval: u64) -> Self {
        self.eval_interval = interval;
        self
    }

    /// Sets the episodes of that evaluation.
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

    fn validate(&self) -> Result<()> {
        require(self.episodes_per_iteration > 0, || {
            "pool: episodes_per_iteration must be at least 1".into()
        })?;
        require(self.selection_episodes > 0, || {
            "pool: selection_episodes must be at least 1".into()
        })?;
        check_eval(NAME, self.eval_interval, self.eval_episodes)
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
///    apart ([`IterationRecord::selection`]) and the curve that compares
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
/// use shoal_parallel::{Communicator, Pool, PoolConfig, Strategy, keep_going, run_threads};
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
///     let mut pool = Pool::new(PoolConfig::default().iterations(3).episodes_per_iteration(2));
///     let summary = pool.run(comm, &mut learner, &mut keep_going)?;
///     Ok((summary.last.unwrap().winner, learner.skill))
/// })
/// .unwrap();
/// assert_eq!(winners, vec![(Some(1), 6.0), (Some(1), 6.0)]);
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

    fn iterations(&self) -> u64 {
        self.config.iterations
    }

    fn memory_interval(&self) -> u64 {
        self.config.memory_interval
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
        let selection_seed = derive_seed(config.seed ^ SELECTION_STREAM, ctx.iteration());
        let outcome = learner
            .learn(config.episodes_per_iteration)
            .and_then(|report| {
                let mut stats = WorkerStats::from_report(&report);
                stats.eval = Some(learner.evaluate(config.selection_episodes, selection_seed)?);
                Ok(stats)
            });
        let mut record =
            ctx.share_record(outcome, |stats| Ok(promote(NAME, ctx.counters(), stats)))?;
        let comm = ctx.comm();
        let winner = record.winner.expect("the pool always names a winner");
        let mut state = if comm.rank() == winner {
            learner.save_state()
        } else {
            Vec::new()
        };
        comm.broadcast_bytes(&mut state, winner)?;
        learner.load_state(&state)?;
        if ctx.is_due(config.eval_interval) {
            let evaluated = comm.is_root().then(|| {
                ctx.evaluate_into(learner, config.eval_episodes, config.seed, &mut record)?;
                Ok(record)
            });
            record = ctx.share(evaluated)?;
        }
        Ok(record)
    }
}

/// Rank 0's decision: the record of an iteration, naming the winner.
fn promote(strategy: &str, mut counters: Counters, stats: &[WorkerStats]) -> IterationRecord {
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
    let mut record = record_from_stats(strategy, &mut counters, stats);
    record.winner = Some(winner);
    record.selection = stats[winner].eval.clone();
    record.scalars = stats[winner].scalars.clone();
    record.worker_eval_means = means;
    record
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_core::EvalReport;

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
        let record = promote("pool", Counters::default(), &stats);
        assert_eq!(record.winner, Some(1));
        assert_eq!(record.worker_eval_means, vec![1.0, 3.0, 3.0, 2.0]);
        assert_eq!(
            (record.episodes, record.env_steps, record.eval_env_steps),
            (40, 400, 40)
        );
    }

    #[test]
    fn a_nan_mean_never_wins() {
        let stats: Vec<_> = [f64::NAN, -5.0, f64::NAN].map(stats_with_mean).into();
        assert_eq!(promote("pool", Counters::default(), &stats).winner, Some(1));
        let all_nan: Vec<_> = [f64::NAN, f64::NAN].map(stats_with_mean).into();
        assert_eq!(
            promote("pool", Counters::default(), &all_nan).winner,
            Some(0)
        );
    }

    #[test]
    fn zero_episodes_per_iteration_is_a_config_error() {
        let config_error = |config: PoolConfig| match config.validate() {
            Err(shoal_core::Error::Config(message)) => message,
            other => panic!("expected a config error, got {other:?}"),
        };
        assert_eq!(
            config_error(PoolConfig::default().episodes_per_iteration(0)),
            "pool: episodes_per_iteration must be at least 1"
        );
        assert_eq!(
            config_error(PoolConfig::default().selection_episodes(0)),
            "pool: selection_episodes must be at least 1"
        );
        assert_eq!(
            config_error(PoolConfig::default().eval_episodes(0)),
            "pool: eval_episodes must be at least 1 when eval_interval is set"
        );
        PoolConfig::default()
            .episodes_per_iteration(1)
            .selection_episodes(1)
            .eval_interval(0)
            .eval_episodes(0)
            .validate()
            .expect("one episode of each is enough");
    }
}
