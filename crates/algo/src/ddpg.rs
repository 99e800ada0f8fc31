//! DDPG (Lillicrap et al., 2016) with hindsight experience replay (Andrychowicz et al., 2017), as in OpenAI baselines' `her`; TD3 (Fujimoto et al., 2018) is the same agent with four settings changed, SAC (Haarnoja et al., 2018) with a Gaussian actor and a learned temperature.
//!
//! Read top to bottom: the config with baselines' defaults, the frozen
//! policy ([`DdpgPolicy`]), then the agent: collecting an episode, storing
//! it, training rounds, and the `Learner` plumbing that lets parallel
//! strategies drive it. The networks and their one update are
//! [`ActorCritic`], in `actor_critic.rs`, which HAC shares.
//!
//! # The schedule
//!
//! Episodes are grouped into *cycles* of `episodes_per_cycle`. At the end of
//! every cycle (with the default `train_every = cycle`) the normaliser
//! statistics are synchronised, then `n_batches` gradient steps of
//! `batch_size` HER-relabelled transitions are taken, then the target networks
//! move toward the trained ones by polyak averaging. `train_every = episode`
//! runs such a round after every episode, `train_every = step` after every
//! environment step. Stepwise rounds also draw from the episode being
//! played, as Stable-Baselines3's and CleanRL's buffers do, unless HER
//! relabels (`her_k > 0`): a relabelled batch needs finished episodes, as
//! in Stable-Baselines3's HER buffer. Without it, what the actor does
//! would be replayed an episode late: 1 000 gradient steps on the worm.
//!
//! # TD3
//!
//! [`DdpgConfig::td3`] sets `n_critics = 2` (the critic target is the
//! smaller target critic's value), `target_policy_noise = 0.2` clipped to
//! `target_noise_clip = 0.5` (noise on the target actor's action) and
//! `policy_delay = 2`: the critics step every update, the actor every
//! second (counted over the whole run, so rounds of an odd `n_batches`
//! alternate). The targets move once per round in which the actor
//! stepped: after every second round when each round is one update
//! (`train_every = step`, `n_batches = 1`), as the TD3 paper and
//! Stable-Baselines3 move them with the actor; once per round of many
//! updates, as DDPG's do here (baselines' schedule). With
//! `policy_delay = 1`, one critic and no noise the agent is exactly DDPG.
//!
//! # SAC
//!
//! [`DdpgConfig::sac`] sets `actor = gaussian` (SAC's squashed Gaussian
//! actor, no target actor, a temperature α learned toward the target
//! entropy), twin critics, no target smoothing and no exploration noise of
//! its own: the agent explores by sampling its policy (uniformly during
//! `learning_starts`) and evaluates `tanh` of the policy's mean. The
//! update's SAC part is `actor_critic/sac.rs`; the schedule stays the
//! cycles above (see [`DdpgConfig::sac`] for why).
//!
//! # Envs without goals
//!
//! A plain env (the worm) trains wrapped in [`shoal_rl_core::WithoutGoals`]:
//! goal width 0, so the networks see the observation alone, and each
//! stored transition keeps the reward the env gave
//! ([`Episode::push_rewarded`]), as Stable-Baselines3's replay does, since
//! no goal can recompute it. Such an env has nothing to relabel
//! (`her_k = 0`, refused otherwise) and reports no success rate; a
//! transition is terminal where the env ended the task. The goal tasks'
//! extras (`action_l2`, `clip_target` for −1/0 rewards) are settings to
//! turn off there.
//!
//! # Reproducibility
//!
//! Episode `k` of a run always resets its environment with the seed derived
//! from `(seed, k)` and explores with generators derived from `(seed, k)`;
//! training round `r` samples with a generator derived from `(seed, r)`,
//! and draws TD3's smoothing noise and SAC's actions from it too. The
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

use burn::tensor::Device;
use rand::RngExt;
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};
use shoal_rl_core::{
    Alone, Error, EvalReport, GoalEnv, GradientLearner, LearnReport, Learner, MeanReducer, Policy,
    Result, Space, StopFlag, SuccessFn, derive_seed, evaluate_policy_with, rng_from_seed,
};
use shoal_rl_policy::{GoalNormalizer, NoiseKind};

use crate::actor_critic::upgrade_state;
use crate::actor_critic::{
    ActorCritic, ActorCriticConfig, ActorKind, BoundGradient, FrozenActor, NetBatch,
    TemperatureConfig, UpdateSettings, UpdateTally,
};
use crate::check;
use crate::her::{
    HerConfig, HerStrategy, MissedRelabel, RelabelCounts, TransitionBatch,
    sample_batch_with_playing, sample_episode,
};
use crate::replay::{Episode, EpisodeDims, ReplayBuffer};
use crate::versioned::read_state;

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
    /// Standardise observations and goals by their running statistics
    /// (baselines HER's normaliser). Off, the networks see them as the env
    /// gives them, clamped to ±`clip_obs`, as Stable-Baselines3 and RL Zoo's
    /// off-policy settings do. Default true.
    pub normalize: bool,
    /// Clip critic targets to `[−1/(1−γ), 0]`, the value range of a −1/0
    /// reward. Default true.
    pub clip_target: bool,
    /// Critics, each with a target; the critic target is the smallest
    /// target critic's value (TD3's clipped double Q learning, Fujimoto et
    /// al. 2018: 2). Default 1 (DDPG).
    pub n_critics: usize,
    /// The critics step every update, the actor every `policy_delay`-th
    /// (TD3's delayed policy update: 2). Default 1 (DDPG).
    pub policy_delay: usize,
    /// Standard deviation of the Gaussian noise added to the target actor's
    /// action in the critic target, in `[-1, 1]` action units (TD3's target
    /// policy smoothing: 0.2). Default 0 (DDPG: none).
    pub target_policy_noise: f64,
    /// The target smoothing noise is clipped to ±this, in `[-1, 1]` action
    /// units (TD3: 0.5). Default 0.5.
    pub target_noise_clip: f64,
    /// Take the actor's gradient on the critics after their step in the
    /// same update, as Fujimoto et al.'s TD3 and Stable-Baselines3's TD3
    /// and SAC do; false: on the critics before it, as OpenAI baselines'
    /// DDPG + HER does. Averaging workers exchange two messages per update
    /// with it. Default false.
    pub actor_after_critic: bool,
    /// How the actor's gradient passes its `tanh` bound: `tanh`, its own
    /// derivative, which vanishes at the bound, so an actor driven there
    /// stays; `inverting`, Hausknecht & Stone's inverting gradients, which
    /// let a push back inside through at full strength. Default `tanh`.
    pub bound_gradient: BoundGradient,
    /// Weight of the mean squared pre-activation `u` of the actor's
    /// `tanh(u)` in its loss, a pull away from saturation that does not
    /// vanish there (the action penalty's does). Default 0.
    pub preactivation_l2: f64,
    /// The actor: `deterministic` (DDPG, TD3) or `gaussian`, SAC's squashed
    /// Gaussian actor (no target actor; it explores by sampling itself,
    /// evaluates `tanh` of its mean, and an entropy term with temperature α
    /// enters the critic target and the actor loss). Default `deterministic`.
    pub actor: ActorKind,
    /// SAC's temperature α at the start (Stable-Baselines3's `ent_coef =
    /// "auto"`: 1.0); only with `actor = "gaussian"`. Default 1.0.
    pub init_alpha: f64,
    /// The entropy SAC's temperature steers the policy toward (absent: minus
    /// the number of action components, the SAC paper's and SB3's choice);
    /// only with `actor = "gaussian"`. Default absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_entropy: Option<f64>,
    /// Learn SAC's temperature (automatic entropy tuning, with Adam at
    /// `actor_lr` as SB3 has it); false: α stays `init_alpha`. Only with
    /// `actor = "gaussian"`. Default true.
    pub learn_alpha: bool,
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
            normalize: true,
            clip_target: true,
            n_critics: 1,
            policy_delay: 1,
            target_policy_noise: 0.0,
            target_noise_clip: 0.5,
            actor_after_critic: false,
            bound_gradient: BoundGradient::Tanh,
            preactivation_l2: 0.0,
            actor: ActorKind::Deterministic,
            init_alpha: 1.0,
            target_entropy: None,
            learn_alpha: true,
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

/// Most critics [`DdpgConfig::n_critics`] accepts (TD3 uses 2; each is a
/// network as large as the actor's).
const MAX_CRITICS: usize = 10;

impl DdpgConfig {
    /// TD3 (Fujimoto et al., 2018) with HER: DDPG's settings with twin
    /// critics, a policy delay of 2 and target smoothing noise 0.2 clipped
    /// to ±0.5 (the paper's and Stable-Baselines3's `TD3` defaults).
    ///
    /// Everything else stays baselines' HER setting, `action_l2 = 1.0`
    /// among them, where Stable-Baselines3's TD3 has none: on the goal
    /// tasks the penalty keeps the tanh actor off its bounds, where its
    /// gradient vanishes, and it is what the HER results shoal compares
    /// against were trained with; TD3's changes are to the critic target
    /// and the actor's schedule, not to the actor loss.
    pub fn td3() -> Self {
        DdpgConfig {
            n_critics: 2,
            policy_delay: 2,
            target_policy_noise: 0.2,
            target_noise_clip: 0.5,
            ..DdpgConfig::default()
        }
    }

    /// SAC (Haarnoja et al., 2018, with automatic entropy tuning) with HER:
    /// the Gaussian actor, twin critics, the actor stepped every update, no
    /// target smoothing, and neither random actions nor added noise (the
    /// policy's own samples explore); α starts at 1.0 and is learned toward
    /// the entropy `−|A|` (SB3's `SAC` defaults).
    ///
    /// Three settings differ from SB3's SAC, to keep `sac` a variant of
    /// shoal's DDPG + HER rather than another schedule:
    ///
    /// - the schedule stays shoal's cycles (2 episodes, then 40 updates of
    ///   256 transitions) with the targets moved once per round by
    ///   `polyak = 0.95`, where SB3 trains after every environment step
    ///   (`train_freq = 1`, `gradient_steps = 1`) and moves the targets by
    ///   τ = 0.005 after every update: the three variants then see the same
    ///   data per update and average gradients across workers by the same
    ///   rules (`train_every = step` cannot average);
    /// - `action_l2 = 0`: the entropy term already keeps the squashed
    ///   actor off its bounds, which is what DDPG's penalty is for;
    /// - `clip_target = false`: a soft value includes the entropy bonus
    ///   `−α·log π`, so it leaves DDPG's `[−1/(1−γ), 0]`; SB3 clips nothing.
    pub fn sac() -> Self {
        DdpgConfig {
            actor: ActorKind::Gaussian,
            n_critics: 2,
            policy_delay: 1,
            target_policy_noise: 0.0,
            random_eps: 0.0,
            noise_eps: 0.0,
            action_l2: 0.0,
            clip_target: false,
            ..DdpgConfig::default()
        }
    }

    /// SAC's temperature settings, as the networks take them.
    pub fn temperature(&self) -> TemperatureConfig {
        TemperatureConfig {
            init_alpha: self.init_alpha,
            target_entropy: self.target_entropy,
            learn: self.learn_alpha,
        }
    }

    /// Whether workers can average this config's gradients: not when it
    /// trains every step, since the workers' episodes differ in length and
    /// they would call the reducer unequally often.
    pub fn check_averaging(&self) -> Result<()> {
        if self.train_every == TrainEvery::Step {
            return Err(Error::Config(
                "ddpg train_every = \"step\" cannot average gradients across workers, whose \
                 episode lengths differ; use \"episode\" or \"cycle\""
                    .into(),
            ));
        }
        Ok(())
    }

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
        check::count("ddpg", "n_critics", self.n_critics, MAX_CRITICS)?;
        check::count("ddpg", "policy_delay", self.policy_delay, check::MAX_BATCH)?;
        if !(self.target_policy_noise.is_finite() && self.target_policy_noise >= 0.0) {
            return bad("target_policy_noise", "must be finite and non-negative");
        }
        if !(self.target_noise_clip.is_finite() && self.target_noise_clip >= 0.0) {
            return bad("target_noise_clip", "must be finite and non-negative");
        }
        if !(self.init_alpha.is_finite() && self.init_alpha > 0.0) {
            return bad("init_alpha", "must be finite and positive");
        }
        if self.target_entropy.is_some_and(|h| !h.is_finite()) {
            return bad("target_entropy", "must be finite");
        }
        if self.actor == ActorKind::Gaussian && self.target_policy_noise > 0.0 {
            return bad(
                "target_policy_noise",
                "must be 0 with actor = \"gaussian\": SAC's action at the next state is drawn \
                 from the policy already",
            );
        }
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
        if !(self.preactivation_l2.is_finite() && self.preactivation_l2 >= 0.0) {
            return bad("preactivation_l2", "must be finite and non-negative");
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
// The frozen policy
// -------------------------------------------------------------------------

/// A trained DDPG (TD3, SAC) actor frozen for evaluation: normalises
/// goal-env observations `[observation | achieved_goal | desired_goal]`
/// like the agent and acts deterministically (SAC: `tanh` of the policy's
/// mean); [`Policy::try_sample`] draws SAC's actions as the agent explores.
#[derive(Clone, Debug)]
pub struct DdpgPolicy {
    actor: FrozenActor,
    norms: GoalNormalizer,
    clip_obs: f32,
    action_space: Space,
    device: Device,
}

impl DdpgPolicy {
    /// The action in the actor's `[-1, 1]` scale, or a shape error when `obs`
    /// does not have the environment's layout.
    pub fn unit_action(&self, obs: &[f32]) -> Result<Vec<f32>> {
        let (o, goal) = self.split(obs)?;
        self.unit_action_for(o, goal)
    }

    /// A drawn action in `[-1, 1]` (SAC's Gaussian actor, with standard
    /// normal draws from `rng`; the deterministic actor's action, drawing
    /// nothing), or a shape error when `obs` does not have the layout.
    pub fn unit_sample(&self, obs: &[f32], rng: &mut dyn rand::Rng) -> Result<Vec<f32>> {
        let (o, goal) = self.split(obs)?;
        self.unit_sample_for(o, goal, rng)
    }

    /// The observation part and the desired goal of a full observation.
    fn split<'a>(&self, obs: &'a [f32]) -> Result<(&'a [f32], &'a [f32])> {
        let (o, g) = (self.norms.obs.dim(), self.norms.goal.dim());
        if obs.len() != o + 2 * g {
            return Err(Error::Shape(format!(
                "observation has {} values, the policy expects {o} + 2 × {g}",
                obs.len()
            )));
        }
        Ok((&obs[..o], &obs[o + g..]))
    }

    /// The normalised network input for observation part `obs` and goal `goal`.
    fn input_for(&self, obs: &[f32], goal: &[f32]) -> Result<Vec<f32>> {
        let mut input = Vec::with_capacity(obs.len() + goal.len());
        self.norms
            .push_input(obs, goal, self.clip_obs, &mut input)?;
        Ok(input)
    }

    /// The action in `[-1, 1]` for observation part `obs` and desired goal `goal`.
    fn unit_action_for(&self, obs: &[f32], goal: &[f32]) -> Result<Vec<f32>> {
        Ok(self.actor.act(&self.input_for(obs, goal)?, &self.device))
    }

    /// [`DdpgPolicy::unit_sample`] for observation part `obs` and goal `goal`.
    fn unit_sample_for(
        &self,
        obs: &[f32],
        goal: &[f32],
        rng: &mut dyn rand::Rng,
    ) -> Result<Vec<f32>> {
        let input = self.input_for(obs, goal)?;
        if !self.actor.is_stochastic() {
            return Ok(self.actor.act(&input, &self.device));
        }
        let draws: Vec<f32> = (0..self.action_space.dim())
            .map(|_| StandardNormal.sample(&mut *rng))
            .collect();
        Ok(self
            .actor
            .sample(&input, &draws, &self.device)
            .expect("a stochastic actor samples"))
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
        DdpgPolicy::try_act(self, obs).unwrap_or_else(|_| vec![f32::NAN; self.action_space.dim()])
    }

    fn try_act(&self, obs: &[f32]) -> Result<Vec<f32>> {
        DdpgPolicy::try_act(self, obs)
    }

    /// SAC's Gaussian actor: an action drawn with `rng`, in the
    /// environment's bounds; the deterministic actor: its action.
    fn try_sample(&self, obs: &[f32], rng: &mut dyn rand::Rng) -> Result<Vec<f32>> {
        Ok(self
            .action_space
            .from_symmetric(&self.unit_sample(obs, rng)?))
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

/// Bumped whenever [`DdpgState`]'s layout changes (2: the networks hold a
/// list of critics, for TD3's two; 3: and SAC's temperature).
const STATE_VERSION: u32 = 3;

/// Everything [`Ddpg`] changes while training, except the replay buffer.
#[derive(Serialize, Deserialize)]
struct DdpgState {
    version: u32,
    networks: Vec<u8>,
    norms: GoalNormalizer,
    episodes: u64,
    env_steps: u64,
    rounds: u64,
    updates: u64,
}

/// Sums of update statistics over a `learn` call.
#[derive(Default)]
struct Tally {
    networks: UpdateTally,
    relabelled: f64,
    relabels: RelabelCounts,
}

/// A DDPG + HER agent on its own goal environment.
///
/// ```no_run
/// # fn demo<E: shoal_rl_core::GoalEnv>(env: E, eval_env: E) -> shoal_rl_core::Result<()> {
/// use shoal_rl_algo::{Ddpg, DdpgConfig};
/// use shoal_rl_core::Learner;
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
    norms: GoalNormalizer,
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
        if full < 2 * goal {
            return Err(Error::Config(format!(
                "a goal env's observation holds its two goals (observation {full}, goal {goal})"
            )));
        }
        if goal == 0 && config.her_k > 0 {
            return Err(Error::Config(format!(
                "the env has no goals for hindsight relabelling to substitute: set algo.her_k = 0 \
                 (it is {})",
                config.her_k
            )));
        }
        let action_space = check::matching_bounded_envs(&env, &eval_env, "DDPG")?;
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
                value_bound: None,
                critics: config.n_critics,
                actor: config.actor,
                temperature: config.temperature(),
            },
            seed,
        );
        Ok(Ddpg {
            her: config.her(),
            norms: GoalNormalizer::new(
                dims.obs,
                dims.goal,
                if config.normalize {
                    config.norm_clip
                } else {
                    config.clip_obs
                } as f32,
                config.norm_eps as f32,
            ),
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

    /// The critic's `Q(o, g, a)` for `n` rows of observation parts `obs`
    /// (`[n, obs]`), goals (`[n, goal]`) and actions in the actor's `[-1, 1]`
    /// scale (`[n, act]`), normalised as in training: for analysis, e.g. how
    /// much the action matters in a state. A shape error when the lengths
    /// disagree with the task's widths or with each other.
    pub fn q_values(&self, obs: &[f32], goals: &[f32], actions: &[f32]) -> Result<Vec<f32>> {
        let d = self.dims;
        let n = obs.len() / d.obs;
        if obs.len() != n * d.obs || goals.len() != n * d.goal || actions.len() != n * d.act {
            return Err(Error::Shape(format!(
                "q_values needs rows of {} observation, {} goal and {} action values, got {}, {} \
                 and {}",
                d.obs,
                d.goal,
                d.act,
                obs.len(),
                goals.len(),
                actions.len()
            )));
        }
        let clip = self.config.clip_obs as f32;
        let mut inputs = Vec::with_capacity(n * (d.obs + d.goal));
        // Indexed, not chunked: an env without goals has goals of width 0.
        for (i, o) in obs.chunks_exact(d.obs).enumerate() {
            let g = &goals[i * d.goal..(i + 1) * d.goal];
            self.norms.push_input(o, g, clip, &mut inputs)?;
        }
        Ok(self.networks.q_values(&inputs, actions))
    }

    /// The current policy, frozen for evaluation.
    pub fn frozen_policy(&self) -> DdpgPolicy {
        DdpgPolicy {
            actor: self.networks.actor().clone(),
            norms: self.norms.clone(),
            clip_obs: self.config.clip_obs as f32,
            action_space: self.action_space.clone(),
            device: self.networks.acting_device().clone(),
        }
    }

    /// Whether the env has goals: false for a plain env trained as
    /// [`shoal_rl_core::WithoutGoals`], which keeps its rewards, relabels
    /// nothing and has no success to report.
    fn has_goals(&self) -> bool {
        self.dims.goal > 0
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
    /// actor's action (SAC's: drawn from the policy with the episode's
    /// generator) plus noise, clipped to `[-1, 1]`. With
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
                let action = policy.unit_sample_for(&obs, &desired, &mut rng)?;
                action
                    .iter()
                    .zip(noise.sample())
                    .map(|(a, n)| (a + n).clamp(-1.0, 1.0))
                    .collect()
            };
            let step = self.env.step(&self.action_space.from_symmetric(&action))?;
            let (next_obs, next_achieved, next_desired) = self.split_owned(&step.obs)?;
            if self.has_goals() {
                episode.push(&desired, &action, &next_obs, &next_achieved);
            } else {
                // No goal to recompute the reward from: keep the env's.
                episode.push_rewarded(&desired, &action, step.reward, &next_obs, &next_achieved);
            }
            undiscounted += step.reward as f64;
            self.env_steps += 1;

            if step.done() {
                // Before the round below, which may replay this last step.
                episode.set_terminated(step.terminated);
            }
            if self.config.train_every == TrainEvery::Step && !warmup && !self.buffer.is_empty() {
                let playing = (self.config.her_k == 0).then_some(&episode);
                self.train_round(playing, reducer, tally)?;
                policy = self.frozen_policy();
            }

            if step.done() {
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
        if !self.config.normalize {
            return Ok(());
        }
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
        self.norms.update_clamped(
            &self.transitions.obs,
            &self.transitions.goals,
            self.config.clip_obs as f32,
        )
    }

    /// Averages both normalisers' pending statistics in one reducer call.
    fn sync_normalizers(&mut self, reducer: &mut dyn MeanReducer) -> Result<()> {
        GoalNormalizer::sync_all([&mut self.norms], reducer)
    }

    // ---------------------------------------------------------------------
    // Training
    // ---------------------------------------------------------------------

    /// The loss settings of the next update: its number (`self.updates`,
    /// part of the state) decides whether it steps the actor, every
    /// `policy_delay`-th as in Stable-Baselines3's TD3.
    fn settings(&self) -> UpdateSettings {
        let gamma = self.config.gamma as f32;
        UpdateSettings {
            target_policy_noise: self.config.target_policy_noise as f32,
            target_noise_clip: self.config.target_noise_clip as f32,
            update_actor: (self.updates + 1).is_multiple_of(self.config.policy_delay as u64),
            actor_after_critic: self.config.actor_after_critic,
            bound_gradient: self.config.bound_gradient,
            preactivation_l2: self.config.preactivation_l2 as f32,
            ..UpdateSettings::ddpg(
                gamma,
                self.config.action_l2 as f32,
                self.config.clip_target.then(|| (-1.0 / (1.0 - gamma), 0.0)),
            )
        }
    }

    /// Turns the sampled transitions into network inputs; with target
    /// smoothing or SAC's Gaussian actor, draws the standard normal noise
    /// from `rng` (the round's generator, after the batch's samples: seeded
    /// by `(seed, round)`, so a resumed run draws the same, and drawn
    /// nothing from otherwise, so DDPG's batches stay what they were): at
    /// `s'` first, then SAC's at `s`. Averaging workers draw different
    /// noise for their different batches; their networks stay identical
    /// because only the averaged gradient steps them.
    fn prepare_batch(&mut self, rng: &mut impl rand::Rng) -> Result<()> {
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
            self.norms.push_input(o, goal, clip, &mut out.inputs)?;
            self.norms
                .push_input(o_next, goal, clip, &mut out.next_inputs)?;
        }
        out.actions.clone_from(&batch.actions);
        out.rewards.clone_from(&batch.rewards);
        out.terminals.clone_from(&batch.terminals);
        let gaussian = self.config.actor == ActorKind::Gaussian;
        let mut draw = |into: &mut Vec<f32>, used: bool| {
            into.clear();
            if used {
                into.extend(
                    (0..batch.actions.len()).map(|_| -> f32 { StandardNormal.sample(&mut *rng) }),
                );
            }
        };
        draw(
            &mut out.next_action_noise,
            gaussian || self.config.target_policy_noise > 0.0,
        );
        draw(&mut out.action_noise, gaussian);
        Ok(())
    }

    /// `n_batches` gradient steps on HER batches (the actor's every
    /// `policy_delay`-th), then the target update if the actor stepped; the
    /// batches are drawn from the `playing` episode too where one is given.
    /// Round `r` samples with the generator derived from `(seed, r)`.
    fn train_round(
        &mut self,
        playing: Option<&Episode>,
        reducer: &mut dyn MeanReducer,
        tally: &mut Tally,
    ) -> Result<()> {
        let mut rng = rng_from_seed(derive_seed(self.seed, ROUND_STREAM + self.rounds));
        let mut actor_stepped = false;
        for _ in 0..self.config.n_batches {
            let settings = self.settings();
            actor_stepped |= settings.update_actor;
            self.transitions.clear();
            sample_batch_with_playing(
                &self.buffer,
                playing,
                &self.her,
                self.config.batch_size,
                &self.env,
                &mut rng,
                &mut self.transitions,
            );
            self.prepare_batch(&mut rng)?;
            let stats = self.networks.update(&self.net_batch, &settings, reducer)?;
            tally.networks.add(stats);
            tally.relabelled += self.transitions.relabelled_fraction();
            tally.relabels.merge(&self.transitions.relabel_counts());
            self.updates += 1;
        }
        // TD3 moves its targets with its actor (Fujimoto et al. 2018,
        // Algorithm 1; Stable-Baselines3): a stepwise round whose batch did
        // not step the actor leaves them. A round of several batches steps
        // the actor in some, and moves them once, as DDPG + HER does.
        if actor_stepped {
            self.networks.update_targets(self.config.polyak)?;
        }
        self.rounds += 1;
        Ok(())
    }

    fn learn_with(
        &mut self,
        episodes: usize,
        reducer: &mut dyn MeanReducer,
        averaged: bool,
        stop: Option<&StopFlag>,
    ) -> Result<LearnReport> {
        if averaged {
            self.config.check_averaging()?;
        }
        let mut report = LearnReport::default();
        let mut tally = Tally::default();
        for _ in 0..episodes {
            // A stop waits for the end of the cycle, where the normalisers
            // are synced and the networks trained: no half-cycle is saved.
            let cycle_start = match self.config.train_every {
                TrainEvery::Cycle => self
                    .episodes
                    .is_multiple_of(self.config.episodes_per_cycle as u64),
                TrainEvery::Episode | TrainEvery::Step => true,
            };
            if cycle_start && stop.is_some_and(StopFlag::is_requested) {
                break;
            }
            let (episode, undiscounted, success) = self.collect_episode(reducer, &mut tally)?;
            report.episode_returns.push(undiscounted);
            report.episode_lengths.push(episode.len() as u64);
            if self.has_goals() {
                report.episode_successes.push(success);
            }
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
                    self.train_round(None, reducer, &mut tally)?;
                }
            }
        }
        if tally.networks.updates > 0 {
            let means = tally.networks.means();
            report.scalars.extend([
                ("losses/critic".to_string(), means.critic_loss),
                ("losses/actor".to_string(), means.actor_loss),
                ("charts/q_mean".to_string(), means.q_mean),
                ("charts/actor_at_bound".to_string(), means.actor_at_bound),
            ]);
            if let Some((alpha, loss)) = means.temperature {
                report.scalars.extend([
                    ("charts/alpha".to_string(), alpha),
                    ("losses/temperature".to_string(), loss),
                ]);
            }
            // Relabelling's accounting, where there are goals to relabel.
            if self.has_goals() {
                report.scalars.push((
                    "charts/relabelled_fraction".to_string(),
                    tally.relabelled / tally.networks.updates as f64,
                ));
                report.scalars.extend(tally.relabels.shares());
            }
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
        self.learn_with(episodes, &mut Alone, false, None)
    }

    fn learn_until(&mut self, episodes: usize, stop: &StopFlag) -> Result<LearnReport> {
        self.learn_with(episodes, &mut Alone, false, Some(stop))
    }

    /// A cycle (`episodes_per_cycle`) when the networks train once per
    /// cycle, else one episode.
    fn episodes_per_update(&self) -> Option<usize> {
        Some(match self.config.train_every {
            TrainEvery::Cycle => self.config.episodes_per_cycle,
            TrainEvery::Episode | TrainEvery::Step => 1,
        })
    }
    fn policy(&self) -> Option<Box<dyn Policy>> {
        Some(Box::new(self.frozen_policy()))
    }

    /// Deterministic actor on the evaluation env; episode `i` is reset with
    /// `seed + i`. Success is the final step's `is_success` info, or
    /// [`GoalEnv::is_success`] of the final achieved and desired goals.
    fn evaluate(&mut self, episodes: usize, seed: u64) -> Result<EvalReport> {
        let policy = self.frozen_policy();
        let success = |env: &E, step: &shoal_rl_core::Step| match step.info.get("is_success") {
            Some(flag) => flag > 0.5,
            None => {
                let (_, achieved, desired) = env.split_obs(&step.obs);
                env.is_success(achieved, desired)
            }
        };
        // An env without goals has no success to report.
        let success: Option<&SuccessFn<'_, E>> = if self.has_goals() {
            Some(&success)
        } else {
            None
        };
        evaluate_policy_with(&mut self.eval_env, &policy, episodes, seed, success)
    }

    fn save_state(&self) -> Vec<u8> {
        postcard::to_stdvec(&DdpgState {
            version: STATE_VERSION,
            networks: self.networks.save_state(),
            norms: self.norms.clone(),
            episodes: self.episodes,
            env_steps: self.env_steps,
            rounds: self.rounds,
            updates: self.updates,
        })
        .expect("serialising plain vectors cannot fail")
    }

    fn load_state(&mut self, bytes: &[u8]) -> Result<()> {
        let state: DdpgState =
            read_state("DDPG state", bytes, 1..=STATE_VERSION, |s: &DdpgState| {
                s.version
            })?;
        if state.norms.obs.dim() != self.dims.obs || state.norms.goal.dim() != self.dims.goal {
            return Err(Error::Shape(format!(
                "DDPG state normalises {} + {} features, this agent {} + {}",
                state.norms.obs.dim(),
                state.norms.goal.dim(),
                self.dims.obs,
                self.dims.goal
            )));
        }
        let mut networks = self.networks.clone();
        networks.load_state(&upgrade_state(&state.networks, state.version)?)?;
        self.networks = networks;
        self.norms = state.norms;
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
        self.learn_with(episodes, reducer, true, None)
    }
}

#[cfg(test)]
mod tests {
    use shoal_rl_core::WithoutGoals;
    use shoal_rl_env::{PointGoal, PointReach, PointReachConfig};
    use shoal_rl_policy::Normalizer;

    use super::*;
    use crate::testutil::{point_goal, two_workers};

    /// Episodes of the test task: long enough to cross the arena.
    const STEPS: usize = 25;

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
    type Comparable = (Vec<f32>, Normalizer, Normalizer, [u64; 4]);

    fn comparable<E: GoalEnv>(learner: &Ddpg<E>) -> Comparable {
        let state: DdpgState = postcard::from_bytes(&learner.save_state()).unwrap();
        let mut networks = learner.networks().clone();
        networks.load_state(&state.networks).unwrap();
        (
            networks.target_parameters(),
            state.norms.obs,
            state.norms.goal,
            [state.episodes, state.env_steps, state.rounds, state.updates],
        )
    }

    fn agent(config: DdpgConfig, seed: u64) -> Ddpg<PointGoal> {
        Ddpg::new(config, point_goal(STEPS), point_goal(STEPS), seed).unwrap()
    }

    /// [`small`] as TD3: twin critics, delayed actor, smoothing noise.
    fn small_td3() -> DdpgConfig {
        DdpgConfig {
            n_critics: 2,
            policy_delay: 2,
            target_policy_noise: 0.2,
            target_noise_clip: 0.5,
            ..small()
        }
    }

    /// [`small`] as SAC: the Gaussian actor, twin critics, a learned
    /// temperature, exploration by the policy's own draws.
    fn small_sac() -> DdpgConfig {
        DdpgConfig {
            hidden: vec![32, 32],
            batch_size: 32,
            n_batches: 4,
            buffer_size: 10_000,
            ..DdpgConfig::sac()
        }
    }

    #[test]
    fn resumed_sac_run_matches_an_uninterrupted_one_bit_for_bit() {
        assert_resumes_exactly(small_sac());
    }

    #[test]
    fn sac_runs_repeat_exactly_and_carry_log_alpha_after_the_networks() {
        let run = |config: DdpgConfig| {
            let mut learner = agent(config, 8);
            let report = learner.learn(4).unwrap();
            (learner.parameters(), comparable(&learner), report)
        };
        let sac = run(small_sac());
        let again = run(small_sac());
        assert!(again.0 == sac.0 && again.1 == sac.1);
        assert_eq!(again.2, sac.2);
        let sizes = agent(small_sac(), 8).networks().sizes();
        assert_eq!(sizes.len(), 4, "actor, two critics, log α");
        assert_eq!(sac.0.len(), sizes.iter().sum::<usize>());
        // log α is learned: it left ln 1 = 0, and the report shows α.
        let log_alpha = sac.0[sac.0.len() - 1];
        assert!(log_alpha < 0.0, "{log_alpha}");
        let alpha = sac.2.scalars.iter().find(|(k, _)| k == "charts/alpha");
        assert!(
            alpha.is_some_and(|(_, a)| *a > 0.0 && *a <= 1.0),
            "{alpha:?}"
        );
        // α held: log α stays, and the runs differ.
        let fixed = run(DdpgConfig {
            learn_alpha: false,
            ..small_sac()
        });
        assert_eq!(fixed.0[fixed.0.len() - 1], 0.0);
        assert!(fixed.0 != sac.0);
    }

    #[test]
    fn the_frozen_sac_policy_evaluates_the_mean_and_samples_with_the_callers_rng() {
        let mut learner = agent(small_sac(), 3);
        learner.learn(4).unwrap();
        let policy = learner.frozen_policy();
        let obs = [0.1, 0.2, 0.0, 0.0, 0.1, 0.2, 0.3, 0.4];
        let mean = policy.try_act(&obs).unwrap();
        assert_eq!(policy.try_act(&obs).unwrap(), mean);
        let sample = |seed| Policy::try_sample(&policy, &obs, &mut rng_from_seed(seed)).unwrap();
        let (first, again, other) = (sample(5), sample(5), sample(6));
        assert_eq!(first, again, "the caller's seed decides the draw");
        assert!(first != other && first != mean);
        assert!(Space::uniform(2, -1.0, 1.0).contains(&first));
        // By hand: tanh(μ + σ·ε) with ε the first two standard normal
        // draws of the caller's generator.
        let input = policy.input_for(&obs[..4], &obs[6..]).unwrap();
        let FrozenActor::Gaussian(actor) = &policy.actor else {
            panic!("SAC's policy is Gaussian")
        };
        let mut rng = rng_from_seed(5);
        let draws: Vec<f32> = (0..2).map(|_| StandardNormal.sample(&mut rng)).collect();
        let unit = actor.sample_row(&input, &draws, &policy.device);
        assert_eq!(
            policy.unit_sample(&obs, &mut rng_from_seed(5)).unwrap(),
            unit
        );
        assert_eq!(first, policy.action_space.from_symmetric(&unit));
        // DDPG's policy samples its deterministic action.
        let ddpg = agent(small(), 3).frozen_policy();
        let action = ddpg.try_act(&obs).unwrap();
        assert_eq!(
            Policy::try_sample(&ddpg, &obs, &mut rng_from_seed(5)).unwrap(),
            action
        );
    }

    #[test]
    fn resumed_run_matches_an_uninterrupted_one_bit_for_bit() {
        assert_resumes_exactly(small());
    }

    #[test]
    fn resumed_td3_run_matches_an_uninterrupted_one_bit_for_bit() {
        // An odd number of updates per round, so a resumed round starts on
        // an update that leaves the actor alone.
        assert_resumes_exactly(DdpgConfig {
            n_batches: 3,
            ..small_td3()
        });
    }

    #[test]
    fn checkpoints_written_before_td3_and_sac_resume_exactly() {
        // Version 1 (one critic) and version 2 (critics without SAC's
        // temperature), as those builds wrote them.
        for version in [1, 2] {
            assert_resumes_exactly_from(small(), |state| {
                let mut old: DdpgState = postcard::from_bytes(&state).unwrap();
                old.version = version;
                old.networks = crate::actor_critic::in_old_layout(&old.networks, version);
                postcard::to_stdvec(&old).unwrap()
            });
        }
        let td3 = DdpgConfig {
            n_batches: 3,
            ..small_td3()
        };
        assert_resumes_exactly_from(td3, |state| {
            let mut old: DdpgState = postcard::from_bytes(&state).unwrap();
            old.version = 2;
            old.networks = crate::actor_critic::in_old_layout(&old.networks, 2);
            postcard::to_stdvec(&old).unwrap()
        });
    }

    fn assert_resumes_exactly(config: DdpgConfig) {
        assert_resumes_exactly_from(config, |state| state);
    }

    /// A run stopped and resumed from its state, passed through `rewrite`
    /// (an older build's layout), against the uninterrupted run.
    fn assert_resumes_exactly_from(config: DdpgConfig, rewrite: impl Fn(Vec<u8>) -> Vec<u8>) {
        let config = DdpgConfig {
            learning_starts: 1,
            ..config
        };
        let mut uninterrupted = agent(config.clone(), 11);
        let whole = uninterrupted.learn(7).unwrap();

        // Stop mid-cycle (3 of 2-episode cycles), save, restore into a fresh agent.
        let mut first = agent(config.clone(), 11);
        let before = first.learn(3).unwrap();
        let (state, memory) = (rewrite(first.save_state()), first.save_memory().unwrap());
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
    fn td3_runs_repeat_exactly_and_differ_from_ddpg() {
        let run = |config: DdpgConfig| {
            let mut learner = agent(config, 8);
            learner.learn(4).unwrap();
            (learner.parameters(), comparable(&learner))
        };
        let td3 = run(small_td3());
        assert!(run(small_td3()) == td3);
        // The smoothing noise matters: the same run without it differs.
        let unsmoothed = run(DdpgConfig {
            target_policy_noise: 0.0,
            ..small_td3()
        });
        assert!(unsmoothed.0 != td3.0);
        let sizes = agent(small(), 8).networks().sizes();
        assert_eq!(
            td3.0.len(),
            sizes[0] + 2 * sizes[1],
            "actor ‖ critic ‖ critic"
        );
    }

    #[test]
    fn the_actor_after_the_critic_step_is_another_run_that_repeats_exactly() {
        let run = |config: DdpgConfig| {
            let mut learner = agent(config, 8);
            learner.learn(4).unwrap();
            (learner.parameters(), comparable(&learner))
        };
        for base in [small_td3(), small_sac()] {
            let after = DdpgConfig {
                actor_after_critic: true,
                ..base.clone()
            };
            let stepped_first = run(after.clone());
            assert!(run(after) == stepped_first);
            assert!(run(base).0 != stepped_first.0);
        }
    }

    #[test]
    fn td3_steps_the_actor_on_every_second_update_of_the_run() {
        let mut learner = agent(small_td3(), 0);
        let steps_actor: Vec<bool> = (0..5)
            .map(|updates| {
                learner.updates = updates;
                learner.settings().update_actor
            })
            .collect();
        assert_eq!(steps_actor, [false, true, false, true, false]);
        let settings = learner.settings();
        assert_eq!(
            (settings.target_policy_noise, settings.target_noise_clip),
            (0.2, 0.5)
        );
        // DDPG: every update steps the actor, and no noise.
        let mut ddpg = agent(small(), 0);
        for updates in 0..3 {
            ddpg.updates = updates;
            let settings = ddpg.settings();
            assert!(settings.update_actor && settings.target_policy_noise == 0.0);
        }
    }

    #[test]
    fn stepwise_td3_moves_its_targets_with_its_actor_and_ddpg_every_round() {
        let moves = |config: DdpgConfig| -> Vec<bool> {
            let mut learner = agent(
                DdpgConfig {
                    train_every: TrainEvery::Step,
                    n_batches: 1,
                    ..config
                },
                0,
            );
            learner.learn(1).unwrap();
            let mut tally = Tally::default();
            (0..4)
                .map(|_| {
                    let before = learner.networks.target_parameters();
                    learner.train_round(None, &mut Alone, &mut tally).unwrap();
                    learner.networks.target_parameters() != before
                })
                .collect()
        };
        // The actor steps on every second update of the run, whatever the
        // count so far, and the targets move with it.
        let td3 = moves(small_td3());
        assert_eq!(td3.iter().filter(|m| **m).count(), 2, "{td3:?}");
        assert!(
            td3[0] != td3[1] && td3[1] != td3[2] && td3[2] != td3[3],
            "{td3:?}"
        );
        assert_eq!(moves(small()), [true; 4]);
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
        assert_workers_agree(small());
    }

    #[test]
    fn two_averaging_td3_workers_keep_identical_networks_and_normalisers() {
        assert_workers_agree(small_td3());
    }

    #[test]
    fn two_averaging_sac_workers_keep_identical_networks_temperature_and_normalisers() {
        assert_workers_agree(small_sac());
    }

    #[test]
    fn two_averaging_workers_agree_with_the_actor_after_the_critic_step() {
        for base in [small_td3(), small_sac()] {
            assert_workers_agree(DdpgConfig {
                actor_after_critic: true,
                ..base
            });
        }
    }

    fn assert_workers_agree(config: DdpgConfig) {
        let start = agent(config.clone(), 100).parameters();
        let results = two_workers(|rank, reducer| {
            // Different seeds: different episodes, samples, noise and buffers.
            let mut worker = agent(config.clone(), 100 + rank as u64);
            worker.set_parameters(&start).unwrap();
            worker.learn_averaged(4, reducer).unwrap();
            let first_obs = worker.buffer().episode(0).obs(0).to_vec();
            (worker.parameters(), comparable(&worker), first_obs)
        });
        assert_ne!(
            results[0].2, results[1].2,
            "workers should see different episodes"
        );
        assert!(results[0].0 == results[1].0, "networks must agree");
        // Everything but the env steps, which are each worker's own: an
        // episode that reaches its goal early (SAC's sampled actions do on
        // this task) ends early.
        let shared = |c: &Comparable| {
            let [episodes, _, rounds, updates] = c.3;
            (
                c.0.clone(),
                c.1.clone(),
                c.2.clone(),
                [episodes, rounds, updates],
            )
        };
        assert_eq!(
            shared(&results[0].1),
            shared(&results[1].1),
            "targets, normalisers, counters must agree"
        );
        assert!(results[0].1.3[3] > 0, "some updates happened");
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

    #[test]
    fn q_values_normalise_raw_rows_like_training() {
        let mut learner = Ddpg::new(small(), point_goal(10), point_goal(10), 3).unwrap();
        learner.learn(20).unwrap();
        let d = learner.dims;
        // Two rows: a stored observation, and one with a value far beyond
        // clip_obs (200) and one far beyond the normaliser's clip (5 std).
        let episode = learner.buffer().episode(0);
        let mut obs = episode.obs(3).to_vec();
        let mut wild = obs.clone();
        wild[0] = 1e6;
        obs.extend(&wild);
        let goals = [episode.desired(0), episode.desired(0)].concat();
        let actions: Vec<f32> = (0..2 * d.act).map(|i| 0.5 - 0.3 * i as f32).collect();

        // By hand: clamp raw values to ±200, subtract the mean, divide by the
        // std, clamp to ±5; observation part, then goal, per row.
        let by_hand =
            |x: f32, mean: f32, std: f32| ((x.clamp(-200.0, 200.0) - mean) / std).clamp(-5.0, 5.0);
        let (om, os) = (learner.norms.obs.mean(), learner.norms.obs.std());
        let (gm, gs) = (learner.norms.goal.mean(), learner.norms.goal.std());
        let mut inputs = Vec::new();
        for row in 0..2 {
            let o = &obs[row * d.obs..(row + 1) * d.obs];
            inputs.extend((0..d.obs).map(|i| by_hand(o[i], om[i], os[i])));
            let g = &goals[row * d.goal..(row + 1) * d.goal];
            inputs.extend((0..d.goal).map(|i| by_hand(g[i], gm[i], gs[i])));
        }
        assert_eq!(
            inputs[0..d.obs + d.goal]
                .iter()
                .filter(|x| x.abs() == 5.0)
                .count(),
            0
        );
        assert_eq!(inputs[d.obs + d.goal], 5.0);

        let q = learner.q_values(&obs, &goals, &actions).unwrap();
        assert_eq!(q, learner.networks().q_values(&inputs, &actions));
        assert_eq!(q.len(), 2);
        assert!(q[0] != q[1]);
        let err = learner.q_values(&obs, &goals, &actions[1..]).unwrap_err();
        assert!(err.to_string().contains("q_values needs rows"), "{err}");
    }

    #[test]
    fn evaluation_is_deterministic_and_matches_hand_run_episodes() {
        // A wide success radius, so a briefly trained policy succeeds in
        // some episodes and fails in others.
        let wide = || {
            PointGoal::new(
                shoal_rl_env::PointGoalConfig::default()
                    .distance_threshold(0.45)
                    .max_speed(0.2)
                    .max_episode_steps(STEPS),
            )
            .unwrap()
        };
        let mut learner = Ddpg::new(small(), wide(), wide(), 4).unwrap();
        learner.learn(200).unwrap();
        let report = learner.evaluate(16, 9).unwrap();
        assert_eq!(learner.evaluate(16, 9).unwrap(), report);

        // The same frozen policy run by hand from seeds 9, 10, …, success
        // judged by the distance at the end of each episode.
        let policy = learner.policy().unwrap();
        let mut env = wide();
        let (mut returns, mut lengths, mut successes) = (Vec::new(), Vec::new(), 0);
        for i in 0..16 {
            let mut obs = shoal_rl_core::Env::reset(&mut env, Some(9 + i));
            let (mut ret, mut len) = (0.0, 0.0);
            loop {
                let step = shoal_rl_core::Env::step(&mut env, &policy.act(&obs)).unwrap();
                ret += step.reward as f64;
                len += 1.0;
                obs = step.obs;
                if step.terminated || step.truncated {
                    break;
                }
            }
            let (_, achieved, desired) = env.split_obs(&obs);
            let gap = achieved
                .iter()
                .zip(desired)
                .map(|(a, d)| (a - d).powi(2))
                .sum::<f32>();
            successes += usize::from(gap.sqrt() < 0.45);
            returns.push(ret);
            lengths.push(len);
        }
        assert!(
            0 < successes && successes < 16,
            "{successes} of 16 succeeded"
        );
        assert_eq!(report.success_rate, Some(successes as f64 / 16.0));
        assert_eq!(report.episodes, 16);
        assert!((report.return_mean - returns.iter().sum::<f64>() / 16.0).abs() < 1e-9);
        assert!((report.length_mean - lengths.iter().sum::<f64>() / 16.0).abs() < 1e-9);
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
        assert!(matches!(
            wider.load_state(&state),
            Err(Error::Shape(m)) if m == "parameter vector has 1346 values, the network has 146"
        ));
        assert_eq!(
            wider.save_state(),
            before,
            "a failed load leaves the agent unchanged"
        );
        assert!(matches!(
            wider.load_state(&state[..state.len() / 2]),
            Err(Error::Shape(m)) if m.starts_with("DDPG state is unreadable: ")
        ));
        assert!(matches!(
            wider.load_memory(&memory[..memory.len() - 3]),
            Err(Error::Shape(m)) if m.starts_with("replay buffer is unreadable: episode 1 of 2: ")
        ));
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
            (
                DdpgConfig {
                    n_critics: 0,
                    ..small()
                },
                "ddpg n_critics must be between 1 and 10, got 0",
            ),
            (
                DdpgConfig {
                    policy_delay: 0,
                    ..small()
                },
                "ddpg policy_delay must be between 1",
            ),
            (
                DdpgConfig {
                    target_policy_noise: f64::NAN,
                    ..small()
                },
                "ddpg target_policy_noise must be finite and non-negative",
            ),
            (
                DdpgConfig {
                    target_noise_clip: -0.5,
                    ..small()
                },
                "ddpg target_noise_clip must be finite and non-negative",
            ),
            (
                DdpgConfig {
                    init_alpha: 0.0,
                    ..small_sac()
                },
                "ddpg init_alpha must be finite and positive",
            ),
            (
                DdpgConfig {
                    target_entropy: Some(f64::INFINITY),
                    ..small_sac()
                },
                "ddpg target_entropy must be finite",
            ),
            (
                DdpgConfig {
                    target_policy_noise: 0.2,
                    ..small_sac()
                },
                "ddpg target_policy_noise must be 0 with actor = \"gaussian\"",
            ),
        ] {
            let error = Ddpg::new(config, point_goal(STEPS), point_goal(STEPS), 0)
                .err()
                .unwrap();
            assert!(error.to_string().contains(key), "{error}");
        }
    }

    #[test]
    fn frozen_policy_rejects_observations_of_the_wrong_length() {
        let learner = agent(small(), 0);
        let policy = learner.frozen_policy();
        assert!(matches!(
            policy.try_act(&[0.0; 7]),
            Err(Error::Shape(m)) if m == "observation has 7 values, the policy expects 4 + 2 × 2"
        ));
        assert!(policy.act(&[0.0; 7]).iter().all(|a| a.is_nan()));
        let action = policy.act(&[0.1, 0.2, 0.0, 0.0, 0.1, 0.2, 0.3, 0.4]);
        assert!(Space::uniform(2, -1.0, 1.0).contains(&action));
    }

    #[test]
    fn agents_and_policies_can_move_between_threads() {
        fn assert_send<T: Send>() {}
        assert_send::<Ddpg<PointGoal>>();
        assert_send::<DdpgPolicy>();
        assert_send::<ActorCritic>();
    }

    #[test]
    fn works_with_boxed_goal_envs() {
        let boxed = || -> Box<dyn GoalEnv + Send> { Box::new(point_goal(STEPS)) };
        let mut learner = Ddpg::new(small(), boxed(), boxed(), 1).unwrap();
        learner.learn(2).unwrap();
        assert_eq!(learner.episodes(), 2);
    }

    /// DDPG's agent on a plain env (the dense reward of PointReach): no
    /// goals, no relabelling, none of the goal tasks' extras.
    fn plain_agent(base: DdpgConfig, seed: u64) -> Ddpg<WithoutGoals<PointReach>> {
        let config = DdpgConfig {
            hidden: vec![32, 32],
            batch_size: 64,
            n_batches: 10,
            buffer_size: 100_000,
            her_k: 0,
            action_l2: 0.0,
            clip_target: false,
            ..base
        };
        let env = || WithoutGoals(PointReach::new(PointReachConfig::default()).unwrap());
        Ddpg::new(config, env(), env(), seed).unwrap()
    }

    #[test]
    fn td3_learns_a_plain_env_from_the_rewards_it_gave() {
        assert_learns_to_reach_the_point(DdpgConfig::td3());
    }

    #[test]
    fn sac_learns_a_plain_env_from_the_rewards_it_gave() {
        assert_learns_to_reach_the_point(DdpgConfig::sac());
    }

    /// 300 episodes on PointReach, where a random policy returns about −14
    /// and the greedy one −1.2 (the PPO test's bounds).
    fn assert_learns_to_reach_the_point(base: DdpgConfig) {
        let mut learner = plain_agent(base, 5);
        let before = learner.evaluate(20, 99).unwrap();
        learner.learn(300).unwrap();
        let after = learner.evaluate(20, 99).unwrap();
        eprintln!(
            "return: {:.2} -> {:.2}",
            before.return_mean, after.return_mean
        );
        assert!(
            after.return_mean > -2.5 && after.return_mean > before.return_mean + 3.0,
            "{:.2} -> {:.2}",
            before.return_mean,
            after.return_mean
        );
        assert_eq!(after.success_rate, None, "no goals, no success rate");
    }

    #[test]
    fn without_normalising_the_networks_see_observations_as_the_env_gives_them() {
        let input = |normalize: bool| {
            let mut learner = plain_agent(
                DdpgConfig {
                    normalize,
                    ..DdpgConfig::td3()
                },
                3,
            );
            learner.learn(3).unwrap();
            let mut input = Vec::new();
            // Far outside PointReach's box, inside `clip_obs` (200).
            let obs = [7.0, -9.5, 0.25, 150.0];
            learner
                .norms
                .push_input(&obs, &[], learner.config.clip_obs as f32, &mut input)
                .unwrap();
            input
        };
        assert_eq!(input(false), vec![7.0, -9.5, 0.25, 150.0]);
        let normalised = input(true);
        assert!(
            normalised.iter().any(|x| x.abs() == 5.0),
            "standardised and clipped to ±5: {normalised:?}"
        );
    }

    #[test]
    fn a_plain_env_refuses_relabelling_and_resumes_exactly() {
        let env = || WithoutGoals(PointReach::new(PointReachConfig::default()).unwrap());
        let message = Ddpg::new(DdpgConfig::td3(), env(), env(), 0)
            .err()
            .unwrap()
            .to_string();
        assert!(message.contains("her_k = 0"), "{message}");
        // The critic's values of an env without goals (goals of width 0).
        let q = plain_agent(DdpgConfig::td3(), 2)
            .q_values(&[0.1, -0.2, 0.3, 0.4], &[], &[0.5, -0.5])
            .unwrap();
        assert_eq!(q.len(), 2);
        // Its stored rewards go through the checkpoint's memory.
        let mut whole = plain_agent(DdpgConfig::td3(), 2);
        whole.learn(6).unwrap();
        let mut first = plain_agent(DdpgConfig::td3(), 2);
        first.learn(3).unwrap();
        let mut resumed = plain_agent(DdpgConfig::td3(), 2);
        resumed.load_state(&first.save_state()).unwrap();
        resumed.load_memory(&first.save_memory().unwrap()).unwrap();
        resumed.learn(3).unwrap();
        assert_eq!(resumed.parameters(), whole.parameters());
        assert!(resumed.buffer().episode(0).reward(0).is_some());
    }

    #[test]
    fn ddpg_with_her_learns_to_reach_goals() {
        assert_learns_to_reach_goals(DdpgConfig::default());
    }

    #[test]
    fn td3_with_her_learns_to_reach_goals() {
        assert_learns_to_reach_goals(DdpgConfig::td3());
    }

    #[test]
    fn sac_with_her_learns_to_reach_goals() {
        assert_learns_to_reach_goals(DdpgConfig::sac());
    }

    /// 300 episodes of `base` with small networks on the test task: the
    /// deterministic policy reaches the goal in at least 60 % of 50
    /// evaluation episodes, 40 points more than untrained.
    fn assert_learns_to_reach_goals(base: DdpgConfig) {
        let config = DdpgConfig {
            hidden: vec![32, 32],
            batch_size: 128,
            n_batches: 20,
            buffer_size: 100_000,
            ..base
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
