//! DDPG (Lillicrap et al., 2016) with hindsight experience replay (Andrychowicz et al., 2017), as in OpenAI baselines' `her`.
//!
//! Read top to bottom: the config with baselines' defaults, the networks and
//! one update ([`ActorCritic`]), the frozen policy ([`DdpgPolicy`]), then the
//! agent: collecting an episode, storing it, training rounds, and the
//! `Learner` plumbing that lets parallel strategies drive it.
//!
//! # The schedule
//!
//! Episodes are grouped into *cycles* of `episodes_per_cycle`. At the end of
//! every cycle (with the default `train_every = cycle`) the normaliser
//! statistics are synchronised, then `n_batches` gradient steps of
//! `batch_size` HER-relabelled transitions are taken, then the target networks
//! move toward the trained ones by polyak averaging. `train_every = episode`
//! runs such a round after every episode, `train_every = step` after every
//! environment step (on the episodes stored so far).
//!
//! # Reproducibility
//!
//! Episode `k` of a run always resets its environment with the seed derived
//! from `(seed, k)` and explores with generators derived from `(seed, k)`;
//! training round `r` samples with a generator derived from `(seed, r)`. The
//! counters are part of the state, the replay buffer is the memory, so
//! `save_state` + `save_memory` → `load_state` + `load_memory` → continue
//! gives exactly the numbers of an uninterrupted run.
//!
//! # Gradient parallelism
//!
//! In [`GradientLearner::learn_averaged`] every gradient (actor and critic in
//! one vector, once per batch) and the normaliser statistics (once per cycle)
//! pass through the reducer before use, so workers with their own
//! environments and replay buffers keep bit-identical networks and
//! normalisers. The number of reducer calls depends only on the number of
//! episodes, which every worker shares; `train_every = step` would tie it to
//! episode lengths, which differ between workers, so it is refused there.

use burn::module::Module;
use burn::tensor::{Device, Tensor, TensorData};
use rand::RngExt;
use serde::{Deserialize, Serialize};
use shoal_core::{
    Alone, Error, EvalReport, GoalEnv, GradientLearner, LearnReport, Learner, MeanReducer, Policy,
    Result, Space, derive_seed, rng_from_seed,
};
use shoal_policy::{
    Actor, ActorConfig, Critic, CriticConfig, NoiseKind, Normalizer, Trained, flatten,
    rows_to_tensor, training_device, unflatten,
};

use crate::check;
use crate::her::{
    HerConfig, HerStrategy, MissedRelabel, RelabelCounts, TransitionBatch, sample_batch,
    sample_episode,
};
use crate::replay::{Episode, EpisodeDims, ReplayBuffer};

/// The action space of `env` after checking that `eval_env` is the same task
/// and that actions are bounded (actors squash to the bounds); `algo` names
/// the algorithm in the error.
pub(crate) fn matching_bounded_envs<E: GoalEnv>(
    env: &E,
    eval_env: &E,
    algo: &str,
) -> Result<Space> {
    if eval_env.goal_dim() != env.goal_dim()
        || eval_env.observation_space().dim() != env.observation_space().dim()
        || eval_env.action_space() != env.action_space()
    {
        return Err(Error::Config(
            "the evaluation env differs from the training env".into(),
        ));
    }
    let action_space = env.action_space().clone();
    if action_space
        .low
        .iter()
        .chain(&action_space.high)
        .any(|b| !b.is_finite())
    {
        return Err(Error::Config(format!(
            "{algo} needs a bounded action space"
        )));
    }
    Ok(action_space)
}

/// When training rounds run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TrainEvery {
    /// After every environment step (Stable-Baselines3's default `train_freq = 1`);
    /// pair it with a small `n_batches`. Single worker only.
    Step,
    /// After every episode.
    Episode,
    /// After every `episodes_per_cycle` episodes (OpenAI baselines HER).
    #[default]
    Cycle,
}

/// Hyperparameters of [`Ddpg`]. Defaults are OpenAI baselines' HER settings
/// for the Fetch tasks, per worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DdpgConfig {
    /// Hidden layer widths of actor and critic. Default [256, 256, 256].
    pub hidden: Vec<usize>,
    /// Adam step size of the actor. Default 1e-3.
    pub actor_lr: f64,
    /// Adam step size of the critic. Default 1e-3.
    pub critic_lr: f64,
    /// Global gradient-norm clip of each network (absent: none). Default none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_grad_norm: Option<f64>,
    /// Replay capacity in transitions. Default 1 000 000.
    pub buffer_size: usize,
    /// Target networks keep this fraction of themselves per update:
    /// `θ' ← polyak·θ' + (1 − polyak)·θ`. Default 0.95.
    pub polyak: f64,
    /// Weight of the mean squared action (in `[-1, 1]` units) in the actor loss. Default 1.0.
    pub action_l2: f64,
    /// Discount factor γ; baselines uses `1 − 1/T`. Default 0.98.
    pub gamma: f64,
    /// Transitions per gradient step. Default 256.
    pub batch_size: usize,
    /// Episodes per cycle (baselines' `rollout_batch_size`). Default 2.
    pub episodes_per_cycle: usize,
    /// Gradient steps per training round. Default 40.
    pub n_batches: usize,
    /// When training rounds run. Default `cycle`.
    pub train_every: TrainEvery,
    /// Episodes of uniformly random actions, without training, at the start. Default 0.
    pub learning_starts: usize,
    /// Probability of a uniformly random action at each step. Default 0.3.
    pub random_eps: f64,
    /// Scale of the exploration noise, in `[-1, 1]` action units. Default 0.2.
    pub noise_eps: f64,
    /// Kind of exploration noise. Default `gaussian`.
    pub noise: NoiseKind,
    /// Observations and goals are clamped to ±this before normalising. Default 200.
    pub clip_obs: f64,
    /// Normalised inputs are clipped to ±this. Default 5.
    pub norm_clip: f64,
    /// Lower bound of the normalisers' standard deviation. Default 0.01.
    pub norm_eps: f64,
    /// Clip critic targets to `[−1/(1−γ), 0]`, the value range of a −1/0
    /// reward. Default true.
    pub clip_target: bool,
    /// Source of hindsight goals. Default `future`.
    pub her_strategy: HerStrategy,
    /// Hindsight goals per real goal (relabel probability `k/(1+k)`). Default 4.
    pub her_k: usize,
    /// Do not relabel episodes whose achieved goal never moved (see [`HerConfig`]). Default false.
    pub her_skip_static: bool,
    /// Draw hindsight goals only until the achieved goal settles (see [`HerConfig`]). Default false.
    pub her_cap_at_settle: bool,
    /// Relabelling of episodes whose object moved but missed the goal: `keep`
    /// (plain HER) or `path` (only points the object passed while moving,
    /// never where it stopped; see [`MissedRelabel`]). Default `keep`.
    pub her_missed: MissedRelabel,
    /// Movement below which the achieved goal counts as static (goal units). Default 0.001.
    pub her_static_epsilon: f64,
    /// A transition is terminal when its achieved goal reaches the goal it is
    /// replayed with (envs that end on success). Default true.
    pub success_is_terminal: bool,
}

impl Default for DdpgConfig {
    fn default() -> Self {
        DdpgConfig {
            hidden: vec![256, 256, 256],
            actor_lr: 1e-3,
            critic_lr: 1e-3,
            max_grad_norm: None,
            buffer_size: 1_000_000,
            polyak: 0.95,
            action_l2: 1.0,
            gamma: 0.98,
            batch_size: 256,
            episodes_per_cycle: 2,
            n_batches: 40,
            train_every: TrainEvery::Cycle,
            learning_starts: 0,
            random_eps: 0.3,
            noise_eps: 0.2,
            noise: NoiseKind::Gaussian,
            clip_obs: 200.0,
            norm_clip: 5.0,
            norm_eps: 0.01,
            clip_target: true,
            her_strategy: HerStrategy::Future,
            her_k: 4,
            her_skip_static: false,
            her_cap_at_settle: false,
            her_missed: MissedRelabel::Keep,
            her_static_epsilon: 1e-3,
            success_is_terminal: true,
        }
    }
}

impl DdpgConfig {
    /// Checks every value; the error names the offending key.
    pub fn validate(&self) -> Result<()> {
        let bad = |key: &str, why: &str| Err(Error::Config(format!("ddpg {key} {why}")));
        if !(0.0..1.0).contains(&self.gamma) {
            return bad("gamma", "must be in [0, 1)");
        }
        if !(0.0..=1.0).contains(&self.polyak) {
            return bad("polyak", "must be in [0, 1]");
        }
        check::positive("ddpg", "actor_lr", self.actor_lr)?;
        check::positive("ddpg", "critic_lr", self.critic_lr)?;
        check::grad_norm("ddpg", self.max_grad_norm)?;
        check::hidden("ddpg", &self.hidden)?;
        check::count("ddpg", "batch_size", self.batch_size, check::MAX_BATCH)?;
        check::count(
            "ddpg",
            "episodes_per_cycle",
            self.episodes_per_cycle,
            check::MAX_BATCH,
        )?;
        check::count("ddpg", "n_batches", self.n_batches, check::MAX_BATCH)?;
        if self.her_k > check::MAX_HER_K {
            return bad("her_k", "must be at most 64");
        }
        if self.buffer_size == 0 {
            return bad("buffer_size", "must be at least 1");
        }
        if !(0.0..=1.0).contains(&self.random_eps) {
            return bad("random_eps", "must be a probability");
        }
        if !(self.noise_eps.is_finite()
            && self.noise_eps >= 0.0
            && self.action_l2.is_finite()
            && self.action_l2 >= 0.0)
        {
            return bad("noise_eps / action_l2", "must be finite and non-negative");
        }
        if !(self.clip_obs > 0.0 && self.norm_clip > 0.0 && self.norm_eps > 0.0) {
            return bad("clip_obs / norm_clip / norm_eps", "must be positive");
        }
        self.her().validate()
    }

    /// The hindsight settings as a [`HerConfig`].
    pub fn her(&self) -> HerConfig {
        HerConfig {
            strategy: self.her_strategy,
            k: self.her_k,
            skip_static: self.her_skip_static,
            cap_at_settle: self.her_cap_at_settle,
            missed: self.her_missed,
            static_epsilon: self.her_static_epsilon as f32,
            success_is_terminal: self.success_is_terminal,
        }
    }
}

// -------------------------------------------------------------------------
// Networks and one update
// -------------------------------------------------------------------------

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
        let next = rows_to_tensor(&batch.next_inputs, self.input_dim, &self.plain);
        let next_q = self
            .target_critic
            .forward(next.clone(), self.target_actor.forward(next));
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

    /// Overwrites actor ‖ critic parameters. Before the first gradient step
    /// the targets are reset to copies too (as at initialisation), so a
    /// fresh agent given another worker's parameters matches it exactly;
    /// afterwards targets are training state that only
    /// [`ActorCritic::load_state`] replaces.
    pub fn set_parameters(&mut self, params: &[f32]) -> Result<()> {
        let split = self.actor.module.num_params();
        let expected = split + self.critic.module.num_params();
        if params.len() != expected {
            return Err(Error::Shape(format!(
                "parameter vector has {} values, actor and critic have {expected}",
                params.len()
            )));
        }
        let (mut actor, mut critic) = (self.actor.clone(), self.critic.clone());
        actor.set_parameters(&params[..split])?;
        critic.set_parameters(&params[split..])?;
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

// -------------------------------------------------------------------------
// The frozen policy
// -------------------------------------------------------------------------

/// Appends the network input for observation part `obs` and goal `goal`:
/// each clamped to ±`clip_obs`, then normalised.
fn push_input(
    obs_norm: &Normalizer,
    goal_norm: &Normalizer,
    clip_obs: f32,
    obs: &[f32],
    goal: &[f32],
    out: &mut Vec<f32>,
) -> Result<()> {
    obs_norm.normalize_clipped_into(obs, clip_obs, out)?;
    goal_norm.normalize_clipped_into(goal, clip_obs, out)
}

/// A trained DDPG actor frozen for evaluation: normalises goal-env
/// observations `[observation | achieved_goal | desired_goal]` like the agent
/// and acts deterministically.
#[derive(Clone, Debug)]
pub struct DdpgPolicy {
    actor: Actor,
    obs_norm: Normalizer,
    goal_norm: Normalizer,
    clip_obs: f32,
    action_space: Space,
    device: Device,
}

impl DdpgPolicy {
    /// The action in the actor's `[-1, 1]` scale, or a shape error when `obs`
    /// does not have the environment's layout.
    pub fn unit_action(&self, obs: &[f32]) -> Result<Vec<f32>> {
        let (o, g) = (self.obs_norm.dim(), self.goal_norm.dim());
        if obs.len() != o + 2 * g {
            return Err(Error::Shape(format!(
                "observation has {} values, the policy expects {o} + 2 × {g}",
                obs.len()
            )));
        }
        self.unit_action_for(&obs[..o], &obs[o + g..])
    }

    /// The action in `[-1, 1]` for observation part `obs` and desired goal `goal`.
    fn unit_action_for(&self, obs: &[f32], goal: &[f32]) -> Result<Vec<f32>> {
        let mut input = Vec::with_capacity(obs.len() + goal.len());
        push_input(
            &self.obs_norm,
            &self.goal_norm,
            self.clip_obs,
            obs,
            goal,
            &mut input,
        )?;
        Ok(self.actor.act(&input, &self.device))
    }

    /// The action in the environment's bounds, or a shape error.
    pub fn try_act(&self, obs: &[f32]) -> Result<Vec<f32>> {
        Ok(self.action_space.from_symmetric(&self.unit_action(obs)?))
    }
}

impl Policy for DdpgPolicy {
    /// The deterministic action. For an observation of the wrong length (a
    /// caller's bug) it returns NaNs, which every environment rejects with
    /// `Error::NonFiniteAction`; [`DdpgPolicy::try_act`] gives the error itself.
    fn act(&self, obs: &[f32]) -> Vec<f32> {
        self.try_act(obs)
            .unwrap_or_else(|_| vec![f32::NAN; self.action_space.dim()])
    }
}

// -------------------------------------------------------------------------
// The agent
// -------------------------------------------------------------------------

/// Streams of [`derive_seed`] for the generators of episode `k` / round `r`.
const ENV_STREAM: u64 = 1 << 40;
const EXPLORE_STREAM: u64 = 2 << 40;
const NOISE_STREAM: u64 = 3 << 40;
const NORMALIZER_STREAM: u64 = 4 << 40;
const ROUND_STREAM: u64 = 5 << 40;

/// Bumped whenever [`DdpgState`]'s layout changes.
const STATE_VERSION: u32 = 1;

/// Everything [`Ddpg`] changes while training, except the replay buffer.
#[derive(Serialize, Deserialize)]
struct DdpgState {
    version: u32,
    networks: Vec<u8>,
    obs_norm: Normalizer,
    goal_norm: Normalizer,
    episodes: u64,
    env_steps: u64,
    rounds: u64,
    updates: u64,
}

/// Sums of update statistics over a `learn` call.
#[derive(Default)]
struct Tally {
    updates: usize,
    critic_loss: f64,
    actor_loss: f64,
    q_mean: f64,
    relabelled: f64,
    relabels: RelabelCounts,
}

impl Tally {
    fn add(&mut self, stats: UpdateStats, relabelled: f64) {
        self.updates += 1;
        self.critic_loss += stats.critic_loss;
        self.actor_loss += stats.actor_loss;
        self.q_mean += stats.q_mean;
        self.relabelled += relabelled;
    }
}

/// A DDPG + HER agent on its own goal environment.
///
/// ```no_run
/// # fn demo<E: shoal_core::GoalEnv>(env: E, eval_env: E) -> shoal_core::Result<()> {
/// use shoal_algo::{Ddpg, DdpgConfig};
/// use shoal_core::Learner;
/// let mut agent = Ddpg::new(DdpgConfig::default(), env, eval_env, 7)?;
/// agent.learn(100)?;
/// let report = agent.evaluate(10, 0)?;
/// println!("success rate {:?}", report.success_rate);
/// # Ok(()) }
/// ```
pub struct Ddpg<E: GoalEnv> {
    config: DdpgConfig,
    her: HerConfig,
    env: E,
    eval_env: E,
    action_space: Space,
    dims: EpisodeDims,
    networks: ActorCritic,
    obs_norm: Normalizer,
    goal_norm: Normalizer,
    buffer: ReplayBuffer,
    seed: u64,
    episodes: u64,
    env_steps: u64,
    rounds: u64,
    updates: u64,
    /// Scratch batches, kept to reuse their allocations.
    transitions: TransitionBatch,
    net_batch: NetBatch,
}

impl<E: GoalEnv> Ddpg<E> {
    /// An agent with networks initialised from `seed`, training on `env` and
    /// evaluating on `eval_env` (two instances of the same task).
    pub fn new(config: DdpgConfig, env: E, eval_env: E, seed: u64) -> Result<Self> {
        config.validate()?;
        let goal = env.goal_dim();
        let full = env.observation_space().dim();
        if goal == 0 || full < 2 * goal {
            return Err(Error::Config(format!(
                "a goal env needs goals of at least one component inside its observation \
                 (observation {full}, goal {goal})"
            )));
        }
        let action_space = matching_bounded_envs(&env, &eval_env, "DDPG")?;
        let dims = EpisodeDims {
            obs: full - 2 * goal,
            goal,
            act: action_space.dim(),
        };
        let networks = ActorCritic::new(
            &ActorCriticConfig {
                input_dim: dims.obs + dims.goal,
                act_dim: dims.act,
                hidden: config.hidden.clone(),
                actor_lr: config.actor_lr,
                critic_lr: config.critic_lr,
                max_grad_norm: config.max_grad_norm,
            },
            seed,
        );
        let normalizer = |dim| {
            Normalizer::new(dim)
                .with_clip(config.norm_clip as f32)
                .with_eps(config.norm_eps as f32)
        };
        Ok(Ddpg {
            her: config.her(),
            obs_norm: normalizer(dims.obs),
            goal_norm: normalizer(dims.goal),
            buffer: ReplayBuffer::new(dims, config.buffer_size)?,
            config,
            env,
            eval_env,
            action_space,
            dims,
            networks,
            seed,
            episodes: 0,
            env_steps: 0,
            rounds: 0,
            updates: 0,
            transitions: TransitionBatch::default(),
            net_batch: NetBatch::default(),
        })
    }

    /// The hyperparameters.
    pub fn config(&self) -> &DdpgConfig {
        &self.config
    }

    /// Episodes trained so far (survives save/load).
    pub fn episodes(&self) -> u64 {
        self.episodes
    }

    /// Environment steps trained so far (survives save/load).
    pub fn env_steps(&self) -> u64 {
        self.env_steps
    }

    /// Gradient steps taken so far (survives save/load).
    pub fn updates(&self) -> u64 {
        self.updates
    }

    /// The replay buffer.
    pub fn buffer(&self) -> &ReplayBuffer {
        &self.buffer
    }

    /// The networks.
    pub fn networks(&self) -> &ActorCritic {
        &self.networks
    }

    /// The current policy, frozen for evaluation.
    pub fn frozen_policy(&self) -> DdpgPolicy {
        DdpgPolicy {
            actor: self.networks.actor().clone(),
            obs_norm: self.obs_norm.clone(),
            goal_norm: self.goal_norm.clone(),
            clip_obs: self.config.clip_obs as f32,
            action_space: self.action_space.clone(),
            device: self.networks.plain.clone(),
        }
    }

    fn split_owned(&self, obs: &[f32]) -> Result<(Vec<f32>, Vec<f32>, Vec<f32>)> {
        let d = self.dims;
        if obs.len() != d.obs + 2 * d.goal {
            return Err(Error::Shape(format!(
                "the env returned an observation of {} values, expected {}",
                obs.len(),
                d.obs + 2 * d.goal
            )));
        }
        let (o, rest) = obs.split_at(d.obs);
        let (achieved, desired) = rest.split_at(d.goal);
        Ok((o.to_vec(), achieved.to_vec(), desired.to_vec()))
    }

    // ---------------------------------------------------------------------
    // Collection
    // ---------------------------------------------------------------------

    /// Plays episode `k = self.episodes` with exploration: with probability
    /// `random_eps` (always, during warm-up) a uniform random action, else the
    /// actor's action plus noise, clipped to `[-1, 1]`. With
    /// `train_every = step`, trains after every step.
    fn collect_episode(
        &mut self,
        reducer: &mut dyn MeanReducer,
        tally: &mut Tally,
    ) -> Result<(Episode, f64, bool)> {
        let k = self.episodes;
        let warmup = k < self.config.learning_starts as u64;
        let mut rng = rng_from_seed(derive_seed(self.seed, EXPLORE_STREAM + k));
        let mut noise = self.config.noise.build(
            self.dims.act,
            self.config.noise_eps as f32,
            derive_seed(self.seed, NOISE_STREAM + k),
        )?;
        let first = self.env.reset(Some(derive_seed(self.seed, ENV_STREAM + k)));
        let (mut obs, achieved, mut desired) = self.split_owned(&first)?;
        let mut episode = Episode::start(self.dims, &obs, &achieved);
        let mut policy = self.frozen_policy();
        let mut undiscounted = 0.0;
        loop {
            let action: Vec<f32> = if warmup || rng.random::<f64>() < self.config.random_eps {
                (0..self.dims.act)
                    .map(|_| rng.random_range(-1.0f32..=1.0))
                    .collect()
            } else {
                let mean = policy.unit_action_for(&obs, &desired)?;
                mean.iter()
                    .zip(noise.sample())
                    .map(|(a, n)| (a + n).clamp(-1.0, 1.0))
                    .collect()
            };
            let step = self.env.step(&self.action_space.from_symmetric(&action))?;
            let (next_obs, next_achieved, next_desired) = self.split_owned(&step.obs)?;
            episode.push(&desired, &action, &next_obs, &next_achieved);
            undiscounted += step.reward as f64;
            self.env_steps += 1;

            if self.config.train_every == TrainEvery::Step && !warmup && !self.buffer.is_empty() {
                self.train_round(reducer, tally)?;
                policy = self.frozen_policy();
            }

            if step.done() {
                episode.set_terminated(step.terminated);
                let success = match step.info.get("is_success") {
                    Some(flag) => flag > 0.5,
                    None => self.env.is_success(&next_achieved, &next_desired),
                };
                return Ok((episode, undiscounted, success));
            }
            obs = next_obs;
            desired = next_desired;
        }
    }

    /// Adds `episode`'s (relabelled) observations and goals to the pending
    /// normaliser sums, as baselines does with the transitions of each new
    /// episode.
    fn update_normalizer_stats(&mut self, episode: &Episode) -> Result<()> {
        let mut rng = rng_from_seed(derive_seed(self.seed, NORMALIZER_STREAM + self.episodes));
        self.transitions.clear();
        sample_episode(
            episode,
            &self.her,
            episode.len(),
            &self.env,
            &mut rng,
            &mut self.transitions,
        );
        let clip = self.config.clip_obs as f32;
        let clamp = |v: &[f32]| v.iter().map(|x| x.clamp(-clip, clip)).collect::<Vec<_>>();
        self.obs_norm.update(&clamp(&self.transitions.obs))?;
        self.goal_norm.update(&clamp(&self.transitions.goals))
    }

    /// Averages both normalisers' pending statistics in one reducer call.
    fn sync_normalizers(&mut self, reducer: &mut dyn MeanReducer) -> Result<()> {
        let mut stats = self.obs_norm.pending_stats();
        let split = stats.len();
        stats.extend(self.goal_norm.pending_stats());
        reducer.mean(&mut stats)?;
        self.obs_norm.apply_stats(&stats[..split])?;
        self.goal_norm.apply_stats(&stats[split..])
    }

    // ---------------------------------------------------------------------
    // Training
    // ---------------------------------------------------------------------

    fn settings(&self) -> UpdateSettings {
        let gamma = self.config.gamma as f32;
        UpdateSettings {
            gamma,
            action_l2: self.config.action_l2 as f32,
            target_clip: self.config.clip_target.then(|| (-1.0 / (1.0 - gamma), 0.0)),
        }
    }

    /// Turns the sampled transitions into network inputs.
    fn prepare_batch(&mut self) -> Result<()> {
        let (batch, out) = (&self.transitions, &mut self.net_batch);
        let (d, clip) = (self.dims, self.config.clip_obs as f32);
        out.inputs.clear();
        out.next_inputs.clear();
        for i in 0..batch.len() {
            let goal = &batch.goals[i * d.goal..(i + 1) * d.goal];
            let (o, o_next) = (
                &batch.obs[i * d.obs..(i + 1) * d.obs],
                &batch.next_obs[i * d.obs..(i + 1) * d.obs],
            );
            push_input(
                &self.obs_norm,
                &self.goal_norm,
                clip,
                o,
                goal,
                &mut out.inputs,
            )?;
            push_input(
                &self.obs_norm,
                &self.goal_norm,
                clip,
                o_next,
                goal,
                &mut out.next_inputs,
            )?;
        }
        out.actions.clone_from(&batch.actions);
        out.rewards.clone_from(&batch.rewards);
        out.terminals.clone_from(&batch.terminals);
        Ok(())
    }

    /// `n_batches` gradient steps on HER batches, then the target update.
    /// Round `r` samples with the generator derived from `(seed, r)`.
    fn train_round(&mut self, reducer: &mut dyn MeanReducer, tally: &mut Tally) -> Result<()> {
        let mut rng = rng_from_seed(derive_seed(self.seed, ROUND_STREAM + self.rounds));
        let settings = self.settings();
        for _ in 0..self.config.n_batches {
            self.transitions.clear();
            sample_batch(
                &self.buffer,
                &self.her,
                self.config.batch_size,
                &self.env,
                &mut rng,
                &mut self.transitions,
            );
            self.prepare_batch()?;
            let stats = self.networks.update(&self.net_batch, &settings, reducer)?;
            tally.add(stats, self.transitions.relabelled_fraction());
            tally.relabels.merge(&self.transitions.relabel_counts());
            self.updates += 1;
        }
        self.networks.update_targets(self.config.polyak)?;
        self.rounds += 1;
        Ok(())
    }

    fn learn_with(
        &mut self,
        episodes: usize,
        reducer: &mut dyn MeanReducer,
        averaged: bool,
    ) -> Result<LearnReport> {
        if averaged && self.config.train_every == TrainEvery::Step {
            return Err(Error::Config(
                "ddpg train_every = \"step\" cannot average gradients across workers, whose \
                 episode lengths differ; use \"episode\" or \"cycle\""
                    .into(),
            ));
        }
        let mut report = LearnReport::default();
        let mut tally = Tally::default();
        for _ in 0..episodes {
            let (episode, undiscounted, success) = self.collect_episode(reducer, &mut tally)?;
            report.episode_returns.push(undiscounted);
            report.episode_lengths.push(episode.len() as u64);
            report.episode_successes.push(success);
            self.update_normalizer_stats(&episode)?;
            self.buffer.push(episode)?;
            self.episodes += 1;

            // ---- end of a cycle (or episode): sync statistics, then train ----
            let boundary = match self.config.train_every {
                TrainEvery::Cycle => self
                    .episodes
                    .is_multiple_of(self.config.episodes_per_cycle as u64),
                TrainEvery::Episode | TrainEvery::Step => true,
            };
            if boundary {
                self.sync_normalizers(reducer)?;
                let trains = self.config.train_every != TrainEvery::Step
                    && self.episodes >= self.config.learning_starts as u64;
                if trains {
                    self.train_round(reducer, &mut tally)?;
                }
            }
        }
        if tally.updates > 0 {
            let n = tally.updates as f64;
            report.scalars.extend([
                ("losses/critic".to_string(), tally.critic_loss / n),
                ("losses/actor".to_string(), tally.actor_loss / n),
                ("charts/q_mean".to_string(), tally.q_mean / n),
                (
                    "charts/relabelled_fraction".to_string(),
                    tally.relabelled / n,
                ),
            ]);
            report.scalars.extend(tally.relabels.shares());
        }
        report.scalars.extend([
            ("charts/updates".to_string(), self.updates as f64),
            (
                "charts/buffer_transitions".to_string(),
                self.buffer.transitions() as f64,
            ),
        ]);
        Ok(report)
    }
}

impl<E: GoalEnv> Learner for Ddpg<E> {
    fn learn(&mut self, episodes: usize) -> Result<LearnReport> {
        self.learn_with(episodes, &mut Alone, false)
    }
    fn policy(&self) -> Option<Box<dyn Policy>> {
        Some(Box::new(self.frozen_policy()))
    }

    /// Deterministic actor on the evaluation env; episode `i` is reset with
    /// `seed + i`. Success is the final step's `is_success` info, or
    /// [`GoalEnv::is_success`] of the final achieved and desired goals.
    fn evaluate(&mut self, episodes: usize, seed: u64) -> Result<EvalReport> {
        let policy = self.frozen_policy();
        let (mut returns, mut lengths, mut successes) = (Vec::new(), Vec::new(), 0usize);
        for i in 0..episodes {
            let mut obs = self.eval_env.reset(Some(seed.wrapping_add(i as u64)));
            let (mut undiscounted, mut length) = (0.0f64, 0u64);
            loop {
                let step = self.eval_env.step(&policy.try_act(&obs)?)?;
                undiscounted += step.reward as f64;
                length += 1;
                if step.done() {
                    let success = match step.info.get("is_success") {
                        Some(flag) => flag > 0.5,
                        None => {
                            let (_, achieved, desired) = self.eval_env.split_obs(&step.obs);
                            self.eval_env.is_success(achieved, desired)
                        }
                    };
                    successes += usize::from(success);
                    break;
                }
                obs = step.obs;
            }
            returns.push(undiscounted);
            lengths.push(length as f64);
        }
        Ok(EvalReport::from_episodes(
            &returns,
            &lengths,
            Some(successes),
        ))
    }

    fn save_state(&self) -> Vec<u8> {
        postcard::to_stdvec(&DdpgState {
            version: STATE_VERSION,
            networks: self.networks.save_state(),
            obs_norm: self.obs_norm.clone(),
            goal_norm: self.goal_norm.clone(),
            episodes: self.episodes,
            env_steps: self.env_steps,
            rounds: self.rounds,
            updates: self.updates,
        })
        .expect("serialising plain vectors cannot fail")
    }

    fn load_state(&mut self, bytes: &[u8]) -> Result<()> {
        let state: DdpgState = postcard::from_bytes(bytes)
            .map_err(|e| Error::Shape(format!("DDPG state is unreadable: {e}")))?;
        if state.version != STATE_VERSION {
            return Err(Error::Shape(format!(
                "DDPG state has version {}, this build reads version {STATE_VERSION}",
                state.version
            )));
        }
        if state.obs_norm.dim() != self.dims.obs || state.goal_norm.dim() != self.dims.goal {
            return Err(Error::Shape(format!(
                "DDPG state normalises {} + {} features, this agent {} + {}",
                state.obs_norm.dim(),
                state.goal_norm.dim(),
                self.dims.obs,
                self.dims.goal
            )));
        }
        let mut networks = self.networks.clone();
        networks.load_state(&state.networks)?;
        self.networks = networks;
        self.obs_norm = state.obs_norm;
        self.goal_norm = state.goal_norm;
        self.episodes = state.episodes;
        self.env_steps = state.env_steps;
        self.rounds = state.rounds;
        self.updates = state.updates;
        Ok(())
    }

    fn save_memory(&self) -> Option<Vec<u8>> {
        Some(self.buffer.to_bytes())
    }

    fn load_memory(&mut self, bytes: &[u8]) -> Result<()> {
        self.buffer.load_bytes(bytes)
    }
}

impl<E: GoalEnv> GradientLearner for Ddpg<E> {
    fn parameters(&self) -> Vec<f32> {
        self.networks.parameters()
    }

    fn set_parameters(&mut self, params: &[f32]) -> Result<()> {
        self.networks.set_parameters(params)
    }

    fn learn_averaged(
        &mut self,
        episodes: usize,
        reducer: &mut dyn MeanReducer,
    ) -> Result<LearnReport> {
        self.learn_with(episodes, reducer, true)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Barrier, Mutex};

    use rand::rngs::StdRng;
    use shoal_core::{Env, Info, Step};

    use super::*;

    /// A point on the plane moved by `0.1 · action` toward a goal; sparse
    /// −1/0 reward within 0.1, ends on success, truncated after 15 steps.
    /// Observation `[x, y | x, y | goal x, goal y]`.
    struct Reach {
        pos: [f32; 2],
        goal: [f32; 2],
        steps: usize,
        rng: StdRng,
        obs_space: Space,
        act_space: Space,
    }

    impl Reach {
        fn new() -> Self {
            Reach {
                pos: [0.0; 2],
                goal: [0.0; 2],
                steps: 0,
                rng: rng_from_seed(0),
                obs_space: Space::unbounded(6),
                act_space: Space::uniform(2, -1.0, 1.0),
            }
        }
        fn obs(&self) -> Vec<f32> {
            vec![
                self.pos[0],
                self.pos[1],
                self.pos[0],
                self.pos[1],
                self.goal[0],
                self.goal[1],
            ]
        }
    }

    impl Env for Reach {
        fn observation_space(&self) -> &Space {
            &self.obs_space
        }
        fn action_space(&self) -> &Space {
            &self.act_space
        }
        fn reset(&mut self, seed: Option<u64>) -> Vec<f32> {
            if let Some(seed) = seed {
                self.rng = rng_from_seed(seed);
            }
            self.steps = 0;
            self.pos = [
                self.rng.random_range(-0.5..0.5),
                self.rng.random_range(-0.5..0.5),
            ];
            loop {
                self.goal = [
                    self.rng.random_range(-0.5..0.5),
                    self.rng.random_range(-0.5..0.5),
                ];
                if !self.is_success(&self.pos, &self.goal) {
                    return self.obs();
                }
            }
        }
        fn step(&mut self, action: &[f32]) -> Result<Step> {
            let action = self.act_space.validate(action, true)?;
            for i in 0..2 {
                self.pos[i] = (self.pos[i] + 0.1 * action[i]).clamp(-1.0, 1.0);
            }
            self.steps += 1;
            let success = self.is_success(&self.pos, &self.goal);
            Ok(Step {
                obs: self.obs(),
                reward: self.compute_reward(&self.pos, &self.goal),
                terminated: success,
                truncated: self.steps >= 15,
                info: Info::new().with("is_success", success as u8 as f64),
            })
        }
    }

    impl GoalEnv for Reach {
        fn goal_dim(&self) -> usize {
            2
        }
        fn compute_reward(&self, achieved: &[f32], desired: &[f32]) -> f32 {
            if self.is_success(achieved, desired) {
                0.0
            } else {
                -1.0
            }
        }
        fn is_success(&self, achieved: &[f32], desired: &[f32]) -> bool {
            let d2: f32 = achieved
                .iter()
                .zip(desired)
                .map(|(a, d)| (a - d) * (a - d))
                .sum();
            d2.sqrt() < 0.1
        }
    }

    /// A small, fast configuration.
    fn small() -> DdpgConfig {
        DdpgConfig {
            hidden: vec![32, 32],
            batch_size: 32,
            n_batches: 4,
            buffer_size: 10_000,
            ..DdpgConfig::default()
        }
    }

    /// Everything in a saved state except the Adam moments, whose bytes
    /// follow a hash map's order (their effect shows in later parameters).
    type Comparable = (Vec<f32>, Vec<f32>, Normalizer, Normalizer, [u64; 4]);

    fn comparable<E: GoalEnv>(learner: &Ddpg<E>) -> Comparable {
        let state: DdpgState = postcard::from_bytes(&learner.save_state()).unwrap();
        let networks: ActorCriticState = postcard::from_bytes(&state.networks).unwrap();
        (
            networks.target_actor,
            networks.target_critic,
            state.obs_norm,
            state.goal_norm,
            [state.episodes, state.env_steps, state.rounds, state.updates],
        )
    }

    fn agent(config: DdpgConfig, seed: u64) -> Ddpg<Reach> {
        Ddpg::new(config, Reach::new(), Reach::new(), seed).unwrap()
    }

    /// Stands in for two workers on threads: each `mean` call waits for the
    /// other and averages in rank order, so both get the same bits.
    struct PairReducer {
        rank: usize,
        slots: Arc<Mutex<[Vec<f32>; 2]>>,
        barrier: Arc<Barrier>,
    }

    impl MeanReducer for PairReducer {
        fn mean(&mut self, values: &mut [f32]) -> Result<()> {
            self.slots.lock().unwrap()[self.rank] = values.to_vec();
            self.barrier.wait();
            {
                let slots = self.slots.lock().unwrap();
                if slots[0].len() != slots[1].len() {
                    return Err(Error::Comm(
                        "workers reduced vectors of different lengths".into(),
                    ));
                }
                for (i, v) in values.iter_mut().enumerate() {
                    *v = (slots[0][i] + slots[1][i]) / 2.0;
                }
            }
            self.barrier.wait();
            Ok(())
        }
    }

    #[test]
    fn resumed_run_matches_an_uninterrupted_one_bit_for_bit() {
        let config = DdpgConfig {
            learning_starts: 1,
            ..small()
        };
        let mut uninterrupted = agent(config.clone(), 11);
        let whole = uninterrupted.learn(7).unwrap();

        // Stop mid-cycle (3 of 2-episode cycles), save, restore into a fresh agent.
        let mut first = agent(config.clone(), 11);
        let before = first.learn(3).unwrap();
        let (state, memory) = (first.save_state(), first.save_memory().unwrap());
        drop(first);
        let mut resumed = agent(config, 11);
        resumed.load_state(&state).unwrap();
        resumed.load_memory(&memory).unwrap();
        let after = resumed.learn(4).unwrap();

        assert!(resumed.parameters() == uninterrupted.parameters());
        assert_eq!(comparable(&resumed), comparable(&uninterrupted));
        assert!(resumed.save_memory() == uninterrupted.save_memory());
        let returns: Vec<f64> = before
            .episode_returns
            .into_iter()
            .chain(after.episode_returns)
            .collect();
        assert_eq!(returns, whole.episode_returns);
        assert!(uninterrupted.updates() > 0);
    }

    #[test]
    fn averaged_learning_on_one_worker_equals_plain_learning() {
        let config = DdpgConfig {
            train_every: TrainEvery::Episode,
            ..small()
        };
        let mut plain = agent(config.clone(), 3);
        let mut averaged = agent(config, 3);
        plain.learn(3).unwrap();
        averaged.learn_averaged(3, &mut Alone).unwrap();
        assert!(plain.parameters() == averaged.parameters());
        assert_eq!(comparable(&plain), comparable(&averaged));
    }

    #[test]
    fn two_averaging_workers_keep_identical_networks_and_normalisers() {
        let slots = Arc::new(Mutex::new([Vec::new(), Vec::new()]));
        let barrier = Arc::new(Barrier::new(2));
        let root = agent(small(), 100);
        let start = root.parameters();
        let results: Vec<(Vec<f32>, Comparable, Vec<f32>)> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..2)
                .map(|rank| {
                    let mut reducer = PairReducer {
                        rank,
                        slots: slots.clone(),
                        barrier: barrier.clone(),
                    };
                    let start = start.clone();
                    scope.spawn(move || {
                        // Different seeds: different episodes, samples and buffers.
                        let mut worker = agent(small(), 100 + rank as u64);
                        worker.set_parameters(&start).unwrap();
                        worker.learn_averaged(4, &mut reducer).unwrap();
                        let first_obs = worker.buffer().episode(0).obs(0).to_vec();
                        (worker.parameters(), comparable(&worker), first_obs)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_ne!(
            results[0].2, results[1].2,
            "workers should see different episodes"
        );
        assert!(results[0].0 == results[1].0, "networks must agree");
        assert_eq!(
            results[0].1, results[1].1,
            "targets, normalisers, counters must agree"
        );
        assert!(results[0].1.4[3] > 0, "some updates happened");
    }

    #[test]
    fn step_training_is_refused_when_averaging_but_runs_alone() {
        let config = DdpgConfig {
            train_every: TrainEvery::Step,
            n_batches: 1,
            ..small()
        };
        let mut learner = agent(config, 1);
        assert!(matches!(
            learner.learn_averaged(1, &mut Alone),
            Err(Error::Config(_))
        ));
        learner.learn(2).unwrap();
        // The second episode trained after each of its steps.
        assert_eq!(learner.updates(), learner.buffer().episode(1).len() as u64);
    }

    #[test]
    fn warmup_episodes_do_not_train() {
        // Cycles of 2 episodes; the first round follows the 4th episode.
        let mut learner = agent(
            DdpgConfig {
                learning_starts: 4,
                ..small()
            },
            2,
        );
        learner.learn(3).unwrap();
        assert_eq!(learner.updates(), 0);
        learner.learn(1).unwrap();
        assert_eq!(learner.updates(), 4);
    }

    #[test]
    fn learning_reports_episodes_and_losses() {
        let mut learner = agent(small(), 5);
        let report = learner.learn(4).unwrap();
        assert_eq!(report.episode_returns.len(), 4);
        assert_eq!(report.episode_successes.len(), 4);
        assert_eq!(report.env_steps(), learner.env_steps());
        assert_eq!(learner.buffer().transitions() as u64, learner.env_steps());
        let scalar = |key: &str| {
            report
                .scalars
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| *v)
        };
        assert!(scalar("losses/critic").is_some_and(f64::is_finite));
        assert!(scalar("charts/relabelled_fraction").is_some_and(|f| f > 0.5));
        assert_eq!(scalar("charts/updates"), Some(8.0));
        // The relabel categories cover every sampled transition; the
        // relabelled ones are the relabelled fraction counted another way.
        let share = |key: &str| scalar(&format!("her/{key}")).unwrap();
        let parts = ["original", "static", "post_settle", "informative"].map(share);
        assert!((parts.iter().sum::<f64>() - 1.0).abs() < 1e-9, "{parts:?}");
        let relabelled = scalar("charts/relabelled_fraction").unwrap();
        assert!((1.0 - share("original") - relabelled).abs() < 1e-9);
    }

    fn tiny_networks() -> ActorCritic {
        let config = ActorCriticConfig {
            input_dim: 3,
            act_dim: 2,
            hidden: vec![8],
            actor_lr: 1e-3,
            critic_lr: 1e-3,
            max_grad_norm: None,
        };
        ActorCritic::new(&config, 5)
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
        };
        networks.update(&batch, &settings, &mut Alone).unwrap();
        let targets = |n: &ActorCritic| {
            let state: ActorCriticState = postcard::from_bytes(&n.save_state()).unwrap();
            [state.target_actor, state.target_critic].concat()
        };
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
        };
        assert!(matches!(
            networks.update(&batch, &settings, &mut Alone),
            Err(Error::Shape(_))
        ));
        assert!(networks.apply(&mut [0.0; 3]).is_err());
    }

    #[test]
    fn evaluation_is_deterministic_and_reports_success() {
        let mut learner = agent(small(), 4);
        let a = learner.evaluate(5, 9).unwrap();
        let b = learner.evaluate(5, 9).unwrap();
        assert_eq!(a, b);
        assert!(a.success_rate.is_some());
    }

    #[test]
    fn mismatched_or_corrupt_state_and_memory_are_errors() {
        let mut learner = agent(small(), 6);
        learner.learn(2).unwrap();
        let (state, memory) = (learner.save_state(), learner.save_memory().unwrap());
        let mut wider = agent(
            DdpgConfig {
                hidden: vec![16],
                ..small()
            },
            6,
        );
        let before = wider.save_state();
        assert!(wider.load_state(&state).is_err());
        assert_eq!(
            wider.save_state(),
            before,
            "a failed load leaves the agent unchanged"
        );
        assert!(wider.load_state(&state[..state.len() / 2]).is_err());
        assert!(wider.load_memory(&memory[..memory.len() - 3]).is_err());
        assert_eq!(wider.buffer().transitions(), 0);
    }

    #[test]
    fn bad_configs_are_rejected_with_the_key_named() {
        for (config, key) in [
            (
                DdpgConfig {
                    gamma: 1.0,
                    ..small()
                },
                "gamma",
            ),
            (
                DdpgConfig {
                    polyak: 1.5,
                    ..small()
                },
                "polyak",
            ),
            (
                DdpgConfig {
                    batch_size: 0,
                    ..small()
                },
                "batch_size",
            ),
            (
                DdpgConfig {
                    random_eps: -0.1,
                    ..small()
                },
                "random_eps",
            ),
            (
                DdpgConfig {
                    hidden: vec![0],
                    ..small()
                },
                "hidden",
            ),
        ] {
            let error = Ddpg::new(config, Reach::new(), Reach::new(), 0)
                .err()
                .unwrap();
            assert!(error.to_string().contains(key), "{error}");
        }
    }

    #[test]
    fn frozen_policy_rejects_observations_of_the_wrong_length() {
        let learner = agent(small(), 0);
        let policy = learner.frozen_policy();
        assert!(policy.try_act(&[0.0; 5]).is_err());
        assert!(policy.act(&[0.0; 5]).iter().all(|a| a.is_nan()));
        let action = policy.act(&[0.1, 0.2, 0.1, 0.2, 0.3, 0.4]);
        assert!(Space::uniform(2, -1.0, 1.0).contains(&action));
    }

    #[test]
    fn agents_and_policies_can_move_between_threads() {
        fn assert_send<T: Send>() {}
        assert_send::<Ddpg<Reach>>();
        assert_send::<DdpgPolicy>();
        assert_send::<ActorCritic>();
    }

    #[test]
    fn works_with_boxed_goal_envs() {
        let boxed = |env: Reach| -> Box<dyn GoalEnv + Send> { Box::new(env) };
        let mut learner = Ddpg::new(small(), boxed(Reach::new()), boxed(Reach::new()), 1).unwrap();
        learner.learn(2).unwrap();
        assert_eq!(learner.episodes(), 2);
    }

    #[test]
    fn ddpg_with_her_learns_to_reach_goals() {
        let config = DdpgConfig {
            hidden: vec![32, 32],
            batch_size: 128,
            n_batches: 20,
            buffer_size: 100_000,
            ..DdpgConfig::default()
        };
        let mut learner = agent(config, 42);
        let untrained = learner.evaluate(50, 1_000).unwrap().success_rate.unwrap();
        learner.learn(300).unwrap();
        let trained = learner.evaluate(50, 1_000).unwrap().success_rate.unwrap();
        eprintln!("success rate: untrained {untrained}, trained {trained}");
        assert!(
            trained >= 0.6 && trained >= untrained + 0.4,
            "{untrained} -> {trained}"
        );
    }
}
