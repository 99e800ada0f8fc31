//! `arm-push`: push a box across a table to a goal with a position-controlled gripper (FetchPush-like).
//!
//! # Description
//!
//! A box rests on a table; a gripper hovers above it. The agent moves the
//! gripper with Cartesian position deltas and has to push the box until its
//! centre lies within 5 cm of a goal marked on the table. The task follows
//! Gymnasium-Robotics' FetchPush-v4 (same action and observation layout,
//! thresholds and episode length) with the 7-joint arm replaced by its end
//! effector: a kinematic block the size of two closed fingers, driven along a
//! straight line to its commanded position every control step.
//!
//! # Action Space
//!
//! `Box(-1, 1, (4,))`:
//!
//! | index | action | unit at ±1 |
//! |---|---|---|
//! | 0, 1, 2 | gripper displacement along x, y, z | `max_gripper_step` (0.05 m) per step |
//! | 3 | open (> 0) / close (< 0) the fingers | `max_finger_step` (0.01 m) per step |
//!
//! The gripper stays inside the workspace above the table top (clamped). The
//! finger channel is cosmetic in this task: the opening is simulated and
//! observed, but contact always uses the closed-finger block, so the box is
//! pushed, never grasped. Non-finite components are an
//! `Error::NonFiniteAction`; out-of-range components are clipped
//! (`clip_actions = true`, the default) or rejected with
//! `Error::ActionOutOfBounds`.
//!
//! # Observation Space
//!
//! A flat `Box(-inf, inf, (31,))`, `[observation (25) | achieved_goal (3) |
//! desired_goal (3)]`, laid out as FetchPush's dictionary (see
//! [`crate::arm::index`] and [`crate::arm::ArmObs`]). World frame, z up,
//! metres; the table top is the plane `z = table_height` centred on `(0, 0)`.
//! Velocities are multiplied by the control step (0.04 s), as in FetchPush.
//!
//! | index | observation |
//! |---|---|
//! | 0–2 | gripper centre |
//! | 3–5 | box centre |
//! | 6–8 | box centre − gripper centre |
//! | 9–10 | finger openings |
//! | 11–13 | box orientation, XYZ Euler angles (rad) |
//! | 14–16 | box linear velocity relative to the gripper × dt |
//! | 17–19 | box angular velocity × dt |
//! | 20–22 | gripper velocity × dt |
//! | 23–24 | finger opening speeds × dt |
//! | 25–27 | achieved goal: box centre |
//! | 28–30 | desired goal |
//!
//! # Rewards
//!
//! Sparse: `0` when the box centre is closer than `distance_threshold`
//! (0.05 m) to the goal, `−1` otherwise. [`shoal_rl_core::GoalEnv::compute_reward`]
//! computes the same from any pair of goals (pure, so hindsight replay can
//! relabel). `info` holds `"is_success"` (1.0 / 0.0) and `"distance"` (m).
//!
//! # Starting State
//!
//! The gripper starts 0.1 m above the table centre. The box rests upright,
//! axis-aligned, at a uniform point within ±`object_range` (0.15 m) of the
//! gripper in x and y, at least `min_object_gripper_distance` (0.1 m) from
//! it. The goal is at box-centre height at a uniform point within
//! ±`goal_range` (0.15 m) of the gripper, farther than `distance_threshold`
//! (and than `min_goal_distance`, when set) from the box, so no episode
//! starts solved. [`ArmPushConfig::far`] is the long-horizon variant: goals
//! 0.4–0.7 m from the box, a 1.2 m square table, 200 steps. Both are drawn from the
//! environment's generator: `reset(Some(seed))` gives a bit-identical
//! episode, `reset(None)` continues the stream (seed 0 if never seeded);
//! the physics world is rebuilt on every reset. (FetchPush does not reject
//! goals that start solved; about 8% of its goals do, which is most of its
//! random-policy success rate.)
//!
//! # Episode End
//!
//! * Termination: the box reaches the goal, when `terminate_on_success`
//!   (default true); that step has reward 0 and `terminated = true`.
//! * Truncation: `max_episode_steps` (50) control steps.
//!
//! Stepping after either end is `Error::NeedsReset`.
//!
//! # Arguments
//!
//! [`ArmPushConfig`]; the shared knobs are in its `arm` field
//! ([`crate::arm::ArmConfig`]).
//!
//! | field | type | default | unit |
//! |---|---|---|---|
//! | `arm.max_episode_steps` | usize | 50 | steps |
//! | `arm.distance_threshold` | f32 | 0.05 | m |
//! | `arm.terminate_on_success` | bool | true | |
//! | `arm.clip_actions` | bool | true | |
//! | `arm.max_gripper_step` | f32 | 0.05 | m / step |
//! | `arm.control_dt` | f32 | 0.04 | s |
//! | `arm.substeps` | usize | 4 | physics steps / control step |
//! | `arm.table_half_extents` | [f32; 2] | [0.25, 0.35] | m |
//! | `box_half_size` | f32 | 0.025 | m |
//! | `box_mass` | f32 | 1.0 | kg |
//! | `box_friction` | f32 | 0.5 | |
//! | `object_range` | f32 | 0.15 | m |
//! | `goal_range` | f32 | 0.15 | m |
//! | `min_object_gripper_distance` | f32 | 0.1 | m |
//! | `min_goal_distance` | f32 | 0.0 | m |
//!
//! **Physics.** FetchPush integrates 20 MuJoCo substeps of 2 ms per control
//! step. Here one control step is `substeps` = 4 rapier steps of 10 ms (the
//! same 0.04 s): at full speed the gripper moves 12.5 mm per physics step, a
//! quarter of the box width. Pushes at full speed then move the box without
//! tipping or lifting it (over 100 scripted episodes the box never tilted
//! more than 0.01 rad), and one core runs ≈ 45,000–55,000 env steps/s
//! (`benches/push_step.rs`), well above the 20,000 target; 2 substeps were
//! also stable, so the default keeps a 2× margin in both directions.
//! rapier's tolerances are scaled to the 5 cm scene (`length_unit` 0.1): at
//! the default metre scale, contacts recycled from a few centimetres earlier
//! made a sideways push lift and tip the box. The kinematic gripper stops on
//! top of the box instead of pressing it into the table (which would launch
//! it), as a real arm would be stopped by the contact.
//!
//! # Version History
//!
//! * v1: first version (rapier3d 0.36).
//!
//! # Example
//!
//! ```
//! use shoal_rl_core::{Env, GoalEnv};
//! use shoal_rl_env::{ArmPush, ArmPushConfig, scripted_push_action};
//!
//! let config = ArmPushConfig::default();
//! let mut env = ArmPush::new(config.clone()).unwrap();
//! let mut obs = env.reset(Some(3));
//! loop {
//!     let step = env.step(&scripted_push_action(&obs, &config)).unwrap();
//!     let (_, achieved, desired) = env.split_obs(&step.obs);
//!     assert_eq!(step.reward, env.compute_reward(achieved, desired));
//!     if step.done() {
//!         break;
//!     }
//!     obs = step.obs;
//! }
//! ```

use rand::rngs::StdRng;
use rapier3d::prelude::*;
use serde::{Deserialize, Serialize};
use shoal_rl_core::{Error, Result};

use crate::arm::{
    ArmConfig, ArmCore, ArmObs, ArmScene, Layout, LineUp, ObjectShape, arm_builder_methods,
    check_positive, drive_along, impl_arm_env, line_up, sample_rect, sample_rect_away_from,
};

/// Settings of [`ArmPush`] (see the module docs for the table of defaults).
///
/// ```
/// use shoal_rl_env::ArmPushConfig;
/// let config = ArmPushConfig::default().terminate_on_success(false).box_friction(0.8);
/// assert!(!config.arm.terminate_on_success);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ArmPushConfig {
    /// Episode, action, physics, table and gripper settings.
    pub arm: ArmConfig,
    /// Half the edge length (m) of the cubic box. Default 0.025 m.
    pub box_half_size: f32,
    /// Mass (kg) of the box. Default 1.0 kg.
    pub box_mass: f32,
    /// Friction coefficient of the box (averaged with the table's). Default 0.5.
    pub box_friction: f32,
    /// The box starts within ± this (m) of the gripper in x and y. Default 0.15 m.
    pub object_range: f32,
    /// The goal lies within ± this (m) of the gripper start in x and y. Default 0.15 m.
    pub goal_range: f32,
    /// Least horizontal distance (m) between box and gripper at the start.
    /// Default 0.1 m.
    pub min_object_gripper_distance: f32,
    /// Least distance (m) between box and goal at the start, at most
    /// `goal_range`; `distance_threshold` when smaller. Default 0: any goal
    /// not already reached. [`ArmPushConfig::far`] sets 0.4 m.
    pub min_goal_distance: f32,
}

impl Default for ArmPushConfig {
    fn default() -> Self {
        ArmPushConfig {
            arm: ArmConfig::default(),
            box_half_size: 0.025,
            box_mass: 1.0,
            box_friction: 0.5,
            object_range: 0.15,
            goal_range: 0.15,
            min_object_gripper_distance: 0.1,
            min_goal_distance: 0.0,
        }
    }
}

impl ArmPushConfig {
    arm_builder_methods!();
    builder_methods! {
        /// Sets [`ArmPushConfig::box_half_size`] (m).
        box_half_size: f32,
        /// Sets [`ArmPushConfig::box_mass`] (kg).
        box_mass: f32,
        /// Sets [`ArmPushConfig::box_friction`].
        box_friction: f32,
        /// Sets [`ArmPushConfig::object_range`] (m).
        object_range: f32,
        /// Sets [`ArmPushConfig::goal_range`] (m).
        goal_range: f32,
        /// Sets [`ArmPushConfig::min_object_gripper_distance`] (m).
        min_object_gripper_distance: f32,
        /// Sets [`ArmPushConfig::min_goal_distance`] (m).
        min_goal_distance: f32,
    }

    /// The long-horizon push: goals 0.4–0.7 m from the box (2–3× the
    /// default's distances, on a 1.2 m square table), 200 steps an episode.
    /// A flat policy must keep pushing along one line for 20–40 steps,
    /// where the default task needs 5–15.
    ///
    /// ```
    /// use shoal_rl_env::ArmPushConfig;
    /// let far = ArmPushConfig::far();
    /// assert_eq!(far.arm.max_episode_steps, 200);
    /// assert!(far.validate().is_ok());
    /// ```
    pub fn far() -> Self {
        ArmPushConfig {
            arm: ArmConfig::default()
                .max_episode_steps(200)
                .table_half_extents([0.6, 0.6]),
            goal_range: 0.5,
            min_goal_distance: 0.4,
            ..ArmPushConfig::default()
        }
    }

    /// Checks that every value is usable, naming the first that is not.
    pub fn validate(&self) -> Result<()> {
        self.arm.validate()?;
        check_positive("box_half_size", self.box_half_size)?;
        check_positive("box_mass", self.box_mass)?;
        check_positive("object_range", self.object_range)?;
        check_positive("goal_range", self.goal_range)?;
        if !(self.box_friction.is_finite() && self.box_friction >= 0.0) {
            return Err(Error::Config(format!(
                "box_friction must be ≥ 0, got {}",
                self.box_friction
            )));
        }
        if !(self.min_object_gripper_distance.is_finite()
            && self.min_object_gripper_distance >= 0.0
            && self.min_object_gripper_distance <= self.object_range)
        {
            return Err(Error::Config(format!(
                "min_object_gripper_distance must lie in [0, object_range = {}], got {}",
                self.object_range, self.min_object_gripper_distance
            )));
        }
        if !(self.min_goal_distance.is_finite()
            && self.min_goal_distance >= 0.0
            && self.min_goal_distance <= self.goal_range)
        {
            return Err(Error::Config(format!(
                "min_goal_distance must lie in [0, goal_range = {}], got {}",
                self.goal_range, self.min_goal_distance
            )));
        }
        if self.goal_range < self.arm.distance_threshold {
            return Err(Error::Config(format!(
                "goal_range ({}) must be at least distance_threshold ({}) so that unsolved goals exist",
                self.goal_range, self.arm.distance_threshold
            )));
        }
        let [sx, sy, _] = self.arm.gripper_start;
        let [hx, hy] = self.arm.table_half_extents;
        let reach = self.object_range.max(self.goal_range) + self.box_half_size;
        if sx.abs() + reach > hx || sy.abs() + reach > hy {
            return Err(Error::Config(format!(
                "boxes and goals within {} m of the gripper start {:?} do not fit on the table",
                self.object_range.max(self.goal_range),
                self.arm.gripper_start
            )));
        }
        Ok(())
    }
}

/// The arm-push task (`arm-push`); see the module docs.
pub struct ArmPush {
    config: ArmPushConfig,
    core: ArmCore,
}

impl ArmPush {
    /// Builds the task after validating `config`.
    pub fn new(config: ArmPushConfig) -> Result<Self> {
        config.validate()?;
        let core = ArmCore::new(config.arm.clone());
        Ok(ArmPush { config, core })
    }

    /// The settings this task was built with.
    pub fn config(&self) -> &ArmPushConfig {
        &self.config
    }

    fn build_layout(config: &ArmPushConfig, scene: &mut ArmScene, rng: &mut StdRng) -> Layout {
        let [sx, sy, _] = config.arm.gripper_start;
        let gripper = [sx, sy];
        let object = sample_rect_away_from(
            rng,
            gripper,
            [config.object_range; 2],
            gripper,
            config.min_object_gripper_distance,
        );
        let z = config.arm.table_height + config.box_half_size;
        // Strictly farther than the threshold: no episode starts solved. A
        // goal square's far corner is at least goal_range · √2 from any box,
        // so a least distance up to goal_range is always met.
        let least = config.arm.distance_threshold.max(config.min_goal_distance);
        let goal = loop {
            let goal = sample_rect(rng, gripper, [config.goal_range; 2]);
            if crate::arm::goal_distance(&goal, &object) > least {
                break goal;
            }
        };
        let half = config.box_half_size;
        let object = scene.add_dynamic(
            RigidBodyBuilder::dynamic().translation(Vector::new(object[0], object[1], z)),
            ColliderBuilder::cuboid(half, half, half)
                .mass(config.box_mass)
                .friction(config.box_friction),
        );
        Layout {
            object,
            goal: Vector::new(goal[0], goal[1], z),
        }
    }
}

impl Default for ArmPush {
    fn default() -> Self {
        ArmPush::new(ArmPushConfig::default()).expect("the default config is valid")
    }
}

impl_arm_env!(ArmPush);

/// A scripted pusher: it lifts the gripper clear of the box, carries it to the
/// side of the box opposite the goal, lowers it to the table and pushes the
/// box along the box-to-goal line, slowing down as the box nears the goal and
/// starting over whenever the box slips off the line.
///
/// An observation of the wrong length gives the zero action.
pub fn scripted_push_action(obs: &[f32], config: &ArmPushConfig) -> [f32; 4] {
    let Some(view) = ArmObs::new(obs) else {
        return [0.0; 4];
    };
    let shape = ObjectShape::Box {
        half: config.box_half_size,
        yaw: view.object_euler()[2],
    };
    match line_up(view, &config.arm, shape) {
        LineUp::Travel(action) => action,
        LineUp::Ready {
            direction,
            distance,
            lateral,
        } => {
            // Step in proportion to the distance left so the box, which slides
            // on after the gripper stops, does not overshoot.
            let step = (0.6 * distance / config.arm.max_gripper_step).min(1.0);
            drive_along(&config.arm, direction, step, lateral)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arm::testutil::{self, random_policy, rollout, solved};
    use shoal_rl_core::{Env, GoalEnv};

    testutil::arm_task_contract_tests!(ArmPush, ArmPushConfig, scripted_push_action);

    #[test]
    fn compute_reward_follows_the_distance_threshold() {
        testutil::check_compute_reward(&env(ArmPushConfig::default().distance_threshold(0.1)), 0.1);
    }

    #[test]
    fn reaching_the_goal_terminates_with_reward_zero() {
        let config = ArmPushConfig::default();
        let mut env = env(config.clone());
        let (_, steps) = rollout(&mut env, 1, scripted(&config));
        let (last, before) = steps.split_last().unwrap();
        assert!(last.terminated && last.reward == 0.0, "{last:?}");
        assert_eq!(last.info.get("is_success"), Some(1.0));
        assert!(before.iter().all(|s| s.reward == -1.0 && !s.terminated));
        assert!(steps.len() < config.arm.max_episode_steps);
    }

    #[test]
    fn without_terminate_on_success_the_episode_runs_to_the_time_limit() {
        let config = ArmPushConfig::default().terminate_on_success(false);
        let mut env = env(config.clone());
        let (_, steps) = rollout(&mut env, 1, scripted(&config));
        assert_eq!(steps.len(), 50);
        assert!(steps.iter().all(|s| !s.terminated));
        assert!(steps.last().unwrap().truncated);
        assert!(steps.iter().any(|s| s.reward == 0.0));
    }

    #[test]
    fn random_actions_run_to_the_time_limit_with_finite_state() {
        let mut env = ArmPush::default();
        let mut to_the_limit = 0;
        for seed in 0..5 {
            let (_, steps) = rollout(&mut env, seed, random_policy(seed));
            assert!(steps.iter().all(|s| s.obs.iter().all(|v| v.is_finite())));
            let (last, before) = steps.split_last().unwrap();
            assert!(before.iter().all(|s| !s.done()), "seed {seed} ended early");
            // Either the time limit (50 steps, truncated) or a success (terminated).
            assert_eq!(last.truncated, steps.len() == 50, "seed {seed}: {last:?}");
            assert_eq!(last.terminated, solved(&steps), "seed {seed}: {last:?}");
            assert!(steps.len() <= 50 && last.terminated != last.truncated);
            to_the_limit += usize::from(last.truncated);
        }
        // Random actions solve about 8% of FetchPush episodes.
        assert!(
            to_the_limit >= 4,
            "{to_the_limit} of 5 reached the time limit"
        );
    }

    #[test]
    fn starts_keep_box_away_from_gripper_and_goal() {
        let config = ArmPushConfig::default();
        let mut env = env(config.clone());
        for seed in 0..200 {
            let obs = env.reset(Some(seed));
            let (_, achieved, desired) = env.split_obs(&obs);
            assert!(crate::arm::goal_distance(achieved, desired) > 0.05);
            let horizontal = obs[6].hypot(obs[7]);
            assert!(
                horizontal >= 0.1 - 1e-6,
                "seed {seed}: box {horizontal} m from gripper"
            );
            assert!(achieved[0].abs() <= 0.15 && achieved[1].abs() <= 0.15);
            assert!((desired[2] - (config.arm.table_height + config.box_half_size)).abs() < 1e-6);
        }
    }

    #[test]
    fn scripted_pusher_solves_most_seeded_episodes() {
        let config = ArmPushConfig::default();
        let mut env = env(config.clone());
        let solved = (0..50)
            .filter(|&seed| solved(&rollout(&mut env, seed, scripted(&config)).1))
            .count();
        assert!(solved >= 40, "scripted pusher solved only {solved} of 50");
    }

    #[test]
    fn far_goals_start_far_and_the_scripted_pusher_still_reaches_them() {
        let config = ArmPushConfig::far();
        let mut env = env(config.clone());
        let mut solved_count = 0;
        for seed in 0..30 {
            let first = env.reset(Some(seed));
            let (_, achieved, desired) = env.split_obs(&first);
            let distance = ((achieved[0] - desired[0]).powi(2)
                + (achieved[1] - desired[1]).powi(2)
                + (achieved[2] - desired[2]).powi(2))
            .sqrt();
            // Box within ±0.15 m, goal within ±0.5 m of the start: at most
            // (0.65² + 0.65²)^½ apart.
            assert!((0.4..=0.92).contains(&distance), "seed {seed}: {distance}");
            let (_, steps) = rollout(&mut env, seed, scripted(&config));
            if solved(&steps) {
                solved_count += 1;
            }
        }
        assert!(
            solved_count >= 27,
            "scripted pusher solved {solved_count} of 30 far goals"
        );
    }

    #[test]
    fn far_episodes_are_seeded() {
        let config = ArmPushConfig::far();
        testutil::check_seeded_determinism(&mut env(config.clone()), scripted(&config));
        let err = ArmPushConfig::far()
            .min_goal_distance(0.6)
            .validate()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid configuration: min_goal_distance must lie in [0, goal_range = 0.5], got 0.6"
        );
    }

    #[test]
    fn scripted_pusher_beats_random_actions() {
        let config = ArmPushConfig::default();
        let mut env = env(config.clone());
        let random = (100..150)
            .filter(|&seed| solved(&rollout(&mut env, seed, random_policy(seed)).1))
            .count();
        let pushed = (100..150)
            .filter(|&seed| solved(&rollout(&mut env, seed, scripted(&config)).1))
            .count();
        assert!(
            pushed >= random + 30,
            "scripted {pushed} vs random {random} of 50"
        );
    }

    #[test]
    fn invalid_configs_are_rejected() {
        let bad = [
            ArmPushConfig::default().box_half_size(0.0),
            ArmPushConfig::default().object_range(0.05),
            ArmPushConfig::default().goal_range(0.01),
            ArmPushConfig::default().object_range(0.3),
            ArmPushConfig::default().max_episode_steps(0),
            ArmPushConfig::default().box_friction(f32::NAN),
        ];
        for config in bad {
            assert!(
                matches!(ArmPush::new(config.clone()), Err(Error::Config(_))),
                "{config:?}"
            );
        }
    }

    #[test]
    fn envs_can_move_to_worker_threads() {
        fn assert_send<T: Send + 'static>() {}
        assert_send::<ArmPush>();
        assert_send::<crate::BallToNet>();
    }

    #[test]
    fn scripted_action_of_a_malformed_observation_is_zero() {
        assert_eq!(
            scripted_push_action(&[0.0; 5], &ArmPushConfig::default()),
            [0.0; 4]
        );
    }
}
