//! `ur5-reacher` ([`Ur5Reacher`]): a UR5 arm turns three joints to goal
//! angles, the jointed task of the HAC paper (Levy et al., 2019).
//!
//! * **Description**: a rapier multibody with the UR5's first three joints —
//!   shoulder pan (about the vertical), shoulder lift and elbow (about the
//!   horizontal axis the pan turns). By default ([`Ur5Arm::Paper`]) it is
//!   the model of the paper's code (`ur5.xml`): the links' masses,
//!   inertias and sideways offsets, no wrist, a joint damping of 10 and a
//!   *velocity servo* on each joint, force = 10·(u − q̇) within ±150 N·m,
//!   so the pan turns at most about 1.6 rad/s and the median goal needs
//!   some 40 actions. [`Ur5Arm::Torque`] is shoal's first arm: torque
//!   motors of 150 N·m and the wrist lumped at the forearm's end, which
//!   reaches a goal in about 10 actions. Gravity pulls the arm down; the
//!   links have no colliders (the task concerns joint angles only). The
//!   goal is a set of three joint angles, reached when every angle is
//!   within `angle_threshold` (10°), following the paper's code.
//! * **Action Space**: `Box(-1, 1, (3,))`: with the paper's arm, servo
//!   speeds as fractions of `max_servo_speed` (3.15, 5, 3.15 rad/s, the
//!   model's control ranges); with the torque arm, torques as fractions of
//!   `max_torque`. Each is held for `control_dt` (30 ms, in `substeps` = 15
//!   physics steps). Out-of-range components are clipped when
//!   `clip_actions` (default), else an error; non-finite components are
//!   always an error.
//! * **Observation Space**: `Box((12,))` laid out as GoalEnv's
//!   `[observation | achieved_goal | desired_goal]`: `[pan, lift, elbow
//!   (rad), their velocities (rad/s, clipped to ±max_observed_speed) | the
//!   three angles | the goal's three angles]`. Angles are observed as the
//!   paper's code observes them, modulo 2π keeping their sign, in
//!   (−2π, 2π): the jump sits a full turn away from the start, not at ±π
//!   inside the goal space, where it would split nearby poses. At
//!   zero angles the arm points straight out along x; a negative lift or
//!   elbow angle raises the link it turns. HAC's subgoals are the first six
//!   components (angles and velocities), as in the paper.
//! * **Rewards**: sparse, `0` when every angle is within `angle_threshold`
//!   of the goal (the difference wrapped to [−π, π)), else `−1`;
//!   [`GoalEnv::compute_reward`] is that pure function of the two goals.
//!   `info` holds `"is_success"` (0/1) and `"angle_error"` (the largest
//!   wrapped difference, rad).
//! * **Starting State**: at rest, the pan uniform in [−π/8, π/8], the lift
//!   and elbow at the paper's 0.0032 and −0.128 rad. The goal's pan is
//!   uniform in [−π, π], its lift in [−π/4, 0] and its elbow in
//!   [−π/4, π/4], as in the paper; with `reject_goals` (default) a goal is
//!   drawn again until its pan is more than π/4 from zero, the elbow more
//!   than 5 cm and the wrist more than 15 cm above the floor (the paper's
//!   `get_next_goal`).
//! * **Episode End**: terminated on success when `terminate_on_success`
//!   (default true); truncated after `max_episode_steps` (600, the paper's).
//! * **Arguments**: [`Ur5ReacherConfig`].
//!
//! [`Ur5Reacher::wrist_position`] gives the forearm's end in the world
//! (forward kinematics read from the simulation);
//! [`Ur5ReacherConfig::gravity_torques`] the torques that hold a pose;
//! [`scripted_reach_action`] a controller with gravity compensation that
//! solves the task.
//!
//! # Version History
//!
//! * v2: the paper's arm (velocity servos, no wrist, the model's inertias
//!   and offsets) and its goal rejection; Python `shoal/UR5Reacher-v1`.
//! * v1: a torque arm with a lumped wrist (now [`Ur5Arm::Torque`]);
//!   Python `shoal/UR5Reacher-v0`.
//!
//! ```
//! use shoal_rl_core::{Env, GoalEnv};
//! use shoal_rl_env::{Ur5Reacher, Ur5ReacherConfig, scripted_reach_action};
//!
//! let config = Ur5ReacherConfig::default();
//! let mut env = Ur5Reacher::new(config.clone()).unwrap();
//! let mut obs = env.reset(Some(3));
//! let mut success = false;
//! for _ in 0..config.max_episode_steps {
//!     let step = env.step(&scripted_reach_action(&config, &obs)).unwrap();
//!     obs = step.obs.clone();
//!     if step.done() {
//!         success = step.info.get("is_success") == Some(1.0);
//!         break;
//!     }
//! }
//! assert!(success, "the controller reaches the goal angles");
//! ```

use std::f32::consts::{FRAC_PI_4, FRAC_PI_8, PI};

use rand::RngExt;
use rand::rngs::StdRng;
use rapier3d::prelude::Vector;
use serde::{Deserialize, Serialize};
use shoal_rl_core::{
    Env, Error, GoalEnv, Info, Result, Space, Step, TimeLimit, reseed, rng_from_seed,
};

use crate::chain::{JointChain, LinkSpec, rod_with_tip, wrap_angle};
use crate::limits::{MAX_EPISODE_STEPS, MAX_SUBSTEPS, check_count};

/// Height of the shoulder above the base (the UR5's d1), m.
pub const UR5_SHOULDER_HEIGHT: f32 = 0.089_159;
/// Upper arm length (the UR5's a2), m.
pub const UR5_UPPER_ARM: f32 = 0.425;
/// Forearm length, elbow to wrist (the UR5's a3), m.
pub const UR5_FOREARM: f32 = 0.392_25;
const SHOULDER_MASS: f32 = 3.7;
const UPPER_ARM_MASS: f32 = 8.393;
const FOREARM_MASS: f32 = 2.275;
/// The three wrist links, 1.219 kg each, lumped at the forearm's end.
const WRIST_MASS: f32 = 3.0 * 1.219;
const GRAVITY: f32 = 9.81;
/// The paper's model (`ur5.xml`): the upper arm's centre of mass from the
/// shoulder and the forearm's from the elbow, m.
const PAPER_UPPER_ARM_COM: f32 = 0.28;
const PAPER_FOREARM_COM: f32 = 0.25;
/// The paper's model: sideways offsets of the upper arm from the shoulder
/// and of the forearm from the upper arm, m.
const PAPER_UPPER_ARM_OFFSET: f32 = 0.135_85;
const PAPER_FOREARM_OFFSET: f32 = -0.1197;

/// Which arm [`Ur5Reacher`] simulates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Ur5Arm {
    /// The paper's model: velocity servos, force = `servo_gain`·(u − q̇)
    /// within ±`max_torque`, the model's masses, inertias and offsets, no wrist.
    Paper,
    /// shoal's first arm: torque motors of ±`max_torque`, the wrist's mass
    /// lumped at the forearm's end.
    Torque,
}

/// Settings of [`Ur5Reacher`]; the defaults are the paper's task and arm.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Ur5ReacherConfig {
    /// Which arm: the paper's servo arm or shoal's first, torque-driven one. Default `paper`.
    pub arm_model: Ur5Arm,
    /// The servo's gain (the paper's arm), N·m·s/rad. Default 10.
    pub servo_gain: f32,
    /// The servo speed at action ±1 of each joint (the paper's arm),
    /// rad/s. Default [3.15, 5, 3.15].
    pub max_servo_speed: [f32; 3],
    /// Largest actuator torque of each joint (pan, lift, elbow), N·m: the
    /// servo's force limit, or the torque at action ±1. Default [150, 150, 150].
    pub max_torque: [f32; 3],
    /// Viscous damping of each joint, N·m·s/rad. Default [10, 10, 10].
    pub joint_damping: [f32; 3],
    /// Draw goals again until they are away from the start and above the
    /// floor, as the paper's code does. Default true.
    pub reject_goals: bool,
    /// A goal angle is reached within this, rad. Default 10° (0.1745).
    pub angle_threshold: f32,
    /// Observed joint velocities are clipped to ±this, rad/s. Default 10.
    pub max_observed_speed: f32,
    /// Duration of one action, s. Default 0.03.
    pub control_dt: f32,
    /// Physics steps per action (each `control_dt / substeps` long). Default 15.
    pub substeps: usize,
    /// Actions per episode. Default 600.
    pub max_episode_steps: usize,
    /// End the episode when the goal is reached. Default true.
    pub terminate_on_success: bool,
    /// Clip out-of-range actions (else they are an error). Default true.
    pub clip_actions: bool,
}

impl Default for Ur5ReacherConfig {
    fn default() -> Self {
        Ur5ReacherConfig {
            arm_model: Ur5Arm::Paper,
            servo_gain: 10.0,
            max_servo_speed: [3.15, 5.0, 3.15],
            max_torque: [150.0; 3],
            joint_damping: [10.0; 3],
            reject_goals: true,
            angle_threshold: 10f32.to_radians(),
            max_observed_speed: 10.0,
            control_dt: 0.03,
            substeps: 15,
            max_episode_steps: 600,
            terminate_on_success: true,
            clip_actions: true,
        }
    }
}

impl Ur5ReacherConfig {
    /// shoal's first arm (v1 of this env): torque motors, a lumped wrist,
    /// joint damping [20, 30, 10], goals drawn without rejection.
    pub fn torque_arm() -> Self {
        Ur5ReacherConfig {
            arm_model: Ur5Arm::Torque,
            joint_damping: [20.0, 30.0, 10.0],
            reject_goals: false,
            ..Ur5ReacherConfig::default()
        }
    }

    builder_methods! {
        /// Sets [`Ur5ReacherConfig::max_episode_steps`].
        max_episode_steps: usize,
        /// Sets [`Ur5ReacherConfig::terminate_on_success`].
        terminate_on_success: bool,
    }

    /// Checks every value; the error names the offending key.
    pub fn validate(&self) -> Result<()> {
        let positive = |name: &str, value: f32| {
            if value.is_finite() && value > 0.0 {
                Ok(())
            } else {
                Err(Error::Config(format!(
                    "ur5-reacher: {name} must be positive and finite, got {value}"
                )))
            }
        };
        for torque in self.max_torque {
            positive("max_torque", torque)?;
        }
        for speed in self.max_servo_speed {
            positive("max_servo_speed", speed)?;
        }
        positive("servo_gain", self.servo_gain)?;
        for damping in self.joint_damping {
            if !(damping.is_finite() && damping >= 0.0) {
                return Err(Error::Config(format!(
                    "ur5-reacher: joint_damping must be finite and non-negative, got {damping}"
                )));
            }
        }
        positive("angle_threshold", self.angle_threshold)?;
        positive("max_observed_speed", self.max_observed_speed)?;
        positive("control_dt", self.control_dt)?;
        check_count("ur5-reacher: substeps", self.substeps, 1, MAX_SUBSTEPS)?;
        check_count(
            "ur5-reacher: max_episode_steps",
            self.max_episode_steps,
            1,
            MAX_EPISODE_STEPS,
        )
    }

    fn links(&self) -> [LinkSpec; 3] {
        match self.arm_model {
            Ur5Arm::Paper => Self::paper_links(),
            Ur5Arm::Torque => Self::torque_links(),
        }
    }

    /// `ur5.xml`'s bodies at zero angles, in the world: each inertia's
    /// axis along the link (the model's z) is the world's x.
    fn paper_links() -> [LinkSpec; 3] {
        let shoulder = Vector::new(0.0, 0.0, UR5_SHOULDER_HEIGHT);
        let lift = shoulder + Vector::new(0.0, PAPER_UPPER_ARM_OFFSET, 0.0);
        let elbow = lift + Vector::new(UR5_UPPER_ARM, PAPER_FOREARM_OFFSET, 0.0);
        [
            LinkSpec {
                axis: Vector::Z,
                joint: shoulder,
                mass: SHOULDER_MASS,
                com: Vector::ZERO,
                inertia: Vector::new(0.010_267_5, 0.010_267_5, 0.006_66),
            },
            LinkSpec {
                axis: Vector::Y,
                joint: lift,
                mass: UPPER_ARM_MASS,
                com: Vector::new(PAPER_UPPER_ARM_COM, 0.0, 0.0),
                inertia: Vector::new(0.015_107_4, 0.226_891, 0.226_891),
            },
            LinkSpec {
                axis: Vector::Y,
                joint: elbow,
                mass: FOREARM_MASS,
                com: Vector::new(PAPER_FOREARM_COM, 0.0, 0.0),
                inertia: Vector::new(0.004_095, 0.049_443_3, 0.049_443_3),
            },
        ]
    }

    /// The torques (pan, lift, elbow; N·m) that hold this arm still at
    /// `angles` against gravity, from the link masses by hand (no simulation).
    pub fn gravity_torques(&self, angles: &[f32]) -> [f32; 3] {
        // Each link's mass and centre of mass from its joint, along it.
        let ((upper_mass, upper_com), (fore_mass, fore_com)) = match self.arm_model {
            Ur5Arm::Paper => (
                (UPPER_ARM_MASS, PAPER_UPPER_ARM_COM),
                (FOREARM_MASS, PAPER_FOREARM_COM),
            ),
            Ur5Arm::Torque => {
                let (upper_mass, upper_com, _) = rod_with_tip(UPPER_ARM_MASS, UR5_UPPER_ARM, 0.0);
                let (fore_mass, fore_com, _) = rod_with_tip(FOREARM_MASS, UR5_FOREARM, WRIST_MASS);
                ((upper_mass, upper_com), (fore_mass, fore_com))
            }
        };
        let (upper, fore) = (angles[1], angles[1] + angles[2]);
        // Gravity turns a link toward positive angles (down) with m·g·c·cos;
        // holding it takes the opposite torque.
        let elbow = GRAVITY * fore_mass * fore_com * fore.cos();
        let lift =
            GRAVITY * (upper_mass * upper_com + fore_mass * UR5_UPPER_ARM) * upper.cos() + elbow;
        [0.0, -lift, -elbow]
    }

    /// Whether the paper's code would keep `goal` (pan, lift, elbow): its
    /// pan more than π/4 from zero, the elbow more than 5 cm and the wrist
    /// more than 15 cm above the floor.
    pub fn goal_is_kept(goal: &[f32]) -> bool {
        let [_, _, elbow, wrist] = ur5_joint_points(goal);
        goal[0].abs() > FRAC_PI_4 && elbow[2] > 0.05 && wrist[2] > 0.15
    }

    fn torque_links() -> [LinkSpec; 3] {
        let shoulder = Vector::new(0.0, 0.0, UR5_SHOULDER_HEIGHT);
        let (upper_mass, upper_com, upper_inertia) =
            rod_with_tip(UPPER_ARM_MASS, UR5_UPPER_ARM, 0.0);
        let (fore_mass, fore_com, fore_inertia) =
            rod_with_tip(FOREARM_MASS, UR5_FOREARM, WRIST_MASS);
        [
            LinkSpec {
                axis: Vector::Z,
                joint: shoulder,
                mass: SHOULDER_MASS,
                com: Vector::ZERO,
                inertia: Vector::new(0.0102, 0.0102, 0.0067),
            },
            LinkSpec {
                axis: Vector::Y,
                joint: shoulder,
                mass: upper_mass,
                com: Vector::new(upper_com, 0.0, 0.0),
                inertia: upper_inertia,
            },
            LinkSpec {
                axis: Vector::Y,
                joint: shoulder + Vector::new(UR5_UPPER_ARM, 0.0, 0.0),
                mass: fore_mass,
                com: Vector::new(fore_com, 0.0, 0.0),
                inertia: fore_inertia,
            },
        ]
    }
}

/// The base, shoulder, elbow and wrist of the arm at `angles` (pan, lift,
/// elbow), in the world, m: forward kinematics by hand.
pub fn ur5_joint_points(angles: &[f32]) -> [[f32; 3]; 4] {
    let (pan, upper, fore) = (angles[0], angles[1], angles[1] + angles[2]);
    let (sin_pan, cos_pan) = pan.sin_cos();
    let h = UR5_SHOULDER_HEIGHT;
    // Reach from the vertical axis and height of the elbow and the wrist.
    let (elbow_r, elbow_z) = (UR5_UPPER_ARM * upper.cos(), h - UR5_UPPER_ARM * upper.sin());
    let (wrist_r, wrist_z) = (
        elbow_r + UR5_FOREARM * fore.cos(),
        elbow_z - UR5_FOREARM * fore.sin(),
    );
    [
        [0.0, 0.0, 0.0],
        [0.0, 0.0, h],
        [elbow_r * cos_pan, elbow_r * sin_pan, elbow_z],
        [wrist_r * cos_pan, wrist_r * sin_pan, wrist_z],
    ]
}

/// The largest joint-angle difference between `achieved` and `desired`
/// (each wrapped to [−π, π)), rad: what `ur5-reacher`'s goal test bounds.
pub fn ur5_angle_error(achieved: &[f32], desired: &[f32]) -> f32 {
    achieved
        .iter()
        .zip(desired)
        .map(|(a, d)| wrap_angle(a - d).abs())
        .fold(0.0, f32::max)
}

/// A controller with gravity compensation toward the goal angles of `obs`:
/// the scripted solution of `ur5-reacher`, in `[-1, 1]` action units. On
/// the paper's arm it commands servo speeds proportional to the angle
/// errors plus the speed whose servo force holds the pose; on the torque
/// arm it is a PD controller.
pub fn scripted_reach_action(config: &Ur5ReacherConfig, obs: &[f32]) -> Vec<f32> {
    let hold = config.gravity_torques(&obs[..3]);
    let error = |j: usize| wrap_angle(obs[9 + j] - obs[j]);
    match config.arm_model {
        Ur5Arm::Paper => {
            // Speed per radian of error: a free joint settles at half the
            // commanded speed (servo and damping of equal gains).
            const GAIN: f32 = 4.0;
            (0..3)
                .map(|j| {
                    let speed = GAIN * error(j) + hold[j] / config.servo_gain;
                    (speed / config.max_servo_speed[j]).clamp(-1.0, 1.0)
                })
                .collect()
        }
        Ur5Arm::Torque => {
            // Gains low enough for a controller that acts every 30 ms: stiffer
            // ones make the velocities chatter from one action to the next.
            const STIFFNESS: [f32; 3] = [150.0, 300.0, 100.0];
            const DAMPING: [f32; 3] = [10.0, 30.0, 8.0];
            (0..3)
                .map(|j| {
                    let torque = STIFFNESS[j] * error(j) - DAMPING[j] * obs[3 + j] + hold[j];
                    (torque / config.max_torque[j]).clamp(-1.0, 1.0)
                })
                .collect()
        }
    }
}

/// The UR5 reacher, `ur5-reacher`; see the module docs.
#[derive(Debug)]
pub struct Ur5Reacher {
    cfg: Ur5ReacherConfig,
    chain: JointChain,
    goal: [f32; 3],
    observation_space: Space,
    action_space: Space,
    rng: StdRng,
    limit: TimeLimit,
}

impl Ur5Reacher {
    /// A reacher with the given settings (validated). Call [`Env::reset`] before stepping.
    pub fn new(cfg: Ur5ReacherConfig) -> Result<Self> {
        cfg.validate()?;
        let v = cfg.max_observed_speed;
        let turn = std::f32::consts::TAU;
        let observation_space = Space::new(
            [[-turn; 3], [-v; 3], [-turn; 3], [-PI; 3]].concat(),
            [[turn; 3], [v; 3], [turn; 3], [PI; 3]].concat(),
        );
        let chain = Self::chain(&cfg, &[0.0; 3], &[0.0; 3]);
        Ok(Ur5Reacher {
            observation_space,
            action_space: Space::uniform(3, -1.0, 1.0),
            chain,
            goal: [0.0; 3],
            rng: rng_from_seed(0),
            limit: TimeLimit::new(cfg.max_episode_steps),
            cfg,
        })
    }

    fn chain(cfg: &Ur5ReacherConfig, angles: &[f32], velocities: &[f32]) -> JointChain {
        JointChain::new(
            &cfg.links(),
            Vector::new(0.0, 0.0, -GRAVITY),
            cfg.control_dt / cfg.substeps as f32,
            &cfg.joint_damping,
            angles,
            velocities,
        )
    }

    /// The settings.
    pub fn config(&self) -> &Ur5ReacherConfig {
        &self.cfg
    }

    /// Puts the arm at `angles` (rad) with `velocities` (rad/s) and the goal
    /// at `goal`, keeping the episode's step count: for tests and renders.
    pub fn set_state(&mut self, angles: [f32; 3], velocities: [f32; 3], goal: [f32; 3]) {
        self.chain = Self::chain(&self.cfg, &angles, &velocities);
        self.goal = goal;
    }

    /// Where the forearm ends (the wrist), in the world, m.
    pub fn wrist_position(&self) -> [f32; 3] {
        let p = self
            .chain
            .point_on_link(2, Vector::new(UR5_FOREARM, 0.0, 0.0));
        [p.x, p.y, p.z]
    }

    /// The elbow joint's position in the world, m.
    pub fn elbow_position(&self) -> [f32; 3] {
        let p = self.chain.point_on_link(2, Vector::ZERO);
        [p.x, p.y, p.z]
    }

    /// The current observation.
    pub fn observe(&self) -> Vec<f32> {
        let angles: Vec<f32> = self
            .chain
            .angles()
            .into_iter()
            .map(|a| a % std::f32::consts::TAU)
            .collect();
        let v = self.cfg.max_observed_speed;
        let velocities = self.chain.velocities().into_iter().map(|w| w.clamp(-v, v));
        let mut obs = Vec::with_capacity(12);
        obs.extend_from_slice(&angles);
        obs.extend(velocities);
        obs.extend_from_slice(&angles);
        obs.extend_from_slice(&self.goal);
        obs
    }
}

impl Env for Ur5Reacher {
    fn observation_space(&self) -> &Space {
        &self.observation_space
    }

    fn action_space(&self) -> &Space {
        &self.action_space
    }

    fn reset(&mut self, seed: Option<u64>) -> Vec<f32> {
        reseed(&mut self.rng, seed);
        let pan = self.rng.random_range(-FRAC_PI_8..=FRAC_PI_8);
        // More than a quarter of the goal box is kept, so this ends.
        self.goal = loop {
            let goal = [
                self.rng.random_range(-PI..PI),
                self.rng.random_range(-FRAC_PI_4..=0.0),
                self.rng.random_range(-FRAC_PI_4..=FRAC_PI_4),
            ];
            if !self.cfg.reject_goals || Ur5ReacherConfig::goal_is_kept(&goal) {
                break goal;
            }
        };
        self.chain = Self::chain(&self.cfg, &[pan, 0.003_227_6, -0.127_944_5], &[0.0; 3]);
        self.limit.start();
        self.observe()
    }

    fn step(&mut self, action: &[f32]) -> Result<Step> {
        self.limit.check()?;
        let action = self.action_space.validate(action, self.cfg.clip_actions)?;
        let cfg = &self.cfg;
        match cfg.arm_model {
            Ur5Arm::Paper => {
                let speeds: Vec<f32> = (0..3).map(|j| action[j] * cfg.max_servo_speed[j]).collect();
                for _ in 0..cfg.substeps {
                    // The servo's force from this physics step's velocities.
                    self.chain.step_with(|velocities| {
                        (0..3)
                            .map(|j| {
                                let force = cfg.servo_gain * (speeds[j] - velocities[j]);
                                force.clamp(-cfg.max_torque[j], cfg.max_torque[j])
                            })
                            .collect()
                    });
                }
            }
            Ur5Arm::Torque => {
                let torques: Vec<f32> = (0..3).map(|j| action[j] * cfg.max_torque[j]).collect();
                for _ in 0..cfg.substeps {
                    self.chain.step(&torques);
                }
            }
        }
        let obs = self.observe();
        let (achieved, desired) = (&obs[6..9], &obs[9..12]);
        let success = self.is_success(achieved, desired);
        let reward = self.compute_reward(achieved, desired);
        let error = ur5_angle_error(achieved, desired);
        Ok(self.limit.finish(Step {
            terminated: success && self.cfg.terminate_on_success,
            truncated: false,
            reward,
            info: Info::new()
                .with("is_success", if success { 1.0 } else { 0.0 })
                .with("angle_error", error as f64),
            obs,
        }))
    }
}

impl GoalEnv for Ur5Reacher {
    fn goal_dim(&self) -> usize {
        3
    }

    fn is_success(&self, achieved: &[f32], desired: &[f32]) -> bool {
        ur5_angle_error(achieved, desired) <= self.cfg.angle_threshold
    }
}

#[cfg(test)]
mod tests {
    use std::f32::consts::FRAC_1_SQRT_2;

    use super::*;
    use crate::check_goal_env;

    fn assert_near(got: [f32; 3], want: [f32; 3], what: &str) {
        let far = got.iter().zip(want).any(|(g, w)| (g - w).abs() > 1e-4);
        assert!(!far, "{what}: got {got:?}, want {want:?}");
    }

    #[test]
    fn the_simulated_wrist_is_where_forward_kinematics_puts_it() {
        let mut env = Ur5Reacher::new(Ur5ReacherConfig::torque_arm()).unwrap();
        let mut paper = Ur5Reacher::new(Ur5ReacherConfig::default()).unwrap();
        env.reset(Some(0));
        paper.reset(Some(0));
        let (h, a, f) = (0.089_159, 0.425, 0.392_25);
        // (pan, lift, elbow) → wrist, computed by hand.
        for (angles, wrist) in [
            ([0.0, 0.0, 0.0], [a + f, 0.0, h]),
            // Panned a quarter turn: the arm points along y.
            ([PI / 2.0, 0.0, 0.0], [0.0, a + f, h]),
            // Lifted a quarter turn: straight up.
            ([0.0, -PI / 2.0, 0.0], [0.0, 0.0, h + a + f]),
            // Elbow bent a quarter turn: the forearm hangs down.
            ([0.0, 0.0, PI / 2.0], [a, 0.0, h - f]),
            // Pan −30°, lift −45°, elbow +45°: upper arm up at 45°, forearm level.
            (
                [-PI / 6.0, -PI / 4.0, PI / 4.0],
                [
                    (a * FRAC_1_SQRT_2 + f) * 0.866_025_4,
                    -(a * FRAC_1_SQRT_2 + f) * 0.5,
                    h + a * FRAC_1_SQRT_2,
                ],
            ),
        ] {
            env.set_state(angles, [0.0; 3], [0.0; 3]);
            assert_near(env.wrist_position(), wrist, &format!("{angles:?}"));
            assert_near(ur5_joint_points(&angles)[3], wrist, "analytic wrist");
            assert_near(ur5_joint_points(&angles)[2], env.elbow_position(), "elbow");
            let obs = env.observe();
            let read: Vec<f32> = obs[..3].to_vec();
            assert_near([read[0], read[1], read[2]], angles, "angles read back");
            // The paper's arm sits 0.13585 − 0.1197 m sideways of that plane.
            paper.set_state(angles, [0.0; 3], [0.0; 3]);
            let (sin, cos) = angles[0].sin_cos();
            let side = 0.135_85 - 0.1197;
            let shifted = [wrist[0] - side * sin, wrist[1] + side * cos, wrist[2]];
            assert_near(
                paper.wrist_position(),
                shifted,
                &format!("paper {angles:?}"),
            );
        }
    }

    #[test]
    fn a_free_servo_joint_settles_at_half_its_commanded_speed() {
        // Pan alone, at full command: the servo's 10·(3.15 − v) balances the
        // damping's 10·v at v = 3.15/2 (by hand); gravity acts on no pan.
        let mut env = Ur5Reacher::new(Ur5ReacherConfig::default()).unwrap();
        env.reset(Some(0));
        let pose = [0.0, -0.3, 0.5];
        let hold = Ur5ReacherConfig::default().gravity_torques(&pose);
        env.set_state(pose, [0.0; 3], [3.0, 0.0, 0.0]);
        // Lift and elbow command the speed whose servo force holds them.
        let action = [1.0, hold[1] / 10.0 / 5.0, hold[2] / 10.0 / 3.15];
        for _ in 0..100 {
            env.step(&action).unwrap();
        }
        let speed = env.observe()[3];
        assert!((speed - 1.575).abs() < 0.01, "pan speed {speed}");
        // The torque arm's pan, at full torque, is far faster.
        let mut torque = Ur5Reacher::new(Ur5ReacherConfig::torque_arm()).unwrap();
        torque.reset(Some(0));
        torque.set_state(pose, [0.0; 3], [3.0, 0.0, 0.0]);
        for _ in 0..100 {
            torque.step(&[1.0, 0.0, 0.0]).unwrap();
        }
        assert!(torque.observe()[3] > 5.0, "{:?}", torque.observe());
    }

    #[test]
    fn goals_are_drawn_again_until_away_from_the_start_and_above_the_floor() {
        // The paper's test, from the link lengths by hand.
        let kept = |g: [f32; 3]| {
            let elbow_z = 0.089_159 - 0.425 * g[1].sin();
            let wrist_z = elbow_z - 0.392_25 * (g[1] + g[2]).sin();
            g[0].abs() > FRAC_PI_4 && elbow_z > 0.05 && wrist_z > 0.15
        };
        let goals = |config: Ur5ReacherConfig| {
            let mut env = Ur5Reacher::new(config).unwrap();
            (0..400)
                .map(|seed| {
                    let obs = env.reset(Some(seed));
                    [obs[9], obs[10], obs[11]]
                })
                .collect::<Vec<_>>()
        };
        let drawn = goals(Ur5ReacherConfig::default());
        assert!(drawn.iter().all(|&g| kept(g)), "a rejected goal was kept");
        assert!(drawn.iter().all(|g| Ur5ReacherConfig::goal_is_kept(g)));
        // Without rejection about a quarter of the goals fail the test, and
        // a goal the test rejects is never drawn with it.
        let raw = goals(Ur5ReacherConfig {
            reject_goals: false,
            ..Ur5ReacherConfig::default()
        });
        let rejected = raw.iter().filter(|&&g| !kept(g)).count();
        assert!((50..250).contains(&rejected), "{rejected} of 400 rejected");
        assert!(
            !Ur5ReacherConfig::goal_is_kept(&[0.5, -0.3, 0.0]),
            "pan within π/4"
        );
        assert!(
            !Ur5ReacherConfig::goal_is_kept(&[2.0, 0.0, 0.78]),
            "wrist low"
        );
        assert!(Ur5ReacherConfig::goal_is_kept(&[2.0, -0.5, 0.0]));
    }

    #[test]
    fn gravity_compensation_holds_a_pose_and_its_absence_does_not() {
        // The torque arm holds with its torques; the paper's arm with the
        // servo speeds whose force (10·u at rest) equals them.
        for cfg in [Ur5ReacherConfig::torque_arm(), Ur5ReacherConfig::default()] {
            check_gravity_hold(cfg);
        }
    }

    fn check_gravity_hold(cfg: Ur5ReacherConfig) {
        let mut env = Ur5Reacher::new(cfg.clone()).unwrap();
        env.reset(Some(0));
        let pose = [0.3, -0.5, 0.6];
        let full_scale = |j: usize| match cfg.arm_model {
            Ur5Arm::Paper => cfg.servo_gain * cfg.max_servo_speed[j],
            Ur5Arm::Torque => cfg.max_torque[j],
        };
        let hold: Vec<f32> = cfg
            .gravity_torques(&pose)
            .iter()
            .enumerate()
            .map(|(j, t)| t / full_scale(j))
            .collect();
        env.set_state(pose, [0.0; 3], [3.0, 0.0, 0.0]);
        for _ in 0..20 {
            env.step(&hold).unwrap();
        }
        let drift = ur5_angle_error(&env.observe()[..3], &pose);
        assert!(drift < 0.01, "held pose drifted by {drift} rad");
        env.set_state(pose, [0.0; 3], [3.0, 0.0, 0.0]);
        for _ in 0..20 {
            env.step(&[0.0; 3]).unwrap();
        }
        let obs = env.observe();
        assert!(
            obs[1] > pose[1] + 0.1,
            "without torque the arm falls: {obs:?}"
        );
    }

    #[test]
    fn angles_are_observed_modulo_a_full_turn_keeping_their_sign() {
        let mut env = Ur5Reacher::new(Ur5ReacherConfig::default()).unwrap();
        env.reset(Some(0));
        // Just past ±π the angle is observed as it is, not wrapped to ∓π.
        env.set_state([3.3, -3.3, 7.0], [0.0; 3], [0.0; 3]);
        let obs = env.observe();
        let want = [3.3, -3.3, 7.0 - std::f32::consts::TAU];
        assert_near([obs[0], obs[1], obs[2]], want, "observed");
        assert_near([obs[6], obs[7], obs[8]], want, "achieved");
        // The goal test still compares angles across the jump: 3.3 is −2.98.
        assert!(env.is_success(&[3.3, 0.0, 0.0], &[3.3 - std::f32::consts::TAU, 0.0, 0.0]));
    }

    #[test]
    fn the_scripted_controller_solves_every_seed_tried_on_both_arms() {
        // The paper's servo arm is slow: goals need tens of actions.
        check_scripted(Ur5ReacherConfig::default(), 400);
        check_scripted(Ur5ReacherConfig::torque_arm(), 150);
    }

    fn check_scripted(cfg: Ur5ReacherConfig, most_steps: usize) {
        let mut env = Ur5Reacher::new(cfg.clone()).unwrap();
        for seed in 0..10 {
            let mut obs = env.reset(Some(seed));
            let mut steps = 0;
            loop {
                let step = env.step(&scripted_reach_action(&cfg, &obs)).unwrap();
                obs = step.obs.clone();
                steps += 1;
                if step.done() {
                    assert_eq!(step.info.get("is_success"), Some(1.0), "seed {seed}");
                    assert!(step.terminated);
                    break;
                }
            }
            assert!(steps < most_steps, "seed {seed} took {steps} steps");
        }
    }

    #[test]
    fn idle_arm_fails_and_seeds_repeat_bit_for_bit() {
        let mut env = Ur5Reacher::new(Ur5ReacherConfig::default().max_episode_steps(30)).unwrap();
        let run = |env: &mut Ur5Reacher, seed| {
            let mut all = env.reset(Some(seed));
            loop {
                let step = env.step(&[0.3, -0.2, 0.1]).unwrap();
                all.extend(&step.obs);
                if step.done() {
                    assert!(step.truncated);
                    return all;
                }
            }
        };
        let first = run(&mut env, 5);
        run(&mut env, 6);
        assert_eq!(first, run(&mut env, 5));
    }

    #[test]
    fn passes_the_goal_env_checker_and_rejects_bad_settings() {
        check_goal_env(|| {
            Ur5Reacher::new(Ur5ReacherConfig::default().max_episode_steps(40)).unwrap()
        })
        .unwrap();
        let bad = Ur5ReacherConfig {
            max_torque: [150.0, -1.0, 150.0],
            ..Ur5ReacherConfig::default()
        };
        let message = Ur5Reacher::new(bad).unwrap_err().to_string();
        assert!(message.contains("max_torque"), "{message}");
        let bad = Ur5ReacherConfig {
            substeps: 0,
            ..Ur5ReacherConfig::default()
        };
        assert!(
            Ur5Reacher::new(bad)
                .unwrap_err()
                .to_string()
                .contains("substeps")
        );
    }
}
