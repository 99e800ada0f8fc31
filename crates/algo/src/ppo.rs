//! Proximal policy optimisation (Schulman et al., 2017) with a Beta policy
//! for bounded actions (Chou et al., 2017), or a Gaussian one to compare.
//!
//! Read top to bottom: the config with its defaults, the policy's
//! distribution, collection, the batch an update learns from (normalised
//! observations, scaled rewards, GAE(λ) advantages and value targets), one
//! minibatch's losses and gradients, the update loop, then the `Learner`
//! plumbing that lets every parallel strategy drive it.
//!
//! The defaults are CleanRL's `ppo_continuous_action.py` (itself SB3's PPO
//! with RL Zoo's `VecNormalize`): 10 epochs of 32 minibatches per rollout,
//! clip 0.2, GAE λ 0.95, Adam 3e-4 annealed to 0, gradient norm 0.5,
//! observations and rewards normalised and clipped to ±10, 64 × 64 `tanh`
//! networks. Three things differ, each for a reason:
//!
//! * **Whole episodes.** A rollout is `episodes_per_rollout` complete
//!   episodes rather than a fixed step count that runs across episode ends:
//!   every checkpoint then falls between episodes, so a resumed run replays
//!   the uninterrupted one exactly, and every worker of a parallel run
//!   contributes whole episodes. The worm's 1 000-step episodes make two of
//!   them CleanRL's 2 048-step rollout. Where episodes end early and vary
//!   (a hopper that falls), `steps_per_rollout` sets CleanRL's step count
//!   instead: an update then cuts the episode in hand, bootstrapping from
//!   the value where it was cut, and the episode goes on with the new
//!   policy; reward scaling's discounted return runs on across the cut,
//!   as in SB3's `VecNormalize`. Checkpoints still fall between episodes,
//!   the steps gathered since the last update (and that return) saved
//!   with the state, so resuming stays exact;
//!   the averaging and gathering strategies, which schedule whole episodes,
//!   refuse it.
//! * **Two optimisers.** Policy and value networks share no layers, so each
//!   has its own Adam and its own gradient clip; `vf_coef` then only scales
//!   a gradient Adam normalises away, and is not a setting.
//! * **Statistics move once per update.** Observations are normalised with
//!   the statistics of the last update while collecting and learning, then
//!   the batch is folded in; the discounted-return statistics that scale
//!   rewards take the batch in before it is scaled. Workers that average
//!   gradients average these statistics too, so every worker stays
//!   bit-identical.
//!
//! A Beta policy's log-density needs the digamma function for its gradient,
//! which burn lacks. So the loss's gradient with respect to the network's
//! raw outputs is computed analytically, as is the value loss's with respect
//! to the prediction, and both go back through their networks by hand
//! ([`MlpTape`]): for 64 × 64 networks at a few dozen rows that costs a
//! fraction of burn's autodiff graph (docs/benchmarks.md). The tests hold
//! the whole gradient to the paper's losses written out in f64.

use burn::module::Module;
use rand::Rng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};
use shoal_rl_core::{
    Alone, Env, Error, EvalReport, GradientLearner, LearnReport, Learner, MeanReducer, Policy,
    Result, Space, StopFlag, derive_seed, evaluate_policy, rng_from_seed, split_parameters,
};
use shoal_rl_policy::{
    Activation, BetaTerms, Mlp, MlpConfig, MlpShape, MlpTape, Normalizer, Trained, sample_unit,
    training_device,
};

use crate::check;
use crate::rollout::{EpisodePlay, Rollout, StateDims, collect_episodes, learn_in_batches, misfit};
use crate::versioned::Format;

/// The distribution the policy network parameterises, per action component.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PolicyKind {
    /// Beta(α, β) on the action's bounds, α, β = 1 + softplus(·) (Chou et al.).
    Beta,
    /// A Gaussian on [-1, 1] whose draws are clipped to the bounds
    /// (SB3's and CleanRL's default); the log-density is the unclipped draw's.
    GaussianClip,
    /// A Gaussian squashed by `tanh` onto the bounds. The squashing's
    /// Jacobian does not depend on the parameters, so the ratio is the
    /// Gaussian's; the entropy bonus is the Gaussian's.
    GaussianTanh,
}

/// Hyperparameters of [`Ppo`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PpoConfig {
    /// Discount factor γ. Default 0.99.
    pub gamma: f64,
    /// GAE's λ: 0 is one-step TD, 1 Monte Carlo. Default 0.95.
    pub gae_lambda: f64,
    /// Adam step size of both networks. Default 3e-4.
    pub learning_rate: f64,
    /// Anneal the step size linearly to 0 over the run's budget
    /// ([`Ppo::anneal_over`]). Default true.
    pub anneal_lr: bool,
    /// Whole episodes collected per update. Default 2.
    pub episodes_per_rollout: usize,
    /// Update every this many env steps instead, cutting an episode where
    /// the count falls (SB3's and CleanRL's `n_steps`; 0: whole episodes,
    /// `episodes_per_rollout`). For tasks whose episodes end early and vary
    /// in length (a body that falls). One learner or the pool only: the
    /// averaging and gathering strategies schedule whole episodes. Default 0.
    pub steps_per_rollout: usize,
    /// Passes over each rollout. Default 10.
    pub epochs: usize,
    /// Minibatches per pass (each about rollout steps / minibatches rows). Default 32.
    pub minibatches: usize,
    /// The ratio's clip range ε. Default 0.2.
    pub clip_range: f64,
    /// Clip the value prediction to within this of the rollout's prediction
    /// (0: no value clipping, SB3's default). Default 0.
    pub value_clip_range: f64,
    /// Standardise advantages within each minibatch. Default true.
    pub normalize_advantages: bool,
    /// Weight of the entropy bonus. Default 0.
    pub entropy_coef: f64,
    /// Global gradient-norm clip of each network. Default 0.5.
    pub max_grad_norm: f64,
    /// Stop an update's epochs once a minibatch's approximate KL exceeds
    /// 1.5 × this (SB3's rule; 0: never). Default 0.
    pub target_kl: f64,
    /// Normalise observations by running statistics, clipped to ±10. Default true.
    pub normalize_observations: bool,
    /// Scale rewards by the running standard deviation of the discounted
    /// return, clipped to ±10. Default true.
    pub normalize_rewards: bool,
    /// Hidden layer widths of the policy and value networks. Default [64, 64].
    pub hidden: Vec<usize>,
    /// The policy's distribution. Default `beta`.
    pub policy: PolicyKind,
}

impl Default for PpoConfig {
    fn default() -> Self {
        PpoConfig {
            gamma: 0.99,
            gae_lambda: 0.95,
            learning_rate: 3e-4,
            anneal_lr: true,
            episodes_per_rollout: 2,
            steps_per_rollout: 0,
            epochs: 10,
            minibatches: 32,
            clip_range: 0.2,
            value_clip_range: 0.0,
            normalize_advantages: true,
            entropy_coef: 0.0,
            max_grad_norm: 0.5,
            target_kl: 0.0,
            normalize_observations: true,
            normalize_rewards: true,
            hidden: vec![64, 64],
            policy: PolicyKind::Beta,
        }
    }
}

/// Largest number of epochs or minibatches per update.
const MAX_PASSES: usize = 10_000;
/// Largest step-sized rollout: 64 of SB3's default 2 048-step rollouts.
const MAX_ROLLOUT_STEPS: usize = 1 << 17;

impl PpoConfig {
    /// Checks every value; the error names the offending key.
    pub fn validate(&self) -> Result<()> {
        for (key, value) in [("gamma", self.gamma), ("gae_lambda", self.gae_lambda)] {
            if !(0.0..=1.0).contains(&value) {
                return Err(check::bad(
                    "ppo",
                    key,
                    format!("must be in [0, 1], got {value}"),
                ));
            }
        }
        check::positive("ppo", "learning_rate", self.learning_rate)?;
        check::positive("ppo", "clip_range", self.clip_range)?;
        check::positive("ppo", "max_grad_norm", self.max_grad_norm)?;
        check::hidden("ppo", &self.hidden)?;
        check::count(
            "ppo",
            "episodes_per_rollout",
            self.episodes_per_rollout,
            check::MAX_BATCH,
        )?;
        check::count("ppo", "epochs", self.epochs, MAX_PASSES)?;
        check::count("ppo", "minibatches", self.minibatches, MAX_PASSES)?;
        if self.steps_per_rollout > 0 {
            check::count(
                "ppo",
                "steps_per_rollout",
                self.steps_per_rollout,
                MAX_ROLLOUT_STEPS,
            )?;
            if self.steps_per_rollout < self.minibatches {
                return Err(check::bad(
                    "ppo",
                    "steps_per_rollout",
                    format!(
                        "must be 0 (whole episodes) or at least minibatches ({}), got {}",
                        self.minibatches, self.steps_per_rollout
                    ),
                ));
            }
        }
        for (key, value) in [
            ("value_clip_range", self.value_clip_range),
            ("entropy_coef", self.entropy_coef),
            ("target_kl", self.target_kl),
        ] {
            if !(value.is_finite() && value >= 0.0) {
                return Err(check::bad(
                    "ppo",
                    key,
                    format!("must be finite and ≥ 0, got {value}"),
                ));
            }
        }
        Ok(())
    }
}

// -------------------------------------------------------------------------
// The policy's distribution, from the network's 2 · act_dim raw outputs
// -------------------------------------------------------------------------

/// Bounds of a Gaussian's log standard deviation (as SB3's SAC).
const LOG_STD_MIN: f64 = -5.0;
const LOG_STD_MAX: f64 = 2.0;
/// ½ ln 2π.
const HALF_LN_TWO_PI: f64 = 0.918_938_533_204_672_7;

fn softplus(z: f64) -> f64 {
    z.max(0.0) + (-z.abs()).exp().ln_1p()
}

fn sigmoid(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

/// A log standard deviation from its raw output, and whether the clamp let
/// the gradient through.
fn log_std(z: f64) -> (f64, f64) {
    if (LOG_STD_MIN..=LOG_STD_MAX).contains(&z) {
        (z, 1.0)
    } else {
        (z.clamp(LOG_STD_MIN, LOG_STD_MAX), 0.0)
    }
}

/// What PPO's loss needs of one action component: `ln π(x)` and the
/// entropy, each with its gradient with respect to the raw outputs
/// `(za, zb)`.
struct ComponentTerms {
    log_prob: f64,
    log_prob_grad: [f64; 2],
    entropy: f64,
    /// Zero unless asked for (under an entropy bonus).
    entropy_grad: [f64; 2],
}

impl PolicyKind {
    /// The terms of one component with raw outputs `(za, zb)` at draw `x`;
    /// the entropy's gradient only `with_entropy_grad`.
    fn terms(self, za: f64, zb: f64, x: f64, with_entropy_grad: bool) -> ComponentTerms {
        match self {
            PolicyKind::Beta => {
                let (alpha, beta) = (1.0 + softplus(za), 1.0 + softplus(zb));
                let (da, db) = (sigmoid(za), sigmoid(zb));
                let terms = BetaTerms::new(x, alpha, beta, with_entropy_grad);
                let (ga, gb) = terms.log_prob_grad;
                let (ha, hb) = terms.entropy_grad.unwrap_or((0.0, 0.0));
                ComponentTerms {
                    log_prob: terms.log_prob,
                    log_prob_grad: [ga * da, gb * db],
                    entropy: terms.entropy,
                    entropy_grad: [ha * da, hb * db],
                }
            }
            PolicyKind::GaussianClip | PolicyKind::GaussianTanh => {
                let (ls, pass) = log_std(zb);
                let d = (x - za) / ls.exp();
                ComponentTerms {
                    log_prob: -0.5 * d * d - ls - HALF_LN_TWO_PI,
                    log_prob_grad: [d / ls.exp(), (d * d - 1.0) * pass],
                    entropy: ls + 0.5 + HALF_LN_TWO_PI,
                    entropy_grad: [0.0, pass],
                }
            }
        }
    }

    /// One draw per component from the raw outputs `out` (`[za… | zb…]`).
    fn sample<R: Rng + ?Sized>(self, out: &[f32], rng: &mut R) -> Vec<f32> {
        let half = out.len() / 2;
        let (za, zb) = out.split_at(half);
        match self {
            PolicyKind::Beta => {
                let alpha: Vec<f32> = za
                    .iter()
                    .map(|z| (1.0 + softplus(*z as f64)) as f32)
                    .collect();
                let beta: Vec<f32> = zb
                    .iter()
                    .map(|z| (1.0 + softplus(*z as f64)) as f32)
                    .collect();
                sample_unit(&alpha, &beta, rng)
            }
            PolicyKind::GaussianClip | PolicyKind::GaussianTanh => za
                .iter()
                .zip(zb)
                .map(|(mu, z)| {
                    let noise: f64 = StandardNormal.sample(rng);
                    (*mu as f64 + log_std(*z as f64).0.exp() * noise) as f32
                })
                .collect(),
        }
    }

    /// The deterministic draw used in evaluation: the Beta's mean, the Gaussian's mean.
    fn mode(self, out: &[f32]) -> Vec<f32> {
        let half = out.len() / 2;
        let (za, zb) = out.split_at(half);
        match self {
            PolicyKind::Beta => za
                .iter()
                .zip(zb)
                .map(|(a, b)| {
                    let (a, b) = (1.0 + softplus(*a as f64), 1.0 + softplus(*b as f64));
                    (a / (a + b)) as f32
                })
                .collect(),
            PolicyKind::GaussianClip | PolicyKind::GaussianTanh => za.to_vec(),
        }
    }

    /// A draw as a unit action in `[0, 1]`.
    fn to_unit(self, draws: &[f32]) -> Vec<f32> {
        draws
            .iter()
            .map(|&u| match self {
                PolicyKind::Beta => u,
                PolicyKind::GaussianClip => 0.5 * (u.clamp(-1.0, 1.0) + 1.0),
                PolicyKind::GaussianTanh => 0.5 * (u.tanh() + 1.0),
            })
            .collect()
    }
}

/// A frozen PPO policy: normalises the observation as in training and acts
/// with the distribution's mean, mapped onto the action space.
#[derive(Debug, Clone)]
pub struct PpoPolicy {
    shape: MlpShape,
    params: Vec<f32>,
    kind: PolicyKind,
    normalizer: Option<Normalizer>,
    space: Space,
}

impl PpoPolicy {
    fn raw_outputs(&self, obs: &[f32]) -> Result<Vec<f32>> {
        let input = match &self.normalizer {
            Some(norm) => norm.normalize(obs)?,
            None => obs.to_vec(),
        };
        let mut tape = MlpTape::new(self.shape.clone());
        Ok(tape.forward(&self.params, &input).to_vec())
    }
}

impl Policy for PpoPolicy {
    fn act(&self, obs: &[f32]) -> Vec<f32> {
        self.try_act(obs).expect("observation of the trained size")
    }

    fn try_act(&self, obs: &[f32]) -> Result<Vec<f32>> {
        let out = self.raw_outputs(obs)?;
        Ok(self
            .space
            .from_unit(&self.kind.to_unit(&self.kind.mode(&out))))
    }

    /// A draw as in training: from the Beta, or the Gaussian then clipped
    /// or squashed into the bounds.
    fn try_sample(&self, obs: &[f32], rng: &mut dyn Rng) -> Result<Vec<f32>> {
        let out = self.raw_outputs(obs)?;
        Ok(self
            .space
            .from_unit(&self.kind.to_unit(&self.kind.sample(&out, rng))))
    }
}

// -------------------------------------------------------------------------
// GAE(λ)
// -------------------------------------------------------------------------

/// GAE(λ) advantages and value targets of one episode: `values[t]` is
/// V(s_t), `bootstrap` is V(s_T) after a truncation and 0 after a
/// termination. `δ_t = r_t + γ V(s_{t+1}) − V(s_t)`,
/// `Â_t = δ_t + γλ Â_{t+1}`, target `Â_t + V(s_t)`.
pub fn gae(
    rewards: &[f64],
    values: &[f64],
    bootstrap: f64,
    gamma: f64,
    lambda: f64,
) -> (Vec<f64>, Vec<f64>) {
    assert_eq!(rewards.len(), values.len(), "one value per reward");
    let mut advantages = vec![0.0; rewards.len()];
    let (mut next_value, mut next_advantage) = (bootstrap, 0.0);
    for t in (0..rewards.len()).rev() {
        let delta = rewards[t] + gamma * next_value - values[t];
        next_advantage = delta + gamma * lambda * next_advantage;
        advantages[t] = next_advantage;
        next_value = values[t];
    }
    let targets = advantages.iter().zip(values).map(|(a, v)| a + v).collect();
    (advantages, targets)
}

// -------------------------------------------------------------------------
// Saved state
// -------------------------------------------------------------------------

/// Everything [`Ppo`] changes while training, for checkpoints and for
/// copying the best agent between workers.
#[derive(Serialize, Deserialize)]
struct PpoState {
    policy: Vec<u8>,
    value: Vec<u8>,
    observations: Normalizer,
    returns: Normalizer,
    episodes: u64,
    env_steps: u64,
    updates: u64,
    episodes_learned: u64,
}

/// The saved state's header: bumped whenever [`PpoState`] changes.
/// Version 2 appends the steps waiting for a step-sized rollout
/// (`Vec<Rollout>`), version 3 then the discounted return of the episode
/// the last update cut (`f64`); versions 1 and 2 still read, as states
/// of builds whose reward scaling began each piece of a cut episode from 0.
const STATE_FORMAT: Format = Format {
    name: "PPO state",
    magic: *b"shoalPPO",
    version: 3,
};

// -------------------------------------------------------------------------
// The agent
// -------------------------------------------------------------------------

/// A PPO agent on its own environment.
pub struct Ppo<E: Env> {
    config: PpoConfig,
    env: E,
    eval_env: E,
    action_space: Space,
    obs_dim: usize,
    act_dim: usize,
    policy: Trained<Mlp>,
    value: Trained<Mlp>,
    /// Each network's passes by hand on its flat parameters (acting,
    /// the batch's predictions and the minibatch gradients).
    policy_tape: MlpTape,
    value_tape: MlpTape,
    /// Observation statistics (used only with `normalize_observations`).
    observations: Normalizer,
    /// Statistics of the discounted return, whose std scales rewards.
    returns: Normalizer,
    seed: u64,
    episodes: u64,
    env_steps: u64,
    updates: u64,
    /// Episodes the updates so far have learned from (all workers' under
    /// rollout gathering): the learning-rate schedule's clock.
    episodes_learned: u64,
    /// Episodes over which the learning rate anneals to 0 (0: constant).
    anneal_episodes: u64,
    /// Env steps over which it anneals instead (0: by episodes).
    anneal_env_steps: u64,
    /// With `steps_per_rollout`: the steps gathered since the last update,
    /// as finished episodes and the start of the one in hand, fewer than a
    /// rollout between calls to `learn`.
    pending: Vec<Rollout>,
    /// With `steps_per_rollout`: the discounted return (of raw rewards) of
    /// the episode the last update cut, where it was cut; 0 when that
    /// update's last episode had ended. Reward scaling's running return
    /// goes on from it in the episode's next piece, as SB3's `VecNormalize`
    /// carries it until the episode ends.
    cut_return: f64,
}

/// One update's data: what every minibatch draws rows from.
#[derive(Clone, Debug, Default)]
struct Batch {
    /// Observations as the networks see them (normalised), `[n, obs_dim]`.
    obs: Vec<f32>,
    /// The policy's draws, `[n, act_dim]`.
    draws: Vec<f32>,
    /// `ln π_old(draw | s)`, summed over components.
    log_prob_old: Vec<f64>,
    advantages: Vec<f64>,
    /// Value targets (GAE advantage + V_old).
    targets: Vec<f64>,
    /// V_old(s): the rollout's value predictions.
    values_old: Vec<f64>,
}

impl Batch {
    fn len(&self) -> usize {
        self.advantages.len()
    }
}

/// What one minibatch's losses came to.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct MinibatchStats {
    /// The clipped surrogate alone (the entropy bonus is not in it).
    policy_loss: f64,
    value_loss: f64,
    /// Mean over rows of the policy's entropy, summed over components.
    entropy: f64,
    clip_fraction: f64,
    approx_kl: f64,
}

impl<E: Env> Ppo<E> {
    /// An agent with networks initialised from `seed`, training on `env` and
    /// evaluating on `eval_env` (two instances of the same task).
    pub fn new(config: PpoConfig, env: E, eval_env: E, seed: u64) -> Result<Self> {
        config.validate()?;
        let action_space = check::bounded_actions(&env, "PPO's policies")?;
        let obs_dim = env.observation_space().dim();
        let act_dim = action_space.dim();
        let device = training_device();
        let net = |outputs, stream| {
            shoal_rl_policy::canonicalise(
                MlpConfig::new(obs_dim, config.hidden.clone(), outputs)
                    .init_with(Activation::Tanh, &device),
                derive_seed(seed, stream),
            )
        };
        let clip = Some(config.max_grad_norm);
        let policy = Trained::adam(net(2 * act_dim, 1), config.learning_rate, clip);
        let value = Trained::adam(net(1, 2), config.learning_rate, clip);
        Ok(Ppo {
            policy_tape: MlpTape::new(policy.module().shape()),
            value_tape: MlpTape::new(value.module().shape()),
            policy,
            value,
            observations: Normalizer::new(obs_dim).with_clip(10.0).with_eps(1e-4),
            returns: Normalizer::new(1).with_eps(1e-4),
            config,
            env,
            eval_env,
            action_space,
            obs_dim,
            act_dim,
            seed,
            episodes: 0,
            env_steps: 0,
            updates: 0,
            episodes_learned: 0,
            anneal_episodes: 0,
            anneal_env_steps: 0,
            pending: Vec::new(),
            cut_return: 0.0,
        })
    }

    /// With `anneal_lr`, the learning rate falls linearly from its setting
    /// to 0 as the updates learn from `episodes` episodes: the run's budget
    /// as this learner's updates see it (all workers' episodes under rollout
    /// gathering, its own share under averaging or the pool).
    #[must_use]
    pub fn anneal_over(mut self, episodes: u64) -> Self {
        self.anneal_episodes = episodes;
        self
    }

    /// With `anneal_lr`, the learning rate falls linearly to 0 as this
    /// learner's own updates learn from `steps` env steps: a budget in env
    /// steps (Stable-Baselines3's `total_timesteps`) for a learner that
    /// learns from its own episodes alone. Takes the place of
    /// [`Ppo::anneal_over`].
    #[must_use]
    pub fn anneal_over_env_steps(mut self, steps: u64) -> Self {
        self.anneal_env_steps = steps;
        self
    }

    /// An error naming `strategy` when this agent updates in step-sized
    /// rollouts (`steps_per_rollout`): for a strategy that schedules whole
    /// episodes (gradient averaging, rollout gathering), which would cut
    /// across the steps each worker's updates fall on.
    pub fn check_whole_episodes(&self, strategy: &str) -> Result<()> {
        match self.config.steps_per_rollout {
            0 => Ok(()),
            steps => Err(check::bad(
                "ppo",
                "steps_per_rollout",
                format!(
                    "is {steps}, but {strategy} schedules whole episodes: set it to 0 \
                     (episodes_per_rollout), or train one learner or the pool"
                ),
            )),
        }
    }

    /// The hyperparameters.
    pub fn config(&self) -> &PpoConfig {
        &self.config
    }

    /// Episodes trained so far (survives save/load).
    pub fn episodes(&self) -> u64 {
        self.episodes
    }

    /// The current policy, frozen for evaluation.
    pub fn frozen_policy(&self) -> PpoPolicy {
        PpoPolicy {
            shape: self.policy.module().shape(),
            params: self.policy.params().to_vec(),
            kind: self.config.policy,
            normalizer: self
                .config
                .normalize_observations
                .then(|| self.observations.clone()),
            space: self.action_space.clone(),
        }
    }

    fn state_dims(&self) -> StateDims {
        StateDims::new(self.obs_dim, self.act_dim)
    }

    /// The learning rate the next update, on `rows` newly collected steps,
    /// steps with.
    fn current_learning_rate(&self, rows: usize) -> f64 {
        let learned = match (self.anneal_env_steps, self.anneal_episodes) {
            _ if !self.config.anneal_lr => return self.config.learning_rate,
            // The steps before this update's: as by episodes, the first
            // update steps with the full rate.
            (steps, _) if steps > 0 => {
                self.env_steps.saturating_sub(rows as u64) as f64 / steps as f64
            }
            (_, episodes) if episodes > 0 => self.episodes_learned as f64 / episodes as f64,
            _ => return self.config.learning_rate,
        };
        let left = 1.0 - learned;
        // Never exactly 0: a resumed run past its budget still moves.
        self.config.learning_rate * left.max(1e-3)
    }

    // ---------------------------------------------------------------------
    // Collection
    // ---------------------------------------------------------------------

    fn normalized(&self, obs: &[f32]) -> Result<Vec<f32>> {
        normalize_if(&self.observations, self.config.normalize_observations, obs)
    }

    fn collect(&mut self, episodes: usize) -> Result<(Vec<Rollout>, LearnReport)> {
        self.check_whole_episodes("rollout gathering")?;
        collect_episodes(episodes, || self.collect_episode())
    }

    /// Plays one episode with the stochastic policy (seeded by its number:
    /// see [`crate::rollout::play_episode`]).
    fn collect_episode(&mut self) -> Result<(Rollout, f64)> {
        let mut play = EpisodePlay::start(&mut self.env, self.seed, self.episodes);
        while !self.step_episode(&mut play)? {}
        self.episodes += 1;
        self.env_steps += play.steps;
        Ok((play.rollout, play.undiscounted))
    }

    /// One step of `play` with a draw from the current policy; whether the
    /// episode ended.
    fn step_episode(&mut self, play: &mut EpisodePlay) -> Result<bool> {
        let kind = self.config.policy;
        let (tape, params, observations) = (
            &mut self.policy_tape,
            self.policy.params(),
            &self.observations,
        );
        let normalize = self.config.normalize_observations;
        play.step(
            &mut self.env,
            &self.action_space,
            |obs, rng| {
                let input = normalize_if(observations, normalize, obs)?;
                Ok(kind.sample(tape.forward(params, &input), rng))
            },
            |draws| kind.to_unit(draws),
        )
    }

    /// Plays one episode in step-sized rollouts: whenever
    /// `steps_per_rollout` steps have gathered (with those left from
    /// earlier episodes), the networks update on them, cutting this
    /// episode where it stands, and it goes on with the new policy.
    fn play_in_steps(&mut self) -> Result<LearnReport> {
        let rollout_steps = self.config.steps_per_rollout;
        let mut gathered: usize = self.pending.iter().map(Rollout::len).sum();
        let mut play = EpisodePlay::start(&mut self.env, self.seed, self.episodes);
        let mut report = LearnReport::default();
        loop {
            let ended = self.step_episode(&mut play)?;
            self.env_steps += 1;
            gathered += 1;
            if ended {
                self.pending.push(std::mem::take(&mut play.rollout));
            }
            // `>=`: a state saved under a larger setting may hold more.
            if gathered >= rollout_steps {
                if !ended {
                    self.pending.push(play.cut());
                }
                let rollouts = std::mem::take(&mut self.pending);
                report.scalars = self.update_ending(&rollouts, !ended, &mut Alone)?;
                // The schedule's clock by episodes counts whole episodes,
                // not the pieces `update` was given.
                self.episodes_learned = self.episodes + u64::from(ended);
                gathered = 0;
            }
            if ended {
                break;
            }
        }
        self.episodes += 1;
        report.episode_returns.push(play.undiscounted);
        report.episode_lengths.push(play.steps);
        Ok(report)
    }
}

/// `ln π(draws | row)` summed over components.
fn log_prob(kind: PolicyKind, row: &[f32], draws: &[f32]) -> f64 {
    let act_dim = draws.len();
    (0..act_dim)
        .map(|j| {
            kind.terms(
                row[j] as f64,
                row[act_dim + j] as f64,
                draws[j] as f64,
                false,
            )
            .log_prob
        })
        .sum()
}

fn normalize_if(observations: &Normalizer, on: bool, obs: &[f32]) -> Result<Vec<f32>> {
    if on {
        observations.normalize(obs)
    } else {
        Ok(obs.to_vec())
    }
}

impl<E: Env> Ppo<E> {
    // ---------------------------------------------------------------------
    // The batch: normalised observations, scaled rewards, GAE
    // ---------------------------------------------------------------------

    /// Rewards as the value function learns them: each episode's rewards
    /// divided by the running std of the discounted return (the batch's
    /// returns folded in first, averaged across workers through `reducer`)
    /// and clipped to ±10, or as they came. The first rollout's return
    /// goes on from `cut_return` (the rest of an episode the last update
    /// cut); `ends_in_cut` says the last rollout is such a cut piece, whose
    /// return the next batch goes on from.
    fn scaled_rewards(
        &mut self,
        rollouts: &[Rollout],
        ends_in_cut: bool,
        reducer: &mut dyn MeanReducer,
    ) -> Result<Vec<Vec<f64>>> {
        let raw = rollouts
            .iter()
            .map(|r| r.rewards.iter().map(|v| *v as f64).collect::<Vec<f64>>());
        if !self.config.normalize_rewards {
            return Ok(raw.collect());
        }
        let raw: Vec<Vec<f64>> = raw.collect();
        let mut running = 0.0;
        for (i, rewards) in raw.iter().enumerate() {
            running = if i == 0 { self.cut_return } else { 0.0 };
            let discounted: Vec<f32> = rewards
                .iter()
                .map(|r| {
                    running = running * self.config.gamma + r;
                    running as f32
                })
                .collect();
            self.returns.update(&discounted)?;
        }
        self.cut_return = if ends_in_cut { running } else { 0.0 };
        self.returns.sync(reducer)?;
        let std = self.returns.std()[0] as f64;
        Ok(raw
            .into_iter()
            .map(|rewards| {
                rewards
                    .iter()
                    .map(|r| (r / std).clamp(-10.0, 10.0))
                    .collect()
            })
            .collect())
    }

    /// Everything the epochs learn from, computed once with the networks
    /// and statistics the rollouts were collected with.
    fn prepare(
        &mut self,
        rollouts: &[Rollout],
        ends_in_cut: bool,
        reducer: &mut dyn MeanReducer,
    ) -> Result<Batch> {
        let rewards = self.scaled_rewards(rollouts, ends_in_cut, reducer)?;
        let mut batch = Batch::default();
        for (rollout, rewards) in rollouts.iter().zip(&rewards) {
            let obs = self.normalized(&rollout.obs)?;
            let value_params = self.value.params();
            let values: Vec<f64> = self
                .value_tape
                .forward(value_params, &obs)
                .iter()
                .map(|v| f64::from(*v))
                .collect();
            let bootstrap = if rollout.truncated {
                let last = self.normalized(&rollout.final_obs)?;
                self.value_tape.forward(value_params, &last)[0] as f64
            } else {
                0.0
            };
            let (advantages, targets) = gae(
                rewards,
                &values,
                bootstrap,
                self.config.gamma,
                self.config.gae_lambda,
            );
            let out = self.policy_tape.forward(self.policy.params(), &obs);
            for (t, row) in out.chunks_exact(2 * self.act_dim).enumerate() {
                let draws = &rollout.unit_actions[t * self.act_dim..(t + 1) * self.act_dim];
                batch
                    .log_prob_old
                    .push(log_prob(self.config.policy, row, draws));
            }
            batch.obs.extend(obs);
            batch.draws.extend_from_slice(&rollout.unit_actions);
            batch.advantages.extend(advantages);
            batch.targets.extend(targets);
            batch.values_old.extend(values);
        }
        Ok(batch)
    }

    // ---------------------------------------------------------------------
    // One minibatch: the clipped surrogate, the value loss, their gradients
    // ---------------------------------------------------------------------

    /// The flat gradients `[policy | value]` of the minibatch `rows` of
    /// `batch`:
    ///
    /// * policy: `−mean(min(ρ·Â, clip(ρ, 1 ± ε)·Â)) − c_H · mean(H)` with
    ///   `ρ = π(a|s) / π_old(a|s)`, `Â` standardised within the minibatch
    ///   (unbiased std, as SB3) and `H` the entropy summed over components;
    /// * value: `½ · mean((V − target)²)`, or with value clipping
    ///   `½ · mean(max((V − target)², (V_old + clip(V − V_old, ±c) − target)²))`.
    fn minibatch_gradients(&mut self, batch: &Batch, rows: &[usize]) -> (Vec<f32>, MinibatchStats) {
        let (obs_dim, act_dim) = (self.obs_dim, self.act_dim);
        let b = rows.len();
        let mut stats = MinibatchStats::default();
        let obs: Vec<f32> = rows
            .iter()
            .flat_map(|&i| batch.obs[i * obs_dim..(i + 1) * obs_dim].iter().copied())
            .collect();
        let mut advantages: Vec<f64> = rows.iter().map(|&i| batch.advantages[i]).collect();
        if self.config.normalize_advantages && b > 1 {
            let mean = advantages.iter().sum::<f64>() / b as f64;
            let var = advantages.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / (b - 1) as f64;
            let std = var.sqrt();
            advantages
                .iter_mut()
                .for_each(|a| *a = (*a - mean) / (std + 1e-8));
        }

        // ---- policy: d(loss)/d(raw outputs), back through the network ----
        let out = self.policy_tape.forward(self.policy.params(), &obs);
        let (eps, entropy_coef) = (self.config.clip_range, self.config.entropy_coef);
        // The entropy's gradient (ψ′ of three arguments per Beta component)
        // is the dearest term; without a bonus it would only be multiplied by 0.
        let with_entropy_grad = entropy_coef != 0.0;
        let mut coef = vec![0.0f32; out.len()];
        let mut terms = Vec::with_capacity(act_dim);
        for (k, &i) in rows.iter().enumerate() {
            let row = &out[k * 2 * act_dim..(k + 1) * 2 * act_dim];
            let draws = &batch.draws[i * act_dim..(i + 1) * act_dim];
            terms.clear();
            terms.extend((0..act_dim).map(|j| {
                self.config.policy.terms(
                    row[j] as f64,
                    row[act_dim + j] as f64,
                    draws[j] as f64,
                    with_entropy_grad,
                )
            }));
            let log_prob: f64 = terms.iter().map(|t| t.log_prob).sum();
            let log_ratio = log_prob - batch.log_prob_old[i];
            let ratio = log_ratio.exp();
            let adv = advantages[k];
            let unclipped = ratio * adv;
            let clipped = ratio.clamp(1.0 - eps, 1.0 + eps) * adv;
            stats.policy_loss -= unclipped.min(clipped);
            // The minimum's gradient flows through the unclipped term unless
            // the clipped one is smaller (where the clipped term is constant).
            let d_log_prob = if unclipped <= clipped {
                -adv * ratio
            } else {
                0.0
            };
            if (ratio - 1.0).abs() > eps {
                stats.clip_fraction += 1.0;
            }
            stats.approx_kl += (ratio - 1.0) - log_ratio;
            let base = k * 2 * act_dim;
            for (j, t) in terms.iter().enumerate() {
                stats.entropy += t.entropy;
                for (half, (g, h)) in t.log_prob_grad.iter().zip(&t.entropy_grad).enumerate() {
                    coef[base + half * act_dim + j] =
                        ((d_log_prob * g - entropy_coef * h) / b as f64) as f32;
                }
            }
        }
        let split = self.policy.params().len();
        let mut grads = vec![0.0f32; split + self.value.params().len()];
        let (policy_grad, value_grad) = grads.split_at_mut(split);
        self.policy_tape
            .backward(self.policy.params(), &coef, Some(policy_grad), None);

        // ---- value: regression on the GAE targets ----
        // ½·mean((V − target)²), or with clipping ½·mean(max((V − target)²,
        // (V_old + clip(V − V_old, ±c) − target)²)); d/dV by hand.
        let predicted = self.value_tape.forward(self.value.params(), &obs);
        let clip = self.config.value_clip_range;
        let mut d_value = vec![0.0f32; b];
        let mut loss = 0.0f64;
        for (k, &i) in rows.iter().enumerate() {
            let v = predicted[k] as f64;
            let target = batch.targets[i] as f32 as f64;
            let error = v - target;
            let (squared, slope) = if clip > 0.0 {
                let old = batch.values_old[i] as f32 as f64;
                let step = v - old;
                let held_error = old + step.clamp(-clip, clip) - target;
                if held_error * held_error > error * error {
                    // The held prediction moves with V only inside the clip.
                    let inside = step.abs() < clip;
                    (
                        held_error * held_error,
                        if inside { held_error } else { 0.0 },
                    )
                } else {
                    (error * error, error)
                }
            } else {
                (error * error, error)
            };
            loss += squared;
            d_value[k] = (slope / b as f64) as f32;
        }
        stats.value_loss = 0.5 * loss / b as f64;
        self.value_tape
            .backward(self.value.params(), &d_value, Some(value_grad), None);

        let n = b as f64;
        stats.policy_loss /= n;
        stats.entropy /= n;
        stats.clip_fraction /= n;
        stats.approx_kl /= n;
        (grads, stats)
    }

    // ---------------------------------------------------------------------
    // The update
    // ---------------------------------------------------------------------

    /// Epochs of minibatch steps on `rollouts`. Each minibatch's gradient,
    /// with its approximate KL appended, goes through `reducer` (averaged
    /// across workers in gradient-parallel training), so every worker
    /// takes the same steps and stops early at the same minibatch.
    fn update(
        &mut self,
        rollouts: &[Rollout],
        reducer: &mut dyn MeanReducer,
    ) -> Result<Vec<(String, f64)>> {
        self.update_ending(rollouts, false, reducer)
    }

    /// [`Ppo::update`] where the last rollout may be an episode a
    /// step-sized rollout cut short (`ends_in_cut`), to be continued.
    fn update_ending(
        &mut self,
        rollouts: &[Rollout],
        ends_in_cut: bool,
        reducer: &mut dyn MeanReducer,
    ) -> Result<Vec<(String, f64)>> {
        let batch = self.prepare(rollouts, ends_in_cut, reducer)?;
        let n = batch.len();
        let learning_rate = self.current_learning_rate(n);
        self.policy.learning_rate = learning_rate;
        self.value.learning_rate = learning_rate;
        let split = self.policy.parameters().len();
        let mut rng: StdRng = rng_from_seed(derive_seed(self.seed, 3_000_000_000 + self.updates));
        let mut order: Vec<usize> = (0..n).collect();
        let (mut totals, mut steps, mut grad_norm) = (MinibatchStats::default(), 0usize, 0.0);
        let minibatches = self.config.minibatches;
        'epochs: for _ in 0..self.config.epochs {
            order.shuffle(&mut rng);
            for k in 0..minibatches {
                let rows = &order[k * n / minibatches..(k + 1) * n / minibatches];
                // An empty minibatch (a worker with fewer rows than
                // minibatches) still takes part in the reduction.
                let (mut message, stats) = if rows.is_empty() {
                    let size = split + self.value.parameters().len();
                    (vec![0.0; size], MinibatchStats::default())
                } else {
                    self.minibatch_gradients(&batch, rows)
                };
                message.push(stats.approx_kl as f32);
                reducer.mean(&mut message)?;
                let approx_kl = message.pop().expect("pushed above") as f64;
                if self.config.target_kl > 0.0 && approx_kl > 1.5 * self.config.target_kl {
                    break 'epochs;
                }
                let (policy_part, value_part) = message.split_at_mut(split);
                grad_norm = self.policy.step(policy_part)?;
                self.value.step(value_part)?;
                totals.policy_loss += stats.policy_loss;
                totals.value_loss += stats.value_loss;
                totals.entropy += stats.entropy;
                totals.clip_fraction += stats.clip_fraction;
                totals.approx_kl += approx_kl;
                steps += 1;
            }
        }

        // Observations join the statistics after the update that used them.
        if self.config.normalize_observations {
            for rollout in rollouts {
                self.observations.update(&rollout.obs)?;
            }
            self.observations.sync(reducer)?;
        }
        self.updates += 1;
        self.episodes_learned += rollouts.len() as u64;

        let mean = |total: f64| {
            if steps == 0 {
                0.0
            } else {
                total / steps as f64
            }
        };
        Ok(vec![
            ("losses/policy".into(), mean(totals.policy_loss)),
            ("losses/value".into(), mean(totals.value_loss)),
            ("losses/clip_fraction".into(), mean(totals.clip_fraction)),
            ("losses/approx_kl".into(), mean(totals.approx_kl)),
            (
                "losses/explained_variance".into(),
                explained_variance(&batch.values_old, &batch.targets),
            ),
            ("losses/policy_grad_norm".into(), grad_norm),
            ("charts/entropy".into(), mean(totals.entropy)),
            ("charts/learning_rate".into(), learning_rate),
            ("charts/minibatch_steps".into(), steps as f64),
        ])
    }

    fn learn_with(
        &mut self,
        episodes: usize,
        reducer: &mut dyn MeanReducer,
        stop: Option<&StopFlag>,
    ) -> Result<LearnReport> {
        if self.config.steps_per_rollout > 0 {
            let mut report = LearnReport::default();
            for _ in 0..episodes {
                if stop.is_some_and(StopFlag::is_requested) {
                    break;
                }
                report.extend(self.play_in_steps()?);
            }
            return Ok(report);
        }
        let batch = self.config.episodes_per_rollout;
        learn_in_batches(episodes, batch, stop, |n| {
            let (rollouts, mut report) = self.collect(n)?;
            report.extend(LearnReport {
                scalars: self.update(&rollouts, reducer)?,
                ..Default::default()
            });
            Ok(report)
        })
    }
}

/// `1 − Var(target − prediction) / Var(target)`: 1 is a perfect value
/// function, 0 no better than a constant (NaN-free: 0 when targets are constant).
fn explained_variance(predicted: &[f64], targets: &[f64]) -> f64 {
    if targets.len() < 2 {
        return 0.0;
    }
    let var_target = variance(targets);
    if var_target == 0.0 {
        return 0.0;
    }
    let residuals: Vec<f64> = targets.iter().zip(predicted).map(|(t, p)| t - p).collect();
    1.0 - variance(&residuals) / var_target
}

/// Population variance.
fn variance(values: &[f64]) -> f64 {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    values.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n
}

impl<E: Env> Learner for Ppo<E> {
    fn learn(&mut self, episodes: usize) -> Result<LearnReport> {
        self.learn_with(episodes, &mut Alone, None)
    }

    fn learn_until(&mut self, episodes: usize, stop: &StopFlag) -> Result<LearnReport> {
        self.learn_with(episodes, &mut Alone, Some(stop))
    }

    /// A rollout: `episodes_per_rollout` episodes (none with
    /// `steps_per_rollout`, whose updates fall within episodes).
    fn episodes_per_update(&self) -> Option<usize> {
        (self.config.steps_per_rollout == 0).then_some(self.config.episodes_per_rollout)
    }

    fn policy(&self) -> Option<Box<dyn Policy>> {
        Some(Box::new(self.frozen_policy()))
    }

    fn evaluate(&mut self, episodes: usize, seed: u64) -> Result<EvalReport> {
        let policy = self.frozen_policy();
        evaluate_policy(&mut self.eval_env, &policy, episodes, seed, None)
    }

    fn save_state(&self) -> Vec<u8> {
        let mut bytes = STATE_FORMAT.write(
            &self.state_dims(),
            &PpoState {
                policy: self.policy.save_state(),
                value: self.value.save_state(),
                observations: self.observations.clone(),
                returns: self.returns.clone(),
                episodes: self.episodes,
                env_steps: self.env_steps,
                updates: self.updates,
                episodes_learned: self.episodes_learned,
            },
        );
        bytes.extend(postcard::to_stdvec(&self.pending).expect("plain vectors serialise"));
        bytes.extend(postcard::to_stdvec(&self.cut_return).expect("a number serialises"));
        bytes
    }

    fn load_state(&mut self, bytes: &[u8]) -> Result<()> {
        let (version, state, rest): (_, PpoState, _) =
            STATE_FORMAT.read_since(1, bytes, &self.state_dims())?;
        let unreadable = |e: postcard::Error| STATE_FORMAT.unreadable(&e.to_string());
        let (pending, cut_return): (Vec<Rollout>, f64) = match version {
            1 => (Vec::new(), 0.0),
            2 => (postcard::from_bytes(rest).map_err(unreadable)?, 0.0),
            _ => {
                let (pending, rest) = postcard::take_from_bytes(rest).map_err(unreadable)?;
                (pending, postcard::from_bytes(rest).map_err(unreadable)?)
            }
        };
        if !cut_return.is_finite() {
            return Err(STATE_FORMAT.unreadable("its cut episode's return is not finite"));
        }
        if let Some(why) = misfit(&pending, self.obs_dim, self.act_dim) {
            return Err(STATE_FORMAT.unreadable(&format!("a waiting rollout {why}")));
        }
        if !pending.is_empty() && self.config.steps_per_rollout == 0 {
            return Err(Error::Shape(
                "PPO state holds steps waiting for a step-sized rollout, but this agent's \
                 steps_per_rollout is 0"
                    .into(),
            ));
        }
        let (mut policy, mut value) = (self.policy.clone(), self.value.clone());
        policy.load_state(&state.policy)?;
        value.load_state(&state.value)?;
        if state.observations.dim() != self.obs_dim || state.returns.dim() != 1 {
            return Err(STATE_FORMAT.unreadable("its normaliser sizes do not match"));
        }
        self.policy = policy;
        self.value = value;
        self.observations = state.observations;
        self.returns = state.returns;
        self.episodes = state.episodes;
        self.env_steps = state.env_steps;
        self.updates = state.updates;
        self.episodes_learned = state.episodes_learned;
        self.pending = pending;
        self.cut_return = cut_return;
        Ok(())
    }
}

impl<E: Env> GradientLearner for Ppo<E> {
    /// Policy, value network, then the observation statistics in use.
    fn parameters(&self) -> Vec<f32> {
        let mut flat = self.policy.parameters();
        flat.extend(self.value.parameters());
        flat.extend(self.observations.in_use());
        flat
    }

    fn set_parameters(&mut self, params: &[f32]) -> Result<()> {
        let sizes = [
            self.policy.module().num_params(),
            self.value.module().num_params(),
            2 * self.obs_dim,
        ];
        let parts = split_parameters(
            params,
            &sizes,
            "PPO's policy, value network and observation statistics",
        )?;
        let (mut policy, mut value, mut observations) = (
            self.policy.clone(),
            self.value.clone(),
            self.observations.clone(),
        );
        policy.set_parameters(parts[0])?;
        value.set_parameters(parts[1])?;
        observations.use_statistics(parts[2])?;
        self.policy = policy;
        self.value = value;
        self.observations = observations;
        Ok(())
    }

    fn learn_averaged(
        &mut self,
        episodes: usize,
        reducer: &mut dyn MeanReducer,
    ) -> Result<LearnReport> {
        self.check_whole_episodes("gradient averaging")?;
        self.learn_with(episodes, reducer, None)
    }
}

crate::rollout::impl_rollout_learner!(Ppo);

#[cfg(test)]
mod tests;
