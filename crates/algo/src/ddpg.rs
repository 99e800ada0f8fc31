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
//! relabels (`her.k > 0`): a relabelled batch needs finished episodes, as
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
//! the warm-up, `learning_starts` or `warmup_steps`) and evaluates `tanh`
//! of the policy's mean. The
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
//! (`her.k = 0`, refused otherwise) and reports no success rate; a
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
    HerConfig, RelabelCounts, TransitionBatch, sample_batch_with_playing, sample_episode,
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
    /// Env steps of uniformly random actions, without training, at the
    /// start: SB3's `learning_starts`, which counts steps, for tasks whose
    /// episodes vary in length. The warm-up lasts while this or
    /// `learning_starts` holds. Default 0.
    pub warmup_steps: u64,
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
    /// "auto"`: 1.0). SAC only. Default 1.0.
    pub init_alpha: f64,
    /// The entropy SAC's temperature steers the policy toward (absent: minus
    /// the number of action components, the SAC paper's and SB3's choice).
    /// SAC only. Default absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_entropy: Option<f64>,
    /// Learn SAC's temperature (automatic entropy tuning, with Adam at
    /// `actor_lr` as SB3 has it); false: α stays `init_alpha`. SAC only.
    /// Default true.
    pub learn_alpha: bool,
    /// Hindsight experience replay: the `[algo.her]` table (see
    /// [`HerConfig`]; `k = 0` turns relabelling off, as envs without goals
    /// need). Default `future` with `k = 4`.
    pub her: HerConfig,
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
            warmup_steps: 0,
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
            her: HerConfig::default(),
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
        self.her.validate()
    }
}

/// The three variants of the agent a config names by `algo.kind`, each
/// with its defaults and the keys of [`DdpgConfig`] it takes: the keys it
/// does not take are fixed by the variant (`actor`) or never read by its
/// update (SAC's temperature in DDPG, exploration noise in SAC), so a
/// config that sets one has mistaken the algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DdpgVariant {
    /// DDPG: one critic, the actor every update, exploration noise.
    Ddpg,
    /// TD3: DDPG with twin critics, a delayed actor and target smoothing.
    Td3,
    /// SAC: the squashed Gaussian actor and a learned temperature.
    Sac,
}

impl DdpgVariant {
    /// Every variant, in the order `algo.kind` lists them.
    pub const ALL: [DdpgVariant; 3] = [DdpgVariant::Ddpg, DdpgVariant::Td3, DdpgVariant::Sac];

    /// Its `algo.kind`.
    pub fn kind(self) -> &'static str {
        match self {
            DdpgVariant::Ddpg => "ddpg",
            DdpgVariant::Td3 => "td3",
            DdpgVariant::Sac => "sac",
        }
    }

    /// Its default settings ([`DdpgConfig::default`], [`DdpgConfig::td3`],
    /// [`DdpgConfig::sac`]).
    pub fn defaults(self) -> DdpgConfig {
        match self {
            DdpgVariant::Ddpg => DdpgConfig::default(),
            DdpgVariant::Td3 => DdpgConfig::td3(),
            DdpgVariant::Sac => DdpgConfig::sac(),
        }
    }

    /// The keys of [`DdpgConfig`] a config of this variant may not set;
    /// they keep the variant's [defaults](DdpgVariant::defaults).
    pub fn foreign_keys(self) -> &'static [&'static str] {
        match self {
            DdpgVariant::Ddpg => &[
                "actor",
                "n_critics",
                "policy_delay",
                "target_policy_noise",
                "target_noise_clip",
                "init_alpha",
                "target_entropy",
                "learn_alpha",
            ],
            DdpgVariant::Td3 => &["actor", "init_alpha", "target_entropy", "learn_alpha"],
            DdpgVariant::Sac => &[
                "actor",
                "random_eps",
                "noise_eps",
                "noise",
                "policy_delay",
                "target_policy_noise",
                "target_noise_clip",
                "bound_gradient",
                "preactivation_l2",
            ],
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
        if goal == 0 && config.her.k > 0 {
            return Err(Error::Config(format!(
                "the env has no goals for hindsight relabelling to substitute: set algo.her.k = 0 \
                 (it is {})",
                config.her.k
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
            her: config.her.clone(),
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
        let warmup_episode = k < self.config.learning_starts as u64;
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
            let warmup = warmup_episode || self.env_steps < self.config.warmup_steps;
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
                let playing = (self.config.her.k == 0).then_some(&episode);
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
                    && self.episodes >= self.config.learning_starts as u64
                    && self.env_steps >= self.config.warmup_steps;
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
mod tests;
