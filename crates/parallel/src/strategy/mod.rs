//! The [`Strategy`] trait, what a strategy reports each iteration
//! ([`IterationRecord`], [`OnIteration`], [`Control`]) and the helpers the
//! built-in strategies share.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use shoal_core::{Error, EvalReport, LearnReport, Learner, Result, StopFlag};

use crate::comm::{Communicator, comm_error};
use crate::profile::{Measured, TimedComm, WorkerProfile};

pub(crate) mod averaging;
pub(crate) mod gather;
pub(crate) mod pool;

/// A way of training one learner per rank together, written against
/// [`Communicator`] and a learner trait from shoal-core.
///
/// Shaped like ripgrep's `Sink`: three required methods — [`name`],
/// [`iterations`] and [`iteration`], one round of the strategy on this rank
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
/// [`iterations`]: Strategy::iterations
/// [`iteration`]: Strategy::iteration
/// [`run`]: Strategy::run
/// [`resume`]: Strategy::resume
/// [`start`]: Strategy::start
/// [`memory_interval`]: Strategy::memory_interval
///
/// ```
/// use shoal_core::{GradientLearner, Result};
/// use shoal_parallel::{Context, IterationRecord, Strategy, WorkerStats};
///
/// /// Local SGD: train alone, then average the parameters.
/// struct LocalSgd { rounds: u64, episodes: usize }
///
/// impl<L: GradientLearner + ?Sized> Strategy<L> for LocalSgd {
///     fn name(&self) -> &str { "local-sgd" }
///     fn iterations(&self) -> u64 { self.rounds }
///     fn iteration(&mut self, ctx: &Context<'_>, learner: &mut L) -> Result<IterationRecord> {
///         let outcome = learner.learn(self.episodes).map(|r| WorkerStats::from_report(&r));
///         let mut params = learner.parameters();
///         ctx.comm().all_reduce_sum(&mut params)?;
///         let n = ctx.comm().size() as f32;
///         params.iter_mut().for_each(|p| *p /= n);
///         learner.set_parameters(&params)?;
///         // Rank 0 builds the record from everyone's stats; every rank gets it.
///         ctx.share_record(outcome, |stats| Ok(ctx.record(stats)))
///     }
/// }
/// ```
pub trait Strategy<L: Learner + ?Sized> {
    /// The strategy's one name: in configs (`parallel.strategy`), records
    /// and summaries (`pool`, `gather`, `averaging`).
    fn name(&self) -> &str;

    /// Total iterations of the run, counting those done before a resume.
    /// Read after [`Strategy::start`], so a strategy that shares its
    /// configuration from rank 0 there answers with rank 0's.
    fn iterations(&self) -> u64;

    /// Runs iteration [`Context::iteration`] on this rank and returns its
    /// record, the same on every rank, with counters one iteration past
    /// [`Context::counters`] ([`Context::record`] builds such a record and
    /// [`Context::share_record`] shares it).
    fn iteration(&mut self, ctx: &Context<'_>, learner: &mut L) -> Result<IterationRecord>;

    /// Every this many iterations (and after the last) each worker's replay
    /// memory is gathered into [`IterationRecord::memories`] for a
    /// checkpoint; 0 never. Default: 0.
    fn memory_interval(&self) -> u64 {
        0
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
        ctx.iterations = self.iterations();
        let mut last = None;
        let mut stopped_early = false;
        while ctx.counters.iteration < ctx.iterations {
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
            let memories = record.stop_requested
                || due(
                    self.memory_interval(),
                    ctx.counters.iteration,
                    ctx.iterations,
                );
            let control = decide(comm, &mut record, &*learner, memories, on_iteration)?;
            let stop_requested = record.stop_requested;
            last = Some(record);
            if control == Control::Stop || stop_requested {
                stopped_early = ctx.counters.iteration < ctx.iterations;
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

/// What a [`Strategy`] sees of its run: the communicator, the counters
/// before the current iteration, the resume point, and the helpers the
/// built-in strategies use to share outcomes and state.
pub struct Context<'a> {
    comm: &'a dyn Communicator,
    timer: &'a TimedComm<'a>,
    resume: &'a Resume,
    counters: Counters,
    iterations: u64,
    name: &'a str,
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

    /// Total iterations of the run (0 inside [`Strategy::start`]).
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

    /// Shares rank 0's `value` with every rank; see [`share`].
    pub fn share<T: Serialize + DeserializeOwned>(
        &self,
        from_root: Option<Result<T>>,
    ) -> Result<T> {
        share(self.comm, from_root)
    }

    /// The record of the current iteration from every worker's stats, with
    /// the counters advanced by them and nothing else set.
    pub fn record(&self, stats: &[WorkerStats]) -> IterationRecord {
        let mut counters = self.counters;
        record_from_stats(self.name, &mut counters, stats)
    }

    /// Whether a task done every `interval` iterations (0: never) and
    /// after the last is due in the current iteration; see [`due`].
    pub fn is_due(&self, interval: u64) -> bool {
        due(interval, self.iteration(), self.iterations)
    }

    /// Evaluates `learner` with frozen policies ([`Learner::evaluate`]) and
    /// puts the result, and the env steps it took, into `record`. Call it
    /// where only rank 0 runs, e.g. inside [`share_record`]'s `decide`.
    ///
    /// [`share_record`]: Context::share_record
    pub fn evaluate_into<L: Learner + ?Sized>(
        &self,
        learner: &mut L,
        episodes: usize,
        seed: u64,
        record: &mut IterationRecord,
    ) -> Result<()> {
        let eval = learner.evaluate(episodes, seed)?;
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

    /// `outcome` with this worker's [`WorkerProfile`] since its previous
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
    /// optimiser moments included. For [`Strategy::start`].
    pub fn start_from_root<L: Learner + ?Sized>(&self, learner: &mut L) -> Result<()> {
        match (&self.resume.state, self.comm.is_root()) {
            (Some(state), true) => {
                let mut state = state.clone();
                self.comm.broadcast_bytes(&mut state, 0)?;
                learner.load_state(&state)
            }
            _ => self.broadcast_state(learner),
        }
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

/// The callback a [`Strategy`] calls on rank 0 after every iteration: write a
/// line of `metrics.jsonl`, advance a progress bar, save a checkpoint from the
/// learner, or stop early.
///
/// ```
/// use shoal_parallel::{Control, IterationRecord, OnIteration};
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

/// The seed of rank `rank`'s generators for a run seeded with `seed`:
/// `seed + rank`, as MPI programs conventionally do.
///
/// ```
/// assert_eq!(shoal_parallel::worker_seed(7, 2), 9);
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
    /// A state written by [`Learner::save_state`](shoal_core::Learner::save_state),
    /// or `None` to start from rank 0's learner as it is.
    pub state: Option<Vec<u8>>,
    /// Every worker's replay memory as [`IterationRecord::memories`] held
    /// it (index = rank), loaded with
    /// [`Learner::load_memory`](shoal_core::Learner::load_memory) by the
    /// strategies whose workers keep their own (pool, averaging); empty to
    /// keep each learner's memory as it is. Its length must be the world size.
    pub memories: Vec<Vec<u8>>,
    /// Rank 0's stop request (SIGINT, SIGTERM): when raised, the iteration
    /// under way finishes, every worker's memory is gathered, rank 0's
    /// callback sees [`IterationRecord::stop_requested`] and the run ends on
    /// every rank. `None` (the default) costs nothing; with a flag, each
    /// iteration shares rank 0's answer in one one-byte broadcast.
    pub stop: Option<StopFlag>,
}

/// One iteration of a strategy, as rank 0 reports it (one line of `metrics.jsonl`).
///
/// Build one with [`IterationRecord::new`] and set the fields that apply;
/// new fields may be added, so it cannot be written as a struct literal
/// outside this crate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct IterationRecord {
    /// The strategy's [`Strategy::name`].
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
    /// Pool only: the winner's selection evaluation, the best of the
    /// candidates' scores and so biased upward as an estimate of its
    /// quality; [`IterationRecord::eval`] is the unbiased one.
    pub selection: Option<EvalReport>,
    /// Pool only: the rank whose candidate was promoted.
    pub winner: Option<usize>,
    /// Pool only: every worker's evaluation mean return, by rank.
    pub worker_eval_means: Vec<f64>,
    /// Scalars of the update that produced the current agent (losses,
    /// entropy), namespaced as in [`LearnReport::scalars`].
    pub scalars: Vec<(String, f64)>,
    /// Every worker's replay memory ([`Learner::save_memory`]), index =
    /// rank, on the iterations where the strategy gathers them for a
    /// checkpoint (`memory_interval` of the pool and averaging configs);
    /// `None` on other iterations and for learners that keep no memory.
    /// Rank 0's callback alone sees it; it is never serialised.
    #[serde(skip)]
    pub memories: Option<Vec<Vec<u8>>>,
    /// Where every worker's time went since the previous record, by rank
    /// (empty if the strategy did not attach profiles; see
    /// [`Context::with_profile`]). Measured, so it differs from run to run
    /// and takes no part in comparing records; rank 0 alone holds it.
    #[serde(skip)]
    pub profile: Measured<Vec<WorkerProfile>>,
    /// A stop was requested on rank 0 ([`Resume::stop`]): the run ends after
    /// this iteration, and [`IterationRecord::memories`] holds every
    /// worker's memory for the checkpoint that lets it continue.
    #[serde(skip)]
    pub stop_requested: bool,
}

impl IterationRecord {
    /// The record of `strategy`'s iteration `counters.iteration` over
    /// `workers` workers, with the counters after it and nothing else.
    ///
    /// ```
    /// use shoal_parallel::{Counters, IterationRecord};
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
            selection: None,
            winner: None,
            worker_eval_means: Vec::new(),
            scalars: Vec::new(),
            memories: None,
            profile: Measured::default(),
            stop_requested: false,
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
/// [`Context::share_record`]. Start from [`WorkerStats::from_report`] and
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
    /// ([`Context::with_profile`] sets it).
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
///
/// ```
/// use shoal_parallel::{Communicator, run_threads, share};
/// let seen = run_threads(2, |comm: &dyn Communicator| {
///     share(comm, comm.is_root().then(|| Ok(42u32)))
/// })
/// .unwrap();
/// assert_eq!(seen, vec![42, 42]);
/// ```
pub fn share<T: Serialize + DeserializeOwned>(
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
pub(crate) fn own_error_first<T>(own: Result<WorkerStats>, shared: Result<T>) -> Result<T> {
    match (own, shared) {
        (Err(own), Err(_)) => Err(own),
        (_, shared) => shared,
    }
}

pub(crate) fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>> {
    postcard::to_stdvec(value).map_err(|e| comm_error(format!("cannot encode a message: {e}")))
}

pub(crate) fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    postcard::from_bytes(bytes).map_err(|e| comm_error(format!("cannot decode a message: {e}")))
}

/// Checks a strategy's configuration value.
pub(crate) fn require(ok: bool, message: impl FnOnce() -> String) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(Error::Config(message()))
    }
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
    }
    let from_root = comm.is_root().then(|| on_iteration(record, learner));
    // The memories can be large; the record outlives the callback.
    record.memories = None;
    share(comm, from_root)
}

/// Loads each worker's memory of a resumed run (rank 0's `memories`, one per
/// rank; empty: none) into its learner. Rank 0 sends every other rank its own.
pub(crate) fn restore_memories<L: Learner + ?Sized>(
    comm: &dyn Communicator,
    memories: &[Vec<u8>],
    learner: &mut L,
) -> Result<()> {
    let count = comm.is_root().then(|| {
        let n = memories.len();
        require(n == 0 || n == comm.size(), || {
            format!(
                "the checkpoint holds the replay memories of {n} workers, the run has {}",
                comm.size()
            )
        })
        .map(|()| n)
    });
    if share(comm, count)? == 0 {
        return Ok(());
    }
    if comm.is_root() {
        learner.load_memory(&memories[0])?;
    }
    for rank in 1..comm.size() {
        // Only rank 0 holds the memories; the others receive them.
        let mut bytes = memories.get(rank).cloned().unwrap_or_default();
        comm.broadcast_bytes(&mut bytes, 0)?;
        if comm.rank() == rank {
            learner.load_memory(&bytes)?;
        }
    }
    Ok(())
}

/// Whether something done "every `interval` iterations (0: never) and
/// after the last" — an evaluation, a memory gathering — is due at
/// iteration `iteration` of `iterations`.
pub fn due(interval: u64, iteration: u64, iterations: u64) -> bool {
    interval > 0 && (iteration.is_multiple_of(interval) || iteration == iterations)
}

/// Checks that a strategy which evaluates every `interval` iterations has
/// episodes to evaluate with.
pub(crate) fn check_eval(strategy: &str, interval: u64, episodes: usize) -> Result<()> {
    require(interval == 0 || episodes > 0, || {
        format!("{strategy}: eval_episodes must be at least 1 when eval_interval is set")
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use shoal_core::{GradientLearner, LearnReport, Learner, MeanReducer};

    use super::*;
    use crate::testutil::{Quadratic, on_processes, test_path, within};
    use crate::{
        AveragingConfig, GatherConfig, GradientAveraging, Pool, PoolConfig, RolloutGather,
        run_threads,
    };

    const SEED: u64 = 11;
    const LIMIT: Duration = Duration::from_secs(300);

    /// What one rank ends with: rank 0's records, its parameters, the summary.
    type Outcome = (Vec<IterationRecord>, Vec<f32>, RunSummary);

    fn run_with<L, S>(comm: &dyn Communicator, strategy: &mut S, learner: &mut L) -> Result<Outcome>
    where
        L: GradientLearner + Clone,
        S: Strategy<L>,
    {
        let mut records = Vec::new();
        let summary = strategy.run(comm, learner, &mut |record: &IterationRecord, _: &L| {
            records.push(record.clone());
            Ok(Control::Continue)
        })?;
        Ok((records, learner.parameters(), summary))
    }

    /// 8 iterations of 4 episodes, 3 selection episodes per candidate, the
    /// promoted agent evaluated on 2 episodes at iterations 4 and 8.
    fn pool_config() -> PoolConfig {
        PoolConfig::default()
            .iterations(8)
            .episodes_per_iteration(4)
            .selection_episodes(3)
            .eval_interval(4)
            .eval_episodes(2)
            .seed(SEED)
    }

    fn pool_body(comm: &dyn Communicator) -> Result<Outcome> {
        run_with(
            comm,
            &mut Pool::new(pool_config()),
            &mut Quadratic::new(SEED, comm.rank()),
        )
    }

    fn gather_body(comm: &dyn Communicator) -> Result<Outcome> {
        let config = GatherConfig::default()
            .iterations(8)
            .episodes_per_worker(2)
            .eval_interval(4);
        run_with(
            comm,
            &mut RolloutGather::new(config),
            &mut Quadratic::new(SEED, comm.rank()),
        )
    }

    fn averaging_body(comm: &dyn Communicator) -> Result<Outcome> {
        let config = AveragingConfig::default()
            .iterations(8)
            .episodes_per_iteration(2)
            .eval_interval(4);
        let mut learner = Quadratic::new(SEED, comm.rank());
        learner.learning_rate = 0.05;
        // Different starting points: the strategy must broadcast rank 0's.
        learner.params = vec![comm.rank() as f32; 4];
        run_with(comm, &mut GradientAveraging::new(config), &mut learner)
    }

    #[test]
    fn every_record_carries_each_workers_profile() {
        let outcomes = run_threads(3, averaging_body).unwrap();
        let (records, _, _) = &outcomes[0];
        let steps = Quadratic::new(SEED, 0).steps_per_episode as u64;
        for record in records {
            assert_eq!(record.profile.len(), 3, "iteration {}", record.iteration);
            for (rank, worker) in record.profile.iter().enumerate() {
                // One all-reduce of the 4 parameters' gradient per step, 2
                // episodes per iteration; and at least the stats' gather.
                assert_eq!(
                    (worker.all_reduces, worker.all_reduce_values),
                    (2 * steps, 2 * steps * 4),
                    "rank {rank}, iteration {}",
                    record.iteration
                );
                assert!(worker.other_collectives >= 1);
                assert!(worker.compute_cpu_s >= 0.0 && worker.comm_wall_s >= 0.0);
            }
        }
    }

    /// Checks what every strategy promises, whatever the backend.
    fn check_outcomes(outcomes: &[Outcome], iterations: u64) {
        let (records, parameters, summary) = &outcomes[0];
        assert_eq!(records.len() as u64, iterations);
        for (i, record) in records.iter().enumerate() {
            assert_eq!(record.iteration, i as u64 + 1);
            assert_eq!(record.workers, outcomes.len());
        }
        assert_eq!(summary.last.as_ref(), records.last());
        assert!(!summary.stopped_early);
        for (rank, (other_records, other_parameters, other_summary)) in
            outcomes.iter().enumerate().skip(1)
        {
            assert!(other_records.is_empty(), "rank {rank} called the callback");
            assert_eq!(other_summary, summary, "rank {rank} has another summary");
            let bits = |p: &[f32]| p.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(
                bits(other_parameters),
                bits(parameters),
                "rank {rank} has other parameters"
            );
        }
        let first = records.first().unwrap().train_return_mean.unwrap();
        let last = records.last().unwrap().train_return_mean.unwrap();
        assert!(last > first, "training did not improve: {first} -> {last}");
    }

    fn same_on_threads_and_processes(test: &str, body: fn(&dyn Communicator) -> Result<Outcome>) {
        same_on_threads_and_processes_with(test, 3, body);
    }

    fn same_on_threads_and_processes_with(
        test: &str,
        workers: usize,
        body: fn(&dyn Communicator) -> Result<Outcome>,
    ) {
        let test = test.to_string();
        let on_processes = within(LIMIT, move || on_processes(&test, workers, body)).unwrap();
        let Some(on_processes) = on_processes else {
            return;
        };
        let on_threads = run_threads(workers, body).unwrap();
        assert_eq!(on_threads, on_processes);
        check_outcomes(&on_threads, 8);
    }

    /// Sixteen ranks, more than this machine has cores: every strategy still
    /// gives the same bits on threads and on processes (the scaling
    /// experiments rely on it to run N workers oversubscribed).
    #[test]
    fn every_strategy_agrees_on_threads_and_processes_with_16_workers() {
        let test = test_path!(every_strategy_agrees_on_threads_and_processes_with_16_workers);
        // One process run per strategy would re-spawn 15 workers each time;
        // a worker re-runs this whole test, so all three share one run.
        let body = |comm: &dyn Communicator| -> Result<Vec<Outcome>> {
            Ok(vec![
                pool_body(comm)?,
                gather_body(comm)?,
                averaging_body(comm)?,
            ])
        };
        let on_processes = within(LIMIT, move || on_processes(test, 16, body)).unwrap();
        let Some(on_processes) = on_processes else {
            return;
        };
        let on_threads = run_threads(16, body).unwrap();
        assert_eq!(on_threads, on_processes);
        for strategy in 0..3 {
            let outcomes: Vec<Outcome> = on_threads.iter().map(|o| o[strategy].clone()).collect();
            check_outcomes(&outcomes, 8);
        }
    }

    #[test]
    fn pool_gives_identical_results_on_threads_and_processes() {
        same_on_threads_and_processes(
            test_path!(pool_gives_identical_results_on_threads_and_processes),
            pool_body,
        );
    }

    #[test]
    fn gather_gives_identical_results_on_threads_and_processes() {
        same_on_threads_and_processes(
            test_path!(gather_gives_identical_results_on_threads_and_processes),
            gather_body,
        );
    }

    #[test]
    fn averaging_gives_identical_results_on_threads_and_processes() {
        same_on_threads_and_processes(
            test_path!(averaging_gives_identical_results_on_threads_and_processes),
            averaging_body,
        );
    }

    #[test]
    fn pool_records_every_workers_evaluation_and_the_winner() {
        let outcomes = run_threads(3, pool_body).unwrap();
        for record in &outcomes[0].0 {
            assert_eq!(record.worker_eval_means.len(), 3);
            let winner = record.winner.unwrap();
            let best = record
                .worker_eval_means
                .iter()
                .cloned()
                .fold(f64::NEG_INFINITY, f64::max);
            assert_eq!(record.worker_eval_means[winner], best);
            assert_eq!(record.selection.as_ref().unwrap().return_mean, best);
            // Selection: 3 candidates × 3 episodes × 5 steps an iteration;
            // the unbiased evaluation: 2 episodes × 5 steps at 4 and 8.
            let evaluations = record.iteration / 4;
            assert_eq!(record.eval.is_some(), record.iteration % 4 == 0);
            assert_eq!(
                record.eval_env_steps,
                record.iteration * 3 * 3 * 5 + evaluations * 2 * 5
            );
            assert_eq!(record.episodes, record.iteration * 3 * 4);
            assert_eq!(record.env_steps, record.episodes * 5);
        }
    }

    #[test]
    fn pool_evaluates_the_promoted_agent_as_a_single_learner_would() {
        let outcomes = run_threads(3, |comm: &dyn Communicator| {
            let mut learner = Quadratic::new(SEED, comm.rank());
            let mut promoted = Vec::new();
            Pool::new(pool_config()).run(
                comm,
                &mut learner,
                &mut |record: &IterationRecord, l: &Quadratic| {
                    if let Some(eval) = &record.eval {
                        promoted.push((eval.clone(), l.save_state()));
                    }
                    Ok(Control::Continue)
                },
            )?;
            Ok(promoted)
        })
        .unwrap();
        let promoted = &outcomes[0];
        assert_eq!(promoted.len(), 2, "evaluations at iterations 4 and 8");
        for (eval, state) in promoted {
            // A learner outside the pool, loaded with the promoted agent and
            // evaluated on the run's seed, as a single learner's run does.
            let mut alone = Quadratic::new(SEED, 0);
            alone.load_state(state).unwrap();
            let expected = alone.evaluate(2, SEED).unwrap();
            assert_eq!(eval.return_mean.to_bits(), expected.return_mean.to_bits());
            assert_eq!(eval.episodes, 2);
        }
    }

    #[test]
    fn gather_and_averaging_evaluate_at_the_interval() {
        for body in [
            gather_body as fn(&dyn Communicator) -> Result<Outcome>,
            averaging_body,
        ] {
            let outcomes = run_threads(2, body).unwrap();
            let evaluated: Vec<u64> = outcomes[0]
                .0
                .iter()
                .filter(|r| r.eval.is_some())
                .map(|r| r.iteration)
                .collect();
            assert_eq!(evaluated, vec![4, 8]);
        }
    }

    #[test]
    fn strategies_run_on_a_single_worker() {
        for body in [
            pool_body as fn(&dyn Communicator) -> Result<Outcome>,
            gather_body,
            averaging_body,
        ] {
            let outcomes = run_threads(1, body).unwrap();
            assert_eq!(outcomes[0].0.len(), 8);
        }
    }

    #[test]
    fn callback_can_stop_every_rank() {
        let outcomes = run_threads(2, |comm: &dyn Communicator| {
            let mut learner = Quadratic::new(SEED, comm.rank());
            let mut pool = Pool::new(
                PoolConfig::default()
                    .iterations(10)
                    .episodes_per_iteration(1),
            );
            pool.run(
                comm,
                &mut learner,
                &mut |record: &IterationRecord, _: &Quadratic| {
                    Ok(if record.iteration == 3 {
                        Control::Stop
                    } else {
                        Control::Continue
                    })
                },
            )
        })
        .unwrap();
        for summary in outcomes {
            assert!(summary.stopped_early);
            assert_eq!(summary.counters.iteration, 3);
        }
    }

    #[test]
    fn callback_error_ends_the_run_on_every_rank() {
        let err = run_threads(2, |comm: &dyn Communicator| {
            let mut learner = Quadratic::new(SEED, comm.rank());
            learner.learning_rate = 0.05;
            let config = AveragingConfig::default().iterations(5).eval_interval(0);
            GradientAveraging::new(config).run(
                comm,
                &mut learner,
                &mut |_: &IterationRecord, _: &Quadratic| {
                    Err(Error::file("metrics.jsonl", "disk full"))
                },
            )
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "metrics.jsonl: disk full");
    }

    fn failing_body(comm: &dyn Communicator, which: usize) -> Result<RunSummary> {
        let mut learner = Quadratic::new(SEED, comm.rank());
        learner.learning_rate = 0.05; // the same everywhere, as gradient averaging needs
        if comm.rank() == 1 {
            learner.fail_after = Some(3);
        }
        let quiet = &mut keep_going::<Quadratic>;
        match which {
            0 => Pool::new(
                PoolConfig::default()
                    .iterations(5)
                    .episodes_per_iteration(2),
            )
            .run(comm, &mut learner, quiet),
            1 => RolloutGather::new(GatherConfig::default().iterations(5).episodes_per_worker(2))
                .run(comm, &mut learner, quiet),
            _ => GradientAveraging::new(
                AveragingConfig::default()
                    .iterations(5)
                    .episodes_per_iteration(2),
            )
            .run(comm, &mut learner, quiet),
        }
    }

    #[test]
    fn a_failing_learner_ends_the_run_with_its_error_on_threads() {
        for which in 0..3 {
            let err =
                run_threads(3, |comm: &dyn Communicator| failing_body(comm, which)).unwrap_err();
            assert_eq!(
                err.to_string(),
                "invalid configuration: toy learner told to fail after 3 episodes",
                "strategy {which}"
            );
        }
    }

    #[test]
    fn a_failing_learner_ends_the_run_cleanly_on_processes() {
        // One process run (a worker re-runs this whole test) trying the pool and
        // the gather in turn: a failure shared by the strategy leaves the
        // communicator usable.
        let test = test_path!(a_failing_learner_ends_the_run_cleanly_on_processes);
        let messages = within(LIMIT, move || {
            on_processes(test, 2, |comm| {
                let messages: Vec<String> = (0..2)
                    .map(|which| failing_body(comm, which).unwrap_err().to_string())
                    .collect();
                comm.barrier()?;
                Ok(messages)
            })
        });
        let Some(messages) = messages.unwrap() else {
            return;
        };
        let cause = "invalid configuration: toy learner told to fail after 3 episodes";
        assert_eq!(
            messages[0],
            vec![format!("communication failed: rank 1 failed: {cause}"); 2]
        );
        assert_eq!(messages[1], vec![cause.to_string(); 2]);
    }

    #[test]
    fn a_learner_failing_inside_averaging_is_named_on_processes() {
        // The failing worker leaves its peer inside a reduction; rank 0 must
        // still name the cause, not only the mismatch it saw.
        let test = test_path!(a_learner_failing_inside_averaging_is_named_on_processes);
        let result = within(LIMIT, move || {
            on_processes(test, 2, |comm| failing_body(comm, 2))
        });
        let message = result.unwrap_err().to_string();
        assert!(
            message.contains("toy learner told to fail after 3 episodes"),
            "{message}"
        );
    }

    #[test]
    fn resumed_pool_matches_an_uninterrupted_run() {
        let config = PoolConfig::default()
            .iterations(6)
            .episodes_per_iteration(3)
            .selection_episodes(2);
        let uninterrupted = run_threads(2, |comm: &dyn Communicator| {
            let mut learner = Quadratic::new(SEED, comm.rank());
            let mut checkpoint = None;
            let summary = Pool::new(config.clone()).run(
                comm,
                &mut learner,
                &mut |record: &IterationRecord, l: &Quadratic| {
                    if record.iteration == 4 {
                        checkpoint = Some((record.counters(), l.save_state()));
                    }
                    Ok(Control::Continue)
                },
            )?;
            Ok((summary, learner.params.clone(), checkpoint))
        })
        .unwrap();
        let (counters, state) = uninterrupted[0].2.clone().unwrap();
        let resumed = run_threads(2, |comm: &dyn Communicator| {
            let mut learner = Quadratic::new(SEED, comm.rank());
            let resume = Resume {
                counters,
                state: comm.is_root().then(|| state.clone()),
                memories: Vec::new(),
                ..Resume::default()
            };
            let mut pool = Pool::new(config.clone());
            let summary = pool.resume(comm, &mut learner, &resume, &mut keep_going)?;
            Ok((summary, learner.params.clone()))
        })
        .unwrap();
        assert_eq!(resumed[0].0, uninterrupted[0].0);
        assert_eq!(resumed[0].1, uninterrupted[0].1);
    }

    #[test]
    fn every_workers_memory_is_checkpointed_and_restored_on_resume() {
        let config = AveragingConfig::default()
            .iterations(6)
            .episodes_per_iteration(2)
            .eval_interval(0)
            .memory_interval(2);
        // Averaging workers share one learning rate.
        let worker = |rank: usize| Quadratic {
            learning_rate: 0.05,
            ..Quadratic::new(SEED, rank)
        };
        let uninterrupted = run_threads(2, |comm: &dyn Communicator| {
            let mut learner = worker(comm.rank());
            let (mut gathered_at, mut checkpoint) = (Vec::new(), None);
            GradientAveraging::new(config.clone()).run(
                comm,
                &mut learner,
                &mut |record: &IterationRecord, l: &Quadratic| {
                    if let Some(memories) = &record.memories {
                        gathered_at.push(record.iteration);
                        if record.iteration == 4 {
                            checkpoint =
                                Some((record.counters(), l.save_state(), memories.clone()));
                        }
                    }
                    Ok(Control::Continue)
                },
            )?;
            Ok((learner.memory.clone(), gathered_at, checkpoint))
        })
        .unwrap();
        assert_eq!(uninterrupted[0].1, vec![2, 4, 6]);
        let (counters, state, memories) = uninterrupted[0].2.clone().unwrap();
        assert_eq!(memories.len(), 2);
        assert_ne!(memories[0], memories[1], "each worker keeps its own memory");

        let resumed = run_threads(2, |comm: &dyn Communicator| {
            let mut learner = worker(comm.rank());
            let resume = Resume {
                counters,
                state: comm.is_root().then(|| state.clone()),
                memories: if comm.is_root() {
                    memories.clone()
                } else {
                    Vec::new()
                },
                ..Resume::default()
            };
            GradientAveraging::new(config.clone()).resume(
                comm,
                &mut learner,
                &resume,
                &mut keep_going,
            )?;
            Ok(learner.memory.clone())
        })
        .unwrap();
        for rank in 0..2 {
            assert_eq!(resumed[rank], uninterrupted[rank].0, "rank {rank}");
            assert_eq!(resumed[rank].len(), 12, "6 iterations × 2 episodes");
        }

        // The same for the pool, and a checkpoint of the wrong world size.
        let pool_resumed_with = |memories: Vec<Vec<u8>>| {
            run_threads(2, |comm: &dyn Communicator| {
                let mut learner = worker(comm.rank());
                let resume = Resume {
                    memories: memories.clone(),
                    ..Resume::default()
                };
                let pool = PoolConfig::default().iterations(0);
                Pool::new(pool).resume(comm, &mut learner, &resume, &mut keep_going)?;
                Ok(learner.memory.clone())
            })
        };
        let restored = pool_resumed_with(vec![vec![0; 4], 7.0f32.to_le_bytes().to_vec()]);
        assert_eq!(restored.unwrap(), vec![vec![0.0], vec![7.0]]);
        let error = pool_resumed_with(vec![Vec::new()]).unwrap_err().to_string();
        assert!(
            error.contains("replay memories of 1 workers, the run has 2"),
            "{error}"
        );
    }

    #[test]
    fn resumed_gather_continues_the_counters() {
        let resumed = run_threads(2, |comm: &dyn Communicator| {
            let mut learner = Quadratic::new(SEED, comm.rank());
            let counters = Counters {
                iteration: 5,
                episodes: 20,
                env_steps: 100,
                eval_env_steps: 0,
            };
            let mut saved = Quadratic::new(SEED, 0);
            saved.params = vec![1.0, -2.0, 0.5, 3.0];
            let resume = Resume {
                counters,
                state: Some(saved.save_state()),
                memories: Vec::new(),
                ..Resume::default()
            };
            let config = GatherConfig::default()
                .iterations(6)
                .episodes_per_worker(2)
                .eval_interval(0);
            let summary =
                RolloutGather::new(config).resume(comm, &mut learner, &resume, &mut keep_going)?;
            Ok((summary, learner.loss()))
        })
        .unwrap();
        let (summary, loss) = &resumed[1];
        assert_eq!(
            summary.counters,
            Counters {
                iteration: 6,
                episodes: 24,
                env_steps: 120,
                eval_env_steps: 0
            }
        );
        assert!(
            *loss < 0.5,
            "worker 1 did not receive the resumed parameters: loss {loss}"
        );
    }

    /// A learner that ignores the reducer: its workers drift apart.
    #[derive(Clone)]
    struct Selfish(Quadratic);

    impl Learner for Selfish {
        fn learn(&mut self, episodes: usize) -> Result<LearnReport> {
            self.0.learn(episodes)
        }
        fn evaluate(&mut self, episodes: usize, seed: u64) -> Result<EvalReport> {
            self.0.evaluate(episodes, seed)
        }
        fn save_state(&self) -> Vec<u8> {
            self.0.save_state()
        }
        fn load_state(&mut self, bytes: &[u8]) -> Result<()> {
            self.0.load_state(bytes)
        }
    }

    impl GradientLearner for Selfish {
        fn parameters(&self) -> Vec<f32> {
            GradientLearner::parameters(&self.0)
        }
        fn set_parameters(&mut self, params: &[f32]) -> Result<()> {
            GradientLearner::set_parameters(&mut self.0, params)
        }
        fn learn_averaged(
            &mut self,
            episodes: usize,
            _: &mut dyn MeanReducer,
        ) -> Result<LearnReport> {
            self.0.learn(episodes)
        }
    }

    #[test]
    fn averaging_detects_workers_that_drift_apart() {
        let err = run_threads(2, |comm: &dyn Communicator| {
            let mut learner = Selfish(Quadratic::new(SEED, comm.rank()));
            GradientAveraging::new(AveragingConfig::default().iterations(3)).run(
                comm,
                &mut learner,
                &mut keep_going,
            )
        })
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("parameters of rank 1 differ from rank 0 after iteration 1"),
            "{err}"
        );
    }

    #[test]
    fn bad_strategy_configs_are_config_errors() {
        let err = run_threads(1, |comm: &dyn Communicator| {
            let mut learner = Quadratic::new(SEED, 0);
            RolloutGather::new(GatherConfig::default().episodes_per_worker(0)).run(
                comm,
                &mut learner,
                &mut keep_going,
            )
        })
        .unwrap_err();
        assert!(matches!(err, Error::Config(_)), "{err}");
    }

    #[test]
    fn due_at_the_interval_and_after_the_last_iteration() {
        let at: Vec<u64> = (1..=25).filter(|i| due(10, *i, 25)).collect();
        assert_eq!(at, vec![10, 20, 25]);
        assert!((1..=25).all(|i| !due(0, i, 25)));
        assert_eq!((1..=6).filter(|i| due(1, *i, 6)).count(), 6);
    }
}
