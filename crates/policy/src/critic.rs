//! Action-value critic Q(s ‖ g, a) for DDPG-style agents: an MLP over the input and the action.
//!
//! The action enters in the actor's `[-1, 1]` scale (OpenAI baselines feeds
//! `u / max_u`), concatenated after the input features.
//!
//! With [`CriticConfig::bound`] the head is the HAC authors' bounded one:
//! `Q = −H·sigmoid(z + b₀)` with `b₀ = −ln(H/0.067 − 1)` and the last layer
//! drawn in ±3e-3, so Q starts near −0.067 everywhere and never leaves
//! `[−H, 0]`. A linear head extrapolates, and a subgoal actor climbing it is
//! pushed to the corners of its box.

use burn::config::Config;
use burn::module::Module;
use burn::tensor::{Device, Tensor};

use crate::{Activation, Mlp, MlpConfig, rows_to_tensor};

/// Shape of a [`Critic`].
///
/// ```
/// use shoal_rl_policy::{CriticConfig, default_device};
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
    /// `H` of a bounded head with values in `[−H, 0]` (absent: a linear
    /// head). Default absent.
    #[config(default = "None")]
    pub bound: Option<f32>,
}

/// Where a bounded head's values start: the HAC authors' `q_init`.
pub const BOUNDED_Q_INIT: f32 = -0.067;
/// The range of a bounded head's last layer at initialisation (±).
const BOUNDED_OUTPUT_INIT: f32 = 3e-3;

impl CriticConfig {
    /// Builds the network with parameters drawn from `seed` (see [`crate::canonicalise`]).
    pub fn init(&self, seed: u64, device: &Device) -> Critic {
        let mlp = MlpConfig::new(self.input_dim + self.act_dim, self.hidden.clone(), 1)
            .init_with(Activation::Relu, device);
        let critic = crate::canonicalise(
            Critic {
                mlp,
                input_dim: self.input_dim,
                act_dim: self.act_dim,
                bound: self.bound,
            },
            seed,
        );
        match self.bound {
            Some(_) => Critic {
                mlp: critic.mlp.with_output_bound(BOUNDED_OUTPUT_INIT),
                ..critic
            },
            None => critic,
        }
    }
}

/// A critic's head on its MLP's output `z`: Q and dQ/dz, as
/// [`Critic::forward`] computes Q: `−H·sigmoid(z + b₀)` for a head bounded
/// by `H` ([`Critic::bound`]), `z` itself (slope 1) for a linear one.
pub fn critic_head(bound: Option<f32>, z: f32) -> (f32, f32) {
    match bound {
        Some(h) => {
            let s = 1.0 / (1.0 + (-(z + bounded_offset(h))).exp());
            (s * -h, -h * s * (1.0 - s))
        }
        None => (z, 1.0),
    }
}

/// b₀ of the bounded head −H·sigmoid(z + b₀): it puts z = 0 at [`BOUNDED_Q_INIT`].
fn bounded_offset(h: f32) -> f32 {
    -(h / -BOUNDED_Q_INIT - 1.0).ln()
}

/// Maps (input, action) pairs to one scalar value each.
#[derive(Module, Debug)]
pub struct Critic {
    mlp: Mlp,
    #[module(skip)]
    input_dim: usize,
    #[module(skip)]
    act_dim: usize,
    #[module(skip)]
    bound: Option<f32>,
}

impl Critic {
    /// # Shapes
    /// - input `[batch, input_dim]`
    /// - action `[batch, act_dim]`
    /// - output `[batch, 1]`
    pub fn forward(&self, input: Tensor<2>, action: Tensor<2>) -> Tensor<2> {
        let z = self.mlp.forward(Tensor::cat(vec![input, action], 1));
        match self.bound {
            Some(h) => {
                burn::tensor::activation::sigmoid(z.add_scalar(bounded_offset(h))).mul_scalar(-h)
            }
            None => z,
        }
    }

    /// The shape of its MLP over input ‖ action (the head comes after).
    pub fn shape(&self) -> crate::MlpShape {
        self.mlp.shape()
    }

    /// `H` of the bounded head, if it has one.
    pub fn bound(&self) -> Option<f32> {
        self.bound
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

    #[test]
    fn a_bounded_head_starts_near_q_init_and_never_leaves_its_range() {
        let device = default_device();
        let h = 10.0;
        let critic = CriticConfig::new(3, 2)
            .with_hidden(vec![64, 64, 64])
            .with_bound(Some(h))
            .init(4, &device);
        // Inputs of ordinary size: the ±3e-3 last layer keeps z near 0, and
        // −H·sigmoid(−ln(H/0.067 − 1)) = −0.067 exactly (by hand).
        let inputs: Vec<f32> = (0..30).map(|i| ((i as f32) * 0.37).sin()).collect();
        let actions: Vec<f32> = (0..20).map(|i| ((i as f32) * 0.91).cos()).collect();
        for q in critic.q_values(&inputs, &actions, &device) {
            assert!((q - BOUNDED_Q_INIT).abs() < 0.01, "initial Q {q}");
        }
        // However large the inputs, the values stay in [−H, 0].
        let huge: Vec<f32> = inputs.iter().map(|x| x * 1e6).collect();
        let big_actions: Vec<f32> = actions.iter().map(|x| x * 1e6).collect();
        for q in critic.q_values(&huge, &big_actions, &device) {
            assert!((-h..=0.0).contains(&q), "Q {q} outside [−{h}, 0]");
        }
        // The linear head of the same seed starts far from −0.067 on some row.
        let linear = CriticConfig::new(3, 2)
            .with_hidden(vec![64, 64, 64])
            .init(4, &device);
        let q = linear.q_values(&inputs, &actions, &device);
        assert!(q.iter().any(|q| (q - BOUNDED_Q_INIT).abs() > 0.01), "{q:?}");
    }
}
