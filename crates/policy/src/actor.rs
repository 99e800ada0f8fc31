//! Deterministic actor μ(s) for DDPG-style agents: an MLP with a `tanh` output in `[-1, 1]`.
//!
//! The actor knows nothing of the environment's bounds: its output is the
//! symmetric unit box, and the caller maps it onto the action space with
//! [`shoal_rl_core::Space::from_symmetric`]. Keeping actions in `[-1, 1]` inside
//! the agent is what makes the action L2 penalty and the exploration noise
//! scale-free (OpenAI baselines divides by `max_u` for the same reason).

use burn::config::Config;
use burn::module::Module;
use burn::tensor::{Device, Tensor};

use crate::{Activation, Mlp, MlpConfig, rows_to_tensor};

/// Shape of an [`Actor`].
///
/// ```
/// use shoal_rl_policy::{ActorConfig, default_device};
/// let device = default_device();
/// let actor = ActorConfig::new(5, 2).with_hidden(vec![16, 16]).init(3, &device);
/// let action = actor.act(&[0.1, 0.2, 0.3, 0.4, 0.5], &device);
/// assert_eq!(action.len(), 2);
/// assert!(action.iter().all(|a| (-1.0..=1.0).contains(a)));
/// ```
#[derive(Config, Debug)]
pub struct ActorConfig {
    /// Input features (for goal tasks: observation ‖ goal).
    pub input_dim: usize,
    /// Action components.
    pub act_dim: usize,
    /// Hidden layer widths. Default `[256, 256, 256]` (OpenAI baselines HER).
    #[config(default = "vec![256, 256, 256]")]
    pub hidden: Vec<usize>,
}

impl ActorConfig {
    /// Builds the network with parameters drawn from `seed` (see [`crate::canonicalise`]).
    pub fn init(&self, seed: u64, device: &Device) -> Actor {
        let mlp = MlpConfig::new(self.input_dim, self.hidden.clone(), self.act_dim)
            .init_with(Activation::Relu, device);
        crate::canonicalise(Actor { mlp }, seed)
    }
}

/// Maps an input (observation, or observation ‖ goal) to one action in `[-1, 1]ⁿ`.
#[derive(Module, Debug)]
pub struct Actor {
    mlp: Mlp,
}

impl Actor {
    /// # Shapes
    /// - input `[batch, input_dim]`
    /// - output `[batch, act_dim]`, every entry in `[-1, 1]`
    pub fn forward(&self, input: Tensor<2>) -> Tensor<2> {
        self.mlp.forward(input).tanh()
    }

    /// The shape of its MLP (the `tanh` on the output comes after).
    pub fn shape(&self) -> crate::MlpShape {
        self.mlp.shape()
    }

    /// The action for one input row, as a plain vector.
    pub fn act(&self, input: &[f32], device: &Device) -> Vec<f32> {
        let out = self.forward(rows_to_tensor(input, input.len(), device));
        out.into_data().try_to_vec().expect("f32 tensor")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{default_device, flatten};

    #[test]
    fn actor_output_stays_within_unit_bounds_for_extreme_inputs() {
        let device = default_device();
        let actor = ActorConfig::new(3, 4).with_hidden(vec![8]).init(1, &device);
        for scale in [0.0f32, 1.0, 1e3, -1e6] {
            let action = actor.act(&[scale, -scale, 0.5 * scale], &device);
            assert_eq!(action.len(), 4);
            assert!(
                action.iter().all(|a| (-1.0..=1.0).contains(a)),
                "{action:?} at {scale}"
            );
        }
    }

    #[test]
    fn same_seed_gives_same_actor_and_different_seeds_differ() {
        let device = default_device();
        let config = ActorConfig::new(3, 2).with_hidden(vec![8, 8]);
        assert_eq!(
            flatten(&config.init(5, &device)),
            flatten(&config.init(5, &device))
        );
        assert_ne!(
            flatten(&config.init(5, &device)),
            flatten(&config.init(6, &device))
        );
    }

    #[test]
    fn batch_forward_matches_single_rows() {
        let device = default_device();
        let actor = ActorConfig::new(2, 3).with_hidden(vec![8]).init(2, &device);
        let rows = [0.1f32, 0.2, -0.3, 0.4];
        let batch: Vec<f32> = actor
            .forward(rows_to_tensor(&rows, 2, &device))
            .into_data()
            .try_to_vec()
            .unwrap();
        let mut singles = actor.act(&rows[..2], &device);
        singles.extend(actor.act(&rows[2..], &device));
        for (a, b) in batch.iter().zip(&singles) {
            assert!((a - b).abs() < 1e-6);
        }
    }
}
