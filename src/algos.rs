//! The algorithms `shoal train` runs: one table that the learner factories,
//! the configuration checks and `shoal train --help` read. An algorithm is
//! its module in shoal-rl-algo, its settings in [`crate::config::AlgoConfig`]
//! and one entry here.

use shoal_rl_core::{Error, GradientLearner, Result, RolloutLearner};

use crate::config::RunConfig;
use crate::train::{make_ddpg, make_hac, make_ppo, make_reinforce};

/// Builds the learner of a worker: config, rank, learning-rate scale.
pub type MakeLearner = fn(&RunConfig, usize, f64) -> Result<Box<dyn GradientLearner>>;

/// Builds the rollout-gathering learner of a worker: config, rank.
pub type MakeRolloutLearner = fn(&RunConfig, usize) -> Result<Box<dyn RolloutLearner>>;

/// One algorithm of [`ALGORITHMS`].
#[derive(Debug)]
pub struct AlgoEntry {
    /// Its `algo.kind` in configs.
    pub kind: &'static str,
    /// The settings struct its `[algo]` table holds (in shoal-rl-algo).
    pub settings_type: &'static str,
    /// One line for `--help`.
    pub about: &'static str,
    /// Whether it needs a goal-conditioned env (HER, subgoals).
    pub goal_env: bool,
    /// The learner of worker `rank` (seeded `seed + rank`), its learning
    /// rates multiplied by the third argument (the pool's per-worker scale).
    pub learner: MakeLearner,
    /// Its learner for rollout gathering, if it can collect episodes apart
    /// from updating on them.
    pub rollout_learner: Option<MakeRolloutLearner>,
}

/// Every algorithm `shoal train` runs.
pub const ALGORITHMS: &[AlgoEntry] = &[
    AlgoEntry {
        kind: "reinforce",
        settings_type: "ReinforceConfig",
        about: "REINFORCE with a learned baseline and a Beta policy",
        goal_env: false,
        learner: |cfg, rank, scale| Ok(Box::new(make_reinforce(cfg, rank, scale)?)),
        rollout_learner: Some(|cfg, rank| Ok(Box::new(make_reinforce(cfg, rank, 1.0)?))),
    },
    AlgoEntry {
        kind: "ppo",
        settings_type: "PpoConfig",
        about: "PPO with GAE(λ) and a Beta (or Gaussian) policy",
        goal_env: false,
        learner: |cfg, rank, scale| Ok(Box::new(make_ppo(cfg, rank, scale)?)),
        rollout_learner: Some(|cfg, rank| Ok(Box::new(make_ppo(cfg, rank, 1.0)?))),
    },
    AlgoEntry {
        kind: "ddpg",
        settings_type: "DdpgConfig",
        about: "DDPG with hindsight experience replay",
        goal_env: true,
        learner: |cfg, rank, scale| Ok(Box::new(make_ddpg(cfg, rank, scale)?)),
        rollout_learner: None,
    },
    AlgoEntry {
        kind: "hac",
        settings_type: "HacConfig",
        about: "hierarchical actor-critic (HAC) with HER on every level",
        goal_env: true,
        learner: |cfg, rank, scale| Ok(Box::new(make_hac(cfg, rank, scale)?)),
        rollout_learner: None,
    },
];

/// The entry of `kind`, or an error listing the algorithms there are.
pub fn algorithm(kind: &str) -> Result<&'static AlgoEntry> {
    ALGORITHMS.iter().find(|a| a.kind == kind).ok_or_else(|| {
        let kinds: Vec<&str> = ALGORITHMS.iter().map(|a| a.kind).collect();
        Error::Config(format!(
            "unknown algorithm `{kind}` (algorithms: {})",
            kinds.join(", ")
        ))
    })
}

/// The kinds that can train under `gather`, comma-separated.
pub fn gather_kinds() -> String {
    let kinds: Vec<&str> = ALGORITHMS
        .iter()
        .filter(|a| a.rollout_learner.is_some())
        .map(|a| a.kind)
        .collect();
    kinds.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::PRESETS;

    #[test]
    fn every_presets_algorithm_has_one_entry_and_every_entry_a_preset() {
        let mut kinds: Vec<&str> = ALGORITHMS.iter().map(|a| a.kind).collect();
        kinds.sort();
        kinds.dedup();
        assert_eq!(kinds.len(), ALGORITHMS.len(), "one entry per kind");
        for entry in ALGORITHMS {
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
        }
        assert!(
            algorithm("dqn")
                .unwrap_err()
                .to_string()
                .contains("reinforce, ppo, ddpg, hac")
        );
    }

    #[test]
    fn a_goal_algorithm_on_a_plain_env_and_gather_without_batches_are_refused() {
        let mut cfg = crate::config::preset("toy-ddpg-her").unwrap();
        cfg.env = crate::config::preset("worm-reinforce").unwrap().env;
        let refused = crate::train::check_config(&cfg).unwrap_err().to_string();
        assert!(
            refused.contains(
                "algo `ddpg` needs a goal-conditioned env (arm-push, ball-to-net, ur5-reacher, \
                 pendulum, point-goal), \
                 not `worm`"
            ),
            "{refused}"
        );
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
