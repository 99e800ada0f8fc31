//! Small analytic environments for fast learning tests: [`PointReach`] (dense reward) and [`PointGoal`] (sparse, goal-conditioned).
//!
//! Neither simulates physics; a step costs a few arithmetic operations, so an
//! algorithm's smoke test can train on thousands of episodes in seconds.
//!
//! # `point-reach` ([`PointReach`])
//!
//! * **Description**: a point in the box `[-1, 1]^dim` must move to a target
//!   in the same box.
//! * **Action Space**: `Box(-1, 1, (dim,))`, a velocity: the point moves by
//!   `step_size · a` per step and is then clamped to the box. Out-of-range
//!   components are clipped when `clip_actions` (default) and an error
//!   otherwise; non-finite components are always an error.
//! * **Observation Space**: `Box(-1, 1, (2·dim,))`: `[position | target]`.
//! * **Rewards**: dense, `−|position − target|` (Euclidean distance after the
//!   move). `info` holds `"distance"`.
//! * **Starting State**: position and target uniform in the box, from the
//!   environment's generator.
//! * **Episode End**: never terminated; truncated after `max_episode_steps`
//!   (20). In 1-D a random policy returns about −14 and the greedy one
//!   (straight at the target) about −1.2.
//! * **Arguments**: [`PointReachConfig`].
//!
//! # `point-goal` ([`PointGoal`])
//!
//! * **Description**: a 2-D point with a little inertia must reach a goal in
//!   the arena `[-1, 1]²`; the goal-conditioned counterpart of the arm tasks,
//!   for HER, DDPG and HAC tests.
//! * **Action Space**: `Box(-1, 1, (2,))`, a commanded velocity: the velocity
//!   becomes `inertia · v + (1 − inertia) · max_speed · a`, the point moves
//!   by it and stops at the arena walls.
//! * **Observation Space**: `Box((8,))` laid out as GoalEnv's
//!   `[observation | achieved_goal | desired_goal]`:
//!   `[x, y, vx, vy | x, y | goal x, goal y]`; positions lie in `[-1, 1]`,
//!   velocities in `[−max_speed, max_speed]`.
//! * **Rewards**: sparse, `0` when the point is closer than
//!   `distance_threshold` (0.05) to the goal and `−1` otherwise;
//!   [`GoalEnv::compute_reward`] is that pure function of the two goals.
//!   `info` holds `"is_success"` (0/1) and `"distance"`.
//! * **Starting State**: at rest, position uniform in the arena; goal
//!   uniform in the arena and at least `2 · distance_threshold` away.
//! * **Episode End**: terminated on success when `terminate_on_success`
//!   (default true); truncated after `max_episode_steps` (50), as by
//!   Gymnasium's `TimeLimit` (a success on the last step is both).
//! * **Arguments**: [`PointGoalConfig`].
//!
//! Both: `reset(Some(seed))` re-seeds, so the same seed and actions give a
//! bit-identical episode; a [`TimeLimit`] keeps the step count, and stepping
//! after the end is `Error::NeedsReset`.
//!
//! # Version History
//!
//! * v1: first version of both.
//!
//! ```
//! use shoal_rl_core::{Env, GoalEnv};
//! use shoal_rl_env::{PointGoal, PointGoalConfig};
//!
//! let mut env = PointGoal::new(PointGoalConfig::default()).unwrap();
//! let obs = env.reset(Some(0));
//! let (_, achieved, desired) = env.split_obs(&obs);
//! assert_eq!(env.compute_reward(achieved, desired), -1.0);
//! assert_eq!(env.compute_reward(desired, desired), 0.0);
//! ```

use rand::RngExt;
use rand::rngs::StdRng;
use serde::{Deserialize, Serialize};
use shoal_rl_core::{
    Env, Error, GoalEnv, Info, Result, Space, Step, TimeLimit, reseed, rng_from_seed,
};

use crate::limits::{MAX_BODY_PARTS, MAX_EPISODE_STEPS, check_count};

fn check_positive(env: &str, name: &str, value: f32) -> Result<()> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(Error::Config(format!(
            "{env}: {name} must be positive and finite, got {value}"
        )))
    }
}

fn distance(a: &[f32], b: &[f32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y) * (x - y))
        .sum::<f32>()
        .sqrt()
}

/// Settings of [`PointReach`].
///
/// ```
/// use shoal_rl_env::PointReachConfig;
/// assert!(PointReachConfig::default().dim(2).validate().is_ok());
/// assert!(PointReachConfig::default().dim(0).validate().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PointReachConfig {
    /// Dimension of the point's space (1 or 2 are the usual choices). Default 1.
    pub dim: usize,
    /// Distance moved per step at action ±1, box units. Default 0.2.
    pub step_size: f32,
    /// Steps per episode. Default 20.
    pub max_episode_steps: usize,
    /// Clip out-of-range actions (true) or reject them (false). Default true.
    pub clip_actions: bool,
}

impl Default for PointReachConfig {
    fn default() -> Self {
        PointReachConfig {
            dim: 1,
            step_size: 0.2,
            max_episode_steps: 20,
            clip_actions: true,
        }
    }
}

impl PointReachConfig {
    builder_methods! {
        /// Sets [`PointReachConfig::dim`].
        dim: usize,
        /// Sets [`PointReachConfig::step_size`].
        step_size: f32,
        /// Sets [`PointReachConfig::max_episode_steps`].
        max_episode_steps: usize,
        /// Sets [`PointReachConfig::clip_actions`].
        clip_actions: bool,
    }

    /// Checks the settings, naming the first problem.
    pub fn validate(&self) -> Result<()> {
        check_count("point-reach: dim", self.dim, 1, MAX_BODY_PARTS)?;
        check_count(
            "point-reach: max_episode_steps",
            self.max_episode_steps,
            1,
            MAX_EPISODE_STEPS,
        )?;
        check_positive("point-reach", "step_size", self.step_size)
    }
}

/// Move a point to a target with a dense distance reward; see the module docs.
#[derive(Debug)]
pub struct PointReach {
    cfg: PointReachConfig,
    observation_space: Space,
    action_space: Space,
    position: Vec<f32>,
    target: Vec<f32>,
    rng: StdRng,
    limit: TimeLimit,
}

impl PointReach {
    /// A point-reach task with the given settings (validated).
    pub fn new(cfg: PointReachConfig) -> Result<Self> {
        cfg.validate()?;
        Ok(PointReach {
            observation_space: Space::uniform(2 * cfg.dim, -1.0, 1.0),
            action_space: Space::uniform(cfg.dim, -1.0, 1.0),
            position: vec![0.0; cfg.dim],
            target: vec![0.0; cfg.dim],
            rng: rng_from_seed(0),
            limit: TimeLimit::new(cfg.max_episode_steps),
            cfg,
        })
    }

    /// The settings.
    pub fn config(&self) -> &PointReachConfig {
        &self.cfg
    }

    fn observe(&self) -> Vec<f32> {
        [self.position.as_slice(), &self.target].concat()
    }
}

impl Env for PointReach {
    fn observation_space(&self) -> &Space {
        &self.observation_space
    }

    fn action_space(&self) -> &Space {
        &self.action_space
    }

    fn reset(&mut self, seed: Option<u64>) -> Vec<f32> {
        reseed(&mut self.rng, seed);
        for value in self.position.iter_mut().chain(self.target.iter_mut()) {
            *value = self.rng.random_range(-1.0..=1.0);
        }
        self.limit.start();
        self.observe()
    }

    fn step(&mut self, action: &[f32]) -> Result<Step> {
        self.limit.check()?;
        let action = self.action_space.validate(action, self.cfg.clip_actions)?;
        for (x, a) in self.position.iter_mut().zip(action.iter()) {
            *x = (*x + self.cfg.step_size * a).clamp(-1.0, 1.0);
        }
        let distance = distance(&self.position, &self.target);
        let step = Step::new(self.observe(), -distance);
        Ok(self.limit.finish(Step {
            info: Info::new().with("distance", distance as f64),
            ..step
        }))
    }
}

/// Settings of [`PointGoal`].
///
/// ```
/// use shoal_rl_env::PointGoalConfig;
/// let config = PointGoalConfig::default().terminate_on_success(false);
/// assert!(config.validate().is_ok());
/// assert!(config.inertia(1.0).validate().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PointGoalConfig {
    /// The goal counts as reached closer than this, arena units. Default 0.05.
    pub distance_threshold: f32,
    /// Speed at action ±1, arena units per step. Default 0.1.
    pub max_speed: f32,
    /// Fraction of the velocity kept from one step to the next, in `[0, 1)`.
    /// Default 0.5.
    pub inertia: f32,
    /// Steps before truncation. Default 50.
    pub max_episode_steps: usize,
    /// End the episode (`terminated = true`) when the goal is reached. Default true.
    pub terminate_on_success: bool,
    /// Clip out-of-range actions (true) or reject them (false). Default true.
    pub clip_actions: bool,
}

impl Default for PointGoalConfig {
    fn default() -> Self {
        PointGoalConfig {
            distance_threshold: 0.05,
            max_speed: 0.1,
            inertia: 0.5,
            max_episode_steps: 50,
            terminate_on_success: true,
            clip_actions: true,
        }
    }
}

impl PointGoalConfig {
    builder_methods! {
        /// Sets [`PointGoalConfig::distance_threshold`].
        distance_threshold: f32,
        /// Sets [`PointGoalConfig::max_speed`].
        max_speed: f32,
        /// Sets [`PointGoalConfig::inertia`].
        inertia: f32,
        /// Sets [`PointGoalConfig::max_episode_steps`].
        max_episode_steps: usize,
        /// Sets [`PointGoalConfig::terminate_on_success`].
        terminate_on_success: bool,
        /// Sets [`PointGoalConfig::clip_actions`].
        clip_actions: bool,
    }

    /// Checks the settings, naming the first problem.
    pub fn validate(&self) -> Result<()> {
        check_positive("point-goal", "distance_threshold", self.distance_threshold)?;
        check_positive("point-goal", "max_speed", self.max_speed)?;
        if !(0.0..1.0).contains(&self.inertia) {
            return Err(Error::Config(format!(
                "point-goal: inertia must be in [0, 1), got {}",
                self.inertia
            )));
        }
        // Start and goal must be able to lie 2·threshold apart in the arena.
        if self.distance_threshold >= 0.5 {
            return Err(Error::Config(format!(
                "point-goal: distance_threshold must be below 0.5, got {}",
                self.distance_threshold
            )));
        }
        check_count(
            "point-goal: max_episode_steps",
            self.max_episode_steps,
            1,
            MAX_EPISODE_STEPS,
        )
    }
}

/// Reach a goal with a sparse −1/0 reward; see the module docs.
#[derive(Debug)]
pub struct PointGoal {
    cfg: PointGoalConfig,
    observation_space: Space,
    action_space: Space,
    position: [f32; 2],
    velocity: [f32; 2],
    goal: [f32; 2],
    rng: StdRng,
    limit: TimeLimit,
}

impl PointGoal {
    /// A point-goal task with the given settings (validated).
    pub fn new(cfg: PointGoalConfig) -> Result<Self> {
        cfg.validate()?;
        let v = cfg.max_speed;
        let observation_space = Space::new(
            vec![-1.0, -1.0, -v, -v, -1.0, -1.0, -1.0, -1.0],
            vec![1.0, 1.0, v, v, 1.0, 1.0, 1.0, 1.0],
        );
        Ok(PointGoal {
            observation_space,
            action_space: Space::uniform(2, -1.0, 1.0),
            position: [0.0; 2],
            velocity: [0.0; 2],
            goal: [0.0; 2],
            rng: rng_from_seed(0),
            limit: TimeLimit::new(cfg.max_episode_steps),
            cfg,
        })
    }

    /// The settings.
    pub fn config(&self) -> &PointGoalConfig {
        &self.cfg
    }

    fn observe(&self) -> Vec<f32> {
        let ([x, y], [vx, vy], [gx, gy]) = (self.position, self.velocity, self.goal);
        vec![x, y, vx, vy, x, y, gx, gy]
    }

    fn random_point(&mut self) -> [f32; 2] {
        [
            self.rng.random_range(-1.0..=1.0),
            self.rng.random_range(-1.0..=1.0),
        ]
    }
}

impl Env for PointGoal {
    fn observation_space(&self) -> &Space {
        &self.observation_space
    }

    fn action_space(&self) -> &Space {
        &self.action_space
    }

    fn reset(&mut self, seed: Option<u64>) -> Vec<f32> {
        reseed(&mut self.rng, seed);
        self.position = self.random_point();
        self.velocity = [0.0; 2];
        // Rejection sampling ends quickly: validate() keeps the excluded
        // disc far smaller than the arena.
        loop {
            self.goal = self.random_point();
            if distance(&self.position, &self.goal) >= 2.0 * self.cfg.distance_threshold {
                break;
            }
        }
        self.limit.start();
        self.observe()
    }

    fn step(&mut self, action: &[f32]) -> Result<Step> {
        self.limit.check()?;
        let action = self.action_space.validate(action, self.cfg.clip_actions)?;
        let (inertia, max_speed) = (self.cfg.inertia, self.cfg.max_speed);
        for axis in 0..2 {
            let velocity =
                inertia * self.velocity[axis] + (1.0 - inertia) * max_speed * action[axis];
            let moved = self.position[axis] + velocity;
            // A wall stops the point along that axis.
            let clamped = moved.clamp(-1.0, 1.0);
            self.velocity[axis] = if clamped == moved { velocity } else { 0.0 };
            self.position[axis] = clamped;
        }
        let success = self.is_success(&self.position, &self.goal);
        Ok(self.limit.finish(Step {
            obs: self.observe(),
            reward: self.compute_reward(&self.position, &self.goal),
            terminated: success && self.cfg.terminate_on_success,
            truncated: false,
            info: Info::new()
                .with("is_success", if success { 1.0 } else { 0.0 })
                .with("distance", distance(&self.position, &self.goal) as f64),
        }))
    }
}

impl GoalEnv for PointGoal {
    fn goal_dim(&self) -> usize {
        2
    }

    /// `0` when `achieved` is within `distance_threshold` of `desired`, else `−1`.
    fn is_success(&self, achieved: &[f32], desired: &[f32]) -> bool {
        distance(achieved, desired) < self.cfg.distance_threshold
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{check_env, check_goal_env};

    #[test]
    fn point_reach_passes_the_env_checker_in_1d_and_2d() {
        check_env(|| PointReach::new(PointReachConfig::default()).unwrap()).unwrap();
        check_env(|| PointReach::new(PointReachConfig::default().dim(2)).unwrap()).unwrap();
        check_env(|| PointReach::new(PointReachConfig::default().clip_actions(false)).unwrap())
            .unwrap();
    }

    #[test]
    fn point_goal_passes_the_goal_env_checker() {
        check_goal_env(|| PointGoal::new(PointGoalConfig::default()).unwrap()).unwrap();
        check_goal_env(|| {
            PointGoal::new(PointGoalConfig::default().terminate_on_success(false)).unwrap()
        })
        .unwrap();
    }

    /// The greedy controller: straight at the target, as fast as allowed.
    fn greedy(obs: &[f32], dim: usize, step_size: f32) -> Vec<f32> {
        (0..dim)
            .map(|i| ((obs[dim + i] - obs[i]) / step_size).clamp(-1.0, 1.0))
            .collect()
    }

    fn point_reach_return(
        env: &mut PointReach,
        seed: u64,
        mut policy: impl FnMut(&[f32]) -> Vec<f32>,
    ) -> f32 {
        let mut obs = env.reset(Some(seed));
        let mut total = 0.0;
        loop {
            let step = env.step(&policy(&obs)).unwrap();
            total += step.reward;
            if step.done() {
                return total;
            }
            obs = step.obs;
        }
    }

    #[test]
    fn point_reach_rewards_the_greedy_policy_far_above_a_random_one() {
        let mut env = PointReach::new(PointReachConfig::default()).unwrap();
        let mut rng = rng_from_seed(0);
        let space = Space::uniform(1, -1.0, 1.0);
        let episodes = 200;
        let mut greedy_total = 0.0;
        let mut random_total = 0.0;
        for seed in 0..episodes {
            greedy_total += point_reach_return(&mut env, seed, |obs| greedy(obs, 1, 0.2));
            random_total += point_reach_return(&mut env, seed, |_| space.sample(&mut rng));
        }
        let (greedy_mean, random_mean) = (
            greedy_total / episodes as f32,
            random_total / episodes as f32,
        );
        assert!(greedy_mean > -2.0, "greedy {greedy_mean}");
        assert!(random_mean < -10.0, "random {random_mean}");
    }

    /// A one-parameter-per-input Gaussian policy trained by plain REINFORCE
    /// (gradients by hand): if this learns quickly, any REINFORCE learner can.
    #[test]
    fn point_reach_is_learnable_by_a_linear_reinforce_policy() {
        let mut env = PointReach::new(PointReachConfig::default()).unwrap();
        let mut rng = rng_from_seed(3);
        let sigma = 0.3f32;
        let mut weights = [0.0f32; 2];
        let evaluate = |env: &mut PointReach, weights: [f32; 2]| {
            (0..100u64)
                .map(|seed| {
                    point_reach_return(env, 10_000 + seed, |o| {
                        vec![(weights[0] * o[0] + weights[1] * o[1]).clamp(-1.0, 1.0)]
                    })
                })
                .sum::<f32>()
                / 100.0
        };
        let before = evaluate(&mut env, weights);
        let mut baseline = 0.0f32;
        for episode in 0..2000u64 {
            let mut obs = env.reset(Some(episode));
            let mut grads = Vec::new();
            let mut rewards = Vec::new();
            loop {
                let mean = weights[0] * obs[0] + weights[1] * obs[1];
                // Box–Muller: a standard normal from two uniforms.
                let (u1, u2): (f32, f32) = (rng.random_range(f32::EPSILON..1.0), rng.random());
                let noise = (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos();
                let action = mean + sigma * noise;
                let score = (action - mean) / (sigma * sigma);
                grads.push([score * obs[0], score * obs[1]]);
                let step = env.step(&[action]).unwrap();
                rewards.push(step.reward);
                if step.done() {
                    break;
                }
                obs = step.obs;
            }
            let episode_return: f32 = rewards.iter().sum();
            baseline = 0.95 * baseline + 0.05 * episode_return;
            let advantage = episode_return - baseline;
            for g in &grads {
                weights[0] += 1e-4 * advantage * g[0];
                weights[1] += 1e-4 * advantage * g[1];
            }
        }
        let after = evaluate(&mut env, weights);
        assert!(
            after > before + 5.0 && after > -6.0,
            "return {before} → {after}, weights {weights:?}"
        );
    }

    #[test]
    fn point_goal_reward_is_a_pure_function_of_the_goals() {
        let mut env = PointGoal::new(PointGoalConfig::default()).unwrap();
        let other = PointGoal::new(PointGoalConfig::default()).unwrap();
        env.reset(Some(1));
        let (a, d) = ([0.3, -0.2], [0.33, -0.2]);
        let first = env.compute_reward(&a, &d);
        env.step(&[1.0, 1.0]).unwrap();
        assert_eq!(env.compute_reward(&a, &d), first);
        assert_eq!(other.compute_reward(&a, &d), first);
        assert_eq!(first, 0.0);
        assert_eq!(env.compute_reward(&[0.3, -0.2], &[0.36, -0.2]), -1.0);
        assert_eq!(
            env.compute_rewards(&[0.0, 0.0, 1.0, 1.0], &[0.0, 0.01, 0.0, 0.0]),
            vec![0.0, -1.0]
        );
    }

    fn drive_to_goal(env: &mut PointGoal, seed: u64) -> Vec<Step> {
        let mut obs = env.reset(Some(seed));
        let mut steps = Vec::new();
        loop {
            let (x, y, gx, gy) = (obs[0], obs[1], obs[6], obs[7]);
            let scale = 0.5 / env.config().max_speed;
            let step = env.step(&[(gx - x) * scale, (gy - y) * scale]).unwrap();
            obs = step.obs.clone();
            let done = step.done();
            steps.push(step);
            if done {
                return steps;
            }
        }
    }

    #[test]
    fn point_goal_terminates_on_success_with_reward_zero() {
        let mut env = PointGoal::new(PointGoalConfig::default()).unwrap();
        for seed in 0..20 {
            let steps = drive_to_goal(&mut env, seed);
            let last = steps.last().unwrap();
            assert!(
                last.terminated && !last.truncated,
                "seed {seed} did not reach its goal"
            );
            assert_eq!(last.reward, 0.0);
            assert_eq!(last.info.get("is_success"), Some(1.0));
            assert!(steps[..steps.len() - 1].iter().all(|s| s.reward == -1.0));
            assert!(matches!(env.step(&[0.0, 0.0]), Err(Error::NeedsReset)));
        }
    }

    #[test]
    fn point_goal_keeps_going_after_success_when_told_to() {
        let mut env =
            PointGoal::new(PointGoalConfig::default().terminate_on_success(false)).unwrap();
        let steps = drive_to_goal(&mut env, 4);
        assert_eq!(steps.len(), 50);
        let last = steps.last().unwrap();
        assert!(last.truncated && !last.terminated);
        assert_eq!(
            last.reward, 0.0,
            "the controller holds the point on the goal"
        );
    }

    #[test]
    fn point_goal_stops_at_the_walls() {
        let config = PointGoalConfig::default().terminate_on_success(false);
        let mut env = PointGoal::new(config).unwrap();
        env.reset(Some(0));
        let mut obs = Vec::new();
        for _ in 0..40 {
            obs = env.step(&[1.0, 1.0]).unwrap().obs;
        }
        assert_eq!(&obs[..4], &[1.0, 1.0, 0.0, 0.0]);
    }

    #[test]
    fn invalid_configs_are_rejected() {
        let config_error = |result: Result<()>| match result {
            Err(Error::Config(message)) => message,
            other => panic!("expected a config error, got {other:?}"),
        };
        let reach = |c: PointReachConfig| config_error(PointReach::new(c).map(|_| ()));
        let goal = |c: PointGoalConfig| config_error(PointGoal::new(c).map(|_| ()));
        assert_eq!(
            reach(PointReachConfig::default().step_size(f32::NAN)),
            "point-reach: step_size must be positive and finite, got NaN"
        );
        assert_eq!(
            reach(PointReachConfig::default().max_episode_steps(0)),
            format!(
                "point-reach: max_episode_steps must be between 1 and {MAX_EPISODE_STEPS}, got 0"
            )
        );
        assert_eq!(
            goal(PointGoalConfig::default().distance_threshold(0.0)),
            "point-goal: distance_threshold must be positive and finite, got 0"
        );
        assert_eq!(
            goal(PointGoalConfig::default().distance_threshold(0.5)),
            "point-goal: distance_threshold must be below 0.5, got 0.5"
        );
        assert_eq!(
            goal(PointGoalConfig::default().inertia(-0.1)),
            "point-goal: inertia must be in [0, 1), got -0.1"
        );
        assert_eq!(
            goal(PointGoalConfig::default().max_speed(-1.0)),
            "point-goal: max_speed must be positive and finite, got -1"
        );
        assert!(PointGoal::new(PointGoalConfig::default().inertia(0.99)).is_ok());
    }
}
