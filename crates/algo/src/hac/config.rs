//! [`HacConfig`]: the hierarchy's settings, with the paper's values.

use serde::{Deserialize, Serialize};
use shoal_rl_core::{Error, Result};
use shoal_rl_policy::NoiseKind;

use crate::actor_critic::{BoundGradient, CriticLoss, UpdateSettings};
use crate::check;

/// Hyperparameters of [`Hac`](crate::Hac). Defaults are the paper's (2 levels, H = 25,
/// λ = 0.3, penalty −H, targets in `[−H, 0]`) with the machinery of the
/// authors' first code release: a linear critic, target networks, HER
/// `future` and a penalty for every missed test. [`HacConfig::levy`] is the
/// authors' current code (a bounded critic, no target networks, γ = 0.98,
/// the maxed-out penalty rule, their hindsight goals, buffers sized per
/// level, no update before a batch exists), whose results the paper's
/// README reports; the paper-task presets use it.
///
/// One level is flat DDPG + HER with HAC's critic and noise; it
/// needs `top_level_unlimited`, or it acts only H times per episode.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HacConfig {
    /// Levels of the hierarchy, 1 to 3. Default 2.
    pub levels: usize,
    /// The top level acts until its goal is reached or the env ends the
    /// episode, as in the paper's code; false: it too stops after H actions
    /// (H^levels must then cover the episode; the arm presets were tuned so).
    /// Default false.
    pub top_level_unlimited: bool,
    /// Actions per attempt of each level, H (the paper: 25 for 2 levels,
    /// 10 for 3). Also the missed-subgoal penalty `−H` and the critic target
    /// range `[−H, 0]`. Default 25.
    pub horizon: usize,
    /// Probability λ that a proposed subgoal is tested. Default 0.3.
    pub subgoal_test_rate: f64,
    /// Discount factor γ (absent: `1 − 1/H`). Default absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gamma: Option<f64>,
    /// Hidden layer widths of every actor and critic. Default [64, 64, 64].
    pub hidden: Vec<usize>,
    /// Adam step size of the actors. Default 1e-3.
    pub actor_lr: f64,
    /// Adam step size of the critics. Default 1e-3.
    pub critic_lr: f64,
    /// Global gradient-norm clip of each network (absent: none). Default none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_grad_norm: Option<f64>,
    /// Replay capacity of each level, in transitions. Default 1 000 000.
    pub buffer_size: usize,
    /// Transitions per gradient step. Default 1024.
    pub batch_size: usize,
    /// Gradient steps per level after every episode. Default 40.
    pub n_batches: usize,
    /// Target networks keep this fraction of themselves per round (with
    /// `target_networks`). Default 0.95.
    pub polyak: f64,
    /// Bootstrap the critic targets from target networks moved by `polyak`
    /// once per episode (the authors' first release); false: from the
    /// networks being trained, as their current code does. Default true.
    pub target_networks: bool,
    /// Bound each critic to `[−H, 0]` by `−H·sigmoid(z + b₀)`, starting near
    /// −0.067 (the authors' current code); false: a linear head whose
    /// targets alone are clipped. Default false.
    pub bounded_critic: bool,
    /// When a tested subgoal that the level below missed is penalised.
    /// Default `any-miss`.
    pub penalty_rule: PenaltyRule,
    /// How hindsight goals are chosen (`her_k` of them). Default `future`.
    pub hindsight_goals: HindsightGoals,
    /// Size each level's buffer as the authors do, to hold this many
    /// episodes: `(1 + her_k)·H (+ H/3 above level 0)` transitions per
    /// attempt, `H^(levels − 1 − level)` attempts per episode, at most 10⁷
    /// (absent: `buffer_size` at every level). Default absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffer_episodes: Option<usize>,
    /// Skip a level's updates until its buffer holds `batch_size`
    /// transitions (on every worker), as the authors' code does; false:
    /// update from the first episode, sampling with repetition. Default false.
    pub wait_for_batch: bool,
    /// Take each level's actor gradient on its critic after the critic's
    /// step in the same update, as the authors' `layer.py` does (`critic.update`,
    /// then `get_gradients`, then `actor.update`); false: on the critic
    /// before it, as OpenAI baselines' DDPG does. Default false.
    pub actor_after_critic: bool,
    /// How each level's actor's gradient passes its `tanh` bound: `tanh`, its own
    /// derivative, which vanishes at the bound, so an actor driven there
    /// stays; `inverting`, Hausknecht & Stone's inverting gradients, which
    /// let a push back inside through at full strength. Default `tanh`.
    pub bound_gradient: BoundGradient,
    /// Weight of the mean squared pre-activation `u` of each level's actor's
    /// `tanh(u)` in its loss, a pull away from saturation that does not
    /// vanish there (the action penalty's does). Default 0.
    pub preactivation_l2: f64,
    /// What each level's critic minimises: `squared` error, as the authors'
    /// code; `cross_entropy` between its bounded head's probability `Q/−H`
    /// and the target's, whose gradient does not vanish where the head
    /// saturates at `−H` (needs `bounded_critic`). Default `squared`.
    pub critic_loss: CriticLoss,
    /// Weight of the mean squared action in the actor loss; zero, because a
    /// penalty would pull subgoals toward the centre of their range. Default 0.
    pub action_l2: f64,
    /// Probability of a uniformly random action (or subgoal) when exploring. Default 0.2.
    pub random_eps: f64,
    /// Scale of the exploration noise of level 0 (the paper's atomic noise),
    /// in `[-1, 1]` action units: a fraction of half the action range. Default 0.1.
    pub noise_eps: f64,
    /// Scale of the subgoal levels' exploration noise, as a fraction of half
    /// the subgoal range (the paper's subgoal noise; absent: `noise_eps`).
    /// Default absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subgoal_noise_eps: Option<f64>,
    /// Kind of exploration noise. Default `gaussian`.
    pub noise: NoiseKind,
    /// Hindsight goals: per transition with `future`, per attempt with
    /// `attempt`. Default 4.
    pub her_k: usize,
    /// Lower corner of the subgoal box in achieved-goal units (absent: the
    /// achieved goal's bounds in the observation space). Default absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subgoal_low: Option<Vec<f32>>,
    /// Upper corner of the subgoal box (absent: as `subgoal_low`). Default absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subgoal_high: Option<Vec<f32>>,
    /// The components of the env's `observation` part a subgoal names
    /// (absent: subgoals are achieved goals). The levels below the top then
    /// pursue those components — on the arm tasks `[0, 1, 2]`, where the
    /// gripper should be, rather than where the object should be — and
    /// reach a subgoal within `subgoal_threshold`; `subgoal_low` /
    /// `subgoal_high` (absent: the observation's bounds) give one bound per
    /// index. Default absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subgoal_indices: Option<Vec<usize>>,
    /// Euclidean distance within which the levels below the top reach their
    /// subgoals. Absent (the default): subgoals of `subgoal_indices` within
    /// 0.05 (the arm tasks' goal threshold), achieved-goal subgoals as the env
    /// scores its goals. Set, it scores both kinds, so achieved-goal subgoals
    /// may be looser (or tighter) than the task's goal; the top level always
    /// pursues the task's goal as the env scores it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subgoal_threshold: Option<f64>,
    /// One threshold per subgoal component, in its own units: a subgoal is
    /// reached when every component is within its threshold (the paper's
    /// test, for subgoals that mix angles and velocities). Excludes
    /// `subgoal_threshold`. Default absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subgoal_thresholds: Option<Vec<f64>>,
    /// Observations and goals are clamped to ±this before normalising. Default 200.
    pub clip_obs: f64,
    /// Normalised inputs are clipped to ±this. Default 5.
    pub norm_clip: f64,
    /// Lower bound of the normalisers' standard deviation. Default 0.01.
    pub norm_eps: f64,
}

impl Default for HacConfig {
    fn default() -> Self {
        HacConfig {
            levels: 2,
            top_level_unlimited: false,
            horizon: 25,
            subgoal_test_rate: 0.3,
            gamma: None,
            hidden: vec![64, 64, 64],
            actor_lr: 1e-3,
            critic_lr: 1e-3,
            max_grad_norm: None,
            buffer_size: 1_000_000,
            batch_size: 1024,
            n_batches: 40,
            polyak: 0.95,
            target_networks: true,
            bounded_critic: false,
            penalty_rule: PenaltyRule::AnyMiss,
            hindsight_goals: HindsightGoals::Future,
            buffer_episodes: None,
            wait_for_batch: false,
            actor_after_critic: false,
            bound_gradient: BoundGradient::Tanh,
            preactivation_l2: 0.0,
            critic_loss: CriticLoss::Squared,
            action_l2: 0.0,
            random_eps: 0.2,
            noise_eps: 0.1,
            subgoal_noise_eps: None,
            noise: NoiseKind::Gaussian,
            her_k: 4,
            subgoal_low: None,
            subgoal_high: None,
            subgoal_indices: None,
            subgoal_threshold: None,
            subgoal_thresholds: None,
            clip_obs: 200.0,
            norm_clip: 5.0,
            norm_eps: 0.01,
        }
    }
}

/// When a tested subgoal is penalised (reward −H, no bootstrap).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PenaltyRule {
    /// Whenever the level below missed it, also when its attempt ended
    /// early because a higher level's goal was reached or the episode ended.
    AnyMiss,
    /// Only when the level below used all `H` of its actions without
    /// reaching it (the authors' `maxed_out`).
    MaxedOut,
}

/// Which achieved goals relabel a level's transitions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HindsightGoals {
    /// HER's `future`: per transition, `her_k` goals drawn from the states
    /// after it in the attempt.
    Future,
    /// The authors' scheme: per attempt, `her_k` goals (`her_k − 1` drawn
    /// uniformly from the attempt's states, plus its last), each relabelling
    /// every transition of the attempt.
    Attempt,
}

/// Most transitions a level's buffer holds under [`HacConfig::buffer_episodes`]
/// (the authors' ceiling).
pub const MAX_LEVEL_BUFFER: usize = 10_000_000;

impl HacConfig {
    /// The HAC authors' current code for `levels` levels of `horizon`
    /// actions (andrew-j-levy/Hierarchical-Actor-Critc-HAC-, whose README's
    /// results it produced): a bounded critic, no target networks,
    /// γ = 0.98, a penalty only when the level below maxed out, 3 hindsight
    /// goals per attempt, buffers for `episodes_to_store` episodes per
    /// level, no update before a batch exists, 20 % random actions,
    /// subgoal testing 0.3, batch 1 024 × 40, 3 × 64 ReLU, the top level
    /// acting until the episode ends.
    pub fn levy(levels: usize, horizon: usize, episodes_to_store: usize) -> Self {
        HacConfig {
            levels,
            horizon,
            top_level_unlimited: true,
            gamma: Some(0.98),
            target_networks: false,
            bounded_critic: true,
            penalty_rule: PenaltyRule::MaxedOut,
            hindsight_goals: HindsightGoals::Attempt,
            her_k: 3,
            buffer_episodes: Some(episodes_to_store),
            wait_for_batch: true,
            ..HacConfig::default()
        }
    }

    /// Capacity of `level`'s buffer: `buffer_size`, or the authors' size
    /// for [`HacConfig::buffer_episodes`] episodes.
    pub fn buffer_capacity(&self, level: usize) -> usize {
        let Some(episodes) = self.buffer_episodes else {
            return self.buffer_size;
        };
        let h = self.horizon;
        let tests = if level > 0 { h / 3 } else { 0 };
        let per_attempt = (1 + self.her_k).saturating_mul(h).saturating_add(tests);
        let attempts = h.saturating_pow((self.levels - 1 - level) as u32);
        per_attempt
            .saturating_mul(attempts)
            .saturating_mul(episodes)
            .min(MAX_LEVEL_BUFFER)
    }

    /// Checks every value; the error names the offending key.
    pub fn validate(&self) -> Result<()> {
        let bad = |key: &str, why: &str| Err(Error::Config(format!("hac {key} {why}")));
        if !(1..=3).contains(&self.levels) {
            return bad("levels", "must be 1, 2 or 3");
        }
        if !(2..=check::MAX_HORIZON).contains(&self.horizon) {
            return bad("horizon", "must be between 2 and 1000");
        }
        if !(0.0..=1.0).contains(&self.subgoal_test_rate) {
            return bad("subgoal_test_rate", "must be a probability");
        }
        if self.gamma.is_some_and(|g| !(0.0..1.0).contains(&g)) {
            return bad("gamma", "must be in [0, 1)");
        }
        if !(0.0..=1.0).contains(&self.polyak) {
            return bad("polyak", "must be in [0, 1]");
        }
        check::positive("hac", "actor_lr", self.actor_lr)?;
        check::positive("hac", "critic_lr", self.critic_lr)?;
        check::grad_norm("hac", self.max_grad_norm)?;
        check::hidden("hac", &self.hidden)?;
        check::count("hac", "batch_size", self.batch_size, check::MAX_BATCH)?;
        check::count("hac", "n_batches", self.n_batches, check::MAX_BATCH)?;
        if self.her_k > check::MAX_HER_K {
            return bad("her_k", "must be at most 64");
        }
        if self.buffer_size == 0 {
            return bad("buffer_size", "must be at least 1");
        }
        if self.buffer_episodes == Some(0) {
            return bad("buffer_episodes", "must be at least 1");
        }
        if self.hindsight_goals == HindsightGoals::Attempt && self.her_k == 0 {
            return bad("her_k", "must be at least 1 with hindsight_goals = attempt");
        }
        if !(0.0..=1.0).contains(&self.random_eps) {
            return bad("random_eps", "must be a probability");
        }
        let scale_ok = |eps: f64| eps.is_finite() && eps >= 0.0;
        if !scale_ok(self.noise_eps) {
            return bad("noise_eps", "must be finite and non-negative");
        }
        if self.subgoal_noise_eps.is_some_and(|eps| !scale_ok(eps)) {
            return bad("subgoal_noise_eps", "must be finite and non-negative");
        }
        if !(self.action_l2.is_finite() && self.action_l2 >= 0.0) {
            return bad("action_l2", "must be finite and non-negative");
        }
        if !(self.preactivation_l2.is_finite() && self.preactivation_l2 >= 0.0) {
            return bad("preactivation_l2", "must be finite and non-negative");
        }
        if self.critic_loss == CriticLoss::CrossEntropy && !self.bounded_critic {
            return bad(
                "critic_loss",
                "`cross_entropy` needs the bounded critic (`bounded_critic = true`)",
            );
        }
        if !(self.clip_obs > 0.0 && self.norm_clip > 0.0 && self.norm_eps > 0.0) {
            return bad("clip_obs / norm_clip / norm_eps", "must be positive");
        }
        match (&self.subgoal_low, &self.subgoal_high) {
            (None, None) => {}
            (Some(low), Some(high)) => {
                let ok = low.len() == high.len()
                    && low
                        .iter()
                        .zip(high)
                        .all(|(l, h)| l.is_finite() && h.is_finite() && l < h);
                if !ok {
                    return bad(
                        "subgoal_low / subgoal_high",
                        "must be finite, equally long, with low < high",
                    );
                }
            }
            _ => return bad("subgoal_low / subgoal_high", "must be given together"),
        }
        if let Some(indices) = &self.subgoal_indices
            && !(1..=check::MAX_SUBGOAL_DIM).contains(&indices.len())
        {
            return bad("subgoal_indices", "must name between 1 and 64 components");
        }
        if let Some(threshold) = self.subgoal_threshold
            && !(threshold.is_finite() && threshold > 0.0)
        {
            return bad("subgoal_threshold", "must be finite and positive");
        }
        if let Some(thresholds) = &self.subgoal_thresholds {
            if self.subgoal_threshold.is_some() {
                return bad(
                    "subgoal_thresholds",
                    "excludes subgoal_threshold: give one of the two",
                );
            }
            if !(1..=check::MAX_SUBGOAL_DIM).contains(&thresholds.len())
                || !thresholds.iter().all(|t| t.is_finite() && *t > 0.0)
            {
                return bad(
                    "subgoal_thresholds",
                    "must be between 1 and 64 finite, positive values",
                );
            }
        }
        Ok(())
    }

    /// The noise scale of `level`: atomic at level 0, subgoal above.
    pub(super) fn noise_scale(&self, level: usize) -> f64 {
        match level {
            0 => self.noise_eps,
            _ => self.subgoal_noise_eps.unwrap_or(self.noise_eps),
        }
    }

    /// Actions `level`'s attempt may take: H, or no limit for an unlimited top level.
    pub(super) fn attempt_limit(&self, level: usize) -> usize {
        if self.top_level_unlimited && level + 1 == self.levels {
            usize::MAX
        } else {
            self.horizon
        }
    }

    /// The length of a subgoal on an env with goals of `goal_dim`.
    pub(super) fn subgoal_dim(&self, goal_dim: usize) -> usize {
        self.subgoal_indices.as_ref().map_or(goal_dim, Vec::len)
    }

    /// The discount factor: `gamma`, or `1 − 1/H`.
    pub fn discount(&self) -> f64 {
        self.gamma.unwrap_or(1.0 - 1.0 / self.horizon as f64)
    }

    /// The reward of a missed tested subgoal, `−H`.
    pub fn penalty(&self) -> f32 {
        -(self.horizon as f32)
    }

    pub(super) fn settings(&self) -> UpdateSettings {
        UpdateSettings {
            target_networks: self.target_networks,
            actor_after_critic: self.actor_after_critic,
            bound_gradient: self.bound_gradient,
            preactivation_l2: self.preactivation_l2 as f32,
            critic_loss: self.critic_loss,
            ..UpdateSettings::ddpg(
                self.discount() as f32,
                self.action_l2 as f32,
                Some((self.penalty(), 0.0)),
            )
        }
    }

    /// `H` of the bounded critic head, when it is bounded.
    pub(super) fn value_bound(&self) -> Option<f32> {
        self.bounded_critic.then_some(self.horizon as f32)
    }
}
