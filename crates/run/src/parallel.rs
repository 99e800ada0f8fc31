//! The parallel loop: every rank builds its learner and strategy, rank 0
//! alone touches the run directory, and the strategy's iterations are
//! recorded and checkpointed with every worker's replay memory.

use std::path::PathBuf;
use std::sync::Mutex;

use shoal_rl_core::{Error, Learner, Result, StopFlag};
use shoal_rl_eval::{RunDir, Summary};
use shoal_rl_parallel::{
    Backend, Communicator, Control, IterationRecord, Resume, Schedule, Strategy, launch_with,
};

use crate::claim::{OpenRun, open_run};
use crate::finish::{finish_run, interrupted_error, write_interrupted};
use crate::recorder::{
    Recorder, STATE_BLOB, checkpoint_counters, eval_seed, worker_memories, worker_states,
};
use crate::spec::{RunOptions, RunSpec};
use crate::stop::stop_guard;

/// What a strategy factory gets on each rank to build its strategy: the
/// schedule the runtime derives from the run's budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct StrategySetup {
    /// This rank.
    pub rank: usize,
    /// Number of workers.
    pub workers: usize,
    /// Iterations of the whole run: `train.episodes` over
    /// `workers × episodes_per_iteration`, rounded up.
    pub iterations: u64,
    /// Training episodes per worker and iteration.
    pub episodes_per_iteration: usize,
    /// Evaluate every this many iterations (`train.eval_every` in iterations).
    pub eval_interval: u64,
    /// Episodes per evaluation (`train.eval_episodes`).
    pub eval_episodes: usize,
    /// Checkpoint every this many iterations (`train.checkpoint_every` in
    /// iterations); gather every worker's memory on the same ones.
    pub checkpoint_interval: u64,
    /// Seed of the evaluation episodes, the same for every evaluation.
    pub eval_seed: u64,
    /// Training env steps over all workers (`train.env_steps`): the run
    /// ends after the iteration that reaches them.
    pub env_steps: Option<u64>,
}

impl StrategySetup {
    /// The schedule of `spec` on `workers` workers, seen from `rank`.
    pub fn new(spec: &RunSpec, rank: usize, workers: usize) -> Self {
        let per_worker = spec.parallel.episodes_per_iteration.max(1) as u64;
        let all = per_worker * workers.max(1) as u64;
        let eval_interval = (spec.train.eval_every / all).max(1);
        StrategySetup {
            rank,
            workers,
            iterations: spec.train.episodes.div_ceil(all).max(1),
            episodes_per_iteration: per_worker as usize,
            eval_interval,
            eval_episodes: spec.train.eval_episodes,
            // A run that may stop at any evaluation checkpoints at each, with
            // every worker's memory, so where it stops it can be resumed.
            checkpoint_interval: match spec.train.stop_at_target {
                true => eval_interval,
                false => (spec.train.checkpoint_every / all).max(1),
            },
            eval_seed: eval_seed(spec.seed),
            env_steps: spec.train.env_steps,
        }
    }

    /// The [`Schedule`] a strategy config takes: these iterations,
    /// episodes, evaluations, and memories gathered at every checkpoint.
    pub fn schedule(&self) -> Schedule {
        Schedule::default()
            .iterations(self.iterations)
            .episodes_per_iteration(self.episodes_per_iteration)
            .eval_interval(self.eval_interval)
            .eval_episodes(self.eval_episodes)
            .seed(self.eval_seed)
            .memory_interval(self.checkpoint_interval)
            .env_steps(self.env_steps)
    }
}

/// Trains `spec.parallel.workers` learners together with the strategy
/// `make_strategy` builds on every rank, on `spec.parallel.backend`.
/// `make_learner(rank)` builds rank `rank`'s learner (seed it
/// `seed + rank`: [`shoal_rl_parallel::worker_seed`]). The strategy's
/// [`Strategy::name`] must be `spec.parallel.strategy`.
///
/// Returns the run directory and summary on rank 0, `None` on the others
/// (and in worker processes, which should simply exit).
pub fn train_parallel<L, S, M, F>(
    spec: &RunSpec,
    options: &RunOptions,
    make_learner: M,
    make_strategy: F,
) -> Result<Option<(PathBuf, Summary)>>
where
    L: Learner,
    S: Strategy<L>,
    M: Fn(usize) -> Result<L> + Sync,
    F: Fn(&StrategySetup) -> Result<S> + Sync,
{
    let guard = stop_guard(spec, options)?;
    let stop = guard.flag();
    let processes = options
        .worker_processes
        .clone()
        .unwrap_or_default()
        .timeout(spec.parallel.timeout);
    // The process that starts a threads or processes run is its rank 0: it
    // claims the run directory before any worker exists, so that a refusal
    // is one line from one process. MPI ranks learn who is rank 0 only
    // inside `launch_with`.
    let claimed = match spec.parallel.backend {
        Backend::Mpi => None,
        _ if shoal_rl_parallel::is_worker_process() => None,
        _ => Some(open_run(spec, options)?),
    };
    let claimed = Mutex::new(claimed);
    launch_with(
        spec.parallel.backend,
        spec.parallel.workers,
        &processes,
        |comm: &dyn Communicator| {
            train_rank(
                spec,
                options,
                stop,
                comm,
                &claimed,
                &make_learner,
                &make_strategy,
            )
        },
    )
    .map(Option::flatten)
    .and_then(|finished| match finished {
        Some((run, summary)) if summary.is_interrupted() => {
            Err(interrupted_error(spec, &run, &summary))
        }
        other => Ok(other),
    })
}

/// The body every rank runs in a parallel run.
fn train_rank<L, S, M, F>(
    spec: &RunSpec,
    options: &RunOptions,
    stop: &StopFlag,
    comm: &dyn Communicator,
    claimed: &Mutex<Option<OpenRun>>,
    make_learner: &M,
    make_strategy: &F,
) -> Result<Option<(PathBuf, Summary)>>
where
    L: Learner,
    S: Strategy<L>,
    M: Fn(usize) -> Result<L>,
    F: Fn(&StrategySetup) -> Result<S>,
{
    // Rank 0 alone touches the file system; the others learn whether it could.
    let mut setup = None;
    let mut status = vec![1u8];
    if comm.is_root() {
        let claimed = claimed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        match claimed
            .map_or_else(|| open_run(spec, options), Ok)
            .and_then(|(run, ckpt)| {
                let recorder =
                    Recorder::new(spec, RunDir::new(run.path()), ckpt.as_ref(), options)?;
                Ok((run, ckpt, recorder))
            }) {
            Ok(s) => setup = Some(s),
            Err(e) => {
                status[0] = 0;
                comm.broadcast_bytes(&mut status, 0)?;
                return Err(e);
            }
        }
    }
    comm.broadcast_bytes(&mut status, 0)?;
    if status[0] == 0 {
        return Err(Error::Comm(
            "rank 0 could not set up the run directory".into(),
        ));
    }

    let schedule = StrategySetup::new(spec, comm.rank(), comm.size());
    let mut strategy = make_strategy(&schedule)?;
    if strategy.name() != spec.parallel.strategy {
        return Err(Error::Config(format!(
            "the strategy calls itself `{}` but parallel.strategy is `{}`; give both one name",
            strategy.name(),
            spec.parallel.strategy
        )));
    }
    let mut learner = make_learner(comm.rank())?;
    // The strategies hand each rank its own replay memory back from rank 0.
    let mut resume = match &setup {
        Some((_, Some(ckpt), _)) => Resume {
            counters: checkpoint_counters(ckpt),
            state: Some(ckpt.blob(STATE_BLOB)?.to_vec()),
            memories: worker_memories(ckpt)?,
            states: worker_states(ckpt)?,
            ..Resume::default()
        },
        _ => Resume::default(),
    };
    // Rank 0's flag decides for every rank (all ranks may get the signal).
    resume.stop = Some(stop.clone());
    let mut recorder = setup.as_mut().map(|(_, _, recorder)| recorder);
    let (checkpoint_interval, iterations) = (schedule.checkpoint_interval, schedule.iterations);
    let outcome = strategy.resume(
        comm,
        &mut learner,
        &resume,
        &mut |record: &IterationRecord, learner: &L| -> Result<Control> {
            let recorder = recorder.as_mut().expect("the callback runs on rank 0");
            recorder.iteration(record, learner, checkpoint_interval, iterations)
        },
    )?;
    let stopped = outcome.last.as_ref().is_some_and(|r| r.stop_requested);
    let Some((run, _, mut recorder)) = setup else {
        // Rank 0 reports the stop; the others did as told.
        return Ok(None);
    };
    if stopped {
        // Reported after the workers were let go (`run_parallel`): an error
        // here would end the run on them as a failure.
        let summary = write_interrupted(spec, &mut recorder, outcome.counters)?;
        return Ok(Some((run.path().to_path_buf(), summary)));
    }
    recorder.progress.finish();
    let wall = recorder.wall();
    let summary = finish_run(spec, &mut recorder, &mut learner, outcome.counters, wall)?;
    Ok(Some((run.path().to_path_buf(), summary)))
}
