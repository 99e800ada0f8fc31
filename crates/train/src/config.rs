//! The run configuration as plain data: [`RunConfig`], exactly what a
//! run's `config.toml` holds, and the checks that need nothing but the
//! values. Which names it may hold (envs, algorithms, strategies), how a
//! preset or file and `--set` overrides become one, and the rules that
//! read a registry are [`Registries`](crate::Registries)'.

use std::path::Path;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use shoal_rl_core::{Error, Result};
use shoal_rl_parallel::Backend;
use shoal_rl_registry::{table_of, typed_settings};

use crate::overrides::assignments_to;

pub use shoal_rl_registry::EnvConfig;
pub use shoal_rl_run::TrainConfig;

/// Largest `train.episodes` (and evaluation and checkpoint interval)
/// accepted: years of training at a million episodes a second.
pub const MAX_EPISODES: u64 = 1 << 40;
/// Most evaluation episodes in one evaluation.
pub const MAX_EVAL_EPISODES: usize = 1_000_000;

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
    pub strategy: String,
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
            strategy: "none".into(),
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

    /// Checks the settings every parallel run depends on; a strategy
    /// checks those only it reads (the pool's candidates) itself.
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
        if self.pool_group_size == 0 {
            return Err(Error::Config(format!(
                "parallel.pool_group_size must divide parallel.workers ({}), got 0",
                self.workers
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
        if self.strategy.is_empty() || self.strategy.len() > 64 {
            return Err(Error::Config(format!(
                "parallel.strategy must name a strategy, got `{}`",
                self.strategy
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
    /// The learner.
    pub algo: AlgoConfig,
    /// Budget, evaluation and checkpoint cadence.
    #[serde(default)]
    pub train: TrainConfig,
    /// Workers and strategy.
    #[serde(default)]
    pub parallel: ParallelConfig,
}

impl RunConfig {
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

    /// Checks what the values alone decide: the parallel settings every
    /// run reads, the budget and the evaluation schedule. Whether the
    /// names exist, and what a strategy or algorithm asks of them, is
    /// [`Registries::check`](crate::Registries::check)'s.
    pub fn validate(&self) -> Result<()> {
        self.parallel.validate()?;
        let train = &self.train;
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
                self.parallel.pool_eval_episodes,
            ),
            (
                "parallel.episodes_per_iteration",
                self.parallel.episodes_per_iteration,
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
        Ok(())
    }

    /// The seed of the run's evaluations.
    pub fn eval_seed(&self) -> u64 {
        shoal_rl_run::eval_seed(self.seed)
    }
}

/// A run's algorithm: its kind and its settings, as `config.toml` holds them
/// (`[algo]` with `kind = "ppo"` beside PPO's settings).
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct AlgoConfig {
    /// The algorithm's `kind` in its registry.
    pub kind: String,
    /// Its settings (keys its typed settings struct knows).
    #[serde(flatten)]
    pub settings: toml::Table,
}

impl AlgoConfig {
    /// The algorithm `kind` with typed settings.
    pub fn new<S: Serialize>(kind: &str, settings: &S) -> Result<Self> {
        Ok(AlgoConfig {
            kind: kind.into(),
            settings: table_of(settings)?,
        })
    }

    /// The `kind` of this algorithm in config files.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The settings as their typed struct, from the keys the table holds.
    /// A key the kind fixes is absent (`actor` in `sac`,
    /// [`AlgoEntry::foreign_keys`](crate::algos::AlgoEntry::foreign_keys))
    /// and reads as `S`'s default; [`AlgoEntry::whole`](crate::algos::AlgoEntry::whole)
    /// lays the table over the kind's own defaults, as factories see it.
    pub fn settings<S: DeserializeOwned>(&self) -> Result<S> {
        Self::settings_of(&self.settings)
    }

    /// The settings as `S` if this is the algorithm `kind`.
    pub fn settings_if<S: DeserializeOwned>(&self, kind: &str) -> Option<S> {
        (self.kind == kind).then(|| self.settings().ok()).flatten()
    }

    /// Settings as their typed struct; a key the struct lacks is an error
    /// naming it (serde's "unknown field", which `--set` reports as an
    /// unknown key).
    pub fn settings_of<S: DeserializeOwned>(table: &toml::Table) -> Result<S> {
        typed_settings(table, "algo")
    }
}

/// Whether `source` names a config file (a path ending in `.toml`, or any
/// file that exists) rather than a preset. Worker rules
/// ([`Registries::resolve`](crate::Registries::resolve)) apply to presets only: a config file,
/// a run's saved `config.toml` among them, holds the values it trains with.
pub fn is_config_file(source: &str) -> bool {
    source.ends_with(".toml") || Path::new(source).is_file()
}

/// Writes every key of `over` into `base`, tables key by key.
pub(crate) fn merge(base: &mut toml::Table, over: toml::Table) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(inner)), toml::Value::Table(value)) => merge(inner, value),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

/// A config file's text as a table, its old keys read as their
/// successors ([`migrate`]); `origin` names it in errors.
pub fn config_table(text: &str, origin: &str) -> Result<toml::Table> {
    let mut tree: toml::Table = toml::from_str(text).map_err(|e| malformed(origin, &e))?;
    migrate(&mut tree);
    Ok(tree)
}

/// The keys of a config file that `T` holds, read as [`config_table`]
/// reads the whole: for a reader that needs only part of a run's config
/// (`shoal scale` its seed and `[parallel]`), so a config whose env or
/// algorithm this program does not know still reads. Keys outside `T` are
/// left alone; those inside are checked as `T` declares them.
pub fn config_part<T: DeserializeOwned>(text: &str, origin: &str) -> Result<T> {
    toml::Value::Table(config_table(text, origin)?)
        .try_into()
        .map_err(|e| malformed(origin, &e))
}

fn malformed(origin: &str, e: &toml::de::Error) -> Error {
    Error::Config(format!("{origin} is malformed: {}", one_line(e)))
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
pub(crate) fn one_line(e: &toml::de::Error) -> String {
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
/// this file. Not [`AlgoConfig`]'s: the `[algo]` keys are the algorithm's,
/// documented by its registry entry.
pub fn config_docs(name: &str) -> Option<Vec<shoal_rl_core::docs::FieldDoc>> {
    if name == "AlgoConfig" {
        return None;
    }
    shoal_rl_core::docs::struct_docs(&[include_str!("config.rs")], name)
}
