//! The algorithms a config can name: an open registry, as the envs' is.
//! Each [`AlgoEntry`] owns everything shoal knows of its algorithm: its
//! `algo.kind`, its settings (defaults, checks, documented keys), whether it
//! needs a goal env, the factories of its learners and its worker rules.
//! The built-in table is [`AlgoRegistry::builtin`]; a program adds its own
//! algorithm with [`Registry::with`] and trains it by name
//! ([`Registries`](crate::Registries)). A new built-in algorithm is its
//! module in shoal-rl-algo and one entry here.
//!
//! A factory sees only what a learner is built from ([`LearnerContext`]):
//! its settings, its envs, its seed and its share of the run.
//!
//! ```
//! use shoal_rl_train::algos::{AlgoEntry, AlgoRegistry, make_reinforce};
//!
//! // An algorithm of one's own: here REINFORCE under another name.
//! let algos = AlgoRegistry::builtin().with(AlgoEntry::new::<shoal_rl_algo::ReinforceConfig>(
//!     "my-reinforce",
//!     "REINFORCE, registered by a program",
//!     |learner| Ok(Box::new(make_reinforce(learner)?)),
//! ));
//! assert!(algos.get("my-reinforce").is_ok());
//! assert!(algos.get("dqn").unwrap_err().to_string().contains("algorithms: reinforce"));
//! ```

use std::fmt;

use serde::Serialize;
use serde::de::DeserializeOwned;
use shoal_rl_algo::{
    Ddpg, DdpgConfig, DdpgVariant, Hac, HacConfig, Ppo, PpoConfig, Reinforce, ReinforceConfig,
};
use shoal_rl_core::docs::key_docs;
use shoal_rl_core::{Env, Error, GoalEnv, GradientLearner, Result, RolloutLearner, WithoutGoals};
pub use shoal_rl_registry::Registry;
// Typed settings as a TOML table, through the text so an `f32` reads as written.
use shoal_rl_registry::{Entry, EnvConfig, EnvRegistry, table_of};

use crate::config::{AlgoConfig, RunConfig};
use crate::worker_rules::{
    Named, SPREAD_POOL_FROM, Share, averaged_batch_follows, averaging_ddpg_work, shared_batch,
    spread_lr_scales,
};

/// The algorithms a config's `algo.kind` names.
pub type AlgoRegistry = Registry<AlgoEntry>;

/// Builds the learner of a worker.
pub type MakeLearner = fn(&LearnerContext<'_>) -> Result<Box<dyn GradientLearner>>;

/// Builds the rollout-gathering learner of a worker.
pub type MakeRolloutLearner = fn(&LearnerContext<'_>) -> Result<Box<dyn RolloutLearner>>;

/// The worker rules of an algorithm: how a preset's settings follow the
/// workers its strategy shares the run among ([`crate::worker_rules`]),
/// leaving the keys the overrides name.
pub type WorkerRules = fn(&mut RunConfig, &Share, Named<'_>);

/// What one worker's learner is built from, and nothing more: its
/// algorithm's settings, its envs, its seed, its learning-rate multiplier
/// and its share of the run.
pub struct LearnerContext<'a> {
    /// The algorithm's `kind`.
    pub kind: &'a str,
    /// The `[algo]` settings, whole: the run's keys laid over its
    /// entry's defaults, so the keys a kind fixes are there too
    /// ([`AlgoEntry::foreign_keys`]).
    pub settings: toml::Table,
    /// The worker's rank.
    pub rank: usize,
    /// The worker's seed: the run's seed + rank.
    pub seed: u64,
    /// Multiplies the learner's learning rates (the pool's per-candidate
    /// scale; 1 elsewhere).
    pub lr_scale: f64,
    /// What the strategy gives this worker of the run.
    pub share: Share,
    envs: &'a EnvRegistry,
    env: &'a EnvConfig,
    eval_env: EnvConfig,
}

impl<'a> LearnerContext<'a> {
    /// Worker `rank`'s context in the run `cfg`, its algorithm `algo`, its
    /// envs from `envs`.
    pub fn new(
        envs: &'a EnvRegistry,
        algo: &AlgoEntry,
        cfg: &'a RunConfig,
        rank: usize,
        lr_scale: f64,
        share: Share,
    ) -> Result<Self> {
        Ok(LearnerContext {
            kind: cfg.algo.kind(),
            settings: algo.whole(&cfg.algo.settings),
            rank,
            seed: shoal_rl_parallel::worker_seed(cfg.seed, rank),
            lr_scale,
            share,
            envs,
            env: &cfg.env,
            eval_env: cfg.eval_env_config()?,
        })
    }

    /// The settings as the algorithm's typed struct.
    pub fn settings<S: DeserializeOwned>(&self) -> Result<S> {
        AlgoConfig::settings_of(&self.settings)
    }

    /// A fresh training env.
    pub fn env(&self) -> Result<Box<dyn Env>> {
        self.envs.make_env(self.env)
    }

    /// A fresh evaluation env (the training env with `[eval_env]` laid over).
    pub fn eval_env(&self) -> Result<Box<dyn Env>> {
        self.envs.make_env(&self.eval_env)
    }

    /// A fresh goal-conditioned training env.
    pub fn goal_env(&self) -> Result<Box<dyn GoalEnv>> {
        self.envs.make_goal_env(self.env)
    }

    /// A fresh goal-conditioned evaluation env.
    pub fn eval_goal_env(&self) -> Result<Box<dyn GoalEnv>> {
        self.envs.make_goal_env(&self.eval_env)
    }

    /// Whether the run's env is goal-conditioned.
    pub fn is_goal_task(&self) -> Result<bool> {
        self.envs.is_goal(self.env)
    }
}

/// One algorithm of a registry.
#[derive(Clone, Copy)]
pub struct AlgoEntry {
    /// Its `algo.kind` in configs.
    pub kind: &'static str,
    /// One line for `--help`.
    pub about: &'static str,
    /// Whether it needs a goal-conditioned env (HER, subgoals).
    pub goal_env: bool,
    /// Its default settings, as a TOML table.
    pub defaults: fn() -> toml::Table,
    /// Reads the settings as the algorithm's typed struct and writes them
    /// back whole: every key, defaults for those left out, in the struct's
    /// order. The first key or value the struct refuses is an error naming
    /// it.
    pub normalize: fn(&toml::Table) -> Result<toml::Table>,
    /// Every key of its settings struct with its doc comment.
    pub key_docs: fn() -> Vec<(String, String)>,
    /// Keys of its settings struct that its configs may not set: another
    /// kind's, which this kind fixes at its defaults (`init_alpha` in
    /// `ddpg`). Absent from its `[algo]` tables. None by default.
    pub foreign_keys: &'static [&'static str],
    /// Reads a table of an earlier layout as today's, in place; true when
    /// it was one. Such a table, written whole, holds other kinds' keys at
    /// this kind's defaults, and those are dropped. None by default.
    pub upgrade: fn(&mut toml::Table) -> bool,
    /// The learner of a worker.
    pub learner: MakeLearner,
    /// Its learner for rollout gathering, if it can collect episodes apart
    /// from updating on them.
    pub rollout_learner: Option<MakeRolloutLearner>,
    /// How a preset's settings follow the workers (none by default).
    pub worker_rules: WorkerRules,
}

impl fmt::Debug for AlgoEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AlgoEntry")
            .field("kind", &self.kind)
            .field("goal_env", &self.goal_env)
            .field("gathers", &self.rollout_learner.is_some())
            .finish_non_exhaustive()
    }
}

impl AlgoEntry {
    /// An algorithm whose `[algo]` table is the settings struct `S` (a serde
    /// type with defaults that refuses unknown keys), trained by the
    /// learners `learner` builds; for plain envs, without rollout
    /// gathering, worker rules or documented keys (add them with the
    /// builder methods).
    pub fn new<S: Serialize + DeserializeOwned + Default>(
        kind: &'static str,
        about: &'static str,
        learner: MakeLearner,
    ) -> Self {
        AlgoEntry {
            kind,
            about,
            goal_env: false,
            defaults: || table_of(&S::default()).expect("default settings are TOML"),
            normalize: |table| table_of(&AlgoConfig::settings_of::<S>(table)?),
            key_docs: Vec::new,
            foreign_keys: &[],
            upgrade: |_| false,
            learner,
            rollout_learner: None,
            worker_rules: |_, _, _| {},
        }
    }

    /// This entry with other default settings than its struct's `Default`:
    /// an algorithm that is another's with some settings changed (`td3` is
    /// `ddpg` with TD3's). `defaults` gives the settings table whole;
    /// [`AlgoEntry::complete`] lays a config's keys over it, so a key left
    /// out takes this entry's default, not the struct's.
    #[must_use]
    pub fn defaults(mut self, defaults: fn() -> toml::Table) -> Self {
        self.defaults = defaults;
        self
    }

    /// A config's `[algo]` settings as its tables hold them: its keys
    /// (upgraded from an earlier layout) laid over this entry's
    /// [`defaults`](AlgoEntry::defaults), read by the settings struct and
    /// written back ([`normalize`](AlgoEntry::normalize)), without the
    /// [`foreign_keys`](AlgoEntry::foreign_keys). An unknown or foreign
    /// key, or a bad value, is an error naming it.
    pub fn complete(&self, settings: &toml::Table) -> Result<toml::Table> {
        let mut given = settings.clone();
        let defaults = (self.defaults)();
        if (self.upgrade)(&mut given) {
            // Written whole by an earlier version: another kind's keys at
            // this kind's defaults set nothing.
            given.retain(|key, value| !(self.is_foreign(key) && defaults.get(key) == Some(value)));
        }
        if let Some(key) = given.keys().find(|key| self.is_foreign(key)) {
            return Err(Error::Config(format!(
                "algo settings: `{key}` is not a setting of `{}` (its settings: {})",
                self.kind,
                self.own_keys().join(", ")
            )));
        }
        let mut full = defaults;
        full.extend(given);
        let mut table = (self.normalize)(&full)?;
        table.retain(|key, _| !self.is_foreign(key));
        Ok(table)
    }

    /// `settings` laid over this entry's defaults: every key of its
    /// settings struct, as its factory reads them.
    pub fn whole(&self, settings: &toml::Table) -> toml::Table {
        let mut whole = (self.defaults)();
        whole.extend(settings.clone());
        whole
    }

    /// Its documented keys, without the foreign ones.
    pub fn documented_keys(&self) -> Vec<(String, String)> {
        let mut docs = (self.key_docs)();
        docs.retain(|(key, _)| !self.is_foreign(key));
        docs
    }

    fn own_keys(&self) -> Vec<String> {
        self.documented_keys()
            .into_iter()
            .map(|(key, _)| key)
            .collect()
    }

    fn is_foreign(&self, key: &str) -> bool {
        self.foreign_keys.contains(&key)
    }

    /// Needing a goal-conditioned env.
    #[must_use]
    pub fn goal_env(mut self) -> Self {
        self.goal_env = true;
        self
    }

    /// With a learner for rollout gathering.
    #[must_use]
    pub fn rollout_learner(mut self, make: MakeRolloutLearner) -> Self {
        self.rollout_learner = Some(make);
        self
    }

    /// With documented keys.
    #[must_use]
    pub fn key_docs(mut self, docs: fn() -> Vec<(String, String)>) -> Self {
        self.key_docs = docs;
        self
    }

    /// With keys of its settings struct that its configs may not set.
    #[must_use]
    pub fn foreign_keys(mut self, keys: &'static [&'static str]) -> Self {
        self.foreign_keys = keys;
        self
    }

    /// With an upgrade of tables an earlier version wrote.
    #[must_use]
    pub fn upgrade(mut self, upgrade: fn(&mut toml::Table) -> bool) -> Self {
        self.upgrade = upgrade;
        self
    }

    /// With worker rules.
    #[must_use]
    pub fn worker_rules(mut self, rules: WorkerRules) -> Self {
        self.worker_rules = rules;
        self
    }
}

impl Entry for AlgoEntry {
    const WHAT: &'static str = "algorithm";
    const PLURAL: &'static str = "algorithms";

    fn name(&self) -> &'static str {
        self.kind
    }

    fn about(&self) -> &'static str {
        self.about
    }

    /// shoal's own algorithms.
    fn builtin() -> Vec<Self> {
        vec![
            AlgoEntry::new::<ReinforceConfig>(
                "reinforce",
                "REINFORCE with a learned baseline and a Beta policy",
                |learner| Ok(Box::new(make_reinforce(learner)?)),
            )
            .rollout_learner(|learner| Ok(Box::new(make_reinforce(learner)?)))
            .key_docs(|| key_docs(&shoal_rl_algo::config_docs, "ReinforceConfig"))
            .worker_rules(spread_pool_rates),
            AlgoEntry::new::<PpoConfig>(
                "ppo",
                "PPO with GAE(λ) and a Beta (or Gaussian) policy",
                |learner| Ok(Box::new(make_ppo(learner)?)),
            )
            .rollout_learner(|learner| {
                let ppo = make_ppo(learner)?;
                ppo.check_whole_episodes("rollout gathering")?;
                Ok(Box::new(ppo))
            })
            .key_docs(|| key_docs(&shoal_rl_algo::config_docs, "PpoConfig")),
            ddpg_agent(
                DdpgVariant::Ddpg,
                "DDPG (with hindsight experience replay on goal envs)",
                || table_of(&DdpgConfig::default()).expect("DDPG's settings are TOML"),
            ),
            // TD3 is DDPG's agent with TD3's four settings
            // (`DdpgConfig::td3`, which says why `action_l2` stays).
            ddpg_agent(
                DdpgVariant::Td3,
                "TD3 (twin critics, target smoothing, delayed actor; with hindsight experience \
                 replay on goal envs)",
                || table_of(&DdpgConfig::td3()).expect("TD3's settings are TOML"),
            ),
            // SAC is DDPG's agent with a Gaussian actor and SAC's settings
            // (`DdpgConfig::sac`, which says why the cycle schedule stays).
            ddpg_agent(
                DdpgVariant::Sac,
                "SAC (Gaussian actor, twin critics, learned temperature; with hindsight \
                 experience replay on goal envs)",
                || table_of(&DdpgConfig::sac()).expect("SAC's settings are TOML"),
            ),
            AlgoEntry::new::<HacConfig>(
                "hac",
                "hierarchical actor-critic (HAC) with HER on every level",
                |learner| Ok(Box::new(make_hac(learner)?)),
            )
            .goal_env()
            .key_docs(|| key_docs(&shoal_rl_algo::config_docs, "HacConfig"))
            .worker_rules(hac_averaging_rules),
        ]
    }
}

/// The kinds of `algos` that can train under rollout gathering,
/// comma-separated.
pub fn gather_kinds(algos: &AlgoRegistry) -> String {
    let kinds: Vec<&str> = algos
        .entries()
        .iter()
        .filter(|a| a.rollout_learner.is_some())
        .map(|a| a.kind)
        .collect();
    kinds.join(", ")
}

// ---- shoal's own algorithms: each entry's factories and rules ----

/// An entry of DDPG's agent (`ddpg`, `td3`, `sac`): the same factory,
/// settings struct and worker rules, with the variant's `defaults` and
/// keys. It trains on goal envs (with HER) and on plain ones
/// ([`WithoutGoals`], `her.k = 0`).
fn ddpg_agent(
    variant: DdpgVariant,
    about: &'static str,
    defaults: fn() -> toml::Table,
) -> AlgoEntry {
    AlgoEntry::new::<DdpgConfig>(variant.kind(), about, |learner| {
        Ok(Box::new(make_ddpg(learner)?))
    })
    .defaults(defaults)
    .foreign_keys(variant.foreign_keys())
    .upgrade(upgrade_flat_her_keys)
    .key_docs(|| key_docs(&shoal_rl_algo::config_docs, "DdpgConfig"))
    .worker_rules(ddpg_averaging_rules)
}

/// HER's settings as the flat `her_*` keys (and `success_is_terminal`) of
/// earlier versions, each with its key in today's `[algo.her]` table.
const FLAT_HER_KEYS: [(&str, &str); 7] = [
    ("her_strategy", "strategy"),
    ("her_k", "k"),
    ("her_skip_static", "skip_static"),
    ("her_cap_at_settle", "cap_at_settle"),
    ("her_missed", "missed"),
    ("her_static_epsilon", "static_epsilon"),
    ("success_is_terminal", "success_is_terminal"),
];

/// Moves the flat HER keys of earlier versions into the `[algo.her]`
/// table; true if there were any (a table written whole by a version that
/// had every variant's keys in one struct).
fn upgrade_flat_her_keys(settings: &mut toml::Table) -> bool {
    let mut moved = false;
    for (flat, key) in FLAT_HER_KEYS {
        let Some(value) = settings.remove(flat) else {
            continue;
        };
        moved = true;
        if let toml::Value::Table(her) = settings
            .entry("her")
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
        {
            // A flat key beside the table is a later `--set` of the old name.
            her.insert(key.into(), value);
        }
    }
    moved
}

/// Averaging workers of DDPG's agent: a larger budget, and the batch split
/// between them or shrunk with fewer updates ([`averaging_ddpg_work`]).
fn ddpg_averaging_rules(cfg: &mut RunConfig, share: &Share, named: Named<'_>) {
    if !averaged_batch_follows(cfg, share, named) {
        return;
    }
    // The stored table holds the variant's keys only: the rule edits the
    // two it changes.
    let Ok(ddpg) = cfg.algo.settings::<DdpgConfig>() else {
        return;
    };
    let (batch, updates) = averaging_ddpg_work(ddpg.batch_size, ddpg.n_batches, share.workers);
    let count = |n: usize| toml::Value::Integer(i64::try_from(n).expect("a checked count"));
    let settings = &mut cfg.algo.settings;
    settings.insert("batch_size".into(), count(batch));
    if !named.has("algo.n_batches") {
        settings.insert("n_batches".into(), count(updates));
    }
}

/// Averaging workers of HAC: a larger budget and the batch split between
/// them.
fn hac_averaging_rules(cfg: &mut RunConfig, share: &Share, named: Named<'_>) {
    if !averaged_batch_follows(cfg, share, named) {
        return;
    }
    if let Ok(mut hac) = cfg.algo.settings::<HacConfig>() {
        hac.batch_size = shared_batch(hac.batch_size, share.workers);
        cfg.algo = AlgoConfig::new("hac", &hac).expect("HAC's settings are TOML");
    }
}

/// A REINFORCE pool of [`SPREAD_POOL_FROM`] or more candidates: their
/// learning rates spread over a decade ([`spread_lr_scales`]).
fn spread_pool_rates(cfg: &mut RunConfig, share: &Share, named: Named<'_>) {
    if let Some(candidates) = share.candidates
        && candidates >= SPREAD_POOL_FROM
        && !named.has("parallel.worker_lr_scales")
    {
        cfg.parallel.worker_lr_scales = spread_lr_scales(candidates);
    }
}

/// The env of `config` as DDPG's agent sees it: a goal env as it is, a
/// plain env as one without goals.
fn ddpg_env(
    learner: &LearnerContext<'_>,
    goal: impl Fn() -> Result<Box<dyn GoalEnv>>,
    plain: impl Fn() -> Result<Box<dyn Env>>,
) -> Result<Box<dyn GoalEnv>> {
    if learner.is_goal_task()? {
        goal()
    } else {
        Ok(Box::new(WithoutGoals(plain()?)))
    }
}

/// The DDPG + HER learner of a worker, from `[algo]` as DDPG's settings;
/// TD3's and SAC's too (`td3` and `sac` are the same agent with their own
/// defaults).
pub fn make_ddpg(learner: &LearnerContext<'_>) -> Result<Ddpg<Box<dyn GoalEnv>>> {
    let mut algo: DdpgConfig = learner.settings()?;
    if learner.share.averages_gradients {
        algo.check_averaging()?;
    }
    algo.actor_lr *= learner.lr_scale;
    algo.critic_lr *= learner.lr_scale;
    algo.buffer_size = learner.share.replay(algo.buffer_size);
    Ddpg::new(
        algo,
        ddpg_env(learner, || learner.goal_env(), || learner.env())?,
        ddpg_env(learner, || learner.eval_goal_env(), || learner.eval_env())?,
        learner.seed,
    )
}

/// The HAC learner of a worker, as its entry builds it; its own type, for
/// what only HAC does ([`Hac::watch`]).
pub fn make_hac(learner: &LearnerContext<'_>) -> Result<Hac<Box<dyn GoalEnv>>> {
    if learner.kind != "hac" {
        return Err(Error::Config(format!(
            "expected a hac config, not `{}`",
            learner.kind
        )));
    }
    let mut algo: HacConfig = learner.settings()?;
    algo.actor_lr *= learner.lr_scale;
    algo.critic_lr *= learner.lr_scale;
    algo.buffer_size = learner.share.replay(algo.buffer_size);
    Hac::new(
        algo,
        learner.goal_env()?,
        learner.eval_goal_env()?,
        learner.seed,
    )
}

/// The REINFORCE learner of a worker, from `[algo]` as REINFORCE's
/// settings.
pub fn make_reinforce(learner: &LearnerContext<'_>) -> Result<Reinforce<Box<dyn Env>>> {
    let mut algo: ReinforceConfig = learner.settings()?;
    algo.learning_rate *= learner.lr_scale;
    algo.value_learning_rate *= learner.lr_scale;
    Reinforce::new(algo, learner.env()?, learner.eval_env()?, learner.seed)
}

/// The PPO learner of a worker. PPO anneals its learning rate over the
/// episodes (or env steps) its updates will learn from: the worker's
/// share of the run.
pub fn make_ppo(learner: &LearnerContext<'_>) -> Result<Ppo<Box<dyn Env>>> {
    let mut algo: PpoConfig = learner.settings()?;
    algo.learning_rate *= learner.lr_scale;
    let ppo = Ppo::new(algo, learner.env()?, learner.eval_env()?, learner.seed)?;
    if learner.share.averages_gradients {
        ppo.check_whole_episodes("gradient averaging")?;
    }
    Ok(match learner.share.env_steps {
        Some(steps) => ppo.anneal_over_env_steps(steps),
        None => ppo.anneal_over(learner.share.episodes),
    })
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets::PRESETS;
    use crate::registries::{Registries, check, preset, resolve};

    #[test]
    fn every_entry_trains_a_toy_task_and_every_presets_algorithm_has_an_entry() {
        let algos = AlgoRegistry::builtin();
        let mut kinds = algos.names();
        kinds.sort();
        kinds.dedup();
        assert_eq!(kinds.len(), algos.entries().len(), "one entry per kind");
        let registries = Registries::default();
        for entry in algos.entries() {
            // A toy goal task, with this algorithm at its defaults unless
            // the toy's preset is the algorithm's own.
            let toy = if entry.goal_env {
                "toy-hac"
            } else {
                "toy-ddpg-her"
            };
            let mut cfg = preset(toy).unwrap();
            if cfg.algo.kind() != entry.kind {
                cfg.algo = AlgoConfig {
                    kind: entry.kind.into(),
                    settings: entry.complete(&toml::Table::new()).unwrap(),
                };
            }
            let mut learner = (entry.learner)(&registries.learners(&cfg).context(0, 1.0).unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", entry.kind));
            learner.learn(2).unwrap();
            assert!(!(entry.key_docs)().is_empty(), "{}", entry.kind);
        }
        for p in PRESETS {
            let cfg = preset(p.name).unwrap();
            let entry = algos.get(cfg.algo.kind()).unwrap();
            // The entry's goal flag is what the preset's env is.
            assert!(
                !entry.goal_env || registries.is_goal_task(&cfg).unwrap(),
                "{}",
                p.name
            );
        }
        assert!(
            algos
                .get("dqn")
                .unwrap_err()
                .to_string()
                .contains("unknown algorithm `dqn` (algorithms: reinforce, ppo, ddpg")
        );
    }

    #[test]
    fn an_entry_completes_and_checks_its_own_settings() {
        let algos = AlgoRegistry::builtin();
        let ppo = algos.get("ppo").unwrap();
        let mut sparse = toml::Table::new();
        sparse.insert("gamma".into(), toml::Value::Float(0.9));
        let full = (ppo.normalize)(&sparse).unwrap();
        assert_eq!(full.len(), (ppo.defaults)().len());
        assert_eq!(full["gamma"].as_float(), Some(0.9));
        assert_eq!(full["clip_range"], (ppo.defaults)()["clip_range"]);
        sparse.insert("gammma".into(), toml::Value::Float(0.9));
        let refused = (ppo.normalize)(&sparse).unwrap_err().to_string();
        assert!(refused.contains("unknown field `gammma`"), "{refused}");
        // The same settings table is no DDPG's.
        let ddpg = algos.get("ddpg").unwrap();
        assert!((ddpg.normalize)(&(ppo.defaults)()).is_err());
    }

    #[test]
    fn td3_is_ddpg_with_td3_defaults_for_the_keys_a_config_leaves_out() {
        let algos = AlgoRegistry::builtin();
        let td3 = algos.get("td3").unwrap();
        let mut sparse = toml::Table::new();
        sparse.insert("policy_delay".into(), toml::Value::Integer(3));
        let full: DdpgConfig = AlgoConfig::settings_of(&td3.complete(&sparse).unwrap()).unwrap();
        assert_eq!(
            full,
            DdpgConfig {
                policy_delay: 3,
                ..DdpgConfig::td3()
            }
        );
        assert_eq!((full.n_critics, full.target_policy_noise), (2, 0.2));
        sparse.insert("n_critic".into(), toml::Value::Integer(2));
        let refused = td3.complete(&sparse).unwrap_err().to_string();
        assert!(refused.contains("unknown field `n_critic`"), "{refused}");
    }

    #[test]
    fn sac_is_ddpg_with_sac_defaults_for_the_keys_a_config_leaves_out() {
        let algos = AlgoRegistry::builtin();
        let sac = algos.get("sac").unwrap();
        let mut sparse = toml::Table::new();
        sparse.insert("init_alpha".into(), toml::Value::Float(0.1));
        let stored = sac.complete(&sparse).unwrap();
        // The table holds SAC's keys only; its factory reads them whole.
        assert!(!stored.contains_key("actor") && !stored.contains_key("noise_eps"));
        let full: DdpgConfig = AlgoConfig::settings_of(&sac.whole(&stored)).unwrap();
        assert_eq!(
            full,
            DdpgConfig {
                init_alpha: 0.1,
                ..DdpgConfig::sac()
            }
        );
        assert_eq!(full.actor, shoal_rl_algo::ActorKind::Gaussian);
        sparse.insert("learn_alpha".into(), toml::Value::String("yes".into()));
        let refused = sac.complete(&sparse).unwrap_err().to_string();
        assert!(refused.contains("expected a boolean"), "{refused}");
    }

    #[test]
    fn a_key_of_another_variant_is_refused_with_one_line_naming_the_kinds_keys() {
        let algos = AlgoRegistry::builtin();
        let refusal = |kind: &str, key: &str, value: toml::Value| {
            let mut settings = toml::Table::new();
            settings.insert(key.into(), value);
            let error = algos.get(kind).unwrap().complete(&settings).unwrap_err();
            error.to_string()
        };
        for (kind, key, value) in [
            ("ddpg", "init_alpha", toml::Value::Float(0.5)),
            ("ddpg", "policy_delay", toml::Value::Integer(2)),
            ("td3", "learn_alpha", toml::Value::Boolean(false)),
            ("sac", "noise_eps", toml::Value::Float(0.1)),
            ("sac", "actor", toml::Value::String("deterministic".into())),
            ("td3", "actor", toml::Value::String("gaussian".into())),
        ] {
            let message = refusal(kind, key, value);
            assert!(
                message.contains(&format!("`{key}` is not a setting of `{kind}`")),
                "{message}"
            );
            assert!(!message.contains('\n'), "{message}");
            // The kind's own keys, HER's nested ones among them, and no
            // foreign one.
            let listed = message.split_once("its settings: ").unwrap().1;
            assert!(
                listed.contains("batch_size") && listed.contains("her.k"),
                "{message}"
            );
            assert!(!listed.split(", ").any(|k| k == key), "{message}");
        }
        // Each variant's own keys are accepted.
        for (kind, key) in [
            ("td3", "policy_delay"),
            ("sac", "init_alpha"),
            ("ddpg", "noise_eps"),
        ] {
            let mut settings = toml::Table::new();
            let value = AlgoConfig::settings_of::<DdpgConfig>(&toml::Table::new()).unwrap();
            let value = table_of(&value).unwrap()[key].clone();
            settings.insert(key.into(), value);
            assert!(
                algos.get(kind).unwrap().complete(&settings).is_ok(),
                "{kind} {key}"
            );
        }
    }

    #[test]
    fn every_foreign_key_is_a_key_of_ddpgs_settings() {
        let all = DdpgConfig {
            max_grad_norm: Some(1.0),
            target_entropy: Some(-1.0),
            ..DdpgConfig::default()
        };
        let keys = table_of(&all).unwrap();
        for variant in DdpgVariant::ALL {
            for key in variant.foreign_keys() {
                assert!(keys.contains_key(*key), "{variant:?}: `{key}`");
            }
            // A variant's defaults are what it fixes its foreign keys at.
            let entry = AlgoRegistry::builtin();
            let entry = entry.get(variant.kind()).unwrap();
            let read: DdpgConfig = AlgoConfig::settings_of(
                &entry.whole(&entry.complete(&toml::Table::new()).unwrap()),
            )
            .unwrap();
            assert_eq!(read, variant.defaults(), "{variant:?}");
        }
    }

    #[test]
    fn flat_her_keys_of_an_earlier_layout_read_as_the_her_table() {
        let algos = AlgoRegistry::builtin();
        let ddpg = algos.get("ddpg").unwrap();
        // As the version before `[algo.her]` wrote a DDPG table: flat HER
        // keys and every variant's keys, SAC's at their defaults.
        let earlier: toml::Table = toml::from_str(
            "her_strategy = \"final\"\nher_k = 2\nsuccess_is_terminal = false\n\
             actor = \"deterministic\"\ninit_alpha = 1.0\nn_critics = 1\nbatch_size = 64\n",
        )
        .unwrap();
        let read: DdpgConfig = AlgoConfig::settings_of(&ddpg.complete(&earlier).unwrap()).unwrap();
        assert_eq!(
            (
                read.her.strategy,
                read.her.k,
                read.her.success_is_terminal,
                read.batch_size
            ),
            (shoal_rl_algo::HerStrategy::Final, 2, false, 64)
        );
        // A key of another variant that held something else in that table
        // still says the run was not this kind.
        let mut twin = earlier.clone();
        twin.insert("n_critics".into(), toml::Value::Integer(2));
        let refused = ddpg.complete(&twin).unwrap_err().to_string();
        assert!(
            refused.contains("`n_critics` is not a setting of `ddpg`"),
            "{refused}"
        );
    }

    #[test]
    fn a_registered_algorithm_trains_by_name_and_resumes_from_its_config() {
        let algos = AlgoRegistry::builtin().with(AlgoEntry::new::<ReinforceConfig>(
            "my-reinforce",
            "REINFORCE by another name",
            |learner| Ok(Box::new(make_reinforce(learner)?)),
        ));
        let registries = Registries::default().algos(algos);
        let dir = std::env::temp_dir().join(format!("shoal-algo-entry-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let overrides = |episodes: u64| -> Vec<String> {
            vec![
                "algo.kind=\"my-reinforce\"".into(),
                format!("train.episodes={episodes}"),
                "train.eval_every=8".into(),
                "train.checkpoint_every=8".into(),
            ]
        };
        let cfg = registries.resolve("toy-reinforce", &overrides(16)).unwrap();
        registries
            .run(&crate::Plan::new(cfg).out(dir.join("run")).quiet())
            .unwrap();
        let saved = std::fs::read_to_string(dir.join("run/config.toml")).unwrap();
        assert!(saved.contains("kind = \"my-reinforce\""), "{saved}");
        // Its config names an algorithm shoal's own table lacks: one line.
        let path = dir.join("run/config.toml");
        let refused = resolve(path.to_str().unwrap(), &[])
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("unknown algorithm `my-reinforce`"),
            "{refused}"
        );
        // With the registration it resumes to a larger budget.
        let more = registries
            .resolve(path.to_str().unwrap(), &overrides(24)[1..])
            .unwrap();
        let (_, summary) = registries
            .run(&crate::Plan::new(more).resume(dir.join("run")).quiet())
            .unwrap()
            .unwrap();
        assert_eq!(summary.episodes, 24);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_goal_algorithm_on_a_plain_env_and_gather_without_batches_are_refused() {
        let worm = preset("worm-reinforce").unwrap().env;
        let mut cfg = preset("toy-hac").unwrap();
        cfg.env = worm.clone();
        let refused = check(&cfg).unwrap_err().to_string();
        assert!(
            refused.contains(
                "algo `hac` needs a goal-conditioned env (arm-push, ball-to-net, ur5-reacher, \
                 pendulum, point-goal), \
                 not `worm`"
            ),
            "{refused}"
        );
        // DDPG's agent trains a plain env, with nothing there to relabel.
        let mut cfg = preset("toy-ddpg-her").unwrap();
        cfg.env = worm;
        let refused = check(&cfg).unwrap_err().to_string();
        assert!(refused.contains("set algo.her.k = 0"), "{refused}");
        let plain = Registries::default()
            .with_overrides(&cfg, &["algo.her.k=0".into()])
            .unwrap();
        check(&plain).unwrap();
        // The flat key of earlier versions reads as its successor.
        let flat = Registries::default()
            .with_overrides(&cfg, &["algo.her_k=0".into()])
            .unwrap();
        assert_eq!(flat.algo, plain.algo);
        let gather = Registries::default()
            .with_overrides(
                &preset("toy-ddpg-her").unwrap(),
                &[
                    "parallel.workers=2".into(),
                    "parallel.strategy=\"gather\"".into(),
                ],
            )
            .unwrap();
        let refused = check(&gather).unwrap_err().to_string();
        assert!(
            refused.contains("needs a batch algorithm (reinforce, ppo), not `ddpg`"),
            "{refused}"
        );
    }
}
