//! SAC's part of the update (Haarnoja et al., 2018, *Soft Actor-Critic Algorithms and Applications*, with automatic entropy tuning): the soft critic target, the actor's loss and the temperature α.
//!
//! With the Gaussian actor ([`super::ActorKind::Gaussian`]) and twin critics:
//!
//! - target `y = r + γ(1 − d)·(min_i Q'_i(s', a') − α·log π(a'|s'))`, with
//!   `a' ~ π(·|s')` drawn from the *online* actor (SAC has no target actor)
//!   with the batch's draws [`NetBatch::next_action_noise`];
//! - each critic's loss `mean (Q_i(s, a) − y)²` (the shared code in
//!   `actor_critic.rs`);
//! - actor loss `mean(α·log π(ã|s) − min_i Q_i(s, ã))`, `ã` reparameterised
//!   from the draws [`NetBatch::action_noise`]; the critics take no gradient
//!   from it;
//! - temperature loss `−log α · mean(log π(ã|s) + H̄)` with the target
//!   entropy `H̄` (default `−|A|`), stepped by its own Adam at the actor's
//!   step size, as Stable-Baselines3's `SAC` with `ent_coef = "auto"`.
//!
//! α in the target and the actor loss is its value before this update's
//! step. `log α` is the last entry of the flat parameter and gradient
//! vectors (actor ‖ critics ‖ log α), so gradient averaging and checkpoints
//! carry it like any network's parameter.

use burn::module::{Module, Param};
use burn::tensor::{Tensor, TensorData};
use shoal_rl_core::Result;
use shoal_rl_policy::{SquashedSample, Trained, canonicalise, critic_head, unflatten};

use super::{ActorCritic, NetBatch, TrainedActor, UpdateSettings, critic_input, share_at_bound};

/// SAC's entropy temperature α: where it starts and whether it is learned.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TemperatureConfig {
    /// α at the start (Stable-Baselines3's `"auto"`: 1.0).
    pub init_alpha: f64,
    /// The entropy `H̄` the temperature steers the policy toward; `None`:
    /// `−|A|`, minus the number of action components (the SAC paper's and
    /// SB3's heuristic).
    pub target_entropy: Option<f64>,
    /// Learn `log α` (automatic entropy tuning); false: α stays `init_alpha`.
    pub learn: bool,
}

impl Default for TemperatureConfig {
    fn default() -> Self {
        TemperatureConfig {
            init_alpha: 1.0,
            target_entropy: None,
            learn: true,
        }
    }
}

/// `log α` as a one-parameter module, so [`Trained`]'s Adam (and its
/// saved moments) step it exactly as they step the networks.
#[derive(Module, Debug)]
struct LogAlpha {
    value: Param<Tensor<1>>,
}

/// The learned temperature: `log α` and its optimiser.
#[derive(Clone)]
pub(crate) struct Temperature {
    log_alpha: Trained<LogAlpha>,
    target_entropy: f32,
    learn: bool,
}

impl Temperature {
    /// `log α = ln init_alpha`, on `device`, for `act_dim` action
    /// components, stepped at `learning_rate` (the actor's).
    pub(crate) fn new(
        config: &TemperatureConfig,
        act_dim: usize,
        learning_rate: f64,
        device: &burn::tensor::Device,
    ) -> Self {
        let zero = Tensor::<1>::from_data(TensorData::new(vec![0.0f32], [1]), device);
        // Canonical ids (0) make the Adam moments portable across a save
        // and a load; the value is then set to ln α₀.
        let module = canonicalise(
            LogAlpha {
                value: Param::from_tensor(zero),
            },
            0,
        );
        let module =
            unflatten(module, &[config.init_alpha.ln() as f32]).expect("log α is one value");
        Temperature {
            log_alpha: Trained::adam(module, learning_rate, None),
            target_entropy: config
                .target_entropy
                .map_or(-(act_dim as f32), |h| h as f32),
            learn: config.learn,
        }
    }

    /// α = exp(log α), as it stands before this update's step.
    pub(crate) fn alpha(&self) -> f32 {
        self.log_alpha.parameters()[0].exp()
    }

    /// ∂/∂log α of `−log α · mean(log π + H̄)`: `−mean(log π + H̄)`, the
    /// log-densities held fixed (SB3 detaches them); 0 when α is not learned.
    pub(crate) fn gradient(&self, log_probs: &[f32]) -> f32 {
        if !self.learn {
            return 0.0;
        }
        let n = log_probs.len().max(1) as f32;
        -log_probs
            .iter()
            .map(|log_prob| log_prob + self.target_entropy)
            .sum::<f32>()
            / n
    }

    /// The temperature loss `−log α · mean(log π + H̄)` (reported, not differentiated).
    fn loss(&self, log_probs: &[f32]) -> f64 {
        let n = log_probs.len().max(1) as f64;
        let mean = log_probs
            .iter()
            .map(|&log_prob| (log_prob + self.target_entropy) as f64)
            .sum::<f64>()
            / n;
        -(self.log_alpha.parameters()[0] as f64) * mean
    }

    /// One Adam step on `log α` (none when α is not learned).
    pub(crate) fn step(&mut self, grad: &mut [f32]) -> Result<()> {
        if self.learn {
            self.log_alpha.step(grad)?;
        }
        Ok(())
    }

    /// `[log α]`.
    pub(crate) fn parameters(&self) -> Vec<f32> {
        self.log_alpha.parameters()
    }

    /// Overwrites `log α` (not the Adam moments).
    pub(crate) fn set_parameters(&mut self, flat: &[f32]) -> Result<()> {
        self.log_alpha.set_parameters(flat)
    }

    /// `log α` and its Adam moments as bytes.
    pub(crate) fn save_state(&self) -> Vec<u8> {
        self.log_alpha.save_state()
    }

    /// Restores [`Temperature::save_state`] output; on error `self` is unchanged.
    pub(crate) fn load_state(&mut self, bytes: &[u8]) -> Result<()> {
        self.log_alpha.load_state(bytes)
    }
}

/// What SAC's actor and temperature part of an update gives back.
pub(crate) struct SoftActorStep {
    /// The actor's flat gradient.
    pub(crate) actor_grads: Vec<f32>,
    /// `mean(α·log π(ã|s) − min_i Q_i(s, ã))` (+ the action L2 term).
    pub(crate) actor_loss: f64,
    /// ∂/∂log α of the temperature loss.
    pub(crate) log_alpha_grad: f32,
    /// The temperature loss.
    pub(crate) temperature_loss: f64,
    /// The share of `tanh(μ(s))` on the batch within 1 % of a bound.
    pub(crate) mean_at_bound: f64,
}

impl ActorCritic {
    /// The trained Gaussian actor's outputs (means ‖ log-stds per row) at
    /// `inputs`, by hand; its tape keeps the pass for a backward one.
    fn gaussian_outputs(&mut self, inputs: &[f32]) -> &[f32] {
        let TrainedActor::Gaussian(actor) = &self.actor else {
            unreachable!("SAC's part of the update runs with the Gaussian actor")
        };
        self.tapes.actor.forward(actor.params(), inputs)
    }

    /// The trained Gaussian actor's squashed sample at `inputs` with the
    /// draws `noise`; its tape keeps the pass for a backward one.
    fn squashed_sample(&mut self, inputs: &[f32], noise: &[f32]) -> SquashedSample {
        let act_dim = self.act_dim;
        SquashedSample::new(self.gaussian_outputs(inputs), noise, act_dim)
    }

    fn learned_temperature(&self) -> &Temperature {
        self.temperature
            .as_ref()
            .expect("a Gaussian actor comes with its temperature")
    }

    /// `min_i Q'_i(s', a') − α·log π(a'|s')` per row, with `a'` drawn from
    /// the online Gaussian actor with the batch's draws at `s'`: the soft
    /// value SAC bootstraps from. No gradient flows into it.
    pub(super) fn soft_next_values(
        &mut self,
        batch: &NetBatch,
        settings: &UpdateSettings,
    ) -> Vec<f32> {
        let next = self.squashed_sample(&batch.next_inputs, &batch.next_action_noise);
        let alpha = self.learned_temperature().alpha();
        self.min_next_q(&batch.next_inputs, next.actions(), settings)
            .into_iter()
            .zip(next.log_probs())
            .map(|(q, log_prob)| q - alpha * log_prob)
            .collect()
    }

    /// SAC's actor gradient (the critics held fixed) and the temperature's,
    /// at the batch's inputs `s` with its draws at `s`, for `n` rows.
    ///
    /// The loss `mean(α·log π(ã|s) − min_i Q_i(s, ã)) + l2·mean(ã²)` goes
    /// back through the critic that is the smaller in each row (into ã
    /// only), then through the squashed head and the actor's MLP.
    pub(super) fn soft_actor_step(
        &mut self,
        batch: &NetBatch,
        settings: &UpdateSettings,
        n: usize,
    ) -> SoftActorStep {
        let act_dim = self.act_dim;
        let out = self.gaussian_outputs(&batch.inputs);
        // Only the actor's step reports the share at a bound, not the
        // target's pass at the next states.
        let means: Vec<f32> = out
            .chunks_exact(2 * act_dim)
            .flat_map(|row| row[..act_dim].iter().map(|mu| mu.tanh()))
            .collect();
        let mean_at_bound = share_at_bound(&means);
        let sample = SquashedSample::new(out, &batch.action_noise, act_dim);
        let actions = sample.actions();
        let input = critic_input(&batch.inputs, actions, n);
        // Each critic's Q and slope at (s, ã); the row's smallest Q (the
        // first critic on a tie) is the one the loss sees.
        let mut q_min = vec![f32::INFINITY; n];
        let mut argmin = vec![0usize; n];
        let mut slopes = Vec::with_capacity(self.critics.len());
        for (k, critic) in self.critics.iter().enumerate() {
            let z = self.tapes.critics[k].forward(critic.params(), &input);
            let mut slope = Vec::with_capacity(n);
            for (i, &z) in z.iter().enumerate() {
                let (q, dq_dz) = critic_head(self.value_bound, z);
                if q < q_min[i] {
                    (q_min[i], argmin[i]) = (q, k);
                }
                slope.push(dq_dz);
            }
            slopes.push(slope);
        }
        // d loss / d ã: −1/n through the smaller critic, and the L2 term.
        let l2 = settings.action_l2;
        let count = (n * act_dim) as f32;
        let mut d_actions: Vec<f32> = actions.iter().map(|a| 2.0 * l2 * a / count).collect();
        let width = self.input_dim + act_dim;
        let mut d_input = vec![0.0f32; n * width];
        for (k, critic) in self.critics.iter().enumerate() {
            let d_q: Vec<f32> = (0..n)
                .map(|i| {
                    if argmin[i] == k {
                        -slopes[k][i] / n as f32
                    } else {
                        0.0
                    }
                })
                .collect();
            if d_q.iter().all(|d| *d == 0.0) {
                continue;
            }
            self.tapes.critics[k].backward(critic.params(), &d_q, None, Some(&mut d_input));
            for (d_a, row) in d_actions
                .chunks_exact_mut(act_dim)
                .zip(d_input.chunks_exact(width))
            {
                d_a.iter_mut()
                    .zip(&row[self.input_dim..])
                    .for_each(|(d, g)| *d += g);
            }
        }
        let temperature = self.learned_temperature();
        let alpha = temperature.alpha();
        let log_probs = sample.log_probs();
        let log_alpha_grad = temperature.gradient(log_probs);
        let temperature_loss = temperature.loss(log_probs);
        let squares: f64 = actions.iter().map(|a| (a * a) as f64).sum();
        let actor_loss = log_probs
            .iter()
            .zip(&q_min)
            .map(|(log_prob, q)| (alpha * log_prob - q) as f64)
            .sum::<f64>()
            / n as f64
            + l2 as f64 * squares / count as f64;
        let d_out = sample.backward(&d_actions, &vec![alpha / n as f32; n]);
        let TrainedActor::Gaussian(actor) = &self.actor else {
            unreachable!("SAC's part of the update runs with the Gaussian actor")
        };
        let mut actor_grads = vec![0.0f32; actor.params().len()];
        self.tapes
            .actor
            .backward(actor.params(), &d_out, Some(&mut actor_grads), None);
        SoftActorStep {
            actor_grads,
            actor_loss,
            log_alpha_grad,
            temperature_loss,
            mean_at_bound,
        }
    }
}

#[cfg(test)]
mod tests {
    use shoal_rl_core::{Alone, Error};

    use super::super::tests::{one_row_batch, small_config};
    use super::super::{ActorCriticConfig, ActorKind, BoundGradient, CriticLoss};
    use super::*;

    /// Parameters of the oracle's Gaussian actor: input 2, hidden [3],
    /// outputs mean ‖ log σ of one action component.
    const ACTOR64: usize = 2 * 3 + 3 + 3 * 2 + 2;
    /// Parameters of each of its two critics (input 2 + action 1, hidden [3]).
    const CRITIC64: usize = 3 * 3 + 3 + 3 + 1;
    /// Where log α sits: after the actor and both critics.
    const LOG_ALPHA64: usize = ACTOR64 + 2 * CRITIC64;

    /// A one-hidden-layer ReLU network in f64, in burn's flat layout
    /// (weight `[in, out]` row-major, then bias, layer by layer).
    fn mlp64(params: &[f64], [inputs, hidden, outputs]: [usize; 3], x: &[f64]) -> Vec<f64> {
        let (w1, rest) = params.split_at(inputs * hidden);
        let (b1, rest) = rest.split_at(hidden);
        let (w2, rest) = rest.split_at(hidden * outputs);
        let h: Vec<f64> = (0..hidden)
            .map(|j| (b1[j] + (0..inputs).map(|i| x[i] * w1[i * hidden + j]).sum::<f64>()).max(0.0))
            .collect();
        (0..outputs)
            .map(|k| rest[k] + (0..hidden).map(|j| h[j] * w2[j * outputs + k]).sum::<f64>())
            .collect()
    }

    /// The squashed Gaussian policy of the SAC paper (appendix C): for a
    /// draw ε, `u = μ(s) + σ(s)·ε`, `a = tanh u` and
    /// `log π(a|s) = log N(u; μ, σ²) − log(1 − a² + 1e-6)` (SB3's epsilon),
    /// log σ clamped to [−20, 2].
    fn policy64(actor: &[f64], x: &[f64], epsilon: f64) -> (f64, f64) {
        let out = mlp64(&actor[..ACTOR64], [2, 3, 2], x);
        let (mu, sigma) = (out[0], out[1].clamp(-20.0, 2.0).exp());
        let u = mu + sigma * epsilon;
        let a = u.tanh();
        let log_normal = -0.5 * ((u - mu) / sigma).powi(2)
            - sigma.ln()
            - 0.5 * (2.0 * std::f64::consts::PI).ln();
        (a, log_normal - (1.0 - a * a + 1e-6).ln())
    }

    /// Critic `j` of a parameter vector laid out actor ‖ critic 1 ‖ critic 2.
    fn critic64(params: &[f64], j: usize, x: &[f64], a: f64) -> f64 {
        let from = ACTOR64 + j * CRITIC64;
        mlp64(&params[from..from + CRITIC64], [3, 3, 1], &[x[0], x[1], a])[0]
    }

    /// SAC's losses in f64, written from the paper (Haarnoja et al. 2018,
    /// "Soft Actor-Critic Algorithms and Applications", eqs. 5, 7, 18 and
    /// Algorithm 1, twin critics) and SB3's `SAC.train`. `p` is where the
    /// gradient is taken (actor ‖ critic 1 ‖ critic 2 ‖ log α); `held` the
    /// same layout for what takes no gradient: the actor and α in the
    /// target, the critics and α in the actor loss, log π in the
    /// temperature loss. `targets` are the two target critics.
    /// Returns each critic's loss, the actor's and the temperature's.
    fn sac_losses64(
        p: &[f64],
        held: &[f64],
        targets: &[f64],
        batch: &NetBatch,
        settings: &UpdateSettings,
        target_entropy: f64,
    ) -> ([f64; 2], f64, f64) {
        let n = batch.rewards.len() as f64;
        let row = |v: &[f32], i: usize| [v[2 * i] as f64, v[2 * i + 1] as f64];
        let alpha = held[LOG_ALPHA64].exp();
        let (mut critics, mut actor, mut temperature) = ([0.0; 2], 0.0, 0.0);
        for i in 0..batch.rewards.len() {
            let (x, next) = (row(&batch.inputs, i), row(&batch.next_inputs, i));
            // y = r + γ(1 − d)(min_j Q'_j(s', a') − α log π(a'|s')), a' ~ π(·|s').
            let (next_action, next_log_prob) =
                policy64(held, &next, batch.next_action_noise[i] as f64);
            let next_q = (0..2)
                .map(|j| {
                    let from = j * CRITIC64;
                    let z = [next[0], next[1], next_action];
                    mlp64(&targets[from..from + CRITIC64], [3, 3, 1], &z)[0]
                })
                .fold(f64::INFINITY, f64::min);
            let soft_value = next_q - alpha * next_log_prob;
            let y = batch.rewards[i] as f64
                + if batch.terminals[i] {
                    0.0
                } else {
                    settings.gamma as f64 * soft_value
                };
            for (j, loss) in critics.iter_mut().enumerate() {
                *loss += (critic64(p, j, &x, batch.actions[i] as f64) - y).powi(2) / n;
            }
            // J_π = mean(α log π(ã|s) − min_j Q_j(s, ã)), ã reparameterised.
            let epsilon = batch.action_noise[i] as f64;
            let (action, log_prob) = policy64(p, &x, epsilon);
            let q_min = (0..2)
                .map(|j| critic64(held, j, &x, action))
                .fold(f64::INFINITY, f64::min);
            actor += (alpha * log_prob - q_min + settings.action_l2 as f64 * action * action) / n;
            // J(α) = −log α · mean(log π(ã|s) + H̄).
            let (_, held_log_prob) = policy64(held, &x, epsilon);
            temperature += -p[LOG_ALPHA64] * (held_log_prob + target_entropy) / n;
        }
        (critics, actor, temperature)
    }

    #[test]
    fn sac_losses_and_every_gradient_match_the_paper_in_f64() {
        check_sac_against_f64(true, None);
    }

    #[test]
    fn sac_with_a_fixed_temperature_and_a_given_target_entropy_matches_in_f64() {
        check_sac_against_f64(false, Some(-0.4));
    }

    /// Gaussian networks with twin critics whose targets differ from them,
    /// log α moved off its start: the losses and the whole gradient
    /// (actor ‖ critics ‖ log α) against [`sac_losses64`] and central
    /// finite differences of it.
    fn check_sac_against_f64(learn: bool, target_entropy: Option<f64>) {
        let config = ActorCriticConfig {
            input_dim: 2,
            act_dim: 1,
            hidden: vec![3],
            actor_lr: 1e-3,
            critic_lr: 1e-3,
            max_grad_norm: None,
            value_bound: None,
            critics: 2,
            actor: ActorKind::Gaussian,
            temperature: TemperatureConfig {
                init_alpha: 0.3,
                target_entropy,
                learn,
            },
        };
        let mut networks = ActorCritic::new(&config, 17);
        let start = networks.parameters();
        assert_eq!(start.len(), LOG_ALPHA64 + 1);
        assert!((start[LOG_ALPHA64] - 0.3f32.ln()).abs() < 1e-7);
        // A zero step marks the networks trained, so new parameters leave
        // the target critics where they are.
        let settings = UpdateSettings {
            gamma: 0.9,
            action_l2: 0.7,
            target_clip: None,
            target_networks: true,
            target_policy_noise: 0.0,
            target_noise_clip: 0.0,
            update_actor: true,
            actor_after_critic: false,
            bound_gradient: BoundGradient::Tanh,
            preactivation_l2: 0.0,
            critic_loss: CriticLoss::Squared,
        };
        networks
            .apply(&mut vec![0.0; start.len()], &settings)
            .unwrap();
        let online: Vec<f32> = start
            .iter()
            .enumerate()
            .map(|(i, p)| p + 0.3 * ((i as f32 * 1.7).sin()))
            .collect();
        networks.set_parameters(&online).unwrap();
        let targets: Vec<f64> = networks
            .target_parameters()
            .iter()
            .map(|&p| p as f64)
            .collect();
        assert_eq!(targets.len(), 2 * CRITIC64, "no target actor");
        assert!(targets[..CRITIC64] != online64(&online)[ACTOR64..ACTOR64 + CRITIC64]);

        // Row 1 ends its episode (no bootstrap, no entropy term).
        let batch = NetBatch {
            inputs: vec![0.4, -0.7, -0.2, 0.9, 1.1, 0.3],
            next_inputs: vec![0.5, -0.6, 2.0, 2.0, 1.0, 0.6],
            actions: vec![0.3, -0.8, 0.6],
            rewards: vec![-1.0, 0.0, -1.0],
            terminals: vec![false, true, false],
            next_action_noise: vec![1.3, -0.4, -0.9],
            action_noise: vec![0.5, -1.2, 0.8],
        };
        let (grads, stats) = networks.gradients(&batch, &settings).unwrap();
        assert_eq!(grads.len(), online.len(), "actor ‖ critics ‖ log α");

        let held = online64(&online);
        let entropy = target_entropy.unwrap_or(-1.0);
        let oracle = |p: &[f64]| sac_losses64(p, &held, &targets, &batch, &settings, entropy);
        let (critics, actor, temperature) = oracle(&held);
        let close = |got: f64, want: f64| (got - want).abs() < 1e-5;
        let critic_loss = (critics[0] + critics[1]) / 2.0;
        assert!(
            close(stats.critic_loss, critic_loss),
            "{stats:?} vs {critic_loss}"
        );
        assert!(
            close(stats.actor_loss.unwrap(), actor),
            "{stats:?} vs {actor}"
        );
        assert!(
            close(stats.temperature_loss.unwrap(), temperature),
            "{stats:?}"
        );
        assert!(
            close(stats.alpha.unwrap(), held[LOG_ALPHA64].exp()),
            "{stats:?}"
        );

        // Each part's gradient is that of its own loss; log α's only when
        // it is learned.
        for (k, &g) in grads.iter().enumerate() {
            let h = 1e-6;
            let at = |delta: f64| {
                let mut p = held.clone();
                p[k] += delta;
                let (critics, actor, temperature) = oracle(&p);
                match k {
                    _ if k < ACTOR64 => actor,
                    LOG_ALPHA64 if learn => temperature,
                    LOG_ALPHA64 => 0.0,
                    _ => critics[(k - ACTOR64) / CRITIC64],
                }
            };
            let expected = (at(h) - at(-h)) / (2.0 * h);
            assert!(
                (g as f64 - expected).abs() < 1e-4 * (1.0 + expected.abs()),
                "parameter {k}: gradient {g} against {expected}"
            );
        }
        assert_eq!(grads[LOG_ALPHA64] != 0.0, learn);

        // A step moves log α against its gradient only when it is learned.
        networks.update(&batch, &settings, &mut Alone).unwrap();
        let moved = networks.parameters()[LOG_ALPHA64] - online[LOG_ALPHA64];
        if learn {
            assert!(moved * grads[LOG_ALPHA64] < 0.0, "{moved}");
        } else {
            assert_eq!(moved, 0.0);
        }
    }

    fn online64(params: &[f32]) -> Vec<f64> {
        params.iter().map(|&p| p as f64).collect()
    }

    /// Gaussian networks (input 3, action 2, hidden [8]) with twin critics.
    fn gaussian_config() -> ActorCriticConfig {
        small_config(2, ActorKind::Gaussian)
    }

    #[test]
    fn a_sac_state_loads_exactly_and_deterministic_networks_refuse_it() {
        let batch = NetBatch {
            next_action_noise: vec![0.3, -1.0],
            action_noise: vec![-0.2, 0.7],
            ..one_row_batch()
        };
        let settings = UpdateSettings::ddpg(0.9, 0.0, None);
        let mut trained = ActorCritic::new(&gaussian_config(), 1);
        trained.update(&batch, &settings, &mut Alone).unwrap();
        trained.update_targets(0.5).unwrap();
        let mut copy = ActorCritic::new(&gaussian_config(), 2);
        copy.load_state(&trained.save_state()).unwrap();
        assert!(copy.parameters() == trained.parameters());
        assert!(copy.target_parameters() == trained.target_parameters());
        // The same next step: every Adam moment, log α's too, came along.
        trained.update(&batch, &settings, &mut Alone).unwrap();
        copy.update(&batch, &settings, &mut Alone).unwrap();
        assert!(copy.parameters() == trained.parameters());
        assert!(trained.alpha().unwrap() < 1.0, "α learned down from 1");

        let mut deterministic = ActorCritic::new(
            &ActorCriticConfig {
                actor: ActorKind::Deterministic,
                ..gaussian_config()
            },
            1,
        );
        assert!(matches!(
            deterministic.load_state(&trained.save_state()),
            Err(Error::Shape(m))
                if m == "actor-critic state has a Gaussian actor, these networks a deterministic one"
        ));
        // A batch without SAC's draws is refused.
        let bare = NetBatch {
            action_noise: Vec::new(),
            ..batch
        };
        assert!(matches!(
            trained.gradients(&bare, &settings),
            Err(Error::Shape(m)) if m.contains("0 action noise values")
        ));
    }
}
