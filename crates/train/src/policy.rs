//! A trained policy loaded from a run directory ([`TrainedPolicy`]), as
//! [`Registries::load_policy`](crate::Registries::load_policy) gives it.

use shoal_rl_core::{Env, Policy, Result};
use shoal_rl_registry::EnvRegistry;

use crate::config::RunConfig;

/// A trained policy loaded from a run directory: acts on observations of
/// the run's env with exploration off, as `shoal eval` does, or samples
/// actions as the learner explored.
///
/// ```no_run
/// use shoal_rl_eval::CheckpointSelector;
/// # fn main() -> shoal_rl_core::Result<()> {
/// let policy = shoal_rl_train::load_policy("runs/ppo-s1".as_ref(), &CheckpointSelector::Best)?;
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
    envs: EnvRegistry,
}

impl TrainedPolicy {
    /// `policy`, trained by the run `config` on an env of `envs`.
    pub fn new(config: RunConfig, policy: Box<dyn Policy>, envs: EnvRegistry) -> Self {
        TrainedPolicy {
            config,
            policy,
            envs,
        }
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
        self.envs.make_env(&self.config.env)
    }
}
