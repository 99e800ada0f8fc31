//! A small MLP's forward and backward passes by hand, on its flat parameters.
//!
//! burn's autodiff records a graph node and allocates a tensor for every
//! operation, and its `tanh` calls libm once per element. For the 64×64
//! networks of PPO and HAC at a few dozen to a thousand rows that overhead
//! is many times the arithmetic (docs/benchmarks.md). [`MlpTape`] does the
//! same arithmetic with one matrix product per layer and direction (gemm,
//! the kernels burn's `Flex` backend calls), buffers kept across calls and a
//! `tanh` the compiler vectorises. Its gradients are held to burn's autodiff
//! on the same inputs in the tests below.
//!
//! Parameters are laid out as [`crate::flatten`] lays out an [`Mlp`]: per
//! layer its weight `[inputs, outputs]` row-major, then its bias.

use crate::{Activation, Mlp};

/// The layer widths and hidden activation of an [`Mlp`], all a [`MlpTape`]
/// needs to run it on flat parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MlpShape {
    /// Input width, each hidden width, output width.
    pub sizes: Vec<usize>,
    /// Activation after every layer but the last.
    pub activation: Activation,
}

impl MlpShape {
    /// Input features.
    pub fn input(&self) -> usize {
        self.sizes[0]
    }

    /// Output features.
    pub fn output(&self) -> usize {
        *self.sizes.last().expect("an MLP has an output layer")
    }

    /// Parameters in the flat vector: every layer's weights and biases.
    pub fn num_params(&self) -> usize {
        self.sizes.windows(2).map(|w| (w[0] + 1) * w[1]).sum()
    }
}

impl Mlp {
    /// This network's [`MlpShape`].
    pub fn shape(&self) -> MlpShape {
        MlpShape {
            sizes: self.sizes(),
            activation: self.activation(),
        }
    }
}

/// `tanh` by a [7/6] rational function on [−7.9, 7.9] (Eigen's
/// `generic_fast_tanh_float`: within 5e-7 of the exact value, a few f32
/// steps near ±1, where libm's `tanhf` is within 1e-7), ±1 beyond.
/// Branch-free and without fused multiply-adds, so a loop over a slice
/// vectorises on any x86-64 CPU and gives the same values on all of them;
/// libm's `tanhf` does neither.
#[inline(always)]
pub fn fast_tanh(x: f32) -> f32 {
    const CLAMP: f32 = 7.905_311;
    let x = x.clamp(-CLAMP, CLAMP);
    let x2 = x * x;
    let p = x2 * -2.760_768_6e-16 + 2.000_188e-13;
    let p = x2 * p + -8.604_672e-11;
    let p = x2 * p + 5.122_297e-8;
    let p = x2 * p + 1.485_722_4e-5;
    let p = x2 * p + 6.372_619_5e-4;
    let p = x2 * p + 4.893_524_6e-3;
    let q = x2 * 1.198_258_4e-6 + 1.185_347_1e-4;
    let q = x2 * q + 2.268_434_5e-3;
    let q = x2 * q + 4.893_525e-3;
    // Below 4e-4, tanh x = x to f32 precision (and the ratio loses it).
    if x.abs() < 4e-4 { x } else { x * p / q }
}

/// [`fast_tanh`] of every value in place; 8 lanes at a time on CPUs with
/// AVX2 (the same operations, so the same values as 4 lanes of SSE2).
pub fn fast_tanh_in_place(values: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        unsafe { fast_tanh_avx2(values) };
        return;
    }
    values.iter_mut().for_each(|v| *v = fast_tanh(*v));
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn fast_tanh_avx2(values: &mut [f32]) {
    values.iter_mut().for_each(|v| *v = fast_tanh(*v));
}

/// One forward pass's values, kept for the backward pass, and the buffers
/// both reuse.
///
/// ```
/// use shoal_rl_policy::{Activation, MlpConfig, MlpTape, default_device, flatten};
/// let net = MlpConfig::new(3, vec![8], 2).init_with(Activation::Tanh, &default_device());
/// let params = flatten(&net);
/// let mut tape = MlpTape::new(net.shape());
/// let out = tape.forward(&params, &[0.1, 0.2, 0.3, -1.0, 0.0, 1.0]).to_vec();
/// assert_eq!(out.len(), 2 * 2); // 2 rows, 2 outputs
/// // d(sum of outputs)/d(parameters):
/// let mut grad = vec![0.0; params.len()];
/// tape.backward(&params, &[1.0; 4], Some(&mut grad), None);
/// ```
#[derive(Clone, Debug)]
pub struct MlpTape {
    shape: MlpShape,
    rows: usize,
    /// `values[0]` the input, `values[l]` layer `l`'s output after its activation.
    values: Vec<Vec<f32>>,
    /// d(loss)/d(a layer's pre-activation output), and for its input.
    delta: Vec<f32>,
    delta_below: Vec<f32>,
}

impl MlpTape {
    /// An empty tape for networks of `shape`.
    pub fn new(shape: MlpShape) -> Self {
        let layers = shape.sizes.len();
        MlpTape {
            shape,
            rows: 0,
            values: vec![Vec::new(); layers],
            delta: Vec::new(),
            delta_below: Vec::new(),
        }
    }

    /// The shape this tape runs.
    pub fn shape(&self) -> &MlpShape {
        &self.shape
    }

    /// Rows of the last forward pass.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Runs the network on `input` (`rows × input` row-major) and returns
    /// its output (`rows × output`), keeping what [`MlpTape::backward`] needs.
    ///
    /// # Panics
    /// If `params` or `input` do not fit the shape.
    pub fn forward(&mut self, params: &[f32], input: &[f32]) -> &[f32] {
        let sizes = &self.shape.sizes;
        assert_eq!(params.len(), self.shape.num_params(), "parameter count");
        assert_eq!(input.len() % sizes[0], 0, "input width");
        let rows = input.len() / sizes[0];
        self.rows = rows;
        self.values[0].clear();
        self.values[0].extend_from_slice(input);
        let last = sizes.len() - 1;
        let mut offset = 0;
        for l in 1..=last {
            let (inputs, outputs) = (sizes[l - 1], sizes[l]);
            let weight = &params[offset..offset + inputs * outputs];
            let bias = &params[offset + inputs * outputs..offset + (inputs + 1) * outputs];
            offset += (inputs + 1) * outputs;
            let (below, above) = self.values.split_at_mut(l);
            let x = &below[l - 1];
            let y = &mut above[0];
            y.clear();
            y.resize(rows * outputs, 0.0);
            // SAFETY: x is rows × inputs, weight inputs × outputs and y
            // rows × outputs, all row-major and of exactly those lengths.
            unsafe {
                matmul(
                    rows, outputs, inputs, y, outputs, 1, x, inputs, 1, weight, outputs, 1,
                );
            }
            for row in y.chunks_exact_mut(outputs) {
                row.iter_mut().zip(bias).for_each(|(v, b)| *v += b);
            }
            if l < last {
                match self.shape.activation {
                    Activation::Tanh => fast_tanh_in_place(y),
                    Activation::Relu => y.iter_mut().for_each(|v| *v = v.max(0.0)),
                }
            }
        }
        &self.values[last]
    }

    /// The last forward pass's output.
    pub fn output(&self) -> &[f32] {
        self.values.last().expect("an MLP has an output layer")
    }

    /// Back-propagates `d_output` (d loss / d output, `rows × output`) of
    /// the last forward pass: writes d loss / d parameters into `grad` (same
    /// layout as `params`, overwritten) and d loss / d input into `d_input`
    /// (`rows × input`, overwritten), each if asked. Without `grad` the
    /// weight gradients' products are skipped (a network held fixed, as
    /// the critic under DDPG's actor loss).
    ///
    /// # Panics
    /// If the lengths do not fit the shape and the last forward pass.
    pub fn backward(
        &mut self,
        params: &[f32],
        d_output: &[f32],
        mut grad: Option<&mut [f32]>,
        d_input: Option<&mut [f32]>,
    ) {
        let sizes = &self.shape.sizes;
        let rows = self.rows;
        let last = sizes.len() - 1;
        assert_eq!(params.len(), self.shape.num_params(), "parameter count");
        if let Some(grad) = &grad {
            assert_eq!(grad.len(), params.len(), "gradient length");
        }
        assert_eq!(d_output.len(), rows * sizes[last], "output gradient length");
        self.delta.clear();
        self.delta.extend_from_slice(d_output);
        let mut end = params.len();
        let mut d_input = d_input;
        for l in (1..=last).rev() {
            let (inputs, outputs) = (sizes[l - 1], sizes[l]);
            let start = end - (inputs + 1) * outputs;
            let weight = &params[start..start + inputs * outputs];
            let x = &self.values[l - 1];
            if let Some(grad) = grad.as_deref_mut() {
                let (grad_weight, grad_bias) = grad[start..end].split_at_mut(inputs * outputs);
                // dW = xᵀ · δ: x read column by column.
                // SAFETY: x is rows × inputs, δ rows × outputs, dW inputs × outputs.
                unsafe {
                    matmul(
                        inputs,
                        outputs,
                        rows,
                        grad_weight,
                        outputs,
                        1,
                        x,
                        1,
                        inputs,
                        &self.delta,
                        outputs,
                        1,
                    );
                }
                grad_bias.fill(0.0);
                for row in self.delta.chunks_exact(outputs) {
                    grad_bias.iter_mut().zip(row).for_each(|(g, d)| *g += d);
                }
            }
            end = start;
            let wants_input = l > 1 || d_input.is_some();
            if !wants_input {
                break;
            }
            // δ_below = δ · Wᵀ: W read column by column.
            let below: &mut Vec<f32> = &mut self.delta_below;
            below.clear();
            below.resize(rows * inputs, 0.0);
            // SAFETY: δ is rows × outputs, W inputs × outputs, δ_below rows × inputs.
            unsafe {
                matmul(
                    rows,
                    inputs,
                    outputs,
                    below,
                    inputs,
                    1,
                    &self.delta,
                    outputs,
                    1,
                    weight,
                    1,
                    outputs,
                );
            }
            if l > 1 {
                // Through the activation below: its output is x.
                match self.shape.activation {
                    Activation::Tanh => below
                        .iter_mut()
                        .zip(x.iter())
                        .for_each(|(d, y)| *d *= 1.0 - y * y),
                    Activation::Relu => below
                        .iter_mut()
                        .zip(x.iter())
                        .for_each(|(d, y)| *d = if *y > 0.0 { *d } else { 0.0 }),
                }
                std::mem::swap(&mut self.delta, &mut self.delta_below);
            } else if let Some(d_input) = d_input.take() {
                assert_eq!(d_input.len(), below.len(), "input gradient length");
                d_input.copy_from_slice(below);
            }
        }
    }
}

/// `dst (m × n) = lhs (m × k) · rhs (k × n)`, each matrix given by its
/// slice and its row and column strides (row-major: `(width, 1)`; the
/// transpose of a row-major matrix: `(1, width)`), single-threaded: shoal
/// parallelises over workers, not inside a product.
///
/// # Safety
/// Every index `i·rs + j·cs` the product reads or writes must lie inside
/// its slice.
#[allow(clippy::too_many_arguments)]
unsafe fn matmul(
    m: usize,
    n: usize,
    k: usize,
    dst: &mut [f32],
    dst_rs: usize,
    dst_cs: usize,
    lhs: &[f32],
    lhs_rs: usize,
    lhs_cs: usize,
    rhs: &[f32],
    rhs_rs: usize,
    rhs_cs: usize,
) {
    if m == 0 || n == 0 {
        return;
    }
    debug_assert!((m - 1) * dst_rs + (n - 1) * dst_cs < dst.len());
    if k == 0 {
        dst.fill(0.0);
        return;
    }
    debug_assert!((m - 1) * lhs_rs + (k - 1) * lhs_cs < lhs.len());
    debug_assert!((k - 1) * rhs_rs + (n - 1) * rhs_cs < rhs.len());
    // SAFETY: the caller keeps every index inside the slices (checked above
    // in debug builds).
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            dst_cs as isize,
            dst_rs as isize,
            // dst is overwritten, never read.
            false,
            lhs.as_ptr(),
            lhs_cs as isize,
            lhs_rs as isize,
            rhs.as_ptr(),
            rhs_cs as isize,
            rhs_rs as isize,
            1.0f32,
            1.0f32,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}

#[cfg(test)]
mod tests {
    use burn::tensor::Tensor;
    use proptest::prelude::*;

    use super::*;
    use crate::{MlpConfig, flatten, flatten_grads, rows_to_tensor, training_device};

    #[test]
    fn fast_tanh_is_within_5e7_of_tanh_and_saturates() {
        let mut worst = 0.0f64;
        for i in -200_000..=200_000 {
            let x = i as f32 * 5e-5;
            worst = worst.max((fast_tanh(x) as f64 - (x as f64).tanh()).abs());
        }
        assert!(worst < 5e-7, "worst error {worst}");
        assert_eq!(fast_tanh(0.0), 0.0);
        assert_eq!(fast_tanh(1e-5), 1e-5);
        assert_eq!(fast_tanh(30.0), 1.0);
        assert_eq!(fast_tanh(-1e30), -1.0);
        assert!((fast_tanh(8.0) - 1.0).abs() <= f32::EPSILON);
    }

    /// The network, its input and an output gradient, and what burn's
    /// autodiff gives for the loss `sum(output ⊙ d_output)`: outputs,
    /// parameter gradients and input gradients.
    fn autodiff_oracle(
        net: &Mlp,
        input: &[f32],
        d_output: &[f32],
    ) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
        let device = training_device();
        let shape = net.shape();
        let x = rows_to_tensor(input, shape.input(), &device).require_grad();
        let out = net.forward(x.clone());
        let values: Vec<f32> = out.clone().into_data().try_to_vec().unwrap();
        let coef = rows_to_tensor(d_output, shape.output(), &device);
        let mut grads = (out * coef).sum().backward();
        let d_input: Vec<f32> = x.grad(&grads).unwrap().into_data().try_to_vec().unwrap();
        let params = burn::optim::GradientsParams::from_module(&mut grads, net);
        (values, flatten_grads(net, &params), d_input)
    }

    fn close(got: &[f32], want: &[f32], tolerance: f32, what: &str) {
        assert_eq!(got.len(), want.len(), "{what}: lengths");
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert!(
                (g - w).abs() <= tolerance * (1.0 + w.abs()),
                "{what}[{i}]: {g} against autodiff's {w}"
            );
        }
    }

    fn check_against_autodiff(
        activation: Activation,
        sizes: (usize, Vec<usize>, usize),
        rows: usize,
        seed: u64,
    ) {
        let (input_width, hidden, output) = sizes;
        let net = crate::canonicalise(
            MlpConfig::new(input_width, hidden, output).init_with(activation, &training_device()),
            seed,
        );
        let mut rng = shoal_rl_core::rng_from_seed(seed + 1);
        let mut draw = |n: usize| -> Vec<f32> {
            (0..n)
                .map(|_| rand::RngExt::random_range(&mut rng, -2.0f32..2.0))
                .collect()
        };
        let input = draw(rows * input_width);
        let d_output = draw(rows * output);
        let (want_out, want_grad, want_d_input) = autodiff_oracle(&net, &input, &d_output);

        let params = flatten(&net);
        let mut tape = MlpTape::new(net.shape());
        let out = tape.forward(&params, &input).to_vec();
        close(&out, &want_out, 1e-5, "output");
        let mut grad = vec![f32::NAN; params.len()];
        let mut d_input = vec![f32::NAN; input.len()];
        tape.backward(&params, &d_output, Some(&mut grad), Some(&mut d_input));
        close(&grad, &want_grad, 1e-4, "parameter gradient");
        close(&d_input, &want_d_input, 1e-4, "input gradient");
        // Without the input gradient, the same parameter gradient.
        let mut again = vec![f32::NAN; params.len()];
        tape.backward(&params, &d_output, Some(&mut again), None);
        assert_eq!(again, grad);
        // Without the parameter gradient, the same input gradient.
        let mut d_input_again = vec![f32::NAN; input.len()];
        tape.backward(&params, &d_output, None, Some(&mut d_input_again));
        assert_eq!(d_input_again, d_input);
    }

    #[test]
    fn a_tanh_network_matches_burns_autodiff() {
        check_against_autodiff(Activation::Tanh, (17, vec![64, 64], 8), 62, 0);
    }

    #[test]
    fn a_relu_network_matches_burns_autodiff() {
        check_against_autodiff(Activation::Relu, (10, vec![64, 64, 64], 1), 300, 3);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn any_small_network_matches_burns_autodiff(
            relu in any::<bool>(),
            input in 1usize..6,
            hidden in proptest::collection::vec(1usize..9, 0..3),
            output in 1usize..4,
            rows in 1usize..7,
            seed in 0u64..1000,
        ) {
            let activation = if relu { Activation::Relu } else { Activation::Tanh };
            check_against_autodiff(activation, (input, hidden, output), rows, seed);
        }
    }

    #[test]
    fn a_tape_reused_for_another_batch_size_starts_afresh() {
        let net = MlpConfig::new(2, vec![4], 1).init_with(Activation::Tanh, &training_device());
        let params = flatten(&net);
        let mut tape = MlpTape::new(net.shape());
        tape.forward(&params, &[0.5; 2 * 9]);
        let one = tape.forward(&params, &[0.5, 0.5]).to_vec();
        let burn = net.forward(Tensor::<2>::from_data([[0.5f32, 0.5]], &training_device()));
        close(
            &one,
            &burn.into_data().try_to_vec::<f32>().unwrap(),
            1e-6,
            "output",
        );
        assert_eq!(tape.rows(), 1);
    }

    #[test]
    #[should_panic(expected = "parameter count")]
    fn parameters_of_another_shape_are_refused() {
        let shape = MlpShape {
            sizes: vec![2, 3, 1],
            activation: Activation::Tanh,
        };
        assert_eq!(shape.num_params(), 13);
        MlpTape::new(shape).forward(&[0.0; 12], &[0.0; 2]);
    }
}
