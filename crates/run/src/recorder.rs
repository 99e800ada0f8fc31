//! Rank 0's bookkeeping: the metrics schema (`episode`, `update`,
//! `iteration` and `eval` lines), checkpoints with every rank's replay
//! memory, targets and progress output, shared by the single-learner loop
//! and every parallel strategy.

use std::time::Instant;

use shoal_rl_core::{Error, EvalReport, Learner, Result, derive_seed};
use shoal_rl_eval::{
    Checkpoint, CheckpointSelector, CheckpointWriter, MetricsLog, Progress, Record, RecordKind,
    RunDir, Target, load_checkpoint,
};
use shoal_rl_parallel::{Control, Counters, IterationRecord, RecordValue, WorkerProfile};

use crate::progress::{DEFAULT_STATUS_EVERY, ProgressReporter};
use crate::spec::{Reference, RunOptions, RunSpec};

/// Seed stream of the evaluation episodes: the same for every evaluation of a
/// run, so successive evaluations face the same starting states.
const EVAL_STREAM: u64 = 0xE7A1;

/// The evaluation seed of a run with seed `seed`.
pub fn eval_seed(seed: u64) -> u64 {
    derive_seed(seed, EVAL_STREAM)
}

/// Blob name of the learner's state inside a checkpoint.
pub const STATE_BLOB: &str = "learner";
/// Rank 0's replay memory (the only one of a single-learner run); worker
/// `r > 0` of a parallel run keeps its own as `worker-{r}/memory`.
const MEMORY_BLOB: &str = "memory";

/// The checkpoint blob holding rank `rank`'s replay memory.
pub fn memory_blob(rank: usize) -> String {
    if rank == 0 {
        MEMORY_BLOB.into()
    } else {
        format!("worker-{rank}/{MEMORY_BLOB}")
    }
}

/// The checkpoint blob holding rank `rank`'s learner state: rank 0's is the
/// run's state; a worker's own is kept only where it differs.
fn state_blob(rank: usize) -> String {
    if rank == 0 {
        STATE_BLOB.into()
    } else {
        format!("worker-{rank}/{STATE_BLOB}")
    }
}

/// Every worker's learner state in a checkpoint, by rank (empty: every
/// worker held rank 0's).
pub(crate) fn worker_states(ckpt: &Checkpoint) -> Result<Vec<Vec<u8>>> {
    let names: Vec<&str> = ckpt.blob_names().collect();
    if !names.contains(&state_blob(1).as_str()) {
        return Ok(Vec::new());
    }
    let mut states = Vec::new();
    while names.contains(&state_blob(states.len()).as_str()) {
        states.push(ckpt.blob(&state_blob(states.len()))?.to_vec());
    }
    Ok(states)
}

/// Every worker's replay memory in a checkpoint, by rank (empty: none).
pub(crate) fn worker_memories(ckpt: &Checkpoint) -> Result<Vec<Vec<u8>>> {
    let names: Vec<&str> = ckpt.blob_names().collect();
    let mut memories = Vec::new();
    while names.contains(&memory_blob(memories.len()).as_str()) {
        memories.push(ckpt.blob(&memory_blob(memories.len()))?.to_vec());
    }
    Ok(memories)
}

/// Loads a checkpoint's state (and memory, if it holds one) into `learner`.
pub(crate) fn restore<L: Learner + ?Sized>(learner: &mut L, ckpt: &Checkpoint) -> Result<()> {
    learner.load_state(ckpt.blob(STATE_BLOB)?)?;
    if ckpt.blob_names().any(|name| name == MEMORY_BLOB) {
        learner.load_memory(ckpt.blob(MEMORY_BLOB)?)?;
    }
    Ok(())
}

/// The counters a checkpoint was written after.
pub(crate) fn checkpoint_counters(ckpt: &Checkpoint) -> Counters {
    let p = ckpt.progress();
    let eval_env_steps = ckpt
        .meta()
        .extra
        .get("eval_env_steps")
        .and_then(|v| v.as_u64())
        .unwrap_or(0);
    Counters {
        iteration: p.iteration,
        episodes: p.episodes,
        env_steps: p.env_steps,
        eval_env_steps,
    }
}

/// The success rate goal tasks are trained to by default (OpenAI
/// baselines' HER plots read "solved" there).
pub const DEFAULT_TARGET_SUCCESS: f64 = 0.9;

/// Message of a `train.stop_at_target` without any target.
pub const NO_STOP_TARGET: &str =
    "train.stop_at_target needs a target: set train.target_success or train.target_return";

/// The run's target: `train.target_success` (default 0.9 on goal tasks),
/// else `train.target_return` (default: the reference's return); `None`
/// where neither applies.
pub fn run_target(spec: &RunSpec, reference_return: Option<f64>) -> Option<Target> {
    let success = spec
        .train
        .target_success
        .or(spec.goal_task.then_some(DEFAULT_TARGET_SUCCESS));
    if let Some(value) = success {
        return Some(Target {
            metric: "eval/success_rate".into(),
            value,
        });
    }
    spec.train
        .target_return
        .or(reference_return)
        .map(|value| Target {
            metric: "eval/return_mean".into(),
            value,
        })
}

/// The task's reference, computed once on rank 0 when first needed. The
/// time that takes (the worm's gait search: seconds) is not training, so
/// the run's wall clock leaves it out.
pub(crate) struct LazyReference {
    spec_reference: Option<crate::spec::ReferenceFn>,
    value: Option<Option<Reference>>,
    spent: std::time::Duration,
}

impl LazyReference {
    pub(crate) fn new(spec: &RunSpec) -> Self {
        LazyReference {
            spec_reference: spec.reference.clone(),
            value: None,
            spent: std::time::Duration::ZERO,
        }
    }

    pub(crate) fn get(&mut self) -> Option<&Reference> {
        let (find, spent) = (&self.spec_reference, &mut self.spent);
        self.value
            .get_or_insert_with(|| {
                let started = Instant::now();
                let found = find.as_ref().and_then(|f| f());
                *spent = started.elapsed();
                found
            })
            .as_ref()
    }
}

/// Rank 0's metrics, checkpoints and progress output.
pub(crate) struct Recorder {
    pub(crate) run: RunDir,
    pub(crate) metrics: MetricsLog,
    pub(crate) progress: ProgressReporter,
    config_toml: String,
    seed: u64,
    clock: Instant,
    wall_before: f64,
    iteration_fields: Vec<(String, serde_json::Value)>,
    /// Whether iteration lines carry the workers' profiles.
    profile: bool,
    /// The target that ends the run when an evaluation reaches it
    /// (`train.stop_at_target`).
    stop_target: Option<Target>,
    pub(crate) reference: LazyReference,
    /// The score of the model kept as `checkpoints/best`, if any.
    best_score: Option<f64>,
}

/// Key of a best checkpoint's score in its meta file.
const BEST_SCORE: &str = "score";

/// What decides the best model: the success rate where the task has one,
/// else the mean return (as Stable-Baselines3's `EvalCallback`).
fn eval_score(eval: &EvalReport) -> f64 {
    eval.success_rate.unwrap_or(eval.return_mean)
}

impl Recorder {
    pub(crate) fn new(
        spec: &RunSpec,
        run: RunDir,
        resume: Option<&Checkpoint>,
        options: &RunOptions,
    ) -> Result<Self> {
        let (metrics, wall_before, episodes, env_steps) = match resume {
            Some(ckpt) => {
                let p = ckpt.progress();
                (
                    MetricsLog::resume(run.path(), p.episodes)?,
                    p.wall_s,
                    p.episodes,
                    p.env_steps,
                )
            }
            None => (MetricsLog::open(run.path())?, 0.0, 0, 0),
        };
        let every = options.status_every.unwrap_or(DEFAULT_STATUS_EVERY);
        let mut progress = ProgressReporter::new(options.quiet, every);
        progress.start(
            spec.train.episodes,
            spec.train.env_steps,
            episodes,
            env_steps,
        );
        let mut reference = LazyReference::new(spec);
        let stop_target = match spec.train.stop_at_target {
            true => {
                let reference_return = reference.get().map(|r| r.episode_return);
                Some(
                    run_target(spec, reference_return)
                        .ok_or_else(|| Error::Config(NO_STOP_TARGET.into()))?,
                )
            }
            false => None,
        };
        // A resumed run keeps comparing against the best it already kept.
        let best_score = match resume {
            Some(_) => load_checkpoint(run.path(), &CheckpointSelector::Best, Some(&[]))
                .ok()
                .and_then(|best| best.meta().extra.get(BEST_SCORE)?.as_f64()),
            None => None,
        };
        Ok(Recorder {
            best_score,
            run,
            metrics,
            progress,
            config_toml: spec.config_toml.clone(),
            seed: spec.seed,
            clock: Instant::now(),
            wall_before,
            iteration_fields: spec.parallel.iteration_fields.clone(),
            profile: spec.parallel.profile,
            stop_target,
            reference,
        })
    }

    /// Wall-clock seconds of the whole run, earlier sessions included,
    /// without the time the reference took to compute.
    pub(crate) fn wall(&self) -> f64 {
        let clock = self.clock.elapsed().saturating_sub(self.reference.spent);
        self.wall_before + clock.as_secs_f64()
    }

    /// Records an evaluation; returns whether it ends the run
    /// (`train.stop_at_target`).
    pub(crate) fn eval(&mut self, counters: Counters, eval: &EvalReport) -> Result<bool> {
        let mut record = Record::new(
            RecordKind::Eval,
            counters.episodes,
            counters.env_steps,
            self.wall(),
        )
        .scalar("eval/return_mean", eval.return_mean)
        .scalar("eval/return_std", eval.return_std)
        .field("eval_env_steps", counters.eval_env_steps);
        if let Some(rate) = eval.success_rate {
            record = record.scalar("eval/success_rate", rate);
        }
        self.metrics.write(&record)?;
        let success = eval
            .success_rate
            .map(|r| format!(", success {r:.2}"))
            .unwrap_or_default();
        self.progress.note(&format!(
            "episode {}: eval return {:.2}{success}",
            counters.episodes, eval.return_mean
        ));
        Ok(self.stop_target.as_ref().is_some_and(|target| {
            target.is_reached_by(
                record
                    .get(&target.metric)
                    .and_then(serde_json::Value::as_f64),
            )
        }))
    }

    /// Keeps `learner` as the run's best model (`checkpoints/best`, its
    /// state without replay memory) when `eval` scores higher than every
    /// evaluation before it.
    pub(crate) fn keep_if_best<L: Learner + ?Sized>(
        &mut self,
        learner: &L,
        counters: Counters,
        eval: &EvalReport,
    ) -> Result<()> {
        let score = eval_score(eval);
        if self.best_score.is_some_and(|best| score <= best) || !score.is_finite() {
            return Ok(());
        }
        self.checkpoint_writer(counters)
            .blob(STATE_BLOB, learner.save_state())
            .extra(BEST_SCORE, score)
            .commit_best()?;
        self.best_score = Some(score);
        Ok(())
    }

    /// A checkpoint of this run after `counters`: its progress, config and
    /// evaluation steps, the blobs still to add.
    fn checkpoint_writer<'b>(&self, counters: Counters) -> CheckpointWriter<'b> {
        let progress = Progress {
            episodes: counters.episodes,
            env_steps: counters.env_steps,
            wall_s: self.wall(),
            iteration: counters.iteration,
            seed: self.seed,
        };
        CheckpointWriter::new(self.run.path(), &self.config_toml, progress)
            .extra("eval_env_steps", counters.eval_env_steps)
    }

    /// Writes a checkpoint of `learner` after `counters`, with every
    /// worker's replay memory if given (else `learner`'s own); records up to
    /// these counters must already be in the metrics log.
    pub(crate) fn checkpoint<L: Learner + ?Sized>(
        &self,
        learner: &L,
        counters: Counters,
        worker_memories: Option<&[Vec<u8>]>,
        worker_states: Option<&[Vec<u8>]>,
    ) -> Result<()> {
        // The records up to this checkpoint reach the disk before it does.
        self.metrics.sync()?;
        let state = learner.save_state();
        // Rank 0's memory is among the gathered ones: serialise it only when alone.
        let own;
        let memories = match worker_memories {
            Some(all) => all,
            None => {
                own = learner.save_memory();
                own.as_slice()
            }
        };
        let mut writer = self
            .checkpoint_writer(counters)
            .blob(STATE_BLOB, &state[..]);
        for (rank, memory) in memories.iter().enumerate() {
            writer = writer.blob(&memory_blob(rank), &memory[..]);
        }
        // Rank 0's state is `learner`'s, written above.
        for (rank, state) in worker_states.unwrap_or_default().iter().enumerate().skip(1) {
            writer = writer.blob(&state_blob(rank), &state[..]);
        }
        writer.commit()?;
        Ok(())
    }

    /// One strategy iteration: its metrics lines, an evaluation if one ran,
    /// and a checkpoint every `checkpoint_interval` iterations, after the
    /// last, and where a stop was requested (the strategies gather every
    /// worker's memory on the same ones).
    pub(crate) fn iteration<L: Learner + ?Sized>(
        &mut self,
        record: &IterationRecord,
        learner: &L,
        checkpoint_interval: u64,
        last_iteration: u64,
    ) -> Result<Control> {
        let counters = record.counters();
        let mut line = Record::new(
            RecordKind::Iteration,
            record.episodes,
            record.env_steps,
            self.wall(),
        )
        .field("iteration", record.iteration)
        .field("strategy", record.strategy.as_str())
        .field("workers", record.workers)
        .scalars(record.scalars.iter().map(|(k, v)| (k.clone(), *v)));
        if let Some(mean) = record.train_return_mean {
            line = line.scalar("charts/episodic_return", mean);
        }
        if let Some(rate) = record.train_success_rate {
            line = line.scalar("charts/success_rate", rate);
        }
        for (key, value) in &record.fields {
            line = line.field(key, json_value(value));
        }
        for (key, value) in &self.iteration_fields {
            line = line.field(key, value.clone());
        }
        if let (true, Some(first)) = (self.profile, record.profile.first()) {
            let by_rank = |value: fn(&WorkerProfile) -> f64| -> Vec<f64> {
                record.profile.iter().map(value).collect()
            };
            line = line
                .field("time/compute_cpu_s", by_rank(|p| p.compute_cpu_s))
                .field("time/comm_wall_s", by_rank(|p| p.comm_wall_s))
                .field("time/all_reduces", first.all_reduces)
                .field("time/all_reduce_values", first.all_reduce_values)
                .field("time/other_collectives", first.other_collectives)
                .field("time/other_bytes", first.other_bytes);
        }
        self.metrics.write(&line)?;
        let stop = match &record.eval {
            Some(eval) => {
                self.keep_if_best(learner, counters, eval)?;
                self.eval(counters, eval)?
            }
            None => false,
        };
        // A stop at the target comes at an evaluation, which
        // `train.stop_at_target` made a checkpoint iteration too.
        if record.iteration.is_multiple_of(checkpoint_interval)
            || record.iteration == last_iteration
            || record.stop_requested
            || record.budget_spent
        {
            self.checkpoint(
                learner,
                counters,
                record.memories.as_deref(),
                record.states.as_deref(),
            )?;
        }
        // An iteration's record holds the means of its episodes, not each.
        if let Some(mean) = record.train_return_mean {
            self.progress
                .iteration_ended(mean, record.train_success_rate);
        }
        self.progress.advance(record.episodes, record.env_steps);
        Ok(if stop {
            Control::Stop
        } else {
            Control::Continue
        })
    }
}

/// A strategy's own record value as JSON.
fn json_value(value: &RecordValue) -> serde_json::Value {
    match value {
        RecordValue::Count(n) => (*n).into(),
        RecordValue::Number(x) => (*x).into(),
        RecordValue::Numbers(xs) => xs.clone().into(),
    }
}
