//! Exploration noise for deterministic actors: Gaussian and Ornstein–Uhlenbeck, each with its own seeded generator.
//!
//! Both produce noise in the actor's `[-1, 1]` action scale; the caller adds
//! it to the actor's output and clips.

use rand::rngs::StdRng;
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};
use shoal_rl_core::{Error, Result, rng_from_seed};

/// A source of additive exploration noise.
pub trait ActionNoise {
    /// The next noise vector.
    fn sample(&mut self) -> Vec<f32>;
    /// Starts a new episode: re-seeds the generator and clears any state.
    fn reset(&mut self, seed: u64);
}

/// Which [`ActionNoise`] an agent explores with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NoiseKind {
    /// Independent `N(0, σ²)` per step ([`GaussianNoise`]), as HER uses.
    #[default]
    Gaussian,
    /// Temporally correlated noise ([`OrnsteinUhlenbeckNoise`]), as the DDPG paper used.
    OrnsteinUhlenbeck,
}

impl NoiseKind {
    /// Noise of this kind with scale `sigma` over `dim` components, seeded with `seed`.
    pub fn build(self, dim: usize, sigma: f32, seed: u64) -> Result<Box<dyn ActionNoise + Send>> {
        Ok(match self {
            NoiseKind::Gaussian => Box::new(GaussianNoise::new(dim, sigma, seed)?),
            NoiseKind::OrnsteinUhlenbeck => {
                Box::new(OrnsteinUhlenbeckNoise::new(dim, sigma, seed)?)
            }
        })
    }
}

fn check_scale(name: &str, value: f32) -> Result<()> {
    if !(value.is_finite() && value >= 0.0) {
        return Err(Error::Config(format!(
            "{name} must be finite and non-negative, got {value}"
        )));
    }
    Ok(())
}

/// Independent Gaussian noise `N(0, std²)` per component and step.
///
/// ```
/// use shoal_rl_policy::{ActionNoise, GaussianNoise};
/// let mut a = GaussianNoise::new(3, 0.2, 7).unwrap();
/// let mut b = GaussianNoise::new(3, 0.2, 7).unwrap();
/// assert_eq!(a.sample(), b.sample());
/// ```
#[derive(Debug)]
pub struct GaussianNoise {
    dim: usize,
    std: f32,
    rng: StdRng,
}

impl GaussianNoise {
    /// Noise of standard deviation `std` over `dim` components.
    pub fn new(dim: usize, std: f32, seed: u64) -> Result<Self> {
        check_scale("noise std", std)?;
        Ok(GaussianNoise {
            dim,
            std,
            rng: rng_from_seed(seed),
        })
    }
}

impl ActionNoise for GaussianNoise {
    fn sample(&mut self) -> Vec<f32> {
        (0..self.dim)
            .map(|_| {
                let z: f32 = StandardNormal.sample(&mut self.rng);
                self.std * z
            })
            .collect()
    }

    fn reset(&mut self, seed: u64) {
        self.rng = rng_from_seed(seed);
    }
}

/// Ornstein–Uhlenbeck noise `dx = θ(μ − x)dt + σ√dt·N(0, 1)` with μ = 0,
/// θ = 0.15, dt = 0.01 (the values of the DDPG paper and OpenAI baselines);
/// the state starts at μ on every reset.
#[derive(Debug)]
pub struct OrnsteinUhlenbeckNoise {
    state: Vec<f32>,
    sigma: f32,
    /// Mean reversion rate θ. Default 0.15.
    pub theta: f32,
    /// Time step dt. Default 0.01.
    pub dt: f32,
    rng: StdRng,
}

impl OrnsteinUhlenbeckNoise {
    /// Noise of scale `sigma` over `dim` components.
    pub fn new(dim: usize, sigma: f32, seed: u64) -> Result<Self> {
        check_scale("noise sigma", sigma)?;
        Ok(OrnsteinUhlenbeckNoise {
            state: vec![0.0; dim],
            sigma,
            theta: 0.15,
            dt: 1e-2,
            rng: rng_from_seed(seed),
        })
    }
}

impl ActionNoise for OrnsteinUhlenbeckNoise {
    fn sample(&mut self) -> Vec<f32> {
        let diffusion = self.sigma * self.dt.sqrt();
        for x in &mut self.state {
            let z: f32 = StandardNormal.sample(&mut self.rng);
            *x += -self.theta * *x * self.dt + diffusion * z;
        }
        self.state.clone()
    }

    fn reset(&mut self, seed: u64) {
        self.rng = rng_from_seed(seed);
        self.state.iter_mut().for_each(|x| *x = 0.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moments(samples: &[f32]) -> (f64, f64) {
        let n = samples.len() as f64;
        let mean = samples.iter().map(|v| *v as f64).sum::<f64>() / n;
        let var = samples
            .iter()
            .map(|v| (*v as f64 - mean).powi(2))
            .sum::<f64>()
            / n;
        (mean, var.sqrt())
    }

    #[test]
    fn gaussian_noise_has_the_requested_scale() {
        let mut noise = GaussianNoise::new(4, 0.2, 1).unwrap();
        let samples: Vec<f32> = (0..5_000).flat_map(|_| noise.sample()).collect();
        let (mean, std) = moments(&samples);
        // 20 000 draws: the standard error of the mean is 0.0014.
        assert!(mean.abs() < 0.01, "mean {mean}");
        assert!((std - 0.2).abs() < 0.01, "std {std}");
    }

    #[test]
    fn reset_with_same_seed_replays_the_noise() {
        for kind in [NoiseKind::Gaussian, NoiseKind::OrnsteinUhlenbeck] {
            let mut noise = kind.build(2, 0.3, 5).unwrap();
            let first: Vec<Vec<f32>> = (0..3).map(|_| noise.sample()).collect();
            noise.reset(5);
            let again: Vec<Vec<f32>> = (0..3).map(|_| noise.sample()).collect();
            assert_eq!(first, again, "{kind:?}");
        }
    }

    #[test]
    fn ou_noise_is_correlated_in_time() {
        let mut noise = OrnsteinUhlenbeckNoise::new(1, 0.3, 2).unwrap();
        let xs: Vec<f32> = (0..5_000).map(|_| noise.sample()[0]).collect();
        let (mean, std) = moments(&xs);
        let lag1 = xs
            .windows(2)
            .map(|w| (w[0] as f64 - mean) * (w[1] as f64 - mean))
            .sum::<f64>()
            / ((xs.len() - 1) as f64 * std * std);
        assert!(lag1 > 0.9, "lag-1 autocorrelation {lag1}");
    }

    #[test]
    fn ou_noise_settles_at_the_processes_stationary_variance() {
        // x' = (1 − θ·dt)·x + σ·√dt·z has stationary variance
        // σ²·dt / (1 − (1 − θ·dt)²) = σ² / (2θ − θ²·dt): 0.3002 for σ 0.3,
        // θ 0.15, dt 0.01 (the continuous process's σ² / 2θ = 0.3). Its
        // correlation time is 1 / (θ·dt) ≈ 667 steps, so 64 components
        // after a burn-in give some 4 800 independent draws.
        let (sigma, theta, dt) = (0.3f64, 0.15f64, 0.01f64);
        let expected = sigma * sigma / (2.0 * theta - theta * theta * dt);
        let mut noise = OrnsteinUhlenbeckNoise::new(64, sigma as f32, 3).unwrap();
        for _ in 0..10_000 {
            noise.sample();
        }
        let (mut sum, mut sum_sq, mut n) = (0.0f64, 0.0f64, 0.0f64);
        for _ in 0..100_000 {
            for x in noise.sample() {
                sum += x as f64;
                sum_sq += (x as f64).powi(2);
                n += 1.0;
            }
        }
        let var = sum_sq / n - (sum / n).powi(2);
        assert!(
            (var / expected - 1.0).abs() < 0.06,
            "stationary variance {var:.4}, expected {expected:.4}"
        );
    }

    #[test]
    fn negative_or_nan_scale_is_an_error() {
        let message = |e: Error| match e {
            Error::Config(m) => m,
            other => panic!("expected a config error, got {other}"),
        };
        assert_eq!(
            message(GaussianNoise::new(1, -0.1, 0).unwrap_err()),
            "noise std must be finite and non-negative, got -0.1"
        );
        assert_eq!(
            message(OrnsteinUhlenbeckNoise::new(1, f32::NAN, 0).unwrap_err()),
            "noise sigma must be finite and non-negative, got NaN"
        );
        assert_eq!(
            message(
                NoiseKind::Gaussian
                    .build(1, f32::INFINITY, 0)
                    .err()
                    .unwrap()
            ),
            "noise std must be finite and non-negative, got inf"
        );
        // Zero is allowed: no exploration noise at all.
        assert_eq!(
            GaussianNoise::new(2, 0.0, 0).unwrap().sample(),
            vec![0.0, 0.0]
        );
    }
}
