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
//!
//! # Relabel accounting
//!
//! Every sampled transition is tagged with a [`GoalOrigin`], and
//! [`RelabelCounts`] tallies them per batch (DDPG reports the shares as the
//! `her/…` metrics). Whether the object moved and when it settled come from
//! the achieved goals `ag_0 … ag_T` alone, with the same threshold `eps =
//! static_epsilon` the options above use ([`Episode::motion`]):
//!
//! * *moved*: `|ag_t − ag_0| > eps` for some `t`; an episode that did not
//!   is *static*, and all its relabels are [`GoalOrigin::Static`].
//! * *settle step* `s`: the first step from which `|ag_t − ag_T| ≤ eps`
//!   holds to the end; `s = T` for an object still moving at the end.
//! * A relabel of transition `t` with the goal of step `t'` is
//!   [`GoalOrigin::PostSettle`] when both `t ≥ s` and `t' ≥ s`: the
//!   transition starts with the object already resting on its goal. Every
//!   goal from `t' ≥ s` is the same point, so the goal index alone cannot
//!   tell a trivial success from the informative relabel of a transition
//!   `t < s` (the steps that brought the object there) with that point; the
//!   start of the transition can. This is exactly what `cap_at_settle`
//!   removes, as `skip_static` removes the static ones.
//! * Every other relabel is [`GoalOrigin::Informative`]: the object moved
//!   between `t` and `t'`.
//! * *missed*: the episode's own goal was not reached, by the env's success
//!   test ([`GoalReward::success`]) on `ag_T` and the last desired goal. A
//!   relabel of a moved, missed episode with `t' ≥ s` has the missed object's
//!   resting place as its goal (for the ball, "the net brought to where the
//!   ball stopped"); it is counted as `missed`, on top of its post-settle or
//!   informative category.
//!
//! The tags cost one cached [`Episode::motion`] lookup per transition, plus
//! one success test for goals from the resting place.

use rand::{Rng, RngExt};
use serde::{Deserialize, Serialize};
use shoal_rl_core::{Error, GoalEnv, Result};

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

/// Which goals an episode may be relabelled with when its object moved but
/// missed the episode's own goal (a struck ball that did not go into the
/// net), judged by the env's success test on the final state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MissedRelabel {
    /// Like any other episode: the place the object came to rest is a goal
    /// as good as any (plain HER).
    #[default]
    Keep,
    /// Only points the object passed while moving, `t' < s` (the settle
    /// step): never the place a missed object stopped. A transition with no
    /// such later step keeps the episode's own goal and its real failure.
    Path,
}

/// How transitions are relabelled: DDPG's, TD3's and SAC's `[algo.her]`
/// table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
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
    /// How episodes whose object moved but missed their goal are relabelled.
    /// Default `keep` (like any other episode).
    pub missed: MissedRelabel,
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
            missed: MissedRelabel::Keep,
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
        if self.k > crate::check::MAX_HER_K {
            return Err(Error::Config(format!(
                "her k must be at most {}, got {}",
                crate::check::MAX_HER_K,
                self.k
            )));
        }
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
    /// Default: the sparse reward of the goal tasks, 0 on success, else −1.
    fn reward(&self, achieved: &[f32], desired: &[f32]) -> f32 {
        if self.success(achieved, desired) {
            0.0
        } else {
            -1.0
        }
    }
    /// Whether `achieved` counts as reaching `desired`.
    fn success(&self, achieved: &[f32], desired: &[f32]) -> bool;
}

/// Goals reached within a Euclidean distance, with the sparse reward: the
/// goal functions of shoal's goal tasks, for goals that no env scores (HAC's
/// subgoals in observation components, benchmarks).
///
/// ```
/// use shoal_rl_algo::{GoalReward, WithinDistance};
/// let near = WithinDistance { threshold: 0.05 };
/// assert_eq!(near.reward(&[0.0, 0.0], &[0.03, 0.03]), 0.0); // 0.042 away
/// assert_eq!(near.reward(&[0.0, 0.0], &[0.03, 0.04]), -1.0); // 0.05: not below
/// assert_eq!(near.reward(&[0.0, 0.0], &[0.06, 0.0]), -1.0);
/// assert!(near.success(&[0.1, 0.2], &[0.12, 0.21]));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WithinDistance {
    /// Distances below this reach the goal.
    pub threshold: f32,
}

impl GoalReward for WithinDistance {
    fn success(&self, achieved: &[f32], desired: &[f32]) -> bool {
        let squared: f32 = achieved
            .iter()
            .zip(desired)
            .map(|(a, d)| (a - d) * (a - d))
            .sum();
        squared.sqrt() < self.threshold
    }
}

/// Goals reached when every component is within its own threshold, with
/// the sparse reward: the HAC paper's goal test (`|achieved_i − desired_i|
/// ≤ threshold_i` for all `i`), for goals whose components have different
/// units, such as joint angles beside joint velocities.
///
/// ```
/// use shoal_rl_algo::{GoalReward, WithinBox};
/// let near = WithinBox { thresholds: vec![0.1, 2.0] };
/// assert!(near.success(&[0.0, 0.0], &[0.1, -2.0])); // on the edge: reached
/// assert_eq!(near.reward(&[0.0, 0.0], &[0.11, 0.0]), -1.0);
/// assert_eq!(near.reward(&[0.0, 0.0], &[0.0, 2.5]), -1.0);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct WithinBox {
    /// One threshold per goal component, in the component's units.
    pub thresholds: Vec<f32>,
}

impl GoalReward for WithinBox {
    fn success(&self, achieved: &[f32], desired: &[f32]) -> bool {
        achieved
            .iter()
            .zip(desired)
            .zip(&self.thresholds)
            .all(|((a, d), t)| (a - d).abs() <= *t)
    }
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
    /// What each replayed goal can teach (see [`GoalOrigin`]), `[n]`.
    pub origins: Vec<GoalOrigin>,
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
        self.origins.clear();
    }

    /// The transitions counted by [`GoalOrigin`].
    pub fn relabel_counts(&self) -> RelabelCounts {
        let mut counts = RelabelCounts::default();
        self.origins.iter().for_each(|origin| counts.add(*origin));
        counts
    }
}

/// What the goal a sampled transition `t` is replayed with can teach,
/// judged by how the object (the achieved goal) moved in its episode; see
/// the module docs, "Relabel accounting".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GoalOrigin {
    /// The episode's own goal was kept.
    Original,
    /// Relabelled in an episode whose object never moved farther than
    /// `static_epsilon`: the goal is where the object always was, a success
    /// whatever the action.
    Static,
    /// Relabelled on a transition that starts at or after the settle step
    /// `s`, with a goal from `s` on: the object already rests at the goal, a
    /// success whatever the action. `missed` as in [`GoalOrigin::Informative`].
    PostSettle {
        /// The episode missed its own goal and this goal is where the object stopped.
        missed: bool,
    },
    /// Relabelled with a goal the object reached by moving after step `t`
    /// (or, for the `episode` strategy, one it had left): whether it is
    /// reached depends on what happened in between.
    Informative {
        /// The episode missed its own goal (the env's success test on the
        /// final achieved goal and the final desired goal fails) and this
        /// goal is where the object stopped (`t' ≥ s`): the missed ball's
        /// resting place.
        missed: bool,
    },
}

/// The [`GoalOrigin`] of transition `t` of `episode` replayed with the
/// achieved goal of step `goal_step` (`None`: its own goal), with `eps` the
/// movement threshold and `goals` the env's success test.
///
/// ```
/// use shoal_rl_algo::{Episode, EpisodeDims, GoalOrigin, GoalReward, goal_origin};
/// struct Line;
/// impl GoalReward for Line {
///     fn success(&self, a: &[f32], d: &[f32]) -> bool { (a[0] - d[0]).abs() < 0.05 }
/// }
/// // A push toward 1.0 that stops at 0.2 after step 2 (of 4): a miss.
/// let dims = EpisodeDims { obs: 1, goal: 1, act: 1 };
/// let mut episode = Episode::start(dims, &[0.0], &[0.0]);
/// for x in [0.1, 0.2, 0.2, 0.2] {
///     episode.push(&[1.0], &[0.0], &[0.0], &[x]);
/// }
/// let origin = |t, t_goal| goal_origin(&episode, t, t_goal, 1e-3, &Line);
/// assert_eq!(origin(0, None), GoalOrigin::Original);
/// assert_eq!(origin(0, Some(1)), GoalOrigin::Informative { missed: false });
/// assert_eq!(origin(0, Some(3)), GoalOrigin::Informative { missed: true });
/// assert_eq!(origin(2, Some(4)), GoalOrigin::PostSettle { missed: true });
/// ```
pub fn goal_origin<G: GoalReward + ?Sized>(
    episode: &Episode,
    t: usize,
    goal_step: Option<usize>,
    eps: f32,
    goals: &G,
) -> GoalOrigin {
    let Some(t_goal) = goal_step else {
        return GoalOrigin::Original;
    };
    let motion = episode.motion(eps);
    if !motion.moved {
        return GoalOrigin::Static;
    }
    let at_rest = t_goal >= motion.settle;
    // Only asked when the goal is the resting place, so most transitions skip it.
    let missed = at_rest && missed(episode, goals);
    if at_rest && t >= motion.settle {
        GoalOrigin::PostSettle { missed }
    } else {
        GoalOrigin::Informative { missed }
    }
}

/// Sampled transitions counted by [`GoalOrigin`].
///
/// `original + static_object + post_settle + informative` is every
/// transition; `missed` counts the post-settle and informative relabels
/// whose goal is where a missed object stopped, `missed_in_motion` the
/// informative ones among them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RelabelCounts {
    /// Transitions replayed with their own goal.
    pub original: usize,
    /// Relabelled in episodes whose object never moved.
    pub static_object: usize,
    /// Relabelled after the object came to rest.
    pub post_settle: usize,
    /// Relabelled with a goal from a moving object.
    pub informative: usize,
    /// Relabelled with the resting place of an object that missed its goal.
    pub missed: usize,
    /// Of `missed`, those on transitions before the object came to rest.
    pub missed_in_motion: usize,
}

impl RelabelCounts {
    /// Counts one transition.
    pub fn add(&mut self, origin: GoalOrigin) {
        let missed = match origin {
            GoalOrigin::Original => {
                self.original += 1;
                return;
            }
            GoalOrigin::Static => {
                self.static_object += 1;
                return;
            }
            GoalOrigin::PostSettle { missed } => {
                self.post_settle += 1;
                missed
            }
            GoalOrigin::Informative { missed } => {
                self.informative += 1;
                self.missed_in_motion += usize::from(missed);
                missed
            }
        };
        self.missed += usize::from(missed);
    }

    /// All counted transitions.
    pub fn total(&self) -> usize {
        self.original + self.static_object + self.post_settle + self.informative
    }

    /// Adds `other`'s counts.
    pub fn merge(&mut self, other: &RelabelCounts) {
        self.original += other.original;
        self.static_object += other.static_object;
        self.post_settle += other.post_settle;
        self.informative += other.informative;
        self.missed += other.missed;
        self.missed_in_motion += other.missed_in_motion;
    }

    /// Each count as a share of all counted transitions, under the metric
    /// keys `her/original`, `her/static`, `her/post_settle`,
    /// `her/informative` (these four sum to 1), `her/missed` and
    /// `her/missed_in_motion`. Empty when nothing was counted.
    pub fn shares(&self) -> Vec<(String, f64)> {
        let total = self.total();
        if total == 0 {
            return Vec::new();
        }
        [
            ("her/original", self.original),
            ("her/static", self.static_object),
            ("her/post_settle", self.post_settle),
            ("her/informative", self.informative),
            ("her/missed", self.missed),
            ("her/missed_in_motion", self.missed_in_motion),
        ]
        .into_iter()
        .map(|(key, count)| (key.to_string(), count as f64 / total as f64))
        .collect()
    }
}

/// Picks the achieved-goal index to substitute for step `t`, or `None` to
/// keep the original goal. Draws from `rng` in a fixed order.
fn pick_goal_step<R: Rng + ?Sized, G: GoalReward + ?Sized>(
    episode: &Episode,
    t: usize,
    config: &HerConfig,
    goals: &G,
    rng: &mut R,
) -> Option<usize> {
    let relabel = rng.random::<f64>() < config.relabel_probability();
    if !relabel {
        return None;
    }
    let motion = episode.motion(config.static_epsilon);
    if config.skip_static && !motion.moved {
        return None;
    }
    let mut last = if config.cap_at_settle {
        motion.settle.max(1)
    } else {
        episode.len()
    };
    if config.missed == MissedRelabel::Path && motion.moved && missed(episode, goals) {
        // Only points the object passed before it came to rest.
        last = last.min(motion.settle.saturating_sub(1));
        if last == 0 {
            return None;
        }
    }
    match config.strategy {
        HerStrategy::None => None,
        HerStrategy::Future if t < last => Some(rng.random_range(t + 1..=last)),
        HerStrategy::Future => None,
        HerStrategy::Final => Some(last),
        HerStrategy::Episode => Some(rng.random_range(1..=last)),
    }
}

/// Whether `episode` missed its own goal: the env's success test fails on
/// the final achieved goal and the last desired goal.
fn missed<G: GoalReward + ?Sized>(episode: &Episode, goals: &G) -> bool {
    let last = episode.len();
    !goals.success(
        episode.achieved(last),
        episode.desired(last.saturating_sub(1)),
    )
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
    let goal_step = pick_goal_step(episode, t, config, goals, rng);
    push_with_goal(batch, episode, t, goal_step, config, goals);
}

/// Appends transition `t` of `episode` to `batch` with the goal achieved at
/// `goal_step`, or its own goal where `None`.
fn push_with_goal<G: GoalReward + ?Sized>(
    batch: &mut TransitionBatch,
    episode: &Episode,
    t: usize,
    goal_step: Option<usize>,
    config: &HerConfig,
    goals: &G,
) {
    let goal = match goal_step {
        Some(t_goal) => episode.achieved(t_goal),
        None => episode.desired(t),
    };
    let next_achieved = episode.achieved(t + 1);
    let ends_episode = episode.terminated() && t + 1 == episode.len();
    let (reward, terminal) = match (goal_step, episode.reward(t)) {
        // Its own goal, with the reward the env gave (an env without goals,
        // where nothing else could recompute it), ending where the env did.
        (None, Some(reward)) => (reward, ends_episode),
        _ => (
            goals.reward(next_achieved, goal),
            if config.success_is_terminal {
                goals.success(next_achieved, goal)
            } else {
                goal_step.is_none() && ends_episode
            },
        ),
    };
    batch.obs.extend_from_slice(episode.obs(t));
    batch.next_obs.extend_from_slice(episode.obs(t + 1));
    batch.goals.extend_from_slice(goal);
    batch.next_achieved.extend_from_slice(next_achieved);
    batch.actions.extend_from_slice(episode.action(t));
    batch.rewards.push(reward);
    batch.terminals.push(terminal);
    batch.steps.push(t);
    batch.goal_steps.push(goal_step);
    batch.origins.push(goal_origin(
        episode,
        t,
        goal_step,
        config.static_epsilon,
        goals,
    ));
}

/// Appends `n` transitions drawn uniformly from `buffer`, relabelled per
/// `config`, with rewards from `goals`. Appends nothing if the buffer is empty.
///
/// ```
/// use shoal_rl_algo::{Episode, EpisodeDims, GoalReward, HerConfig, ReplayBuffer, TransitionBatch, sample_batch};
/// struct Reach;
/// impl GoalReward for Reach {
///     fn success(&self, a: &[f32], d: &[f32]) -> bool { (a[0] - d[0]).abs() < 0.05 }
/// }
/// let dims = EpisodeDims { obs: 1, goal: 1, act: 1 };
/// let mut episode = Episode::start(dims, &[0.0], &[0.0]);
/// episode.push(&[1.0], &[0.3], &[0.3], &[0.3]);
/// episode.push(&[1.0], &[0.3], &[0.6], &[0.6]);
/// let mut buffer = ReplayBuffer::new(dims, 100).unwrap();
/// buffer.push(episode).unwrap();
/// let mut batch = TransitionBatch::default();
/// let mut rng = shoal_rl_core::rng_from_seed(0);
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
    sample_batch_with_playing(buffer, None, config, n, goals, rng, batch);
}

/// [`sample_batch`] over the buffer and the episode still being played
/// (if any), drawn from as if it were stored last: what an env step adds is replayed
/// from the next gradient step on, as in Stable-Baselines3's and CleanRL's
/// buffers without HER. The playing episode's transitions keep their own
/// goals: hindsight goals wait for its end, as in Stable-Baselines3's HER
/// buffer, which draws no transition of an unfinished episode at all.
///
/// ```
/// use shoal_rl_algo::{Episode, EpisodeDims, HerConfig, ReplayBuffer, TransitionBatch, WithinDistance, sample_batch_with_playing};
/// let dims = EpisodeDims { obs: 1, goal: 1, act: 1 };
/// let buffer = ReplayBuffer::new(dims, 100).unwrap();
/// let mut playing = Episode::start(dims, &[0.0], &[0.0]);
/// playing.push(&[1.0], &[0.3], &[0.3], &[0.3]);
/// let mut batch = TransitionBatch::default();
/// let mut rng = shoal_rl_core::rng_from_seed(0);
/// let reach = WithinDistance { threshold: 0.05 };
/// sample_batch_with_playing(&buffer, Some(&playing), &HerConfig::default(), 8, &reach, &mut rng, &mut batch);
/// // The empty buffer has nothing to give; the step just played is there.
/// assert_eq!(batch.actions, vec![0.3; 8]);
/// ```
pub fn sample_batch_with_playing<R: Rng + ?Sized, G: GoalReward + ?Sized>(
    buffer: &ReplayBuffer,
    playing: Option<&Episode>,
    config: &HerConfig,
    n: usize,
    goals: &G,
    rng: &mut R,
    batch: &mut TransitionBatch,
) {
    let stored = buffer.transitions();
    let total = stored + playing.map_or(0, Episode::len);
    if total == 0 {
        return;
    }
    for _ in 0..n {
        let draw = rng.random_range(0..total as u64) as usize;
        match playing {
            Some(playing) if draw >= stored => {
                push_with_goal(batch, playing, draw - stored, None, config, goals);
            }
            _ => {
                let (index, t) = buffer.transition_at(draw);
                push_transition(batch, buffer.episode(index), t, config, goals, rng);
            }
        }
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
    use shoal_rl_core::rng_from_seed;

    const DIMS: EpisodeDims = EpisodeDims {
        obs: 1,
        goal: 1,
        act: 1,
    };

    #[test]
    fn an_episode_without_goals_replays_the_env_rewards_and_its_own_end() {
        // A reward function that must never be asked: the episode has none
        // to give it, and its stored rewards are what replay returns.
        struct Unasked;
        impl GoalReward for Unasked {
            fn reward(&self, _: &[f32], _: &[f32]) -> f32 {
                -7.0
            }
            fn success(&self, _: &[f32], _: &[f32]) -> bool {
                true
            }
        }
        let dims = EpisodeDims {
            obs: 1,
            goal: 0,
            act: 1,
        };
        let rewards = [0.5, -1.25, 3.0];
        let mut episode = Episode::start(dims, &[0.0], &[]);
        for (t, r) in rewards.iter().enumerate() {
            episode.push_rewarded(&[], &[0.0], *r, &[t as f32 + 1.0], &[]);
        }
        episode.set_terminated(true);
        let config = HerConfig {
            k: 0,
            ..HerConfig::default()
        };
        let mut batch = TransitionBatch::default();
        sample_episode(
            &episode,
            &config,
            60,
            &Unasked,
            &mut rng_from_seed(4),
            &mut batch,
        );
        assert_eq!(batch.len(), 60);
        for i in 0..batch.len() {
            let t = batch.steps[i];
            assert_eq!(batch.rewards[i], rewards[t]);
            assert_eq!(batch.terminals[i], t == 2, "only the last step ended it");
            assert_eq!(batch.goal_steps[i], None);
            assert_eq!(batch.next_obs[i], t as f32 + 1.0);
        }
        assert!((0..3).all(|t| batch.steps.contains(&t)));
    }

    #[test]
    fn the_playing_episode_is_drawn_as_one_more_stored_episode_and_never_relabelled() {
        // Stored: 3 transitions with action 0.1; playing: 1 with action 0.9
        // that ended the episode. Uniform draws give the playing one a
        // quarter of the batch, with its own goal whatever `k` says.
        let mut buffer = ReplayBuffer::new(DIMS, 100).unwrap();
        let mut stored = Episode::start(DIMS, &[0.0], &[0.0]);
        for t in 1..=3 {
            stored.push(&[1.0], &[0.1], &[t as f32], &[t as f32]);
        }
        buffer.push(stored).unwrap();
        let mut playing = Episode::start(DIMS, &[5.0], &[5.0]);
        playing.push(&[1.0], &[0.9], &[6.0], &[6.0]);
        playing.set_terminated(true);
        let config = HerConfig {
            k: 4,
            strategy: HerStrategy::Future,
            success_is_terminal: false,
            ..HerConfig::default()
        };
        let n = 4_000;
        let mut batch = TransitionBatch::default();
        let mut rng = rng_from_seed(8);
        sample_batch_with_playing(
            &buffer,
            Some(&playing),
            &config,
            n,
            &Line,
            &mut rng,
            &mut batch,
        );
        assert_eq!(batch.len(), n);
        let from_playing: Vec<usize> = (0..n).filter(|&i| batch.actions[i] == 0.9).collect();
        let share = from_playing.len() as f64 / n as f64;
        // Binomial(4 000, 1/4): standard deviation 0.007.
        assert!((share - 0.25).abs() < 0.03, "playing share {share}");
        for &i in &from_playing {
            assert_eq!(batch.goal_steps[i], None);
            assert_eq!(batch.goals[i], 1.0, "its own goal");
            assert_eq!(batch.rewards[i], -1.0, "6.0 is not within 0.05 of 1.0");
            assert!(batch.terminals[i], "the step that ended it");
        }
        let stored_relabelled = (0..n)
            .filter(|&i| batch.actions[i] == 0.1 && batch.goal_steps[i].is_some())
            .count();
        assert!(
            stored_relabelled > n / 2,
            "stored steps are relabelled as before"
        );

        // Nothing stored and nothing played: nothing drawn.
        let empty = ReplayBuffer::new(DIMS, 100).unwrap();
        let unplayed = Episode::start(DIMS, &[0.0], &[0.0]);
        let mut none = TransitionBatch::default();
        sample_batch_with_playing(
            &empty,
            Some(&unplayed),
            &config,
            5,
            &Line,
            &mut rng,
            &mut none,
        );
        assert!(none.is_empty());
    }

    /// Sparse −1/0 reward on a line, threshold 0.05.
    struct Line;
    impl GoalReward for Line {
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

    // ---- relabel accounting on hand-built episodes ----

    /// An episode through `positions` (achieved goals `ag_0 … ag_T`) that
    /// asks for `goal` at every step.
    fn episode_toward(positions: &[f32], goal: f32) -> Episode {
        let mut e = Episode::start(DIMS, &[positions[0]], &[positions[0]]);
        for (t, p) in positions.iter().enumerate().skip(1) {
            e.push(&[goal], &[t as f32], &[*p], &[*p]);
        }
        e
    }

    /// The object never moves (jitter below 1e-3) in 4 steps.
    fn static_object() -> Episode {
        episode_toward(&[0.3, 0.3, 0.3005, 0.3, 0.3], 10.0)
    }

    /// A push that reaches its goal 0.3 at step 4 and rests there to step 6
    /// (an env that does not end on success): settle step 4, not missed.
    fn settled_push() -> Episode {
        episode_toward(&[0.0, 0.0, 0.1, 0.2, 0.3, 0.3, 0.3], 0.3)
    }

    /// A ball struck at step 2 that rolls out to 0.45 and rests there from
    /// step 6 of 8, short of the net at 0.8: settle step 6, missed.
    fn missed_ball() -> Episode {
        episode_toward(&[0.0, 0.0, 0.0, 0.2, 0.35, 0.42, 0.45, 0.45, 0.45], 0.8)
    }

    /// Counts over every pair `(t, t')` the `future` strategy can draw.
    fn future_census(episode: &Episode) -> RelabelCounts {
        let mut counts = RelabelCounts::default();
        for t in 0..episode.len() {
            for t_goal in t + 1..=episode.len() {
                counts.add(goal_origin(episode, t, Some(t_goal), 1e-3, &Line));
            }
        }
        counts
    }

    #[test]
    fn motion_of_hand_built_episodes() {
        let motion = |e: &Episode| e.motion(1e-3);
        assert!(!motion(&static_object()).moved);
        assert_eq!(
            motion(&settled_push()),
            crate::replay::Motion {
                moved: true,
                settle: 4
            }
        );
        assert_eq!(
            motion(&missed_ball()),
            crate::replay::Motion {
                moved: true,
                settle: 6
            }
        );
        // Still moving on the last step: settles only at T.
        assert_eq!(motion(&moving(5)).settle, 5);
    }

    #[test]
    fn relabel_categories_of_every_future_pair_have_the_hand_counted_sizes() {
        // Static, T = 4: all 4·5/2 = 10 pairs are static.
        assert_eq!(
            future_census(&static_object()),
            RelabelCounts {
                static_object: 10,
                ..RelabelCounts::default()
            }
        );
        // Settled push, T = 6, s = 4: 21 pairs; post-settle are t ≥ 4:
        // (4,5), (4,6), (5,6). It reached its goal, so none is missed.
        assert_eq!(
            future_census(&settled_push()),
            RelabelCounts {
                post_settle: 3,
                informative: 18,
                ..RelabelCounts::default()
            }
        );
        // Missed ball, T = 8, s = 6: 36 pairs; post-settle (6,7), (6,8),
        // (7,8); goals where it stopped are t' ∈ {6, 7, 8}: 6 + 7 + 8 = 21
        // pairs, of which 21 − 3 = 18 start while the ball still rolls.
        assert_eq!(
            future_census(&missed_ball()),
            RelabelCounts {
                post_settle: 3,
                informative: 33,
                missed: 21,
                missed_in_motion: 18,
                ..RelabelCounts::default()
            }
        );
    }

    #[test]
    fn sampled_batches_tag_every_row_as_the_hand_rule_says() {
        // Per episode: whether it moved, its settle step, whether it missed.
        let cases = [
            (static_object(), false, 4, false),
            (settled_push(), true, 4, false),
            (missed_ball(), true, 6, true),
        ];
        for (episode, moved, s, missed) in cases {
            let batch = sample(&buffer_of(vec![episode]), &HerConfig::default(), 2_000, 9);
            let mut expected = RelabelCounts::default();
            for i in 0..batch.len() {
                let t = batch.steps[i];
                let origin = match batch.goal_steps[i] {
                    None => GoalOrigin::Original,
                    Some(_) if !moved => GoalOrigin::Static,
                    Some(g) if t >= s && g >= s => GoalOrigin::PostSettle { missed },
                    Some(g) => GoalOrigin::Informative {
                        missed: missed && g >= s,
                    },
                };
                assert_eq!(batch.origins[i], origin, "row {i}: t = {t}");
                expected.add(origin);
            }
            assert_eq!(batch.relabel_counts(), expected);
            assert_eq!(expected.total(), 2_000);
            let relabelled = 2_000 - expected.original;
            assert_eq!(relabelled, batch.goal_steps.iter().flatten().count());
        }
    }

    #[test]
    fn shares_are_fractions_of_all_counted_transitions() {
        let counts = RelabelCounts {
            original: 2,
            static_object: 1,
            post_settle: 3,
            informative: 4,
            missed: 5,
            missed_in_motion: 2,
        };
        let shares = counts.shares();
        let share = |key: &str| shares.iter().find(|(k, _)| k == key).unwrap().1;
        assert_eq!(share("her/original"), 0.2);
        assert_eq!(share("her/static"), 0.1);
        assert_eq!(share("her/post_settle"), 0.3);
        assert_eq!(share("her/informative"), 0.4);
        assert_eq!(share("her/missed"), 0.5);
        assert_eq!(share("her/missed_in_motion"), 0.2);
        assert!(RelabelCounts::default().shares().is_empty());
        let mut twice = counts;
        twice.merge(&counts);
        assert_eq!(twice.total(), 20);
        assert_eq!(twice.missed_in_motion, 4);
    }

    #[test]
    fn missed_path_never_relabels_with_where_a_missed_ball_stopped() {
        let path = HerConfig {
            missed: MissedRelabel::Path,
            ..HerConfig::default()
        };
        // Missed ball, s = 6: goals only from t' ∈ t+1..=5; steps 5..8 have
        // none and keep the net as their goal.
        let batch = sample(&buffer_of(vec![missed_ball()]), &path, 4_000, 10);
        let counts = batch.relabel_counts();
        assert_eq!((counts.missed, counts.post_settle), (0, 0));
        for i in 0..batch.len() {
            let t = batch.steps[i];
            match batch.goal_steps[i] {
                Some(g) => assert!(g > t && g <= 5, "t = {t}, t' = {g}"),
                None => assert_eq!(batch.goals[i], 0.8),
            }
            if t >= 5 {
                assert_eq!(batch.goal_steps[i], None, "t = {t}");
                assert_eq!(batch.rewards[i], -1.0);
            }
        }
        // Relabels keep their k/(1+k) rate on the steps that have a path
        // goal (t < 5: 5 of 8 steps).
        let early = (0..batch.len()).filter(|&i| batch.steps[i] < 5).count();
        let relabelled = batch.goal_steps.iter().flatten().count() as f64 / early as f64;
        assert!((relabelled - 0.8).abs() < 0.04, "{relabelled}");
        // An episode that reached its goal is relabelled as before, with the
        // same random draws.
        let reached = buffer_of(vec![settled_push()]);
        assert_eq!(
            sample(&reached, &path, 500, 11),
            sample(&reached, &HerConfig::default(), 500, 11)
        );
    }

    use proptest::prelude::*;

    /// Sparse −1/0 reward within 0.5, written out again here rather than
    /// through [`Line`]: the oracle the sampled rewards are checked against.
    fn hand_reward(achieved: f32, goal: f32) -> f32 {
        if (achieved - goal).abs() < 0.5 {
            0.0
        } else {
            -1.0
        }
    }

    struct Wide;
    impl GoalReward for Wide {
        fn success(&self, a: &[f32], d: &[f32]) -> bool {
            (a[0] - d[0]).abs() < 0.5
        }
    }

    fn strategies() -> impl Strategy<Value = HerStrategy> {
        prop_oneof![
            Just(HerStrategy::None),
            Just(HerStrategy::Future),
            Just(HerStrategy::Final),
            Just(HerStrategy::Episode),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Episodes of any lengths (their achieved goal a random walk, their
        /// obs and actions naming episode and step), any k and strategy: each
        /// transition's obs, next obs and action belong to its step, the relabelled
        /// share is k/(k+1) within 5 binomial standard deviations, every
        /// substituted goal is the achieved goal of an allowed step of the
        /// same episode, and rewards and terminals follow the hand reward.
        #[test]
        fn relabelling_follows_k_the_strategy_and_the_reward(
            walks in prop::collection::vec(prop::collection::vec(-0.4f32..0.4, 1..30), 1..4),
            k in 0usize..8,
            strategy in strategies(),
            success_is_terminal in any::<bool>(),
            terminated in any::<bool>(),
            seed in any::<u64>(),
        ) {
            // positions[e][t]: the achieved goal of episode e at step t.
            let positions: Vec<Vec<f32>> = walks
                .iter()
                .map(|walk| {
                    std::iter::once(0.0)
                        .chain(walk.iter().scan(0.0, |x, d| { *x += d; Some(*x) }))
                        .collect()
                })
                .collect();
            // o_t = 1000·e + t and a_t = (100·e + t) / 10⁴ name their
            // episode and step, so a transition's parts can be checked
            // against each other.
            let obs_of = |e: usize, t: usize| (1000 * e + t) as f32;
            let action_of = |e: usize, t: usize| (100 * e + t) as f32 / 1e4;
            let mut buffer = ReplayBuffer::new(DIMS, 10_000).unwrap();
            for (e, path) in positions.iter().enumerate() {
                let mut episode = Episode::start(DIMS, &[obs_of(e, 0)], &[path[0]]);
                for (t, p) in path[1..].iter().enumerate() {
                    episode.push(&[10.0], &[action_of(e, t)], &[obs_of(e, t + 1)], &[*p]);
                }
                episode.set_terminated(terminated);
                buffer.push(episode).unwrap();
            }
            let config = HerConfig { strategy, k, success_is_terminal, ..HerConfig::default() };
            let n = 4_000;
            let mut batch = TransitionBatch::default();
            sample_batch(&buffer, &config, n, &Wide, &mut rng_from_seed(seed), &mut batch);
            prop_assert_eq!(batch.len(), n);

            let p = if strategy == HerStrategy::None { 0.0 } else { k as f64 / (k as f64 + 1.0) };
            let share = batch.goal_steps.iter().filter(|g| g.is_some()).count() as f64 / n as f64;
            let tolerance = 5.0 * (p * (1.0 - p) / n as f64).sqrt() + 1e-12;
            prop_assert!((share - p).abs() <= tolerance, "share {} vs {}", share, p);

            for i in 0..n {
                let (e, t) = ((batch.obs[i] / 1000.0) as usize, batch.steps[i]);
                let path = &positions[e];
                let len = path.len() - 1;
                prop_assert!(t < len);
                prop_assert_eq!(batch.obs[i], obs_of(e, t));
                prop_assert_eq!(batch.next_obs[i], obs_of(e, t + 1));
                prop_assert_eq!(batch.actions[i], action_of(e, t));
                let goal = match batch.goal_steps[i] {
                    None => 10.0,
                    Some(g) => {
                        let allowed = match strategy {
                            HerStrategy::None => false,
                            HerStrategy::Future => (t + 1..=len).contains(&g),
                            HerStrategy::Final => g == len,
                            HerStrategy::Episode => (1..=len).contains(&g),
                        };
                        prop_assert!(allowed, "{:?}: goal step {} for t = {} of {}", strategy, g, t, len);
                        path[g]
                    }
                };
                prop_assert_eq!(batch.goals[i], goal);
                prop_assert_eq!(batch.next_achieved[i], path[t + 1]);
                let reward = hand_reward(path[t + 1], goal);
                prop_assert_eq!(batch.rewards[i], reward);
                let terminal = if success_is_terminal {
                    reward == 0.0
                } else {
                    batch.goal_steps[i].is_none() && terminated && t + 1 == len
                };
                prop_assert_eq!(batch.terminals[i], terminal);
            }
        }
    }
}
