//! `shoal train`: turns a [`RunConfig`] into what the runtime library
//! ([`shoal_rl_run`]) trains — the run's spec, the learner factory for the
//! configured env and algorithm, and the configured strategy — and checks
//! the configuration before anything touches the disk.
//!
//! Parallel runs go through [`shoal_rl_parallel::launch`], which may re-run this
//! executable as worker processes (or be started by `mpirun`); the runtime
//! keeps every side effect on rank 0.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::json;
use shoal_rl_core::{
    Env, Error, GoalEnv, GradientLearner, Learner, Policy, Result, RolloutLearner, StopFlag,
};
use shoal_rl_eval::{CheckpointSelector, RunDir, Summary, load_checkpoint};
use shoal_rl_parallel::{ProcessConfig, Strategy};
pub use shoal_rl_run::StrategySetup;
use shoal_rl_run::{NO_STOP_TARGET, ParallelSpec, RunOptions, RunSpec, STATE_BLOB};

use crate::config::{Registries, RunConfig, StrategyKind};

/// A fresh instance of the configured environment.
pub fn make_env(cfg: &RunConfig) -> Result<Box<dyn Env>> {
    cfg.envs.make_env(&cfg.env)
}

/// A fresh instance of the configured goal-conditioned environment.
pub fn make_goal_env(cfg: &RunConfig) -> Result<Box<dyn GoalEnv>> {
    cfg.envs.make_goal_env(&cfg.env)
}

/// The learner of worker `rank` (seeded `seed + rank`); `lr_scale`
/// multiplies its learning rates (per-worker hyperparameters of the pool).
pub fn make_learner(
    cfg: &RunConfig,
    rank: usize,
    lr_scale: f64,
) -> Result<Box<dyn GradientLearner>> {
    (cfg.algos.get(cfg.algo.kind())?.learner)(cfg, rank, lr_scale)
}

/// The learner of pool worker `rank`: its candidate's `worker_overrides`
/// laid over `cfg`, at its candidate's learning-rate multiplier.
pub(crate) fn make_pool_learner(cfg: &RunConfig, rank: usize) -> Result<Box<dyn GradientLearner>> {
    let (worker_cfg, lr_scale) = cfg.worker(rank)?;
    make_learner(&worker_cfg, rank, lr_scale)
}

/// The learner of worker `rank` for the rollout-gather strategy, which needs
/// an algorithm that can split collection from update.
pub fn make_rollout_learner(cfg: &RunConfig, rank: usize) -> Result<Box<dyn RolloutLearner>> {
    let entry = cfg.algos.get(cfg.algo.kind())?;
    let make = entry.rollout_learner.ok_or_else(|| {
        Error::Config(format!(
            "parallel.strategy `gather` needs a batch algorithm ({}), not `{}`",
            cfg.algos.gather_kinds(),
            entry.kind
        ))
    })?;
    make(cfg, rank)
}

/// The evaluation seed of a run.
pub fn eval_seed(cfg: &RunConfig) -> u64 {
    shoal_rl_run::eval_seed(cfg.seed)
}

/// Settings a resume may change: the budget and schedule (`train.*`), and
/// what only watches the run — how long a silent worker is waited for, and
/// whether iteration lines carry the workers' profiles.
pub const RESUME_MAY_CHANGE: &[&str] = &["train", "parallel.timeout_s", "parallel.profile"];

/// What the runtime needs to know of `cfg`'s run.
pub fn run_spec(cfg: &RunConfig) -> RunSpec {
    let p = &cfg.parallel;
    let mut parallel = ParallelSpec {
        workers: p.workers,
        backend: p.backend,
        strategy: p.strategy.name().to_string(),
        episodes_per_iteration: p.episodes_per_iteration,
        timeout: std::time::Duration::from_secs_f64(p.timeout_s),
        profile: p.profile,
        ..ParallelSpec::default()
    };
    if p.strategy == StrategyKind::Pool {
        let settings: Vec<serde_json::Value> = (0..p.workers)
            .map(|rank| {
                json!({
                    "lr_scale": p.lr_scale_of(rank),
                    "overrides": p.overrides_of(rank),
                })
            })
            .collect();
        parallel
            .iteration_fields
            .push(("pool/worker_settings".into(), settings.into()));
    }
    let mut spec = RunSpec::new(cfg.preset.clone(), cfg.to_toml())
        .seed(cfg.seed)
        .train(cfg.train.clone())
        .goal_task(cfg.is_goal_task().unwrap_or(false))
        .resume_may_change(RESUME_MAY_CHANGE)
        // A config an earlier version wrote is compared as today reads it:
        // renamed keys migrated, keys added since at their defaults.
        .migrate_saved_config({
            let envs = cfg.envs.clone();
            Arc::new(move |saved: &str| {
                RunConfig::from_toml_in(&envs, saved, "saved config")
                    .ok()
                    .map(|c| c.to_toml())
            })
        })
        .parallel(parallel)
        .summary_field("matmul_kernels", shoal_rl_policy::matmul_kernels());
    let entry = cfg.envs.get(&cfg.env.kind).ok().copied();
    if let Some(reference) = entry.and_then(|e| e.reference) {
        let (settings, seed) = (cfg.env.settings.clone(), cfg.seed);
        // The search may find nothing on unusual settings: the run then
        // goes without the reference rather than failing.
        spec = spec.reference(Arc::new(move || reference(&settings, seed)));
    }
    spec
}

/// What `shoal train` was asked to do, resolved but not yet acted on: the
/// config, and where and how the run lives.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The run's configuration.
    pub cfg: RunConfig,
    /// Where the run lives and how it reports and stops: `--out`,
    /// `--resume`, `--checkpoint`, `--quiet`, the status interval, the stop
    /// flag, how worker processes start.
    pub options: RunOptions,
}

impl Plan {
    /// A new run of `cfg` in `runs/<name>-N`, with progress output.
    pub fn new(cfg: RunConfig) -> Self {
        Self {
            cfg,
            options: RunOptions::default(),
        }
    }

    /// Trains in `dir` (a new or empty directory).
    #[must_use]
    pub fn out(mut self, dir: impl Into<PathBuf>) -> Self {
        self.options.out = Some(dir.into());
        self
    }

    /// Continues the run in `dir` from its latest checkpoint.
    #[must_use]
    pub fn resume(mut self, dir: impl Into<PathBuf>) -> Self {
        self.options.resume = Some(dir.into());
        self
    }

    /// Without progress output.
    #[must_use]
    pub fn quiet(mut self) -> Self {
        self.options.quiet = true;
        self
    }

    /// Stopped cleanly (as by Ctrl-C) when `flag` is raised, leaving the
    /// process's signals alone: for a program with signal handling of its
    /// own, such as a Python interpreter.
    #[must_use]
    pub fn stop(mut self, flag: StopFlag) -> Self {
        self.options.stop = Some(flag);
        self
    }

    /// Worker processes (the processes backend) start as `workers` says
    /// instead of re-running this process's command line.
    #[must_use]
    pub fn worker_processes(mut self, workers: ProcessConfig) -> Self {
        self.options.worker_processes = Some(workers);
        self
    }
}

/// Runs a plan: one learner, or `parallel.workers` through the strategy
/// `parallel.strategy` names in the config's registry
/// ([`StrategyRegistry`](crate::strategies::StrategyRegistry)), on the
/// configured backend. Returns the run directory and summary on rank 0,
/// `None` on other ranks.
pub fn run(plan: &Plan) -> Result<Option<(PathBuf, Summary)>> {
    let cfg = &plan.cfg;
    // Every check runs before anything is created on disk: a config
    // refused after its run directory exists would leave a dead directory.
    check_config(cfg)?;
    let entry = cfg.strategies.get(cfg.parallel.strategy.name())?;
    (entry.run)(plan)
}

/// Trains `plan` with the strategy `make_strategy` builds on every rank, on
/// the backend and worker count of `plan.cfg.parallel`, with the learners
/// of its preset and everything `shoal train` gives its own strategies (see
/// [`shoal_rl_run::train_parallel`]). `plan.cfg.parallel.strategy` must carry
/// the strategy's [`Strategy::name`], so configs, records and summaries use
/// one name. `examples/custom_strategy.rs` shows it end to end. Returns the
/// run directory and summary on rank 0, `None` on other ranks.
pub fn run_strategy<S, F>(plan: &Plan, make_strategy: F) -> Result<Option<(PathBuf, Summary)>>
where
    S: Strategy<Box<dyn GradientLearner>>,
    F: Fn(&StrategySetup) -> Result<S> + Sync,
{
    let cfg = &plan.cfg;
    check_config(cfg)?;
    shoal_rl_run::train_parallel(
        &run_spec(cfg),
        &plan.options,
        |rank| make_learner(cfg, rank, 1.0),
        make_strategy,
    )
}

/// Largest `train.episodes` (and evaluation and checkpoint interval)
/// accepted: years of training at a million episodes a second.
pub const MAX_EPISODES: u64 = 1 << 40;
/// Most evaluation episodes in one evaluation.
pub const MAX_EVAL_EPISODES: usize = 1_000_000;

/// Checks everything about `cfg` that can be checked without touching the
/// disk: the parallel settings, the budget, and every learner the run will
/// build (rank 0's is built here and dropped, so whatever the constructors
/// refuse is refused now).
pub fn check_config(cfg: &RunConfig) -> Result<()> {
    cfg.parallel.validate()?;
    let algo = cfg.algos.get(cfg.algo.kind())?;
    if algo.goal_env && !cfg.is_goal_task()? {
        return Err(Error::Config(format!(
            "algo `{}` needs a goal-conditioned env ({}), not `{}`",
            algo.kind,
            cfg.envs.goal_ids().join(", "),
            cfg.env.kind
        )));
    }
    if let StrategyKind::None = cfg.parallel.strategy
        && cfg.parallel.workers != 1
    {
        return Err(Error::Config(format!(
            "preset `{}` trains one learner (parallel.strategy = \"none\"); for {} \
             workers also --set parallel.strategy=pool|gather|averaging",
            cfg.preset, cfg.parallel.workers
        )));
    }
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
    train.stop_grace()?;
    if train.stop_at_target
        && shoal_rl_run::run_target(&run_spec(cfg), None).is_none()
        && cfg.envs.get(&cfg.env.kind)?.reference.is_none()
    {
        return bad(NO_STOP_TARGET.into());
    }
    match cfg.parallel.strategy {
        StrategyKind::Gather => make_rollout_learner(cfg, 0).map(drop),
        StrategyKind::Pool => check_pool_candidates(cfg),
        _ => make_learner(cfg, 0, 1.0).map(drop),
    }
}

/// Builds the learner of every distinct pool candidate (those
/// `parallel.worker_overrides` names and the first past its end), so that
/// whatever their constructors refuse is refused now, and checks that each
/// takes candidate 0's state: the pool loads the winner's state into every
/// worker, which otherwise fails at the first winner of another shape, with
/// the run directory already written.
fn check_pool_candidates(cfg: &RunConfig) -> Result<()> {
    let group = cfg.parallel.pool_group_size.max(1);
    let learner_of = |candidate: usize| make_pool_learner(cfg, candidate * group);
    let first_state = learner_of(0)?.save_state();
    let distinct = (cfg.parallel.worker_overrides.len() + 1).min(cfg.parallel.candidates());
    for candidate in 1..distinct {
        learner_of(candidate)?
            .load_state(&first_state)
            .map_err(|e| {
                Error::Config(format!(
                    "parallel.worker_overrides of candidate {candidate}: its learner cannot \
                     take candidate 0's state ({e}); the pool loads the winner's state into \
                     every worker, so candidates may differ in settings, not in network shapes"
                ))
            })?;
    }
    Ok(())
}

/// A run's config and the learner state of its selected checkpoint
/// (`latest`, `best` or a number).
pub fn load_run_state(
    run_dir: &std::path::Path,
    which: &CheckpointSelector,
) -> Result<(RunConfig, Vec<u8>)> {
    load_run_state_in(Registries::default(), run_dir, which)
}

/// [`load_run_state`] of a run whose config names envs, algorithms or
/// strategies of `registries`.
pub fn load_run_state_in(
    registries: impl Into<Registries>,
    run_dir: &std::path::Path,
    which: &CheckpointSelector,
) -> Result<(RunConfig, Vec<u8>)> {
    let run = RunDir::new(run_dir);
    let text = std::fs::read_to_string(run.config())
        .map_err(|e| Error::io(format!("reading {}", run.config().display()), e))?;
    let cfg = RunConfig::from_toml_in(registries, &text, &run.config().display().to_string())?;
    // The model alone: evaluation needs no replay memory, which may be gone.
    let mut ckpt = load_checkpoint(run.path(), which, Some(&[STATE_BLOB]))?;
    Ok((cfg, ckpt.take_blob(STATE_BLOB)?))
}

/// Loads a run's config and selected checkpoint into a fresh learner.
pub fn load_run(
    run_dir: &std::path::Path,
    which: &CheckpointSelector,
) -> Result<(RunConfig, Box<dyn GradientLearner>)> {
    load_run_in(Registries::default(), run_dir, which)
}

/// [`load_run`] of a run whose config names envs, algorithms or strategies
/// of `registries`.
pub fn load_run_in(
    registries: impl Into<Registries>,
    run_dir: &std::path::Path,
    which: &CheckpointSelector,
) -> Result<(RunConfig, Box<dyn GradientLearner>)> {
    let (cfg, state) = load_run_state_in(registries, run_dir, which)?;
    let mut learner = make_learner(&cfg, 0, 1.0)?;
    learner.load_state(&state)?;
    Ok((cfg, learner))
}

/// A trained policy loaded from a run directory: acts on observations of
/// the run's env with exploration off, as `shoal eval` does, or samples
/// actions as the learner explored.
///
/// ```no_run
/// use shoal_rl_eval::CheckpointSelector;
/// use shoal_rl_train::TrainedPolicy;
/// # fn main() -> shoal_rl_core::Result<()> {
/// let policy = TrainedPolicy::load("runs/ppo-s1".as_ref(), &CheckpointSelector::Best)?;
/// let mut env = policy.make_env()?;
/// let obs = env.reset(Some(0));
/// let action = policy.act(&obs)?;
/// let mut rng = shoal_rl_core::rng_from_seed(7);
/// let explored = policy.sample(&obs, &mut rng)?;
/// # let _ = (action, explored); Ok(()) }
/// ```
pub struct TrainedPolicy {
    config: RunConfig,
    policy: Box<dyn Policy>,
}

impl TrainedPolicy {
    /// The policy of checkpoint `which` (`latest`, `best`, a number) of the
    /// run in `run_dir`. A HAC run is refused: its levels hold subgoals
    /// across steps, which no stateless policy can.
    pub fn load(run_dir: &std::path::Path, which: &CheckpointSelector) -> Result<Self> {
        Self::load_in(Registries::default(), run_dir, which)
    }

    /// [`TrainedPolicy::load`] of a run whose config names envs or
    /// algorithms of `registries`.
    pub fn load_in(
        registries: impl Into<Registries>,
        run_dir: &std::path::Path,
        which: &CheckpointSelector,
    ) -> Result<Self> {
        let (config, learner) = load_run_in(registries, run_dir, which)?;
        let policy = learner.policy().ok_or_else(|| {
            Error::Config(format!(
                "{}: a {} run has no stateless policy to load (its levels keep subgoals \
                 across steps); evaluate or render it with shoal eval / shoal render",
                run_dir.display(),
                config.algo.kind()
            ))
        })?;
        Ok(TrainedPolicy { config, policy })
    }

    /// The deterministic action for `obs` (the full observation the run's
    /// env returns); an observation of the wrong length is an error.
    pub fn act(&self, obs: &[f32]) -> Result<Vec<f32>> {
        self.policy.try_act(obs)
    }

    /// An action drawn with `rng` as the learner explored (PPO's and
    /// REINFORCE's Beta or Gaussian, SAC's squashed Gaussian); DDPG's and
    /// TD3's actors are deterministic and give [`TrainedPolicy::act`]'s
    /// action.
    pub fn sample(&self, obs: &[f32], rng: &mut dyn shoal_rl_core::rand::Rng) -> Result<Vec<f32>> {
        self.policy.try_sample(obs, rng)
    }

    /// The run's resolved configuration.
    pub fn config(&self) -> &RunConfig {
        &self.config
    }

    /// A fresh instance of the env the policy was trained on.
    pub fn make_env(&self) -> Result<Box<dyn Env>> {
        make_env(&self.config)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::algos::make_reinforce;
    use shoal_rl_algo::ReinforceConfig;

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
        let base: ReinforceConfig = cfg.algo.settings().unwrap();
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
            let plan = Plan::new(cfg)
                .out(std::env::temp_dir().join("shoal-never-created"))
                .quiet();
            run(&plan).unwrap_err().to_string()
        };
        assert_eq!(
            refused(&["parallel.worker_lr_scales=[0.1, 1.0, 1.0]"], 2),
            "invalid configuration: parallel.worker_lr_scales and worker_overrides name 3 \
             candidates; the pool has 2"
        );
        assert_eq!(
            refused(
                &[
                    "parallel.pool_group_size=2",
                    "parallel.worker_lr_scales=[1.0, 2.0]"
                ],
                2
            ),
            "invalid configuration: parallel.worker_lr_scales and worker_overrides name 2 \
             candidates; the pool has 1"
        );
        assert_eq!(
            refused(&["parallel.pool_group_size=2"], 3),
            "invalid configuration: parallel.pool_group_size must divide parallel.workers (3), \
             got 2"
        );
        assert_eq!(
            refused(&["parallel.pool_group_size=0"], 2),
            "invalid configuration: parallel.pool_group_size must divide parallel.workers (2), \
             got 0"
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
                &[r#"parallel.worker_overrides=[[], ["algo.gamma=0.9", "algo.kind=\"sac\""]]"#],
                2
            ),
            "invalid configuration: parallel.worker_overrides may not change algo.kind (got \
             `algo.kind=\"sac\"`): the pool's candidates load one another's state, so they \
             train one kind"
        );
        assert_eq!(
            refused(
                &[r#"parallel.worker_overrides=[[], ["algo.gamma=fast"]]"#],
                2
            ),
            "invalid configuration: parallel.worker_overrides of candidate 1: `algo.gamma` \
             expects a float, got `fast`"
        );
        assert_eq!(
            refused(
                &[
                    "parallel.pool_group_size=2",
                    r#"parallel.worker_overrides=[[], ["algo.gamma=fast"]]"#
                ],
                4
            ),
            "invalid configuration: parallel.worker_overrides of candidate 1: `algo.gamma` \
             expects a float, got `fast`"
        );
        // Networks of other sizes: the pool could not load one candidate's
        // state into another, at its first winner.
        assert_eq!(
            refused(
                &[r#"parallel.worker_overrides=[[], ["algo.hidden=[16]"]]"#],
                2
            ),
            "invalid configuration: parallel.worker_overrides of candidate 1: its learner \
             cannot take candidate 0's state (shape mismatch: parameter vector has 162 values, \
             the network has 82); the pool loads the winner's state into every worker, so \
             candidates may differ in settings, not in network shapes"
        );
        // Candidate 0 alone changed: candidate 1 takes the run's table.
        assert_eq!(
            refused(&[r#"parallel.worker_overrides=[["algo.hidden=[16]"]]"#], 3),
            "invalid configuration: parallel.worker_overrides of candidate 1: its learner \
             cannot take candidate 0's state (shape mismatch: parameter vector has 82 values, \
             the network has 162); the pool loads the winner's state into every worker, so \
             candidates may differ in settings, not in network shapes"
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
        let mut grouped_averaging = averaging.clone();
        grouped_averaging.parallel.worker_overrides.clear();
        grouped_averaging.parallel.pool_group_size = 2;
        assert_eq!(
            grouped_averaging
                .parallel
                .validate()
                .unwrap_err()
                .to_string(),
            "invalid configuration: parallel.pool_group_size applies to the pool, not strategy \
             `averaging`"
        );
    }

    /// With candidates of 2 workers, both members of a candidate get its
    /// settings: worker r reads entry r / 2 of each list.
    #[test]
    fn the_members_of_a_candidate_share_its_settings() {
        let cfg = pool_of(
            4,
            &[
                "parallel.pool_group_size=2",
                "parallel.worker_lr_scales=[0.5, 2.0]",
                r#"parallel.worker_overrides=[["algo.gamma=0.9"]]"#,
            ],
        )
        .unwrap();
        let base: ReinforceConfig = cfg.algo.settings().unwrap();
        let expected = [
            (base.learning_rate * 0.5, 0.9),
            (base.learning_rate * 0.5, 0.9),
            (base.learning_rate * 2.0, base.gamma),
            (base.learning_rate * 2.0, base.gamma),
        ];
        for (rank, (lr, gamma)) in expected.into_iter().enumerate() {
            let (worker_cfg, scale) = cfg.worker(rank).unwrap();
            let learner = make_reinforce(&worker_cfg, rank, scale).unwrap();
            assert_eq!(learner.config().learning_rate, lr, "worker {rank}");
            assert_eq!(learner.config().gamma, gamma, "worker {rank}");
        }
        let settings = &run_spec(&cfg).parallel.iteration_fields[0].1;
        assert_eq!(settings[1]["lr_scale"], 0.5);
        assert_eq!(settings[3]["lr_scale"], 2.0);
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
            let plan = Plan::new(RunConfig::resolve("toy-reinforce", &overrides).unwrap())
                .out(dir.join(name))
                .quiet();
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
            let plan = Plan::new(RunConfig::resolve(preset, &overrides).unwrap()).quiet();
            match resume {
                true => plan.resume(dir.join(name)),
                false => plan.out(dir.join(name)),
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
