//! DDPG's networks and one update (Lillicrap et al., 2016), shared by [`crate::Ddpg`] and every level of [`crate::Hac`]; with two critics, target smoothing and a delayed actor it is TD3's (Fujimoto et al., 2018), with a Gaussian actor and a learned temperature SAC's (Haarnoja et al., 2018).
//!
//! [`ActorCritic`] holds an actor, one or more critics, their target copies
//! and Adam optimisers; [`ActorCritic::gradients`] computes the losses on a
//! [`NetBatch`] already in network units (normalised inputs, actions in
//! `[-1, 1]`), and [`ActorCritic::update`] averages them through a
//! [`MeanReducer`] before the step, so workers stay bit-identical. What an
//! algorithm adds on top — its buffer, its relabelling, its schedule — stays
//! in that algorithm's file.
//!
//! TD3 is three settings of the same update (Stable-Baselines3 derives its
//! DDPG from its TD3 the same way): [`ActorCriticConfig::critics`] = 2
//! bootstraps from the smaller of the two target critics (clipped double
//! Q); [`UpdateSettings::target_policy_noise`] adds clipped Gaussian noise
//! to the target actor's action (target policy smoothing); and
//! [`UpdateSettings::update_actor`] = false steps the critics only (the
//! delayed policy update). One critic, no noise and an actor step every
//! update is DDPG.
//!
//! SAC is the actor kind ([`ActorCriticConfig::actor`] =
//! [`ActorKind::Gaussian`]): a squashed Gaussian actor without a target,
//! an entropy term in the critic target and the actor loss, and a learned
//! temperature; its part of the update is the child module `sac.rs`. The
//! critics, their targets and their losses are the same code for all three.

mod actors;
mod sac;

use burn::module::Module;
use burn::tensor::Device;
use serde::{Deserialize, Serialize};
use shoal_rl_core::{Error, MeanReducer, Result, derive_seed, split_parameters};
use shoal_rl_policy::{
    Critic, CriticConfig, MlpTape, Trained, critic_head, fast_tanh_in_place, flatten,
    training_device,
};

use actors::TrainedActor;
pub use actors::{ActorKind, FrozenActor};
use sac::Temperature;
pub use sac::TemperatureConfig;

/// Sizes and step sizes of an [`ActorCritic`].
#[derive(Clone, Debug, PartialEq)]
pub struct ActorCriticConfig {
    /// Network input features (observation ‖ goal, normalised).
    pub input_dim: usize,
    /// Action components.
    pub act_dim: usize,
    /// Hidden layer widths of both networks.
    pub hidden: Vec<usize>,
    /// Adam step size of the actor (and of SAC's temperature, as
    /// Stable-Baselines3 has it).
    pub actor_lr: f64,
    /// Adam step size of the critic.
    pub critic_lr: f64,
    /// Global gradient-norm clip of each network.
    pub max_grad_norm: Option<f64>,
    /// `H` of a critic bounded to `[−H, 0]` (the HAC authors' head; see
    /// [`shoal_rl_policy::CriticConfig::bound`]); absent: a linear head.
    pub value_bound: Option<f32>,
    /// Critics, each with its target: 1 for DDPG and HAC, 2 for TD3's
    /// clipped double Q and SAC (the target is the smallest target
    /// critic's value).
    pub critics: usize,
    /// The actor: deterministic (DDPG, TD3, HAC) or SAC's Gaussian one.
    pub actor: ActorKind,
    /// SAC's temperature; read only with [`ActorKind::Gaussian`].
    pub temperature: TemperatureConfig,
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
    /// Standard deviation of the Gaussian noise added to the target actor's
    /// action at `s_{t+1}`, in `[-1, 1]` units (TD3's target policy
    /// smoothing); 0: none. The standard normal draws come with the batch
    /// ([`NetBatch::next_action_noise`]), so the caller's seeded generator
    /// decides them. Not used with the Gaussian actor, whose action at
    /// `s_{t+1}` is a draw already.
    pub target_policy_noise: f32,
    /// The smoothing noise is clipped to ±this before it is added (the
    /// noisy action is then clipped to `[-1, 1]`).
    pub target_noise_clip: f32,
    /// Whether this update steps the actor (and SAC's temperature). TD3
    /// steps the critics every update and the actor every
    /// `policy_delay`-th; on the others the gradient holds the critics'
    /// part only and the actor stays as it is.
    pub update_actor: bool,
    /// Take the actor's gradient on the critics after their step in this
    /// update, as Fujimoto et al.'s TD3, Stable-Baselines3's TD3 and SAC
    /// and the HAC authors' code do; false: on the critics before it, in
    /// one pass with theirs, as OpenAI baselines' DDPG does. With it,
    /// averaging workers exchange two messages per update (the critics'
    /// gradient, then the actor's) instead of one.
    pub actor_after_critic: bool,
    /// How the actor's gradient passes its `tanh` output bound.
    pub bound_gradient: BoundGradient,
    /// Weight of the mean squared pre-activation `u` of the deterministic
    /// actor's `tanh(u)` in its loss: a pull back from saturation whose
    /// gradient, unlike the action penalty's, does not vanish there. 0: none.
    pub preactivation_l2: f32,
    /// What each critic minimises against its target.
    pub critic_loss: CriticLoss,
}

/// What a critic minimises against its target `y`.
///
/// A critic with the bounded head `Q = −H·sigmoid(z)` regressed on squared
/// error learns through `sigmoid`'s slope, `H·s·(1 − s)`: where it sits at
/// its floor `−H` (or its ceiling 0) that slope is 0 in f32, so no target
/// moves it, however far off it is. A top-level critic stuck at `−H` over
/// its whole subgoal box rates every subgoal as missed and gives its actor
/// nothing to climb (docs/experiments/actor-bounds.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CriticLoss {
    /// `(Q − y)²`: DDPG, TD3, SAC and HAC as published.
    #[default]
    Squared,
    /// With a bounded head only (an update with a linear head is refused):
    /// binary cross-entropy between the head's
    /// probability `p = Q / −H` and the target's, `t = y / −H` (clipped to
    /// `[0, 1]`), as a logistic regression on the logit `z`. Its gradient
    /// in `z` is `p − t`: it vanishes only where the critic is right, never
    /// because the head saturated. The same fixed point as squared error.
    CrossEntropy,
}

/// How the gradient of the deterministic actor's loss passes its `tanh`
/// output, `a = tanh(u)`.
///
/// With `tanh`'s own derivative `1 − a²` a saturated actor cannot leave
/// the bound: near `±1` every push, outward or back inside, is scaled
/// toward 0 (2 500× below the centre's at 2·10⁻⁴ from it), so an actor
/// that a critic once drove into a corner stays there after the critic
/// changes its mind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BoundGradient {
    /// `tanh`'s derivative, `dL/du = dL/da · (1 − a²)` (DDPG, TD3, HAC as published).
    #[default]
    Tanh,
    /// Hausknecht & Stone's inverting gradients (2016), on the bounded
    /// output: a push up is scaled by the room left above, `(1 − a)/2`, a
    /// push down by the room below, `(1 + a)/2`. Toward a bound the
    /// gradient still vanishes as the action nears it; back inside it
    /// passes at nearly full strength from the bound itself.
    Inverting,
}

impl BoundGradient {
    /// `dL/du` for `dL/da` = `d_action` at `a = tanh(u)` = `action`.
    pub fn pre_activation(self, action: f32, d_action: f32) -> f32 {
        match self {
            BoundGradient::Tanh => d_action * (1.0 - action * action),
            // Descent moves `a` by −dL/da: up when dL/da < 0.
            BoundGradient::Inverting if d_action < 0.0 => d_action * 0.5 * (1.0 - action),
            BoundGradient::Inverting => d_action * 0.5 * (1.0 + action),
        }
    }
}

/// An action component counts as at its bound within 1 % of the `[-1, 1]`
/// range of it (`|a| ≥ 0.98`).
pub const AT_BOUND: f32 = 0.98;

/// The share of `actions` (in `[-1, 1]`) within 1 % of a bound.
pub fn share_at_bound(actions: &[f32]) -> f64 {
    if actions.is_empty() {
        return 0.0;
    }
    actions.iter().filter(|a| a.abs() >= AT_BOUND).count() as f64 / actions.len() as f64
}

impl UpdateSettings {
    /// DDPG's update: no smoothing noise, the actor stepped every time.
    pub fn ddpg(gamma: f32, action_l2: f32, target_clip: Option<(f32, f32)>) -> Self {
        UpdateSettings {
            gamma,
            action_l2,
            target_clip,
            target_networks: true,
            target_policy_noise: 0.0,
            target_noise_clip: 0.0,
            update_actor: true,
            actor_after_critic: false,
            bound_gradient: BoundGradient::Tanh,
            preactivation_l2: 0.0,
            critic_loss: CriticLoss::Squared,
        }
    }
}

/// Which networks a flat gradient holds: actor ‖ critics (‖ log α), the
/// critics alone, or the actor (‖ log α) alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Parts {
    All,
    Critics,
    Actor,
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
    /// Standard normal draws for the actions at `s_{t+1}`, `[n, act_dim]`:
    /// TD3's smoothing noise before it is scaled and clipped, or the draws
    /// of SAC's `a' ~ π(·|s')`. Empty when neither is used.
    pub next_action_noise: Vec<f32>,
    /// Standard normal draws for SAC's reparameterised actions at `s_t`
    /// (its actor and temperature losses), `[n, act_dim]`. Empty with a
    /// deterministic actor.
    pub action_noise: Vec<f32>,
}

/// What one update measured.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct UpdateStats {
    /// Mean squared TD error of the critic.
    pub critic_loss: f64,
    /// Actor loss: −mean Q(s, π(s)) + action L2 penalty, or SAC's
    /// `mean(α·log π − min Q)`; `None` when the update left the actor
    /// alone (TD3's delay).
    pub actor_loss: Option<f64>,
    /// Mean Q(s, a) of the first critic over the batch.
    pub q_mean: f64,
    /// SAC's temperature α this update used; `None` for a deterministic
    /// actor, or when the actor was left alone.
    pub alpha: Option<f64>,
    /// SAC's temperature loss `−log α · mean(log π + H̄)`, when `alpha` is there.
    pub temperature_loss: Option<f64>,
    /// The share of the actor's actions on the batch (SAC: of `tanh` of
    /// its mean) within 1 % of a bound ([`share_at_bound`]), when the
    /// update took the actor's gradient.
    pub actor_at_bound: Option<f64>,
}

/// Sums of [`UpdateStats`] over a stretch of training, for the means a
/// learner reports (`losses/critic`, `level0/actor_loss`, …).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct UpdateTally {
    /// Updates summed.
    pub(crate) updates: usize,
    /// Updates that stepped the actor (fewer under TD3's delay).
    actor_updates: usize,
    critic_loss: f64,
    actor_loss: f64,
    q_mean: f64,
    /// Updates that stepped SAC's temperature.
    temperature_updates: usize,
    alpha: f64,
    temperature_loss: f64,
    actor_at_bound: f64,
}

/// Means of a stretch of [`UpdateStats`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct UpdateMeans {
    pub(crate) critic_loss: f64,
    /// Over the updates that stepped the actor.
    pub(crate) actor_loss: f64,
    pub(crate) q_mean: f64,
    /// SAC's mean α and temperature loss; `None` without a temperature.
    pub(crate) temperature: Option<(f64, f64)>,
    /// Over the updates that stepped the actor: the share of its actions
    /// within 1 % of a bound (`charts/actor_at_bound`, `level{i}/actor_at_bound`).
    pub(crate) actor_at_bound: f64,
}

impl UpdateTally {
    /// Adds one update's statistics.
    pub(crate) fn add(&mut self, stats: UpdateStats) {
        self.updates += 1;
        self.critic_loss += stats.critic_loss;
        self.q_mean += stats.q_mean;
        if let Some(actor_loss) = stats.actor_loss {
            self.actor_updates += 1;
            self.actor_loss += actor_loss;
            self.actor_at_bound += stats.actor_at_bound.unwrap_or(0.0);
        }
        if let (Some(alpha), Some(loss)) = (stats.alpha, stats.temperature_loss) {
            self.temperature_updates += 1;
            self.alpha += alpha;
            self.temperature_loss += loss;
        }
    }

    /// The mean of each statistic (zeros before the first update).
    pub(crate) fn means(&self) -> UpdateMeans {
        let n = self.updates.max(1) as f64;
        let t = self.temperature_updates as f64;
        UpdateMeans {
            critic_loss: self.critic_loss / n,
            actor_loss: self.actor_loss / self.actor_updates.max(1) as f64,
            q_mean: self.q_mean / n,
            temperature: (self.temperature_updates > 0)
                .then(|| (self.alpha / t, self.temperature_loss / t)),
            actor_at_bound: self.actor_at_bound / self.actor_updates.max(1) as f64,
        }
    }
}

/// The saved form of an [`ActorCritic`]. `target_actor` is empty and
/// `temperature` present for the Gaussian actor; the agents that embed it
/// carry its layout in their state versions.
#[derive(Serialize, Deserialize)]
struct ActorCriticState {
    actor: Vec<u8>,
    critics: Vec<Vec<u8>>,
    target_actor: Vec<f32>,
    target_critics: Vec<Vec<f32>>,
    temperature: Option<Vec<u8>>,
}

/// The layout of [`ActorCriticState`] before TD3 (one critic): DDPG and HAC
/// states of version 1.
#[derive(Deserialize)]
struct OneCriticState {
    actor: Vec<u8>,
    critic: Vec<u8>,
    target_actor: Vec<f32>,
    target_critic: Vec<f32>,
}

/// The layout before SAC (no temperature): DDPG and HAC states of version 2.
#[derive(Deserialize)]
struct NoTemperatureState {
    actor: Vec<u8>,
    critics: Vec<Vec<u8>>,
    target_actor: Vec<f32>,
    target_critics: Vec<Vec<f32>>,
}

/// Networks saved by a DDPG or HAC state of `version` (1: one critic, 2:
/// twin critics without SAC's temperature, 3: today's), re-encoded in
/// today's layout for [`ActorCritic::load_state`], so checkpoints written
/// before TD3 and SAC still resume.
pub(crate) fn upgrade_state(bytes: &[u8], version: u32) -> Result<Vec<u8>> {
    let unreadable =
        |e: postcard::Error| Error::Shape(format!("actor-critic state is unreadable: {e}"));
    let state = match version {
        1 => {
            let old: OneCriticState = postcard::from_bytes(bytes).map_err(unreadable)?;
            ActorCriticState {
                actor: old.actor,
                critics: vec![old.critic],
                target_actor: old.target_actor,
                target_critics: vec![old.target_critic],
                temperature: None,
            }
        }
        2 => {
            let old: NoTemperatureState = postcard::from_bytes(bytes).map_err(unreadable)?;
            ActorCriticState {
                actor: old.actor,
                critics: old.critics,
                target_actor: old.target_actor,
                target_critics: old.target_critics,
                temperature: None,
            }
        }
        _ => return Ok(bytes.to_vec()),
    };
    Ok(postcard::to_stdvec(&state).expect("serialising plain vectors cannot fail"))
}

/// `bytes` (today's layout, deterministic actor) in the layout DDPG and HAC
/// states of `version` 1 or 2 wrote, field by field as those versions
/// declared them: what [`upgrade_state`]'s tests read back.
#[cfg(test)]
pub(crate) fn in_old_layout(bytes: &[u8], version: u32) -> Vec<u8> {
    #[derive(Serialize)]
    struct Version1 {
        actor: Vec<u8>,
        critic: Vec<u8>,
        target_actor: Vec<f32>,
        target_critic: Vec<f32>,
    }
    #[derive(Serialize)]
    struct Version2 {
        actor: Vec<u8>,
        critics: Vec<Vec<u8>>,
        target_actor: Vec<f32>,
        target_critics: Vec<Vec<f32>>,
    }
    let state: ActorCriticState = postcard::from_bytes(bytes).unwrap();
    assert!(
        state.temperature.is_none(),
        "older layouts had no temperature"
    );
    match version {
        1 => postcard::to_stdvec(&Version1 {
            actor: state.actor,
            critic: state.critics.into_iter().next().unwrap(),
            target_actor: state.target_actor,
            target_critic: state.target_critics.into_iter().next().unwrap(),
        }),
        2 => postcard::to_stdvec(&Version2 {
            actor: state.actor,
            critics: state.critics,
            target_actor: state.target_actor,
            target_critics: state.target_critics,
        }),
        _ => panic!("no layout {version}"),
    }
    .unwrap()
}

/// The tapes an [`ActorCritic`] runs its MLPs on, buffers kept across updates.
#[derive(Clone)]
struct Tapes {
    /// The actor's MLP: the deterministic one's (online and target alike)
    /// or the Gaussian one's under its head.
    actor: MlpTape,
    /// One per critic (online and target alike).
    critics: Vec<MlpTape>,
}

/// The critic's input rows, input ‖ action.
fn critic_input(inputs: &[f32], actions: &[f32], rows: usize) -> Vec<f32> {
    let (input_dim, act_dim) = (inputs.len() / rows.max(1), actions.len() / rows.max(1));
    let mut out = Vec::with_capacity(inputs.len() + actions.len());
    for row in 0..rows {
        out.extend_from_slice(&inputs[row * input_dim..(row + 1) * input_dim]);
        out.extend_from_slice(&actions[row * act_dim..(row + 1) * act_dim]);
    }
    out
}

/// DDPG's (TD3's, SAC's) networks and optimisers, and one gradient step on a batch.
///
/// Kept apart from the agent so other algorithms (HAC levels, agents sharing
/// models) can reuse it. Parameters and gradients are flat vectors ordered
/// actor ‖ critic 1 ‖ critic 2 ‖ … (‖ log α with SAC's Gaussian actor).
#[derive(Clone)]
pub struct ActorCritic {
    input_dim: usize,
    act_dim: usize,
    /// The device without autodiff the acting copy runs on.
    plain: Device,
    actor: TrainedActor,
    critics: Vec<Trained<Critic>>,
    /// The target critics' parameters, flat.
    target_critics: Vec<Vec<f32>>,
    /// Hand-run passes of the actor's and each critic's MLP.
    tapes: Tapes,
    /// `H` of the critics' bounded head (see [`critic_head`]), if bounded.
    value_bound: Option<f32>,
    /// SAC's temperature: present exactly with the Gaussian actor.
    temperature: Option<Temperature>,
    /// Autodiff-free copy of the actor, refreshed after each step.
    acting: FrozenActor,
    /// Whether a gradient step has been taken (targets are then state, not copies).
    stepped: bool,
}

impl ActorCritic {
    /// Networks initialised from `seed`; the targets start as copies.
    /// Critic `i` is drawn from stream `2 + i`, so the first critic is the
    /// same whether there are one or two.
    pub fn new(config: &ActorCriticConfig, seed: u64) -> Self {
        let device = training_device();
        let actor = TrainedActor::new(
            config.actor,
            (config.input_dim, config.act_dim),
            &config.hidden,
            (config.actor_lr, config.max_grad_norm),
            derive_seed(seed, 1),
            &device,
        );
        let critics: Vec<Critic> = (0..config.critics.max(1) as u64)
            .map(|i| {
                CriticConfig::new(config.input_dim, config.act_dim)
                    .with_hidden(config.hidden.clone())
                    .with_bound(config.value_bound)
                    .init(derive_seed(seed, 2 + i), &device)
            })
            .collect();
        let tapes = Tapes {
            actor: MlpTape::new(match &actor {
                TrainedActor::Deterministic { actor, .. } => actor.module().shape(),
                TrainedActor::Gaussian(actor) => actor.module().shape(),
            }),
            critics: critics.iter().map(|c| MlpTape::new(c.shape())).collect(),
        };
        let temperature = (config.actor == ActorKind::Gaussian).then(|| {
            Temperature::new(
                &config.temperature,
                config.act_dim,
                config.actor_lr,
                &device,
            )
        });
        ActorCritic {
            input_dim: config.input_dim,
            act_dim: config.act_dim,
            plain: device.clone().inner(),
            acting: actor.frozen(),
            actor,
            target_critics: critics.iter().map(flatten).collect(),
            tapes,
            value_bound: config.value_bound,
            critics: critics
                .into_iter()
                .map(|c| Trained::adam(c, config.critic_lr, config.max_grad_norm))
                .collect(),
            temperature,
            stepped: false,
        }
    }

    /// The evaluation action in `[-1, 1]` for one (normalised) input row.
    pub fn act(&self, input: &[f32]) -> Vec<f32> {
        self.acting.act(input, &self.plain)
    }

    /// The current actor without autodiff.
    pub fn actor(&self) -> &FrozenActor {
        &self.acting
    }

    /// SAC's temperature α now; `None` with a deterministic actor.
    pub fn alpha(&self) -> Option<f64> {
        self.temperature.as_ref().map(|t| t.alpha() as f64)
    }

    /// The device [`ActorCritic::actor`] acts on (no autodiff).
    pub(crate) fn acting_device(&self) -> &Device {
        &self.plain
    }

    /// Q values of the first trained critic for row-major inputs and actions.
    pub fn q_values(&self, inputs: &[f32], actions: &[f32]) -> Vec<f32> {
        self.critics[0]
            .module()
            .valid()
            .q_values(inputs, actions, &self.plain)
    }

    fn check_batch(&self, batch: &NetBatch, settings: &UpdateSettings) -> Result<usize> {
        if settings.critic_loss == CriticLoss::CrossEntropy && self.value_bound.is_none() {
            return Err(Error::Config(
                "critic_loss = cross_entropy needs critics with a bounded head (value_bound)"
                    .into(),
            ));
        }
        let n = batch.rewards.len();
        let gaussian = self.temperature.is_some();
        let draws = |used: bool| if used { n * self.act_dim } else { 0 };
        let ok = n > 0
            && batch.terminals.len() == n
            && batch.inputs.len() == n * self.input_dim
            && batch.next_inputs.len() == n * self.input_dim
            && batch.actions.len() == n * self.act_dim
            && batch.next_action_noise.len()
                == draws(gaussian || settings.target_policy_noise > 0.0)
            && batch.action_noise.len() == draws(gaussian);
        if !ok {
            return Err(Error::Shape(format!(
                "update batch of {n} rewards has {} inputs, {} next inputs, {} actions, {} \
                 next-action noise values, {} action noise values (input {} and action {} wide, \
                 {} actor)",
                batch.inputs.len(),
                batch.next_inputs.len(),
                batch.actions.len(),
                batch.next_action_noise.len(),
                batch.action_noise.len(),
                self.input_dim,
                self.act_dim,
                if gaussian {
                    "Gaussian"
                } else {
                    "deterministic"
                }
            )));
        }
        Ok(n)
    }

    /// The target actor's actions at `s_{t+1}` (the trained actor's
    /// without target networks), with TD3's clipped smoothing noise.
    fn next_actions(
        actor_tape: &mut MlpTape,
        params: &[f32],
        next: &[f32],
        noise: &[f32],
        settings: &UpdateSettings,
    ) -> Vec<f32> {
        let mut actions = actor_tape.forward(params, next).to_vec();
        fast_tanh_in_place(&mut actions);
        if settings.target_policy_noise <= 0.0 {
            return actions;
        }
        let (std, clip) = (settings.target_policy_noise, settings.target_noise_clip);
        actions
            .iter_mut()
            .zip(noise)
            .for_each(|(a, e)| *a = (*a + (std * e).clamp(-clip, clip)).clamp(-1.0, 1.0));
        actions
    }

    /// `min_i Q'_i(s', a')` per row: the target critics (the trained ones
    /// without target networks), no gradient.
    fn min_next_q(
        &mut self,
        next: &[f32],
        next_actions: &[f32],
        settings: &UpdateSettings,
    ) -> Vec<f32> {
        let rows = next_actions.len() / self.act_dim;
        let input = critic_input(next, next_actions, rows);
        let mut next_q = vec![f32::INFINITY; rows];
        for (i, critic) in self.critics.iter().enumerate() {
            let params = if settings.target_networks {
                &self.target_critics[i]
            } else {
                critic.params()
            };
            let z = self.tapes.critics[i].forward(params, &input);
            let bound = self.value_bound;
            next_q
                .iter_mut()
                .zip(z)
                .for_each(|(m, z)| *m = m.min(critic_head(bound, *z).0));
        }
        next_q
    }

    /// Gradients of the losses at the current parameters, flat as
    /// actor ‖ critic 1 ‖ critic 2 ‖ … (‖ log α for SAC), without the
    /// actor's (and log α's) part when `settings.update_actor` is false.
    /// The actor's gradient uses the critics before their step, as
    /// baselines does ([`ActorCritic::update`] with
    /// [`UpdateSettings::actor_after_critic`] takes it after).
    pub fn gradients(
        &mut self,
        batch: &NetBatch,
        settings: &UpdateSettings,
    ) -> Result<(Vec<f32>, UpdateStats)> {
        let n = self.check_batch(batch, settings)?;
        let (critic_grads, mut stats) = self.critic_gradients(batch, settings, n);
        if !settings.update_actor {
            return Ok((critic_grads, stats));
        }
        let (mut grads, log_alpha_grad) = self.actor_gradients(batch, settings, n, &mut stats);
        grads.extend(critic_grads);
        grads.extend(log_alpha_grad);
        Ok((grads, stats))
    }

    /// The critics' gradients, critic 1 ‖ critic 2 ‖ …, with the critic
    /// loss and mean Q in the stats.
    fn critic_gradients(
        &mut self,
        batch: &NetBatch,
        settings: &UpdateSettings,
        n: usize,
    ) -> (Vec<f32>, UpdateStats) {
        // ---- critic target y = r + γ·(1 − done)·V(s'), clipped ----
        // DDPG/TD3: V(s') = min_i Q'_i(s', ã'), ã' = π'(s') (+ clipped
        // noise); SAC: the soft value (sac.rs). No gradient flows into the
        // targets. Without target networks Q' and π' are the networks
        // being trained.
        let next_values = match &self.actor {
            TrainedActor::Deterministic { actor, target } => {
                let params = if settings.target_networks {
                    target.as_slice()
                } else {
                    actor.params()
                };
                let next_actions = Self::next_actions(
                    &mut self.tapes.actor,
                    params,
                    &batch.next_inputs,
                    &batch.next_action_noise,
                    settings,
                );
                self.min_next_q(&batch.next_inputs, &next_actions, settings)
            }
            TrainedActor::Gaussian(_) => self.soft_next_values(batch, settings),
        };
        let targets: Vec<f32> = (0..n)
            .map(|i| {
                let bootstrap = if batch.terminals[i] {
                    0.0
                } else {
                    settings.gamma * next_values[i]
                };
                let y = batch.rewards[i] + bootstrap;
                settings
                    .target_clip
                    .map_or(y, |(low, high)| y.clamp(low, high))
            })
            .collect();

        // ---- critics: each regresses Q_i(s, a) on y ----
        // Each critic's parameters get the gradient of its own loss
        // (`critic_loss`); the reported loss is their mean squared error
        // whatever the loss, so runs with either stay comparable.
        let input = critic_input(&batch.inputs, &batch.actions, n);
        let mut q_mean = 0.0;
        let mut critic_loss = 0.0;
        let critic_sizes: Vec<usize> = self.critics.iter().map(|c| c.params().len()).collect();
        let mut critic_grads = vec![0.0f32; critic_sizes.iter().sum()];
        let mut d_z = vec![0.0f32; n];
        let mut offset = 0;
        for (i, critic) in self.critics.iter().enumerate() {
            let tape = &mut self.tapes.critics[i];
            let z = tape.forward(critic.params(), &input);
            let mut loss = 0.0f64;
            let mut q_sum = 0.0f64;
            for ((d, z), y) in d_z.iter_mut().zip(z).zip(&targets) {
                let (q, slope) = critic_head(self.value_bound, *z);
                let error = q - y;
                loss += (error * error) as f64;
                q_sum += q as f64;
                *d = match (settings.critic_loss, self.value_bound) {
                    // Q = −H·p: d(BCE)/dz = p − t.
                    (CriticLoss::CrossEntropy, Some(h)) => (q - y.clamp(-h, 0.0)) / -h / n as f32,
                    // `check_batch` refuses cross-entropy on a linear head.
                    _ => 2.0 * error * slope / n as f32,
                };
            }
            if i == 0 {
                q_mean = q_sum / n as f64;
            }
            critic_loss += loss / n as f64;
            let grad = &mut critic_grads[offset..offset + critic_sizes[i]];
            tape.backward(critic.params(), &d_z, Some(grad), None);
            offset += critic_sizes[i];
        }

        let stats = UpdateStats {
            critic_loss: critic_loss / self.critics.len() as f64,
            q_mean,
            ..UpdateStats::default()
        };
        (critic_grads, stats)
    }

    /// The actor's gradient (and log α's, with SAC's temperature) on the
    /// critics as they are now, with the actor's loss (and α and the
    /// temperature loss) in `stats`.
    fn actor_gradients(
        &mut self,
        batch: &NetBatch,
        settings: &UpdateSettings,
        n: usize,
        stats: &mut UpdateStats,
    ) -> (Vec<f32>, Option<f32>) {
        match &self.actor {
            // ---- DDPG's actor: maximise Q_1(s, π(s)), penalise large actions ----
            // The critic is held fixed: only dQ/da goes back, into π.
            TrainedActor::Deterministic { actor, .. } => {
                let act_dim = self.act_dim;
                let actor_tape = &mut self.tapes.actor;
                let pre = actor_tape.forward(actor.params(), &batch.inputs).to_vec();
                let mut pi = pre.clone();
                fast_tanh_in_place(&mut pi);
                let critic = &self.critics[0];
                let critic_tape = &mut self.tapes.critics[0];
                let z = critic_tape.forward(critic.params(), &critic_input(&batch.inputs, &pi, n));
                let mut q_sum = 0.0f64;
                let d_q: Vec<f32> = z
                    .iter()
                    .map(|z| {
                        let (q, slope) = critic_head(self.value_bound, *z);
                        q_sum += q as f64;
                        -slope / n as f32
                    })
                    .collect();
                let width = self.input_dim + act_dim;
                let mut d_input = vec![0.0f32; n * width];
                critic_tape.backward(critic.params(), &d_q, None, Some(&mut d_input));
                // loss = −mean(Q) + l2·mean(π²) + pre_l2·mean(u²); through
                // π = tanh(u) as `bound_gradient` says.
                let (l2, pre_l2) = (settings.action_l2, settings.preactivation_l2);
                let count = (n * act_dim) as f32;
                let (mut squares, mut pre_squares) = (0.0f64, 0.0f64);
                let d_u: Vec<f32> = pi
                    .iter()
                    .zip(&pre)
                    .enumerate()
                    .map(|(k, (a, u))| {
                        squares += (a * a) as f64;
                        pre_squares += (u * u) as f64;
                        let (row, j) = (k / act_dim, k % act_dim);
                        let d_a = d_input[row * width + self.input_dim + j] + 2.0 * l2 * a / count;
                        let d_u = settings.bound_gradient.pre_activation(*a, d_a);
                        if pre_l2 > 0.0 {
                            d_u + 2.0 * pre_l2 * u / count
                        } else {
                            d_u
                        }
                    })
                    .collect();
                stats.actor_loss = Some(
                    -q_sum / n as f64
                        + l2 as f64 * squares / count as f64
                        + pre_l2 as f64 * pre_squares / count as f64,
                );
                stats.actor_at_bound = Some(share_at_bound(&pi));
                let mut grads = vec![0.0f32; actor.params().len()];
                actor_tape.backward(actor.params(), &d_u, Some(&mut grads), None);
                (grads, None)
            }
            // ---- SAC's actor and temperature (sac.rs) ----
            TrainedActor::Gaussian(_) => {
                let step = self.soft_actor_step(batch, settings, n);
                stats.actor_loss = Some(step.actor_loss);
                stats.alpha = self.alpha();
                stats.temperature_loss = Some(step.temperature_loss);
                stats.actor_at_bound = Some(step.mean_at_bound);
                (step.actor_grads, Some(step.log_alpha_grad))
            }
        }
    }

    /// Parameter counts: the actor's, then each critic's (then log α's 1
    /// with SAC's temperature).
    pub(crate) fn sizes(&self) -> Vec<usize> {
        let mut sizes = vec![self.actor.num_params()];
        sizes.extend(self.critics.iter().map(|c| c.params().len()));
        if self.temperature.is_some() {
            sizes.push(1);
        }
        sizes
    }

    /// One Adam step from a flat actor ‖ critics (‖ log α) gradient
    /// (critics only when `settings.update_actor` is false, as
    /// [`ActorCritic::gradients`] made it).
    pub fn apply(&mut self, grads: &mut [f32], settings: &UpdateSettings) -> Result<()> {
        let parts = if settings.update_actor {
            Parts::All
        } else {
            Parts::Critics
        };
        self.step(grads, parts)
    }

    /// One Adam step of `parts` from their flat gradient, in the order of
    /// [`ActorCritic::sizes`]; nothing changes when it fails.
    fn step(&mut self, grads: &mut [f32], parts: Parts) -> Result<()> {
        let sizes = self.sizes();
        let critic_sizes = &sizes[1..1 + self.critics.len()];
        let (with_actor, with_critics) = match parts {
            Parts::All => (true, true),
            Parts::Critics => (false, true),
            Parts::Actor => (true, false),
        };
        let actor_size = sizes[0] + usize::from(self.temperature.is_some());
        let expected = usize::from(with_actor) * actor_size
            + usize::from(with_critics) * critic_sizes.iter().sum::<usize>();
        if grads.len() != expected {
            let networks = match (parts, self.temperature.is_some()) {
                (Parts::Critics, _) => "critics",
                (Parts::All, false) => "actor and critics",
                (Parts::All, true) => "actor, critics and log α",
                (Parts::Actor, false) => "actor",
                (Parts::Actor, true) => "actor and log α",
            };
            return Err(Error::Shape(format!(
                "gradient has {} values, {networks} have {expected}",
                grads.len(),
            )));
        }
        let (mut actor, mut critics) = (self.actor.clone(), self.critics.clone());
        let mut temperature = self.temperature.clone();
        let mut rest = grads;
        if with_actor {
            let (part, tail) = rest.split_at_mut(sizes[0]);
            actor.step(part)?;
            rest = tail;
        }
        if with_critics {
            for (critic, &size) in critics.iter_mut().zip(critic_sizes) {
                let (part, tail) = rest.split_at_mut(size);
                critic.step(part)?;
                rest = tail;
            }
        }
        if let (true, Some(temperature)) = (with_actor, temperature.as_mut()) {
            temperature.step(rest)?;
        }
        self.acting = actor.frozen();
        self.actor = actor;
        self.critics = critics;
        self.temperature = temperature;
        self.stepped = true;
        Ok(())
    }

    /// Gradients on `batch`, averaged through `reducer`, then a step: one
    /// message and one step of everything, or, with
    /// [`UpdateSettings::actor_after_critic`] on an update that steps the
    /// actor, the critics' gradient averaged and stepped first and the
    /// actor's (and log α's) then taken on the stepped critics, averaged
    /// and stepped. Should the second message fail, the critics have
    /// stepped and the actor has not; the error ends the run.
    pub fn update(
        &mut self,
        batch: &NetBatch,
        settings: &UpdateSettings,
        reducer: &mut dyn MeanReducer,
    ) -> Result<UpdateStats> {
        if !(settings.actor_after_critic && settings.update_actor) {
            let (mut grads, stats) = self.gradients(batch, settings)?;
            reducer.mean(&mut grads)?;
            self.apply(&mut grads, settings)?;
            return Ok(stats);
        }
        let n = self.check_batch(batch, settings)?;
        let (mut critic_grads, mut stats) = self.critic_gradients(batch, settings, n);
        reducer.mean(&mut critic_grads)?;
        self.step(&mut critic_grads, Parts::Critics)?;
        let (mut grads, log_alpha_grad) = self.actor_gradients(batch, settings, n, &mut stats);
        grads.extend(log_alpha_grad);
        reducer.mean(&mut grads)?;
        self.step(&mut grads, Parts::Actor)?;
        Ok(stats)
    }

    /// Moves the targets toward the trained networks: `θ' ← polyak·θ' + (1 − polyak)·θ`
    /// (the critics', and the actor's when it has a target: SAC's has none).
    pub fn update_targets(&mut self, polyak: f64) -> Result<()> {
        let blend = |target: Vec<f32>, trained: Vec<f32>| -> Vec<f32> {
            let keep = polyak as f32;
            target
                .iter()
                .zip(trained)
                .map(|(t, m)| keep * t + (1.0 - keep) * m)
                .collect()
        };
        let mut actor = self.actor.clone();
        let target_actor = actor.target_parameters();
        if !target_actor.is_empty() {
            actor.set_target_parameters(&blend(target_actor, actor.parameters()))?;
        }
        let target_critics = self
            .target_critics
            .iter()
            .zip(&self.critics)
            .map(|(target, critic)| blend(target.clone(), critic.parameters()))
            .collect();
        self.actor = actor;
        self.target_critics = target_critics;
        Ok(())
    }

    /// Actor ‖ critic 1 ‖ critic 2 ‖ … (‖ log α) parameters.
    pub fn parameters(&self) -> Vec<f32> {
        let mut flat = self.actor.parameters();
        for critic in &self.critics {
            flat.extend(critic.parameters());
        }
        if let Some(temperature) = &self.temperature {
            flat.extend(temperature.parameters());
        }
        flat
    }

    /// Target actor ‖ target critics parameters (tests compare them).
    #[cfg(test)]
    pub(crate) fn target_parameters(&self) -> Vec<f32> {
        let mut flat = self.actor.target_parameters();
        for critic in &self.target_critics {
            flat.extend(critic);
        }
        flat
    }

    /// Overwrites actor ‖ critics (‖ log α) parameters. Before the first
    /// gradient step the targets are reset to copies too (as at
    /// initialisation), so a fresh agent given another worker's parameters
    /// matches it exactly; afterwards targets are training state that only
    /// [`ActorCritic::load_state`] replaces.
    pub fn set_parameters(&mut self, params: &[f32]) -> Result<()> {
        let what = if self.temperature.is_some() {
            "actor, critics and log α"
        } else {
            "actor and critics"
        };
        let parts = split_parameters(params, &self.sizes(), what)?;
        let (mut actor, mut critics) = (self.actor.clone(), self.critics.clone());
        let mut temperature = self.temperature.clone();
        actor.set_parameters(parts[0], !self.stepped)?;
        for (critic, part) in critics.iter_mut().zip(&parts[1..]) {
            critic.set_parameters(part)?;
        }
        if let Some(temperature) = temperature.as_mut() {
            temperature.set_parameters(parts[parts.len() - 1])?;
        }
        self.acting = actor.frozen();
        self.actor = actor;
        self.critics = critics;
        self.temperature = temperature;
        if !self.stepped {
            self.target_critics = self.critics.iter().map(Trained::parameters).collect();
        }
        Ok(())
    }

    /// Networks, targets, temperature and optimiser moments as bytes.
    pub fn save_state(&self) -> Vec<u8> {
        postcard::to_stdvec(&ActorCriticState {
            actor: self.actor.save_state(),
            critics: self.critics.iter().map(Trained::save_state).collect(),
            target_actor: self.actor.target_parameters(),
            target_critics: self.target_critics.clone(),
            temperature: self.temperature.as_ref().map(Temperature::save_state),
        })
        .expect("serialising plain vectors cannot fail")
    }

    /// Restores [`ActorCritic::save_state`] output; on error `self` is unchanged.
    pub fn load_state(&mut self, bytes: &[u8]) -> Result<()> {
        let state: ActorCriticState = postcard::from_bytes(bytes)
            .map_err(|e| Error::Shape(format!("actor-critic state is unreadable: {e}")))?;
        if state.critics.len() != self.critics.len()
            || state.target_critics.len() != self.critics.len()
        {
            return Err(Error::Shape(format!(
                "actor-critic state has {} critics, these networks {}",
                state.critics.len(),
                self.critics.len()
            )));
        }
        let kind = |gaussian: bool| {
            if gaussian {
                "a Gaussian"
            } else {
                "a deterministic"
            }
        };
        if state.temperature.is_some() != self.temperature.is_some() {
            return Err(Error::Shape(format!(
                "actor-critic state has {} actor, these networks {} one",
                kind(state.temperature.is_some()),
                kind(self.temperature.is_some())
            )));
        }
        let (mut actor, mut critics) = (self.actor.clone(), self.critics.clone());
        let mut temperature = self.temperature.clone();
        actor.load_state(&state.actor)?;
        actor.set_target_parameters(&state.target_actor)?;
        for (critic, bytes) in critics.iter_mut().zip(&state.critics) {
            critic.load_state(bytes)?;
        }
        if let (Some(temperature), Some(bytes)) = (temperature.as_mut(), &state.temperature) {
            temperature.load_state(bytes)?;
        }
        for (target, flat) in self.target_critics.iter().zip(&state.target_critics) {
            if flat.len() != target.len() {
                return Err(Error::Shape(format!(
                    "actor-critic state has a target critic of {} values, the critics have {}",
                    flat.len(),
                    target.len()
                )));
            }
        }
        let target_critics = state.target_critics;
        self.acting = actor.frozen();
        self.actor = actor;
        self.critics = critics;
        self.target_critics = target_critics;
        self.temperature = temperature;
        self.stepped = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
