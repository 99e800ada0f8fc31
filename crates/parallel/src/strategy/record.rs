//! What a strategy reports: counters, the per-iteration record and the
//! workers' stats it is built from, the resume point and the run summary.

use serde::{Deserialize, Serialize};
use shoal_rl_core::{Error, EvalReport, LearnReport, Result, StopFlag};

use crate::profile::{Measured, WorkerProfile};

/// The seed of rank `rank`'s generators for a run seeded with `seed`:
/// `seed + rank`, as MPI programs conventionally do.
///
/// ```
/// assert_eq!(shoal_rl_parallel::worker_seed(7, 2), 9);
/// ```
pub fn worker_seed(seed: u64, rank: usize) -> u64 {
    seed.wrapping_add(rank as u64)
}

/// Progress counters of a run, kept across resumes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Iterations completed.
    pub iteration: u64,
    /// Training episodes completed, summed over all workers.
    pub episodes: u64,
    /// Training environment steps, summed over all workers.
    pub env_steps: u64,
    /// Environment steps spent in frozen-policy evaluation, summed over all workers.
    pub eval_env_steps: u64,
}

/// Where a resumed run starts: the counters of the run so far and,
/// optionally, the learner state to start from (used on rank 0; see each
/// strategy for how it reaches the others).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resume {
    /// Counters of the run so far; the next iteration is `counters.iteration + 1`.
    pub counters: Counters,
    /// A state written by [`Learner::save_state`](shoal_rl_core::Learner::save_state),
    /// or `None` to start from rank 0's learner as it is.
    pub state: Option<Vec<u8>>,
    /// Every worker's replay memory as [`IterationRecord::memories`] held
    /// it (index = rank), loaded with
    /// [`Learner::load_memory`](shoal_rl_core::Learner::load_memory) by the
    /// strategies whose workers keep their own (pool, averaging); empty to
    /// keep each learner's memory as it is. Its length must be the world size.
    pub memories: Vec<Vec<u8>>,
    /// Every worker's learner state as [`IterationRecord::states`] held it
    /// (index = rank), for strategies whose workers differ between syncs:
    /// after `state` is loaded everywhere, each rank loads its own
    /// ([`Context::start_from_root`](crate::Context::start_from_root)). Empty
    /// when every worker held rank 0's state. Its length must be the world size.
    pub states: Vec<Vec<u8>>,
    /// Rank 0's stop request (SIGINT, SIGTERM): when raised, the iteration
    /// under way finishes, every worker's memory is gathered, rank 0's
    /// callback sees [`IterationRecord::stop_requested`] and the run ends on
    /// every rank. `None` (the default) costs nothing; with a flag, each
    /// iteration shares rank 0's answer in one one-byte broadcast.
    pub stop: Option<StopFlag>,
}

/// A value a strategy puts into its iteration's record
/// ([`IterationRecord::fields`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum RecordValue {
    /// A count or an index (a rank).
    Count(u64),
    /// One number.
    Number(f64),
    /// Numbers by rank, or any list.
    Numbers(Vec<f64>),
}

/// One iteration of a strategy, as rank 0 reports it (one line of `metrics.jsonl`).
///
/// Build one with [`IterationRecord::new`] and set the fields that apply;
/// new fields may be added, so it cannot be written as a struct literal
/// outside this crate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct IterationRecord {
    /// The strategy's [`Strategy::name`](crate::Strategy::name).
    pub strategy: String,
    /// Number of this iteration, from 1; equals the iterations completed.
    pub iteration: u64,
    /// Number of workers (ranks).
    pub workers: usize,
    /// Training episodes so far, all workers.
    pub episodes: u64,
    /// Training environment steps so far, all workers.
    pub env_steps: u64,
    /// Evaluation environment steps so far, all workers.
    pub eval_env_steps: u64,
    /// Mean return of this iteration's training episodes over all workers
    /// (`None` if there were none).
    pub train_return_mean: Option<f64>,
    /// Success rate of this iteration's training episodes, for goal tasks.
    pub train_success_rate: Option<f64>,
    /// Frozen-policy evaluation of the current agent on the run's fixed
    /// evaluation seed, if one ran this iteration (the pool: of the promoted
    /// agent, after and apart from the selection).
    pub eval: Option<EvalReport>,
    /// What only this strategy reports, under names of its own, in order
    /// (the pool: `pool/winner`, `pool/worker_eval_means`, …); written into
    /// the iteration's line of `metrics.jsonl` as they are.
    pub fields: Vec<(String, RecordValue)>,
    /// Scalars of the update that produced the current agent (losses,
    /// entropy), namespaced as in [`LearnReport::scalars`].
    pub scalars: Vec<(String, f64)>,
    /// Every worker's replay memory ([`Learner::save_memory`](shoal_rl_core::Learner::save_memory)), index =
    /// rank, on the iterations where the strategy gathers them for a
    /// checkpoint (`memory_interval` of the pool and averaging configs);
    /// `None` on other iterations and for learners that keep no memory.
    /// Rank 0's callback alone sees it; it is never serialised.
    #[serde(skip)]
    pub memories: Option<Vec<Vec<u8>>>,
    /// Every worker's learner state ([`Learner::save_state`](shoal_rl_core::Learner::save_state)),
    /// index = rank, gathered with the memories, when some worker's differs
    /// from rank 0's (workers that learn alone between syncs); `None`
    /// otherwise. A checkpoint keeps them, so a resume restores each
    /// worker exactly. Rank 0's callback alone sees it; never serialised.
    #[serde(skip)]
    pub states: Option<Vec<Vec<u8>>>,
    /// Where every worker's time went since the previous record, by rank
    /// (empty if the strategy did not attach profiles; see
    /// [`Context::with_profile`](crate::Context::with_profile)). Measured, so it differs from run to run
    /// and takes no part in comparing records; rank 0 alone holds it.
    #[serde(skip)]
    pub profile: Measured<Vec<WorkerProfile>>,
    /// A stop was requested on rank 0 ([`Resume::stop`]): the run ends after
    /// this iteration, and [`IterationRecord::memories`] holds every
    /// worker's memory for the checkpoint that lets it continue.
    #[serde(skip)]
    pub stop_requested: bool,
    /// This iteration spent the schedule's env-step budget
    /// ([`Schedule::env_steps`](crate::Schedule::env_steps)): the run ends
    /// after it as after its last iteration, every worker's memory in
    /// [`IterationRecord::memories`] for the final checkpoint.
    #[serde(skip)]
    pub budget_spent: bool,
}

impl IterationRecord {
    /// The record of `strategy`'s iteration `counters.iteration` over
    /// `workers` workers, with the counters after it and nothing else.
    ///
    /// ```
    /// use shoal_rl_parallel::{Counters, IterationRecord};
    /// let counters = Counters { iteration: 3, episodes: 12, ..Counters::default() };
    /// let mut record = IterationRecord::new("local-sgd", 2, counters);
    /// record.train_return_mean = Some(-1.5);
    /// assert_eq!(record.counters(), counters);
    /// ```
    pub fn new(strategy: impl Into<String>, workers: usize, counters: Counters) -> Self {
        IterationRecord {
            strategy: strategy.into(),
            iteration: counters.iteration,
            workers,
            episodes: counters.episodes,
            env_steps: counters.env_steps,
            eval_env_steps: counters.eval_env_steps,
            train_return_mean: None,
            train_success_rate: None,
            eval: None,
            fields: Vec::new(),
            scalars: Vec::new(),
            memories: None,
            states: None,
            profile: Measured::default(),
            stop_requested: false,
            budget_spent: false,
        }
    }

    /// The strategy's own value named `name`, if it set one.
    pub fn field(&self, name: &str) -> Option<&RecordValue> {
        self.fields
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, v)| v)
    }

    /// Sets the strategy's own value `name` (replacing an earlier one).
    pub fn set_field(&mut self, name: impl Into<String>, value: RecordValue) {
        let name = name.into();
        match self.fields.iter_mut().find(|(key, _)| *key == name) {
            Some(slot) => slot.1 = value,
            None => self.fields.push((name, value)),
        }
    }

    /// The counters after this iteration, for a later [`Resume`].
    pub fn counters(&self) -> Counters {
        Counters {
            iteration: self.iteration,
            episodes: self.episodes,
            env_steps: self.env_steps,
            eval_env_steps: self.eval_env_steps,
        }
    }
}

/// How a strategy's run ended; the same on every rank.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// Counters at the end of the run.
    pub counters: Counters,
    /// The last iteration's record (`None` if no iteration ran).
    pub last: Option<IterationRecord>,
    /// Whether the callback asked to stop before the configured iterations.
    pub stopped_early: bool,
}

/// One worker's contribution to an iteration's record, sent to rank 0 by
/// [`Context::share_record`](crate::Context::share_record). Start from [`WorkerStats::from_report`] and
/// set what else applies; new fields may be added.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct WorkerStats {
    /// Training episodes this iteration.
    pub episodes: u64,
    /// Training environment steps this iteration.
    pub env_steps: u64,
    /// Sum of the training episodes' returns.
    pub return_sum: f64,
    /// Episodes that reported a success flag.
    pub flagged: u64,
    /// Of those, how many succeeded.
    pub successes: u64,
    /// This worker's frozen-policy evaluation, if it ran one.
    pub eval: Option<EvalReport>,
    /// Scalars of this worker's update (losses, entropy).
    pub scalars: Vec<(String, f64)>,
    /// A hash of the parameters ([`hash_parameters`]), to check that
    /// workers stay in sync.
    pub parameter_hash: Option<u64>,
    /// This worker's time since its previous record
    /// ([`Context::with_profile`](crate::Context::with_profile) sets it).
    pub profile: Option<WorkerProfile>,
}

impl WorkerStats {
    /// The stats of one worker's training report.
    pub fn from_report(report: &LearnReport) -> Self {
        WorkerStats {
            episodes: report.episode_returns.len() as u64,
            env_steps: report.env_steps(),
            return_sum: report.episode_returns.iter().sum(),
            flagged: report.episode_successes.len() as u64,
            successes: report.episode_successes.iter().filter(|s| **s).count() as u64,
            eval: None,
            scalars: report.scalars.clone(),
            parameter_hash: None,
            profile: None,
        }
    }
}

/// Environment steps an evaluation took.
pub fn eval_steps(eval: &EvalReport) -> u64 {
    (eval.length_mean * eval.episodes as f64).round().max(0.0) as u64
}

/// Builds a record from every worker's stats, advancing `counters`.
pub(crate) fn record_from_stats(
    strategy: &str,
    counters: &mut Counters,
    stats: &[WorkerStats],
) -> IterationRecord {
    let episodes: u64 = stats.iter().map(|s| s.episodes).sum();
    let flagged: u64 = stats.iter().map(|s| s.flagged).sum();
    counters.iteration += 1;
    counters.episodes += episodes;
    counters.env_steps += stats.iter().map(|s| s.env_steps).sum::<u64>();
    counters.eval_env_steps += stats
        .iter()
        .filter_map(|s| s.eval.as_ref())
        .map(eval_steps)
        .sum::<u64>();
    let mut record = IterationRecord::new(strategy, stats.len(), *counters);
    record.train_return_mean =
        (episodes > 0).then(|| stats.iter().map(|s| s.return_sum).sum::<f64>() / episodes as f64);
    record.train_success_rate = (flagged > 0)
        .then(|| stats.iter().map(|s| s.successes).sum::<u64>() as f64 / flagged as f64);
    record.profile = Measured(
        stats
            .iter()
            .map(|s| s.profile)
            .collect::<Option<Vec<_>>>()
            .unwrap_or_default(),
    );
    record
}

/// Checks, on rank 0, that the workers of each block of `group_size`
/// consecutive ranks reported the same [`WorkerStats::parameter_hash`]
/// after `iteration`; `why` ends the error that names the first that did
/// not.
pub(crate) fn check_in_sync(
    stats: &[WorkerStats],
    group_size: usize,
    iteration: u64,
    why: &str,
) -> Result<()> {
    for (group, members) in stats.chunks(group_size.max(1)).enumerate() {
        let reference = members[0].parameter_hash;
        if let Some(member) = members.iter().position(|s| s.parameter_hash != reference) {
            let first = group * group_size;
            return Err(Error::Comm(format!(
                "parameters of rank {} differ from rank {first} after iteration {iteration}: \
                 {why}",
                first + member
            )));
        }
    }
    Ok(())
}

/// FNV-1a over the bits of `values`: cheap, and enough to spot workers whose
/// parameters drifted apart.
pub fn hash_parameters(values: &[f32]) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for v in values {
        for byte in v.to_bits().to_le_bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash
}
