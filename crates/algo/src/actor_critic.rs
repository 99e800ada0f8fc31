//! DDPG's networks and one update (Lillicrap et al., 2016), shared by [`crate::Ddpg`] and every level of [`crate::Hac`].
//!
//! [`ActorCritic`] holds an actor, a critic, their target copies and two Adam
//! optimisers; [`ActorCritic::gradients`] computes both losses on a
//! [`NetBatch`] already in network units (normalised inputs, actions in
//! `[-1, 1]`), and [`ActorCritic::update`] averages them through a
//! [`MeanReducer`] before the step, so workers stay bit-identical. What an
//! algorithm adds on top — its buffer, its relabelling, its schedule — stays
//! in that algorithm's file.

use burn::module::Module;
use burn::tensor::{Device, Tensor, TensorData};
use serde::{Deserialize, Serialize};
use shoal_rl_core::{Error, MeanReducer, Result, derive_seed, split_parameters};
use shoal_rl_policy::{
    Actor, ActorConfig, Critic, CriticConfig, Trained, flatten, rows_to_tensor, training_device,
    unflatten,
};

/// Sizes and step sizes of an [`ActorCritic`].
#[derive(Clone, Debug, PartialEq)]
pub struct ActorCriticConfig {
    /// Network input features (observation ‖ goal, normalised).
    pub input_dim: usize,
    /// Action components.
    pub act_dim: usize,
    /// Hidden layer widths of both networks.
    pub hidden: Vec<usize>,
    /// Adam step size of the actor.
    pub actor_lr: f64,
    /// Adam step size of the critic.
    pub critic_lr: f64,
    /// Global gradient-norm clip of each network.
    pub max_grad_norm: Option<f64>,
    /// `H` of a critic bounded to `[−H, 0]` (the HAC authors' head; see
    /// [`shoal_rl_policy::CriticConfig::bound`]); absent: a linear head.
    pub value_bound: Option<f32>,
}

/// The loss settings of one update.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UpdateSettings {
    /// Discount factor γ.
    pub gamma: f32,
    /// Weight of the mean squared action in the actor loss.
    pub action_l2: f32,
    /// Range the critic target is clipped to, if any.
    pub target_clip: Option<(f32, f32)>,
    /// Bootstrap from the target networks (DDPG); false: from the networks
    /// being trained, as the HAC authors' current code does.
    pub target_networks: bool,
}

/// A batch in network units: inputs already normalised, actions in `[-1, 1]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NetBatch {
    /// Inputs `s_t ‖ g`, `[n, input_dim]`.
    pub inputs: Vec<f32>,
    /// Inputs `s_{t+1} ‖ g`, `[n, input_dim]`.
    pub next_inputs: Vec<f32>,
    /// Actions `a_t`, `[n, act_dim]`.
    pub actions: Vec<f32>,
    /// Rewards, `[n]`.
    pub rewards: Vec<f32>,
    /// Whether `s_{t+1}` ends the episode (no bootstrap), `[n]`.
    pub terminals: Vec<bool>,
}

/// What one update measured.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct UpdateStats {
    /// Mean squared TD error of the critic.
    pub critic_loss: f64,
    /// Actor loss: −mean Q(s, π(s)) + action L2 penalty.
    pub actor_loss: f64,
    /// Mean Q(s, a) over the batch.
    pub q_mean: f64,
}

/// Sums of [`UpdateStats`] over a stretch of training, for the means a
/// learner reports (`losses/critic`, `level0/actor_loss`, …).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct UpdateTally {
    /// Updates summed.
    pub(crate) updates: usize,
    sums: UpdateStats,
}

impl UpdateTally {
    /// Adds one update's statistics.
    pub(crate) fn add(&mut self, stats: UpdateStats) {
        self.updates += 1;
        self.sums.critic_loss += stats.critic_loss;
        self.sums.actor_loss += stats.actor_loss;
        self.sums.q_mean += stats.q_mean;
    }

    /// The mean of each statistic (zeros before the first update).
    pub(crate) fn means(&self) -> UpdateStats {
        let n = self.updates.max(1) as f64;
        UpdateStats {
            critic_loss: self.sums.critic_loss / n,
            actor_loss: self.sums.actor_loss / n,
            q_mean: self.sums.q_mean / n,
        }
    }
}

#[derive(Serialize, Deserialize)]
struct ActorCriticState {
    actor: Vec<u8>,
    critic: Vec<u8>,
    target_actor: Vec<f32>,
    target_critic: Vec<f32>,
}

/// DDPG's four networks and two optimisers, and one gradient step on a batch.
///
/// Kept apart from the agent so other algorithms (HAC levels, agents sharing
/// models) can reuse it. Parameters and gradients are flat vectors ordered
/// actor ‖ critic.
#[derive(Clone)]
pub struct ActorCritic {
    input_dim: usize,
    act_dim: usize,
    /// Autodiff device for updates.
    device: Device,
    /// The same device without autodiff, for targets and acting.
    plain: Device,
    actor: Trained<Actor>,
    critic: Trained<Critic>,
    target_actor: Actor,
    target_critic: Critic,
    /// Autodiff-free copy of the actor, refreshed after each step.
    acting: Actor,
    /// Whether a gradient step has been taken (targets are then state, not copies).
    stepped: bool,
}

impl ActorCritic {
    /// Networks initialised from `seed`; the targets start as copies.
    pub fn new(config: &ActorCriticConfig, seed: u64) -> Self {
        let device = training_device();
        let actor = ActorConfig::new(config.input_dim, config.act_dim)
            .with_hidden(config.hidden.clone())
            .init(derive_seed(seed, 1), &device);
        let critic = CriticConfig::new(config.input_dim, config.act_dim)
            .with_hidden(config.hidden.clone())
            .with_bound(config.value_bound)
            .init(derive_seed(seed, 2), &device);
        ActorCritic {
            input_dim: config.input_dim,
            act_dim: config.act_dim,
            plain: device.clone().inner(),
            device,
            target_actor: actor.valid(),
            target_critic: critic.valid(),
            acting: actor.valid(),
            actor: Trained::adam(actor, config.actor_lr, config.max_grad_norm),
            critic: Trained::adam(critic, config.critic_lr, config.max_grad_norm),
            stepped: false,
        }
    }

    /// The deterministic action in `[-1, 1]` for one (normalised) input row.
    pub fn act(&self, input: &[f32]) -> Vec<f32> {
        self.acting.act(input, &self.plain)
    }

    /// The current actor without autodiff.
    pub fn actor(&self) -> &Actor {
        &self.acting
    }

    /// The device [`ActorCritic::actor`] acts on (no autodiff).
    pub(crate) fn acting_device(&self) -> &Device {
        &self.plain
    }

    /// Q values of the trained critic for row-major inputs and actions.
    pub fn q_values(&self, inputs: &[f32], actions: &[f32]) -> Vec<f32> {
        self.critic
            .module
            .valid()
            .q_values(inputs, actions, &self.plain)
    }

    fn check_batch(&self, batch: &NetBatch) -> Result<usize> {
        let n = batch.rewards.len();
        let ok = n > 0
            && batch.terminals.len() == n
            && batch.inputs.len() == n * self.input_dim
            && batch.next_inputs.len() == n * self.input_dim
            && batch.actions.len() == n * self.act_dim;
        if !ok {
            return Err(Error::Shape(format!(
                "update batch of {n} rewards has {} inputs, {} next inputs, {} actions \
                 (input {} and action {} wide)",
                batch.inputs.len(),
                batch.next_inputs.len(),
                batch.actions.len(),
                self.input_dim,
                self.act_dim
            )));
        }
        Ok(n)
    }

    /// Gradients of both losses at the current parameters, flat as
    /// actor ‖ critic (the actor's gradient uses the critic before its step,
    /// as baselines does).
    pub fn gradients(
        &self,
        batch: &NetBatch,
        settings: &UpdateSettings,
    ) -> Result<(Vec<f32>, UpdateStats)> {
        let n = self.check_batch(batch)?;

        // ---- critic target y = r + γ·(1 − done)·Q'(s', π'(s')), clipped ----
        // Computed on the plain device: no gradient flows into the targets.
        // Without target networks Q' and π' are the networks being trained.
        let next = rows_to_tensor(&batch.next_inputs, self.input_dim, &self.plain);
        let next_q = if settings.target_networks {
            self.target_critic
                .forward(next.clone(), self.target_actor.forward(next))
        } else {
            let critic = self.critic.module.valid();
            critic.forward(next.clone(), self.acting.forward(next))
        };
        let next_q: Vec<f32> = next_q.into_data().try_to_vec().expect("f32 tensor");
        let targets: Vec<f32> = (0..n)
            .map(|i| {
                let bootstrap = if batch.terminals[i] {
                    0.0
                } else {
                    settings.gamma * next_q[i]
                };
                let y = batch.rewards[i] + bootstrap;
                settings
                    .target_clip
                    .map_or(y, |(low, high)| y.clamp(low, high))
            })
            .collect();
        let targets = Tensor::<2>::from_data(TensorData::new(targets, [n, 1]), &self.device);

        // ---- critic: regress Q(s, a) on y ----
        let inputs = rows_to_tensor(&batch.inputs, self.input_dim, &self.device);
        let actions = rows_to_tensor(&batch.actions, self.act_dim, &self.device);
        let q = self.critic.module.forward(inputs.clone(), actions);
        let q_mean = q.clone().mean().into_scalar::<f32>() as f64;
        let error = q - targets;
        let critic_loss = (error.clone() * error).mean();
        let critic_loss_value = critic_loss.clone().into_scalar::<f32>() as f64;
        let critic_grads = self.critic.take_grads(&mut critic_loss.backward());

        // ---- actor: maximise Q(s, π(s)), penalise large actions ----
        // The critic's weights take no gradient here (`no_grad`), which skips
        // their backward matmuls; the gradient still flows through to π.
        let pi = self.actor.module.forward(inputs.clone());
        let q_pi = self
            .critic
            .module
            .clone()
            .no_grad()
            .forward(inputs, pi.clone());
        let actor_loss = q_pi.mean().neg() + pi.square().mean().mul_scalar(settings.action_l2);
        let actor_loss_value = actor_loss.clone().into_scalar::<f32>() as f64;
        let mut grads = self.actor.take_grads(&mut actor_loss.backward());

        grads.extend(critic_grads);
        let stats = UpdateStats {
            critic_loss: critic_loss_value,
            actor_loss: actor_loss_value,
            q_mean,
        };
        Ok((grads, stats))
    }

    /// One Adam step of both networks from a flat actor ‖ critic gradient.
    pub fn apply(&mut self, grads: &mut [f32]) -> Result<()> {
        let split = self.actor.module.num_params();
        if grads.len() != split + self.critic.module.num_params() {
            return Err(Error::Shape(format!(
                "gradient has {} values, actor and critic have {}",
                grads.len(),
                split + self.critic.module.num_params()
            )));
        }
        let (actor_part, critic_part) = grads.split_at_mut(split);
        let (mut actor, mut critic) = (self.actor.clone(), self.critic.clone());
        actor.step(actor_part)?;
        critic.step(critic_part)?;
        self.actor = actor;
        self.critic = critic;
        self.acting = self.actor.module.valid();
        self.stepped = true;
        Ok(())
    }

    /// Gradients on `batch`, averaged through `reducer` (one message), then one step.
    pub fn update(
        &mut self,
        batch: &NetBatch,
        settings: &UpdateSettings,
        reducer: &mut dyn MeanReducer,
    ) -> Result<UpdateStats> {
        let (mut grads, stats) = self.gradients(batch, settings)?;
        reducer.mean(&mut grads)?;
        self.apply(&mut grads)?;
        Ok(stats)
    }

    /// Moves the targets toward the trained networks: `θ' ← polyak·θ' + (1 − polyak)·θ`.
    pub fn update_targets(&mut self, polyak: f64) -> Result<()> {
        let blend = |target: Vec<f32>, trained: Vec<f32>| -> Vec<f32> {
            let keep = polyak as f32;
            target
                .iter()
                .zip(trained)
                .map(|(t, m)| keep * t + (1.0 - keep) * m)
                .collect()
        };
        let actor = blend(flatten(&self.target_actor), self.actor.parameters());
        let critic = blend(flatten(&self.target_critic), self.critic.parameters());
        self.target_actor = unflatten(self.target_actor.clone(), &actor)?;
        self.target_critic = unflatten(self.target_critic.clone(), &critic)?;
        Ok(())
    }

    /// Actor ‖ critic parameters.
    pub fn parameters(&self) -> Vec<f32> {
        let mut flat = self.actor.parameters();
        flat.extend(self.critic.parameters());
        flat
    }

    /// Target actor ‖ target critic parameters (tests compare them).
    #[cfg(test)]
    pub(crate) fn target_parameters(&self) -> Vec<f32> {
        let mut flat = flatten(&self.target_actor);
        flat.extend(flatten(&self.target_critic));
        flat
    }

    /// Overwrites actor ‖ critic parameters. Before the first gradient step
    /// the targets are reset to copies too (as at initialisation), so a
    /// fresh agent given another worker's parameters matches it exactly;
    /// afterwards targets are training state that only
    /// [`ActorCritic::load_state`] replaces.
    pub fn set_parameters(&mut self, params: &[f32]) -> Result<()> {
        let sizes = [
            self.actor.module.num_params(),
            self.critic.module.num_params(),
        ];
        let parts = split_parameters(params, &sizes, "actor and critic")?;
        let (mut actor, mut critic) = (self.actor.clone(), self.critic.clone());
        actor.set_parameters(parts[0])?;
        critic.set_parameters(parts[1])?;
        self.actor = actor;
        self.critic = critic;
        self.acting = self.actor.module.valid();
        if !self.stepped {
            self.target_actor = self.actor.module.valid();
            self.target_critic = self.critic.module.valid();
        }
        Ok(())
    }

    /// Networks, targets and optimiser moments as bytes.
    pub fn save_state(&self) -> Vec<u8> {
        postcard::to_stdvec(&ActorCriticState {
            actor: self.actor.save_state(),
            critic: self.critic.save_state(),
            target_actor: flatten(&self.target_actor),
            target_critic: flatten(&self.target_critic),
        })
        .expect("serialising plain vectors cannot fail")
    }

    /// Restores [`ActorCritic::save_state`] output; on error `self` is unchanged.
    pub fn load_state(&mut self, bytes: &[u8]) -> Result<()> {
        let state: ActorCriticState = postcard::from_bytes(bytes)
            .map_err(|e| Error::Shape(format!("actor-critic state is unreadable: {e}")))?;
        let (mut actor, mut critic) = (self.actor.clone(), self.critic.clone());
        actor.load_state(&state.actor)?;
        critic.load_state(&state.critic)?;
        let target_actor = unflatten(self.target_actor.clone(), &state.target_actor)?;
        let target_critic = unflatten(self.target_critic.clone(), &state.target_critic)?;
        self.actor = actor;
        self.critic = critic;
        self.target_actor = target_actor;
        self.target_critic = target_critic;
        self.acting = self.actor.module.valid();
        self.stepped = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use shoal_rl_core::Alone;

    use super::*;

    /// Networks with one hidden layer of `hidden` units, Adam at 1e-3.
    fn networks(input_dim: usize, act_dim: usize, hidden: usize, seed: u64) -> ActorCritic {
        let config = ActorCriticConfig {
            input_dim,
            act_dim,
            hidden: vec![hidden],
            actor_lr: 1e-3,
            critic_lr: 1e-3,
            max_grad_norm: None,
            value_bound: None,
        };
        ActorCritic::new(&config, seed)
    }

    fn tiny_networks() -> ActorCritic {
        networks(3, 2, 8, 5)
    }

    /// A one-hidden-layer ReLU network in f64 from burn's flat layout
    /// (weight `[in, out]` row-major, then bias, layer by layer).
    fn mlp64(params: &[f64], sizes: [usize; 3], x: &[f64]) -> f64 {
        let [inputs, hidden, _] = sizes;
        let (w1, rest) = params.split_at(inputs * hidden);
        let (b1, rest) = rest.split_at(hidden);
        let (w2, b2) = rest.split_at(hidden);
        let h: Vec<f64> = (0..hidden)
            .map(|j| (b1[j] + (0..inputs).map(|i| x[i] * w1[i * hidden + j]).sum::<f64>()).max(0.0))
            .collect();
        b2[0] + (0..hidden).map(|j| h[j] * w2[j]).sum::<f64>()
    }

    /// DDPG's two losses (Lillicrap et al.; baselines' HER) in f64, written
    /// from the paper: y = clip(r + γ(1 − d)·Q'(s', μ'(s'))) with the target
    /// networks, critic loss mean (Q(s, a) − y)², actor loss
    /// −mean Q(s, μ(s)) + λ·mean μ(s)². `online` and `target` are actor ‖
    /// critic for input 2, action 1, hidden [3]. With `bound` = H the
    /// critic is the HAC authors' −H·sigmoid(z − ln(H/0.067 − 1)) (their
    /// `critic.py`).
    fn losses64(
        online: &[f64],
        target: &[f64],
        batch: &NetBatch,
        s: &UpdateSettings,
        bound: Option<f64>,
    ) -> (f64, f64) {
        const ACTOR: usize = 2 * 3 + 3 + 3 + 1;
        let actor = |p: &[f64], x: &[f64]| mlp64(&p[..ACTOR], [2, 3, 1], x).tanh();
        let critic = |p: &[f64], x: &[f64], a: f64| {
            let z = mlp64(&p[ACTOR..], [3, 3, 1], &[x[0], x[1], a]);
            match bound {
                Some(h) => -h / (1.0 + (-(z - (h / 0.067 - 1.0).ln())).exp()),
                None => z,
            }
        };
        let row = |v: &[f32], i: usize| [v[2 * i] as f64, v[2 * i + 1] as f64];
        let n = batch.rewards.len();
        let (mut critic_loss, mut actor_loss) = (0.0, 0.0);
        for i in 0..n {
            let (x, next) = (row(&batch.inputs, i), row(&batch.next_inputs, i));
            let bootstrap = if batch.terminals[i] {
                0.0
            } else {
                s.gamma as f64 * critic(target, &next, actor(target, &next))
            };
            let mut y = batch.rewards[i] as f64 + bootstrap;
            if let Some((low, high)) = s.target_clip {
                y = y.clamp(low as f64, high as f64);
            }
            critic_loss += (critic(online, &x, batch.actions[i] as f64) - y).powi(2) / n as f64;
            let mu = actor(online, &x);
            actor_loss += (-critic(online, &x, mu) + s.action_l2 as f64 * mu * mu) / n as f64;
        }
        (critic_loss, actor_loss)
    }

    #[test]
    fn losses_and_gradients_match_the_paper_in_f64_with_distinct_target_networks() {
        check_against_f64(None, true);
    }

    #[test]
    fn without_target_networks_the_bounded_critic_bootstraps_from_itself_in_f64() {
        check_against_f64(Some(10.0), false);
    }

    #[test]
    fn without_target_networks_a_linear_critic_bootstraps_from_itself_in_f64() {
        check_against_f64(None, false);
    }

    /// Losses and gradients of networks whose targets differ from them,
    /// against [`losses64`]; without target networks the oracle bootstraps
    /// from the online parameters (held fixed: no gradient flows into y).
    fn check_against_f64(bound: Option<f32>, target_networks: bool) {
        let config = ActorCriticConfig {
            input_dim: 2,
            act_dim: 1,
            hidden: vec![3],
            actor_lr: 1e-3,
            critic_lr: 1e-3,
            max_grad_norm: None,
            value_bound: bound,
        };
        let mut networks = ActorCritic::new(&config, 11);
        let target: Vec<f32> = networks.parameters();
        // A zero step marks the networks trained (Adam moves nothing on a
        // zero gradient), so new parameters leave the targets where they are.
        networks.apply(&mut vec![0.0; target.len()]).unwrap();
        let online: Vec<f32> = target
            .iter()
            .enumerate()
            .map(|(i, p)| p + 0.3 * ((i as f32 * 1.7).sin()))
            .collect();
        networks.set_parameters(&online).unwrap();
        assert!(networks.target_parameters() == target);

        // Rewards of −1/0 as in the goal tasks; row 1 ends its episode and
        // row 2's target rises above the clip's 0.
        let batch = NetBatch {
            inputs: vec![0.4, -0.7, -0.2, 0.9, 1.1, 0.3],
            next_inputs: vec![0.5, -0.6, 2.0, 2.0, 1.0, 0.6],
            actions: vec![0.3, -0.8, 0.6],
            rewards: vec![-1.0, 0.0, 1.5],
            terminals: vec![false, true, false],
        };
        let settings = UpdateSettings {
            gamma: 0.9,
            action_l2: 0.7,
            target_clip: Some((-10.0, 0.0)),
            target_networks,
        };
        let (grads, stats) = networks.gradients(&batch, &settings).unwrap();

        let online64: Vec<f64> = online.iter().map(|&p| p as f64).collect();
        let target64: Vec<f64> = match target_networks {
            true => target.iter().map(|&p| p as f64).collect(),
            false => online64.clone(),
        };
        let bound64 = bound.map(f64::from);
        let (critic_loss, actor_loss) = losses64(&online64, &target64, &batch, &settings, bound64);
        assert!(
            (stats.critic_loss - critic_loss).abs() < 1e-5,
            "{} vs {critic_loss}",
            stats.critic_loss
        );
        assert!(
            (stats.actor_loss - actor_loss).abs() < 1e-5,
            "{} vs {actor_loss}",
            stats.actor_loss
        );

        // Each network's gradient is that of its own loss: central finite
        // differences of the f64 losses, the actor's through the critic
        // (whose weights take no gradient from the actor loss).
        let actor_params = 2 * 3 + 3 + 3 + 1;
        for (k, &g) in grads.iter().enumerate() {
            let h = 1e-6;
            let at = |delta: f64| {
                let mut p = online64.clone();
                p[k] += delta;
                let (critic, actor) = losses64(&p, &target64, &batch, &settings, bound64);
                if k < actor_params { actor } else { critic }
            };
            let expected = (at(h) - at(-h)) / (2.0 * h);
            assert!(
                (g as f64 - expected).abs() < 1e-4 * (1.0 + expected.abs()),
                "parameter {k}: gradient {g} against {expected}"
            );
        }
    }

    #[test]
    fn critic_target_is_clipped_and_not_bootstrapped_at_terminals() {
        let networks = tiny_networks();
        // Terminal transitions with a reward outside [−2, 0]: y = clip(5) = 0.
        let batch = NetBatch {
            inputs: vec![0.1, 0.2, 0.3, -0.3, 0.0, 0.5],
            next_inputs: vec![9.0; 6],
            actions: vec![0.5, -0.5, 0.0, 1.0],
            rewards: vec![5.0, 5.0],
            terminals: vec![true, true],
        };
        let q = networks.q_values(&batch.inputs, &batch.actions);
        let mean_sq = |y: f32| q.iter().map(|v| ((v - y) as f64).powi(2)).sum::<f64>() / 2.0;
        let clipped = UpdateSettings {
            gamma: 0.5,
            action_l2: 1.0,
            target_clip: Some((-2.0, 0.0)),
            target_networks: true,
        };
        let (_, stats) = networks.gradients(&batch, &clipped).unwrap();
        assert!((stats.critic_loss - mean_sq(0.0)).abs() < 1e-5);
        let unclipped = UpdateSettings {
            target_clip: None,
            ..clipped
        };
        let (_, stats) = networks.gradients(&batch, &unclipped).unwrap();
        assert!((stats.critic_loss - mean_sq(5.0)).abs() < 1e-4);
    }

    #[test]
    fn polyak_zero_copies_the_networks_and_one_keeps_the_targets() {
        let mut networks = tiny_networks();
        let batch = NetBatch {
            inputs: vec![0.1, 0.2, 0.3],
            next_inputs: vec![0.2, 0.2, 0.2],
            actions: vec![0.5, -0.5],
            rewards: vec![-1.0],
            terminals: vec![false],
        };
        let settings = UpdateSettings {
            gamma: 0.9,
            action_l2: 1.0,
            target_clip: None,
            target_networks: true,
        };
        networks.update(&batch, &settings, &mut Alone).unwrap();
        let targets = |n: &ActorCritic| n.target_parameters();
        let before = targets(&networks);
        assert!(
            before != networks.parameters(),
            "a step moves the networks away from the targets"
        );
        networks.update_targets(1.0).unwrap();
        assert!(targets(&networks) == before);
        networks.update_targets(0.0).unwrap();
        assert!(targets(&networks) == networks.parameters());
    }

    #[test]
    fn update_rejects_inconsistent_batches() {
        let mut networks = tiny_networks();
        let batch = NetBatch {
            inputs: vec![0.0; 3],
            rewards: vec![0.0],
            ..NetBatch::default()
        };
        let settings = UpdateSettings {
            gamma: 0.9,
            action_l2: 1.0,
            target_clip: None,
            target_networks: true,
        };
        assert!(matches!(
            networks.update(&batch, &settings, &mut Alone),
            Err(Error::Shape(_))
        ));
        assert!(matches!(
            networks.apply(&mut [0.0; 3]),
            Err(Error::Shape(m)) if m.starts_with("gradient has 3 values, actor and critic have ")
        ));
    }
}
