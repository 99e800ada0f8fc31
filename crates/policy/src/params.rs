//! Module parameters and gradients as flat `f32` vectors, in a fixed order.
//!
//! Parallel strategies average gradients and broadcast weights as plain
//! slices; checkpoints store them as bytes. These helpers walk a burn module's
//! float parameters in declaration order, which is the same on every worker.

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::{Tensor, TensorData};
use rand::RngExt;
use shoal_rl_core::{Error, Result};

/// All float parameters of `module`, concatenated in visiting order.
pub fn flatten<M: Module>(module: &M) -> Vec<f32> {
    struct Collect(Vec<f32>);
    impl ModuleVisitor for Collect {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            let data = param.val().into_data();
            self.0.extend(data.iter::<f32>());
        }
    }
    let mut collect = Collect(Vec::with_capacity(module.num_params()));
    module.visit(&mut collect);
    collect.0
}

/// Replaces every float parameter of `module` with the next slice of `flat`,
/// keeping ids, shapes and devices. `flat` must have exactly
/// `module.num_params()` values.
pub fn unflatten<M: Module>(module: M, flat: &[f32]) -> Result<M> {
    check_len(&module, flat, "parameter")?;
    struct Load<'a> {
        flat: &'a [f32],
        offset: usize,
    }
    impl ModuleMapper for Load<'_> {
        fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
            let (id, tensor, mapper) = param.consume();
            let shape = tensor.shape();
            let n = shape.num_elements();
            let values = self.flat[self.offset..self.offset + n].to_vec();
            self.offset += n;
            let require_grad = tensor.is_require_grad();
            let replaced = Tensor::<D>::from_data(TensorData::new(values, shape), &tensor.device())
                .set_require_grad(require_grad);
            Param::from_mapped_value(id, replaced, mapper)
        }
    }
    Ok(module.map(&mut Load { flat, offset: 0 }))
}

/// Gives the parameters ids `0, 1, 2, …` in visiting order and draws their
/// values from a generator seeded with `seed`: weights of shape
/// `[fan_in, fan_out]` and the bias that follows them uniform in
/// ±1/√fan_in (PyTorch's `nn.Linear` default).
///
/// Stable ids make optimiser state, which burn keys by parameter id, portable
/// between processes and across a save and a load; seeding here rather than
/// through burn's backend generator keeps every worker reproducible.
pub fn canonicalise<M: Module>(module: M, seed: u64) -> M {
    struct Canon {
        next_id: u64,
        fan_in: usize,
        rng: rand::rngs::StdRng,
    }
    impl ModuleMapper for Canon {
        fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
            let (_, tensor, mapper) = param.consume();
            let shape = tensor.shape();
            if D >= 2 {
                self.fan_in = shape.dims::<D>()[0];
            }
            let bound = 1.0 / (self.fan_in.max(1) as f32).sqrt();
            let values: Vec<f32> = (0..shape.num_elements())
                .map(|_| self.rng.random_range(-bound..=bound))
                .collect();
            let require_grad = tensor.is_require_grad();
            let replaced = Tensor::<D>::from_data(TensorData::new(values, shape), &tensor.device())
                .set_require_grad(require_grad);
            let id = ParamId::from(self.next_id);
            self.next_id += 1;
            Param::from_mapped_value(id, replaced, mapper)
        }
    }
    module.map(&mut Canon {
        next_id: 0,
        fan_in: 1,
        rng: shoal_rl_core::rng_from_seed(seed),
    })
}

/// The gradients of `module`'s parameters, flattened in visiting order
/// (zeros for parameters that received none).
pub fn flatten_grads<M: Module>(module: &M, grads: &GradientsParams) -> Vec<f32> {
    struct Collect<'a> {
        grads: &'a GradientsParams,
        out: Vec<f32>,
    }
    impl ModuleVisitor for Collect<'_> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            match self.grads.get::<D>(param.id) {
                Some(grad) => self.out.extend(grad.into_data().iter::<f32>()),
                None => self
                    .out
                    .extend(std::iter::repeat_n(0.0, param.shape().num_elements())),
            }
        }
    }
    let mut collect = Collect {
        grads,
        out: Vec::with_capacity(module.num_params()),
    };
    module.visit(&mut collect);
    collect.out
}

/// Builds burn gradients for `module` from a flat vector (e.g. one averaged
/// across workers), on the parameters' plain (non-autodiff) device.
pub fn grads_from_flat<M: Module>(module: &M, flat: &[f32]) -> Result<GradientsParams> {
    check_len(module, flat, "gradient")?;
    struct Build<'a> {
        flat: &'a [f32],
        offset: usize,
        grads: GradientsParams,
    }
    impl ModuleVisitor for Build<'_> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            let shape = param.shape();
            let n = shape.num_elements();
            let values = self.flat[self.offset..self.offset + n].to_vec();
            self.offset += n;
            let device = param.device().inner();
            let grad = Tensor::<D>::from_data(TensorData::new(values, shape), &device);
            self.grads.register(param.id, grad);
        }
    }
    let mut build = Build {
        flat,
        offset: 0,
        grads: GradientsParams::new(),
    };
    module.visit(&mut build);
    Ok(build.grads)
}

/// Refuses a flat `what` vector (parameters, gradients) whose length is not
/// `module`'s parameter count.
fn check_len<M: Module>(module: &M, flat: &[f32], what: &str) -> Result<()> {
    if flat.len() == module.num_params() {
        Ok(())
    } else {
        Err(Error::Shape(format!(
            "{what} vector has {} values, the network has {}",
            flat.len(),
            module.num_params()
        )))
    }
}

#[cfg(test)]
mod tests {
    use burn::nn::{Linear, LinearConfig};
    use burn::tensor::Device;
    use proptest::prelude::*;

    use super::*;

    /// Two layers, 2 → 3 → 1: 6 + 3 + 3 + 1 = 13 parameters.
    #[derive(Module, Debug)]
    struct TwoLayers {
        first: Linear,
        second: Linear,
    }

    fn two_layers(device: &Device) -> TwoLayers {
        TwoLayers {
            first: LinearConfig::new(2, 3).init(device),
            second: LinearConfig::new(3, 1).init(device),
        }
    }

    fn values<const D: usize>(param: &Param<Tensor<D>>) -> Vec<f32> {
        param.val().into_data().try_to_vec().unwrap()
    }

    /// The oracle: each tensor read directly, weight (row-major
    /// `[d_input, d_output]`) before bias, layers in field order.
    fn read_directly(net: &TwoLayers) -> Vec<f32> {
        [
            values(&net.first.weight),
            values(net.first.bias.as_ref().unwrap()),
            values(&net.second.weight),
            values(net.second.bias.as_ref().unwrap()),
        ]
        .concat()
    }

    #[test]
    fn flatten_concatenates_the_tensors_in_declaration_order() {
        let net = two_layers(&Device::flex());
        let flat = flatten(&net);
        assert_eq!(flat.len(), 13);
        assert_eq!(flat, read_directly(&net));
    }

    #[test]
    fn unflatten_puts_each_slice_in_its_tensor_and_keeps_ids_and_shapes() {
        let device = Device::flex().autodiff();
        let net = two_layers(&device);
        let ids = [net.first.weight.id, net.second.weight.id];
        let flat: Vec<f32> = (0..13).map(|i| i as f32).collect();
        let net = unflatten(net, &flat).unwrap();
        assert_eq!(values(&net.first.weight), [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(net.first.weight.val().dims(), [2, 3]);
        assert_eq!(values(net.first.bias.as_ref().unwrap()), [6.0, 7.0, 8.0]);
        assert_eq!(values(&net.second.weight), [9.0, 10.0, 11.0]);
        assert_eq!(net.second.weight.val().dims(), [3, 1]);
        assert_eq!(values(net.second.bias.as_ref().unwrap()), [12.0]);
        assert_eq!([net.first.weight.id, net.second.weight.id], ids);
        assert!(net.first.weight.val().is_require_grad());
        // Row 1 of the first weight is [3, 4, 5]: input (0, 1) gives
        // 3·1 + bias → (9, 11, 13).
        let out = net
            .first
            .forward(crate::rows_to_tensor(&[0.0, 1.0], 2, &device));
        assert_eq!(
            out.into_data().try_to_vec::<f32>().unwrap(),
            [9.0, 11.0, 13.0]
        );
    }

    #[test]
    fn wrong_lengths_are_shape_errors() {
        let device = Device::flex();
        let error = unflatten(two_layers(&device), &[0.0; 12]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "shape mismatch: parameter vector has 12 values, the network has 13"
        );
        let error = grads_from_flat(&two_layers(&device), &[0.0; 14]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "shape mismatch: gradient vector has 14 values, the network has 13"
        );
    }

    #[test]
    fn gradients_of_a_hand_differentiated_loss_flatten_in_parameter_order() {
        // loss = Σ second(first(x)) for x = (1, 2) with all weights w and
        // biases b set to known values: d loss / d second.weight[j] = h_j,
        // d loss / d second.bias = 1, d loss / d first.weight[i][j] =
        // x_i · second.weight[j], d loss / d first.bias[j] = second.weight[j].
        let device = Device::flex().autodiff();
        let flat = [
            0.1, 0.2, 0.3, 0.4, 0.5, 0.6, // first.weight
            0.0, 0.0, 1.0, // first.bias
            1.0, -2.0, 3.0, // second.weight
            0.5, // second.bias
        ];
        let net = unflatten(two_layers(&device), &flat).unwrap();
        let x = crate::rows_to_tensor(&[1.0, 2.0], 2, &device);
        let loss = net.second.forward(net.first.forward(x)).sum();
        let grads = GradientsParams::from_grads(loss.backward(), &net);
        let h = [0.1 + 2.0 * 0.4, 0.2 + 2.0 * 0.5, 0.3 + 2.0 * 0.6 + 1.0];
        let expected = [
            1.0, -2.0, 3.0, 2.0, -4.0, 6.0, // x_i · w2_j
            1.0, -2.0, 3.0, // w2_j
            h[0], h[1], h[2], 1.0,
        ];
        let got = flatten_grads(&net, &grads);
        assert_eq!(got.len(), expected.len());
        for (g, e) in got.iter().zip(expected) {
            assert!((g - e).abs() < 1e-6, "{got:?} vs {expected:?}");
        }
        // A parameter without a gradient contributes zeros.
        assert_eq!(flatten_grads(&net, &GradientsParams::new()), vec![0.0; 13]);
    }

    #[test]
    fn canonicalise_numbers_ids_and_draws_within_the_fan_in_bound() {
        let device = Device::flex();
        let net = canonicalise(two_layers(&device), 3);
        let ids: Vec<ParamId> = vec![
            net.first.weight.id,
            net.first.bias.as_ref().unwrap().id,
            net.second.weight.id,
            net.second.bias.as_ref().unwrap().id,
        ];
        assert_eq!(ids, (0..4).map(ParamId::from).collect::<Vec<_>>());
        // first: fan_in 2 → ±0.7071; second: fan_in 3 → ±0.5774.
        let flat = flatten(&net);
        let bound = |i: usize| {
            if i < 9 {
                0.5f32.sqrt()
            } else {
                (1.0f32 / 3.0).sqrt()
            }
        };
        for (i, v) in flat.iter().enumerate() {
            assert!(v.abs() <= bound(i), "parameter {i} = {v}");
        }
        // The second layer's values use the tighter bound somewhere a
        // fan-in of 2 would have allowed: not all below it by chance.
        assert!(flat[..9].iter().any(|v| v.abs() > (1.0f32 / 3.0).sqrt()));
        assert_eq!(flatten(&canonicalise(two_layers(&device), 3)), flat);
        assert_ne!(flatten(&canonicalise(two_layers(&device), 4)), flat);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Any 13 values (any bits but NaN's payload) survive
        /// unflatten → flatten, and grads_from_flat → flatten_grads.
        #[test]
        fn any_parameter_vector_round_trips(flat in prop::collection::vec(any::<f32>().prop_filter("NaN", |v| !v.is_nan()), 13)) {
            let device = Device::flex().autodiff();
            let net = unflatten(two_layers(&device), &flat).unwrap();
            prop_assert_eq!(read_directly(&net), flat.clone());
            prop_assert_eq!(flatten(&net), flat.clone());
            let grads = grads_from_flat(&net, &flat).unwrap();
            prop_assert_eq!(flatten_grads(&net, &grads), flat);
        }
    }
}
