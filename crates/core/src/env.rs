//! Environments with Gymnasium's semantics: `reset`, `step`, `terminated`, `truncated`.

use crate::{Error, Result, Space};

/// Named scalar side-information of one step (reward terms, success flags).
///
/// A small vector rather than a map: it is built on every step of a hot loop.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Info(Vec<(&'static str, f64)>);

impl Info {
    /// An empty record.
    pub fn new() -> Self {
        Info(Vec::new())
    }

    /// Adds or replaces `key`; returns `self` for chaining.
    pub fn with(mut self, key: &'static str, value: f64) -> Self {
        self.insert(key, value);
        self
    }

    /// Adds or replaces `key`.
    pub fn insert(&mut self, key: &'static str, value: f64) {
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.0.push((key, value)),
        }
    }

    /// The value stored under `key`, if any.
    pub fn get(&self, key: &str) -> Option<f64> {
        self.0.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }

    /// All entries in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, f64)> + '_ {
        self.0.iter().copied()
    }
}

/// The outcome of one [`Env::step`].
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// Observation after the step.
    pub obs: Vec<f32>,
    /// Reward for the transition.
    pub reward: f32,
    /// The task itself ended (goal reached, agent died). Only this flag may
    /// stop bootstrapping in a value target.
    pub terminated: bool,
    /// The episode was cut short by something outside the task (a time limit).
    /// The next state still has value.
    pub truncated: bool,
    /// Reward terms and other diagnostics.
    pub info: Info,
}

impl Step {
    /// A step that neither terminates nor truncates, with empty info.
    pub fn new(obs: Vec<f32>, reward: f32) -> Self {
        Step {
            obs,
            reward,
            terminated: false,
            truncated: false,
            info: Info::new(),
        }
    }

    /// Whether the episode is over for either reason.
    pub fn done(&self) -> bool {
        self.terminated || self.truncated
    }
}

/// A reinforcement-learning environment with Gymnasium's contract.
///
/// * `reset(Some(seed))` re-seeds the environment's generator, so the same seed
///   and the same actions give a bit-identical episode; `reset(None)` continues
///   the current random stream.
/// * `step` validates the action against [`Env::action_space`]: a wrong length
///   or a non-finite component is an [`Error`], never NaN state. Whether
///   out-of-range components are clipped or rejected is each env's documented
///   configuration.
/// * `terminated` marks the task's real end, `truncated` an outside limit
///   (time, kept by a [`TimeLimit`]). After either, `step` fails with
///   [`Error::NeedsReset`] until `reset` is called; so does a `step` before
///   the first `reset`.
///
/// See the crate-level docs for a complete implementation.
pub trait Env {
    /// Bounds of the observation vector.
    fn observation_space(&self) -> &Space;
    /// Bounds of the action vector.
    fn action_space(&self) -> &Space;
    /// Starts a new episode and returns its first observation.
    fn reset(&mut self, seed: Option<u64>) -> Vec<f32>;
    /// Advances one control step.
    fn step(&mut self, action: &[f32]) -> Result<Step>;
}

impl<E: Env + ?Sized> Env for Box<E> {
    fn observation_space(&self) -> &Space {
        (**self).observation_space()
    }
    fn action_space(&self) -> &Space {
        (**self).action_space()
    }
    fn reset(&mut self, seed: Option<u64>) -> Vec<f32> {
        (**self).reset(seed)
    }
    fn step(&mut self, action: &[f32]) -> Result<Step> {
        (**self).step(action)
    }
}

/// A goal-conditioned environment (Gymnasium-Robotics' `GoalEnv`).
///
/// Observations are flat vectors laid out as
/// `[observation | achieved_goal | desired_goal]`, with both goals
/// [`GoalEnv::goal_dim`] long, so goal envs run through every generic [`Env`]
/// code path. [`GoalEnv::compute_reward`] is a pure function of the two goals,
/// which is what lets hindsight experience replay recompute rewards for
/// substituted goals.
///
/// ```
/// # use shoal_rl_core::GoalEnv;
/// fn relabelled_reward<E: GoalEnv>(env: &E, obs: &[f32], new_goal: &[f32]) -> f32 {
///     let (_, achieved, _) = env.split_obs(obs);
///     env.compute_reward(achieved, new_goal)
/// }
/// ```
pub trait GoalEnv: Env {
    /// Length of the achieved and desired goal vectors.
    fn goal_dim(&self) -> usize;

    /// Reward for having reached `achieved` when `desired` was asked for.
    /// Must not depend on any state of the environment. Default: the sparse
    /// reward of Gymnasium-Robotics' tasks, `0` when
    /// [`GoalEnv::is_success`], else `−1`.
    fn compute_reward(&self, achieved: &[f32], desired: &[f32]) -> f32 {
        if self.is_success(achieved, desired) {
            0.0
        } else {
            -1.0
        }
    }

    /// Whether `achieved` counts as reaching `desired`.
    fn is_success(&self, achieved: &[f32], desired: &[f32]) -> bool;

    /// Splits a flat observation into `(observation, achieved_goal, desired_goal)`.
    fn split_obs<'a>(&self, obs: &'a [f32]) -> (&'a [f32], &'a [f32], &'a [f32]) {
        let g = self.goal_dim();
        let n = obs.len() - 2 * g;
        (&obs[..n], &obs[n..n + g], &obs[n + g..])
    }

    /// [`GoalEnv::compute_reward`] over row-major batches of goals.
    fn compute_rewards(&self, achieved: &[f32], desired: &[f32]) -> Vec<f32> {
        let g = self.goal_dim();
        achieved
            .chunks(g)
            .zip(desired.chunks(g))
            .map(|(a, d)| self.compute_reward(a, d))
            .collect()
    }
}

impl<E: GoalEnv + ?Sized> GoalEnv for Box<E> {
    fn goal_dim(&self) -> usize {
        (**self).goal_dim()
    }
    fn compute_reward(&self, achieved: &[f32], desired: &[f32]) -> f32 {
        (**self).compute_reward(achieved, desired)
    }
    fn is_success(&self, achieved: &[f32], desired: &[f32]) -> bool {
        (**self).is_success(achieved, desired)
    }
}

/// A plain env seen as a goal env with no goals (goal width 0, never a
/// success), so that the goal algorithms' agents (DDPG, TD3, SAC) train on
/// it. Its observation is the plain one; its rewards cannot be recomputed
/// from goals, so those agents keep the env's own (and refuse hindsight
/// relabelling, which has no goal to substitute).
///
/// ```
/// use shoal_rl_core::{Env, GoalEnv, Result, Space, Step, WithoutGoals};
///
/// struct Line(f32);
/// impl Env for Line {
///     fn observation_space(&self) -> &Space { unimplemented!() }
///     fn action_space(&self) -> &Space { unimplemented!() }
///     fn reset(&mut self, _seed: Option<u64>) -> Vec<f32> { vec![self.0] }
///     fn step(&mut self, a: &[f32]) -> Result<Step> { Ok(Step::new(vec![a[0]], -a[0].abs())) }
/// }
/// let mut env = WithoutGoals(Line(0.5));
/// assert_eq!(env.goal_dim(), 0);
/// let (obs, achieved, desired) = env.split_obs(&[0.5]);
/// assert_eq!((obs, achieved.len(), desired.len()), (&[0.5][..], 0, 0));
/// assert_eq!(env.step(&[0.25])?.reward, -0.25);
/// # Ok::<(), shoal_rl_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct WithoutGoals<E>(pub E);

impl<E: Env> Env for WithoutGoals<E> {
    fn observation_space(&self) -> &Space {
        self.0.observation_space()
    }
    fn action_space(&self) -> &Space {
        self.0.action_space()
    }
    fn reset(&mut self, seed: Option<u64>) -> Vec<f32> {
        self.0.reset(seed)
    }
    fn step(&mut self, action: &[f32]) -> Result<Step> {
        self.0.step(action)
    }
}

impl<E: Env> GoalEnv for WithoutGoals<E> {
    fn goal_dim(&self) -> usize {
        0
    }
    fn is_success(&self, _achieved: &[f32], _desired: &[f32]) -> bool {
        false
    }
}

/// Gymnasium's time limit and reset order, kept by every env of shoal.
///
/// An env owns one (rather than being wrapped in one), so it keeps its own
/// type and methods while the rules live here once:
///
/// * [`TimeLimit::start`] in `reset` begins an episode;
/// * [`TimeLimit::check`] first thing in `step`: stepping before the first
///   reset or after the episode ended is [`Error::NeedsReset`];
/// * [`TimeLimit::finish`] on the step about to be returned: counts it and
///   sets `truncated` once `max_steps` steps have been taken (as Gymnasium's
///   `TimeLimit`, even when the same step also `terminated`), and ends the
///   episode when either flag is set;
/// * [`TimeLimit::abort`] ends the episode without a step (an env whose
///   simulation failed).
///
/// ```
/// use shoal_rl_core::{Env, Error, Result, Space, Step, TimeLimit};
///
/// /// Counts up forever; the limit ends its episodes after 2 steps.
/// struct Counter { n: f32, space: Space, limit: TimeLimit }
///
/// impl Env for Counter {
///     fn observation_space(&self) -> &Space { &self.space }
///     fn action_space(&self) -> &Space { &self.space }
///     fn reset(&mut self, _seed: Option<u64>) -> Vec<f32> {
///         self.limit.start();
///         self.n = 0.0;
///         vec![self.n]
///     }
///     fn step(&mut self, _action: &[f32]) -> Result<Step> {
///         self.limit.check()?;
///         self.n += 1.0;
///         Ok(self.limit.finish(Step::new(vec![self.n], 1.0)))
///     }
/// }
///
/// let space = Space::uniform(1, -1.0, 1.0);
/// let mut env = Counter { n: 0.0, space, limit: TimeLimit::new(2) };
/// assert!(matches!(env.step(&[0.0]), Err(Error::NeedsReset)));
/// env.reset(None);
/// assert!(!env.step(&[0.0]).unwrap().truncated);
/// assert!(env.step(&[0.0]).unwrap().truncated);
/// assert!(matches!(env.step(&[0.0]), Err(Error::NeedsReset)));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimeLimit {
    max_steps: usize,
    elapsed: usize,
    /// No episode is running: before the first reset, or after the end.
    over: bool,
}

impl TimeLimit {
    /// A limit of `max_steps` steps per episode; no episode runs until
    /// [`TimeLimit::start`].
    pub fn new(max_steps: usize) -> Self {
        TimeLimit {
            max_steps,
            elapsed: 0,
            over: true,
        }
    }

    /// Begins an episode (call from `reset`).
    pub fn start(&mut self) {
        self.elapsed = 0;
        self.over = false;
    }

    /// [`Error::NeedsReset`] unless an episode is running (call first in `step`).
    pub fn check(&self) -> Result<()> {
        if self.over {
            Err(Error::NeedsReset)
        } else {
            Ok(())
        }
    }

    /// Counts `step`, truncates it at the limit, and ends the episode if it
    /// is done; returns it.
    pub fn finish(&mut self, mut step: Step) -> Step {
        self.elapsed += 1;
        if self.elapsed >= self.max_steps {
            step.truncated = true;
        }
        self.over = step.done();
        step
    }

    /// Ends the episode without a step; the next `step` needs a reset.
    pub fn abort(&mut self) {
        self.over = true;
    }

    /// Steps taken in the current (or last) episode.
    pub fn elapsed(&self) -> usize {
        self.elapsed
    }

    /// Steps after which an episode is truncated.
    pub fn max_steps(&self) -> usize {
        self.max_steps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(terminated: bool) -> Step {
        Step {
            terminated,
            ..Step::new(vec![0.0], 0.0)
        }
    }

    #[test]
    fn a_limit_truncates_at_its_step_even_when_the_task_also_ends() {
        let mut limit = TimeLimit::new(3);
        limit.start();
        let flags: Vec<(bool, bool)> = (0..3)
            .map(|t| {
                let s = limit.finish(step(t == 2));
                (s.terminated, s.truncated)
            })
            .collect();
        assert_eq!(flags, [(false, false), (false, false), (true, true)]);
        assert!(matches!(limit.check(), Err(Error::NeedsReset)));
        assert_eq!(limit.elapsed(), 3);
    }

    #[test]
    fn termination_ends_the_episode_and_start_begins_a_new_one() {
        let mut limit = TimeLimit::new(10);
        assert!(limit.check().is_err(), "no episode before the first start");
        limit.start();
        assert!(limit.check().is_ok());
        let s = limit.finish(step(true));
        assert!(s.terminated && !s.truncated);
        assert!(limit.check().is_err());
        limit.start();
        assert_eq!(limit.elapsed(), 0);
        limit.finish(step(false));
        assert!(limit.check().is_ok());
        limit.abort();
        assert!(matches!(limit.check(), Err(Error::NeedsReset)));
    }
}
