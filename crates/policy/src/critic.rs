//! Action-value critic Q(s ‖ g, a) for DDPG-style agents: an MLP over the input and the action.
//!
//! The action enters in the actor's `[-1, 1]` scale (OpenAI baselines feeds
//! `u / max_u`), concatenated after the input features.

use burn::config::Config;
use burn::module::Module;
use burn::tensor::{Device, Tensor};

use crate::{Activation, Mlp, MlpConfig, rows_to_tensor};

/// Shape of a [`Critic`].
///
/// ```
/// use shoal_policy::{CriticConfig, default_device};
/// let device = default_device();
/// let critic = CriticConfig::new(5, 2).with_hidden(vec![16]).init(3, &device);
/// let q = critic.q_values(&[0.0; 10], &[0.5; 4], &device);
/// assert_eq!(q.len(), 2);
/// ```
#[derive(Config, Debug)]
pub struct CriticConfig {
    /// Input features (for goal tasks: observation ‖ goal).
    pub input_dim: usize,
    /// Action components.
    pub act_dim: usize,
    /// Hidden layer widths. Default `[256, 256, 256]` (OpenAI baselines HER).
    #[config(default = "vec![256, 256, 256]")]
    pub hidden: Vec<usize>,
}

impl CriticConfig {
    /// Builds the network with parameters drawn from `seed` (see [`crate::canonicalise`]).
    pub fn init(&self, seed: u64, device: &Device) -> Critic {
        let mlp = MlpConfig::new(self.input_dim + self.act_dim, self.hidden.clone(), 1)
            .init_with(Activation::Relu, device);
        crate::canonicalise(
            Critic {
                mlp,
                input_dim: self.input_dim,
                act_dim: self.act_dim,
            },
            seed,
        )
    }
}

/// Maps (input, action) pairs to one scalar value each.
#[derive(Module, Debug)]
pub struct Critic {
    mlp: Mlp,
    #[module(skip)]
    input_dim: usize,
    #[module(skip)]
    act_dim: usize,
}

impl Critic {
    /// # Shapes
    /// - input `[batch, input_dim]`
    /// - action `[batch, act_dim]`
    /// - output `[batch, 1]`
    pub fn forward(&self, input: Tensor<2>, action: Tensor<2>) -> Tensor<2> {
        self.mlp.forward(Tensor::cat(vec![input, action], 1))
    }

    /// Q values of row-major batches of inputs and actions.
    pub fn q_values(&self, inputs: &[f32], actions: &[f32], device: &Device) -> Vec<f32> {
        let out = self.forward(
            rows_to_tensor(inputs, self.input_dim, device),
            rows_to_tensor(actions, self.act_dim, device),
        );
        out.into_data().try_to_vec().expect("f32 tensor")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::default_device;

    #[test]
    fn q_values_has_one_value_per_row_and_depends_on_the_action() {
        let device = default_device();
        let critic = CriticConfig::new(3, 2)
            .with_hidden(vec![16, 16])
            .init(4, &device);
        let inputs = [0.1f32, 0.2, 0.3, 0.1, 0.2, 0.3];
        let q = critic.q_values(&inputs, &[0.5, -0.5, -0.5, 0.5], &device);
        assert_eq!(q.len(), 2);
        assert!(q.iter().all(|v| v.is_finite()));
        assert_ne!(
            q[0], q[1],
            "same input, different actions must give different values"
        );
    }
}
