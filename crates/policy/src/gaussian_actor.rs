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

    /// The shape of the MLP under the head, for running it by hand on the
    /// actor's flat parameters ([`crate::MlpTape`], then [`SquashedSample`]).
    pub fn shape(&self) -> crate::MlpShape {
        self.mlp.shape()
    }
}

/// [`GaussianActor::sample`] on flat rows, by hand, with its backward pass:
/// the squashed head on an MLP's output rows `μ ‖ raw log σ` that a
/// [`crate::MlpTape`] computed. The SAC update runs it without burn's
/// autodiff, which costs many times the arithmetic at these sizes
/// ([`crate::MlpTape`]'s reasons); the tests hold it to `sample`.
///
/// ```
/// use shoal_rl_policy::SquashedSample;
/// // One row, one action component: μ = 0.3, raw log σ = −1, ε = 0.5.
/// let sample = SquashedSample::new(&[0.3, -1.0], &[0.5], 1);
/// let u = 0.3 + (-1.0f32).exp() * 0.5;
/// assert!((sample.actions()[0] - u.tanh()).abs() < 1e-6);
/// // d(a)/d(μ) = 1 − a², d(a)/d(log σ) = (1 − a²)·σ·ε:
/// let d_out = sample.backward(&[1.0], &[0.0]);
/// let slope = 1.0 - u.tanh().powi(2);
/// assert!((d_out[0] - slope).abs() < 1e-6);
/// assert!((d_out[1] - slope * (-1.0f32).exp() * 0.5).abs() < 1e-6);
/// ```
#[derive(Clone, Debug)]
pub struct SquashedSample {
    act_dim: usize,
    /// `a = tanh(μ + σ·ε)`, rows × act_dim.
    actions: Vec<f32>,
    /// `log π(a|s)` per row.
    log_probs: Vec<f32>,
    /// `σ·ε` per component: ∂u/∂log σ.
    sigma_noise: Vec<f32>,
    /// Whether the raw log σ was inside the clamp (else its gradient is 0).
    unclamped: Vec<bool>,
}

impl SquashedSample {
    /// The sample for the output rows `out` (`rows × 2·act_dim`, each
    /// `μ ‖ raw log σ`) and the standard normal draws `noise`
    /// (`rows × act_dim`).
    ///
    /// # Panics
    /// If the lengths do not fit `act_dim`.
    pub fn new(out: &[f32], noise: &[f32], act_dim: usize) -> Self {
        assert!(act_dim > 0, "an action has components");
        assert_eq!(out.len() % (2 * act_dim), 0, "output rows are μ ‖ log σ");
        let rows = out.len() / (2 * act_dim);
        assert_eq!(noise.len(), rows * act_dim, "one draw per action component");
        let half_ln_two_pi = 0.5 * (2.0 * std::f32::consts::PI).ln();
        let mut sample = SquashedSample {
            act_dim,
            actions: Vec::with_capacity(rows * act_dim),
            log_probs: Vec::with_capacity(rows),
            sigma_noise: Vec::with_capacity(rows * act_dim),
            unclamped: Vec::with_capacity(rows * act_dim),
        };
        for (row, eps) in out
            .chunks_exact(2 * act_dim)
            .zip(noise.chunks_exact(act_dim))
        {
            let (mean, raw_log_std) = row.split_at(act_dim);
            let mut log_prob = 0.0f32;
            for ((&mu, &raw), &e) in mean.iter().zip(raw_log_std).zip(eps) {
                let log_std = raw.clamp(LOG_STD_MIN, LOG_STD_MAX);
                let sigma_noise = log_std.exp() * e;
                let a = (mu + sigma_noise).tanh();
                log_prob +=
                    -0.5 * e * e - log_std - half_ln_two_pi - (1.0 - a * a + TANH_LOG_EPS).ln();
                sample.actions.push(a);
                sample.sigma_noise.push(sigma_noise);
                sample
                    .unclamped
                    .push((LOG_STD_MIN..=LOG_STD_MAX).contains(&raw));
            }
            sample.log_probs.push(log_prob);
        }
        sample
    }

    /// The squashed actions, rows × act_dim, in `[-1, 1]`.
    pub fn actions(&self) -> &[f32] {
        &self.actions
    }

    /// `log π(a|s)` of each row's action.
    pub fn log_probs(&self) -> &[f32] {
        &self.log_probs
    }

    /// d loss / d output rows (`μ ‖ raw log σ`, as [`SquashedSample::new`]
    /// took them) for d loss / d action `d_actions` (rows × act_dim) and
    /// d loss / d log π `d_log_probs` (one per row), the draws held fixed.
    ///
    /// # Panics
    /// If the lengths do not fit the sample.
    pub fn backward(&self, d_actions: &[f32], d_log_probs: &[f32]) -> Vec<f32> {
        let act_dim = self.act_dim;
        assert_eq!(
            d_actions.len(),
            self.actions.len(),
            "one per action component"
        );
        assert_eq!(d_log_probs.len(), self.log_probs.len(), "one per row");
        let mut d_out = Vec::with_capacity(2 * self.actions.len());
        for (row, &d_log_prob) in d_log_probs.iter().enumerate() {
            let span = row * act_dim..(row + 1) * act_dim;
            // d loss / d u into the row's μ half; log π holds
            // −ln(1 − a² + ε) for each a, and −log σ.
            let mean_half = d_out.len();
            d_out.extend(
                self.actions[span.clone()]
                    .iter()
                    .zip(&d_actions[span.clone()])
                    .map(|(&a, &d_a)| {
                        let one_minus_a2 = 1.0 - a * a;
                        let d_a = d_a + d_log_prob * 2.0 * a / (one_minus_a2 + TANH_LOG_EPS);
                        d_a * one_minus_a2
                    }),
            );
            for j in 0..act_dim {
                let k = span.start + j;
                let d_u = d_out[mean_half + j];
                d_out.push(if self.unclamped[k] {
                    d_u * self.sigma_noise[k] - d_log_prob
                } else {
                    0.0
                });
            }
        }
        d_out
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

    /// The squashed head in f64 from the formula: actions and log π of
    /// the output rows `out` (μ ‖ raw log σ) and draws `eps`.
    fn head64(out: &[f64], eps: &[f64], act_dim: usize) -> (Vec<f64>, Vec<f64>) {
        let (mut actions, mut log_probs) = (Vec::new(), Vec::new());
        for (row, e) in out.chunks(2 * act_dim).zip(eps.chunks(act_dim)) {
            let mut log_prob = 0.0;
            for j in 0..act_dim {
                let log_std = row[act_dim + j].clamp(-20.0, 2.0);
                let u = row[j] + log_std.exp() * e[j];
                let a = u.tanh();
                let normal = -0.5 * ((u - row[j]) / log_std.exp()).powi(2)
                    - log_std
                    - 0.5 * (2.0 * std::f64::consts::PI).ln();
                log_prob += normal - (1.0 - a * a + 1e-6).ln();
                actions.push(a);
            }
            log_probs.push(log_prob);
        }
        (actions, log_probs)
    }

    #[test]
    fn the_hand_run_head_and_its_gradient_match_the_formula_in_f64() {
        let act_dim = 2;
        // Three rows; the last row's raw log σ lie outside [−20, 2].
        let out = [
            0.3f32, -0.7, -1.0, 0.4, //
            1.9, -2.5, 0.1, -3.0, //
            0.2, 0.5, 2.5, -25.0,
        ];
        let eps = [0.5f32, -1.2, 1.7, 0.3, -0.4, 2.2];
        let sample = SquashedSample::new(&out, &eps, act_dim);
        let out64: Vec<f64> = out.iter().map(|&v| v as f64).collect();
        let eps64: Vec<f64> = eps.iter().map(|&v| v as f64).collect();
        let (actions, log_probs) = head64(&out64, &eps64, act_dim);
        for (got, want) in sample.actions().iter().zip(&actions) {
            assert!((*got as f64 - want).abs() < 1e-6, "{got} vs {want}");
        }
        for (got, want) in sample.log_probs().iter().zip(&log_probs) {
            assert!(
                (*got as f64 - want).abs() < 1e-4 * (1.0 + want.abs()),
                "{got} vs {want}"
            );
        }
        // loss = Σ c·a + Σ d·log π, differentiated by central differences.
        let c = [0.9f64, -0.3, 0.2, 1.1, -0.6, 0.4];
        let d = [0.7f64, -0.2, 0.5];
        let loss = |out: &[f64]| {
            let (a, lp) = head64(out, &eps64, act_dim);
            a.iter().zip(&c).map(|(a, c)| a * c).sum::<f64>()
                + lp.iter().zip(&d).map(|(l, d)| l * d).sum::<f64>()
        };
        let c32: Vec<f32> = c.iter().map(|&v| v as f32).collect();
        let d32: Vec<f32> = d.iter().map(|&v| v as f32).collect();
        let d_out = sample.backward(&c32, &d32);
        for k in 0..out64.len() {
            let h = 1e-6;
            let (mut up, mut down) = (out64.clone(), out64.clone());
            up[k] += h;
            down[k] -= h;
            let numeric = (loss(&up) - loss(&down)) / (2.0 * h);
            assert!(
                (d_out[k] as f64 - numeric).abs() < 1e-4 * (1.0 + numeric.abs()),
                "d loss / d out[{k}]: {} against {numeric}",
                d_out[k]
            );
        }
        // The clamped log σ take no gradient.
        assert_eq!(&d_out[10..], &[0.0, 0.0]);
    }

    #[test]
    fn the_hand_run_head_draws_what_burn_draws() {
        let device = default_device();
        let actor = GaussianActorConfig::new(3, 2)
            .with_hidden(vec![8])
            .init(4, &device);
        let input = [0.2f32, -0.5, 0.9, 1.0, 0.0, -0.3];
        let noise = [0.4f32, -1.1, 0.0, 2.0];
        let (actions, log_probs) = actor.sample(
            rows_to_tensor(&input, 3, &device),
            rows_to_tensor(&noise, 2, &device),
        );
        let mut tape = crate::MlpTape::new(actor.shape());
        let out = tape.forward(&flatten(&actor), &input).to_vec();
        let sample = SquashedSample::new(&out, &noise, 2);
        let actions: Vec<f32> = actions.into_data().try_to_vec().unwrap();
        let log_probs: Vec<f32> = log_probs.into_data().try_to_vec().unwrap();
        for (got, want) in sample.actions().iter().zip(&actions) {
            assert!((got - want).abs() < 1e-6, "{got} vs {want}");
        }
        for (got, want) in sample.log_probs().iter().zip(&log_probs) {
            assert!(
                (got - want).abs() < 1e-4 * (1.0 + want.abs()),
                "{got} vs {want}"
            );
        }
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
