//! shoal-rl-policy: the neural networks shoal agents are made of, on burn 0.22.
//!
//! * [`BetaPolicyNet`]: a Beta-distribution policy for bounded actions, with
//!   sampling ([`sample_unit`]), the mean action ([`mean_unit`]) and a frozen
//!   evaluation wrapper ([`FrozenBetaPolicy`]).
//! * [`Actor`] and [`Critic`]: the deterministic actor μ(s) (`tanh` output in
//!   `[-1, 1]`) and the action-value critic Q(s, a) of DDPG-style agents;
//!   [`GaussianActor`], SAC's squashed Gaussian actor (reparameterised
//!   samples with their log-density, `tanh` of the mean to evaluate).
//! * [`Normalizer`]: running mean/std with clipping whose statistics can be
//!   averaged across workers; [`GaussianNoise`] and [`OrnsteinUhlenbeckNoise`]
//!   for exploration ([`ActionNoise`], [`NoiseKind`]).
//! * [`MlpTape`]: a small MLP's forward and backward passes by hand on its
//!   flat parameters, for the hot loops of PPO, REINFORCE and HAC.
//! * [`Trained`]: a network and its Adam optimiser, stepped from flat gradients.
//! * [`lgamma`], [`digamma`], [`trigamma`] and the Beta log-density and
//!   entropy with their analytic gradients — burn has none of these.
//! * [`flatten`], [`unflatten`], [`flatten_grads`], [`grads_from_flat`]:
//!   parameters and gradients as flat `f32` vectors for parallel training and
//!   checkpoints, and [`canonicalise`] for seeded, portable initialisation.
//!
//! Networks run on burn's pure-Rust `Flex` CPU backend ([`default_device`]);
//! training wraps it with autodiff ([`training_device`]).
//!
//! ```
//! use shoal_rl_policy::{BetaPolicyConfig, mean_unit, training_device};
//! let device = training_device();
//! let net = BetaPolicyConfig::new(3, 2).init(7, &device);
//! let (alpha, beta) = net.distribution(&[0.1, -0.2, 0.3], &device);
//! let action = mean_unit(&alpha, &beta);
//! assert!(action.iter().all(|a| *a > 0.0 && *a < 1.0));
//! // Same seed, same network.
//! let again = BetaPolicyConfig::new(3, 2).init(7, &device);
//! assert_eq!(shoal_rl_policy::flatten(&net), shoal_rl_policy::flatten(&again));
//! ```
#![deny(missing_docs)]

mod actor;
mod beta;
mod critic;
mod dense;
mod gaussian_actor;
mod mlp;
mod noise;
mod normalizer;
mod params;
mod special;
mod trained;

use burn::tensor::{Device, Tensor, TensorData};

pub use actor::{Actor, ActorConfig};
pub use beta::{
    BetaPolicyConfig, BetaPolicyNet, FrozenBetaPolicy, UNIT_EPS, beta_parameter, mean_unit,
    sample_unit,
};
pub use critic::{Critic, CriticConfig, critic_head};
pub use dense::{MlpShape, MlpTape, fast_tanh, fast_tanh_in_place};
pub use gaussian_actor::{
    GaussianActor, GaussianActorConfig, LOG_STD_MAX, LOG_STD_MIN, SquashedSample, TANH_LOG_EPS,
};
pub use mlp::{Activation, Mlp, MlpConfig};
pub use noise::{ActionNoise, GaussianNoise, NoiseKind, OrnsteinUhlenbeckNoise};
pub use normalizer::{GoalNormalizer, Normalizer};
pub use params::{canonicalise, flatten, flatten_grads, grads_from_flat, unflatten};
pub use special::{
    BetaTerms, beta_entropy, beta_entropy_grad, beta_log_prob, beta_log_prob_grad, digamma, lgamma,
    ln_beta, trigamma,
};
pub use trained::Trained;

/// burn's pure-Rust CPU device, for acting and evaluation.
pub fn default_device() -> Device {
    Device::flex()
}

/// The CPU device with autodiff, for training.
pub fn training_device() -> Device {
    Device::flex().autodiff()
}

/// The matrix kernels this build runs on this CPU: `"avx512"`, `"avx2-fma"`,
/// `"scalar"` (x86-64) or the target architecture's name.
///
/// A seed gives the same records on two machines only where this is the same
/// (and, for products with an inner dimension above 512, where the L1 caches
/// block them alike: docs/getting-started.md). `"avx512"` needs the `avx512`
/// feature and a CPU with AVX-512F.
pub fn matmul_kernels() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if cfg!(feature = "avx512") && std::arch::is_x86_feature_detected!("avx512f") {
            "avx512"
        } else if std::arch::is_x86_feature_detected!("fma") {
            "avx2-fma"
        } else {
            "scalar"
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        std::env::consts::ARCH
    }
}

/// A `[rows.len() / width, width]` tensor from row-major values.
pub fn rows_to_tensor(rows: &[f32], width: usize, device: &Device) -> Tensor<2> {
    Tensor::from_data(
        TensorData::new(rows.to_vec(), [rows.len() / width, width]),
        device,
    )
}

/// The README's example, compiled and run with the doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
