//! The branch-and-merge pool ([`Pool`], [`PoolConfig`]): every iteration each
//! worker improves a copy of the best agent so far, the candidates are
//! evaluated with the policy frozen, and the best one is promoted.

use serde::{Deserialize, Serialize};
use shoal_rl_core::{GradientLearner, Learner, Result, derive_seed};

use super::{
    Context, IterationRecord, RecordValue, Schedule, Strategy, WorkerStats, check_in_sync,
    hash_parameters, require,
};
use crate::comm::{CommReducer, Communicator};
use crate::group::GroupComm;

/// The pool's [`Strategy::name`].
const NAME: &str = "pool";

/// Settings of [`Pool`].
///
/// ```
/// use shoal_rl_parallel::{PoolConfig, Schedule};
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
/// use shoal_rl_core::{EvalReport, LearnReport, Learner, Result};
/// use shoal_rl_parallel::{
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
///         self.skill = f64::from_le_bytes(bytes.try_into().map_err(|_| shoal_rl_core::Error::Shape("8 bytes".into()))?);
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
        start_pool(&mut self.config, ctx, learner)
    }

    fn iteration(&mut self, ctx: &Context<'_>, learner: &mut L) -> Result<IterationRecord> {
        let episodes = self.config.schedule.episodes_per_iteration;
        branch_and_merge(ctx, learner, &self.config, Candidate::ALONE, |learner| {
            Ok(WorkerStats::from_report(&learner.learn(episodes)?))
        })
    }
}

/// A [`Pool`] whose candidates are groups of `group_size` consecutive
/// workers ([`GroupComm`]) that average their gradients
/// ([`GradientLearner::learn_averaged`]): a candidate learns from
/// `group_size` workers' episodes per update, and the pool still chooses
/// among `workers / group_size` candidates every iteration.
///
/// Each member scores its candidate on `selection_episodes` of its own
/// (member 0 on the seed every candidate shares, member j on that seed's
/// j-th derived seed), and a candidate's score is its members' mean: the
/// group chooses on `group_size ×` the episodes in the same wall time. The
/// winner's first rank sends its state to every worker. The members of a
/// candidate must train with the same hyperparameters: rank 0 checks every
/// iteration that they hold bit-identical parameters, and ends the run on
/// every rank if not. With `group_size` 1 it runs exactly as [`Pool`].
///
/// The groups' all-reduces are collectives of every worker, so every
/// candidate must make the same number of them (the same learner and
/// schedule do).
#[derive(Clone, Debug)]
pub struct GroupPool {
    config: PoolConfig,
    group_size: usize,
}

impl GroupPool {
    /// A pool of candidates of `group_size` workers each, starting from
    /// rank 0's learner.
    pub fn new(config: PoolConfig, group_size: usize) -> Self {
        GroupPool { config, group_size }
    }

    /// The configuration.
    pub fn config(&self) -> &PoolConfig {
        &self.config
    }

    /// Workers per candidate.
    pub fn group_size(&self) -> usize {
        self.group_size
    }
}

impl<L: GradientLearner + ?Sized> Strategy<L> for GroupPool {
    fn name(&self) -> &str {
        NAME
    }

    fn schedule(&self) -> &Schedule {
        &self.config.schedule
    }

    fn start(&mut self, ctx: &Context<'_>, learner: &mut L) -> Result<()> {
        GroupComm::new(ctx.comm(), self.group_size)?;
        start_pool(&mut self.config, ctx, learner)
    }

    fn iteration(&mut self, ctx: &Context<'_>, learner: &mut L) -> Result<IterationRecord> {
        let group = GroupComm::new(ctx.comm(), self.group_size)?;
        let candidate = Candidate {
            size: self.group_size,
            member: group.rank(),
        };
        let episodes = self.config.schedule.episodes_per_iteration;
        branch_and_merge(ctx, learner, &self.config, candidate, |learner| {
            let report = learner.learn_averaged(episodes, &mut CommReducer::new(&group))?;
            let mut stats = WorkerStats::from_report(&report);
            stats.parameter_hash = Some(hash_parameters(&learner.parameters()));
            Ok(stats)
        })
    }
}

/// Rank 0's configuration is authoritative; every worker starts from rank
/// 0's learner (or the resumed state) and gets its own memory back.
fn start_pool<L: Learner + ?Sized>(
    config: &mut PoolConfig,
    ctx: &Context<'_>,
    learner: &mut L,
) -> Result<()> {
    let root_config = ctx
        .comm()
        .is_root()
        .then(|| config.validate().map(|()| config.clone()));
    *config = ctx.share(root_config)?;
    ctx.start_from_root(learner)?;
    ctx.restore_memories(learner)
}

/// Which candidate this worker trains: how many workers train it, and
/// which of them this one is.
#[derive(Clone, Copy, Debug)]
struct Candidate {
    size: usize,
    member: usize,
}

impl Candidate {
    /// A candidate of one worker, as in [`Pool`].
    const ALONE: Candidate = Candidate { size: 1, member: 0 };
}

/// One pool iteration: `train` this worker's candidate, score it, promote
/// the best and load it everywhere, and evaluate it when due.
fn branch_and_merge<L: Learner + ?Sized>(
    ctx: &Context<'_>,
    learner: &mut L,
    config: &PoolConfig,
    candidate: Candidate,
    train: impl FnOnce(&mut L) -> Result<WorkerStats>,
) -> Result<IterationRecord> {
    let shared_seed = derive_seed(config.schedule.seed ^ SELECTION_STREAM, ctx.iteration());
    let selection_seed = match candidate.member {
        0 => shared_seed,
        member => derive_seed(shared_seed, member as u64),
    };
    let outcome = train(learner).and_then(|mut stats| {
        stats.eval = Some(learner.evaluate(config.selection_episodes, selection_seed)?);
        Ok(stats)
    });
    let mut record = ctx.share_record(outcome, |stats| {
        check_in_sync(
            stats,
            candidate.size,
            ctx.iteration(),
            "the members of a candidate must train with the same settings and pass every \
             gradient through the reducer",
        )?;
        Ok(promote(ctx.record(stats), stats, candidate.size))
    })?;
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

/// Rank 0's decision: the record of an iteration, naming the winner (the
/// first rank of the winning candidate, of `group_size` consecutive ranks).
fn promote(
    mut record: IterationRecord,
    stats: &[WorkerStats],
    group_size: usize,
) -> IterationRecord {
    let means: Vec<f64> = stats
        .iter()
        .map(|s| s.eval.as_ref().map_or(f64::NAN, |e| e.return_mean))
        .collect();
    // A candidate's score is its members' mean (NaN if any member's is).
    let member_mean = |values: &[f64]| values.iter().sum::<f64>() / values.len() as f64;
    let scores: Vec<f64> = means.chunks(group_size).map(member_mean).collect();
    // Strictly greater, scanning in rank order: ties go to the lowest rank.
    let mut best = 0;
    for (candidate, score) in scores.iter().enumerate() {
        if !score.is_nan() && (scores[best].is_nan() || *score > scores[best]) {
            best = candidate;
        }
    }
    let winner = best * group_size;
    record.scalars = stats[winner].scalars.clone();
    record.set_field(WINNER, RecordValue::Count(winner as u64));
    record.set_field(WORKER_EVAL_MEANS, RecordValue::Numbers(means));
    // The winner's selection score: the best of the candidates' and so
    // biased upward; the record's `eval` is the unbiased one.
    let members = &stats[winner..winner + group_size];
    if members.iter().all(|s| s.eval.is_some()) {
        record.set_field(
            "pool/selection_return_mean",
            RecordValue::Number(scores[best]),
        );
        let rates: Option<Vec<f64>> = members
            .iter()
            .map(|s| s.eval.as_ref().and_then(|e| e.success_rate))
            .collect();
        if let Some(rates) = rates {
            record.set_field(
                "pool/selection_success_rate",
                RecordValue::Number(member_mean(&rates)),
            );
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
    use shoal_rl_core::EvalReport;

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
            1,
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
    fn a_candidate_of_several_workers_scores_its_members_mean() {
        // Candidates (ranks 0-1, 2-3, 4-5) score 3, 4 and NaN: the second
        // wins though rank 1 alone is best, and a NaN member disqualifies.
        let stats: Vec<_> = [1.0, 5.0, 4.0, 4.0, 9.0, f64::NAN]
            .map(stats_with_mean)
            .into();
        let record = promote(
            IterationRecord::new("pool", 6, Counters::default()),
            &stats,
            2,
        );
        assert_eq!(winner_of(&record), 2);
        assert_eq!(
            record.field("pool/selection_return_mean"),
            Some(&RecordValue::Number(4.0))
        );
    }

    #[test]
    fn a_nan_mean_never_wins() {
        let stats: Vec<_> = [f64::NAN, -5.0, f64::NAN].map(stats_with_mean).into();
        assert_eq!(
            winner_of(&promote(
                IterationRecord::new("pool", 2, Counters::default()),
                &stats,
                1
            )),
            1
        );
        let all_nan: Vec<_> = [f64::NAN, f64::NAN].map(stats_with_mean).into();
        assert_eq!(
            winner_of(&promote(
                IterationRecord::new("pool", 2, Counters::default()),
                &all_nan,
                1
            )),
            0
        );
    }

    #[test]
    fn zero_episodes_per_iteration_is_a_config_error() {
        let config_error = |config: PoolConfig| match config.validate() {
            Err(shoal_rl_core::Error::Config(message)) => message,
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
