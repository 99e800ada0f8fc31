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
use shoal_core::{Policy, Space};

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

    /// (α, β) for a single observation, as plain vectors.
    pub fn distribution(&self, obs: &[f32], device: &Device) -> (Vec<f32>, Vec<f32>) {
        let (alpha, beta) = self.forward(rows_to_tensor(obs, obs.len(), device));
        (
            alpha.into_data().try_to_vec().expect("f32"),
            beta.into_data().try_to_vec().expect("f32"),
        )
    }
}

/// Draws one unit-space action (each component in `[UNIT_EPS, 1 − UNIT_EPS]`).
pub fn sample_unit(alpha: &[f32], beta: &[f32], rng: &mut impl Rng) -> Vec<f32> {
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
}
