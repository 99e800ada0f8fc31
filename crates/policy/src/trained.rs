//! A network paired with its Adam optimiser, updated from flat gradients.
//!
//! Every learner in shoal trains this way: backward pass → flat gradient →
//! (optionally averaged across workers) → global-norm clipping → Adam step. Going
//! through the flat vector even on one worker keeps a single code path, so the
//! single-worker and the gradient-parallel runs execute the same arithmetic.

use burn::module::Module;
use burn::optim::{AdamConfig, GradientsParams, ModuleOptimizer};
use burn::tensor::Bytes;
use burn::tensor::Gradients;
use serde::{Deserialize, Serialize};
use shoal_rl_core::{Error, Result};

use crate::{flatten, flatten_grads, grads_from_flat, unflatten};

/// A trainable network and its optimiser state.
#[derive(Clone)]
pub struct Trained<M> {
    /// The network, on an autodiff device.
    pub module: M,
    optim: ModuleOptimizer,
    /// Adam step size.
    pub learning_rate: f64,
    /// Global L2 norm the gradient is clipped to before a step (`None`: no clipping).
    pub max_grad_norm: Option<f64>,
}

/// Serialised form of a [`Trained`]: parameters and Adam moments.
#[derive(Serialize, Deserialize)]
struct TrainedState {
    params: Vec<f32>,
    optim: Vec<u8>,
}

impl<M: Module> Trained<M> {
    /// Wraps `module` with Adam (β₁ 0.9, β₂ 0.999, ε 1e-8, as in PyTorch).
    pub fn adam(module: M, learning_rate: f64, max_grad_norm: Option<f64>) -> Self {
        let optim = AdamConfig::new().with_epsilon(1e-8).init();
        Trained {
            module,
            optim,
            learning_rate,
            max_grad_norm,
        }
    }

    /// Takes this network's gradients out of a backward pass, flattened.
    pub fn take_grads(&self, grads: &mut Gradients) -> Vec<f32> {
        flatten_grads(
            &self.module,
            &GradientsParams::from_module(grads, &self.module),
        )
    }

    /// Clips `flat_grads` to `max_grad_norm` and takes one Adam step.
    /// Returns the gradient norm before clipping.
    pub fn step(&mut self, flat_grads: &mut [f32]) -> Result<f64> {
        let norm = flat_grads
            .iter()
            .map(|g| (*g as f64).powi(2))
            .sum::<f64>()
            .sqrt();
        if !norm.is_finite() {
            return Err(Error::Shape(format!(
                "gradient norm is {norm}; refusing to step"
            )));
        }
        if let Some(max) = self.max_grad_norm
            && norm > max
        {
            let scale = (max / norm) as f32;
            flat_grads.iter_mut().for_each(|g| *g *= scale);
        }
        let grads = grads_from_flat(&self.module, flat_grads)?;
        self.module = self
            .optim
            .step(self.learning_rate, self.module.clone(), grads);
        Ok(norm)
    }

    /// Parameters, flattened.
    pub fn parameters(&self) -> Vec<f32> {
        flatten(&self.module)
    }

    /// Overwrites the parameters (not the optimiser state).
    pub fn set_parameters(&mut self, flat: &[f32]) -> Result<()> {
        self.module = unflatten(self.module.clone(), flat)?;
        Ok(())
    }

    /// Parameters and optimiser state as bytes.
    pub fn save_state(&self) -> Vec<u8> {
        let optim = self
            .optim
            .into_bytes()
            .map(|b| b.to_vec())
            .unwrap_or_default();
        postcard::to_stdvec(&TrainedState {
            params: self.parameters(),
            optim,
        })
        .expect("serialising plain vectors cannot fail")
    }

    /// Restores [`Trained::save_state`] output; on error `self` is unchanged.
    pub fn load_state(&mut self, bytes: &[u8]) -> Result<()> {
        let state: TrainedState = postcard::from_bytes(bytes)
            .map_err(|e| Error::Shape(format!("network state is unreadable: {e}")))?;
        let module = unflatten(self.module.clone(), &state.params)?;
        let optim = self
            .optim
            .clone()
            .from_bytes(Bytes::from_bytes_vec(state.optim))
            .map_err(|e| Error::Shape(format!("optimiser state is unreadable: {e:?}")))?;
        self.module = module;
        self.optim = optim;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Activation, MlpConfig, training_device};

    /// Adam (β₁ 0.9, β₂ 0.999, ε 1e-8, bias-corrected, as in the paper) in
    /// f64 over a sequence of gradients, each clipped to global norm
    /// `clip` first.
    fn adam_by_hand(start: &[f64], grads: &[Vec<f64>], lr: f64, clip: Option<f64>) -> Vec<f64> {
        let (mut theta, mut m, mut v) = (
            start.to_vec(),
            vec![0.0; start.len()],
            vec![0.0; start.len()],
        );
        for (t, g) in grads.iter().enumerate() {
            let norm = g.iter().map(|x| x * x).sum::<f64>().sqrt();
            let scale = clip.map_or(1.0, |c| if norm > c { c / norm } else { 1.0 });
            let t = (t + 1) as i32;
            for i in 0..theta.len() {
                let g = g[i] * scale;
                m[i] = 0.9 * m[i] + 0.1 * g;
                v[i] = 0.999 * v[i] + 0.001 * g * g;
                let (m_hat, v_hat) = (
                    m[i] / (1.0 - 0.9f64.powi(t)),
                    v[i] / (1.0 - 0.999f64.powi(t)),
                );
                theta[i] -= lr * m_hat / (v_hat.sqrt() + 1e-8);
            }
        }
        theta
    }

    #[test]
    fn gradients_above_the_limit_enter_adam_at_the_limit() {
        // A first gradient of norm 100 and a second of norm 0.1 under a
        // limit of 0.5: only clipping to exactly 0.5 gives the second
        // step Adam takes (the first step alone would not tell: Adam's
        // first step is the same for any positive multiple of a gradient).
        let net = MlpConfig::new(2, vec![], 1).init_with(Activation::Tanh, &training_device());
        let mut trained = Trained::adam(net, 1e-2, Some(0.5));
        let start: Vec<f64> = trained.parameters().iter().map(|p| *p as f64).collect();
        assert_eq!(start.len(), 3, "two weights and a bias");
        let grads = vec![vec![60.0, -80.0, 0.0], vec![0.06, 0.0, 0.08]];
        let mut first: Vec<f32> = grads[0].iter().map(|g| *g as f32).collect();
        assert_eq!(
            trained.step(&mut first).unwrap(),
            100.0,
            "the norm before clipping"
        );
        let clipped_norm = first
            .iter()
            .map(|g| (*g as f64).powi(2))
            .sum::<f64>()
            .sqrt();
        assert!(
            (clipped_norm - 0.5).abs() < 1e-6,
            "clipped to {clipped_norm}"
        );
        let mut second: Vec<f32> = grads[1].iter().map(|g| *g as f32).collect();
        trained.step(&mut second).unwrap();
        let after = trained.parameters();
        let clipped = adam_by_hand(&start, &grads, 1e-2, Some(0.5));
        let unclipped = adam_by_hand(&start, &grads, 1e-2, None);
        for i in 0..3 {
            assert!(
                (after[i] as f64 - clipped[i]).abs() < 1e-6,
                "{after:?} vs {clipped:?}"
            );
        }
        let apart = (0..3)
            .map(|i| (clipped[i] - unclipped[i]).abs())
            .fold(0.0, f64::max);
        assert!(apart > 1e-3, "the limit changes the second step ({apart})");
    }
}
