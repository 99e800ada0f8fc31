//! Module parameters and gradients as flat `f32` vectors, in a fixed order.
//!
//! Parallel strategies average gradients and broadcast weights as plain
//! slices; checkpoints store them as bytes. These helpers walk a burn module's
//! float parameters in declaration order, which is the same on every worker.

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::{Tensor, TensorData};
use rand::RngExt;
use shoal_core::{Error, Result};

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
    if flat.len() != module.num_params() {
        return Err(Error::Shape(format!(
            "parameter vector has {} values, the network has {}",
            flat.len(),
            module.num_params()
        )));
    }
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
        rng: shoal_core::rng_from_seed(seed),
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
    if flat.len() != module.num_params() {
        return Err(Error::Shape(format!(
            "gradient vector has {} values, the network has {}",
            flat.len(),
            module.num_params()
        )));
    }
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
