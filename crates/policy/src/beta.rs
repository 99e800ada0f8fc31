//! Beta-distribution policy for bounded continuous actions (Chou et al., 2017).
//!
//! Each action component is drawn from Beta(α, β) on (0, 1) and mapped
//! affinely onto the action space's bounds, so no probability mass is wasted
//! outside the bounds (unlike a clipped Gaussian). The network outputs
//! α = 1 + softplus(·) and β = 1 + softplus(·), which keeps the density
//! unimodal and finite at the bounds.

use burn::config::Config;
use burn::module::Module;
use burn::tensor::{Device, Tensor, activation};
use rand::Rng;
use rand_distr::{Beta, Distribution};
use shoal_rl_core::{Policy, Space};

use crate::{Activation, Mlp, MlpConfig, rows_to_tensor};

/// Samples are kept this far from 0 and 1 so that `ln x` and `ln(1 − x)` stay finite.
pub const UNIT_EPS: f64 = 1e-6;

/// Shape of a [`BetaPolicyNet`].
#[derive(Config, Debug)]
pub struct BetaPolicyConfig {
    /// Observation features.
    pub obs_dim: usize,
    /// Action components.
    pub act_dim: usize,
    /// Hidden layer widths.
    #[config(default = "vec![64, 64]")]
    pub hidden: Vec<usize>,
}

impl BetaPolicyConfig {
    /// Builds the network with parameters drawn from `seed` (see [`crate::canonicalise`]).
    pub fn init(&self, seed: u64, device: &Device) -> BetaPolicyNet {
        let mlp = MlpConfig::new(self.obs_dim, self.hidden.clone(), 2 * self.act_dim)
            .init_with(Activation::Tanh, device);
        crate::canonicalise(BetaPolicyNet { mlp }, seed)
    }
}

/// Maps observations to the (α, β) parameters of one Beta per action component.
#[derive(Module, Debug)]
pub struct BetaPolicyNet {
    mlp: Mlp,
}

impl BetaPolicyNet {
    /// # Shapes
    /// - obs `[batch, obs_dim]`
    /// - returns `(alpha, beta)`, each `[batch, act_dim]`, every entry > 1
    pub fn forward(&self, obs: Tensor<2>) -> (Tensor<2>, Tensor<2>) {
        let out = self.mlp.forward(obs);
        let [batch, width] = out.dims();
        let half = width / 2;
        let alpha = activation::softplus(out.clone().slice([0..batch, 0..half]), 1.0) + 1.0;
        let beta = activation::softplus(out.slice([0..batch, half..width]), 1.0) + 1.0;
        (alpha, beta)
    }

    /// The shape of its MLP, whose `2 · act_dim` outputs (the α half, then
    /// the β half) [`beta_parameter`] turns into α and β.
    pub fn shape(&self) -> crate::MlpShape {
        self.mlp.shape()
    }

    /// (α, β) for a single observation, as plain vectors.
    pub fn distribution(&self, obs: &[f32], device: &Device) -> (Vec<f32>, Vec<f32>) {
        let (alpha, beta) = self.forward(rows_to_tensor(obs, obs.len(), device));
        (
            alpha.into_data().try_to_vec().expect("f32"),
            beta.into_data().try_to_vec().expect("f32"),
        )
    }
}

/// `1 + softplus(z)`, a raw network output as α or β (always > 1), and its
/// derivative `sigmoid(z)`; softplus as burn computes it (`ln(1 + eˣ)`,
/// `x` itself above 20).
pub fn beta_parameter(z: f32) -> (f32, f32) {
    let softplus = if z > 20.0 { z } else { z.exp().ln_1p() };
    (1.0 + softplus, 1.0 / (1.0 + (-z).exp()))
}

/// Draws one unit-space action (each component in `[UNIT_EPS, 1 − UNIT_EPS]`).
pub fn sample_unit<R: Rng + ?Sized>(alpha: &[f32], beta: &[f32], rng: &mut R) -> Vec<f32> {
    alpha
        .iter()
        .zip(beta)
        .map(|(&a, &b)| {
            let dist = Beta::new(a as f64, b as f64).expect("alpha, beta > 1 by construction");
            dist.sample(rng).clamp(UNIT_EPS, 1.0 - UNIT_EPS) as f32
        })
        .collect()
}

/// The mean α / (α + β) of each component: the deterministic action used in evaluation.
pub fn mean_unit(alpha: &[f32], beta: &[f32]) -> Vec<f32> {
    alpha.iter().zip(beta).map(|(a, b)| a / (a + b)).collect()
}

/// A frozen Beta policy: acts with the distribution's mean, mapped onto `space`.
#[derive(Debug, Clone)]
pub struct FrozenBetaPolicy {
    net: BetaPolicyNet,
    space: Space,
    device: Device,
}

impl FrozenBetaPolicy {
    /// Freezes `net` (switching off autodiff) for acting in `space`.
    pub fn new(net: &BetaPolicyNet, space: Space) -> Self {
        let net = net.valid();
        let device = net
            .devices()
            .into_iter()
            .next()
            .unwrap_or_else(Device::flex);
        FrozenBetaPolicy { net, space, device }
    }
}

impl Policy for FrozenBetaPolicy {
    fn act(&self, obs: &[f32]) -> Vec<f32> {
        let (alpha, beta) = self.net.distribution(obs, &self.device);
        self.space.from_unit(&mean_unit(&alpha, &beta))
    }

    fn try_sample(&self, obs: &[f32], rng: &mut dyn Rng) -> shoal_rl_core::Result<Vec<f32>> {
        let (alpha, beta) = self.net.distribution(obs, &self.device);
        Ok(self.space.from_unit(&sample_unit(&alpha, &beta, rng)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{default_device, unflatten};

    fn softplus(x: f64) -> f64 {
        (1.0 + x.exp()).ln()
    }

    /// 1 observation → one tanh unit → 2 action components: parameters
    /// `[w0, b0, W1 (1×4), b1 (4)]`, outputs 0–1 for α, 2–3 for β.
    const PARAMS: [f32; 10] = [2.0, -0.25, 1.0, -1.0, 0.5, 3.0, 0.0, 0.2, -0.4, 0.1];

    /// The same network computed by hand in f64.
    fn by_hand(x: f64) -> ([f64; 2], [f64; 2]) {
        let p: Vec<f64> = PARAMS.iter().map(|v| *v as f64).collect();
        let h = (p[0] * x + p[1]).tanh();
        let out: Vec<f64> = (0..4).map(|k| h * p[2 + k] + p[6 + k]).collect();
        (
            [1.0 + softplus(out[0]), 1.0 + softplus(out[1])],
            [1.0 + softplus(out[2]), 1.0 + softplus(out[3])],
        )
    }

    fn known_net() -> BetaPolicyNet {
        let net = BetaPolicyConfig::new(1, 2)
            .with_hidden(vec![1])
            .init(0, &default_device());
        unflatten(net, &PARAMS).unwrap()
    }

    #[test]
    fn alpha_and_beta_are_one_plus_softplus_of_the_two_output_halves() {
        let net = known_net();
        let obs = [0.5f32, -1.5];
        let (alpha, beta) = net.forward(crate::rows_to_tensor(&obs, 1, &default_device()));
        assert_eq!(alpha.dims(), [2, 2]);
        let alpha: Vec<f32> = alpha.into_data().try_to_vec().unwrap();
        let beta: Vec<f32> = beta.into_data().try_to_vec().unwrap();
        for (row, x) in obs.iter().enumerate() {
            let (a, b) = by_hand(*x as f64);
            for k in 0..2 {
                assert!(
                    (alpha[2 * row + k] as f64 - a[k]).abs() < 1e-5,
                    "{alpha:?} vs {a:?}"
                );
                assert!(
                    (beta[2 * row + k] as f64 - b[k]).abs() < 1e-5,
                    "{beta:?} vs {b:?}"
                );
            }
        }
        let (a1, b1) = net.distribution(&[0.5], &default_device());
        assert_eq!((a1, b1), (alpha[..2].to_vec(), beta[..2].to_vec()));
    }

    #[test]
    fn the_frozen_policy_acts_with_the_mean_mapped_onto_the_bounds() {
        let space = Space::new(vec![-2.0, 0.0], vec![4.0, 10.0]);
        let policy = FrozenBetaPolicy::new(&known_net(), space);
        let (a, b) = by_hand(0.5);
        let action = policy.act(&[0.5]);
        let expected = [
            -2.0 + 6.0 * a[0] / (a[0] + b[0]),
            10.0 * a[1] / (a[1] + b[1]),
        ];
        for (got, want) in action.iter().zip(expected) {
            assert!(
                (*got as f64 - want).abs() < 1e-5,
                "{action:?} vs {expected:?}"
            );
        }
    }

    #[test]
    fn sampled_actions_follow_the_beta_within_the_bounds_and_repeat_by_seed() {
        let space = Space::new(vec![-2.0, 0.0], vec![4.0, 10.0]);
        let policy = FrozenBetaPolicy::new(&known_net(), space.clone());
        let (a, b) = by_hand(0.5);
        let draws = 20_000;
        let mut rng = shoal_rl_core::rng_from_seed(3);
        let mut sums = [0.0f64; 2];
        let mut squares = [0.0f64; 2];
        for _ in 0..draws {
            let action = policy.try_sample(&[0.5], &mut rng).unwrap();
            assert!(space.contains(&action), "{action:?}");
            for k in 0..2 {
                let unit = space.to_unit(&action)[k] as f64;
                sums[k] += unit;
                squares[k] += unit * unit;
            }
        }
        // The Beta's mean a/(a+b) and variance ab/((a+b)²(a+b+1)), within
        // 5 standard errors of the sample mean and variance.
        for k in 0..2 {
            let mean = a[k] / (a[k] + b[k]);
            let var = a[k] * b[k] / ((a[k] + b[k]).powi(2) * (a[k] + b[k] + 1.0));
            let sample_mean = sums[k] / draws as f64;
            let sample_var = squares[k] / draws as f64 - sample_mean * sample_mean;
            assert!(
                (sample_mean - mean).abs() < 5.0 * (var / draws as f64).sqrt(),
                "component {k}: mean {sample_mean} against {mean}"
            );
            assert!(
                (sample_var - var).abs() < 0.05 * var,
                "component {k}: variance {sample_var} against {var}"
            );
        }
        let again = |seed| {
            policy
                .try_sample(&[0.5], &mut shoal_rl_core::rng_from_seed(seed))
                .unwrap()
        };
        assert_eq!(again(9), again(9));
        assert_ne!(again(9), again(10));
    }

    #[test]
    fn beta_parameter_is_one_plus_softplus_with_its_derivative() {
        for z in [-30.0f32, -3.0, -0.5, 0.0, 0.7, 4.0, 19.0, 25.0] {
            let (value, slope) = beta_parameter(z);
            let exact = 1.0 + softplus(z as f64);
            assert!(
                (value as f64 - exact).abs() < 1e-6 * exact,
                "{z}: {value} against {exact}"
            );
            let h = 1e-3;
            let numeric = (softplus(z as f64 + h) - softplus(z as f64 - h)) / (2.0 * h);
            assert!(
                (slope as f64 - numeric).abs() < 1e-5,
                "{z}: {slope} against {numeric}"
            );
        }
    }

    #[test]
    fn mean_unit_is_alpha_over_alpha_plus_beta() {
        assert_eq!(
            mean_unit(&[2.0, 1.0, 3.0], &[6.0, 1.0, 1.0]),
            [0.25, 0.5, 0.75]
        );
    }

    #[test]
    fn samples_follow_the_beta_distribution_and_stay_inside_the_clamp() {
        let mut rng = shoal_rl_core::rng_from_seed(11);
        let draws: Vec<f64> = (0..20_000)
            .map(|_| sample_unit(&[2.0], &[5.0], &mut rng)[0] as f64)
            .collect();
        let n = draws.len() as f64;
        let mean = draws.iter().sum::<f64>() / n;
        let var = draws.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
        // Beta(2, 5): mean 2/7, variance 2·5 / (7² · 8); standard errors
        // 0.0011 and about 0.0002 at this sample size.
        assert!((mean - 2.0 / 7.0).abs() < 0.006, "mean {mean}");
        assert!((var - 10.0 / 392.0).abs() < 0.0015, "variance {var}");
        // Nearly all the mass of Beta(1, 1e7) lies below UNIT_EPS, of
        // Beta(1e7, 1) above 1 − UNIT_EPS: both are clamped, never 0 or 1.
        let low = sample_unit(&[1.0; 64], &[1e7; 64], &mut rng);
        assert!(low.iter().all(|x| *x == UNIT_EPS as f32), "{low:?}");
        let high = sample_unit(&[1e7; 64], &[1.0; 64], &mut rng);
        assert!(
            high.iter().all(|x| *x == (1.0 - UNIT_EPS) as f32),
            "{high:?}"
        );
    }
}
