//! A network paired with its Adam optimiser, updated from flat gradients.
//!
//! Every learner in shoal trains this way: backward pass → flat gradient →
//! (optionally averaged across workers) → global-norm clipping → Adam step. Going
//! through the flat vector even on one worker keeps a single code path, so the
//! single-worker and the gradient-parallel runs execute the same arithmetic.
//!
//! The parameters live as one flat vector, and Adam runs over it in one
//! loop: burn's `Adam` arithmetic operation for operation (so a step gives
//! the same values as burn's optimiser), without its dozen tensor
//! operations per parameter tensor. The optimiser state is saved in burn's
//! own format, so states written before and after load alike.

use burn::module::{Module, ModuleVisitor, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::Gradients;
use burn::tensor::{Bytes, DType, Tensor};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use shoal_rl_core::{Error, Result};

use crate::{flatten, flatten_grads, unflatten};

/// Adam's decay rates and ε (PyTorch's defaults).
const BETA_1: f32 = 0.9;
const BETA_2: f32 = 0.999;
const EPSILON: f32 = 1e-8;

/// A trainable network and its optimiser state.
#[derive(Clone)]
pub struct Trained<M> {
    /// The network's structure (parameter ids, shapes, device); its values
    /// are those of `module`'s last refresh, or older.
    template: M,
    /// The network with `params`, made from `template` when first asked
    /// for after a step: learners that run their passes on the flat
    /// parameters never pay for it.
    module: OnceLock<M>,
    params: Vec<f32>,
    adam: AdamMoments,
    /// Adam step size.
    pub learning_rate: f64,
    /// Global L2 norm the gradient is clipped to before a step (`None`: no clipping).
    pub max_grad_norm: Option<f64>,
}

/// Serialised form of a [`Trained`]: parameters and Adam moments (the
/// moments as burn's optimiser records them).
#[derive(Serialize, Deserialize)]
struct TrainedState {
    params: Vec<f32>,
    optim: Vec<u8>,
}

impl<M: Module> Trained<M> {
    /// Wraps `module` with Adam (β₁ 0.9, β₂ 0.999, ε 1e-8, as in PyTorch).
    pub fn adam(module: M, learning_rate: f64, max_grad_norm: Option<f64>) -> Self {
        let params = flatten(&module);
        Trained {
            template: module.clone(),
            module: OnceLock::from(module),
            params,
            adam: AdamMoments::default(),
            learning_rate,
            max_grad_norm,
        }
    }

    /// The network, on an autodiff device, with the current parameters.
    pub fn module(&self) -> &M {
        self.module.get_or_init(|| {
            unflatten(self.template.clone(), &self.params)
                .expect("the parameters were checked against this network")
        })
    }

    /// The current parameters, flat (in [`crate::flatten`]'s order).
    pub fn params(&self) -> &[f32] {
        &self.params
    }

    /// Takes this network's gradients out of a backward pass, flattened.
    pub fn take_grads(&self, grads: &mut Gradients) -> Vec<f32> {
        flatten_grads(
            self.module(),
            &GradientsParams::from_module(grads, self.module()),
        )
    }

    /// Clips `flat_grads` to `max_grad_norm` and takes one Adam step.
    /// Returns the gradient norm before clipping.
    pub fn step(&mut self, flat_grads: &mut [f32]) -> Result<f64> {
        if flat_grads.len() != self.params.len() {
            return Err(Error::Shape(format!(
                "gradient vector has {} values, the network has {}",
                flat_grads.len(),
                self.params.len()
            )));
        }
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
        self.adam
            .step(&mut self.params, flat_grads, self.learning_rate);
        self.module = OnceLock::new();
        Ok(norm)
    }

    /// Parameters, flattened.
    pub fn parameters(&self) -> Vec<f32> {
        self.params.clone()
    }

    /// Overwrites the parameters (not the optimiser state).
    pub fn set_parameters(&mut self, flat: &[f32]) -> Result<()> {
        let module = unflatten(self.template.clone(), flat)?;
        self.module = OnceLock::from(module);
        self.params = flat.to_vec();
        Ok(())
    }

    /// Parameters and optimiser state as bytes.
    pub fn save_state(&self) -> Vec<u8> {
        let optim = self
            .adam
            .to_burn_record(&param_layout(&self.template))
            .unwrap_or_default();
        postcard::to_stdvec(&TrainedState {
            params: self.params.clone(),
            optim,
        })
        .expect("serialising plain vectors cannot fail")
    }

    /// Restores [`Trained::save_state`] output; on error `self` is unchanged.
    pub fn load_state(&mut self, bytes: &[u8]) -> Result<()> {
        let state: TrainedState = postcard::from_bytes(bytes)
            .map_err(|e| Error::Shape(format!("network state is unreadable: {e}")))?;
        let module = unflatten(self.template.clone(), &state.params)?;
        let adam = AdamMoments::from_burn_record(&state.optim, &param_layout(&self.template))?;
        self.module = OnceLock::from(module);
        self.params = state.params;
        self.adam = adam;
        Ok(())
    }
}

/// Each parameter tensor's id and shape, in [`crate::flatten`]'s order.
fn param_layout<M: Module>(module: &M) -> Vec<(ParamId, Vec<usize>)> {
    struct Layout(Vec<(ParamId, Vec<usize>)>);
    impl ModuleVisitor for Layout {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            self.0.push((param.id, param.shape().dims::<D>().to_vec()));
        }
    }
    let mut layout = Layout(Vec::new());
    module.visit(&mut layout);
    layout.0
}

/// Adam's step count and moment estimates over a flat parameter vector
/// (empty before the first step).
#[derive(Clone, Debug, Default, PartialEq)]
struct AdamMoments {
    time: usize,
    first: Vec<f32>,
    second: Vec<f32>,
}

/// `x`, or 0 where it is subnormal.
///
/// A moment whose gradient stays 0 (a dead ReLU's weights) decays by β
/// each step until it is subnormal, and there it stays: `0.9 · 4·2⁻¹⁴⁹`
/// rounds back to `4·2⁻¹⁴⁹`, so it never reaches 0. Arithmetic on subnormals
/// takes a slow path on x86 CPUs (about 25× here), and a third of SAC's
/// actor moments sat there, making Adam's step 9× slower than its memory
/// traffic (docs/experiments/mujoco-sac.md). Flushing them is exact
/// arithmetic, the same on every CPU, and moves no parameter: such a
/// moment's step, below 10⁻³⁷, is under half an ulp of any weight.
fn flush_subnormal(x: f32) -> f32 {
    if x.abs() < f32::MIN_POSITIVE { 0.0 } else { x }
}

/// Names of a parameter's Adam entries in burn's optimiser record.
const RECORD_TIME: &str = "momentum.time";
const RECORD_FIRST: &str = "momentum.moment_1";
const RECORD_SECOND: &str = "momentum.moment_2";
const RECORD_RANK: &str = "__rank";

impl AdamMoments {
    /// One step of burn's `Adam` (bias-corrected, ε scaled as PyTorch's):
    /// `m ← β₁m + (1−β₁)g`, `v ← β₂v + (1−β₂)g²`, `θ ← θ − lr · c·m / (√v + ε·√(1−β₂ᵗ))`
    /// with `c = √(1−β₂ᵗ) / (1−β₁ᵗ)`, each operation rounded as burn rounds it,
    /// but for a moment that falls below f32's smallest normal: 0 here
    /// ([`flush_subnormal`]), a subnormal in burn.
    fn step(&mut self, params: &mut [f32], grad: &[f32], learning_rate: f64) {
        if self.time == 0 {
            self.first = vec![0.0; params.len()];
            self.second = vec![0.0; params.len()];
        }
        self.time += 1;
        let time = self.time as i32;
        let correction_2 = (1.0 - BETA_2.powi(time)).sqrt();
        let factor = correction_2 / (1.0 - BETA_1.powi(time));
        let epsilon = EPSILON * correction_2;
        let learning_rate = learning_rate as f32;
        let (keep_1, keep_2) = (1.0 - BETA_1, 1.0 - BETA_2);
        for (((p, g), m), v) in params
            .iter_mut()
            .zip(grad)
            .zip(&mut self.first)
            .zip(&mut self.second)
        {
            *m = flush_subnormal(*m * BETA_1 + *g * keep_1);
            *v = flush_subnormal(*v * BETA_2 + (*g * *g) * keep_2);
            let update = (*m * factor) / (v.sqrt() + epsilon);
            *p -= update * learning_rate;
        }
    }

    /// The moments as burn's `ModuleOptimizer` records them: per parameter
    /// tensor (named by its id) the step count, both moments and the rank.
    fn to_burn_record(&self, layout: &[(ParamId, Vec<usize>)]) -> Option<Vec<u8>> {
        let mut tensors = Vec::new();
        let mut writer_scalars = Vec::new();
        if self.time > 0 {
            let mut offset = 0;
            for (id, shape) in layout {
                let n: usize = shape.iter().product();
                let prefix = id.val().to_string();
                for (name, values) in [
                    (RECORD_FIRST, &self.first[offset..offset + n]),
                    (RECORD_SECOND, &self.second[offset..offset + n]),
                ] {
                    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
                    tensors.push(burn_pack::Tensor::new(
                        format!("{prefix}.{name}"),
                        DType::F32,
                        shape.clone(),
                        Some(id.val()),
                        Bytes::from_bytes_vec(bytes),
                    ));
                }
                writer_scalars.push((
                    format!("{prefix}.{RECORD_TIME}"),
                    burn_pack::Scalar::from(self.time),
                ));
                writer_scalars.push((
                    format!("{prefix}.{RECORD_RANK}"),
                    burn_pack::Scalar::from(shape.len()),
                ));
                offset += n;
            }
        }
        let mut writer = burn_pack::Writer::new(tensors);
        for (key, value) in writer_scalars {
            writer = writer.with_scalar(&key, value);
        }
        writer.into_bytes().ok().map(|b| b.to_vec())
    }

    /// Reads [`AdamMoments::to_burn_record`]'s output, or burn's own.
    fn from_burn_record(bytes: &[u8], layout: &[(ParamId, Vec<usize>)]) -> Result<Self> {
        let unreadable = |e: String| Error::Shape(format!("optimiser state is unreadable: {e}"));
        if bytes.is_empty() {
            return Ok(AdamMoments::default());
        }
        let reader = burn_pack::Reader::from_bytes(Bytes::from_bytes_vec(bytes.to_vec()))
            .map_err(|e| unreadable(format!("{e:?}")))?;
        let scalars = reader.scalars().clone();
        let mut tensors = std::collections::BTreeMap::new();
        for tensor in reader
            .into_tensors()
            .map_err(|e| unreadable(format!("{e:?}")))?
        {
            let (name, dtype, _shape, _id, bytes) = tensor
                .into_parts()
                .map_err(|e| unreadable(format!("{e:?}")))?;
            if dtype != DType::F32 {
                return Err(unreadable(format!("{name} is {dtype:?}, not f32")));
            }
            tensors.insert(name, bytes);
        }
        if tensors.is_empty() {
            return Ok(AdamMoments::default());
        }
        let total: usize = layout
            .iter()
            .map(|(_, s)| s.iter().product::<usize>())
            .sum();
        let mut moments = AdamMoments {
            time: 0,
            first: Vec::with_capacity(total),
            second: Vec::with_capacity(total),
        };
        for (id, shape) in layout {
            let n: usize = shape.iter().product();
            let prefix = id.val().to_string();
            let time = scalars
                .get(&format!("{prefix}.{RECORD_TIME}"))
                .and_then(|t| usize::try_from(*t).ok())
                .ok_or_else(|| unreadable(format!("no step count for parameter {prefix}")))?;
            if moments.time != 0 && time != moments.time {
                return Err(unreadable(format!(
                    "parameter {prefix} took {time} steps, the others {}",
                    moments.time
                )));
            }
            moments.time = time;
            for (name, out) in [
                (RECORD_FIRST, &mut moments.first),
                (RECORD_SECOND, &mut moments.second),
            ] {
                let key = format!("{prefix}.{name}");
                let bytes = tensors
                    .get(&key)
                    .ok_or_else(|| unreadable(format!("no {key}")))?;
                if bytes.len() != 4 * n {
                    return Err(unreadable(format!(
                        "{key} has {} bytes, the parameter {n} values",
                        bytes.len()
                    )));
                }
                out.extend(
                    bytes
                        .chunks_exact(4)
                        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
                );
            }
        }
        Ok(moments)
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
    fn a_moment_whose_gradient_stays_zero_decays_to_zero_not_to_a_subnormal() {
        let mut adam = AdamMoments::default();
        let mut params = vec![0.5f32, -0.25];
        adam.step(&mut params, &[1.0, 0.0], 1e-3);
        let after_first = params.clone();
        for _ in 0..2_000 {
            adam.step(&mut params, &[0.0, 0.0], 1e-3);
        }
        // 0.1 · 0.9¹⁹⁹⁹ is far below f32's smallest normal (1.2e-38).
        assert_eq!(adam.first, [0.0, 0.0], "first moments");
        assert!(
            adam.second[0] > 0.0 && adam.second[0].is_normal(),
            "v still decaying"
        );
        assert_eq!(
            params[1], after_first[1],
            "a parameter with no gradient never moved"
        );
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

#[cfg(test)]
mod burn_adam_tests {
    use burn::optim::{AdamConfig, ModuleOptimizer};
    use burn::tensor::Bytes;

    use super::*;
    use crate::{Activation, Mlp, MlpConfig, grads_from_flat, training_device};

    fn net() -> Mlp {
        crate::canonicalise(
            MlpConfig::new(3, vec![5], 2).init_with(Activation::Tanh, &training_device()),
            4,
        )
    }

    fn burn_adam() -> ModuleOptimizer {
        AdamConfig::new().with_epsilon(1e-8).init()
    }

    /// Gradients of every size and sign, a different one per step.
    fn gradient(step: usize, len: usize) -> Vec<f32> {
        (0..len)
            .map(|i| ((i * 7 + step * 13) % 11) as f32 * 0.37 - 1.8 + 1e-3 * step as f32)
            .collect()
    }

    /// burn's own optimiser over the same gradients, the oracle.
    fn burn_steps(module: Mlp, optim: &mut ModuleOptimizer, steps: std::ops::Range<usize>) -> Mlp {
        let mut module = module;
        for step in steps {
            let grads = grads_from_flat(&module, &gradient(step, module.num_params())).unwrap();
            module = optim.step(3e-3, module, grads);
        }
        module
    }

    fn our_steps(trained: &mut Trained<Mlp>, steps: std::ops::Range<usize>) {
        for step in steps {
            trained
                .step(&mut gradient(step, trained.params().len()))
                .unwrap();
        }
    }

    #[test]
    fn adam_over_the_flat_vector_is_burns_adam_value_for_value() {
        let mut trained = Trained::adam(net(), 3e-3, None);
        our_steps(&mut trained, 0..25);
        let theirs = burn_steps(net(), &mut burn_adam(), 0..25);
        assert_eq!(trained.parameters(), flatten(&theirs));
        assert_eq!(flatten(trained.module()), flatten(&theirs));
    }

    #[test]
    fn burns_optimiser_resumes_from_our_saved_moments() {
        let mut trained = Trained::adam(net(), 3e-3, None);
        our_steps(&mut trained, 0..6);
        let state: TrainedState = postcard::from_bytes(&trained.save_state()).unwrap();
        let mut optim = burn_adam()
            .from_bytes(Bytes::from_bytes_vec(state.optim))
            .unwrap();
        let theirs = burn_steps(unflatten(net(), &state.params).unwrap(), &mut optim, 6..12);
        our_steps(&mut trained, 6..12);
        assert_eq!(trained.parameters(), flatten(&theirs));
    }

    #[test]
    fn we_resume_from_moments_burns_optimiser_saved() {
        // What every checkpoint written before the flat Adam holds.
        let mut optim = burn_adam();
        let module = burn_steps(net(), &mut optim, 0..6);
        let old_state = postcard::to_stdvec(&TrainedState {
            params: flatten(&module),
            optim: optim.into_bytes().unwrap().to_vec(),
        })
        .unwrap();
        let mut trained = Trained::adam(net(), 3e-3, None);
        trained.load_state(&old_state).unwrap();
        our_steps(&mut trained, 6..12);
        let theirs = burn_steps(module, &mut optim, 6..12);
        assert_eq!(trained.parameters(), flatten(&theirs));
    }

    #[test]
    fn a_state_saved_before_any_step_round_trips() {
        let trained = Trained::adam(net(), 3e-3, None);
        let mut again = Trained::adam(net(), 3e-3, None);
        again.load_state(&trained.save_state()).unwrap();
        assert_eq!(again.adam, AdamMoments::default());
    }

    #[test]
    fn damaged_optimiser_states_are_refused_and_change_nothing() {
        let mut trained = Trained::adam(net(), 3e-3, None);
        our_steps(&mut trained, 0..3);
        let before = (trained.parameters(), trained.adam.clone());
        let params = trained.parameters();
        let damaged = |optim: Vec<u8>| {
            postcard::to_stdvec(&TrainedState {
                params: params.clone(),
                optim,
            })
            .unwrap()
        };
        let good: TrainedState = postcard::from_bytes(&trained.save_state()).unwrap();
        let mut truncated = good.optim.clone();
        truncated.truncate(truncated.len() / 2);
        for bytes in [damaged(truncated), damaged(vec![7; 40])] {
            let error = trained.load_state(&bytes).unwrap_err().to_string();
            assert!(error.contains("optimiser state is unreadable"), "{error}");
        }
        // Moments of another network's size.
        let mut other = Trained::adam(
            MlpConfig::new(3, vec![6], 2).init_with(Activation::Tanh, &training_device()),
            3e-3,
            None,
        );
        our_steps(&mut other, 0..2);
        let other_state: TrainedState = postcard::from_bytes(&other.save_state()).unwrap();
        let error = trained
            .load_state(&damaged(other_state.optim))
            .unwrap_err()
            .to_string();
        assert!(error.contains("optimiser state is unreadable"), "{error}");
        assert_eq!((trained.parameters(), trained.adam.clone()), before);
    }
}
