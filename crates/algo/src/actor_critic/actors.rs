//! The actor of an [`ActorCritic`](super::ActorCritic): DDPG's and TD3's deterministic one with its target copy, or SAC's squashed Gaussian one, which has no target.
//!
//! [`TrainedActor`] is what the update trains, [`FrozenActor`] what acts
//! (no autodiff). Both speak the same flat parameters and state bytes
//! whichever the kind, so the update, gradient averaging and checkpoints
//! treat the two alike.

use burn::module::Module;
use burn::tensor::Device;
use serde::{Deserialize, Serialize};
use shoal_rl_core::Result;
use shoal_rl_policy::{Actor, ActorConfig, GaussianActor, GaussianActorConfig, Trained, flatten};

/// Which actor an actor-critic trains.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ActorKind {
    /// A deterministic `tanh` actor μ(s) with a target copy (DDPG, TD3, HAC).
    #[default]
    Deterministic,
    /// SAC's squashed Gaussian actor ([`GaussianActor`]): no target actor,
    /// an entropy temperature learned beside it.
    Gaussian,
}

/// An actor without autodiff, for acting: the frozen policy's network.
#[derive(Clone, Debug)]
pub enum FrozenActor {
    /// μ(s), the same action every time.
    Deterministic(Actor),
    /// `tanh(μ(s) + σ(s)·ε)`: `tanh(μ(s))` to evaluate, a draw to explore.
    Gaussian(GaussianActor),
}

impl FrozenActor {
    /// The evaluation action in `[-1, 1]` for one (normalised) input row:
    /// μ(s), or `tanh` of the Gaussian's mean.
    pub fn act(&self, input: &[f32], device: &Device) -> Vec<f32> {
        match self {
            FrozenActor::Deterministic(actor) => actor.act(input, device),
            FrozenActor::Gaussian(actor) => actor.act(input, device),
        }
    }

    /// A drawn action in `[-1, 1]` for one input row given its standard
    /// normal draws (`act_dim` of them), or `None` for a deterministic
    /// actor, which draws nothing.
    pub fn sample(&self, input: &[f32], noise: &[f32], device: &Device) -> Option<Vec<f32>> {
        match self {
            FrozenActor::Deterministic(_) => None,
            FrozenActor::Gaussian(actor) => Some(actor.sample_row(input, noise, device)),
        }
    }

    /// Whether [`FrozenActor::sample`] draws actions.
    pub fn is_stochastic(&self) -> bool {
        matches!(self, FrozenActor::Gaussian(_))
    }
}

/// The trained actor and, for the deterministic kind, its target.
#[derive(Clone)]
pub(crate) enum TrainedActor {
    Deterministic {
        actor: Trained<Actor>,
        /// The target actor's parameters, flat.
        target: Vec<f32>,
    },
    Gaussian(Trained<GaussianActor>),
}

impl TrainedActor {
    /// The `kind` of actor for `input_dim` inputs and `act_dim` actions,
    /// drawn from `seed` (the same stream for both kinds).
    pub(crate) fn new(
        kind: ActorKind,
        (input_dim, act_dim): (usize, usize),
        hidden: &[usize],
        (learning_rate, max_grad_norm): (f64, Option<f64>),
        seed: u64,
        device: &Device,
    ) -> Self {
        match kind {
            ActorKind::Deterministic => {
                let actor = ActorConfig::new(input_dim, act_dim)
                    .with_hidden(hidden.to_vec())
                    .init(seed, device);
                TrainedActor::Deterministic {
                    target: flatten(&actor),
                    actor: Trained::adam(actor, learning_rate, max_grad_norm),
                }
            }
            ActorKind::Gaussian => {
                let actor = GaussianActorConfig::new(input_dim, act_dim)
                    .with_hidden(hidden.to_vec())
                    .init(seed, device);
                TrainedActor::Gaussian(Trained::adam(actor, learning_rate, max_grad_norm))
            }
        }
    }

    /// A copy without autodiff, to act with.
    pub(crate) fn frozen(&self) -> FrozenActor {
        match self {
            TrainedActor::Deterministic { actor, .. } => {
                FrozenActor::Deterministic(actor.module().valid())
            }
            TrainedActor::Gaussian(actor) => FrozenActor::Gaussian(actor.module().valid()),
        }
    }

    pub(crate) fn num_params(&self) -> usize {
        match self {
            TrainedActor::Deterministic { actor, .. } => actor.params().len(),
            TrainedActor::Gaussian(actor) => actor.params().len(),
        }
    }

    pub(crate) fn parameters(&self) -> Vec<f32> {
        match self {
            TrainedActor::Deterministic { actor, .. } => actor.parameters(),
            TrainedActor::Gaussian(actor) => actor.parameters(),
        }
    }

    /// Overwrites the parameters; with `reset_target` the target becomes a
    /// copy of them too (before the first step, as at initialisation).
    pub(crate) fn set_parameters(&mut self, flat: &[f32], reset_target: bool) -> Result<()> {
        match self {
            TrainedActor::Deterministic { actor, target } => {
                actor.set_parameters(flat)?;
                if reset_target {
                    *target = actor.parameters();
                }
            }
            TrainedActor::Gaussian(actor) => actor.set_parameters(flat)?,
        }
        Ok(())
    }

    /// One Adam step from the flat gradient.
    pub(crate) fn step(&mut self, grads: &mut [f32]) -> Result<()> {
        match self {
            TrainedActor::Deterministic { actor, .. } => actor.step(grads)?,
            TrainedActor::Gaussian(actor) => actor.step(grads)?,
        };
        Ok(())
    }

    /// The target actor's parameters; none for the Gaussian actor.
    pub(crate) fn target_parameters(&self) -> Vec<f32> {
        match self {
            TrainedActor::Deterministic { target, .. } => target.clone(),
            TrainedActor::Gaussian(_) => Vec::new(),
        }
    }

    /// Replaces the target actor's parameters (`flat` must be empty for
    /// the Gaussian actor, which has none).
    pub(crate) fn set_target_parameters(&mut self, flat: &[f32]) -> Result<()> {
        match self {
            TrainedActor::Deterministic { target, .. } => {
                if flat.len() != target.len() {
                    return Err(shoal_rl_core::Error::Shape(format!(
                        "target actor has {} values, the actor {}",
                        flat.len(),
                        target.len()
                    )));
                }
                target.copy_from_slice(flat);
            }
            TrainedActor::Gaussian(_) => {
                if !flat.is_empty() {
                    return Err(shoal_rl_core::Error::Shape(format!(
                        "actor-critic state has a target actor of {} values; a Gaussian actor \
                         has none",
                        flat.len()
                    )));
                }
            }
        }
        Ok(())
    }

    /// Parameters and Adam moments as bytes.
    pub(crate) fn save_state(&self) -> Vec<u8> {
        match self {
            TrainedActor::Deterministic { actor, .. } => actor.save_state(),
            TrainedActor::Gaussian(actor) => actor.save_state(),
        }
    }

    /// Restores [`TrainedActor::save_state`] output; on error `self` is unchanged.
    pub(crate) fn load_state(&mut self, bytes: &[u8]) -> Result<()> {
        match self {
            TrainedActor::Deterministic { actor, .. } => actor.load_state(bytes),
            TrainedActor::Gaussian(actor) => actor.load_state(bytes),
        }
    }
}
