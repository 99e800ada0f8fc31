//! `shoal train`: builds envs and learners from a [`RunConfig`], runs the
//! training loop (alone or through a parallel strategy), and keeps the run
//! directory — metrics, checkpoints, summary — up to date.
//!
//! Parallel runs go through [`shoal_parallel::launch`], which may re-run this
//! executable as worker processes (or be started by `mpirun`). Everything
//! with a side effect — creating the run directory, writing metrics and
//! checkpoints, printing — therefore happens inside the launched body and on
//! rank 0 only.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use serde_json::json;
use shoal_algo::{Ddpg, Hac, Reinforce};
use shoal_core::{
    Env, Error, GoalEnv, GradientLearner, Learner, Result, RolloutLearner, derive_seed,
};
use shoal_eval::{
    CONFIG_FILE, Checkpoint, CheckpointSelector, CheckpointWriter, LOCK_FILE, MetricsLog, Progress,
    Record, RecordKind, RunDir, Summary, Target, list_checkpoints, load_checkpoint, read_metrics,
    truncate_metrics,
};
use shoal_parallel::{
    AveragingConfig, Backend, Communicator, Control, Counters, GatherConfig, GradientAveraging,
    IterationRecord, Pool, PoolConfig, ProcessConfig, Resume, RolloutGather, Strategy,
    WorkerProfile, launch_with,
};

use crate::config::{AlgoConfig, EnvConfig, RunConfig, StrategyKind, in_context};
use crate::progress::ProgressReporter;

/// Seed stream of the evaluation episodes: the same for every evaluation of a
/// run, so successive evaluations face the same starting states.
const EVAL_STREAM: u64 = 0xE7A1;

/// Blob names inside a checkpoint.
const STATE_BLOB: &str = "learner";
/// Rank 0's replay memory (the only one of a single-learner run); worker
/// `r > 0` of a parallel run keeps its own as `worker-{r}/memory`.
const MEMORY_BLOB: &str = "memory";

fn memory_blob(rank: usize) -> String {
    if rank == 0 {
        MEMORY_BLOB.into()
    } else {
        format!("worker-{rank}/{MEMORY_BLOB}")
    }
}

/// A fresh instance of the configured environment.
pub fn make_env(cfg: &EnvConfig) -> Result<Box<dyn Env>> {
    Ok(match cfg {
        EnvConfig::Worm(worm) => Box::new(shoal_env::Worm::new(worm.clone())?),
        EnvConfig::PointReach(toy) => Box::new(shoal_env::PointReach::new(toy.clone())?),
        goal => Box::new(make_goal_env(goal)?),
    })
}

/// A fresh instance of the configured goal-conditioned environment.
pub fn make_goal_env(cfg: &EnvConfig) -> Result<Box<dyn GoalEnv>> {
    Ok(match cfg {
        EnvConfig::ArmPush(push) => Box::new(shoal_env::ArmPush::new(push.clone())?),
        EnvConfig::BallToNet(ball) => Box::new(shoal_env::BallToNet::new(ball.clone())?),
        EnvConfig::PointGoal(toy) => Box::new(shoal_env::PointGoal::new(toy.clone())?),
        other => {
            return Err(Error::Config(format!(
                "env `{}` is not goal-conditioned; goal algorithms need arm-push, ball-to-net or \
                 point-goal",
                other.kind()
            )));
        }
    })
}

/// The learner of worker `rank` (seeded `seed + rank`); `lr_scale`
/// multiplies its learning rates (per-worker hyperparameters of the pool).
pub fn make_learner(
    cfg: &RunConfig,
    rank: usize,
    lr_scale: f64,
) -> Result<Box<dyn GradientLearner>> {
    let seed = shoal_parallel::worker_seed(cfg.seed, rank);
    match &cfg.algo {
        AlgoConfig::Reinforce(_) => Ok(Box::new(make_reinforce(cfg, rank, lr_scale)?)),
        AlgoConfig::Ddpg(algo) => {
            let mut algo = algo.clone();
            algo.actor_lr *= lr_scale;
            algo.critic_lr *= lr_scale;
            algo.buffer_size = replay_share(cfg, algo.buffer_size);
            let env = make_goal_env(&cfg.env)?;
            let learner = Ddpg::new(algo, env, make_goal_env(&cfg.env)?, seed)?;
            Ok(Box::new(learner))
        }
        AlgoConfig::Hac(_) => Ok(Box::new(make_hac(cfg, rank, lr_scale)?)),
    }
}

/// The HAC learner of worker `rank`, as [`make_learner`] builds it; its own
/// type, for what only HAC does ([`Hac::watch`]).
pub fn make_hac(cfg: &RunConfig, rank: usize, lr_scale: f64) -> Result<Hac<Box<dyn GoalEnv>>> {
    let AlgoConfig::Hac(algo) = &cfg.algo else {
        return Err(Error::Config(format!(
            "expected a hac config, not `{}`",
            cfg.algo.kind()
        )));
    };
    let mut algo = algo.clone();
    algo.actor_lr *= lr_scale;
    algo.critic_lr *= lr_scale;
    algo.buffer_size = replay_share(cfg, algo.buffer_size);
    let seed = shoal_parallel::worker_seed(cfg.seed, rank);
    Hac::new(
        algo,
        make_goal_env(&cfg.env)?,
        make_goal_env(&cfg.env)?,
        seed,
    )
}

/// One worker's replay capacity. Workers that average gradients share one
/// experience budget: the total replay size is split between them, not
/// multiplied.
fn replay_share(cfg: &RunConfig, total: usize) -> usize {
    if cfg.parallel.strategy == StrategyKind::Averaging {
        (total / cfg.parallel.workers.max(1)).max(1)
    } else {
        total
    }
}

/// The learner of worker `rank` for the rollout-gather strategy, which needs
/// an algorithm that can split collection from update.
pub fn make_rollout_learner(cfg: &RunConfig, rank: usize) -> Result<Box<dyn RolloutLearner>> {
    match &cfg.algo {
        AlgoConfig::Reinforce(_) => Ok(Box::new(make_reinforce(cfg, rank, 1.0)?)),
        other => Err(Error::Config(format!(
            "parallel.strategy `gather` needs a batch algorithm (reinforce), not `{}`",
            other.kind()
        ))),
    }
}

fn make_reinforce(cfg: &RunConfig, rank: usize, lr_scale: f64) -> Result<Reinforce<Box<dyn Env>>> {
    let AlgoConfig::Reinforce(algo) = &cfg.algo else {
        unreachable!("called for reinforce configs only")
    };
    let mut algo = algo.clone();
    algo.learning_rate *= lr_scale;
    algo.value_learning_rate *= lr_scale;
    let seed = shoal_parallel::worker_seed(cfg.seed, rank);
    Reinforce::new(algo, make_env(&cfg.env)?, make_env(&cfg.env)?, seed)
}

/// The evaluation seed of a run.
pub fn eval_seed(cfg: &RunConfig) -> u64 {
    derive_seed(cfg.seed, EVAL_STREAM)
}

/// What `shoal train` was asked to do, resolved but not yet acted on.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The run's configuration.
    pub cfg: RunConfig,
    /// `--out`, if given.
    pub out: Option<PathBuf>,
    /// `--resume DIR`, if given.
    pub resume: Option<PathBuf>,
    /// `--checkpoint N|PATH`: which checkpoint to resume from (default: the latest).
    pub checkpoint: Option<String>,
    /// No progress output.
    pub quiet: bool,
}

/// Runs a plan: one learner, or `parallel.workers` through the configured
/// strategy on the configured backend. Returns the run directory and summary
/// on rank 0, `None` on other ranks.
pub fn run(plan: &Plan) -> Result<Option<(PathBuf, Summary)>> {
    let cfg = &plan.cfg;
    cfg.parallel.validate()?;
    // Bad per-worker overrides are refused before a run directory exists.
    for rank in 0..cfg.parallel.worker_overrides.len() {
        cfg.worker(rank)?;
    }
    if plan.checkpoint.is_some() && plan.resume.is_none() {
        return Err(Error::Config(
            "--checkpoint selects what --resume continues from; give --resume DIR too".into(),
        ));
    }
    match &cfg.parallel.strategy {
        StrategyKind::None => {
            if cfg.parallel.workers != 1 {
                return Err(Error::Config(format!(
                    "preset `{}` trains one learner (parallel.strategy = \"none\"); for {} \
                     workers also --set parallel.strategy=pool|gather|averaging",
                    cfg.preset, cfg.parallel.workers
                )));
            }
            // Every check runs before anything is created on disk: a config
            // refused after its run directory exists would leave a dead
            // directory behind.
            check_config(cfg)?;
            let (run, checkpoint) = open_run(plan)?;
            let summary = train_single(cfg, &run, checkpoint.as_ref(), plan.quiet)?;
            Ok(Some((run.path().to_path_buf(), summary)))
        }
        StrategyKind::Pool => run_parallel(
            plan,
            |cfg, rank| {
                let (worker_cfg, lr_scale) = cfg.worker(rank)?;
                make_learner(&worker_cfg, rank, lr_scale)
            },
            |setup| {
                Ok(Pool::new(
                    PoolConfig::default()
                        .iterations(setup.iterations)
                        .episodes_per_iteration(setup.episodes_per_iteration)
                        .selection_episodes(setup.cfg.parallel.pool_eval_episodes)
                        .eval_interval(setup.eval_interval)
                        .eval_episodes(setup.cfg.train.eval_episodes)
                        .seed(setup.eval_seed)
                        .memory_interval(setup.checkpoint_interval),
                ))
            },
        ),
        StrategyKind::Gather => run_parallel(plan, make_rollout_learner, |setup| {
            Ok(RolloutGather::new(
                GatherConfig::default()
                    .iterations(setup.iterations)
                    .episodes_per_worker(setup.episodes_per_iteration)
                    .eval_interval(setup.eval_interval)
                    .eval_episodes(setup.cfg.train.eval_episodes)
                    .seed(setup.eval_seed),
            ))
        }),
        StrategyKind::Averaging => run_strategy(plan, |setup| {
            Ok(GradientAveraging::new(
                AveragingConfig::default()
                    .iterations(setup.iterations)
                    .episodes_per_iteration(setup.episodes_per_iteration)
                    .eval_interval(setup.eval_interval)
                    .eval_episodes(setup.cfg.train.eval_episodes)
                    .seed(setup.eval_seed)
                    .memory_interval(setup.checkpoint_interval),
            ))
        }),
        StrategyKind::Custom(name) => Err(Error::Config(format!(
            "parallel.strategy `{name}` is not one shoal train runs (none, pool, gather, \
             averaging); a strategy defined in another program runs through that program \
             (shoal::train::run_strategy)"
        ))),
    }
}

/// What a strategy factory gets on each rank to build its strategy: the
/// run's config and the schedule `shoal train` derives from its budget.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct StrategySetup<'a> {
    /// The run's configuration.
    pub cfg: &'a RunConfig,
    /// This rank.
    pub rank: usize,
    /// Number of workers.
    pub workers: usize,
    /// Iterations of the whole run: `train.episodes` over
    /// `workers × episodes_per_iteration`, rounded up.
    pub iterations: u64,
    /// Training episodes per worker and iteration
    /// (`parallel.episodes_per_iteration`).
    pub episodes_per_iteration: usize,
    /// Evaluate every this many iterations (`train.eval_every` in iterations).
    pub eval_interval: u64,
    /// Checkpoint every this many iterations (`train.checkpoint_every` in
    /// iterations); gather every worker's memory on the same ones.
    pub checkpoint_interval: u64,
    /// Seed of the evaluation episodes, the same for every evaluation.
    pub eval_seed: u64,
}

/// Trains `plan` with the strategy `make_strategy` builds on every rank, on
/// the backend and worker count of `plan.cfg.parallel`, with everything
/// `shoal train` gives its own strategies: the run directory (locked,
/// `config.toml`), `metrics.jsonl`, checkpoints holding every worker's
/// replay memory, `--resume` from them, the final evaluation and
/// `summary.json`. `plan.cfg.parallel.strategy` must carry the strategy's
/// [`Strategy::name`], so configs, records and summaries use one name.
///
/// This is how a strategy written in another crate runs like a built-in;
/// `examples/custom_strategy.rs` shows it end to end. Returns the run
/// directory and summary on rank 0, `None` on other ranks.
pub fn run_strategy<S, F>(plan: &Plan, make_strategy: F) -> Result<Option<(PathBuf, Summary)>>
where
    S: Strategy<Box<dyn GradientLearner>>,
    F: Fn(&StrategySetup<'_>) -> Result<S> + Sync,
{
    run_parallel(
        plan,
        |cfg, rank| make_learner(cfg, rank, 1.0),
        make_strategy,
    )
}

/// Launches the backend and runs [`train_parallel`] on every rank.
fn run_parallel<L, S, M, F>(
    plan: &Plan,
    make_learner: M,
    make_strategy: F,
) -> Result<Option<(PathBuf, Summary)>>
where
    L: Learner,
    S: Strategy<L>,
    M: Fn(&RunConfig, usize) -> Result<L> + Sync,
    F: Fn(&StrategySetup<'_>) -> Result<S> + Sync,
{
    let cfg = &plan.cfg;
    cfg.parallel.validate()?;
    // Bad per-worker overrides are refused before a run directory exists.
    for rank in 0..cfg.parallel.worker_overrides.len() {
        cfg.worker(rank)?;
    }
    check_config(cfg)?;
    let processes = ProcessConfig::default()
        .timeout(std::time::Duration::from_secs_f64(cfg.parallel.timeout_s));
    // The process that starts a threads or processes run is its rank 0: it
    // claims the run directory before any worker exists, so that a refusal
    // is one line from one process. MPI ranks learn who is rank 0 only
    // inside `launch_with`.
    let claimed = match cfg.parallel.backend {
        Backend::Mpi => None,
        _ if shoal_parallel::is_worker_process() => None,
        _ => Some(open_run(plan)?),
    };
    let claimed = Mutex::new(claimed);
    launch_with(
        cfg.parallel.backend,
        cfg.parallel.workers,
        &processes,
        |comm: &dyn Communicator| {
            train_parallel(plan, comm, &claimed, &make_learner, &make_strategy)
        },
    )
    .map(Option::flatten)
}

/// A claimed run directory and the checkpoint to resume from, if any.
type OpenRun = (RunDir, Option<Checkpoint>);

/// Largest `train.episodes` (and evaluation and checkpoint interval)
/// accepted: years of training at a million episodes a second.
pub const MAX_EPISODES: u64 = 1 << 40;
/// Most evaluation episodes in one evaluation.
pub const MAX_EVAL_EPISODES: usize = 1_000_000;

/// Checks everything about `cfg` that can be checked without touching the
/// disk beyond `ParallelConfig::validate`: the budget, and every learner the
/// run will build (rank 0's is built here and dropped, so whatever the
/// constructors refuse is refused now).
pub fn check_config(cfg: &RunConfig) -> Result<()> {
    let train = &cfg.train;
    let bad = |message: String| Err(Error::Config(message));
    if !(1..=MAX_EPISODES).contains(&train.episodes) {
        return bad(format!(
            "train.episodes must be between 1 and {MAX_EPISODES}, got {}",
            train.episodes
        ));
    }
    for (key, value) in [
        ("train.eval_every", train.eval_every),
        ("train.checkpoint_every", train.checkpoint_every),
    ] {
        if !(1..=MAX_EPISODES).contains(&value) {
            return bad(format!(
                "{key} must be between 1 and {MAX_EPISODES}, got {value}"
            ));
        }
    }
    for (key, value) in [
        ("train.eval_episodes", train.eval_episodes),
        ("train.final_eval_episodes", train.final_eval_episodes),
        (
            "parallel.pool_eval_episodes",
            cfg.parallel.pool_eval_episodes,
        ),
        (
            "parallel.episodes_per_iteration",
            cfg.parallel.episodes_per_iteration,
        ),
    ] {
        if !(1..=MAX_EVAL_EPISODES).contains(&value) {
            return bad(format!(
                "{key} must be between 1 and {MAX_EVAL_EPISODES}, got {value}"
            ));
        }
    }
    if let Some(rate) = train.target_success
        && !(0.0..=1.0).contains(&rate)
    {
        return bad(format!(
            "train.target_success must be a success rate in [0, 1], got {rate}"
        ));
    }
    if let Some(value) = train.target_return
        && !value.is_finite()
    {
        return bad(format!("train.target_return must be finite, got {value}"));
    }
    if train.stop_at_target
        && run_target(cfg, None).is_none()
        && !matches!(cfg.env, EnvConfig::Worm(_))
    {
        return bad(NO_STOP_TARGET.into());
    }
    if let AlgoConfig::Ddpg(ddpg) = &cfg.algo
        && cfg.parallel.strategy == StrategyKind::Averaging
        && ddpg.train_every == shoal_algo::TrainEvery::Step
    {
        return bad(
            "ddpg train_every = \"step\" cannot average gradients across workers, whose \
             episode lengths differ; use \"episode\" or \"cycle\""
                .into(),
        );
    }
    if cfg.parallel.strategy == StrategyKind::Gather {
        make_rollout_learner(cfg, 0).map(drop)
    } else {
        make_learner(cfg, 0, 1.0).map(drop)
    }
}

/// Claims the run directory — a fresh one, or the one to resume, locked
/// for as long as the returned [`RunDir`] lives — and writes its config.
fn open_run(plan: &Plan) -> Result<OpenRun> {
    let (run, checkpoint) = match &plan.resume {
        Some(dir) => {
            let run = claim_run_to_resume(dir)?;
            if plan.checkpoint.is_none()
                && !run.checkpoints().join("latest").exists()
                && list_checkpoints(run.path())?.is_empty()
            {
                // The run died before its first checkpoint: nothing to
                // continue, so it starts again in place (its config must
                // still match, and its partial metrics go).
                let saved = run.read_config()?;
                config_must_match(&saved, &run.config(), &plan.cfg)?;
                truncate_metrics(run.path(), 0)?;
                run.create()?;
                run.write_config(&plan.cfg.to_toml())?;
                return Ok((run, None));
            }
            let which = plan
                .checkpoint
                .as_deref()
                .map_or(CheckpointSelector::Latest, CheckpointSelector::parse);
            let ckpt = load_checkpoint(run.path(), &which, None)?;
            check_resume_config(&ckpt, &plan.cfg)?;
            let done = ckpt.progress().episodes;
            // A run stopped after its last checkpoint but before its summary
            // (killed in the final evaluation) is finished, not refused.
            let unfinished = !run.summary().is_file() && plan.checkpoint.is_none();
            if done >= plan.cfg.train.episodes && !unfinished {
                return Err(Error::Config(format!(
                    "{} already trained {done} episodes; to continue, raise train.episodes \
                     above {done}",
                    ckpt.dir().display()
                )));
            }
            (run, Some(ckpt))
        }
        None => {
            let run = match plan.out.as_deref() {
                Some(out) => claim_out_dir(out)?,
                None => claim_numbered_dir(&plan.cfg.preset)?,
            };
            run.create()?;
            (run, None)
        }
    };
    run.write_config(&plan.cfg.to_toml())?;
    Ok((run, checkpoint))
}

/// The names in `dir`, or an error naming it.
fn dir_entries(dir: &Path) -> Result<Vec<String>> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| Error::io(format!("listing {}", dir.display()), e))?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(format!("listing {}", dir.display()), e))?;
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    Ok(names)
}

/// `--out DIR` for a fresh run: a new or empty directory, locked. A
/// directory that already holds a run, or anything else, is refused with
/// nothing written (not even the lock file).
fn claim_out_dir(out: &Path) -> Result<RunDir> {
    if out.exists() && !out.is_dir() {
        return Err(Error::file(
            out,
            "exists and is not a directory; give a directory as --out",
        ));
    }
    std::fs::create_dir_all(out)
        .map_err(|e| Error::io(format!("creating {}", out.display()), e))?;
    let refuse = |names: &[String]| -> Result<()> {
        if names.iter().any(|n| n == CONFIG_FILE) {
            return Err(Error::Config(format!(
                "{} already holds a run; use --resume {} or another --out",
                out.display(),
                out.display()
            )));
        }
        if names.iter().any(|n| n != LOCK_FILE) {
            return Err(Error::Config(format!(
                "{} is not empty and holds no shoal run; refusing to write into it \
                 (give a new or empty --out)",
                out.display()
            )));
        }
        Ok(())
    };
    let names = dir_entries(out)?;
    // A lock file means a shoal process may be starting here right now: its
    // lock is what tells, so take (or fail to take) it before judging.
    if !names.iter().any(|n| n == LOCK_FILE) {
        refuse(&names)?;
    }
    let run = RunDir::new(out).lock()?;
    refuse(&dir_entries(out)?)?;
    Ok(run)
}

/// `runs/<preset>`, else `runs/<preset>-2`, `-3`, …: the first that this
/// process creates itself (`create_dir` is atomic, so two runs started at
/// once never share a number), locked.
fn claim_numbered_dir(preset: &str) -> Result<RunDir> {
    let parent = PathBuf::from("runs");
    std::fs::create_dir_all(&parent)
        .map_err(|e| Error::io(format!("creating {}", parent.display()), e))?;
    for n in 1u64.. {
        let name = if n == 1 {
            preset.to_string()
        } else {
            format!("{preset}-{n}")
        };
        let candidate = parent.join(name);
        match std::fs::create_dir(&candidate) {
            Ok(()) => return claim_out_dir(&candidate),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(Error::io(format!("creating {}", candidate.display()), e)),
        }
    }
    unreachable!("some run number is free")
}

/// `--resume DIR`: a directory holding a run, locked.
fn claim_run_to_resume(dir: &Path) -> Result<RunDir> {
    let run = RunDir::new(dir);
    if !run.config().is_file() {
        return Err(Error::file(
            dir,
            "holds no shoal run to resume (no config.toml)",
        ));
    }
    run.lock()
}

/// Rank 0's bookkeeping: metrics, checkpoints and progress output, shared by
/// the single-learner loop and every parallel strategy.
struct Recorder {
    run: RunDir,
    metrics: MetricsLog,
    progress: ProgressReporter,
    config_toml: String,
    seed: u64,
    clock: Instant,
    wall_before: f64,
    /// The pool's per-worker settings, written into every iteration line.
    worker_settings: Option<serde_json::Value>,
    /// Whether iteration lines carry the workers' profiles (`parallel.profile`).
    profile: bool,
    /// The target that ends the run when an evaluation reaches it
    /// (`train.stop_at_target`).
    stop_target: Option<Target>,
}

impl Recorder {
    fn new(cfg: &RunConfig, run: RunDir, resume: Option<&Checkpoint>, quiet: bool) -> Result<Self> {
        let (metrics, wall_before, done) = match resume {
            Some(ckpt) => {
                let p = ckpt.progress();
                (
                    MetricsLog::resume(run.path(), p.episodes)?,
                    p.wall_s,
                    p.episodes,
                )
            }
            None => (MetricsLog::open(run.path())?, 0.0, 0),
        };
        let mut progress = ProgressReporter::new(quiet);
        progress.start(cfg.train.episodes, done);
        let worker_settings = (cfg.parallel.strategy == StrategyKind::Pool).then(|| {
            let p = &cfg.parallel;
            let settings: Vec<serde_json::Value> = (0..p.workers)
                .map(|rank| {
                    json!({
                        "lr_scale": p.worker_lr_scales.get(rank).copied().unwrap_or(1.0),
                        "overrides": p.worker_overrides.get(rank).cloned().unwrap_or_default(),
                    })
                })
                .collect();
            serde_json::Value::from(settings)
        });
        let stop_target = match cfg.train.stop_at_target {
            true => {
                let gait = worm_gait(cfg).map(|gait| gait.episode_return);
                Some(run_target(cfg, gait).ok_or_else(|| Error::Config(NO_STOP_TARGET.into()))?)
            }
            false => None,
        };
        Ok(Recorder {
            run,
            metrics,
            progress,
            config_toml: cfg.to_toml(),
            seed: cfg.seed,
            clock: Instant::now(),
            wall_before,
            worker_settings,
            profile: cfg.parallel.profile,
            stop_target,
        })
    }

    /// Wall-clock seconds of the whole run, earlier sessions included.
    fn wall(&self) -> f64 {
        self.wall_before + self.clock.elapsed().as_secs_f64()
    }

    /// Records an evaluation; returns whether it ends the run
    /// (`train.stop_at_target`).
    fn eval(&mut self, counters: Counters, eval: &shoal_core::EvalReport) -> Result<bool> {
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

    /// Writes a checkpoint of `learner` after `counters`, with every
    /// worker's replay memory if given (else `learner`'s own); records up to
    /// these counters must already be in the metrics log.
    fn checkpoint<L: Learner + ?Sized>(
        &self,
        learner: &L,
        counters: Counters,
        worker_memories: Option<&[Vec<u8>]>,
    ) -> Result<()> {
        let progress = Progress {
            episodes: counters.episodes,
            env_steps: counters.env_steps,
            wall_s: self.wall(),
            iteration: counters.iteration,
            seed: self.seed,
        };
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
        let mut writer = CheckpointWriter::new(self.run.path(), &self.config_toml, progress)
            .blob(STATE_BLOB, &state[..])
            .extra("eval_env_steps", counters.eval_env_steps);
        for (rank, memory) in memories.iter().enumerate() {
            writer = writer.blob(&memory_blob(rank), &memory[..]);
        }
        writer.commit()?;
        Ok(())
    }

    /// One strategy iteration: its metrics lines, an evaluation if one ran,
    /// and a checkpoint every `checkpoint_interval` iterations and after the
    /// last (the strategies gather every worker's memory on the same ones).
    fn iteration<L: Learner + ?Sized>(
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
        if let Some(winner) = record.winner {
            line = line
                .field("pool/winner", winner)
                .field("pool/worker_eval_means", record.worker_eval_means.clone());
        }
        if let Some(settings) = &self.worker_settings {
            line = line.field("pool/worker_settings", settings.clone());
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
        if let Some(selection) = &record.selection {
            line = line.scalar("pool/selection_return_mean", selection.return_mean);
            if let Some(rate) = selection.success_rate {
                line = line.scalar("pool/selection_success_rate", rate);
            }
        }
        self.metrics.write(&line)?;
        let stop = match &record.eval {
            Some(eval) => self.eval(counters, eval)?,
            None => false,
        };
        // A stop comes at an evaluation, which `train.stop_at_target` made
        // a checkpoint iteration too.
        if record.iteration.is_multiple_of(checkpoint_interval)
            || record.iteration == last_iteration
        {
            self.checkpoint(learner, counters, record.memories.as_deref())?;
        }
        self.progress
            .advance(record.episodes, record.train_return_mean);
        Ok(if stop {
            Control::Stop
        } else {
            Control::Continue
        })
    }
}

/// Trains a single learner (no parallel strategy) and returns the summary.
pub fn train_single(
    cfg: &RunConfig,
    run: &RunDir,
    resume: Option<&Checkpoint>,
    quiet: bool,
) -> Result<Summary> {
    let mut learner = make_learner(cfg, 0, 1.0)?;
    let mut counters = Counters::default();
    if let Some(ckpt) = resume {
        restore(learner.as_mut(), ckpt)?;
        counters = checkpoint_counters(ckpt);
    }
    let mut recorder = Recorder::new(cfg, RunDir::new(run.path()), resume, quiet)?;

    while counters.episodes < cfg.train.episodes {
        // Train up to the next evaluation or checkpoint boundary, whichever comes first.
        let next_eval = next_multiple(counters.episodes, cfg.train.eval_every);
        let next_ckpt = next_multiple(counters.episodes, cfg.train.checkpoint_every);
        let chunk = next_eval.min(next_ckpt).min(cfg.train.episodes) - counters.episodes;
        let report = learner.learn(chunk as usize)?;
        for (i, (ret, len)) in report
            .episode_returns
            .iter()
            .zip(&report.episode_lengths)
            .enumerate()
        {
            counters.env_steps += len;
            let mut record = Record::new(
                RecordKind::Episode,
                counters.episodes + i as u64 + 1,
                counters.env_steps,
                recorder.wall(),
            )
            .scalar("charts/episodic_return", *ret)
            .scalar("charts/episodic_length", *len as f64);
            if let Some(success) = report.episode_successes.get(i) {
                record = record.scalar("charts/success", f64::from(u8::from(*success)));
            }
            recorder.metrics.write(&record)?;
        }
        counters.episodes += chunk;
        counters.iteration += 1;
        if !report.scalars.is_empty() {
            let record = Record::new(
                RecordKind::Update,
                counters.episodes,
                counters.env_steps,
                recorder.wall(),
            )
            .scalars(report.scalars.iter().map(|(k, v)| (k.clone(), *v)));
            recorder.metrics.write(&record)?;
        }
        let mut done = counters.episodes == cfg.train.episodes;
        if counters.episodes % cfg.train.eval_every == 0 || done {
            let eval = learner.evaluate(cfg.train.eval_episodes, eval_seed(cfg))?;
            counters.eval_env_steps += shoal_parallel::eval_steps(&eval);
            done |= recorder.eval(counters, &eval)?;
        }
        if counters.episodes % cfg.train.checkpoint_every == 0 || done {
            recorder.checkpoint(learner.as_ref(), counters, None)?;
        }
        recorder
            .progress
            .advance(counters.episodes, report.episode_returns.last().copied());
        if done {
            break;
        }
    }
    recorder.progress.finish();
    let wall = recorder.wall();
    finish_run(cfg, run, learner.as_mut(), counters, wall)
}

/// Every worker's replay memory in a checkpoint, by rank (empty: none).
fn worker_memories(ckpt: &Checkpoint) -> Result<Vec<Vec<u8>>> {
    let names: Vec<&str> = ckpt.blob_names().collect();
    let mut memories = Vec::new();
    while names.contains(&memory_blob(memories.len()).as_str()) {
        memories.push(ckpt.blob(&memory_blob(memories.len()))?.to_vec());
    }
    Ok(memories)
}

/// Loads a checkpoint's state (and memory, if it holds one) into `learner`.
fn restore<L: Learner + ?Sized>(learner: &mut L, ckpt: &Checkpoint) -> Result<()> {
    learner.load_state(ckpt.blob(STATE_BLOB)?)?;
    if ckpt.blob_names().any(|name| name == MEMORY_BLOB) {
        learner.load_memory(ckpt.blob(MEMORY_BLOB)?)?;
    }
    Ok(())
}

fn checkpoint_counters(ckpt: &Checkpoint) -> Counters {
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

/// The body every rank runs in a parallel run.
fn train_parallel<L, S, M, F>(
    plan: &Plan,
    comm: &dyn Communicator,
    claimed: &Mutex<Option<OpenRun>>,
    make_learner: &M,
    make_strategy: &F,
) -> Result<Option<(PathBuf, Summary)>>
where
    L: Learner,
    S: Strategy<L>,
    M: Fn(&RunConfig, usize) -> Result<L>,
    F: Fn(&StrategySetup<'_>) -> Result<S>,
{
    let cfg = &plan.cfg;
    // Rank 0 alone touches the file system; the others learn whether it could.
    let mut setup = None;
    let mut status = vec![1u8];
    if comm.is_root() {
        let claimed = claimed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        match claimed
            .map_or_else(|| open_run(plan), Ok)
            .and_then(|(run, ckpt)| {
                let recorder =
                    Recorder::new(cfg, RunDir::new(run.path()), ckpt.as_ref(), plan.quiet)?;
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

    let workers = comm.size() as u64;
    let per_worker = cfg.parallel.episodes_per_iteration.max(1) as u64;
    let eval_interval = (cfg.train.eval_every / (per_worker * workers)).max(1);
    let schedule = StrategySetup {
        cfg,
        rank: comm.rank(),
        workers: comm.size(),
        iterations: cfg.train.episodes.div_ceil(per_worker * workers).max(1),
        episodes_per_iteration: per_worker as usize,
        eval_interval,
        // A run that may stop at any evaluation checkpoints at each, with
        // every worker's memory, so where it stops it can be resumed.
        checkpoint_interval: match cfg.train.stop_at_target {
            true => eval_interval,
            false => (cfg.train.checkpoint_every / (per_worker * workers)).max(1),
        },
        eval_seed: eval_seed(cfg),
    };
    let mut strategy = make_strategy(&schedule)?;
    if strategy.name() != cfg.parallel.strategy.name() {
        return Err(Error::Config(format!(
            "the strategy calls itself `{}` but parallel.strategy is `{}`; give both one name",
            strategy.name(),
            cfg.parallel.strategy
        )));
    }
    let mut learner = make_learner(cfg, comm.rank())?;
    // The strategies hand each rank its own replay memory back from rank 0.
    let resume = match &setup {
        Some((_, Some(ckpt), _)) => Resume {
            counters: checkpoint_counters(ckpt),
            state: Some(ckpt.blob(STATE_BLOB)?.to_vec()),
            memories: worker_memories(ckpt)?,
        },
        _ => Resume::default(),
    };
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
    let Some((run, _, mut recorder)) = setup else {
        return Ok(None);
    };
    recorder.progress.finish();
    let wall = recorder.wall();
    let summary = finish_run(cfg, &run, &mut learner, outcome.counters, wall)?;
    Ok(Some((run.path().to_path_buf(), summary)))
}

/// Final frozen-policy evaluation and `summary.json`, plus reference numbers
/// for the task (the worm's best travelling-wave gait).
pub fn finish_run<L: Learner + ?Sized>(
    cfg: &RunConfig,
    run: &RunDir,
    learner: &mut L,
    counters: Counters,
    wall_s: f64,
) -> Result<Summary> {
    let eval = learner.evaluate(cfg.train.final_eval_episodes, eval_seed(cfg))?;
    let mut summary = Summary {
        episodes: counters.episodes,
        env_steps: counters.env_steps,
        wall_s,
        ..Summary::default()
    }
    .eval(eval.episodes as u64, eval.return_mean, eval.success_rate)
    .extra("eval_return_std", eval.return_std)
    .extra("workers", cfg.parallel.workers)
    .extra("strategy", cfg.parallel.strategy.name());
    if cfg.train.stop_at_target {
        summary = summary.extra("stopped_at_target", counters.episodes < cfg.train.episodes);
    }
    if let Some(gait) = worm_gait(cfg) {
        summary = summary
            .extra("gait_return", gait.episode_return)
            .extra("gait_speed", gait.speed)
            .extra(
                "gait",
                json!({"amplitude": gait.amplitude, "omega": gait.omega, "phase": gait.phase}),
            );
        if gait.episode_return > 0.0 {
            summary = summary.extra(
                "return_ratio_to_gait",
                eval.return_mean / gait.episode_return,
            );
        }
    }
    let gait_return = summary.extra.get("gait_return").and_then(|v| v.as_f64());
    if let Some(target) = run_target(cfg, gait_return) {
        let reached = target.first_reached(&read_metrics(run.path())?);
        summary = summary.target(&target, reached, cfg.parallel.workers as u64);
    }
    summary.write(run.path())?;
    Ok(summary)
}

/// The best travelling-wave gait of a worm run's worm, its reference.
/// The gait search may find nothing on an unusual worm: the run then goes
/// without the reference rather than failing.
fn worm_gait(cfg: &RunConfig) -> Option<shoal_env::GaitReference> {
    match &cfg.env {
        EnvConfig::Worm(worm) => shoal_env::try_best_travelling_wave(worm, cfg.seed).ok(),
        _ => None,
    }
}

const NO_STOP_TARGET: &str =
    "train.stop_at_target needs a target: set train.target_success or train.target_return";

/// The run's target: `train.target_success` (default 0.9 on goal tasks),
/// else `train.target_return` (default `gait_return`, the worm's gait's
/// return); `None` where neither applies.
fn run_target(cfg: &RunConfig, gait_return: Option<f64>) -> Option<Target> {
    let goal_task = matches!(
        cfg.env,
        EnvConfig::ArmPush(_) | EnvConfig::BallToNet(_) | EnvConfig::PointGoal(_)
    );
    let success = cfg
        .train
        .target_success
        .or(goal_task.then_some(DEFAULT_TARGET_SUCCESS));
    if let Some(value) = success {
        return Some(Target {
            metric: "eval/success_rate".into(),
            value,
        });
    }
    cfg.train.target_return.or(gait_return).map(|value| Target {
        metric: "eval/return_mean".into(),
        value,
    })
}

/// The success rate goal tasks are trained to by default (OpenAI
/// baselines' HER plots read "solved" there).
const DEFAULT_TARGET_SUCCESS: f64 = 0.9;

/// The smallest multiple of `every` strictly greater than `n`.
fn next_multiple(n: u64, every: u64) -> u64 {
    let every = every.max(1);
    (n / every + 1) * every
}

/// Checks `cfg` against the config stored with a checkpoint; only the keys
/// of [`RESUME_MAY_CHANGE`] may differ on resume.
pub fn check_resume_config(ckpt: &Checkpoint, cfg: &RunConfig) -> Result<()> {
    config_must_match(ckpt.config(), ckpt.dir(), cfg)
}

/// `cfg` against the config text saved at `origin`, outside
/// [`RESUME_MAY_CHANGE`].
/// Settings a resume may change: the budget and schedule (`train.*`), and
/// what only watches the run — how long a silent worker is waited for, and
/// whether iteration lines carry the workers' profiles.
pub const RESUME_MAY_CHANGE: &[&str] = &["train", "parallel.timeout_s", "parallel.profile"];

fn config_must_match(saved: &str, origin: &Path, cfg: &RunConfig) -> Result<()> {
    // A config an earlier version wrote is compared as today reads it:
    // renamed keys migrated, keys added since at their defaults.
    let today = RunConfig::from_toml(saved, "saved config").map(|c| c.to_toml());
    let saved = today.as_deref().unwrap_or(saved);
    shoal_eval::check_config_matches(saved, &cfg.to_toml(), RESUME_MAY_CHANGE)
        .map_err(|e| in_context(&format!("cannot resume from {}", origin.display()), e))
}

/// A run's config and the learner state of its latest checkpoint.
pub fn load_run_state(run_dir: &std::path::Path) -> Result<(RunConfig, Vec<u8>)> {
    let run = RunDir::new(run_dir);
    let text = std::fs::read_to_string(run.config())
        .map_err(|e| Error::io(format!("reading {}", run.config().display()), e))?;
    let cfg = RunConfig::from_toml(&text, &run.config().display().to_string())?;
    // The model alone: evaluation needs no replay memory, which may be gone.
    let mut ckpt = load_checkpoint(run.path(), &CheckpointSelector::Latest, Some(&[STATE_BLOB]))?;
    Ok((cfg, ckpt.take_blob(STATE_BLOB)?))
}

/// Loads a run's config and latest checkpoint into a fresh learner.
pub fn load_run(run_dir: &std::path::Path) -> Result<(RunConfig, Box<dyn GradientLearner>)> {
    let (cfg, state) = load_run_state(run_dir)?;
    let mut learner = make_learner(&cfg, 0, 1.0)?;
    learner.load_state(&state)?;
    Ok((cfg, learner))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool_of(workers: usize, extra: &[&str]) -> Result<RunConfig> {
        let mut overrides = vec![
            "parallel.strategy=pool".to_string(),
            format!("parallel.workers={workers}"),
        ];
        overrides.extend(extra.iter().map(|s| s.to_string()));
        RunConfig::resolve("toy-reinforce", &overrides)
    }

    #[test]
    fn each_pool_worker_gets_its_own_settings() {
        let cfg = pool_of(
            3,
            &[
                "parallel.worker_lr_scales=[0.5, 2.0]",
                r#"parallel.worker_overrides=[[], ["algo.gamma=0.9", "algo.learning_rate=0.004"]]"#,
            ],
        )
        .unwrap();
        let AlgoConfig::Reinforce(base) = &cfg.algo else {
            panic!("toy-reinforce is a reinforce preset")
        };
        // (learning rate, gamma) each worker must train with, by hand.
        let expected = [
            (base.learning_rate * 0.5, base.gamma),
            (0.004 * 2.0, 0.9),
            (base.learning_rate, base.gamma),
        ];
        for (rank, (lr, gamma)) in expected.into_iter().enumerate() {
            let (worker_cfg, scale) = cfg.worker(rank).unwrap();
            let learner = make_reinforce(&worker_cfg, rank, scale).unwrap();
            assert_eq!(learner.config().learning_rate, lr, "worker {rank}");
            assert_eq!(learner.config().gamma, gamma, "worker {rank}");
        }
    }

    #[test]
    fn bad_per_worker_settings_are_refused_with_one_line() {
        let refused = |extra: &[&str], workers: usize| {
            let cfg = pool_of(workers, extra).unwrap();
            let plan = Plan {
                cfg,
                out: Some(std::env::temp_dir().join("shoal-never-created")),
                resume: None,
                checkpoint: None,
                quiet: true,
            };
            run(&plan).unwrap_err().to_string()
        };
        assert_eq!(
            refused(&["parallel.worker_lr_scales=[0.1, 1.0, 1.0]"], 2),
            "invalid configuration: parallel.worker_lr_scales and worker_overrides name 3 \
             workers; the pool has 2"
        );
        assert_eq!(
            refused(&["parallel.worker_lr_scales=[0.1, -1.0]"], 2),
            "invalid configuration: parallel.worker_lr_scales must be positive and finite, got -1"
        );
        assert_eq!(
            refused(&[r#"parallel.worker_overrides=[["seed=3"]]"#], 2),
            "invalid configuration: parallel.worker_overrides may set algo.* keys only, got \
             `seed=3`"
        );
        assert_eq!(
            refused(
                &[r#"parallel.worker_overrides=[[], ["algo.gamma=fast"]]"#],
                2
            ),
            "invalid configuration: parallel.worker_overrides of worker 1: `algo.gamma` expects \
             a float, got `fast`"
        );
        assert!(!std::env::temp_dir().join("shoal-never-created").exists());
        let averaging = RunConfig::resolve(
            "push-ddpg-her",
            &[
                "parallel.strategy=averaging".into(),
                "parallel.workers=2".into(),
                r#"parallel.worker_overrides=[["algo.actor_lr=0.1"]]"#.into(),
            ],
        )
        .unwrap();
        assert_eq!(
            averaging.parallel.validate().unwrap_err().to_string(),
            "invalid configuration: parallel.worker_overrides applies to the pool; strategy \
             `averaging` trains workers that must share one setting"
        );
    }

    /// The `eval` records of a run, read by hand.
    fn evals(run: &Path) -> Vec<serde_json::Value> {
        std::fs::read_to_string(run.join("metrics.jsonl"))
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
            .filter(|r| r["kind"] == "eval")
            .collect()
    }

    #[test]
    fn summary_says_where_the_run_first_reached_its_target() {
        let dir = std::env::temp_dir().join(format!("shoal-target-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let train = |name: &str, extra: &[&str]| {
            let mut overrides: Vec<String> = ["train.episodes=400", "train.eval_every=40"]
                .iter()
                .map(|s| s.to_string())
                .collect();
            overrides.extend(extra.iter().map(|s| s.to_string()));
            let plan = Plan {
                cfg: RunConfig::resolve("toy-reinforce", &overrides).unwrap(),
                out: Some(dir.join(name)),
                resume: None,
                checkpoint: None,
                quiet: true,
            };
            let (path, summary) = run(&plan).unwrap().unwrap();
            (path, serde_json::to_value(&summary).unwrap())
        };
        // No target on the toy by default.
        let (free, summary) = train("free", &[]);
        assert!(summary.get("target_value").is_none(), "{summary}");
        let scores: Vec<f64> = evals(&free)
            .iter()
            .map(|r| r["eval/return_mean"].as_f64().unwrap())
            .collect();
        // A target first met by a later evaluation than the first: the
        // third-best score, so at least two evaluations reach it.
        let mut sorted = scores.clone();
        sorted.sort_by(f64::total_cmp);
        let target = sorted[sorted.len() - 3];
        let (run_dir, summary) = train("target", &[&format!("train.target_return={target}")]);
        let records = evals(&run_dir);
        let first = records
            .iter()
            .find(|r| r["eval/return_mean"].as_f64().unwrap() >= target)
            .unwrap();
        assert_eq!(summary["target_metric"], "eval/return_mean");
        assert_eq!(summary["target_value"], target);
        assert_eq!(summary["episodes_to_target"], first["episode"]);
        assert_eq!(summary["per_worker_episodes_to_target"], first["episode"]);
        assert_eq!(summary["wall_s_to_target"], first["wall_s"]);
        // Evaluation steps count: every evaluation before and at the target.
        let eval_steps = first["eval_env_steps"].as_u64().unwrap();
        let evaluations = records.iter().take_while(|r| *r != first).count() as u64 + 1;
        assert!(
            eval_steps >= evaluations * 10,
            "10 episodes of 1+ steps each"
        );
        assert_eq!(
            summary["env_steps_to_target"].as_u64().unwrap(),
            first["env_steps"].as_u64().unwrap() + eval_steps
        );
        // Out of reach: the numbers are null, the target is still recorded.
        let (_, summary) = train("never", &["train.target_return=1e9"]);
        assert!(summary["episodes_to_target"].is_null());
        assert!(summary["wall_s_to_target"].is_null());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `train.stop_at_target` on `preset`: the run ends at the first
    /// evaluation that reaches the target, with the same evaluations as a
    /// run without the stop up to there, and its last checkpoint (a parallel
    /// run's holding every worker's memory) resumes into exactly the rest of
    /// that run.
    fn stops_at_target_and_resumes_exactly(preset: &str, metric: &str, extra: &[&str]) {
        let dir = std::env::temp_dir().join(format!("shoal-stop-{preset}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let plan = |name: &str, resume: bool, more: &[String]| {
            let mut overrides: Vec<String> = ["train.episodes=240", "train.eval_every=40"]
                .iter()
                .chain(extra)
                .map(|s| s.to_string())
                .collect();
            overrides.extend(more.iter().cloned());
            Plan {
                cfg: RunConfig::resolve(preset, &overrides).unwrap(),
                out: (!resume).then(|| dir.join(name)),
                resume: resume.then(|| dir.join(name)),
                checkpoint: None,
                quiet: true,
            }
        };
        let scores = |run: &Path| -> Vec<(u64, f64)> {
            evals(run)
                .iter()
                .map(|r| (r["episode"].as_u64().unwrap(), r[metric].as_f64().unwrap()))
                .collect()
        };
        let (free, _) = run(&plan("free", false, &[])).unwrap().unwrap();
        let free_scores = scores(&free);
        // The best score before the last evaluation: first reached before the end.
        let target = free_scores[..free_scores.len() - 1]
            .iter()
            .map(|(_, score)| *score)
            .fold(f64::NEG_INFINITY, f64::max);
        let reached_at = free_scores.iter().find(|(_, s)| *s >= target).unwrap().0;
        assert!(reached_at < 240);
        let key = match metric {
            "eval/success_rate" => "train.target_success",
            _ => "train.target_return",
        };
        let stop = [
            format!("{key}={target}"),
            "train.stop_at_target=true".into(),
        ];
        let (stopped, summary) = run(&plan("stopped", false, &stop)).unwrap().unwrap();
        assert_eq!(summary.episodes, reached_at);
        assert_eq!(summary.extra["stopped_at_target"], true);
        let stopped_scores = scores(&stopped);
        assert_eq!(stopped_scores, free_scores[..stopped_scores.len()]);
        assert_eq!(stopped_scores.last().unwrap().0, reached_at);
        let ckpt = load_checkpoint(&stopped, &CheckpointSelector::Latest, None).unwrap();
        assert_eq!(ckpt.progress().episodes, reached_at);

        let go_on = [
            format!("{key}={target}"),
            "train.stop_at_target=false".into(),
        ];
        let (resumed, summary) = run(&plan("stopped", true, &go_on)).unwrap().unwrap();
        assert_eq!(summary.extra.get("stopped_at_target"), None);
        assert_eq!(scores(&resumed), free_scores);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_single_learner_stops_at_its_target_and_resumes_exactly() {
        stops_at_target_and_resumes_exactly("toy-reinforce", "eval/return_mean", &[]);
    }

    #[test]
    fn averaging_workers_stop_at_their_target_and_resume_with_their_memories() {
        stops_at_target_and_resumes_exactly(
            "toy-ddpg-her",
            "eval/success_rate",
            &["parallel.strategy=averaging", "parallel.workers=2"],
        );
    }

    #[test]
    fn stop_at_target_without_a_target_is_refused() {
        let cfg =
            RunConfig::resolve("toy-reinforce", &["train.stop_at_target=true".into()]).unwrap();
        assert_eq!(
            check_config(&cfg).unwrap_err().to_string(),
            format!("invalid configuration: {NO_STOP_TARGET}")
        );
    }
}
