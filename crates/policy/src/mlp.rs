//! The multilayer perceptron every shoal network is made of.

use burn::config::Config;
use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::{Device, Tensor, activation};
use serde::{Deserialize, Serialize};

/// Hidden-layer nonlinearity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Activation {
    /// `tanh`, the usual choice for policy-gradient networks.
    #[default]
    Tanh,
    /// `max(0, x)`, the usual choice for DDPG actors and critics.
    Relu,
}

/// Layer sizes of an [`Mlp`].
#[derive(Config, Debug)]
pub struct MlpConfig {
    /// Input features.
    pub input: usize,
    /// Width of each hidden layer.
    pub hidden: Vec<usize>,
    /// Output features.
    pub output: usize,
}

impl MlpConfig {
    /// Builds the network on `device`; `activation` goes between layers, the
    /// output layer is linear.
    pub fn init_with(&self, activation: Activation, device: &Device) -> Mlp {
        let mut sizes = vec![self.input];
        sizes.extend(&self.hidden);
        sizes.push(self.output);
        let layers = sizes
            .windows(2)
            .map(|w| LinearConfig::new(w[0], w[1]).init(device))
            .collect();
        Mlp {
            layers,
            relu: activation == Activation::Relu,
        }
    }
}

/// Linear layers with a fixed nonlinearity between them.
#[derive(Module, Debug)]
pub struct Mlp {
    layers: Vec<Linear>,
    #[module(skip)]
    relu: bool,
}

impl Mlp {
    /// The network with its output layer's weights and bias scaled by
    /// `bound·√fan_in`: from [`crate::canonicalise`]'s ±1/√fan_in draws,
    /// uniform in ±`bound` (the small last layer of DDPG's paper and of the
    /// HAC authors' code, ±3e-3).
    #[must_use]
    pub fn with_output_bound(mut self, bound: f32) -> Self {
        let last = self.layers.last_mut().expect("an MLP has an output layer");
        let fan_in = last.weight.val().dims()[0] as f32;
        let factor = bound * fan_in.sqrt();
        // Detached, so the scaled values are leaves that still take gradients.
        fn scaled<const D: usize>(t: Tensor<D>, factor: f32) -> Tensor<D> {
            let require_grad = t.is_require_grad();
            t.mul_scalar(factor).detach().set_require_grad(require_grad)
        }
        last.weight = last.weight.clone().map(|w| scaled(w, factor));
        last.bias = last.bias.clone().map(|b| b.map(|b| scaled(b, factor)));
        self
    }

    /// Input width, each hidden width and output width.
    pub fn sizes(&self) -> Vec<usize> {
        let mut sizes = vec![self.layers[0].weight.dims()[0]];
        sizes.extend(self.layers.iter().map(|layer| layer.weight.dims()[1]));
        sizes
    }

    /// The activation between layers.
    pub fn activation(&self) -> Activation {
        if self.relu {
            Activation::Relu
        } else {
            Activation::Tanh
        }
    }

    /// # Shapes
    /// - input `[batch, input]`
    /// - output `[batch, output]`
    pub fn forward(&self, mut x: Tensor<2>) -> Tensor<2> {
        let last = self.layers.len() - 1;
        for (i, layer) in self.layers.iter().enumerate() {
            x = layer.forward(x);
            if i < last {
                x = if self.relu {
                    activation::relu(x)
                } else {
                    x.tanh()
                };
            }
        }
        x
    }
}
