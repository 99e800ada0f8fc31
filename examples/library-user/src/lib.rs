//! What the guides' programs share, as a user's crate would hold it: the
//! local-SGD strategy ([`LocalSgd`]), written against shoal-rl-parallel's
//! public API only. `src/bin/custom_strategy.rs` trains with it by name;
//! the tests register it beside an env and a learner of their own.

use shoal_rl_core::{Error, GradientLearner, Result};
use shoal_rl_parallel::{Context, IterationRecord, Schedule, Strategy, WorkerStats, eval_steps};

/// A program's exit status for `error`, as `shoal`'s: 130 after a clean
/// stop (Ctrl-C, SIGTERM), which a job script may tell from a failure.
pub fn exit_code(error: &Error) -> i32 {
    match error {
        Error::Interrupted(_) => shoal_rl_run::INTERRUPTED_EXIT,
        _ => 1,
    }
}

/// The strategy's one name: in `config.toml`, `metrics.jsonl` and `summary.json`.
pub const NAME: &str = "local-sgd";

/// Average the workers' parameters every `sync_every` iterations of
/// `schedule.episodes_per_iteration` episodes each.
pub struct LocalSgd {
    schedule: Schedule,
    sync_every: u64,
}

impl LocalSgd {
    /// Runs `schedule`, averaging every `sync_every` iterations (1: every one).
    pub fn new(schedule: Schedule, sync_every: u64) -> Self {
        LocalSgd {
            schedule,
            sync_every: sync_every.max(1),
        }
    }
}

impl<L: GradientLearner + ?Sized> Strategy<L> for LocalSgd {
    fn name(&self) -> &str {
        NAME
    }

    /// Its `memory_interval` has each worker's own experience checkpointed.
    fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    // `start` keeps its default: every worker begins from rank 0's learner
    // (or the resumed state) and gets its own replay memory back.

    fn iteration(&mut self, ctx: &Context<'_>, learner: &mut L) -> Result<IterationRecord> {
        // 1. Train alone. A failure anywhere ends the run on every rank,
        //    naming the failing rank, before anyone enters the all-reduce.
        let outcome = learner
            .learn(self.schedule.episodes_per_iteration)
            .map(|report| WorkerStats::from_report(&report));
        // The record carries rank 0's losses, as the built-ins' do.
        let mut record = ctx.share_record(outcome, |stats| Ok(ctx.record(stats)))?;

        // 2. Every `sync_every` iterations, average the parameters: every
        //    worker continues from the mean. Each worker's optimiser has
        //    seen only its own gradients; they all adopt rank 0's, so the
        //    workers leave a sync as one. Between syncs they differ, and
        //    checkpoints keep each worker's own state.
        //    (Not `ctx.is_due`, which is also due after the last iteration:
        //    a run's syncs must not depend on its budget.)
        let comm = ctx.comm();
        if ctx.iteration().is_multiple_of(self.sync_every) {
            let mut params = learner.parameters();
            comm.all_reduce_sum(&mut params)?;
            let workers = comm.size() as f32;
            params.iter_mut().for_each(|p| *p /= workers);
            learner.set_parameters(&params)?;
            ctx.broadcast_state(learner)?;
        }

        // 3. Evaluate the average now and then; rank 0 evaluates, everyone
        //    receives the report so every rank ends with the same record.
        if ctx.is_due(self.schedule.eval_interval) {
            let (episodes, seed) = (self.schedule.eval_episodes, self.schedule.seed);
            let eval = ctx.share(comm.is_root().then(|| learner.evaluate(episodes, seed)))?;
            record.eval_env_steps += eval_steps(&eval);
            record.eval = Some(eval);
        }
        Ok(record)
    }
}
