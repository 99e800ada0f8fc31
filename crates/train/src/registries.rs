//! The one door every front end goes through ([`Registries`]): the envs,
//! algorithms and strategies a config may name, with the four operations
//! on a run — [`resolve`](Registries::resolve) a preset or file with
//! overrides into a [`RunConfig`], [`check`](Registries::check) it,
//! [`run`](Registries::run) a [`Plan`], and
//! [`load_policy`](Registries::load_policy) from a run directory. The
//! `shoal` binary, the Python module and a program of one's own call these
//! and nothing else re-sequences them. The free functions of the same
//! names use shoal's own registries.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use shoal_rl_core::{Error, GradientLearner, Result};
use shoal_rl_eval::{CheckpointSelector, RunDir, Summary, load_checkpoint};
use shoal_rl_registry::EnvRegistry;
use shoal_rl_run::{NO_STOP_TARGET, ParallelSpec, RunSpec, STATE_BLOB};

use crate::algos::AlgoRegistry;
use crate::config::{RunConfig, config_table, in_context, is_config_file, merge};
use crate::learners::Learners;
use crate::plan::Plan;
use crate::policy::TrainedPolicy;
use crate::presets::find_preset;
use crate::read::{read_tree, switch_algo_kind, with_overrides};
use crate::strategies::{RunContext, StrategyEntry, StrategyRegistry};
use crate::worker_rules::{Named, Share};

/// Settings a resume may change: the budget and schedule (`train.*`), and
/// what only watches the run — how long a silent worker is waited for, and
/// whether iteration lines carry the workers' profiles.
pub const RESUME_MAY_CHANGE: &[&str] = &["train", "parallel.timeout_s", "parallel.profile"];

/// The tables a config's names are read in — envs (`env.kind`), algorithms
/// (`algo.kind`) and strategies (`parallel.strategy`) — and every
/// operation that reads them. Each table defaults to shoal's own; a program
/// that registers its own builds this with them.
#[derive(Clone, Debug, Default)]
pub struct Registries {
    /// The envs.
    pub envs: EnvRegistry,
    /// The algorithms.
    pub algos: AlgoRegistry,
    /// The strategies.
    pub strategies: StrategyRegistry,
}

/// The envs given, shoal's algorithms and strategies.
impl From<&EnvRegistry> for Registries {
    fn from(envs: &EnvRegistry) -> Self {
        Registries::default().envs(envs.clone())
    }
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

    // ---- resolve ----

    /// The config of `source` — a preset name, or a path to a TOML file
    /// (see [`is_config_file`]) — with `--set` style `overrides` applied in
    /// order. A preset's settings then follow its workers (the algorithm's
    /// worker rules for the share its strategy gives each worker); a file
    /// already holds the values it trains with.
    pub fn resolve(&self, source: &str, overrides: &[String]) -> Result<RunConfig> {
        self.resolve_with(source, overrides, |_| Ok(()))
    }

    /// [`Registries::resolve`] with `edit` applied to the source's config
    /// before the overrides: how the Python module puts a Gymnasium env in
    /// a preset's place, so that overrides name its keys.
    pub fn resolve_with(
        &self,
        source: &str,
        overrides: &[String],
        edit: impl FnOnce(&mut RunConfig) -> Result<()>,
    ) -> Result<RunConfig> {
        let preset = !is_config_file(source);
        let mut cfg = if preset {
            self.preset_with(source, overrides)?
        } else {
            let text = std::fs::read_to_string(source)
                .map_err(|e| Error::io(format!("reading config {source}"), e))?;
            let mut tree = config_table(&text, source)?;
            switch_algo_kind(&mut tree, overrides);
            read_tree(&self.envs, &self.algos, tree)
                .map_err(|e| in_context(&format!("{source} is malformed"), e))?
        };
        edit(&mut cfg)?;
        let mut cfg = self.with_overrides(&cfg, overrides)?;
        if preset {
            self.follow_workers(&mut cfg, overrides);
        }
        Ok(cfg)
    }

    /// The built-in preset `name`: its file over the defaults of its env,
    /// algorithm, budget and parallel settings.
    pub fn preset(&self, name: &str) -> Result<RunConfig> {
        self.preset_with(name, &[])
    }

    /// [`Registries::preset`] with `overrides`' `algo.kind` (if any) in
    /// place of the preset's, before the keys it leaves out are filled in.
    fn preset_with(&self, name: &str, overrides: &[String]) -> Result<RunConfig> {
        let preset = find_preset(name)?;
        let mut tree = preset.table();
        switch_algo_kind(&mut tree, overrides);
        tree.remove("about");
        tree.insert("preset".into(), preset.name.into());
        tree.entry("seed").or_insert(toml::Value::Integer(0));
        if let Some(toml::Value::Table(env)) = tree.get_mut("env") {
            let kind = env
                .get("kind")
                .and_then(toml::Value::as_str)
                .unwrap_or_default();
            let mut full = (self.envs.get(kind)?.defaults)();
            full.insert("kind".into(), kind.into());
            merge(&mut full, std::mem::take(env));
            *env = full;
        }
        read_tree(&self.envs, &self.algos, tree)
            .map_err(|e| in_context(&format!("preset {}", preset.name), e))
    }

    /// A config file's text; `origin` names it in errors. Keys that
    /// earlier versions wrote are read as their successors
    /// ([`migrate`](crate::config::migrate)).
    pub fn from_toml(&self, text: &str, origin: &str) -> Result<RunConfig> {
        let tree = config_table(text, origin)?;
        read_tree(&self.envs, &self.algos, tree)
            .map_err(|e| in_context(&format!("{origin} is malformed"), e))
    }

    /// `cfg` with `--set` style `key=value` overrides applied in order.
    pub fn with_overrides(&self, cfg: &RunConfig, overrides: &[String]) -> Result<RunConfig> {
        with_overrides(&self.envs, &self.algos, cfg, overrides)
    }

    /// A preset's settings follow its workers: its algorithm's worker rules
    /// ([`crate::worker_rules`]) for the share its strategy gives each
    /// worker. An unknown name changes nothing: the check names it.
    fn follow_workers(&self, cfg: &mut RunConfig, overrides: &[String]) {
        let (Ok(strategy), Ok(algo)) = (
            self.strategies.get(&cfg.parallel.strategy),
            self.algos.get(cfg.algo.kind()),
        ) else {
            return;
        };
        let share = (strategy.share)(cfg);
        (algo.worker_rules)(cfg, &share, Named(overrides));
    }

    // ---- check ----

    /// Checks everything about `cfg` that can be checked without touching
    /// the disk: the values, the names, what its strategy and algorithm ask
    /// of them, and every learner the run will build (rank 0's is built
    /// here and dropped, so whatever the constructors refuse is refused
    /// now).
    pub fn check(&self, cfg: &RunConfig) -> Result<()> {
        self.check_with_spec(cfg, &self.run_spec(cfg))
    }

    fn check_with_spec(&self, cfg: &RunConfig, spec: &RunSpec) -> Result<()> {
        cfg.validate()?;
        let strategy = self.strategy_of(cfg)?;
        let learners = self.learners_of(cfg, strategy);
        let parallel = &cfg.parallel;
        if learners.share().candidates.is_none() {
            if parallel.pool_group_size != 1 {
                return Err(Error::Config(format!(
                    "parallel.pool_group_size applies to the pool, not strategy `{}`",
                    parallel.strategy
                )));
            }
            if !parallel.worker_overrides.is_empty() {
                return Err(Error::Config(format!(
                    "parallel.worker_overrides applies to the pool; strategy `{}` trains \
                     workers that must share one setting",
                    parallel.strategy
                )));
            }
        }
        (strategy.validate)(cfg)?;
        let algo = self.algos.get(cfg.algo.kind())?;
        if algo.goal_env && !self.is_goal_task(cfg)? {
            return Err(Error::Config(format!(
                "algo `{}` needs a goal-conditioned env ({}), not `{}`",
                algo.kind,
                self.envs.goal_ids().join(", "),
                cfg.env.kind
            )));
        }
        if cfg.train.stop_at_target
            && shoal_rl_run::run_target(spec, None).is_none()
            && self.envs.get(&cfg.env.kind)?.reference.is_none()
        {
            return Err(Error::Config(NO_STOP_TARGET.into()));
        }
        (strategy.check)(&learners)
    }

    // ---- run ----

    /// Runs a plan: one learner, or `parallel.workers` through the strategy
    /// `parallel.strategy` names, on the configured backend. Every check
    /// runs before anything is created on disk: a config refused after its
    /// run directory exists would leave a dead directory. Returns the run
    /// directory and summary on rank 0, `None` on other ranks.
    pub fn run(&self, plan: &Plan) -> Result<Option<(PathBuf, Summary)>> {
        let cfg = &plan.cfg;
        let spec = self.run_spec(cfg);
        self.check_with_spec(cfg, &spec)?;
        let strategy = self.strategy_of(cfg)?;
        let run = RunContext {
            plan,
            learners: self.learners_of(cfg, strategy),
            spec,
        };
        (strategy.run)(&run)
    }

    /// The learners of `cfg`'s workers, each given its share of the run by
    /// the strategy `cfg` names; by [`Share::separate`] when this registry
    /// lacks it (loading a policy trained by a program's own strategy
    /// needs the learner, not the strategy).
    pub fn learners<'a>(&'a self, cfg: &'a RunConfig) -> Learners<'a> {
        let share = match self.strategy_of(cfg) {
            Ok(strategy) => (strategy.share)(cfg),
            Err(_) => Share::separate(cfg.parallel.workers, &cfg.train),
        };
        Learners::new(cfg, &self.envs, &self.algos, share)
    }

    fn strategy_of(&self, cfg: &RunConfig) -> Result<&StrategyEntry> {
        self.strategies.get(&cfg.parallel.strategy)
    }

    fn learners_of<'a>(&'a self, cfg: &'a RunConfig, strategy: &StrategyEntry) -> Learners<'a> {
        Learners::new(cfg, &self.envs, &self.algos, (strategy.share)(cfg))
    }

    /// Whether `cfg`'s env is goal-conditioned (success rates, HER, HAC).
    pub fn is_goal_task(&self, cfg: &RunConfig) -> Result<bool> {
        self.envs.is_goal(&cfg.env)
    }

    /// What the runtime needs to know of `cfg`'s run.
    pub fn run_spec(&self, cfg: &RunConfig) -> RunSpec {
        let p = &cfg.parallel;
        let parallel = ParallelSpec {
            workers: p.workers,
            backend: p.backend,
            strategy: p.strategy.clone(),
            episodes_per_iteration: p.episodes_per_iteration,
            timeout: std::time::Duration::from_secs_f64(p.timeout_s),
            profile: p.profile,
            ..ParallelSpec::default()
        };
        let mut spec = RunSpec::new(cfg.preset.clone(), cfg.to_toml())
            .seed(cfg.seed)
            .train(cfg.train.clone())
            .goal_task(self.is_goal_task(cfg).unwrap_or(false))
            .resume_may_change(RESUME_MAY_CHANGE)
            // A config an earlier version wrote is compared as today reads it:
            // renamed keys migrated, keys added since at their defaults.
            .migrate_saved_config({
                let registries = self.clone();
                Arc::new(move |saved: &str| {
                    registries
                        .from_toml(saved, "saved config")
                        .ok()
                        .map(|c| c.to_toml())
                })
            })
            .parallel(parallel)
            .summary_field("matmul_kernels", shoal_rl_policy::matmul_kernels());
        let entry = self.envs.get(&cfg.env.kind).ok().copied();
        if let Some(reference) = entry.and_then(|e| e.reference) {
            let (settings, seed) = (cfg.env.settings.clone(), cfg.seed);
            // The search may find nothing on unusual settings: the run then
            // goes without the reference rather than failing.
            spec = spec.reference(Arc::new(move || reference(&settings, seed)));
        }
        spec
    }

    // ---- load ----

    /// A run's config and the learner state of its selected checkpoint
    /// (`latest`, `best` or a number).
    pub fn load_run_state(
        &self,
        run_dir: &Path,
        which: &CheckpointSelector,
    ) -> Result<(RunConfig, Vec<u8>)> {
        let run = RunDir::new(run_dir);
        let text = std::fs::read_to_string(run.config())
            .map_err(|e| Error::io(format!("reading {}", run.config().display()), e))?;
        let cfg = self.from_toml(&text, &run.config().display().to_string())?;
        // The model alone: evaluation needs no replay memory, which may be gone.
        let mut ckpt = load_checkpoint(run.path(), which, Some(&[STATE_BLOB]))?;
        Ok((cfg, ckpt.take_blob(STATE_BLOB)?))
    }

    /// A run's config and its selected checkpoint in a fresh learner.
    pub fn load_run(
        &self,
        run_dir: &Path,
        which: &CheckpointSelector,
    ) -> Result<(RunConfig, Box<dyn GradientLearner>)> {
        let (cfg, state) = self.load_run_state(run_dir, which)?;
        let mut learner = self.learners(&cfg).learner(0, 1.0)?;
        learner.load_state(&state)?;
        Ok((cfg, learner))
    }

    /// The policy of checkpoint `which` (`latest`, `best`, a number) of the
    /// run in `run_dir`. A HAC run is refused: its levels hold subgoals
    /// across steps, which no stateless policy can.
    pub fn load_policy(&self, run_dir: &Path, which: &CheckpointSelector) -> Result<TrainedPolicy> {
        let (config, learner) = self.load_run(run_dir, which)?;
        let policy = learner.policy().ok_or_else(|| {
            Error::Config(format!(
                "{}: a {} run has no stateless policy to load (its levels keep subgoals \
                 across steps); evaluate or render it with shoal eval / shoal render",
                run_dir.display(),
                config.algo.kind()
            ))
        })?;
        Ok(TrainedPolicy::new(config, policy, self.envs.clone()))
    }
}

/// [`Registries::resolve`] with shoal's own registries.
pub fn resolve(source: &str, overrides: &[String]) -> Result<RunConfig> {
    Registries::default().resolve(source, overrides)
}

/// [`Registries::preset`] with shoal's own registries.
pub fn preset(name: &str) -> Result<RunConfig> {
    Registries::default().preset(name)
}

/// [`Registries::check`] with shoal's own registries.
pub fn check(cfg: &RunConfig) -> Result<()> {
    Registries::default().check(cfg)
}

/// [`Registries::run`] with shoal's own registries.
pub fn run(plan: &Plan) -> Result<Option<(PathBuf, Summary)>> {
    Registries::default().run(plan)
}

/// [`Registries::load_policy`] with shoal's own registries.
pub fn load_policy(run_dir: &Path, which: &CheckpointSelector) -> Result<TrainedPolicy> {
    Registries::default().load_policy(run_dir, which)
}

/// [`Registries::load_run`] with shoal's own registries.
pub fn load_run(
    run_dir: &Path,
    which: &CheckpointSelector,
) -> Result<(RunConfig, Box<dyn GradientLearner>)> {
    Registries::default().load_run(run_dir, which)
}

/// [`Registries::load_run_state`] with shoal's own registries.
pub fn load_run_state(run_dir: &Path, which: &CheckpointSelector) -> Result<(RunConfig, Vec<u8>)> {
    Registries::default().load_run_state(run_dir, which)
}

#[cfg(test)]
mod tests;
