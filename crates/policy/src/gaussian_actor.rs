//! SAC's squashed Gaussian actor (Haarnoja et al., 2018): actions `tanh(u)`, `u ~ N(μ(s), σ(s)²)`, in `[-1, 1]`.
//!
//! One MLP gives the mean and the log standard deviation of each action
//! component (its output is `mean ‖ log_std`: two linear heads on the last
//! hidden layer, as Stable-Baselines3's SAC actor has). The log-std is
//! clamped to `[LOG_STD_MIN, LOG_STD_MAX]` = `[−20, 2]` as SB3 does, and the
//! log-density of a squashed sample carries the change of variables
//! `−Σ ln(1 − tanh(u)² + 1e-6)` (SB3's `TanhBijector`). Sampling is
//! reparameterised: the caller hands in the standard normal draws `ε`, so
//! `u = μ + σ·ε` is differentiable in the parameters and a seeded generator
//! decides the draws. Like [`crate::Actor`] it knows nothing of the
//! environment's bounds.

use burn::config::Config;
use burn::module::Module;
use burn::tensor::{Device, Tensor};

use crate::{Activation, Mlp, MlpConfig, rows_to_tensor};

/// Smallest log standard deviation (Stable-Baselines3's `LOG_STD_MIN`).
pub const LOG_STD_MIN: f32 = -20.0;
/// Largest log standard deviation (Stable-Baselines3's `LOG_STD_MAX`).
pub const LOG_STD_MAX: f32 = 2.0;
/// Keeps `ln(1 − tanh(u)²)` finite where `tanh(u)` rounds to ±1 (SB3's epsilon).
pub const TANH_LOG_EPS: f32 = 1e-6;

/// Shape of a [`GaussianActor`].
///
/// ```
/// use shoal_rl_policy::{GaussianActorConfig, default_device};
/// let device = default_device();
/// let actor = GaussianActorConfig::new(3, 2).with_hidden(vec![16]).init(1, &device);
/// let mean_action = actor.act(&[0.1, 0.2, 0.3], &device);
/// let drawn = actor.sample_row(&[0.1, 0.2, 0.3], &[0.5, -1.0], &device);
/// assert!(mean_action.iter().chain(&drawn).all(|a| (-1.0..=1.0).contains(a)));
/// ```
#[derive(Config, Debug)]
pub struct GaussianActorConfig {
    /// Input features (for goal tasks: observation ‖ goal).
    pub input_dim: usize,
    /// Action components.
    pub act_dim: usize,
    /// Hidden layer widths. Default `[256, 256, 256]` (as [`crate::ActorConfig`]).
    #[config(default = "vec![256, 256, 256]")]
    pub hidden: Vec<usize>,
}

impl GaussianActorConfig {
    /// Builds the network with parameters drawn from `seed` (see [`crate::canonicalise`]).
    pub fn init(&self, seed: u64, device: &Device) -> GaussianActor {
        let mlp = MlpConfig::new(self.input_dim, self.hidden.clone(), 2 * self.act_dim)
            .init_with(Activation::Relu, device);
        crate::canonicalise(
            GaussianActor {
                mlp,
                act_dim: self.act_dim,
            },
            seed,
        )
    }
}

/// Maps an input to a squashed Gaussian over actions in `[-1, 1]ⁿ`.
#[derive(Module, Debug)]
pub struct GaussianActor {
    mlp: Mlp,
    #[module(skip)]
    act_dim: usize,
}

impl GaussianActor {
    /// Mean and clamped log standard deviation of `u`, each `[batch, act_dim]`.
    pub fn forward(&self, input: Tensor<2>) -> (Tensor<2>, Tensor<2>) {
        let out = self.mlp.forward(input);
        let mean = out.clone().narrow(1, 0, self.act_dim);
        let log_std = out
            .narrow(1, self.act_dim, self.act_dim)
            .clamp(LOG_STD_MIN, LOG_STD_MAX);
        (mean, log_std)
    }

    /// The reparameterised sample `a = tanh(μ + σ·ε)` for standard normal
    /// draws `noise` (`[batch, act_dim]`), and its log-density
    /// `Σ (−ε²/2 − ln σ − ln(2π)/2) − Σ ln(1 − a² + 1e-6)` (`[batch, 1]`).
    /// Both are differentiable in the parameters.
    pub fn sample(&self, input: Tensor<2>, noise: Tensor<2>) -> (Tensor<2>, Tensor<2>) {
        let (mean, log_std) = self.forward(input);
        let action = (mean + log_std.clone().exp() * noise.clone()).tanh();
        let half_ln_two_pi = 0.5 * (2.0 * std::f32::consts::PI).ln();
        let gaussian = (noise.square().mul_scalar(-0.5) - log_std).sub_scalar(half_ln_two_pi);
        let squash = action
            .clone()
            .square()
            .neg()
            .add_scalar(1.0 + TANH_LOG_EPS)
            .log();
        let log_prob = (gaussian - squash).sum_dim(1);
        (action, log_prob)
    }

    /// The deterministic action `tanh(μ)` for one input row (evaluation).
    pub fn act(&self, input: &[f32], device: &Device) -> Vec<f32> {
        let (mean, _) = self.forward(rows_to_tensor(input, input.len(), device));
        mean.tanh().into_data().try_to_vec().expect("f32 tensor")
    }

    /// A drawn action for one input row and its standard normal draws
    /// `noise` (`act_dim` of them): how the agent explores.
    pub fn sample_row(&self, input: &[f32], noise: &[f32], device: &Device) -> Vec<f32> {
        let (action, _) = self.sample(
            rows_to_tensor(input, input.len(), device),
            rows_to_tensor(noise, noise.len(), device),
        );
        action.into_data().try_to_vec().expect("f32 tensor")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{default_device, flatten};

    #[test]
    fn log_density_is_the_change_of_variables_of_a_gaussian_in_f64() {
        let device = default_device();
        let actor = GaussianActorConfig::new(2, 2)
            .with_hidden(vec![4])
            .init(3, &device);
        let params: Vec<f64> = flatten(&actor).iter().map(|&p| p as f64).collect();
        let (x, eps) = ([0.3f32, -0.8], [0.7f32, -1.9]);
        let (action, log_prob) = actor.sample(
            rows_to_tensor(&x, 2, &device),
            rows_to_tensor(&eps, 2, &device),
        );
        let action: Vec<f32> = action.into_data().try_to_vec().unwrap();
        let log_prob: Vec<f32> = log_prob.into_data().try_to_vec().unwrap();

        // By hand: the ReLU layer, then mean ‖ log_std, N(u; μ, σ²) and
        // the Jacobian of tanh.
        let (w1, rest) = params.split_at(2 * 4);
        let (b1, rest) = rest.split_at(4);
        let (w2, b2) = rest.split_at(4 * 4);
        let h: Vec<f64> = (0..4)
            .map(|j| (b1[j] + (0..2).map(|i| x[i] as f64 * w1[i * 4 + j]).sum::<f64>()).max(0.0))
            .collect();
        let out: Vec<f64> = (0..4)
            .map(|k| b2[k] + (0..4).map(|j| h[j] * w2[j * 4 + k]).sum::<f64>())
            .collect();
        let mut expected = 0.0;
        for c in 0..2 {
            let (mu, log_std) = (out[c], out[2 + c].clamp(-20.0, 2.0));
            let u = mu + log_std.exp() * eps[c] as f64;
            let a = u.tanh();
            assert!((action[c] as f64 - a).abs() < 1e-6, "{action:?}");
            let gaussian = -0.5 * ((u - mu) / log_std.exp()).powi(2)
                - log_std
                - 0.5 * (2.0 * std::f64::consts::PI).ln();
            expected += gaussian - (1.0 - a * a + 1e-6).ln();
        }
        assert!(
            (log_prob[0] as f64 - expected).abs() < 1e-5,
            "{} vs {expected}",
            log_prob[0]
        );
        // The deterministic action is tanh of the mean.
        let act = actor.act(&x, &device);
        assert!((act[0] as f64 - out[0].tanh()).abs() < 1e-6);
    }

    #[test]
    fn the_log_std_is_clamped_and_actions_stay_in_bounds() {
        let device = default_device();
        let actor = GaussianActorConfig::new(2, 3)
            .with_hidden(vec![8])
            .init(5, &device);
        for scale in [1.0f32, 1e4, -1e6] {
            let (_, log_std) = actor.forward(rows_to_tensor(&[scale, -scale], 2, &device));
            let log_std: Vec<f32> = log_std.into_data().try_to_vec().unwrap();
            assert!(
                log_std
                    .iter()
                    .all(|l| (LOG_STD_MIN..=LOG_STD_MAX).contains(l))
            );
            let drawn = actor.sample_row(&[scale, -scale], &[3.0, -3.0, 0.0], &device);
            assert!(drawn.iter().all(|a| (-1.0..=1.0).contains(a)), "{drawn:?}");
        }
    }
}
