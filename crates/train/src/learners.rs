//! What a strategy builds its workers' learners from ([`Learners`]): the
//! run's config, its envs and algorithms, and each worker's share of the
//! run. A strategy entry gets one when it checks a config and when it
//! runs, and needs nothing else to build any rank's learner.

use shoal_rl_core::{Error, GradientLearner, Result, RolloutLearner};
use shoal_rl_registry::EnvRegistry;

use crate::algos::{AlgoEntry, AlgoRegistry, LearnerContext, gather_kinds};
use crate::config::{RunConfig, in_context};
use crate::read::with_overrides;
use crate::worker_rules::Share;

/// The learners of a run's workers.
#[derive(Clone, Copy)]
pub struct Learners<'a> {
    cfg: &'a RunConfig,
    envs: &'a EnvRegistry,
    algos: &'a AlgoRegistry,
    share: Share,
}

impl<'a> Learners<'a> {
    /// The learners of `cfg`, whose names `envs` and `algos` hold, each
    /// worker given `share` of the run.
    pub fn new(
        cfg: &'a RunConfig,
        envs: &'a EnvRegistry,
        algos: &'a AlgoRegistry,
        share: Share,
    ) -> Self {
        Learners {
            cfg,
            envs,
            algos,
            share,
        }
    }

    /// The run's config.
    pub fn config(&self) -> &'a RunConfig {
        self.cfg
    }

    /// What each worker gets of the run.
    pub fn share(&self) -> Share {
        self.share
    }

    /// The run's algorithm entry.
    pub fn algo(&self) -> Result<&'a AlgoEntry> {
        self.algos.get(self.cfg.algo.kind())
    }

    /// What worker `rank`'s learner is built from.
    pub fn context(&self, rank: usize, lr_scale: f64) -> Result<LearnerContext<'a>> {
        LearnerContext::new(
            self.envs,
            self.algo()?,
            self.cfg,
            rank,
            lr_scale,
            self.share,
        )
    }

    /// The learner of worker `rank` (seeded `seed + rank`); `lr_scale`
    /// multiplies its learning rates.
    pub fn learner(&self, rank: usize, lr_scale: f64) -> Result<Box<dyn GradientLearner>> {
        (self.algo()?.learner)(&self.context(rank, lr_scale)?)
    }

    /// The learner of worker `rank` for rollout gathering, which needs an
    /// algorithm that can split collection from update.
    pub fn rollout_learner(&self, rank: usize) -> Result<Box<dyn RolloutLearner>> {
        let entry = self.algo()?;
        let make = entry.rollout_learner.ok_or_else(|| {
            Error::Config(format!(
                "parallel.strategy `{}` needs a batch algorithm ({}), not `{}`",
                self.cfg.parallel.strategy,
                gather_kinds(self.algos),
                entry.kind
            ))
        })?;
        make(&self.context(rank, 1.0)?)
    }

    /// The config pool worker `rank` trains with: the run's, with its
    /// candidate's `parallel.worker_overrides` applied
    /// (candidate = rank / `parallel.pool_group_size`).
    pub fn candidate_config(&self, rank: usize) -> Result<RunConfig> {
        let parallel = &self.cfg.parallel;
        with_overrides(self.envs, self.algos, self.cfg, parallel.overrides_of(rank)).map_err(|e| {
            in_context(
                &format!(
                    "parallel.worker_overrides of candidate {}",
                    parallel.candidate_of(rank)
                ),
                e,
            )
        })
    }

    /// The learner of pool worker `rank`: its candidate's config
    /// ([`Learners::candidate_config`]) at its candidate's learning-rate
    /// multiplier.
    pub fn candidate_learner(&self, rank: usize) -> Result<Box<dyn GradientLearner>> {
        let cfg = self.candidate_config(rank)?;
        let candidate = Learners { cfg: &cfg, ..*self };
        candidate.learner(rank, self.cfg.parallel.lr_scale_of(rank))
    }
}
