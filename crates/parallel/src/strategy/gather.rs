//! Rollout gathering ([`RolloutGather`], [`GatherConfig`]): every worker
//! collects episodes with the current policy, rank 0 updates on all of them
//! and broadcasts the new weights.

use serde::{Deserialize, Serialize};
use shoal_rl_core::{Error, Result, RolloutLearner};

use super::{
    Context, IterationRecord, Schedule, Strategy, WorkerStats, decode, encode, own_error_first,
};
use crate::comm::{Communicator, comm_error};

/// The gather strategy's [`Strategy::name`].
const NAME: &str = "gather";

/// Settings of [`RolloutGather`]: its [`Schedule`], whose
/// `episodes_per_iteration` is what each worker collects per update (one
/// update sees `episodes_per_iteration × workers` episodes). No worker keeps
/// a memory, so `memory_interval` goes unused (nothing is gathered).
///
/// ```
/// use shoal_rl_parallel::{GatherConfig, Schedule};
/// let config = GatherConfig::new(Schedule::default().episodes_per_iteration(4).eval_interval(0));
/// assert_eq!(config.schedule.iterations, 100);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GatherConfig {
    /// Iterations (updates), episodes each worker collects per iteration,
    /// evaluations. Default: [`Schedule::default`].
    pub schedule: Schedule,
}

impl GatherConfig {
    /// Rollout gathering on `schedule`.
    pub fn new(schedule: Schedule) -> Self {
        GatherConfig { schedule }
    }
}

/// Rollout gathering for any [`RolloutLearner`] — the batch-algorithm
/// pattern of MPI baselines.
///
/// At the start every worker adopts rank 0's learner state (the resumed
/// [`Resume::state`](super::Resume::state), if given), episode counters included. Each iteration every worker collects
/// `episodes_per_worker` episodes with the current policy
/// ([`RolloutLearner::collect`]); rank 0 gathers all rollouts in rank order,
/// updates on them ([`RolloutLearner::update`]) and broadcasts its new
/// parameters ([`RolloutLearner::parameters`] /
/// [`RolloutLearner::set_parameters`]). Only rank 0 updates, so only rank 0's
/// optimiser state matters (and is what a checkpoint should save).
#[derive(Clone, Debug)]
pub struct RolloutGather {
    config: GatherConfig,
}

impl RolloutGather {
    /// A run starting from rank 0's learner.
    pub fn new(config: GatherConfig) -> Self {
        RolloutGather { config }
    }

    /// The configuration.
    pub fn config(&self) -> &GatherConfig {
        &self.config
    }
}

impl<L: RolloutLearner + ?Sized> Strategy<L> for RolloutGather {
    fn name(&self) -> &str {
        NAME
    }

    fn schedule(&self) -> &Schedule {
        &self.config.schedule
    }

    /// No worker keeps a memory: nothing to gather.
    fn memory_interval(&self) -> u64 {
        0
    }

    /// Every rank starts from rank 0's state (the resumed one, if any), not
    /// only its parameters: a worker's learner also counts the episodes it
    /// has collected, which pick each next episode's seeds, so a resumed
    /// worker must continue that count rather than replay its first
    /// episodes. Only rank 0 updates, so its learner holds all there is to
    /// keep and no memories travel.
    fn start(&mut self, ctx: &Context<'_>, learner: &mut L) -> Result<()> {
        // Rank 0's configuration is authoritative.
        let root_config = ctx.comm().is_root().then(|| {
            self.config
                .schedule
                .validate(NAME)
                .map(|()| self.config.clone())
        });
        self.config = ctx.share(root_config)?;
        ctx.start_from_root(learner)
    }

    fn iteration(&mut self, ctx: &Context<'_>, learner: &mut L) -> Result<IterationRecord> {
        let config = &self.config;
        let comm = ctx.comm();
        let collected = learner.collect(config.schedule.episodes_per_iteration);
        let (outcome, rollout) = match collected {
            Ok((rollout, report)) => (Ok(WorkerStats::from_report(&report)), rollout),
            Err(error) => (Err(error), Vec::new()),
        };
        let outcome = ctx.with_profile(outcome);
        let payload = pack(&outcome, &rollout)?;
        drop(rollout);
        // Rollouts travel with the stats, so this strategy gathers them
        // itself rather than through `Context::share_record`.
        let gathered = match comm.gather_bytes(&payload, 0) {
            Ok(gathered) => gathered,
            Err(error) => return Err(outcome.err().unwrap_or(error)),
        };
        let from_root = gathered.map(|all| {
            let mut stats = Vec::with_capacity(all.len());
            let mut rollouts = Vec::with_capacity(all.len());
            for (rank, bytes) in all.iter().enumerate() {
                let (worker, rollout) = unpack(bytes)?;
                stats.push(worker.map_err(|m| comm_error(format!("rank {rank} failed: {m}")))?);
                rollouts.push(rollout);
            }
            let update = learner.update(&rollouts)?;
            let mut record = ctx.record(&stats);
            record.scalars = update.scalars;
            ctx.evaluate_into(learner, &config.schedule, &mut record)?;
            Ok::<IterationRecord, Error>(record)
        });
        let record = own_error_first(outcome, ctx.share(from_root))?;
        sync_parameters(comm, learner)?;
        Ok(record)
    }
}

/// Broadcasts rank 0's parameters to every worker.
fn sync_parameters<L: RolloutLearner + ?Sized>(
    comm: &dyn Communicator,
    learner: &mut L,
) -> Result<()> {
    let mut parameters = learner.parameters();
    comm.broadcast(&mut parameters, 0)?;
    if !comm.is_root() {
        learner.set_parameters(&parameters)?;
    }
    Ok(())
}

/// `[stats length u64][stats][rollout]`: the rollout travels as raw bytes.
fn pack(outcome: &Result<WorkerStats>, rollout: &[u8]) -> Result<Vec<u8>> {
    let wire: std::result::Result<&WorkerStats, String> =
        outcome.as_ref().map_err(|e| e.to_string());
    let stats = encode(&wire)?;
    let mut out = Vec::with_capacity(8 + stats.len() + rollout.len());
    out.extend_from_slice(&(stats.len() as u64).to_le_bytes());
    out.extend_from_slice(&stats);
    out.extend_from_slice(rollout);
    Ok(out)
}

fn unpack(bytes: &[u8]) -> Result<(std::result::Result<WorkerStats, String>, Vec<u8>)> {
    let bad = || comm_error("malformed rollout message");
    let (head, rest) = bytes.split_at_checked(8).ok_or_else(bad)?;
    let len = u64::from_le_bytes(head.try_into().expect("8 bytes")) as usize;
    let (stats, rollout) = rest.split_at_checked(len).ok_or_else(bad)?;
    Ok((decode(stats)?, rollout.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rollout_messages_round_trip() {
        let stats = WorkerStats {
            episodes: 3,
            env_steps: 30,
            ..Default::default()
        };
        let (back, rollout) = unpack(&pack(&Ok(stats), &[7, 8, 9]).unwrap()).unwrap();
        assert_eq!(back.unwrap().env_steps, 30);
        assert_eq!(rollout, vec![7, 8, 9]);
        let (failed, _) = unpack(&pack(&Err(Error::Config("x".into())), &[]).unwrap()).unwrap();
        assert_eq!(failed.unwrap_err(), "invalid configuration: x");
    }
}
