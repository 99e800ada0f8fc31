//! Shared pieces of the robot-arm goal tasks: config, scene (table, gripper), observation layout, goals.
//!
//! [`crate::ArmPush`] and [`crate::BallToNet`] are built from the same parts:
//! an [`ArmConfig`] for the episode, action and physics settings, a rapier
//! scene with a floor, a table and a kinematic gripper moved by bounded
//! Cartesian position deltas, the FetchPush observation layout ([`index`],
//! viewed through [`ArmObs`]) and the sparse goal reward ([`sparse_reward`]).
//! Each task only adds its object (box, ball and net) and its start/goal
//! sampling.

mod config;
mod control;
mod episode;
mod goal;
mod obs;
mod scene;
#[cfg(test)]
pub(crate) mod testutil;

pub use config::{ArmConfig, GripperShape};
pub use goal::{goal_distance, sparse_reward, within_threshold};
pub use obs::{ArmObs, FLAT_OBS_DIM, GOAL_DIM, OBSERVATION_DIM, index};

pub(crate) use config::{arm_builder_methods, check_positive};
pub(crate) use control::{LineUp, ObjectShape, drive_along, line_up};
pub(crate) use episode::{ArmCore, Layout, impl_arm_env};
pub(crate) use goal::{sample_rect, sample_rect_away_from};
pub(crate) use scene::ArmScene;
