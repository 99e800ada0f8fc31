//! The FetchPush-style observation layout shared by the arm tasks, and a typed view of it.

use std::ops::Range;

use rapier3d::math::glamx::EulerRot;
use rapier3d::prelude::*;

use super::config::ArmConfig;
use super::scene::ArmScene;

/// Length of the `observation` part (FetchPush's 25).
pub const OBSERVATION_DIM: usize = 25;
/// Length of the achieved and of the desired goal (a position, m).
pub const GOAL_DIM: usize = 3;
/// Length of the flat vector `[observation | achieved_goal | desired_goal]`.
pub const FLAT_OBS_DIM: usize = OBSERVATION_DIM + 2 * GOAL_DIM;

/// Where each quantity sits in the flat observation. Velocities are, as in
/// FetchPush, multiplied by the control step `dt`, i.e. displacements per
/// control step (m or rad).
pub mod index {
    use std::ops::Range;
    /// Gripper centre (m, world frame).
    pub const GRIPPER_POS: Range<usize> = 0..3;
    /// Object centre (m).
    pub const OBJECT_POS: Range<usize> = 3..6;
    /// Object centre minus gripper centre (m).
    pub const OBJECT_REL_POS: Range<usize> = 6..9;
    /// Opening of the two cosmetic fingers (m each).
    pub const FINGERS: Range<usize> = 9..11;
    /// Object orientation as XYZ Euler angles (rad).
    pub const OBJECT_ROT: Range<usize> = 11..14;
    /// Object linear velocity relative to the gripper, × dt (m).
    pub const OBJECT_VELP: Range<usize> = 14..17;
    /// Object angular velocity × dt (rad).
    pub const OBJECT_VELR: Range<usize> = 17..20;
    /// Gripper linear velocity × dt (m).
    pub const GRIPPER_VELP: Range<usize> = 20..23;
    /// Finger opening speeds × dt (m).
    pub const FINGER_VEL: Range<usize> = 23..25;
    /// Achieved goal: the object centre (m).
    pub const ACHIEVED_GOAL: Range<usize> = 25..28;
    /// Desired goal (m).
    pub const DESIRED_GOAL: Range<usize> = 28..31;
}

/// A read-only view of a flat arm-task observation, for scripted controllers
/// and analysis.
///
/// ```
/// use shoal_rl_env::arm::{ArmObs, FLAT_OBS_DIM};
/// let obs = vec![0.0; FLAT_OBS_DIM];
/// assert_eq!(ArmObs::new(&obs).unwrap().desired_goal(), [0.0; 3]);
/// assert!(ArmObs::new(&obs[1..]).is_none());
/// ```
#[derive(Clone, Copy, Debug)]
pub struct ArmObs<'a>(&'a [f32]);

impl<'a> ArmObs<'a> {
    /// Wraps `obs`, or `None` if it is not [`FLAT_OBS_DIM`] long.
    pub fn new(obs: &'a [f32]) -> Option<Self> {
        (obs.len() == FLAT_OBS_DIM).then_some(ArmObs(obs))
    }

    fn triple(&self, range: Range<usize>) -> [f32; 3] {
        [
            self.0[range.start],
            self.0[range.start + 1],
            self.0[range.start + 2],
        ]
    }

    /// Gripper centre (m).
    pub fn gripper_position(&self) -> [f32; 3] {
        self.triple(index::GRIPPER_POS)
    }

    /// Object centre (m).
    pub fn object_position(&self) -> [f32; 3] {
        self.triple(index::OBJECT_POS)
    }

    /// Object orientation as XYZ Euler angles (rad); for an upright object
    /// the last is its rotation about the vertical.
    pub fn object_euler(&self) -> [f32; 3] {
        self.triple(index::OBJECT_ROT)
    }

    /// Object displacement over the last control step in the world frame (m).
    pub fn object_displacement(&self) -> [f32; 3] {
        let relative = self.triple(index::OBJECT_VELP);
        let gripper = self.triple(index::GRIPPER_VELP);
        [
            relative[0] + gripper[0],
            relative[1] + gripper[1],
            relative[2] + gripper[2],
        ]
    }

    /// Achieved goal (m).
    pub fn achieved_goal(&self) -> [f32; 3] {
        self.triple(index::ACHIEVED_GOAL)
    }

    /// Desired goal (m).
    pub fn desired_goal(&self) -> [f32; 3] {
        self.triple(index::DESIRED_GOAL)
    }
}

/// Writes the flat observation for the object `object` and goal `goal`.
pub(crate) fn observe(
    cfg: &ArmConfig,
    scene: &ArmScene,
    object: RigidBodyHandle,
    goal: Vector,
) -> Vec<f32> {
    let dt = cfg.control_dt;
    let gripper = scene.gripper_position();
    let gripper_velocity = scene.gripper_velocity();
    let body = scene.body_state(object);
    let (opening, opening_speed) = scene.fingers();
    let (rx, ry, rz) = body.rotation.to_euler(EulerRot::XYZ);

    let mut obs = Vec::with_capacity(FLAT_OBS_DIM);
    obs.extend_from_slice(&gripper.to_array());
    obs.extend_from_slice(&body.position.to_array());
    obs.extend_from_slice(&(body.position - gripper).to_array());
    obs.extend_from_slice(&[opening, opening]);
    obs.extend_from_slice(&[rx, ry, rz]);
    obs.extend_from_slice(&((body.linvel - gripper_velocity) * dt).to_array());
    obs.extend_from_slice(&(body.angvel * dt).to_array());
    obs.extend_from_slice(&(gripper_velocity * dt).to_array());
    obs.extend_from_slice(&[opening_speed * dt, opening_speed * dt]);
    obs.extend_from_slice(&body.position.to_array());
    obs.extend_from_slice(&goal.to_array());
    debug_assert_eq!(obs.len(), FLAT_OBS_DIM);
    obs
}
