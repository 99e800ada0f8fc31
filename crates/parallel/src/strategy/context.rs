//! [`Context`]: what a strategy sees of its run, with the helpers the
//! built-in strategies use to share outcomes and state; and the driver's
//! own steps (sharing rank 0's decision, restoring memories).

use serde::Serialize;
use serde::de::DeserializeOwned;
use shoal_rl_core::{Error, Learner, Result};

use super::record::{
    Counters, IterationRecord, Resume, WorkerStats, eval_steps, record_from_stats,
};
use super::schedule::{Schedule, require};
use super::{Control, OnIteration};
use crate::comm::{Communicator, comm_error};
use crate::profile::TimedComm;

/// What a [`Strategy`](crate::Strategy) sees of its run: the communicator, the counters
/// before the current iteration, the resume point, and the helpers the
/// built-in strategies use to share outcomes and state.
pub struct Context<'a> {
    pub(super) comm: &'a dyn Communicator,
    pub(super) timer: &'a TimedComm<'a>,
    pub(super) resume: &'a Resume,
    pub(super) counters: Counters,
    pub(super) iterations: u64,
    pub(super) name: &'a str,
}

impl<'a> Context<'a> {
    /// The communicator of this rank.
    pub fn comm(&self) -> &'a dyn Communicator {
        self.comm
    }

    /// Counters of the run before the current iteration (rank 0's,
    /// shared with every rank).
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// The number of the iteration being run, from 1.
    pub fn iteration(&self) -> u64 {
        self.counters.iteration + 1
    }

    /// Total iterations of the run (0 inside [`Strategy::start`](crate::Strategy::start)).
    pub fn iterations(&self) -> u64 {
        self.iterations
    }

    /// Whether the current iteration is the run's last.
    pub fn is_last(&self) -> bool {
        self.iteration() >= self.iterations
    }

    /// Where the run resumes from (on rank 0; default elsewhere).
    pub fn resume_point(&self) -> &'a Resume {
        self.resume
    }

    /// Shares rank 0's `value` (or its failure) with every rank. On rank 0
    /// pass `Some`; a failure there is broadcast, then returned as the
    /// original error on rank 0 and as [`Error::Comm`] on the others. Other
    /// ranks pass `None`.
    pub fn share<T: Serialize + DeserializeOwned>(
        &self,
        from_root: Option<Result<T>>,
    ) -> Result<T> {
        share(self.comm, from_root)
    }

    /// The record of the current iteration from every worker's stats: the
    /// counters advanced by them, and rank 0's learner scalars (losses,
    /// entropy) as the update's, which a strategy may replace (the pool
    /// reports its winner's).
    pub fn record(&self, stats: &[WorkerStats]) -> IterationRecord {
        let mut counters = self.counters;
        let mut record = record_from_stats(self.name, &mut counters, stats);
        if let Some(first) = stats.first() {
            record.scalars = first.scalars.clone();
        }
        record
    }

    /// Whether a task done every `interval` iterations (0: never) and
    /// after the last is due in the current iteration.
    pub fn is_due(&self, interval: u64) -> bool {
        due(interval, self.iteration(), self.iterations)
    }

    /// When `schedule` has an evaluation due in this iteration, evaluates
    /// `learner` with frozen policies ([`Learner::evaluate`], its
    /// `eval_episodes` on its `seed`) and puts the result, and the env steps
    /// it took, into `record`. Call it where only rank 0 runs, e.g. inside
    /// [`share_record`]'s `decide`.
    ///
    /// [`share_record`]: Context::share_record
    pub fn evaluate_into<L: Learner + ?Sized>(
        &self,
        learner: &mut L,
        schedule: &Schedule,
        record: &mut IterationRecord,
    ) -> Result<()> {
        if !self.is_due(schedule.eval_interval) {
            return Ok(());
        }
        let eval = learner.evaluate(schedule.eval_episodes, schedule.seed)?;
        record.eval_env_steps += eval_steps(&eval);
        record.eval = Some(eval);
        Ok(())
    }

    /// Gathers every rank's `outcome` on rank 0, where `decide` turns all
    /// of them into the iteration's record; the record (or the first
    /// failure, naming its rank) then reaches every rank. This rank's own
    /// error comes back first, so a failing rank reports its cause.
    pub fn share_record(
        &self,
        outcome: Result<WorkerStats>,
        decide: impl FnOnce(&[WorkerStats]) -> Result<IterationRecord>,
    ) -> Result<IterationRecord> {
        let outcome = self.with_profile(outcome);
        let gathered = match gather_outcomes(self.comm, &outcome) {
            Ok(gathered) => gathered,
            // A rank that failed inside a collective left its peers there:
            // report its own error, not the mismatch it caused.
            Err(error) => return Err(outcome.err().unwrap_or(error)),
        };
        let from_root = gathered.map(|all| decide(&all.map_err(Error::Comm)?));
        own_error_first(outcome, share(self.comm, from_root))
    }

    /// `outcome` with this worker's [`WorkerProfile`](crate::WorkerProfile) since its previous
    /// one: CPU time computing and time in collectives, which
    /// [`Context::record`] gathers into [`IterationRecord::profile`].
    /// [`Context::share_record`] calls it; a strategy that gathers its
    /// workers' stats itself calls it just before.
    pub fn with_profile(&self, outcome: Result<WorkerStats>) -> Result<WorkerStats> {
        let profile = self.timer.take();
        outcome.map(|stats| WorkerStats {
            profile: Some(profile),
            ..stats
        })
    }

    /// Loads the resumed state (if any) on every rank, else rank 0's
    /// learner's state, so every worker starts from the same agent,
    /// optimiser moments included; a resumed run whose workers differed
    /// then gives each worker its own state back ([`Resume::states`]).
    /// For [`Strategy::start`](crate::Strategy::start).
    pub fn start_from_root<L: Learner + ?Sized>(&self, learner: &mut L) -> Result<()> {
        match (&self.resume.state, self.comm.is_root()) {
            (Some(state), true) => {
                let mut state = state.clone();
                self.comm.broadcast_bytes(&mut state, 0)?;
                learner.load_state(&state)?;
            }
            _ => self.broadcast_state(learner)?,
        }
        scatter_from_root(self.comm, &self.resume.states, "learner states", |bytes| {
            learner.load_state(bytes)
        })
    }

    /// Every rank adopts rank 0's learner state as it is now
    /// ([`Learner::save_state`]): the same agent and optimiser everywhere.
    pub fn broadcast_state<L: Learner + ?Sized>(&self, learner: &mut L) -> Result<()> {
        let mut state = if self.comm.is_root() {
            learner.save_state()
        } else {
            Vec::new()
        };
        self.comm.broadcast_bytes(&mut state, 0)?;
        if !self.comm.is_root() {
            learner.load_state(&state)?;
        }
        Ok(())
    }

    /// Gives every worker its own replay memory back from the resume point
    /// (rank 0 sends each its own); nothing if the run is fresh.
    pub fn restore_memories<L: Learner + ?Sized>(&self, learner: &mut L) -> Result<()> {
        restore_memories(self.comm, &self.resume.memories, learner)
    }
}

/// Gathers every rank's outcome on rank 0. Rank 0 gets `Some(stats)` if all
/// ranks succeeded, or the first failure as an error message naming the rank.
pub(crate) fn gather_outcomes(
    comm: &dyn Communicator,
    outcome: &Result<WorkerStats>,
) -> Result<Option<std::result::Result<Vec<WorkerStats>, String>>> {
    let mine: std::result::Result<&WorkerStats, String> =
        outcome.as_ref().map_err(|e| e.to_string());
    let bytes = encode(&mine)?;
    let Some(all) = comm.gather_bytes(&bytes, 0)? else {
        return Ok(None);
    };
    let mut stats = Vec::with_capacity(all.len());
    for (rank, bytes) in all.iter().enumerate() {
        match decode::<std::result::Result<WorkerStats, String>>(bytes)? {
            Ok(s) => stats.push(s),
            Err(message) => return Ok(Some(Err(format!("rank {rank} failed: {message}")))),
        }
    }
    Ok(Some(Ok(stats)))
}

/// Shares rank 0's `value` (or its failure) with every rank. On rank 0 pass
/// `Some`; a failure there is broadcast, then returned as the original error
/// on rank 0 and as [`Error::Comm`] on the others. Other ranks pass `None`.
pub(crate) fn share<T: Serialize + DeserializeOwned>(
    comm: &dyn Communicator,
    from_root: Option<Result<T>>,
) -> Result<T> {
    match from_root {
        Some(value) => {
            let wire: std::result::Result<&T, String> = value.as_ref().map_err(|e| e.to_string());
            let mut bytes = encode(&wire)?;
            comm.broadcast_bytes(&mut bytes, 0)?;
            value
        }
        None => {
            let mut bytes = Vec::new();
            comm.broadcast_bytes(&mut bytes, 0)?;
            decode::<std::result::Result<T, String>>(&bytes)?
                .map_err(|message| comm_error(format!("rank 0 stopped the run: {message}")))
        }
    }
}

/// Returns the error of this rank's outcome, or that of the rank that failed,
/// once the failure has been shared.
pub fn own_error_first<T>(own: Result<WorkerStats>, shared: Result<T>) -> Result<T> {
    match (own, shared) {
        (Err(own), Err(_)) => Err(own),
        (_, shared) => shared,
    }
}

/// A message for the wire (postcard), as the strategies send their own
/// payloads (gather's rollouts); a failure is [`Error::Comm`].
pub fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>> {
    postcard::to_stdvec(value).map_err(|e| comm_error(format!("cannot encode a message: {e}")))
}

/// A message [`encode`] wrote; a failure is [`Error::Comm`].
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    postcard::from_bytes(bytes).map_err(|e| comm_error(format!("cannot decode a message: {e}")))
}

/// Shares the rank-0 callback's decision, ending the run on every rank if it
/// failed. With `gather_memories`, every rank first sends its replay memory
/// to rank 0, where the callback finds them in [`IterationRecord::memories`].
pub(crate) fn decide<L: Learner + ?Sized>(
    comm: &dyn Communicator,
    record: &mut IterationRecord,
    learner: &L,
    gather_memories: bool,
    on_iteration: &mut OnIteration<'_, L>,
) -> Result<Control> {
    if gather_memories {
        // A learner without memory sends nothing; all ranks run the same kind.
        let mine = learner.save_memory().unwrap_or_default();
        let all = comm.gather_bytes(&mine, 0)?;
        record.memories = all.filter(|all| all.iter().any(|m| !m.is_empty()));
        // Kept only where some worker's state is not rank 0's: strategies
        // that sync every iteration store one state, as before.
        let all = comm.gather_bytes(&learner.save_state(), 0)?;
        record.states = all.filter(|all| all[1..].iter().any(|s| *s != all[0]));
    }
    let from_root = comm.is_root().then(|| on_iteration(record, learner));
    // The memories can be large; the record outlives the callback.
    record.memories = None;
    record.states = None;
    share(comm, from_root)
}

/// Loads each worker's memory of a resumed run (rank 0's `memories`, one per
/// rank; empty: none) into its learner. Rank 0 sends every other rank its own.
pub(crate) fn restore_memories<L: Learner + ?Sized>(
    comm: &dyn Communicator,
    memories: &[Vec<u8>],
    learner: &mut L,
) -> Result<()> {
    scatter_from_root(comm, memories, "replay memories", |bytes| {
        learner.load_memory(bytes)
    })
}

/// Hands each rank its own item of rank 0's `items` (one per rank; empty:
/// nothing to do) and loads it with `load`; the others' copies of `items`
/// are ignored. Refused on every rank if rank 0 holds another count than
/// the world's (`what` names the items).
fn scatter_from_root(
    comm: &dyn Communicator,
    items: &[Vec<u8>],
    what: &str,
    mut load: impl FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    let count = comm.is_root().then(|| {
        let n = items.len();
        require(n == 0 || n == comm.size(), || {
            format!(
                "the checkpoint holds the {what} of {n} workers, the run has {}",
                comm.size()
            )
        })
        .map(|()| n)
    });
    if share(comm, count)? == 0 {
        return Ok(());
    }
    if comm.is_root() {
        load(&items[0])?;
    }
    for rank in 1..comm.size() {
        // Only rank 0 holds the items; the others receive them.
        let mut bytes = items.get(rank).cloned().unwrap_or_default();
        comm.broadcast_bytes(&mut bytes, 0)?;
        if comm.rank() == rank {
            load(&bytes)?;
        }
    }
    Ok(())
}

/// Whether something done "every `interval` iterations (0: never) and
/// after the last" — an evaluation, a memory gathering — is due at
/// iteration `iteration` of `iterations`.
pub(crate) fn due(interval: u64, iteration: u64, iterations: u64) -> bool {
    interval > 0 && (iteration.is_multiple_of(interval) || iteration == iterations)
}
