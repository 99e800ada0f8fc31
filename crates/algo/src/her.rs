//! Hindsight experience replay (Andrychowicz et al., 2017): sampling transition batches with substituted goals.
//!
//! A sampled transition `(o_t, a_t, o_{t+1})` of an episode that asked for
//! goal `g` is, with probability `k / (1 + k)`, replayed as if the goal had
//! been something the agent actually achieved — by default an achieved goal
//! from later in the same episode (`future`). Its reward is recomputed with
//! the environment's pure reward function, so a failed episode still teaches
//! how to reach the places it did reach.
//!
//! # Two weak spots of `future`, and the options that address them
//!
//! * If the object never moved, every substituted goal is where it already
//!   is, so every relabelled transition is a trivial success whatever the
//!   action. [`HerConfig::skip_static`] leaves such episodes with their
//!   original goal.
//! * After the last contact the object rests, so every goal drawn from the
//!   rest of the episode is again a trivial success. [`HerConfig::cap_at_settle`]
//!   draws future goals only up to the step at which the achieved goal
//!   reached its final resting place, and does not relabel transitions after
//!   it.
//!
//! Both default to off, which is plain `future` as in the paper and in
//! OpenAI baselines.

use rand::{Rng, RngExt};
use serde::{Deserialize, Serialize};
use shoal_core::{Error, GoalEnv, Result};

use crate::replay::{Episode, ReplayBuffer};

/// Where substituted goals come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HerStrategy {
    /// No relabelling: plain experience replay.
    None,
    /// An achieved goal from a later step of the same episode (`t' ∈ t+1..=T`).
    #[default]
    Future,
    /// The episode's final achieved goal (`t' = T`).
    Final,
    /// An achieved goal from any step of the same episode (`t' ∈ 1..=T`).
    Episode,
}

/// How transitions are relabelled.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HerConfig {
    /// Source of substituted goals. Default `future`.
    pub strategy: HerStrategy,
    /// Substituted goals per original goal: a transition is relabelled with
    /// probability `k / (1 + k)`. Default 4 (80 %).
    pub k: usize,
    /// Do not relabel episodes whose achieved goal never moved farther than
    /// `static_epsilon` from where it started. Default false.
    pub skip_static: bool,
    /// Draw substituted goals only up to the step at which the achieved goal
    /// settled (came within `static_epsilon` of its final value for good),
    /// and keep the original goal for transitions after it. Default false.
    pub cap_at_settle: bool,
    /// Distance (goal units, e.g. metres) below which the achieved goal counts
    /// as not moving. Default 1e-3.
    pub static_epsilon: f32,
    /// A transition is terminal exactly when its achieved goal is a success
    /// for the goal it is replayed with — the semantics of an environment
    /// that ends the episode on success (shoal's default). When false, only
    /// the stored episode's real termination counts, and relabelled
    /// transitions never terminate (OpenAI baselines, whose Fetch tasks never
    /// terminate). Default true.
    pub success_is_terminal: bool,
}

impl Default for HerConfig {
    fn default() -> Self {
        HerConfig {
            strategy: HerStrategy::Future,
            k: 4,
            skip_static: false,
            cap_at_settle: false,
            static_epsilon: 1e-3,
            success_is_terminal: true,
        }
    }
}

impl HerConfig {
    /// Probability that a sampled transition gets a substituted goal.
    pub fn relabel_probability(&self) -> f64 {
        match self.strategy {
            HerStrategy::None => 0.0,
            _ => self.k as f64 / (1.0 + self.k as f64),
        }
    }

    /// Checks the values.
    pub fn validate(&self) -> Result<()> {
        if !(self.static_epsilon.is_finite() && self.static_epsilon >= 0.0) {
            return Err(Error::Config(format!(
                "her static_epsilon must be finite and non-negative, got {}",
                self.static_epsilon
            )));
        }
        Ok(())
    }
}

/// The pure goal functions relabelling needs: every [`GoalEnv`] provides them.
pub trait GoalReward {
    /// Reward for having achieved `achieved` when `desired` was asked for.
    fn reward(&self, achieved: &[f32], desired: &[f32]) -> f32;
    /// Whether `achieved` counts as reaching `desired`.
    fn success(&self, achieved: &[f32], desired: &[f32]) -> bool;
}

impl<G: GoalEnv + ?Sized> GoalReward for G {
    fn reward(&self, achieved: &[f32], desired: &[f32]) -> f32 {
        self.compute_reward(achieved, desired)
    }
    fn success(&self, achieved: &[f32], desired: &[f32]) -> bool {
        self.is_success(achieved, desired)
    }
}

/// A batch of transitions ready for an update, row-major.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TransitionBatch {
    /// Observation parts `o_t`, `[n, obs]`.
    pub obs: Vec<f32>,
    /// Observation parts `o_{t+1}`, `[n, obs]`.
    pub next_obs: Vec<f32>,
    /// Goals the transitions are replayed with, `[n, goal]`.
    pub goals: Vec<f32>,
    /// Achieved goals after the step, `ag_{t+1}`, `[n, goal]`.
    pub next_achieved: Vec<f32>,
    /// Actions `a_t` in `[-1, 1]`, `[n, act]`.
    pub actions: Vec<f32>,
    /// Rewards recomputed for the replayed goal, `[n]`.
    pub rewards: Vec<f32>,
    /// Whether the transition ends the episode under its replayed goal, `[n]`.
    pub terminals: Vec<bool>,
    /// Step `t` of each transition within its episode, `[n]`.
    pub steps: Vec<usize>,
    /// Index `t'` of the achieved goal substituted for the original one, or
    /// `None` where the original goal was kept, `[n]`.
    pub goal_steps: Vec<Option<usize>>,
}

impl TransitionBatch {
    /// Number of transitions.
    pub fn len(&self) -> usize {
        self.rewards.len()
    }

    /// Whether the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.rewards.is_empty()
    }

    /// Fraction of transitions with a substituted goal.
    pub fn relabelled_fraction(&self) -> f64 {
        let relabelled = self.goal_steps.iter().filter(|g| g.is_some()).count();
        relabelled as f64 / self.len().max(1) as f64
    }

    /// Empties the batch, keeping its allocations.
    pub fn clear(&mut self) {
        self.obs.clear();
        self.next_obs.clear();
        self.goals.clear();
        self.next_achieved.clear();
        self.actions.clear();
        self.rewards.clear();
        self.terminals.clear();
        self.steps.clear();
        self.goal_steps.clear();
    }
}

/// Largest distance between two goals, per component pair (Euclidean).
fn distance(a: &[f32], b: &[f32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y) * (x - y))
        .sum::<f32>()
        .sqrt()
}

/// Whether the achieved goal stayed within `eps` of its start all episode.
fn is_static(episode: &Episode, eps: f32) -> bool {
    let start = episode.achieved(0);
    (1..=episode.len()).all(|t| distance(episode.achieved(t), start) <= eps)
}

/// The first step from which the achieved goal stays within `eps` of its
/// final value: later goals add nothing the settle step does not.
fn settle_step(episode: &Episode, eps: f32) -> usize {
    let last = episode.len();
    let end = episode.achieved(last);
    (0..=last)
        .rev()
        .take_while(|&t| distance(episode.achieved(t), end) <= eps)
        .last()
        .unwrap_or(last)
}

/// Picks the achieved-goal index to substitute for step `t`, or `None` to
/// keep the original goal. Draws from `rng` in a fixed order.
fn pick_goal_step<R: Rng + ?Sized>(
    episode: &Episode,
    t: usize,
    config: &HerConfig,
    rng: &mut R,
) -> Option<usize> {
    let relabel = rng.random::<f64>() < config.relabel_probability();
    if !relabel || (config.skip_static && is_static(episode, config.static_epsilon)) {
        return None;
    }
    let last = if config.cap_at_settle {
        settle_step(episode, config.static_epsilon).max(1)
    } else {
        episode.len()
    };
    match config.strategy {
        HerStrategy::None => None,
        HerStrategy::Future if t < last => Some(rng.random_range(t + 1..=last)),
        HerStrategy::Future => None,
        HerStrategy::Final => Some(last),
        HerStrategy::Episode => Some(rng.random_range(1..=last)),
    }
}

/// Appends transition `t` of `episode` to `batch`, relabelled per `config`.
fn push_transition<R: Rng + ?Sized, G: GoalReward + ?Sized>(
    batch: &mut TransitionBatch,
    episode: &Episode,
    t: usize,
    config: &HerConfig,
    goals: &G,
    rng: &mut R,
) {
    let goal_step = pick_goal_step(episode, t, config, rng);
    let goal = match goal_step {
        Some(t_goal) => episode.achieved(t_goal),
        None => episode.desired(t),
    };
    let next_achieved = episode.achieved(t + 1);
    let terminal = if config.success_is_terminal {
        goals.success(next_achieved, goal)
    } else {
        goal_step.is_none() && episode.terminated() && t + 1 == episode.len()
    };
    batch.obs.extend_from_slice(episode.obs(t));
    batch.next_obs.extend_from_slice(episode.obs(t + 1));
    batch.goals.extend_from_slice(goal);
    batch.next_achieved.extend_from_slice(next_achieved);
    batch.actions.extend_from_slice(episode.action(t));
    batch.rewards.push(goals.reward(next_achieved, goal));
    batch.terminals.push(terminal);
    batch.steps.push(t);
    batch.goal_steps.push(goal_step);
}

/// Appends `n` transitions drawn uniformly from `buffer`, relabelled per
/// `config`, with rewards from `goals`. Appends nothing if the buffer is empty.
///
/// ```
/// use shoal_algo::{Episode, EpisodeDims, GoalReward, HerConfig, ReplayBuffer, TransitionBatch, sample_batch};
/// struct Reach;
/// impl GoalReward for Reach {
///     fn reward(&self, a: &[f32], d: &[f32]) -> f32 { if (a[0] - d[0]).abs() < 0.05 { 0.0 } else { -1.0 } }
///     fn success(&self, a: &[f32], d: &[f32]) -> bool { self.reward(a, d) == 0.0 }
/// }
/// let dims = EpisodeDims { obs: 1, goal: 1, act: 1 };
/// let mut episode = Episode::start(dims, &[0.0], &[0.0]);
/// episode.push(&[1.0], &[0.3], &[0.3], &[0.3]);
/// episode.push(&[1.0], &[0.3], &[0.6], &[0.6]);
/// let mut buffer = ReplayBuffer::new(dims, 100).unwrap();
/// buffer.push(episode).unwrap();
/// let mut batch = TransitionBatch::default();
/// let mut rng = shoal_core::rng_from_seed(0);
/// sample_batch(&buffer, &HerConfig::default(), 64, &Reach, &mut rng, &mut batch);
/// assert_eq!(batch.len(), 64);
/// assert!(batch.rewards.iter().any(|r| *r == 0.0)); // hindsight successes
/// ```
pub fn sample_batch<R: Rng + ?Sized, G: GoalReward + ?Sized>(
    buffer: &ReplayBuffer,
    config: &HerConfig,
    n: usize,
    goals: &G,
    rng: &mut R,
    batch: &mut TransitionBatch,
) {
    for _ in 0..n {
        let Some((index, t)) = buffer.sample_transition(rng) else {
            return;
        };
        push_transition(batch, buffer.episode(index), t, config, goals, rng);
    }
}

/// Appends `n` transitions drawn uniformly from one `episode`, relabelled per
/// `config` (what normaliser statistics are updated with).
pub fn sample_episode<R: Rng + ?Sized, G: GoalReward + ?Sized>(
    episode: &Episode,
    config: &HerConfig,
    n: usize,
    goals: &G,
    rng: &mut R,
    batch: &mut TransitionBatch,
) {
    if episode.is_empty() {
        return;
    }
    for _ in 0..n {
        let t = rng.random_range(0..episode.len());
        push_transition(batch, episode, t, config, goals, rng);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::EpisodeDims;
    use shoal_core::rng_from_seed;

    const DIMS: EpisodeDims = EpisodeDims {
        obs: 1,
        goal: 1,
        act: 1,
    };

    /// Sparse −1/0 reward on a line, threshold 0.05.
    struct Line;
    impl GoalReward for Line {
        fn reward(&self, a: &[f32], d: &[f32]) -> f32 {
            if self.success(a, d) { 0.0 } else { -1.0 }
        }
        fn success(&self, a: &[f32], d: &[f32]) -> bool {
            (a[0] - d[0]).abs() < 0.05
        }
    }

    /// An episode whose achieved goal is `positions[t]` and whose desired goal
    /// (10.0) is never reached.
    fn episode_through(positions: &[f32]) -> Episode {
        let mut e = Episode::start(DIMS, &[positions[0]], &[positions[0]]);
        for (t, p) in positions.iter().enumerate().skip(1) {
            e.push(&[10.0], &[t as f32], &[*p], &[*p]);
        }
        e
    }

    fn moving(len: usize) -> Episode {
        episode_through(&(0..=len).map(|t| t as f32).collect::<Vec<_>>())
    }

    fn buffer_of(episodes: Vec<Episode>) -> ReplayBuffer {
        let mut buffer = ReplayBuffer::new(DIMS, 10_000).unwrap();
        episodes.into_iter().for_each(|e| buffer.push(e).unwrap());
        buffer
    }

    fn sample(buffer: &ReplayBuffer, config: &HerConfig, n: usize, seed: u64) -> TransitionBatch {
        let mut batch = TransitionBatch::default();
        sample_batch(
            buffer,
            config,
            n,
            &Line,
            &mut rng_from_seed(seed),
            &mut batch,
        );
        batch
    }

    #[test]
    fn future_with_k4_relabels_four_of_five_transitions() {
        let buffer = buffer_of(vec![moving(50), moving(20)]);
        let batch = sample(&buffer, &HerConfig::default(), 20_000, 1);
        // Binomial(20 000, 0.8): std 0.0028; allow 5 std.
        let fraction = batch.relabelled_fraction();
        assert!((fraction - 0.8).abs() < 0.015, "{fraction}");
        let none = HerConfig {
            strategy: HerStrategy::None,
            ..HerConfig::default()
        };
        assert_eq!(sample(&buffer, &none, 1_000, 1).relabelled_fraction(), 0.0);
    }

    #[test]
    fn future_goals_come_from_later_steps_of_the_real_episode() {
        // Episodes of different lengths, one terminated early.
        let mut short = moving(3);
        short.set_terminated(true);
        let buffer = buffer_of(vec![moving(10), short, moving(7)]);
        let batch = sample(&buffer, &HerConfig::default(), 5_000, 2);
        let mut later_than_next = false;
        for i in 0..batch.len() {
            let t = batch.steps[i];
            if let Some(t_goal) = batch.goal_steps[i] {
                assert!(t_goal > t, "goal from the past: t' = {t_goal}, t = {t}");
                // The achieved goal at t' equals t' in these episodes, which
                // also proves t' lies within the episode's real length.
                assert_eq!(batch.goals[i], t_goal as f32);
                later_than_next |= t_goal > t + 1;
            }
        }
        assert!(
            later_than_next,
            "future goals must not all be the next step"
        );
    }

    #[test]
    fn rewards_and_terminals_are_recomputed_for_the_replayed_goal() {
        let buffer = buffer_of(vec![episode_through(&[0.0, 0.5, 0.5, 1.0, 1.0])]);
        let batch = sample(&buffer, &HerConfig::default(), 2_000, 3);
        let mut successes = 0;
        for i in 0..batch.len() {
            let (achieved, goal) = (&batch.next_achieved[i..i + 1], &batch.goals[i..i + 1]);
            assert_eq!(
                batch.next_achieved[i],
                buffer.episode(0).achieved(batch.steps[i] + 1)[0]
            );
            assert_eq!(batch.rewards[i], Line.reward(achieved, goal));
            assert_eq!(batch.terminals[i], Line.success(achieved, goal));
            successes += usize::from(batch.rewards[i] == 0.0);
        }
        assert!(successes > 0);
    }

    #[test]
    fn without_success_terminal_only_the_real_end_terminates() {
        let mut e = moving(4);
        e.set_terminated(true);
        let config = HerConfig {
            success_is_terminal: false,
            ..HerConfig::default()
        };
        let batch = sample(&buffer_of(vec![e]), &config, 2_000, 4);
        for i in 0..batch.len() {
            let real_end = batch.steps[i] == 3 && batch.goal_steps[i].is_none();
            assert_eq!(batch.terminals[i], real_end);
        }
    }

    #[test]
    fn final_always_uses_the_last_achieved_goal() {
        let config = HerConfig {
            strategy: HerStrategy::Final,
            ..HerConfig::default()
        };
        let buffer = buffer_of(vec![moving(6), moving(9)]);
        let batch = sample(&buffer, &config, 2_000, 5);
        let mut relabelled = 0;
        for i in 0..batch.len() {
            if let Some(t_goal) = batch.goal_steps[i] {
                assert!(t_goal == 6 || t_goal == 9);
                assert_eq!(batch.goals[i], t_goal as f32);
                relabelled += 1;
            }
        }
        assert!(relabelled > 1_000);
    }

    #[test]
    fn episode_strategy_draws_from_the_whole_episode() {
        let config = HerConfig {
            strategy: HerStrategy::Episode,
            ..HerConfig::default()
        };
        let batch = sample(&buffer_of(vec![moving(8)]), &config, 4_000, 6);
        let past = (0..batch.len())
            .filter(|&i| matches!(batch.goal_steps[i], Some(g) if g <= batch.steps[i]))
            .count();
        assert!(
            past > 0,
            "episode strategy should also replay earlier goals"
        );
        assert!(
            batch
                .goal_steps
                .iter()
                .flatten()
                .all(|g| (1..=8).contains(g))
        );
    }

    #[test]
    fn skip_static_relabels_nothing_in_a_static_episode() {
        let still = episode_through(&[0.3, 0.3, 0.3005, 0.3, 0.3]);
        let config = HerConfig {
            skip_static: true,
            ..HerConfig::default()
        };
        let batch = sample(&buffer_of(vec![still.clone()]), &config, 1_000, 7);
        assert_eq!(batch.relabelled_fraction(), 0.0);
        assert!(batch.rewards.iter().all(|r| *r == -1.0));
        // Plain future relabels the same episode into trivial successes.
        let plain = sample(&buffer_of(vec![still]), &HerConfig::default(), 1_000, 7);
        assert!(plain.relabelled_fraction() > 0.7);
        // A moving episode is still relabelled with the option on.
        let moved = sample(&buffer_of(vec![moving(5)]), &config, 1_000, 7);
        assert!(moved.relabelled_fraction() > 0.5);
    }

    #[test]
    fn cap_at_settle_draws_no_goal_after_the_object_came_to_rest() {
        // The object moves during steps 1..=3, then rests at 3.0.
        let settled = episode_through(&[0.0, 1.0, 2.0, 3.0, 3.0, 3.0, 3.0]);
        let config = HerConfig {
            cap_at_settle: true,
            ..HerConfig::default()
        };
        let batch = sample(&buffer_of(vec![settled]), &config, 4_000, 8);
        for i in 0..batch.len() {
            if let Some(t_goal) = batch.goal_steps[i] {
                assert!(t_goal <= 3 && t_goal > batch.steps[i]);
            }
            if batch.steps[i] >= 3 {
                assert_eq!(
                    batch.goal_steps[i], None,
                    "no relabel after the object settled"
                );
            }
        }
    }
}
