//! The strategies a config's `parallel.strategy` can name: an open
//! registry, as the algorithms' and the envs' are. Each [`StrategyEntry`]
//! owns how a plan runs under it: the learners it needs and the strategy
//! it builds on every rank. The built-in table is
//! [`StrategyRegistry::builtin`]; a program adds its own strategy with
//! [`StrategyRegistry::with`] and trains it by name through [`run`](crate::run),
//! as `examples/custom_strategy.rs` in the shoal repository does.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use shoal_rl_core::{Error, Result};
use shoal_rl_eval::Summary;
use shoal_rl_parallel::{
    AveragingConfig, GatherConfig, GradientAveraging, GroupPool, Pool, PoolConfig, RolloutGather,
};

use crate::train::{Plan, StrategySetup, make_learner, make_pool_learner, make_rollout_learner};
use crate::{run_spec, run_strategy};

/// What a strategy's entry does with a plan: train it, returning the run
/// directory and summary on rank 0 and `None` on the other ranks.
pub type RunPlan = Arc<dyn Fn(&Plan) -> Result<Option<(PathBuf, Summary)>> + Send + Sync>;

/// One strategy of a registry.
#[derive(Clone)]
pub struct StrategyEntry {
    /// Its `parallel.strategy` in configs: the strategy's `Strategy::name`.
    pub name: &'static str,
    /// One line for `--help`.
    pub about: &'static str,
    /// Trains a plan under this strategy (after the plan's config was
    /// checked).
    pub run: RunPlan,
}

impl fmt::Debug for StrategyEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StrategyEntry")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl StrategyEntry {
    /// A strategy named `name` that `run` trains a plan with; usually
    /// [`run_strategy`] with the strategy's constructor:
    ///
    /// ```no_run
    /// use shoal_rl_parallel::{AveragingConfig, GradientAveraging};
    /// use shoal_rl_train::run_strategy;
    /// use shoal_rl_train::strategies::StrategyEntry;
    ///
    /// let entry = StrategyEntry::new("my-averaging", "averaging, by another name", |plan| {
    ///     run_strategy(plan, |setup| {
    ///         Ok(GradientAveraging::new(AveragingConfig::new(setup.schedule())))
    ///     })
    /// });
    /// # let _ = entry;
    /// ```
    pub fn new(
        name: &'static str,
        about: &'static str,
        run: impl Fn(&Plan) -> Result<Option<(PathBuf, Summary)>> + Send + Sync + 'static,
    ) -> Self {
        StrategyEntry {
            name,
            about,
            run: Arc::new(run),
        }
    }
}

/// A registry of strategies, by name. Cloning shares the table.
#[derive(Clone)]
pub struct StrategyRegistry {
    entries: Arc<Vec<StrategyEntry>>,
}

impl fmt::Debug for StrategyRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl Default for StrategyRegistry {
    fn default() -> Self {
        Self::builtin()
    }
}

/// Equal when they name the same strategies (what they run is code).
impl PartialEq for StrategyRegistry {
    fn eq(&self, other: &Self) -> bool {
        self.names() == other.names()
    }
}

impl StrategyRegistry {
    /// No strategies.
    pub fn empty() -> Self {
        StrategyRegistry {
            entries: Arc::new(Vec::new()),
        }
    }

    /// shoal's own: one learner, the pool, rollout gather and gradient
    /// averaging.
    pub fn builtin() -> Self {
        Self::empty()
            .with(StrategyEntry::new("none", "one learner", |plan| {
                let cfg = &plan.cfg;
                shoal_rl_run::train(&run_spec(cfg), &plan.options, || make_learner(cfg, 0, 1.0))
                    .map(Some)
            }))
            .with(StrategyEntry::new(
                "pool",
                "branch-and-merge pool: every iteration the best candidate is copied to all",
                run_pool,
            ))
            .with(StrategyEntry::new(
                "gather",
                "rollout gather to rank 0, which updates and broadcasts the weights",
                |plan| {
                    let cfg = &plan.cfg;
                    shoal_rl_run::train_parallel(
                        &run_spec(cfg),
                        &plan.options,
                        |rank| make_rollout_learner(cfg, rank),
                        |setup| Ok(RolloutGather::new(GatherConfig::new(setup.schedule()))),
                    )
                },
            ))
            .with(StrategyEntry::new(
                "averaging",
                "gradient averaging: every worker its own replay, one set of parameters",
                |plan| {
                    run_strategy(plan, |setup| {
                        Ok(GradientAveraging::new(AveragingConfig::new(
                            setup.schedule(),
                        )))
                    })
                },
            ))
    }

    /// This registry with `entry` added, or replacing the entry of its name.
    #[must_use]
    pub fn with(self, entry: StrategyEntry) -> Self {
        let mut entries = self.entries.as_ref().clone();
        entries.retain(|e| e.name != entry.name);
        entries.push(entry);
        StrategyRegistry {
            entries: Arc::new(entries),
        }
    }

    /// Every entry, in registration order.
    pub fn entries(&self) -> &[StrategyEntry] {
        &self.entries
    }

    /// Every name, in registration order.
    pub fn names(&self) -> Vec<&'static str> {
        self.entries.iter().map(|e| e.name).collect()
    }

    /// The entry of `name`, or an error listing the strategies there are.
    pub fn get(&self, name: &str) -> Result<&StrategyEntry> {
        self.entries.iter().find(|e| e.name == name).ok_or_else(|| {
            Error::Config(format!(
                "unknown parallel.strategy `{name}` (strategies: {}); a program registers its \
                 own with StrategyRegistry::with",
                self.names().join(", ")
            ))
        })
    }
}

/// The pool: per-candidate learners (their `worker_overrides` and learning
/// rates), single workers or averaging groups as candidates.
fn run_pool(plan: &Plan) -> Result<Option<(PathBuf, Summary)>> {
    let cfg = &plan.cfg;
    let learner = |rank| make_pool_learner(cfg, rank);
    let pool = |setup: &StrategySetup| {
        PoolConfig::new(setup.schedule()).selection_episodes(cfg.parallel.pool_eval_episodes)
    };
    let (spec, options) = (run_spec(cfg), &plan.options);
    match cfg.parallel.pool_group_size {
        1 => shoal_rl_run::train_parallel(&spec, options, learner, |setup| {
            Ok(Pool::new(pool(setup)))
        }),
        group => shoal_rl_run::train_parallel(&spec, options, learner, |setup| {
            Ok(GroupPool::new(pool(setup), group))
        }),
    }
}
