//! shoal-rl-env: the environments shoal trains on, with Gymnasium's semantics.
//!
//! * [`Worm`] (`worm`): a planar N-link swimmer in a viscous fluid on
//!   rapier3d, the continuous-control task of the REINFORCE experiments, with
//!   [`travelling_wave`] and [`best_travelling_wave`] as the open-loop
//!   reference gait a trained policy is measured against.
//! * [`ArmPush`] (`arm-push`) and [`BallToNet`] (`ball-to-net`):
//!   goal-conditioned tasks for a gripper on a table (sparse −1/0 reward),
//!   built from the shared pieces in [`arm`], for DDPG, HER and HAC.
//! * [`Ur5Reacher`] (`ur5-reacher`) and [`InvertedPendulum`]
//!   (`pendulum`): the HAC paper's jointed tasks, torque-driven
//!   revolute joints on a rapier multibody, with goals in joint space.
//! * [`PointReach`] and [`PointGoal`]: analytic toy tasks (no physics) that
//!   learn in seconds, for algorithm tests.
//! * [`check_env`] and [`check_goal_env`]: a reusable contract checker
//!   (seeding, bounds, bad actions, episode ends) every env here passes.
//!
//! Every env implements [`shoal_rl_core::Env`] (goal tasks also
//! [`shoal_rl_core::GoalEnv`]): `reset(Some(seed))` gives a bit-identical
//! episode for the same actions, bad actions are typed errors, and each env's
//! module docs follow Gymnasium's layout (Description, Action Space,
//! Observation Space, Rewards, Starting State, Episode End, Arguments,
//! Version History). This crate knows nothing of burn.
//!
//! # Example
//!
//! ```
//! use shoal_rl_core::Env;
//! use shoal_rl_env::{Worm, WormConfig, check_env, travelling_wave};
//!
//! let config = WormConfig::default().max_episode_steps(200);
//! let mut worm = Worm::new(config.clone()).unwrap();
//! let obs = worm.reset(Some(7));
//! assert_eq!(obs.len(), 2 * config.links + 2);
//! let mut episode_return = 0.0;
//! for k in 0.. {
//!     let t = k as f64 * config.control_dt as f64;
//!     let step = worm.step(&travelling_wave(t, 1.0, 5.0, -1.2, config.links - 1)).unwrap();
//!     episode_return += step.reward;
//!     if step.done() {
//!         break;
//!     }
//! }
//! assert!(episode_return > 0.0, "the wave swims forward");
//! check_env(|| Worm::new(WormConfig::default().max_episode_steps(50)).unwrap()).unwrap();
//! ```
#![deny(missing_docs)]

/// Builder setters on a config: `field: Type` becomes `fn field(mut self,
/// value: Type) -> Self`, with the doc comment written above it. Used inside
/// the config's `impl` block.
macro_rules! builder_methods {
    ($($(#[$doc:meta])* $field:ident: $ty:ty),* $(,)?) => {
        $(
            $(#[$doc])*
            #[must_use]
            pub fn $field(mut self, value: $ty) -> Self {
                self.$field = value;
                self
            }
        )*
    };
}

pub mod arm;
mod ball;
mod chain;
mod check;
mod limits;
mod pendulum;
mod push;
mod toy;
mod ur5;
mod worm;

pub use ball::{BallToNet, BallToNetConfig, scripted_strike_action};
pub use chain::wrap_angle;
pub use limits::{MAX_BODY_PARTS, MAX_EPISODE_STEPS, MAX_SUBSTEPS};
pub use pendulum::{InvertedPendulum, InvertedPendulumConfig, scripted_swing_up_action};
pub use push::{ArmPush, ArmPushConfig, scripted_push_action};
/// The env checker lives in shoal-rl-core (no physics needed to use it).
pub use shoal_rl_core::{check_env, check_goal_env};
pub use toy::{PointGoal, PointGoalConfig, PointReach, PointReachConfig};
pub use ur5::{
    UR5_FOREARM, UR5_SHOULDER_HEIGHT, UR5_UPPER_ARM, Ur5Arm, Ur5Reacher, Ur5ReacherConfig,
    scripted_reach_action, ur5_angle_error, ur5_joint_points,
};
pub use worm::{
    GaitReference, Worm, WormConfig, best_travelling_wave, run_gait, travelling_wave,
    try_best_travelling_wave,
};

/// The documented fields of one of this crate's settings structs
/// (`WormConfig`, `ArmConfig`, …), from its source.
pub fn config_docs(name: &str) -> Option<Vec<shoal_rl_core::docs::FieldDoc>> {
    shoal_rl_core::docs::struct_docs(
        &[
            include_str!("worm.rs"),
            include_str!("push.rs"),
            include_str!("ball.rs"),
            include_str!("toy.rs"),
            include_str!("arm/config.rs"),
            include_str!("ur5.rs"),
            include_str!("pendulum.rs"),
        ],
        name,
    )
}

/// The README's example, compiled and run with the doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
