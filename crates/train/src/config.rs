//! Run configuration: presets, TOML files and `--set` overrides, resolved
//! into one typed [`RunConfig`] that is saved as `config.toml` in the run
//! directory.

use std::path::Path;

use serde::{Deserialize, Serialize};
use shoal_rl_algo::{DdpgConfig, HacConfig};
use shoal_rl_core::{Error, Result};
use shoal_rl_parallel::Backend;

use crate::overrides::{apply_override_with, assignments_to, overridden_value};

pub use shoal_rl_registry::{EnvConfig, EnvRegistry};

pub use crate::algos::{AlgoConfig, AlgoRegistry};
pub use crate::strategies::StrategyRegistry;

/// The tables a config's names are read in: envs (`env.kind`), algorithms
/// (`algo.kind`) and strategies (`parallel.strategy`). Each defaults to
/// shoal's own; a program that registers its own passes them to
/// [`RunConfig::resolve_in`].
#[derive(Clone, Debug, Default)]
pub struct Registries {
    /// The envs.
    pub envs: EnvRegistry,
    /// The algorithms.
    pub algos: AlgoRegistry,
    /// The strategies.
    pub strategies: StrategyRegistry,
}

impl Registries {
    /// With these envs.
    #[must_use]
    pub fn envs(mut self, envs: EnvRegistry) -> Self {
        self.envs = envs;
        self
    }

    /// With these algorithms.
    #[must_use]
    pub fn algos(mut self, algos: AlgoRegistry) -> Self {
        self.algos = algos;
        self
    }

    /// With these strategies.
    #[must_use]
    pub fn strategies(mut self, strategies: StrategyRegistry) -> Self {
        self.strategies = strategies;
        self
    }
}

/// The envs given, shoal's algorithms and strategies.
impl From<&EnvRegistry> for Registries {
    fn from(envs: &EnvRegistry) -> Self {
        Registries::default().envs(envs.clone())
    }
}

impl From<&Registries> for Registries {
    fn from(registries: &Registries) -> Self {
        registries.clone()
    }
}

pub use shoal_rl_run::TrainConfig;

/// Which strategy trains a run's workers together: one of shoal's, or one
/// defined by a program that uses shoal as a library (its
/// `Strategy::name`, run through [`crate::train::run_strategy`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StrategyKind {
    /// One learner, no parallel strategy.
    None,
    /// Branch-and-merge pool ([`shoal_rl_parallel::Pool`]).
    Pool,
    /// Rollout gather to rank 0 ([`shoal_rl_parallel::RolloutGather`]).
    Gather,
    /// Gradient averaging ([`shoal_rl_parallel::GradientAveraging`]).
    Averaging,
    /// A strategy shoal does not define, by its name.
    #[serde(untagged)]
    Custom(String),
}

impl StrategyKind {
    /// The strategies `shoal train` runs itself.
    pub const BUILT_IN: [StrategyKind; 4] = [
        StrategyKind::None,
        StrategyKind::Pool,
        StrategyKind::Gather,
        StrategyKind::Averaging,
    ];

    /// The name in configs and records (the strategy's `Strategy::name`).
    pub fn name(&self) -> &str {
        match self {
            StrategyKind::None => "none",
            StrategyKind::Pool => "pool",
            StrategyKind::Gather => "gather",
            StrategyKind::Averaging => "averaging",
            StrategyKind::Custom(name) => name,
        }
    }
}

impl std::fmt::Display for StrategyKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Parallel training: how many workers, on which backend, with which strategy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ParallelConfig {
    /// Worker count, 1 to `shoal_rl_parallel::MAX_WORKERS`. Default 1.
    pub workers: usize,
    /// `threads`, `processes` or `mpi`. Default `threads`.
    pub backend: Backend,
    /// `none` (single learner), `pool` (branch-and-merge), `gather` (rollout
    /// gather) or `averaging` (gradient averaging). Default `none`.
    pub strategy: StrategyKind,
    /// Training episodes each worker runs per iteration (pool, gather and
    /// averaging; under gather, rank 0 updates on all workers' episodes of
    /// an iteration). Default 10.
    pub episodes_per_iteration: usize,
    /// Pool: frozen-policy episodes per candidate, on which the winner is
    /// selected (the promoted agent's evaluation uses `train.eval_episodes`
    /// on the run's fixed evaluation seed, like a single learner's). Default 3.
    pub pool_eval_episodes: usize,
    /// Pool: workers per candidate. Above 1, each candidate is a group of
    /// this many consecutive workers that average their gradients, each
    /// member scores it on `pool_eval_episodes` of its own, and
    /// `worker_lr_scales` and `worker_overrides` are read by candidate. Must
    /// divide `workers`. Default 1.
    pub pool_group_size: usize,
    /// Pool: learning-rate multipliers by candidate (by rank unless
    /// `pool_group_size` is set), 1 for candidates past the end of the
    /// list. Default `[0.1]`: worker 0 is the guard against steps that are
    /// too large. A REINFORCE preset's pool of 4 or more candidates spreads
    /// them over a decade instead unless this key is set (`[1.0, 2.2, 4.6,
    /// 10.0]` for 4).
    pub worker_lr_scales: Vec<f64>,
    /// Pool: `algo.*` overrides by candidate, each written as `--set` takes
    /// it (`[[], ["algo.learning_rate=0.003"]]` gives worker 1 its own
    /// rate); candidates past the end of the list use the run's `algo`
    /// table. Not `algo.kind`: candidates load one another's state. Default
    /// none.
    pub worker_overrides: Vec<Vec<String>>,
    /// Processes backend: the longest, in seconds, any rank waits for
    /// another inside one collective before the run fails naming it (a
    /// stopped, deadlocked or vanished worker; a silent rank 0). Must exceed
    /// the longest stretch of work between two collectives. Default 600.
    pub timeout_s: f64,
    /// Write where each worker's time went into every iteration line
    /// (`time/…`: CPU time computing and wall time in collectives by rank,
    /// all-reduce calls and values), which `shoal scale` projects to real
    /// cores from. Measured, so these keys differ between runs of the same
    /// seed. Default false.
    pub profile: bool,
}

impl Default for ParallelConfig {
    fn default() -> Self {
        ParallelConfig {
            workers: 1,
            backend: Backend::Threads,
            strategy: StrategyKind::None,
            episodes_per_iteration: 10,
            pool_eval_episodes: 3,
            pool_group_size: 1,
            worker_lr_scales: vec![0.1],
            worker_overrides: Vec::new(),
            timeout_s: 600.0,
            profile: false,
        }
    }
}

impl ParallelConfig {
    /// The pool's candidates: one per `pool_group_size` workers.
    pub fn candidates(&self) -> usize {
        self.workers / self.pool_group_size.max(1)
    }

    /// The candidate worker `rank` of a pool trains: `rank / pool_group_size`.
    pub fn candidate_of(&self, rank: usize) -> usize {
        rank / self.pool_group_size.max(1)
    }

    /// Worker `rank`'s learning-rate multiplier: its candidate's entry of
    /// `worker_lr_scales`, 1 past the list's end.
    pub fn lr_scale_of(&self, rank: usize) -> f64 {
        let candidate = self.candidate_of(rank);
        self.worker_lr_scales.get(candidate).copied().unwrap_or(1.0)
    }

    /// Worker `rank`'s `algo.*` overrides: its candidate's entry of
    /// `worker_overrides`, none past the list's end.
    pub fn overrides_of(&self, rank: usize) -> &[String] {
        let candidate = self.candidate_of(rank);
        self.worker_overrides
            .get(candidate)
            .map_or(&[][..], Vec::as_slice)
    }

    /// Checks the settings a parallel run depends on.
    pub fn validate(&self) -> Result<()> {
        if self.workers == 0 || self.workers > shoal_rl_parallel::MAX_WORKERS {
            return Err(Error::Config(format!(
                "parallel.workers must be between 1 and {}, got {}",
                shoal_rl_parallel::MAX_WORKERS,
                self.workers
            )));
        }
        if !(self.timeout_s.is_finite() && self.timeout_s > 0.0 && self.timeout_s <= 604_800.0) {
            return Err(Error::Config(format!(
                "parallel.timeout_s must be a number of seconds in (0, 604800], got {}",
                self.timeout_s
            )));
        }
        if let Some(scale) = self
            .worker_lr_scales
            .iter()
            .find(|s| !(s.is_finite() && **s > 0.0))
        {
            return Err(Error::Config(format!(
                "parallel.worker_lr_scales must be positive and finite, got {scale}"
            )));
        }
        let group = self.pool_group_size;
        if group == 0
            || (self.strategy == StrategyKind::Pool && !self.workers.is_multiple_of(group))
        {
            return Err(Error::Config(format!(
                "parallel.pool_group_size must divide parallel.workers ({}), got {group}",
                self.workers
            )));
        }
        if group != 1 && self.strategy != StrategyKind::Pool {
            return Err(Error::Config(format!(
                "parallel.pool_group_size applies to the pool, not strategy `{}`",
                self.strategy
            )));
        }
        let per_candidate = self.worker_lr_scales.len().max(self.worker_overrides.len());
        if self.strategy == StrategyKind::Pool && per_candidate > self.candidates() {
            return Err(Error::Config(format!(
                "parallel.worker_lr_scales and worker_overrides name {per_candidate} \
                 candidates; the pool has {}",
                self.candidates()
            )));
        }
        if !self.worker_overrides.is_empty() && self.strategy != StrategyKind::Pool {
            return Err(Error::Config(format!(
                "parallel.worker_overrides applies to the pool; strategy `{}` trains workers \
                 that must share one setting",
                self.strategy
            )));
        }
        if let Some(key) = self
            .worker_overrides
            .iter()
            .flatten()
            .find(|o| !o.trim_start().starts_with("algo."))
        {
            return Err(Error::Config(format!(
                "parallel.worker_overrides may set algo.* keys only, got `{key}`"
            )));
        }
        // The pool's candidates load the winner's state, so they must be one
        // learner with different settings: a kind of its own would have
        // networks of another shape (refused there only mid-run).
        if let Some(assignment) = self
            .worker_overrides
            .iter()
            .find_map(|candidate| assignments_to(candidate, "algo.kind").next())
        {
            return Err(Error::Config(format!(
                "parallel.worker_overrides may not change algo.kind (got `{assignment}`): the \
                 pool's candidates load one another's state, so they train one kind"
            )));
        }
        if let StrategyKind::Custom(name) = &self.strategy
            && (name.is_empty() || name.len() > 64)
        {
            return Err(Error::Config(format!(
                "parallel.strategy must name a strategy, got `{name}`"
            )));
        }
        Ok(())
    }
}

/// Everything a run needs, exactly as saved in `config.toml`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// Name of the preset this config started from.
    pub preset: String,
    /// Master seed; worker `r` uses `seed + r`.
    pub seed: u64,
    /// The task.
    pub env: EnvConfig,
    /// Settings of `env` that the evaluation envs take instead, keys of
    /// `env.kind`'s settings (not `kind`): train on one goal range and test
    /// on another, as the HAC paper tests its pendulum on the upright goal
    /// alone (`[eval_env] goal_angle_range = [0.0, 0.0]`). Evaluations
    /// during the run, its final one and `shoal eval` use them. Default
    /// none: evaluation envs are the training env.
    #[serde(default, skip_serializing_if = "toml::Table::is_empty")]
    pub eval_env: toml::Table,
    /// The envs `env.kind` names: shoal's own unless a program that uses
    /// shoal as a library resolved the config with its own
    /// ([`RunConfig::resolve_in`]). Not part of the file.
    #[serde(skip)]
    pub envs: EnvRegistry,
    /// The algorithms `algo.kind` names (as `envs`). Not part of the file.
    #[serde(skip)]
    pub algos: AlgoRegistry,
    /// The strategies `parallel.strategy` names (as `envs`). Not part of
    /// the file.
    #[serde(skip)]
    pub strategies: StrategyRegistry,
    /// The learner.
    pub algo: AlgoConfig,
    /// Budget, evaluation and checkpoint cadence.
    #[serde(default)]
    pub train: TrainConfig,
    /// Workers and strategy.
    #[serde(default)]
    pub parallel: ParallelConfig,
}

/// A built-in preset: its name and its file. A preset is data, as RL
/// Baselines3 Zoo keeps its hyperparameters: a TOML file under `presets/`
/// holding `about` (one line for `--help`) and the settings that differ
/// from the defaults, with comments saying why. Keys left out take the
/// defaults of their settings struct (the env's from its registry entry).
pub struct Preset {
    /// The name `shoal train` takes.
    pub name: &'static str,
    /// The preset's file, as embedded.
    pub toml: &'static str,
}

impl Preset {
    /// Its `about` line: what it trains, for `--help` and the
    /// unknown-preset error.
    pub fn about(&self) -> String {
        self.table()
            .get("about")
            .and_then(toml::Value::as_str)
            .unwrap_or_default()
            .to_string()
    }

    /// The preset's config, named after it.
    pub fn config(&self) -> RunConfig {
        self.config_in(&EnvRegistry::builtin())
            .unwrap_or_else(|e| panic!("built-in preset {}: {e}", self.name))
    }

    /// The preset's config with the names of `registries`: its file over
    /// the defaults of its env, algorithm, budget and parallel settings.
    pub fn config_in(&self, registries: impl Into<Registries>) -> Result<RunConfig> {
        self.config_with(registries.into(), &[])
    }

    /// [`Preset::config_in`] with `overrides`' `algo.kind` (if any) in
    /// place of the preset's, before the keys it leaves out are filled in.
    fn config_with(&self, registries: Registries, overrides: &[String]) -> Result<RunConfig> {
        let mut tree = self.table();
        switch_algo_kind(&mut tree, overrides);
        tree.remove("about");
        tree.insert("preset".into(), self.name.into());
        tree.entry("seed").or_insert(toml::Value::Integer(0));
        if let Some(toml::Value::Table(env)) = tree.get_mut("env") {
            let kind = env
                .get("kind")
                .and_then(toml::Value::as_str)
                .unwrap_or_default();
            let mut full = (registries.envs.get(kind)?.defaults)();
            full.insert("kind".into(), kind.into());
            merge(&mut full, std::mem::take(env));
            *env = full;
        }
        read_tree(&registries, tree).map_err(|e| in_context(&format!("preset {}", self.name), e))
    }

    fn table(&self) -> toml::Table {
        toml::from_str(self.toml)
            .unwrap_or_else(|e| panic!("built-in preset {} is malformed: {e}", self.name))
    }
}

/// A config file's text as a table, its old keys read as their
/// successors ([`migrate`]); `origin` names it in errors.
fn toml_table(text: &str, origin: &str) -> Result<toml::Table> {
    let malformed =
        |e: toml::de::Error| Error::Config(format!("{origin} is malformed: {}", one_line(&e)));
    let mut tree: toml::Table = toml::from_str(text).map_err(malformed)?;
    migrate(&mut tree);
    Ok(tree)
}

/// Puts the `algo.kind` that `overrides` name (if any, and a string) into
/// a config's own table before it is read: the keys the table leaves out
/// then take the new algorithm's defaults, as if the file had named that
/// kind. (Switched after reading, they would keep the old kind's: TD3 or
/// SAC from a DDPG preset would run with one critic and DDPG's actor.)
fn switch_algo_kind(tree: &mut toml::Table, overrides: &[String]) {
    if let Some(kind @ toml::Value::String(_)) = overridden_value(overrides, "algo.kind")
        && let Some(toml::Value::Table(algo)) = tree.get_mut("algo")
    {
        algo.insert("kind".into(), kind);
    }
}

/// Writes every key of `over` into `base`, tables key by key.
fn merge(base: &mut toml::Table, over: toml::Table) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(inner)), toml::Value::Table(value)) => merge(inner, value),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

/// The algorithm kinds trained by DDPG's agent ([`shoal_rl_algo::Ddpg`]),
/// which share its rules for averaging workers.
const DDPG_AGENT_KINDS: &[&str] = &["ddpg", "td3", "sac"];

macro_rules! presets {
    ($($name:literal),* $(,)?) => {
        &[$(Preset { name: $name, toml: include_str!(concat!("../presets/", $name, ".toml")) }),*]
    };
}

/// Every built-in preset, in the order `--help` lists them: `preset()`,
/// `shoal train --help`, the unknown-preset error and the tests all read
/// this one table. A new preset is its file under `presets/` and its name
/// here.
pub const PRESETS: &[Preset] = presets![
    "worm-reinforce",
    "worm-pool",
    "worm5-reinforce",
    "worm5-pool",
    "worm7-reinforce",
    "worm7-pool",
    "worm-ppo",
    "worm5-ppo",
    "worm7-ppo",
    "toy-ppo",
    "toy-reinforce",
    "push-ddpg-her",
    "ball-ddpg-her",
    "toy-ddpg-her",
    "worm-td3",
    "worm-sac",
    "worm7-td3",
    "worm7-sac",
    "ball-td3-her",
    "ball-sac-her",
    "push-far-ddpg-her",
    "push-far-hac",
    "push-hac",
    "ball-hac",
    "ur5-hac1",
    "ur5-hac2",
    "ur5-hac3",
    "pendulum-hac1",
    "pendulum-hac2",
    "pendulum-hac3",
    "push-far-hac3",
    "toy-hac",
];

/// The built-in preset `name`.
pub fn preset(name: &str) -> Result<RunConfig> {
    find_preset(name).map(Preset::config)
}

/// The entry of the built-in preset `name`, or an error listing them.
pub fn find_preset(name: &str) -> Result<&'static Preset> {
    match PRESETS.iter().find(|p| p.name == name) {
        Some(preset) => Ok(preset),
        None => {
            let names: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
            Err(Error::Config(format!(
                "unknown preset `{name}` (presets: {})",
                names.join(", ")
            )))
        }
    }
}

/// Whether `source` names a config file (a path ending in `.toml`, or any
/// file that exists) rather than a preset. Worker rules
/// ([`RunConfig::follow_workers`]) apply to presets only: a config file,
/// a run's saved `config.toml` among them, holds the values it trains with.
pub fn is_config_file(source: &str) -> bool {
    source.ends_with(".toml") || Path::new(source).is_file()
}

impl RunConfig {
    /// Resolves a preset name or a path to a TOML file, then applies `--set`
    /// overrides in order.
    pub fn resolve(source: &str, overrides: &[String]) -> Result<RunConfig> {
        Self::resolve_in(&EnvRegistry::builtin(), source, overrides)
    }

    /// [`RunConfig::resolve`] with the envs, algorithms and strategies of
    /// `registries` (an [`EnvRegistry`] alone takes shoal's algorithms and
    /// strategies): how a program that registers its own reads a config or
    /// a preset that names them.
    pub fn resolve_in(
        registries: impl Into<Registries>,
        source: &str,
        overrides: &[String],
    ) -> Result<RunConfig> {
        let registries = registries.into();
        if is_config_file(source) {
            let text = std::fs::read_to_string(source)
                .map_err(|e| Error::io(format!("reading config {source}"), e))?;
            let mut tree = toml_table(&text, source)?;
            switch_algo_kind(&mut tree, overrides);
            return read_tree(&registries, tree)
                .map_err(|e| in_context(&format!("{source} is malformed"), e))?
                .with_overrides(overrides);
        }
        let mut cfg = find_preset(source)?
            .config_with(registries, overrides)?
            .with_overrides(overrides)?;
        cfg.follow_workers(overrides);
        Ok(cfg)
    }

    /// The worker-aware defaults of a preset trained on several workers: the
    /// settings that set the update work per episode of experience, or the
    /// pool's spread of candidates, follow `parallel.workers` unless an
    /// override names them. Each rule was chosen by measurements:
    ///
    /// - Under gradient averaging, the workers of DDPG and HAC share the
    ///   preset's batch (`algo.batch_size` = batch / N, at least 1), so each
    ///   update still averages one batch's worth of samples. For DDPG at 8
    ///   workers that projected a median efficiency of 0.91 against 0.56
    ///   with a full batch each, and at 4 workers 1.35 against 0.68
    ///   (docs/experiments/scaling-push.md); for HAC, two workers on two
    ///   cores reached 0.9 sooner than one (docs/experiments/hac-shared-batch.md).
    ///   Past 4 workers DDPG's workers each draw a quarter of the batch and
    ///   make fewer updates, the samples per cycle about unchanged
    ///   ([`averaging_ddpg_work`]; a named `algo.n_batches` stays, a named
    ///   `algo.batch_size` keeps both): 20 updates of 64 samples a worker
    ///   on 8 workers projected a median efficiency of 1.83 against 1.03
    ///   for 40 of 32, and 10 of 64 on 16 workers 1.08 against 0.46 for
    ///   40 of 16 (docs/experiments/push-16-workers-batch.md).
    ///   PPO keeps its settings: neither averaging nor gathering reached the
    ///   gait sooner than one worker (docs/experiments/ppo-gather-scaling.md).
    /// - Under gradient averaging, each DDPG or HAC worker trains at least a
    ///   third of the preset's `train.episodes` ([`averaging_budget`]),
    ///   unless `train.episodes` is named. A worker of many learns less per
    ///   episode than one learner, so the shared budget left too few
    ///   episodes each: `push-ddpg-her`'s workers needed up to 1 612 episodes
    ///   each to reach 0.9 on 4 workers, 1 116 on 8 and 1 140 on 16
    ///   (docs/experiments/scaling-push-defaults.md,
    ///   docs/experiments/push-16-workers-batch.md), where 6 000 shared
    ///   gives 1 500, 750 and 375; `push-hac`'s workers needed up to 3 100
    ///   each on 4 workers and 1 550 on 8, where its 12 000 shared gives
    ///   3 000 and 1 500 (docs/experiments/scaling-hac.md).
    ///   `train.eval_every` and `train.checkpoint_every` (unless named)
    ///   grow with the budget, so the run evaluates and checkpoints as
    ///   often as the preset's: rank 0 evaluates while the others wait,
    ///   and at 16 workers every 500 episodes would be 64 evaluations.
    /// - A REINFORCE pool of 4 or more candidates (workers, or groups of
    ///   `parallel.pool_group_size`) spreads their learning rates over a
    ///   decade ([`spread_lr_scales`]) in place of the preset's
    ///   `parallel.worker_lr_scales`, which were chosen for 2 workers: on
    ///   the 5-link worm, projected onto one core per worker, the spread
    ///   pool reached the first target 3.2× and 4.9× sooner than the best
    ///   single learner with 10 and 16 workers (seeds 0–2; 1.8× and 3.9× on
    ///   six), where the preset's pool gave 2.0× and 1.6×, and tied with it
    ///   at 4 (docs/experiments/pool-lr-spread.md); on 7 links, 10 workers
    ///   gave 2.6× against the preset's 1.6×
    ///   (docs/experiments/pool-spread-worms.md).
    ///
    /// Applied to presets only: a config file (a run's saved `config.toml`
    /// among them) already holds the values it trains with.
    pub fn follow_workers(&mut self, overrides: &[String]) {
        let workers = self.parallel.workers.max(1);
        let named = |key: &str| {
            overrides
                .iter()
                .any(|o| o.split_once('=').is_some_and(|(k, _)| k.trim() == key))
        };
        match self.parallel.strategy {
            StrategyKind::Averaging if workers > 1 => {
                // TD3 and SAC are DDPG's agent with other settings: the same rules.
                let kind = self.algo.kind().to_string();
                let ddpg_agent = DDPG_AGENT_KINDS.contains(&kind.as_str());
                if (ddpg_agent || kind == "hac") && !named("train.episodes") {
                    self.raise_budget(averaging_budget(self.train.episodes, workers), &named);
                }
                if named("algo.batch_size") {
                    return;
                }
                if let Some(mut ddpg) = ddpg_agent
                    .then(|| self.algo.settings_if::<DdpgConfig>(&kind))
                    .flatten()
                {
                    let (batch, updates) =
                        averaging_ddpg_work(ddpg.batch_size, ddpg.n_batches, workers);
                    ddpg.batch_size = batch;
                    if !named("algo.n_batches") {
                        ddpg.n_batches = updates;
                    }
                    self.algo = AlgoConfig::new(&kind, &ddpg).expect("DDPG's settings are TOML");
                } else if let Some(mut hac) = self.algo.settings_if::<HacConfig>("hac") {
                    hac.batch_size = shared_batch(hac.batch_size, workers);
                    self.algo = AlgoConfig::new("hac", &hac).expect("HAC's settings are TOML");
                }
            }
            StrategyKind::Pool
                if self.parallel.candidates() >= SPREAD_POOL_FROM
                    && self.algo.kind() == "reinforce"
                    && !named("parallel.worker_lr_scales") =>
            {
                self.parallel.worker_lr_scales = spread_lr_scales(self.parallel.candidates());
            }
            _ => {}
        }
    }

    /// Sets `train.episodes` to `budget` and stretches `train.eval_every`
    /// and `train.checkpoint_every` (those not `named`) by the same factor,
    /// so the run evaluates and checkpoints as often as before.
    fn raise_budget(&mut self, budget: u64, named: &impl Fn(&str) -> bool) {
        let before = self.train.episodes.max(1);
        let stretch = |every: u64| (every as u128 * budget as u128 / before as u128) as u64;
        if !named("train.eval_every") {
            self.train.eval_every = stretch(self.train.eval_every);
        }
        if !named("train.checkpoint_every") {
            self.train.checkpoint_every = stretch(self.train.checkpoint_every);
        }
        self.train.episodes = budget;
    }

    /// This config with `--set` style `key=value` overrides applied in order.
    pub fn with_overrides(&self, overrides: &[String]) -> Result<RunConfig> {
        if overrides.is_empty() {
            return Ok(self.clone());
        }
        let mut tree = self.to_table();
        // `[eval_env]` is absent while empty; its keys may be added.
        tree.entry("eval_env")
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        // Optional settings are absent while unset; they may be added.
        let accepts = |tree: &toml::Table| {
            read_tree(&self.registries(), tree.clone())
                .map(drop)
                .map_err(|e| match e {
                    Error::Config(message) => message,
                    other => other.to_string(),
                })
        };
        for assignment in overrides {
            apply_override_with(&mut tree, assignment, &accepts)?;
        }
        read_tree(&self.registries(), tree).map_err(|e| in_context("after --set", e))
    }

    /// The config worker `rank` of a pool trains with: the run's, with its
    /// candidate's `parallel.worker_overrides` applied, and its candidate's
    /// learning-rate multiplier from `parallel.worker_lr_scales` (1 past
    /// the list's end). Candidate = rank / `parallel.pool_group_size`.
    pub fn worker(&self, rank: usize) -> Result<(RunConfig, f64)> {
        let candidate = self.parallel.candidate_of(rank);
        let cfg = self
            .with_overrides(self.parallel.overrides_of(rank))
            .map_err(|e| {
                in_context(
                    &format!("parallel.worker_overrides of candidate {candidate}"),
                    e,
                )
            })?;
        Ok((cfg, self.parallel.lr_scale_of(rank)))
    }

    /// Parses a config file's text; `origin` names it in errors. Keys that
    /// earlier versions wrote are read as their successors ([`migrate`]).
    pub fn from_toml(text: &str, origin: &str) -> Result<RunConfig> {
        Self::from_toml_in(&EnvRegistry::builtin(), text, origin)
    }

    /// [`RunConfig::from_toml`] with the names of `registries`.
    pub fn from_toml_in(
        registries: impl Into<Registries>,
        text: &str,
        origin: &str,
    ) -> Result<RunConfig> {
        let tree = toml_table(text, origin)?;
        read_tree(&registries.into(), tree)
            .map_err(|e| in_context(&format!("{origin} is malformed"), e))
    }

    /// The tables this config's names were read in.
    pub fn registries(&self) -> Registries {
        Registries {
            envs: self.envs.clone(),
            algos: self.algos.clone(),
            strategies: self.strategies.clone(),
        }
    }

    /// The evaluation envs' config: `env` with the keys of `eval_env` laid
    /// over its settings.
    pub fn eval_env_config(&self) -> Result<EnvConfig> {
        if self.eval_env.contains_key("kind") {
            return Err(Error::Config(
                "[eval_env] cannot set `kind`: evaluation envs are the training env's \
                 kind, with other settings"
                    .into(),
            ));
        }
        let mut config = self.env.clone();
        merge(&mut config.settings, self.eval_env.clone());
        Ok(config)
    }

    /// Whether the run's env is goal-conditioned (success rates, HER, HAC).
    pub fn is_goal_task(&self) -> Result<bool> {
        self.envs.is_goal(&self.env)
    }

    /// The config as TOML text.
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).expect("every config value is representable in TOML")
    }

    /// The config as a TOML tree whose values read as they were written.
    ///
    /// Goes through the text rather than `Table::try_from`: that widens an
    /// `f32` to `f64` bit for bit (`0.04` becomes `0.03999999910593033`),
    /// while the text writer prints the shortest `f32` repr, which parses
    /// back to the same `f32`.
    pub fn to_table(&self) -> toml::Table {
        toml::from_str(&self.to_toml()).expect("a config's own TOML parses")
    }
}

/// A config tree as a [`RunConfig`] whose names `registries` holds, its
/// env and algorithm settings checked by their entries.
fn read_tree(registries: &Registries, tree: toml::Table) -> Result<RunConfig> {
    let mut cfg: RunConfig = toml::Value::Table(tree)
        .try_into()
        .map_err(|e: toml::de::Error| Error::Config(one_line(&e)))?;
    cfg.envs = registries.envs.clone();
    cfg.algos = registries.algos.clone();
    cfg.strategies = registries.strategies.clone();
    cfg.envs.check(&cfg.env)?;
    if !cfg.eval_env.is_empty() {
        cfg.envs
            .check(&cfg.eval_env_config()?)
            .map_err(|e| in_context("eval_env", e))?;
    }
    cfg.algo.settings = cfg
        .algos
        .get(cfg.algo.kind())?
        .complete(&cfg.algo.settings)?;
    Ok(cfg)
}

/// The most averaging workers among which [`averaging_ddpg_work`] splits
/// a DDPG preset's batch; from there on each worker draws a quarter of it.
pub const SPLIT_BATCH_UP_TO: usize = 4;

/// The batch per worker and the updates per cycle of DDPG on `workers`
/// gradient-averaging workers, from one learner's `batch` and `n_batches`.
/// Every cycle the workers together draw about `batch × n_batches`
/// samples, as one learner does. Up to [`SPLIT_BATCH_UP_TO`] workers they
/// share the batch (`batch / workers` each) and make the same updates;
/// past it each draws `batch / SPLIT_BATCH_UP_TO` and makes
/// `n_batches × SPLIT_BATCH_UP_TO / workers` updates, rounded, because a
/// small batch pays an update's fixed cost and its all-reduce for few
/// samples: 64 samples and 20 updates for `push-ddpg-her` on 8 workers,
/// 64 and 10 on 16.
pub fn averaging_ddpg_work(batch: usize, n_batches: usize, workers: usize) -> (usize, usize) {
    let workers = workers.max(1);
    if workers <= SPLIT_BATCH_UP_TO {
        return (shared_batch(batch, workers), n_batches);
    }
    let updates = (n_batches * SPLIT_BATCH_UP_TO) as f64 / workers as f64;
    (
        (batch / SPLIT_BATCH_UP_TO).max(1),
        (updates.round() as usize).max(1),
    )
}

/// The share of a preset's `train.episodes` below which
/// [`averaging_budget`] does not let an averaging worker's episodes fall:
/// a third.
pub const AVERAGING_MIN_SHARE: u64 = 3;

/// `train.episodes` for `workers` gradient-averaging DDPG or HAC workers
/// from a preset's `episodes`: shared as before while each worker's part
/// is at least `episodes / AVERAGING_MIN_SHARE`, raised to that many per
/// worker past it. `push-ddpg-her`'s 6 000 stay 6 000 on 2 workers and
/// become 8 000 on 4, 16 000 on 8 and 32 000 on 16.
pub fn averaging_budget(episodes: u64, workers: usize) -> u64 {
    episodes.max(workers as u64 * episodes.div_ceil(AVERAGING_MIN_SHARE))
}

/// One worker's part of a `batch` that `workers` averaging workers share
/// (at least 1): together they draw what one learner draws.
fn shared_batch(batch: usize, workers: usize) -> usize {
    (batch / workers.max(1)).max(1)
}

/// The fewest pool candidates whose learning rates
/// [`RunConfig::follow_workers`] spreads: 2 and 3 keep the preset's
/// (measured at 2).
pub const SPREAD_POOL_FROM: usize = 4;

/// Learning-rate multipliers for `workers` pool candidates, evenly spaced in
/// log scale from 1 to 10 and rounded to one decimal: 1.0, 2.2, 4.6, 10.0
/// for 4 workers. The candidates try a decade of step sizes each iteration
/// and the pool keeps whichever learned best, so a step too large for a
/// single learner costs one candidate, not the run.
pub fn spread_lr_scales(workers: usize) -> Vec<f64> {
    if workers < 2 {
        return vec![1.0; workers];
    }
    let last = (workers - 1) as f64;
    (0..workers)
        .map(|i| (10f64.powf(i as f64 / last) * 10.0).round() / 10.0)
        .collect()
}

/// Rewrites keys that earlier versions of shoal wrote into config files as
/// the keys that replaced them, so their run directories stay readable:
/// `parallel.worker0_lr_scale = x` (before per-worker settings) becomes
/// `parallel.worker_lr_scales = [x]`.
pub fn migrate(tree: &mut toml::Table) {
    if let Some(toml::Value::Table(parallel)) = tree.get_mut("parallel")
        && !parallel.contains_key("worker_lr_scales")
        && let Some(scale) = parallel.remove("worker0_lr_scale")
    {
        parallel.insert("worker_lr_scales".into(), toml::Value::Array(vec![scale]));
    }
}

/// `error` as a config error whose line starts with `context`: its own
/// message keeps no second "invalid configuration:" prefix.
pub fn in_context(context: &str, error: Error) -> Error {
    let message = match error {
        Error::Config(message) => message,
        other => other.to_string(),
    };
    Error::Config(format!("{context}: {message}"))
}

/// toml's errors span several lines with a source excerpt; keep the message.
fn one_line(e: &toml::de::Error) -> String {
    // A value's own parser may fail with a shoal error, already prefixed;
    // the caller prefixes the line again.
    let msg = e.message().trim();
    let msg = msg
        .strip_prefix("invalid configuration: ")
        .unwrap_or(msg)
        .to_string();
    match e.span() {
        Some(span) => format!("{msg} (at byte {})", span.start),
        None => msg,
    }
}

/// The documented fields of [`RunConfig`] and [`ParallelConfig`], from
/// this file.
pub fn config_docs(name: &str) -> Option<Vec<shoal_rl_core::docs::FieldDoc>> {
    shoal_rl_core::docs::struct_docs(&[include_str!("config.rs")], name)
}

/// Every key of `cfg` with the doc comment of its field: the top level,
/// `env.*` from the env's registry entry, `algo.*`, `train.*` and
/// `parallel.*`.
pub fn key_docs(cfg: &RunConfig) -> Result<Vec<(String, String)>> {
    use shoal_rl_core::docs::key_docs as keys_of;
    fn section(prefix: &str, keys: Vec<(String, String)>) -> Vec<(String, String)> {
        let dotted = |(key, doc)| (format!("{prefix}.{key}"), doc);
        keys.into_iter().map(dotted).collect()
    }
    let algo = cfg.algos.get(cfg.algo.kind())?;
    // The top level's own keys; its tables are documented key by key below.
    let mut docs: Vec<(String, String)> = keys_of(&config_docs, "RunConfig")
        .into_iter()
        .filter(|(key, _)| {
            ![
                "env",
                "envs",
                "algos",
                "strategies",
                "algo",
                "train",
                "parallel",
            ]
            .contains(&key.as_str())
        })
        .collect();
    docs.push((
        "env.kind".into(),
        "The env, by its registry id (`shoal train --help` lists them).".into(),
    ));
    let env_docs = (cfg.envs.get(&cfg.env.kind)?.key_docs)();
    docs.extend(section(
        "eval_env",
        env_docs
            .iter()
            .filter(|(key, _)| cfg.eval_env.contains_key(key))
            .cloned()
            .collect(),
    ));
    docs.extend(section("env", env_docs));
    docs.push((
        "algo.kind".into(),
        "The algorithm (`shoal train --help` lists them).".into(),
    ));
    docs.extend(section("algo", (algo.key_docs)()));
    docs.extend(section(
        "train",
        keys_of(&shoal_rl_run::config_docs, "TrainConfig"),
    ));
    docs.extend(section("parallel", keys_of(&config_docs, "ParallelConfig")));
    Ok(docs)
}

/// The configuration reference (docs/configuration.md): every key of every
/// env, algorithm and the run, with its meaning and its value in a preset
/// that uses it, generated from the code. A test keeps the page equal to
/// this text.
pub fn reference_page() -> Result<String> {
    let mut page = String::from(
        "# Configuration reference\n\n\
         Every key `shoal train --set` and `config.toml` take, with its meaning (the doc \
         comment of its field in the code) and its value in one preset that uses it. \
         `shoal config PRESET` prints any preset's values with the same comments. \
         This page is generated from the code (`SHOAL_BLESS=1 cargo test --workspace \
         --lib reference_page` rewrites it) and a test fails when it is out of date.\n",
    );
    // One preset per section: the run's own keys, each env, each algorithm.
    let sections: [(&str, &str, &str); 14] = [
        ("The run", "", "worm-reinforce"),
        (
            "`train`: budget, evaluation, checkpoints",
            "train.",
            "worm-reinforce",
        ),
        (
            "`parallel`: workers, backend, strategy",
            "parallel.",
            "worm-pool",
        ),
        ("`env` = `worm`", "env.", "worm-reinforce"),
        ("`env` = `arm-push`", "env.", "push-ddpg-her"),
        ("`env` = `ball-to-net`", "env.", "ball-ddpg-her"),
        ("`env` = `ur5-reacher`", "env.", "ur5-hac3"),
        ("`env` = `pendulum`", "env.", "pendulum-hac3"),
        ("`env` = `point-reach` (toy)", "env.", "toy-reinforce"),
        ("`env` = `point-goal` (toy)", "env.", "toy-ddpg-her"),
        ("`algo` = `reinforce`", "algo.", "worm-reinforce"),
        ("`algo` = `ppo`", "algo.", "worm-ppo"),
        ("`algo` = `ddpg`", "algo.", "push-ddpg-her"),
        ("`algo` = `hac`", "algo.", "push-hac"),
    ];
    for (title, prefix, name) in sections {
        let cfg = preset(name)?;
        let docs = key_docs(&cfg)?;
        page.push_str(&format!(
            "\n## {title}\n\n| key | `{name}` | meaning |\n|---|---|---|\n"
        ));
        let values = crate::overrides::list_keys(&cfg.to_table());
        for (key, doc) in &docs {
            let top_level = !key.contains('.');
            if (prefix.is_empty() && !top_level) || (!prefix.is_empty() && !key.starts_with(prefix))
            {
                continue;
            }
            // Its value; an enum's variant is a table of its own keys; an
            // optional setting is absent while unset.
            let inner = format!("{key}.");
            let value: Vec<String> = values
                .iter()
                .filter(|(k, _)| k == key || k.starts_with(&inner))
                .map(|(k, v)| match k.strip_prefix(&inner) {
                    Some(rest) => format!("{rest} = {v}"),
                    None => v.clone(),
                })
                .collect();
            let value = if value.is_empty() {
                "unset".to_string()
            } else {
                format!("`{}`", value.join("; "))
            };
            // Rustdoc's intra-doc links (`[`HerConfig`]`) read as plain names here.
            let doc = doc.replace("[`", "`").replace("`]", "`");
            page.push_str(&format!(
                "| `{key}` | {} | {} |\n",
                value.replace('|', "\\|"),
                doc.replace('|', "\\|")
            ));
        }
    }
    Ok(page)
}

/// `toml` with each key's doc above it as `#` lines of at most 80 columns,
/// and every documented key it leaves out (an optional setting left unset,
/// such as `train.target_success`) as a commented `# key = (unset)` at the
/// end of its table. Comments change nothing a TOML reader sees.
pub fn commented(toml: &str, docs: &[(String, String)]) -> String {
    fn header_of(line: &str) -> Option<&str> {
        line.strip_prefix('[').and_then(|l| l.strip_suffix(']'))
    }
    let comment = |doc: &str, out: &mut String| {
        let mut line = String::from("#");
        for word in doc.split_whitespace() {
            if line.len() + 1 + word.len() > 80 {
                out.push_str(&line);
                out.push('\n');
                line = String::from("#");
            }
            line.push(' ');
            line.push_str(word);
        }
        out.push_str(&line);
        out.push('\n');
    };
    // Every dotted key and table the text holds.
    let mut present = std::collections::HashSet::new();
    let mut table = String::new();
    for line in toml.lines() {
        if let Some(header) = header_of(line) {
            table = format!("{header}.");
            present.insert(header.to_string());
        } else if let Some((key, _)) = line.split_once(" = ") {
            present.insert(format!("{table}{key}"));
        }
    }
    // A documented key of `table` (a `section.` prefix) that the text
    // leaves out, and that holds no table or key the text has.
    let unset = |table: &str, out: &mut String| {
        for (key, doc) in docs {
            let Some(leaf) = key.strip_prefix(table) else {
                continue;
            };
            let inside = format!("{key}.");
            if leaf.contains('.')
                || present.contains(key)
                || present.iter().any(|p| p.starts_with(&inside))
            {
                continue;
            }
            comment(doc, out);
            out.push_str(&format!("# {leaf} = (unset)\n"));
        }
    };
    let mut out = String::new();
    let mut table = String::new();
    for line in toml.lines() {
        if let Some(header) = header_of(line) {
            // Before the blank line that separates the tables.
            let blank = out.ends_with("\n\n");
            if blank {
                out.pop();
            }
            unset(&table, &mut out);
            if blank {
                out.push('\n');
            }
            table = format!("{header}.");
            // A table that holds one of an enum's variants (`[env.arm.gripper.Block]`):
            // the doc of the field that holds the enum.
            if let Some((_, doc)) = docs
                .iter()
                .find(|(k, _)| header.starts_with(k.as_str()) && header[k.len()..].starts_with('.'))
            {
                comment(doc, &mut out);
            }
        } else if let Some((key, _)) = line.split_once(" = ")
            && !key.starts_with([' ', '#'])
        {
            let dotted = format!("{table}{key}");
            if let Some((_, doc)) = docs.iter().find(|(k, _)| *k == dotted) {
                comment(doc, &mut out);
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    unset(&table, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_rl_algo::ReinforceConfig;

    #[test]
    fn a_switched_algo_kind_takes_its_own_defaults_for_keys_the_source_leaves_out() {
        let algo = |source: &str, overrides: &[&str]| {
            let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
            let cfg = RunConfig::resolve(source, &overrides).unwrap();
            cfg.to_table()["algo"].as_table().unwrap().clone()
        };
        let value = |table: &toml::Table, key: &str| table[key].to_string();
        // toy-ddpg-her names hidden, batch_size and n_batches only.
        let sac = algo("toy-ddpg-her", &["algo.kind=\"sac\""]);
        assert_eq!(value(&sac, "actor"), "\"gaussian\"");
        assert_eq!(value(&sac, "n_critics"), "2");
        assert_eq!(value(&sac, "random_eps"), "0.0");
        assert_eq!(value(&sac, "hidden"), "[64, 64]", "named keys stay");
        let td3 = algo("toy-ddpg-her", &["algo.kind=\"td3\"", "algo.n_critics=1"]);
        assert_eq!(value(&td3, "policy_delay"), "2");
        assert_eq!(value(&td3, "target_policy_noise"), "0.2");
        assert_eq!(value(&td3, "n_critics"), "1", "later overrides still apply");
        // A config file: the keys it names stay, the others are the new kind's.
        let dir = std::env::temp_dir().join(format!("shoal-kind-switch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("config.toml");
        std::fs::write(
            &file,
            "preset = \"mine\"\nseed = 0\n[env]\nkind = \"point-goal\"\n[algo]\nkind = \"ddpg\"\nn_critics = 1\n",
        )
        .unwrap();
        let from_file = algo(file.to_str().unwrap(), &["algo.kind=\"sac\""]);
        assert_eq!(value(&from_file, "actor"), "\"gaussian\"");
        assert_eq!(value(&from_file, "n_critics"), "1");
        let _ = std::fs::remove_dir_all(&dir);
        // Without a switch, nothing changes.
        let ddpg = algo("toy-ddpg-her", &[]);
        assert_eq!(value(&ddpg, "actor"), "\"deterministic\"");
    }

    #[test]
    fn every_key_of_every_preset_has_a_doc_and_shoal_config_prints_it() {
        for p in PRESETS {
            let cfg = preset(p.name).unwrap();
            let docs = key_docs(&cfg).unwrap();
            let text = commented(&cfg.to_toml(), &docs);
            // Comments change nothing a reader of the file sees.
            assert_eq!(
                toml::from_str::<toml::Table>(&text).unwrap(),
                cfg.to_table()
            );
            for (key, _) in crate::overrides::list_keys(&cfg.to_table()) {
                // The key's own doc, or the doc of the enum field above it.
                let documented = docs.iter().any(|(k, d)| {
                    !d.is_empty() && (*k == key || key.starts_with(&format!("{k}.")))
                });
                assert!(documented, "{}: `{key}` has no doc", p.name);
            }
            // Each key line has its doc above it; inside the table of an
            // enum's variant, the table's header has the field's doc.
            let lines: Vec<&str> = text.lines().collect();
            let mut variant = false;
            for (i, line) in lines.iter().enumerate() {
                let commented = i > 0 && lines[i - 1].starts_with("# ");
                if line.starts_with('[') {
                    variant = commented;
                } else if line.contains(" = ") && !line.starts_with([' ', '#']) {
                    assert!(commented || variant, "{}: {line}", p.name);
                }
            }
        }
    }

    #[test]
    fn reference_page_is_the_generated_one() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/configuration.md");
        let page = reference_page().unwrap();
        if std::env::var_os("SHOAL_BLESS").is_some() {
            std::fs::write(&path, &page).unwrap();
        }
        let written = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            written == page,
            "docs/configuration.md is out of date: run `SHOAL_BLESS=1 cargo test --workspace \
             --lib reference_page` and commit it"
        );
    }

    #[test]
    fn averaging_budget_gives_each_worker_at_least_a_third() {
        // By hand: 6 000 / 3 = 2 000 a worker once N x 2 000 passes 6 000.
        let cases = [
            (1, 6_000),
            (2, 6_000),
            (3, 6_000),
            (4, 8_000),
            (8, 16_000),
            (16, 32_000),
        ];
        for (workers, expected) in cases {
            assert_eq!(
                averaging_budget(6_000, workers),
                expected,
                "{workers} workers"
            );
        }
        // A budget that does not divide by 3 rounds each worker's part up.
        assert_eq!(averaging_budget(10, 4), 16);
        assert_eq!(averaging_budget(12_000, 8), 32_000);
    }

    #[test]
    fn averaging_ddpg_work_shares_the_batch_up_to_4_then_cuts_the_updates() {
        // Worked by hand from the rule's words: up to 4 workers 256 / N each
        // and 40 updates; from 5 on 64 each and 40 x 4 / N updates, rounded.
        let cases = [
            (1, (256, 40)),
            (2, (128, 40)),
            (4, (64, 40)),
            // 160 / 6 = 26.7 -> 27.
            (6, (64, 27)),
            (8, (64, 20)),
            // 160 / 12 = 13.3 -> 13.
            (12, (64, 13)),
            (16, (64, 10)),
            (32, (64, 5)),
        ];
        for (workers, expected) in cases {
            assert_eq!(
                averaging_ddpg_work(256, 40, workers),
                expected,
                "{workers} workers"
            );
        }
        // Small presets never reach zero.
        assert_eq!(averaging_ddpg_work(2, 1, 64), (1, 1));
        assert_eq!(averaging_ddpg_work(256, 40, 0), (256, 40));
    }

    #[test]
    fn every_preset_round_trips_through_toml() {
        for p in PRESETS {
            let cfg = preset(p.name).unwrap();
            assert_eq!(cfg.preset, p.name);
            let again = RunConfig::from_toml(&cfg.to_toml(), "test").unwrap();
            assert_eq!(cfg, again, "{}", p.name);
        }
    }

    #[test]
    fn f32_settings_read_as_written_and_survive_the_tree() {
        let cfg = preset("worm-reinforce").unwrap();
        let worm: shoal_rl_env::WormConfig = cfg.env.settings().unwrap();
        assert_eq!(worm.control_dt, 0.04);
        let tree = cfg.to_table();
        assert_eq!(tree["env"]["control_dt"].to_string(), "0.04");
        let again: RunConfig = toml::Value::Table(tree).try_into().unwrap();
        assert_eq!(again, cfg);
    }

    #[test]
    fn longer_worm_presets_differ_from_the_worm_presets_in_links_measured_rates_and_pool_budget_only()
     {
        for (name, base, links, pool_scales) in [
            ("worm5-reinforce", "worm-reinforce", 5, None),
            ("worm5-pool", "worm-pool", 5, Some(vec![1.0, 3.0])),
            ("worm7-reinforce", "worm-reinforce", 7, None),
            ("worm7-pool", "worm-pool", 7, Some(vec![1.0, 3.0])),
        ] {
            let mut longer = preset(name).unwrap();
            let worm: shoal_rl_env::WormConfig = longer.env.settings().unwrap();
            assert_eq!(worm.links, links, "{name}");
            longer.env = EnvConfig::new("worm", &worm.links(3)).unwrap();
            let mut reinforce: ReinforceConfig = longer.algo.settings().unwrap();
            assert_eq!(reinforce.learning_rate, 1e-3, "{name}");
            let base_cfg = preset(base).unwrap();
            let base_reinforce: ReinforceConfig = base_cfg.algo.settings().unwrap();
            reinforce.learning_rate = base_reinforce.learning_rate;
            longer.algo = AlgoConfig::new("reinforce", &reinforce).unwrap();
            if let Some(scales) = pool_scales {
                assert_eq!(longer.parallel.worker_lr_scales, scales, "{name}");
                longer.parallel.worker_lr_scales = base_cfg.parallel.worker_lr_scales.clone();
                assert_eq!(longer.train.episodes, 20_000, "{name}");
                longer.train.episodes = base_cfg.train.episodes;
            }
            longer.preset = base.into();
            assert_eq!(longer, base_cfg, "{name}");
        }
    }

    #[test]
    fn configs_written_before_per_worker_settings_still_read() {
        let mut old = preset("worm-pool").unwrap().to_table();
        let parallel = old["parallel"].as_table_mut().unwrap();
        parallel.remove("worker_lr_scales");
        parallel.insert("worker0_lr_scale".into(), toml::Value::Float(0.25));
        let text = toml::to_string(&old).unwrap();
        assert!(text.contains("worker0_lr_scale = 0.25"), "{text}");
        let cfg = RunConfig::from_toml(&text, "old.toml").unwrap();
        assert_eq!(cfg.parallel.worker_lr_scales, vec![0.25]);
        assert_eq!(cfg.worker(0).unwrap().1, 0.25);
        assert_eq!(cfg.worker(1).unwrap().1, 1.0);
    }

    #[test]
    fn evaluation_envs_take_eval_env_over_env_and_bad_keys_are_refused() {
        // The pendulum presets test on the paper's upright goal.
        let cfg = preset("pendulum-hac3").unwrap();
        let eval = cfg.eval_env_config().unwrap();
        assert_eq!(
            eval.settings["goal_angle_range"],
            toml::Value::try_from([0.0, 0.0]).unwrap()
        );
        assert_ne!(
            cfg.env.settings["goal_angle_range"],
            eval.settings["goal_angle_range"]
        );
        assert_eq!(eval.settings["max_torque"], cfg.env.settings["max_torque"]);
        // It goes through config.toml.
        assert_eq!(RunConfig::from_toml(&cfg.to_toml(), "t").unwrap(), cfg);

        // A preset without one takes `--set eval_env.KEY`; the evaluation
        // env of the learner it builds is that env: episodes of 3 steps
        // where training has 50 (an untrained agent reaches no goal).
        let toy = preset("toy-ddpg-her").unwrap();
        assert_eq!(toy.eval_env_config().unwrap(), toy.env);
        let eval_length = |cfg: &RunConfig| {
            let mut learner = crate::make_learner(cfg, 0, 1.0).unwrap();
            let report = learner.evaluate(4, 3).unwrap();
            (
                report.length_mean,
                learner.learn(1).unwrap().episode_lengths,
            )
        };
        let short = toy
            .with_overrides(&["eval_env.max_episode_steps=3".into()])
            .unwrap();
        assert_eq!(short.env, toy.env, "training keeps its env");
        assert_eq!(eval_length(&short), (3.0, vec![50]));
        assert_eq!(eval_length(&toy), (50.0, vec![50]));

        for (assignment, expected) in [
            ("eval_env.nosuch=1", "unknown key `eval_env.nosuch`"),
            ("eval_env.kind=\"worm\"", "cannot set `kind`"),
            ("eval_env.distance_threshold=true", "eval_env: "),
        ] {
            let message = toy
                .with_overrides(&[assignment.into()])
                .unwrap_err()
                .to_string();
            assert!(message.contains(expected), "{assignment}: {message}");
        }
        // Values are checked where the env is built, as `[env]`'s are.
        let negative = toy
            .with_overrides(&["eval_env.distance_threshold=-1".into()])
            .unwrap();
        let message = crate::make_learner(&negative, 0, 1.0)
            .err()
            .unwrap()
            .to_string();
        assert!(message.contains("distance_threshold"), "{message}");
    }

    #[test]
    fn unknown_preset_lists_the_choices() {
        let err = preset("worm-reinfroce").unwrap_err().to_string();
        assert!(err.contains("unknown preset `worm-reinfroce`"), "{err}");
        for p in PRESETS {
            assert!(err.contains(p.name), "{err} misses {}", p.name);
        }
    }

    #[test]
    fn malformed_override_value_is_an_error() {
        let err = RunConfig::resolve("toy-reinforce", &["algo.gamma=fast".into()])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`algo.gamma` expects a float, got `fast`"),
            "{err}"
        );
        let ok = RunConfig::resolve("toy-reinforce", &["algo.gamma=0.5".into()]).unwrap();
        let r: ReinforceConfig = ok.algo.settings().unwrap();
        assert_eq!(r.gamma, 0.5);
    }

    #[test]
    fn setting_any_key_of_any_preset_to_its_own_value_changes_nothing() {
        for p in PRESETS {
            let cfg = p.config();
            let keys = crate::overrides::list_keys(&cfg.to_table());
            assert!(keys.len() > 20, "{}: {} keys", p.name, keys.len());
            for (key, value) in &keys {
                let set = format!("{key}={value}");
                let same = cfg
                    .with_overrides(std::slice::from_ref(&set))
                    .unwrap_or_else(|e| panic!("{}: --set {set}: {e}", p.name));
                assert_eq!(same, cfg, "{}: --set {set}", p.name);
                let text = same.to_toml();
                assert_eq!(
                    RunConfig::from_toml(&text, "test").unwrap(),
                    cfg,
                    "{}: {text}",
                    p.name
                );
            }
        }
    }

    #[test]
    fn setting_a_key_to_another_value_changes_that_key_alone() {
        use toml::Value;
        for p in PRESETS {
            let cfg = p.config();
            let before = crate::overrides::list_keys(&cfg.to_table());
            let mut changed = 0;
            for (key, value) in &before {
                let other = match toml::from_str::<toml::Table>(&format!("v = {value}")).unwrap()["v"]
                {
                    Value::Integer(i) => (i + 1).to_string(),
                    Value::Float(f) => format!("{:?}", f * 2.0 + 0.25),
                    Value::Boolean(b) => (!b).to_string(),
                    _ => continue,
                };
                let set = format!("{key}={other}");
                let after = crate::overrides::list_keys(
                    &cfg.with_overrides(std::slice::from_ref(&set))
                        .unwrap_or_else(|e| panic!("{}: --set {set}: {e}", p.name))
                        .to_table(),
                );
                let differ: Vec<_> = before.iter().zip(&after).filter(|(a, b)| a != b).collect();
                assert_eq!(before.len(), after.len(), "{}: --set {set}", p.name);
                assert_eq!(differ.len(), 1, "{}: --set {set}: {differ:?}", p.name);
                assert_eq!(&differ[0].1.0, key, "{}: --set {set}", p.name);
                changed += 1;
            }
            assert!(
                changed * 2 > before.len(),
                "{}: {changed} of {}",
                p.name,
                before.len()
            );
        }
    }

    #[test]
    fn values_the_preset_files_write_out_follow_their_sources() {
        // An arm HAC preset's subgoals span the object's region over its
        // table, up to 10 cm above it (the ball's net may lie 0.3 m beyond).
        for (name, margin) in [
            ("push-hac", 0.0),
            ("push-far-hac", 0.0),
            ("push-far-hac3", 0.0),
            ("ball-hac", 0.3),
        ] {
            let cfg = preset(name).unwrap();
            let arm: shoal_rl_env::arm::ArmConfig = match cfg.env.kind.as_str() {
                "arm-push" => {
                    cfg.env
                        .settings::<shoal_rl_env::ArmPushConfig>()
                        .unwrap()
                        .arm
                }
                _ => {
                    cfg.env
                        .settings::<shoal_rl_env::BallToNetConfig>()
                        .unwrap()
                        .arm
                }
            };
            let (low, high) = arm.object_region(margin, 0.1);
            let hac: HacConfig = cfg.algo.settings().unwrap();
            assert_eq!(hac.subgoal_low.as_ref(), Some(&low), "{name}");
            assert_eq!(hac.subgoal_high.as_ref(), Some(&high), "{name}");
            // H steps of H subgoals cover the episode.
            let horizon = if arm.max_episode_steps > 100 { 15 } else { 10 };
            assert!(hac.horizon == horizon || hac.levels == 3, "{name}");
        }
        // The paper tasks' subgoal thresholds are their envs' own.
        let reacher = shoal_rl_env::Ur5ReacherConfig::default();
        let pendulum = shoal_rl_env::InvertedPendulumConfig::default();
        for levels in 1..=3 {
            let hac: HacConfig = preset(&format!("ur5-hac{levels}"))
                .unwrap()
                .algo
                .settings()
                .unwrap();
            let angle = f64::from(reacher.angle_threshold);
            assert_eq!(
                hac.subgoal_thresholds,
                Some(vec![angle, angle, angle, 2.0, 2.0, 2.0])
            );
            let tau = std::f32::consts::TAU;
            assert_eq!(hac.subgoal_high, Some(vec![tau, tau, tau, 4.0, 4.0, 4.0]));
            let top = [reacher.max_episode_steps, 25, 10][levels - 1];
            assert_eq!((hac.levels, hac.horizon), (levels, top));
            let hac: HacConfig = preset(&format!("pendulum-hac{levels}"))
                .unwrap()
                .algo
                .settings()
                .unwrap();
            let thresholds = [pendulum.angle_threshold, pendulum.velocity_threshold];
            assert_eq!(
                hac.subgoal_thresholds,
                Some(thresholds.map(f64::from).to_vec())
            );
            let top = [pendulum.max_episode_steps, 32, 10][levels - 1];
            assert_eq!((hac.levels, hac.horizon), (levels, top));
        }
    }

    #[test]
    fn every_preset_file_says_what_and_why_and_merges_over_the_env_defaults() {
        for p in PRESETS {
            assert!(!p.about().is_empty(), "{}", p.name);
            assert!(p.toml.starts_with("# "), "{}: a preset says why", p.name);
        }
        // A key a file sets overrides the env's default; nested tables merge.
        let far = preset("push-far-ddpg-her").unwrap();
        let arm = &far.env.settings["arm"];
        assert_eq!(arm["max_episode_steps"].as_integer(), Some(200));
        assert!(
            arm.get("substeps").is_some(),
            "defaults beside the file's keys"
        );
    }

    #[test]
    fn unset_optional_keys_are_shown_and_named_by_the_unknown_key_error() {
        let cfg = preset("toy-reinforce").unwrap();
        assert!(cfg.train.target_success.is_none() && cfg.train.env_steps.is_none());
        let text = commented(&cfg.to_toml(), &key_docs(&cfg).unwrap());
        // At the end of `[train]`, each with its doc above it.
        let train = &text[text.find("[train]").unwrap()..text.find("[parallel]").unwrap()];
        for key in ["target_success", "target_return", "env_steps"] {
            let line = format!("# {key} = (unset)");
            let at = train
                .find(&line)
                .unwrap_or_else(|| panic!("{key}: {train}"));
            assert!(train[..at].ends_with("\n"), "{train}");
        }
        assert!(
            train.ends_with("(unset)\n\n"),
            "the blank line stays last: {train}"
        );
        // The text still reads as the same config.
        assert_eq!(RunConfig::from_toml(&text, "commented").unwrap(), cfg);
        let typo = RunConfig::resolve("toy-reinforce", &["train.target_sucess=0.5".into()])
            .unwrap_err()
            .to_string();
        assert!(typo.contains("unknown key `train.target_sucess`"), "{typo}");
        assert!(
            typo.contains("target_success") && typo.contains("env_steps"),
            "{typo}"
        );
    }
}
