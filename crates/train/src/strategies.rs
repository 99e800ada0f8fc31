//! The strategies a config's `parallel.strategy` can name: an open
//! registry, as the algorithms' and the envs' are. Each [`StrategyEntry`]
//! owns every rule of its strategy: the parallel settings it reads and
//! checks, what each worker gets of the run ([`Share`]), what it builds
//! before anything touches the disk, and how it runs. The built-in table
//! is [`StrategyRegistry::builtin`]; a program adds its own strategy with
//! [`Registry::with`] and trains it by name through
//! [`Registries::run`](crate::Registries::run), as
//! `examples/custom_strategy.rs` in the shoal repository does.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::json;
use shoal_rl_core::{Error, GradientLearner, Result};
use shoal_rl_eval::Summary;
use shoal_rl_parallel::{
    AveragingConfig, GatherConfig, GradientAveraging, GroupPool, Pool, PoolConfig, RolloutGather,
    Strategy,
};
use shoal_rl_registry::Entry;
pub use shoal_rl_registry::Registry;
use shoal_rl_run::RunSpec;
pub use shoal_rl_run::StrategySetup;

use crate::config::{ParallelConfig, RunConfig};
use crate::learners::Learners;
use crate::plan::Plan;
use crate::worker_rules::Share;

/// The strategies a config's `parallel.strategy` names.
pub type StrategyRegistry = Registry<StrategyEntry>;

/// What a strategy's run returns: the run directory and summary on rank
/// 0, `None` on the other ranks.
pub type RunOutcome = Result<Option<(PathBuf, Summary)>>;

/// How a strategy's entry trains a plan.
pub type RunPlan = Arc<dyn Fn(&RunContext<'_>) -> RunOutcome + Send + Sync>;

/// What a strategy's run is given: the plan, the learners of its workers
/// and the run's spec for the runtime.
pub struct RunContext<'a> {
    /// What to train, where.
    pub plan: &'a Plan,
    /// Every worker's learner.
    pub learners: Learners<'a>,
    /// The run as the runtime ([`shoal_rl_run`]) takes it.
    pub spec: RunSpec,
}

impl RunContext<'_> {
    /// The run's config.
    pub fn config(&self) -> &RunConfig {
        &self.plan.cfg
    }

    /// Trains with the strategy `make_strategy` builds on every rank, every
    /// worker the run's learner, on the backend and worker count of
    /// `parallel`, with everything `shoal train` gives its own strategies
    /// (see [`shoal_rl_run::train_parallel`]). `parallel.strategy` must
    /// carry the strategy's [`Strategy::name`], so configs, records and
    /// summaries use one name.
    pub fn run_strategy<S, F>(&self, make_strategy: F) -> RunOutcome
    where
        S: Strategy<Box<dyn GradientLearner>>,
        F: Fn(&StrategySetup) -> Result<S> + Sync,
    {
        shoal_rl_run::train_parallel(
            &self.spec,
            &self.plan.options,
            |rank| self.learners.learner(rank, 1.0),
            make_strategy,
        )
    }
}

/// One strategy of a registry. Every rule but the run has a default:
/// nothing more to check, each worker a learner of its own with an equal
/// part of the budget ([`Share::separate`]), rank 0's learner built before
/// the run starts.
#[derive(Clone)]
pub struct StrategyEntry {
    /// Its `parallel.strategy` in configs: the strategy's `Strategy::name`.
    pub name: &'static str,
    /// One line for `--help`.
    pub about: &'static str,
    /// Checks the settings of a run under this strategy that the values
    /// alone decide (after those every run checks).
    pub validate: fn(&RunConfig) -> Result<()>,
    /// What each worker gets of a run.
    pub share: fn(&RunConfig) -> Share,
    /// Builds what the run will build, so that whatever the constructors
    /// refuse is refused before anything is written.
    pub check: fn(&Learners<'_>) -> Result<()>,
    /// Trains a plan under this strategy (after its config was checked).
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
    /// [`RunContext::run_strategy`] with the strategy's constructor:
    ///
    /// ```no_run
    /// use shoal_rl_parallel::{AveragingConfig, GradientAveraging};
    /// use shoal_rl_train::strategies::StrategyEntry;
    ///
    /// let entry = StrategyEntry::new("my-averaging", "averaging, by another name", |run| {
    ///     run.run_strategy(|setup| {
    ///         Ok(GradientAveraging::new(AveragingConfig::new(setup.schedule())))
    ///     })
    /// });
    /// # let _ = entry;
    /// ```
    pub fn new(
        name: &'static str,
        about: &'static str,
        run: impl Fn(&RunContext<'_>) -> RunOutcome + Send + Sync + 'static,
    ) -> Self {
        StrategyEntry {
            name,
            about,
            validate: |_| Ok(()),
            share: |cfg| Share::separate(cfg.parallel.workers, &cfg.train),
            check: |learners| learners.learner(0, 1.0).map(drop),
            run: Arc::new(run),
        }
    }

    /// With a check of its own settings.
    #[must_use]
    pub fn validate(mut self, validate: fn(&RunConfig) -> Result<()>) -> Self {
        self.validate = validate;
        self
    }

    /// With its own division of a run between the workers.
    #[must_use]
    pub fn share(mut self, share: fn(&RunConfig) -> Share) -> Self {
        self.share = share;
        self
    }

    /// With its own check of what the run builds.
    #[must_use]
    pub fn check(mut self, check: fn(&Learners<'_>) -> Result<()>) -> Self {
        self.check = check;
        self
    }
}

impl Entry for StrategyEntry {
    const WHAT: &'static str = "parallel.strategy";
    const PLURAL: &'static str = "strategies";
    const HINT: &'static str = "; a program registers its own with StrategyRegistry::with";

    fn name(&self) -> &'static str {
        self.name
    }

    fn about(&self) -> &'static str {
        self.about
    }

    /// shoal's own: one learner, the pool, rollout gather and gradient
    /// averaging.
    fn builtin() -> Vec<Self> {
        vec![single_learner(), pool(), gather(), averaging()]
    }
}

/// One learner, no parallel strategy.
fn single_learner() -> StrategyEntry {
    StrategyEntry::new("none", "one learner", |run| {
        shoal_rl_run::train(&run.spec, &run.plan.options, || {
            run.learners.learner(0, 1.0)
        })
        .map(Some)
    })
    .validate(|cfg| {
        if cfg.parallel.workers == 1 {
            return Ok(());
        }
        Err(Error::Config(format!(
            "preset `{}` trains one learner (parallel.strategy = \"none\"); for {} \
             workers also --set parallel.strategy=pool|gather|averaging",
            cfg.preset, cfg.parallel.workers
        )))
    })
}

/// Rollout gather to rank 0, which learns from every worker's episodes.
fn gather() -> StrategyEntry {
    StrategyEntry::new(
        "gather",
        "rollout gather to rank 0, which updates and broadcasts the weights",
        |run| {
            shoal_rl_run::train_parallel(
                &run.spec,
                &run.plan.options,
                |rank| run.learners.rollout_learner(rank),
                |setup| Ok(RolloutGather::new(GatherConfig::new(setup.schedule()))),
            )
        },
    )
    .share(|cfg| Share {
        // Rank 0's updates learn from every episode of the run.
        episodes: cfg.train.episodes,
        ..Share::separate(cfg.parallel.workers, &cfg.train)
    })
    .check(|learners| learners.rollout_learner(0).map(drop))
}

/// Gradient averaging: the workers are one learner.
fn averaging() -> StrategyEntry {
    StrategyEntry::new(
        "averaging",
        "gradient averaging: every worker its own replay, one set of parameters",
        |run| {
            run.run_strategy(|setup| {
                Ok(GradientAveraging::new(AveragingConfig::new(
                    setup.schedule(),
                )))
            })
        },
    )
    .share(|cfg| Share {
        // One experience budget: the replay is split, not multiplied.
        replay_split: cfg.parallel.workers.max(1),
        averages_gradients: true,
        ..Share::separate(cfg.parallel.workers, &cfg.train)
    })
}

/// The branch-and-merge pool: per-candidate learners (their
/// `worker_overrides` and learning rates), single workers or averaging
/// groups as candidates.
fn pool() -> StrategyEntry {
    StrategyEntry::new(
        "pool",
        "branch-and-merge pool: every iteration the best candidate is copied to all",
        |run| {
            let parallel = &run.config().parallel;
            // Each iteration line says what every worker trained with.
            let mut spec = run.spec.clone();
            spec.parallel.iteration_fields.push((
                "pool/worker_settings".into(),
                pool_worker_settings(parallel),
            ));
            let learner = |rank| run.learners.candidate_learner(rank);
            let pool = |setup: &StrategySetup| {
                PoolConfig::new(setup.schedule()).selection_episodes(parallel.pool_eval_episodes)
            };
            let options = &run.plan.options;
            match parallel.pool_group_size {
                1 => shoal_rl_run::train_parallel(&spec, options, learner, |setup| {
                    Ok(Pool::new(pool(setup)))
                }),
                group => shoal_rl_run::train_parallel(&spec, options, learner, |setup| {
                    Ok(GroupPool::new(pool(setup), group))
                }),
            }
        },
    )
    .validate(|cfg| validate_pool(&cfg.parallel))
    .share(|cfg| Share {
        candidates: Some(cfg.parallel.candidates()),
        ..Share::separate(cfg.parallel.workers, &cfg.train)
    })
    .check(check_pool_candidates)
}

/// What every pool worker trains with, by rank: its learning-rate
/// multiplier and its overrides.
pub fn pool_worker_settings(parallel: &ParallelConfig) -> serde_json::Value {
    (0..parallel.workers)
        .map(|rank| {
            json!({
                "lr_scale": parallel.lr_scale_of(rank),
                "overrides": parallel.overrides_of(rank),
            })
        })
        .collect::<Vec<_>>()
        .into()
}

/// The pool's own settings: groups that divide the workers, and no more
/// per-candidate settings than candidates.
fn validate_pool(parallel: &ParallelConfig) -> Result<()> {
    let group = parallel.pool_group_size;
    if !parallel.workers.is_multiple_of(group) {
        return Err(Error::Config(format!(
            "parallel.pool_group_size must divide parallel.workers ({}), got {group}",
            parallel.workers
        )));
    }
    let per_candidate = parallel
        .worker_lr_scales
        .len()
        .max(parallel.worker_overrides.len());
    if per_candidate > parallel.candidates() {
        return Err(Error::Config(format!(
            "parallel.worker_lr_scales and worker_overrides name {per_candidate} \
             candidates; the pool has {}",
            parallel.candidates()
        )));
    }
    Ok(())
}

/// Builds the learner of every distinct pool candidate (those
/// `parallel.worker_overrides` names and the first past its end), so that
/// whatever their constructors refuse is refused now, and checks that each
/// takes candidate 0's state: the pool loads the winner's state into every
/// worker, which otherwise fails at the first winner of another shape, with
/// the run directory already written.
fn check_pool_candidates(learners: &Learners<'_>) -> Result<()> {
    let parallel = &learners.config().parallel;
    let group = parallel.pool_group_size.max(1);
    let learner_of = |candidate: usize| learners.candidate_learner(candidate * group);
    let first_state = learner_of(0)?.save_state();
    let distinct = (parallel.worker_overrides.len() + 1).min(parallel.candidates());
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

#[cfg(test)]
mod tests;
