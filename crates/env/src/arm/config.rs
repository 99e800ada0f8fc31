//! `ArmConfig`: the knobs every arm task shares (episode, action, physics, table, gripper).

use serde::{Deserialize, Serialize};
use shoal_rl_core::{Error, Result};

use crate::limits::{MAX_EPISODE_STEPS, MAX_SUBSTEPS, check_count};

/// Settings shared by the arm tasks ([`crate::ArmPush`], [`crate::BallToNet`]).
///
/// Coordinates are metres in a z-up world frame whose origin is the centre of
/// the table top projected to the floor: the table top is the plane
/// `z = table_height`, and `(0, 0)` is its centre.
///
/// ```
/// use shoal_rl_env::arm::ArmConfig;
/// let cfg = ArmConfig::default().max_episode_steps(100).terminate_on_success(false);
/// assert_eq!(cfg.max_episode_steps, 100);
/// assert!(cfg.validate().is_ok());
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ArmConfig {
    /// Control steps before the episode is truncated. Default 50 (FetchPush).
    pub max_episode_steps: usize,
    /// Distance (m) between achieved and desired goal below which the task
    /// counts as solved. Default 0.05 m (FetchPush).
    pub distance_threshold: f32,
    /// End the episode with `terminated = true` on the step that reaches the
    /// goal. Default true.
    pub terminate_on_success: bool,
    /// Clip out-of-range action components into [-1, 1] (true) or reject the
    /// action with `Error::ActionOutOfBounds` (false). Non-finite components
    /// are always an error. Default true.
    pub clip_actions: bool,
    /// Gripper displacement (m) per control step commanded by an action
    /// component of ±1. Default 0.05 m (FetchPush).
    pub max_gripper_step: f32,
    /// Opening change (m) of each cosmetic finger per control step at a
    /// gripper action of ±1. Default 0.01 m.
    pub max_finger_step: f32,
    /// Simulated time (s) of one control step. Default 0.04 s (FetchPush:
    /// 20 substeps of 2 ms).
    pub control_dt: f32,
    /// Physics steps per control step; the physics step is
    /// `control_dt / substeps`. Default 4 (10 ms steps): the largest step that
    /// keeps pushing and striking stable, chosen for speed — see the module docs.
    pub substeps: usize,
    /// Solver iterations per physics step (rapier's `num_solver_iterations`).
    /// Default 4.
    pub solver_iterations: usize,
    /// Height (m) of the table top above the floor. Default 0.4 m.
    pub table_height: f32,
    /// Half extents (m) of the table top along x and y. Default `[0.25, 0.35]`
    /// (FetchPush's table).
    pub table_half_extents: [f32; 2],
    /// Friction coefficient of the table top. Default 0.5.
    pub table_friction: f32,
    /// Contact shape of the gripper. Default: a block of half extents
    /// `[0.02, 0.02, 0.03]` m, the size of two closed fingers.
    pub gripper: GripperShape,
    /// Friction coefficient of the gripper; it wins over the other body's
    /// (rapier's `Min` rule), so a low value lets the gripper slide along the
    /// faces it pushes. Default 0.1.
    pub gripper_friction: f32,
    /// Gripper start `[x, y, height of its centre above the table top]` (m).
    /// Default `[0, 0, 0.1]`.
    pub gripper_start: [f32; 3],
    /// Highest gripper centre (m above the table top) the workspace allows;
    /// the lowest keeps the gripper 5 mm above the table. Default 0.3 m.
    pub gripper_max_height: f32,
}

impl Default for ArmConfig {
    fn default() -> Self {
        ArmConfig {
            max_episode_steps: 50,
            distance_threshold: 0.05,
            terminate_on_success: true,
            clip_actions: true,
            max_gripper_step: 0.05,
            max_finger_step: 0.01,
            control_dt: 0.04,
            substeps: 4,
            solver_iterations: 4,
            table_height: 0.4,
            table_half_extents: [0.25, 0.35],
            table_friction: 0.5,
            gripper: GripperShape::Block {
                half_extents: [0.02, 0.02, 0.03],
            },
            gripper_friction: 0.1,
            gripper_start: [0.0, 0.0, 0.1],
            gripper_max_height: 0.3,
        }
    }
}

/// The gripper's contact shape. It never rotates; both shapes stand upright.
///
/// A block has flat faces, good for pushing boxes squarely; a cylinder sends
/// a struck ball along the line through both centres whatever the direction,
/// which a block's face does not.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum GripperShape {
    /// An axis-aligned box.
    Block {
        /// Half extents (m) along x, y, z.
        half_extents: [f32; 3],
    },
    /// A cylinder with a vertical axis.
    Cylinder {
        /// Radius (m).
        radius: f32,
        /// Half its height (m).
        half_height: f32,
    },
}

impl GripperShape {
    /// Half the height (m) of the shape.
    pub fn half_height(&self) -> f32 {
        match *self {
            GripperShape::Block { half_extents } => half_extents[2],
            GripperShape::Cylinder { half_height, .. } => half_height,
        }
    }

    /// Radius (m) of the circle that holds the footprint along both table
    /// axes: a cylinder's radius, a block's larger horizontal half extent
    /// (what a top-down drawing shows as the gripper).
    pub fn radius(&self) -> f32 {
        match *self {
            GripperShape::Block { half_extents } => half_extents[0].max(half_extents[1]),
            GripperShape::Cylinder { radius, .. } => radius,
        }
    }

    /// How far (m) the footprint reaches from the axis along the unit
    /// horizontal direction `d`.
    pub(crate) fn extent_along(&self, d: [f32; 2]) -> f32 {
        match *self {
            GripperShape::Block {
                half_extents: [x, y, _],
            } => x * d[0].abs() + y * d[1].abs(),
            GripperShape::Cylinder { radius, .. } => radius,
        }
    }

    /// Largest horizontal reach (m) from the axis.
    pub(crate) fn max_extent(&self) -> f32 {
        match *self {
            GripperShape::Block {
                half_extents: [x, y, _],
            } => x.hypot(y),
            GripperShape::Cylinder { radius, .. } => radius,
        }
    }

    fn validate(&self) -> Result<()> {
        match *self {
            GripperShape::Block {
                half_extents: [x, y, z],
            } => {
                check_positive("gripper half_extents[0]", x)?;
                check_positive("gripper half_extents[1]", y)?;
                check_positive("gripper half_extents[2]", z)
            }
            GripperShape::Cylinder {
                radius,
                half_height,
            } => {
                check_positive("gripper radius", radius)?;
                check_positive("gripper half_height", half_height)
            }
        }
    }
}

/// Gap (m) kept between the gripper's lowest face and the table top.
pub(crate) const GRIPPER_TABLE_CLEARANCE: f32 = 0.005;

/// Largest opening (m) of each cosmetic finger.
pub(crate) const MAX_FINGER_OPENING: f32 = 0.05;

/// Generates, on a task config with an `arm: ArmConfig` field, builder
/// methods that set the shared knobs, so both tasks read
/// `Config::default().max_episode_steps(100)` without repeating the code.
macro_rules! arm_builder_methods {
    () => {
        /// Replaces the shared arm settings.
        #[must_use]
        pub fn arm(mut self, arm: $crate::arm::ArmConfig) -> Self {
            self.arm = arm;
            self
        }
        /// Sets `arm.max_episode_steps` (control steps).
        #[must_use]
        pub fn max_episode_steps(mut self, steps: usize) -> Self {
            self.arm.max_episode_steps = steps;
            self
        }
        /// Sets `arm.distance_threshold` (m).
        #[must_use]
        pub fn distance_threshold(mut self, metres: f32) -> Self {
            self.arm.distance_threshold = metres;
            self
        }
        /// Sets `arm.terminate_on_success`.
        #[must_use]
        pub fn terminate_on_success(mut self, terminate: bool) -> Self {
            self.arm.terminate_on_success = terminate;
            self
        }
        /// Sets `arm.clip_actions`.
        #[must_use]
        pub fn clip_actions(mut self, clip: bool) -> Self {
            self.arm.clip_actions = clip;
            self
        }
        /// Sets `arm.substeps` (physics steps per control step).
        #[must_use]
        pub fn substeps(mut self, substeps: usize) -> Self {
            self.arm.substeps = substeps;
            self
        }
    };
}
pub(crate) use arm_builder_methods;

impl ArmConfig {
    builder_methods! {
        /// Sets [`ArmConfig::max_episode_steps`].
        max_episode_steps: usize,
        /// Sets [`ArmConfig::distance_threshold`] (m).
        distance_threshold: f32,
        /// Sets [`ArmConfig::terminate_on_success`].
        terminate_on_success: bool,
        /// Sets [`ArmConfig::clip_actions`].
        clip_actions: bool,
        /// Sets [`ArmConfig::max_gripper_step`] (m).
        max_gripper_step: f32,
        /// Sets [`ArmConfig::max_finger_step`] (m).
        max_finger_step: f32,
        /// Sets [`ArmConfig::control_dt`] (s).
        control_dt: f32,
        /// Sets [`ArmConfig::substeps`].
        substeps: usize,
        /// Sets [`ArmConfig::solver_iterations`].
        solver_iterations: usize,
        /// Sets [`ArmConfig::table_height`] (m).
        table_height: f32,
        /// Sets [`ArmConfig::table_half_extents`] (m).
        table_half_extents: [f32; 2],
        /// Sets [`ArmConfig::table_friction`].
        table_friction: f32,
        /// Sets [`ArmConfig::gripper`].
        gripper: GripperShape,
        /// Sets [`ArmConfig::gripper_friction`].
        gripper_friction: f32,
        /// Sets [`ArmConfig::gripper_start`] (m).
        gripper_start: [f32; 3],
        /// Sets [`ArmConfig::gripper_max_height`] (m).
        gripper_max_height: f32,
    }

    /// Lowest allowed height (m above the table top) of the gripper centre.
    pub fn gripper_min_height(&self) -> f32 {
        self.gripper.half_height() + GRIPPER_TABLE_CLEARANCE
    }

    /// Lower and upper corners (world frame, m) of the object positions over
    /// the table: its top widened by `margin` on every side, from the
    /// surface up to `above` over it. A hierarchical agent proposes its
    /// subgoals in this box.
    ///
    /// ```
    /// let (low, high) = shoal_rl_env::arm::ArmConfig::default().object_region(0.0, 0.1);
    /// assert!((high[2] - low[2] - 0.1).abs() < 1e-6);
    /// ```
    pub fn object_region(&self, margin: f32, above: f32) -> (Vec<f32>, Vec<f32>) {
        let [hx, hy] = self.table_half_extents;
        let z = self.table_height;
        (
            vec![-hx - margin, -hy - margin, z],
            vec![hx + margin, hy + margin, z + above],
        )
    }

    /// Checks that every value is usable, naming the first that is not.
    pub fn validate(&self) -> Result<()> {
        let positive = [
            ("distance_threshold", self.distance_threshold),
            ("max_gripper_step", self.max_gripper_step),
            ("max_finger_step", self.max_finger_step),
            ("control_dt", self.control_dt),
            ("table_height", self.table_height),
            ("table_half_extents[0]", self.table_half_extents[0]),
            ("table_half_extents[1]", self.table_half_extents[1]),
        ];
        for (name, value) in positive {
            check_positive(name, value)?;
        }
        self.gripper.validate()?;
        for (name, value) in [
            ("table_friction", self.table_friction),
            ("gripper_friction", self.gripper_friction),
        ] {
            if !(value.is_finite() && value >= 0.0) {
                return Err(Error::Config(format!(
                    "{name} must be finite and ≥ 0, got {value}"
                )));
            }
        }
        check_count(
            "max_episode_steps",
            self.max_episode_steps,
            1,
            MAX_EPISODE_STEPS,
        )?;
        check_count("substeps", self.substeps, 1, MAX_SUBSTEPS)?;
        check_count("solver_iterations", self.solver_iterations, 1, MAX_SUBSTEPS)?;
        if !(self.gripper_max_height.is_finite()
            && self.gripper_max_height >= self.gripper_min_height())
        {
            return Err(Error::Config(format!(
                "gripper_max_height must be ≥ {} m (gripper half height plus clearance), got {}",
                self.gripper_min_height(),
                self.gripper_max_height
            )));
        }
        let [x, y, height] = self.gripper_start;
        if !(x.abs() <= self.table_half_extents[0]
            && y.abs() <= self.table_half_extents[1]
            && height >= self.gripper_min_height()
            && height <= self.gripper_max_height)
        {
            return Err(Error::Config(format!(
                "gripper_start {:?} lies outside the gripper workspace",
                self.gripper_start
            )));
        }
        Ok(())
    }
}

/// An error unless `value` is finite and > 0.
pub(crate) fn check_positive(name: &str, value: f32) -> Result<()> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(Error::Config(format!(
            "{name} must be finite and > 0, got {value}"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_config_is_valid() {
        assert!(ArmConfig::default().validate().is_ok());
    }

    #[test]
    fn zero_substeps_and_negative_threshold_are_rejected() {
        assert!(matches!(
            ArmConfig::default().substeps(0).validate(),
            Err(Error::Config(_))
        ));
        assert!(matches!(
            ArmConfig::default().distance_threshold(-0.1).validate(),
            Err(Error::Config(_))
        ));
        assert!(matches!(
            ArmConfig::default()
                .gripper_start([1.0, 0.0, 0.1])
                .validate(),
            Err(Error::Config(_))
        ));
    }
}
