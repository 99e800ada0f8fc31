//! The algorithms a config can name: an open registry, as the envs' is.
//! Each [`AlgoEntry`] owns everything shoal knows of its algorithm: its
//! `algo.kind`, its settings (defaults, checks, documented keys), whether it
//! needs a goal env, and the factories of its learners. The built-in table
//! is [`AlgoRegistry::builtin`]; a program adds its own algorithm with
//! [`AlgoRegistry::with`] and trains it by name
//! ([`Registries`](crate::config::Registries)). A new built-in algorithm is
//! its module in shoal-rl-algo and one entry here.
//!
//! ```
//! use shoal_rl_train::algos::{AlgoEntry, AlgoRegistry};
//! use shoal_rl_train::algos::make_reinforce;
//!
//! // An algorithm of one's own: here REINFORCE under another name.
//! let algos = AlgoRegistry::builtin().with(AlgoEntry::new::<shoal_rl_algo::ReinforceConfig>(
//!     "my-reinforce",
//!     "REINFORCE, registered by a program",
//!     |cfg, rank, lr_scale| Ok(Box::new(make_reinforce(cfg, rank, lr_scale)?)),
//! ));
//! assert!(algos.get("my-reinforce").is_ok());
//! assert!(algos.get("dqn").unwrap_err().to_string().contains("algorithms: reinforce"));
//! ```

use std::fmt;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use shoal_rl_algo::{Ddpg, DdpgConfig, Hac, HacConfig, Ppo, PpoConfig, Reinforce, ReinforceConfig};
use shoal_rl_core::docs::key_docs;
use shoal_rl_core::{Env, Error, GoalEnv, GradientLearner, Result, RolloutLearner, WithoutGoals};
// Typed settings as a TOML table, through the text so an `f32` reads as written.
use shoal_rl_registry::{EnvConfig, table_of};

use crate::config::{RunConfig, StrategyKind};

/// Builds the learner of a worker: config, rank, learning-rate scale.
pub type MakeLearner = fn(&RunConfig, usize, f64) -> Result<Box<dyn GradientLearner>>;

/// Builds the rollout-gathering learner of a worker: config, rank.
pub type MakeRolloutLearner = fn(&RunConfig, usize) -> Result<Box<dyn RolloutLearner>>;

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
    /// Every settings key with its doc comment.
    pub key_docs: fn() -> Vec<(String, String)>,
    /// The learner of worker `rank` (seeded `seed + rank`), its learning
    /// rates multiplied by the third argument (the pool's per-worker scale).
    pub learner: MakeLearner,
    /// Its learner for rollout gathering, if it can collect episodes apart
    /// from updating on them.
    pub rollout_learner: Option<MakeRolloutLearner>,
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
    /// gathering and without documented keys (add them with the builder
    /// methods).
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
            normalize: |table| table_of(&settings_of::<S>(table)?),
            key_docs: Vec::new,
            learner,
            rollout_learner: None,
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

    /// A config's `[algo]` settings whole: its keys laid over this entry's
    /// [`defaults`](AlgoEntry::defaults), then read by the settings struct
    /// and written back ([`normalize`](AlgoEntry::normalize)), so an
    /// unknown key or a bad value is an error naming it.
    pub fn complete(&self, settings: &toml::Table) -> Result<toml::Table> {
        let mut full = (self.defaults)();
        full.extend(settings.clone());
        (self.normalize)(&full)
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
}

/// A registry of algorithms, by kind. Cloning shares the table.
#[derive(Clone)]
pub struct AlgoRegistry {
    entries: Arc<Vec<AlgoEntry>>,
}

impl fmt::Debug for AlgoRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.kinds()).finish()
    }
}

impl Default for AlgoRegistry {
    fn default() -> Self {
        Self::builtin()
    }
}

/// Equal when they name the same algorithms (the factories are code).
impl PartialEq for AlgoRegistry {
    fn eq(&self, other: &Self) -> bool {
        self.kinds() == other.kinds()
    }
}

impl AlgoRegistry {
    /// No algorithms.
    pub fn empty() -> Self {
        AlgoRegistry {
            entries: Arc::new(Vec::new()),
        }
    }

    /// shoal's own algorithms.
    pub fn builtin() -> Self {
        Self::empty()
            .with(
                AlgoEntry::new::<ReinforceConfig>(
                    "reinforce",
                    "REINFORCE with a learned baseline and a Beta policy",
                    |cfg, rank, scale| Ok(Box::new(make_reinforce(cfg, rank, scale)?)),
                )
                .rollout_learner(|cfg, rank| Ok(Box::new(make_reinforce(cfg, rank, 1.0)?)))
                .key_docs(|| key_docs(&shoal_rl_algo::config_docs, "ReinforceConfig")),
            )
            .with(
                AlgoEntry::new::<PpoConfig>(
                    "ppo",
                    "PPO with GAE(λ) and a Beta (or Gaussian) policy",
                    |cfg, rank, scale| Ok(Box::new(make_ppo(cfg, rank, scale)?)),
                )
                .rollout_learner(|cfg, rank| Ok(Box::new(make_ppo(cfg, rank, 1.0)?)))
                .key_docs(|| key_docs(&shoal_rl_algo::config_docs, "PpoConfig")),
            )
            .with(ddpg_agent(
                "ddpg",
                "DDPG (with hindsight experience replay on goal envs)",
                || table_of(&DdpgConfig::default()).expect("DDPG's settings are TOML"),
            ))
            // TD3 is DDPG's agent with TD3's four settings
            // (`DdpgConfig::td3`, which says why `action_l2` stays).
            .with(ddpg_agent(
                "td3",
                "TD3 (twin critics, target smoothing, delayed actor; with hindsight experience \
                 replay on goal envs)",
                || table_of(&DdpgConfig::td3()).expect("TD3's settings are TOML"),
            ))
            // SAC is DDPG's agent with a Gaussian actor and SAC's settings
            // (`DdpgConfig::sac`, which says why the cycle schedule stays).
            .with(ddpg_agent(
                "sac",
                "SAC (Gaussian actor, twin critics, learned temperature; with hindsight \
                 experience replay on goal envs)",
                || table_of(&DdpgConfig::sac()).expect("SAC's settings are TOML"),
            ))
            .with(
                AlgoEntry::new::<HacConfig>(
                    "hac",
                    "hierarchical actor-critic (HAC) with HER on every level",
                    |cfg, rank, scale| Ok(Box::new(make_hac(cfg, rank, scale)?)),
                )
                .goal_env()
                .key_docs(|| key_docs(&shoal_rl_algo::config_docs, "HacConfig")),
            )
    }

    /// This registry with `entry` added, or replacing the entry of its kind.
    #[must_use]
    pub fn with(self, entry: AlgoEntry) -> Self {
        let mut entries = self.entries.as_ref().clone();
        entries.retain(|e| e.kind != entry.kind);
        entries.push(entry);
        AlgoRegistry {
            entries: Arc::new(entries),
        }
    }

    /// Every entry, in registration order.
    pub fn entries(&self) -> &[AlgoEntry] {
        &self.entries
    }

    /// Every kind, in registration order.
    pub fn kinds(&self) -> Vec<&'static str> {
        self.entries.iter().map(|e| e.kind).collect()
    }

    /// The entry of `kind`, or an error listing the algorithms there are.
    pub fn get(&self, kind: &str) -> Result<&AlgoEntry> {
        self.entries.iter().find(|a| a.kind == kind).ok_or_else(|| {
            Error::Config(format!(
                "unknown algorithm `{kind}` (algorithms: {})",
                self.kinds().join(", ")
            ))
        })
    }

    /// The kinds that can train under `gather`, comma-separated.
    pub fn gather_kinds(&self) -> String {
        let kinds: Vec<&str> = self
            .entries
            .iter()
            .filter(|a| a.rollout_learner.is_some())
            .map(|a| a.kind)
            .collect();
        kinds.join(", ")
    }
}

// ---- shoal's own algorithms: each entry's factories ----

/// An entry of DDPG's agent (`ddpg`, `td3`, `sac`): the same factory and
/// settings struct, with the variant's `defaults`. It trains on goal envs
/// (with HER) and on plain ones ([`WithoutGoals`], `her_k = 0`).
fn ddpg_agent(kind: &'static str, about: &'static str, defaults: fn() -> toml::Table) -> AlgoEntry {
    AlgoEntry::new::<DdpgConfig>(kind, about, |cfg, rank, scale| {
        Ok(Box::new(make_ddpg(cfg, rank, scale)?))
    })
    .defaults(defaults)
    .key_docs(|| key_docs(&shoal_rl_algo::config_docs, "DdpgConfig"))
}

/// The env of `config` as DDPG's agent sees it: a goal env as it is, a
/// plain env as one without goals.
fn ddpg_env(cfg: &RunConfig, config: &EnvConfig) -> Result<Box<dyn GoalEnv>> {
    if cfg.envs.is_goal(config)? {
        cfg.envs.make_goal_env(config)
    } else {
        Ok(Box::new(WithoutGoals(cfg.envs.make_env(config)?)))
    }
}

/// The DDPG + HER learner of worker `rank`, from `[algo]` as DDPG's
/// settings; TD3's and SAC's too (`td3` and `sac` are the same agent with
/// their own defaults).
pub fn make_ddpg(cfg: &RunConfig, rank: usize, lr_scale: f64) -> Result<Ddpg<Box<dyn GoalEnv>>> {
    let mut algo: DdpgConfig = cfg.algo.settings()?;
    if cfg.parallel.strategy == StrategyKind::Averaging {
        algo.check_averaging()?;
    }
    algo.actor_lr *= lr_scale;
    algo.critic_lr *= lr_scale;
    algo.buffer_size = replay_share(cfg, algo.buffer_size);
    let seed = shoal_rl_parallel::worker_seed(cfg.seed, rank);
    Ddpg::new(
        algo,
        ddpg_env(cfg, &cfg.env)?,
        ddpg_env(cfg, &cfg.eval_env_config()?)?,
        seed,
    )
}

/// The HAC learner of worker `rank`, as [`make_learner`](crate::make_learner) builds it; its own
/// type, for what only HAC does ([`Hac::watch`]).
pub fn make_hac(cfg: &RunConfig, rank: usize, lr_scale: f64) -> Result<Hac<Box<dyn GoalEnv>>> {
    if cfg.algo.kind() != "hac" {
        return Err(Error::Config(format!(
            "expected a hac config, not `{}`",
            cfg.algo.kind()
        )));
    }
    let mut algo: HacConfig = cfg.algo.settings()?;
    algo.actor_lr *= lr_scale;
    algo.critic_lr *= lr_scale;
    algo.buffer_size = replay_share(cfg, algo.buffer_size);
    let seed = shoal_rl_parallel::worker_seed(cfg.seed, rank);
    Hac::new(
        algo,
        cfg.envs.make_goal_env(&cfg.env)?,
        cfg.envs.make_goal_env(&cfg.eval_env_config()?)?,
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

/// The REINFORCE learner of worker `rank`, from `[algo]` as REINFORCE's
/// settings.
pub fn make_reinforce(
    cfg: &RunConfig,
    rank: usize,
    lr_scale: f64,
) -> Result<Reinforce<Box<dyn Env>>> {
    let mut algo: ReinforceConfig = cfg.algo.settings()?;
    algo.learning_rate *= lr_scale;
    algo.value_learning_rate *= lr_scale;
    let seed = shoal_rl_parallel::worker_seed(cfg.seed, rank);
    Reinforce::new(
        algo,
        cfg.envs.make_env(&cfg.env)?,
        cfg.envs.make_env(&cfg.eval_env_config()?)?,
        seed,
    )
}

/// PPO anneals its learning rate over the episodes its updates will learn
/// from: the whole budget for one learner and under rollout gathering
/// (rank 0 learns from every worker's episodes), a worker's share under
/// averaging and the pool.
pub fn make_ppo(cfg: &RunConfig, rank: usize, lr_scale: f64) -> Result<Ppo<Box<dyn Env>>> {
    let mut algo: PpoConfig = cfg.algo.settings()?;
    algo.learning_rate *= lr_scale;
    let seed = shoal_rl_parallel::worker_seed(cfg.seed, rank);
    let budget = match cfg.parallel.strategy {
        StrategyKind::None | StrategyKind::Gather => cfg.train.episodes,
        _ => cfg
            .train
            .episodes
            .div_ceil(cfg.parallel.workers.max(1) as u64),
    };
    let ppo = Ppo::new(
        algo,
        cfg.envs.make_env(&cfg.env)?,
        cfg.envs.make_env(&cfg.eval_env_config()?)?,
        seed,
    )?;
    // The step clock is this learner's own env steps: a worker collects
    // its share of a parallel run's (under gather too, rank 0 counts only
    // the episodes it collected itself).
    Ok(match cfg.train.env_steps {
        Some(steps) => {
            ppo.anneal_over_env_steps(steps.div_ceil(cfg.parallel.workers.max(1) as u64))
        }
        None => ppo.anneal_over(budget),
    })
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

    /// The settings as their typed struct.
    pub fn settings<S: DeserializeOwned>(&self) -> Result<S> {
        settings_of(&self.settings)
    }

    /// The settings as `S` if this is the algorithm `kind`.
    pub fn settings_if<S: DeserializeOwned>(&self, kind: &str) -> Option<S> {
        (self.kind == kind).then(|| self.settings().ok()).flatten()
    }
}

/// Settings as their typed struct; a key the struct lacks is an error
/// naming it (serde's "unknown field", which `--set` reports as an
/// unknown key).
fn settings_of<S: DeserializeOwned>(table: &toml::Table) -> Result<S> {
    toml::Value::Table(table.clone())
        .try_into()
        .map_err(|e: toml::de::Error| {
            Error::Config(format!("algo settings: {}", e.message().trim()))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::PRESETS;

    #[test]
    fn every_presets_algorithm_has_one_entry_and_every_entry_a_preset() {
        let algos = AlgoRegistry::builtin();
        let mut kinds = algos.kinds();
        kinds.sort();
        kinds.dedup();
        assert_eq!(kinds.len(), algos.entries().len(), "one entry per kind");
        for entry in algos.entries() {
            let preset = PRESETS
                .iter()
                .map(|p| p.config())
                .find(|cfg| cfg.algo.kind() == entry.kind)
                .unwrap_or_else(|| panic!("no preset trains {}", entry.kind));
            // The entry's goal flag is what the preset's env is.
            assert!(
                !entry.goal_env || preset.is_goal_task().unwrap(),
                "{}",
                entry.kind
            );
            (entry.learner)(&preset, 0, 1.0).unwrap();
            assert!(!(entry.key_docs)().is_empty(), "{}", entry.kind);
        }
        assert!(
            algos
                .get("dqn")
                .unwrap_err()
                .to_string()
                .contains("reinforce, ppo, ddpg, td3, sac, hac")
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
        let full: DdpgConfig = settings_of(&td3.complete(&sparse).unwrap()).unwrap();
        assert_eq!(
            full,
            DdpgConfig {
                policy_delay: 3,
                ..DdpgConfig::td3()
            }
        );
        assert_eq!((full.n_critics, full.target_policy_noise), (2, 0.2));
        // DDPG's entry completes the same keys with DDPG's defaults.
        let ddpg: DdpgConfig =
            settings_of(&algos.get("ddpg").unwrap().complete(&sparse).unwrap()).unwrap();
        assert_eq!((ddpg.n_critics, ddpg.policy_delay), (1, 3));
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
        let full: DdpgConfig = settings_of(&sac.complete(&sparse).unwrap()).unwrap();
        assert_eq!(
            full,
            DdpgConfig {
                init_alpha: 0.1,
                ..DdpgConfig::sac()
            }
        );
        assert_eq!(full.actor, shoal_rl_algo::ActorKind::Gaussian);
        sparse.insert("actor".into(), toml::Value::String("stochastic".into()));
        let refused = sac.complete(&sparse).unwrap_err().to_string();
        assert!(
            refused.contains("unknown variant `stochastic`"),
            "{refused}"
        );
    }

    #[test]
    fn a_registered_algorithm_trains_by_name_and_resumes_from_its_config() {
        use crate::config::{Registries, RunConfig};
        let algos = AlgoRegistry::builtin().with(AlgoEntry::new::<ReinforceConfig>(
            "my-reinforce",
            "REINFORCE by another name",
            |cfg, rank, scale| Ok(Box::new(make_reinforce(cfg, rank, scale)?)),
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
        let cfg = RunConfig::resolve_in(&registries, "toy-reinforce", &overrides(16)).unwrap();
        crate::run(&crate::Plan::new(cfg).out(dir.join("run")).quiet()).unwrap();
        let saved = std::fs::read_to_string(dir.join("run/config.toml")).unwrap();
        assert!(saved.contains("kind = \"my-reinforce\""), "{saved}");
        // Its config names an algorithm shoal's own table lacks: one line.
        let path = dir.join("run/config.toml");
        let refused = RunConfig::resolve(path.to_str().unwrap(), &[])
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("unknown algorithm `my-reinforce`"),
            "{refused}"
        );
        // With the registration it resumes to a larger budget.
        let more = RunConfig::resolve_in(&registries, path.to_str().unwrap(), &overrides(24)[1..])
            .unwrap();
        let (_, summary) = crate::run(&crate::Plan::new(more).resume(dir.join("run")).quiet())
            .unwrap()
            .unwrap();
        assert_eq!(summary.episodes, 24);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_goal_algorithm_on_a_plain_env_and_gather_without_batches_are_refused() {
        let worm = crate::config::preset("worm-reinforce").unwrap().env;
        let mut cfg = crate::config::preset("toy-hac").unwrap();
        cfg.env = worm.clone();
        let refused = crate::train::check_config(&cfg).unwrap_err().to_string();
        assert!(
            refused.contains(
                "algo `hac` needs a goal-conditioned env (arm-push, ball-to-net, ur5-reacher, \
                 pendulum, point-goal), \
                 not `worm`"
            ),
            "{refused}"
        );
        // DDPG's agent trains a plain env, with nothing there to relabel.
        let mut cfg = crate::config::preset("toy-ddpg-her").unwrap();
        cfg.env = worm;
        let refused = crate::train::check_config(&cfg).unwrap_err().to_string();
        assert!(refused.contains("set algo.her_k = 0"), "{refused}");
        let plain = cfg.with_overrides(&["algo.her_k=0".into()]).unwrap();
        crate::train::check_config(&plain).unwrap();
        let gather = crate::config::preset("toy-ddpg-her")
            .unwrap()
            .with_overrides(&[
                "parallel.workers=2".into(),
                "parallel.strategy=\"gather\"".into(),
            ])
            .unwrap();
        let refused = crate::train::check_config(&gather).unwrap_err().to_string();
        assert!(
            refused.contains("needs a batch algorithm (reinforce, ppo), not `ddpg`"),
            "{refused}"
        );
    }
}
