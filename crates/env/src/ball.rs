//! `ball-to-net`: strike a ball across a table into a small net with a position-controlled gripper.
//!
//! # Description
//!
//! A ball rests on a long table; a small net — a back wall and two side
//! walls, open toward the ball — stands farther along the table. The agent
//! moves the same kinematic gripper as in [`crate::ArmPush`] and has to get
//! the ball into the net: the task is solved when the ball centre is within
//! `distance_threshold` (0.05 m) of the goal, the centre of the net's floor
//! area at ball height. With the default sizes every ball resting inside the
//! net satisfies the threshold. Unlike pushing, the ball rolls on after it
//! is struck (rolling resistance is modelled as velocity damping), so a
//! single well-aimed strike can solve the task, and the net walls stop a
//! ball that arrives too fast.
//!
//! # Action Space
//!
//! `Box(-1, 1, (4,))`, as in [`crate::ArmPush`]: gripper displacement along
//! x, y, z (`max_gripper_step` = 0.05 m per step at ±1) and a cosmetic
//! finger open/close channel. Non-finite components are an
//! `Error::NonFiniteAction`; out-of-range components are clipped by default
//! (`clip_actions`) or rejected. The gripper does not collide with the fixed
//! net walls (a kinematic body meets only the ball).
//!
//! # Observation Space
//!
//! The flat 31-component layout of [`crate::ArmPush`] (see
//! [`crate::arm::index`]) with the ball as the object:
//! `[gripper pos (3), ball pos (3), ball − gripper (3), fingers (2),
//! ball rotation (3), ball velocity relative to gripper × dt (3), ball
//! angular velocity × dt (3), gripper velocity × dt (3), finger speeds × dt
//! (2) | achieved goal = ball centre (3) | desired goal = net centre (3)]`.
//! The net's position is the desired goal; its walls are not observed
//! separately.
//!
//! # Rewards
//!
//! Sparse: `0` when the ball centre is closer than `distance_threshold` to
//! the goal, `−1` otherwise; [`shoal_rl_core::GoalEnv::compute_reward`] is the
//! same pure function of the two goals. `info` holds `"is_success"` and
//! `"distance"` (m).
//!
//! # Starting State
//!
//! The gripper starts 0.1 m above `gripper_start` (default 0.3 m behind the
//! table centre). The ball rests at a uniform point of `ball_start_center ±
//! ball_start_half_extents`. The net centre is `net_distance` (uniform in
//! [0.2, 0.35] m) farther along +x than the ball and within ±`net_lateral`
//! (0.15 m) of it sideways, moved inward if it would overhang the table's
//! side. Everything is drawn from the environment's generator:
//! `reset(Some(seed))` gives a bit-identical episode, `reset(None)`
//! continues the stream (seed 0 if never seeded).
//!
//! # Episode End
//!
//! * Termination: the ball reaches the goal, when `terminate_on_success`
//!   (default true); that step has reward 0 and `terminated = true`.
//! * Truncation: `max_episode_steps` (50) control steps.
//!
//! Stepping after either end is `Error::NeedsReset`.
//!
//! # Arguments
//!
//! [`BallToNetConfig`]; shared knobs in its `arm` field
//! ([`crate::arm::ArmConfig`]), whose defaults here differ from the push
//! task's in the table size and gripper start.
//!
//! | field | type | default | unit |
//! |---|---|---|---|
//! | `arm.max_episode_steps` | usize | 50 | steps |
//! | `arm.distance_threshold` | f32 | 0.05 | m |
//! | `arm.terminate_on_success` | bool | true | |
//! | `arm.clip_actions` | bool | true | |
//! | `arm.substeps` | usize | 4 | physics steps / control step |
//! | `arm.table_half_extents` | [f32; 2] | [0.45, 0.35] | m |
//! | `arm.gripper_start` | [f32; 3] | [-0.3, 0, 0.1] | m |
//! | `arm.gripper` | GripperShape | cylinder, radius 0.02, half height 0.03 | m |
//! | `ball_radius` | f32 | 0.025 | m |
//! | `ball_mass` | f32 | 0.05 | kg |
//! | `ball_friction` | f32 | 0.5 | |
//! | `ball_restitution` | f32 | 0.3 | |
//! | `ball_damping` | f32 | 1.5 | 1/s |
//! | `ball_start_center` | [f32; 2] | [-0.1, 0] | m |
//! | `ball_start_half_extents` | [f32; 2] | [0.1, 0.15] | m |
//! | `net_distance` | [f32; 2] | [0.2, 0.35] | m |
//! | `net_lateral` | f32 | 0.15 | m |
//! | `net_half_width` | f32 | 0.06 | m |
//! | `net_wall_height` | f32 | 0.04 | m |
//!
//! # Version History
//!
//! * v1: first version (rapier3d 0.36).
//!
//! # Example
//!
//! ```
//! use shoal_rl_core::Env;
//! use shoal_rl_env::{BallToNet, BallToNetConfig, scripted_strike_action};
//!
//! let config = BallToNetConfig::default();
//! let mut env = BallToNet::new(config.clone()).unwrap();
//! let mut obs = env.reset(Some(1));
//! loop {
//!     let step = env.step(&scripted_strike_action(&obs, &config)).unwrap();
//!     if step.done() {
//!         break;
//!     }
//!     obs = step.obs;
//! }
//! ```

use rand::RngExt;
use rand::rngs::StdRng;
use rapier3d::prelude::*;
use serde::{Deserialize, Serialize};
use shoal_rl_core::{Error, Result};

use crate::arm::{
    ArmConfig, ArmCore, ArmObs, ArmScene, GripperShape, Layout, LineUp, ObjectShape,
    arm_builder_methods, check_positive, drive_along, impl_arm_env, line_up, sample_rect,
};

/// Half thickness (m) of the net walls.
const WALL_HALF_THICKNESS: f32 = 0.01;

/// Settings of [`BallToNet`] (see the module docs for the table of defaults).
///
/// ```
/// use shoal_rl_env::BallToNetConfig;
/// let config = BallToNetConfig::default().net_distance([0.25, 0.3]);
/// assert!(config.validate().is_ok());
/// assert!(BallToNetConfig::default().net_half_width(0.01).validate().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BallToNetConfig {
    /// Episode, action, physics, table and gripper settings. Default: the
    /// [`ArmConfig`] default with a 0.9 × 0.7 m table, the gripper starting
    /// at `[-0.3, 0, 0.1]`, and a cylindrical gripper (radius 0.02 m, half
    /// height 0.03 m) so a strike sends the ball along the line of centres.
    pub arm: ArmConfig,
    /// Radius (m) of the ball. Default 0.025 m.
    pub ball_radius: f32,
    /// Mass (kg) of the ball. Default 0.05 kg.
    pub ball_mass: f32,
    /// Friction coefficient of the ball. Default 0.5.
    pub ball_friction: f32,
    /// Restitution (bounciness, 0–1) of the ball. Default 0.3.
    pub ball_restitution: f32,
    /// Linear and angular velocity damping (1/s) of the ball, standing in for
    /// rolling resistance: a ball rolling at v m/s comes to rest after about
    /// v / damping metres. Default 1.5 /s.
    pub ball_damping: f32,
    /// Centre `[x, y]` (m) of the region the ball starts in. Default `[-0.1, 0]`.
    pub ball_start_center: [f32; 2],
    /// Half extents (m) of that region. Default `[0.1, 0.15]`.
    pub ball_start_half_extents: [f32; 2],
    /// Range `[min, max]` (m) of how much farther along +x than the ball the
    /// net centre is. Default `[0.2, 0.35]`.
    pub net_distance: [f32; 2],
    /// The net centre lies within ± this (m) of the ball sideways (y).
    /// Default 0.15 m.
    pub net_lateral: f32,
    /// Half the inner width and depth (m) of the net. Default 0.06 m.
    pub net_half_width: f32,
    /// Height (m) of the net walls. Default 0.04 m.
    pub net_wall_height: f32,
}

impl Default for BallToNetConfig {
    fn default() -> Self {
        BallToNetConfig {
            arm: ArmConfig::default()
                .table_half_extents([0.45, 0.35])
                .gripper_start([-0.3, 0.0, 0.1])
                .gripper(GripperShape::Cylinder {
                    radius: 0.02,
                    half_height: 0.03,
                }),
            ball_radius: 0.025,
            ball_mass: 0.05,
            ball_friction: 0.5,
            ball_restitution: 0.3,
            ball_damping: 1.5,
            ball_start_center: [-0.1, 0.0],
            ball_start_half_extents: [0.1, 0.15],
            net_distance: [0.2, 0.35],
            net_lateral: 0.15,
            net_half_width: 0.06,
            net_wall_height: 0.04,
        }
    }
}

impl BallToNetConfig {
    arm_builder_methods!();
    builder_methods! {
        /// Sets [`BallToNetConfig::ball_radius`] (m).
        ball_radius: f32,
        /// Sets [`BallToNetConfig::ball_mass`] (kg).
        ball_mass: f32,
        /// Sets [`BallToNetConfig::ball_friction`].
        ball_friction: f32,
        /// Sets [`BallToNetConfig::ball_restitution`].
        ball_restitution: f32,
        /// Sets [`BallToNetConfig::ball_damping`] (1/s).
        ball_damping: f32,
        /// Sets [`BallToNetConfig::ball_start_center`] (m).
        ball_start_center: [f32; 2],
        /// Sets [`BallToNetConfig::ball_start_half_extents`] (m).
        ball_start_half_extents: [f32; 2],
        /// Sets [`BallToNetConfig::net_distance`] (m).
        net_distance: [f32; 2],
        /// Sets [`BallToNetConfig::net_lateral`] (m).
        net_lateral: f32,
        /// Sets [`BallToNetConfig::net_half_width`] (m).
        net_half_width: f32,
        /// Sets [`BallToNetConfig::net_wall_height`] (m).
        net_wall_height: f32,
    }

    /// Checks that every value is usable and that ball and net fit on the
    /// table, naming the first problem.
    pub fn validate(&self) -> Result<()> {
        self.arm.validate()?;
        for (name, value) in [
            ("ball_radius", self.ball_radius),
            ("ball_mass", self.ball_mass),
            ("net_half_width", self.net_half_width),
            ("net_wall_height", self.net_wall_height),
        ] {
            check_positive(name, value)?;
        }
        for (name, value) in [
            ("ball_friction", self.ball_friction),
            ("ball_damping", self.ball_damping),
            ("net_lateral", self.net_lateral),
            (
                "ball_start_half_extents[0]",
                self.ball_start_half_extents[0],
            ),
            (
                "ball_start_half_extents[1]",
                self.ball_start_half_extents[1],
            ),
        ] {
            if !(value.is_finite() && value >= 0.0) {
                return Err(Error::Config(format!(
                    "{name} must be finite and ≥ 0, got {value}"
                )));
            }
        }
        if !(0.0..=1.0).contains(&self.ball_restitution) {
            return Err(Error::Config(format!(
                "ball_restitution must lie in [0, 1], got {}",
                self.ball_restitution
            )));
        }
        if self.net_half_width <= self.ball_radius {
            return Err(Error::Config(format!(
                "net_half_width ({}) must exceed ball_radius ({}) for the ball to fit",
                self.net_half_width, self.ball_radius
            )));
        }
        let [near, far] = self.net_distance;
        if !(near.is_finite() && far.is_finite() && near <= far) {
            return Err(Error::Config(format!(
                "net_distance must be [min, max], got {:?}",
                self.net_distance
            )));
        }
        if near <= self.arm.distance_threshold {
            return Err(Error::Config(format!(
                "net_distance[0] ({near}) must exceed distance_threshold ({}) so no episode starts solved",
                self.arm.distance_threshold
            )));
        }
        let [hx, hy] = self.arm.table_half_extents;
        let [cx, cy] = self.ball_start_center;
        let [bx, by] = self.ball_start_half_extents;
        let outer = self.net_outer_half_width();
        if cx.abs() + bx + self.ball_radius > hx || cy.abs() + by + self.ball_radius > hy {
            return Err(Error::Config(
                "the ball start region overhangs the table".into(),
            ));
        }
        if cx + bx + far + outer > hx {
            return Err(Error::Config(format!(
                "a net {far} m beyond the ball start region would overhang the table's far edge"
            )));
        }
        if outer > hy {
            return Err(Error::Config("the net is wider than the table".into()));
        }
        Ok(())
    }

    /// Half width (m) of the net including its walls.
    fn net_outer_half_width(&self) -> f32 {
        self.net_half_width + 2.0 * WALL_HALF_THICKNESS
    }
}

/// The ball-to-net task (`ball-to-net`); see the module docs.
pub struct BallToNet {
    config: BallToNetConfig,
    core: ArmCore,
}

impl BallToNet {
    /// Builds the task after validating `config`.
    pub fn new(config: BallToNetConfig) -> Result<Self> {
        config.validate()?;
        let core = ArmCore::new(config.arm.clone());
        Ok(BallToNet { config, core })
    }

    /// The settings this task was built with.
    pub fn config(&self) -> &BallToNetConfig {
        &self.config
    }

    fn build_layout(config: &BallToNetConfig, scene: &mut ArmScene, rng: &mut StdRng) -> Layout {
        let ball = sample_rect(
            rng,
            config.ball_start_center,
            config.ball_start_half_extents,
        );
        let [near, far] = config.net_distance;
        let ahead = if far > near {
            rng.random_range(near..=far)
        } else {
            near
        };
        let sideways = if config.net_lateral > 0.0 {
            rng.random_range(-config.net_lateral..=config.net_lateral)
        } else {
            0.0
        };
        let side_limit = config.arm.table_half_extents[1] - config.net_outer_half_width();
        let net = [
            ball[0] + ahead,
            (ball[1] + sideways).clamp(-side_limit, side_limit),
        ];

        let z = config.arm.table_height + config.ball_radius;
        let object = scene.add_dynamic(
            RigidBodyBuilder::dynamic()
                .translation(Vector::new(ball[0], ball[1], z))
                .linear_damping(config.ball_damping)
                .angular_damping(config.ball_damping),
            ColliderBuilder::ball(config.ball_radius)
                .mass(config.ball_mass)
                .friction(config.ball_friction)
                .restitution(config.ball_restitution),
        );
        add_net(config, scene, net);
        Layout {
            object,
            goal: Vector::new(net[0], net[1], z),
        }
    }
}

/// Adds the net's back wall (on the +x side) and two side walls around `center`.
fn add_net(config: &BallToNetConfig, scene: &mut ArmScene, center: [f32; 2]) {
    let w = config.net_half_width;
    let t = WALL_HALF_THICKNESS;
    let half_height = 0.5 * config.net_wall_height;
    let z = config.arm.table_height + half_height;
    let wall = |half_x: f32, half_y: f32, x: f32, y: f32| {
        ColliderBuilder::cuboid(half_x, half_y, half_height)
            .translation(Vector::new(x, y, z))
            .friction(0.3)
            .restitution(0.0)
            .restitution_combine_rule(CoefficientCombineRule::Min)
    };
    let [x, y] = center;
    scene.add_fixed(wall(t, w + 2.0 * t, x + w + t, y));
    scene.add_fixed(wall(w + t, t, x + t, y + w + t));
    scene.add_fixed(wall(w + t, t, x + t, y - w - t));
}

impl Default for BallToNet {
    fn default() -> Self {
        BallToNet::new(BallToNetConfig::default()).expect("the default config is valid")
    }
}

impl_arm_env!(BallToNet);

/// A scripted striker: it lines the gripper up behind the ball on the far
/// side from the net (as [`crate::scripted_push_action`] does with the box),
/// then strikes through the ball toward the net with a speed that grows with
/// the distance to go, and waits while the ball rolls. A ball that stops
/// short is lined up and struck again.
///
/// An observation of the wrong length gives the zero action.
pub fn scripted_strike_action(obs: &[f32], config: &BallToNetConfig) -> [f32; 4] {
    let Some(view) = ArmObs::new(obs) else {
        return [0.0; 4];
    };
    let rolling = view.object_displacement();
    let speed = rolling[0].hypot(rolling[1]) / config.arm.control_dt;
    let shape = ObjectShape::Ball {
        radius: config.ball_radius,
    };
    match line_up(view, &config.arm, shape) {
        // Let a rolling ball run out before lining up again.
        _ if speed > 0.1 => [0.0, 0.0, 0.0, -1.0],
        LineUp::Travel(action) => action,
        LineUp::Ready {
            direction,
            distance,
            lateral,
        } => {
            let target_speed = STRIKE_GAIN * config.ball_damping * distance;
            let step =
                (target_speed * config.arm.control_dt / config.arm.max_gripper_step).min(1.0);
            drive_along(&config.arm, direction, step, lateral)
        }
    }
}

/// Strike speed per metre to go and per unit of damping. A struck ball first
/// slides, then rolls, and both its linear and angular velocity decay, so it
/// covers about `v / (2 · damping)` — measured — before stopping; 2.5 aims
/// 25% past the goal and lets the net's back wall stop the ball.
const STRIKE_GAIN: f32 = 2.5;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arm::testutil::{self, random_policy, rollout, solved};
    use shoal_rl_core::{Env, GoalEnv};

    testutil::arm_task_contract_tests!(BallToNet, BallToNetConfig, scripted_strike_action);

    #[test]
    fn net_lies_ahead_of_the_ball_on_the_table() {
        let config = BallToNetConfig::default();
        let mut env = env(config.clone());
        for seed in 0..200 {
            let obs = env.reset(Some(seed));
            let (_, ball, net) = env.split_obs(&obs);
            let ahead = net[0] - ball[0];
            assert!(
                (0.2..=0.35).contains(&ahead),
                "seed {seed}: net {ahead} m ahead"
            );
            assert!((net[1] - ball[1]).abs() <= 0.15 + 1e-6);
            assert!(net[1].abs() + config.net_half_width < config.arm.table_half_extents[1]);
        }
    }

    #[test]
    fn a_struck_ball_into_the_net_terminates_with_reward_zero() {
        let config = BallToNetConfig::default();
        let mut env = env(config.clone());
        let (_, steps) = rollout(&mut env, 0, scripted(&config));
        let (last, before) = steps.split_last().unwrap();
        assert!(last.terminated && last.reward == 0.0, "{last:?}");
        assert!(before.iter().all(|s| s.reward == -1.0 && !s.terminated));
    }

    #[test]
    fn the_net_stops_a_hard_struck_ball() {
        // Ball at (-0.1, 0), net centre 0.2 m ahead; a full-speed strike
        // would roll the ball well past the goal without the back wall.
        let config = BallToNetConfig::default()
            .terminate_on_success(false)
            .ball_start_half_extents([0.0, 0.0])
            .net_distance([0.2, 0.2])
            .net_lateral(0.0);
        let mut env = env(config.clone());
        let mut t = 0;
        let (_, steps) = rollout(&mut env, 0, |_| {
            t += 1;
            match t {
                1..=3 => [0.0, 0.0, -1.0, 0.0],
                4..=8 => [1.0, 0.0, 0.0, 0.0],
                _ => [-1.0, 0.0, 0.0, 0.0],
            }
        });
        let fastest = steps
            .iter()
            .map(|s| s.obs[14] + s.obs[20])
            .fold(0.0_f32, f32::max);
        assert!(
            fastest / config.arm.control_dt > 1.0,
            "ball only reached {fastest} m/step"
        );
        let last = steps.last().unwrap();
        assert!(
            last.truncated && last.reward == 0.0,
            "ball ended at {:?}",
            &last.obs[3..6]
        );
    }

    #[test]
    fn scripted_striker_clearly_beats_random_actions() {
        let config = BallToNetConfig::default();
        let mut env = env(config.clone());
        let random = (0..50)
            .filter(|&seed| solved(&rollout(&mut env, seed, random_policy(seed)).1))
            .count();
        let struck = (0..50)
            .filter(|&seed| solved(&rollout(&mut env, seed, scripted(&config)).1))
            .count();
        assert!(
            struck >= 35 && struck >= random + 25,
            "scripted {struck} vs random {random} of 50"
        );
    }

    #[test]
    fn invalid_configs_are_rejected() {
        let bad = [
            BallToNetConfig::default().net_half_width(0.02),
            BallToNetConfig::default().net_distance([0.3, 0.2]),
            BallToNetConfig::default().net_distance([0.04, 0.3]),
            BallToNetConfig::default().net_distance([0.2, 0.6]),
            BallToNetConfig::default().ball_restitution(1.5),
            BallToNetConfig::default().ball_start_half_extents([0.5, 0.1]),
            BallToNetConfig::default().ball_damping(-1.0),
        ];
        for config in bad {
            assert!(
                matches!(BallToNet::new(config.clone()), Err(Error::Config(_))),
                "{config:?}"
            );
        }
    }
}
