//! Scripted-controller pieces shared by the arm tasks: lining the gripper up behind an object.

use super::config::ArmConfig;
use super::obs::ArmObs;

/// The footprint of the object the gripper lines up behind.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ObjectShape {
    /// An upright box with a square footprint.
    Box {
        /// Half the edge length (m).
        half: f32,
        /// Rotation (rad) about the vertical axis.
        yaw: f32,
    },
    /// A ball.
    Ball {
        /// Radius (m).
        radius: f32,
    },
}

impl ObjectShape {
    /// How far (m) the footprint reaches from its centre along the unit
    /// horizontal direction `d` (its support distance).
    fn extent_along(&self, d: [f32; 2]) -> f32 {
        match *self {
            ObjectShape::Box { half, yaw } => {
                let (sin, cos) = yaw.sin_cos();
                half * ((d[0] * cos + d[1] * sin).abs() + (d[1] * cos - d[0] * sin).abs())
            }
            ObjectShape::Ball { radius } => radius,
        }
    }

    /// Largest horizontal reach (m) from the centre in any direction.
    fn max_extent(&self) -> f32 {
        match *self {
            ObjectShape::Box { half, .. } => half * std::f32::consts::SQRT_2,
            ObjectShape::Ball { radius } => radius,
        }
    }

    /// Height (m) of the top above the table.
    fn height(&self) -> f32 {
        match *self {
            ObjectShape::Box { half, .. } => 2.0 * half,
            ObjectShape::Ball { radius } => 2.0 * radius,
        }
    }
}

/// The outcome of [`line_up`].
#[derive(Clone, Copy, Debug)]
pub(crate) enum LineUp {
    /// The gripper is still travelling; apply this action.
    Travel([f32; 4]),
    /// The gripper is low and right behind the object on the goal line.
    Ready {
        /// Unit direction (x, y) from the object to the goal.
        direction: [f32; 2],
        /// Horizontal object-to-goal distance (m).
        distance: f32,
        /// Signed sideways offset (m) of the gripper from the goal line.
        lateral: f32,
    },
}

/// Gap (m) the gripper leaves between itself and the object while lining up.
const APPROACH_GAP: f32 = 0.012;
/// Sideways offset (m) from the goal line still counted as lined up.
const LATERAL_TOLERANCE: f32 = 0.012;
/// How much closer (m) than the touching distance the gripper may be along
/// the goal line and still count as behind the object (contact penetration,
/// a box turning under the push).
const CONTACT_SLACK: f32 = 0.012;
/// How much farther (m) than the touching distance still counts as behind.
const BEHIND_REACH: f32 = 0.04;

/// Lifts the gripper clear of the object, carries it to the point behind
/// the object on the far side from the goal, lowers it to the table, and
/// reports [`LineUp::Ready`] once it is there.
pub(crate) fn line_up(obs: ArmObs, cfg: &ArmConfig, shape: ObjectShape) -> LineUp {
    let gripper = obs.gripper_position();
    let object = obs.object_position();
    let goal = obs.desired_goal();
    let to_goal = [goal[0] - object[0], goal[1] - object[1]];
    let distance = norm(to_goal).max(1e-6);
    let direction = [to_goal[0] / distance, to_goal[1] / distance];

    // Distance along the goal line at which gripper and object touch: the sum
    // of both footprints' reach along it (separating-axis test).
    let contact = shape.extent_along(direction) + cfg.gripper.extent_along(direction);
    let clearance = shape.max_extent() + cfg.gripper.max_extent() + 0.01;
    let relative = [gripper[0] - object[0], gripper[1] - object[1]];
    let along = relative[0] * direction[0] + relative[1] * direction[1];
    let lateral = direction[0] * relative[1] - direction[1] * relative[0];

    let low_z = cfg.table_height + cfg.gripper_min_height();
    let safe_z = cfg.table_height + shape.height() + cfg.gripper.half_height() + 0.02;
    let is_low = gripper[2] < low_z + 0.004;
    let behind = [
        object[0] - direction[0] * (contact + APPROACH_GAP),
        object[1] - direction[1] * (contact + APPROACH_GAP),
    ];

    let lined_up = lateral.abs() < LATERAL_TOLERANCE
        && along < -(contact - CONTACT_SLACK)
        && along > -(contact + BEHIND_REACH);
    if lined_up {
        if is_low {
            return LineUp::Ready {
                direction,
                distance,
                lateral,
            };
        }
        // Lower only once the gripper is clear of the object's top face.
        if along <= -(contact + 0.004) || gripper[2] < cfg.table_height + shape.height() {
            return LineUp::Travel(move_toward(cfg, gripper, [behind[0], behind[1], low_z]));
        }
        return LineUp::Travel(move_toward(
            cfg,
            gripper,
            [behind[0], behind[1], gripper[2]],
        ));
    }

    let below_safe = gripper[2] < safe_z - 0.005;
    if below_safe && segment_passes_near(gripper, behind, object, clearance) {
        return LineUp::Travel(move_toward(cfg, gripper, [gripper[0], gripper[1], safe_z]));
    }
    let travel_z = if below_safe { gripper[2] } else { safe_z };
    LineUp::Travel(move_toward(cfg, gripper, [behind[0], behind[1], travel_z]))
}

/// The action that moves the gripper `step` (a fraction of the largest step)
/// along the unit horizontal `direction` while steering back toward the goal
/// line from a sideways offset `lateral` (m); fingers closed.
pub(crate) fn drive_along(
    cfg: &ArmConfig,
    direction: [f32; 2],
    step: f32,
    lateral: f32,
) -> [f32; 4] {
    let correction = -0.5 * lateral / cfg.max_gripper_step;
    [
        direction[0] * step - direction[1] * correction,
        direction[1] * step + direction[0] * correction,
        0.0,
        -1.0,
    ]
}

/// The action that moves the gripper from `from` toward `to` as far as one
/// step allows, fingers closed.
pub(crate) fn move_toward(cfg: &ArmConfig, from: [f32; 3], to: [f32; 3]) -> [f32; 4] {
    let scale = 1.0 / cfg.max_gripper_step;
    let mut action = [
        (to[0] - from[0]) * scale,
        (to[1] - from[1]) * scale,
        (to[2] - from[2]) * scale,
        -1.0,
    ];
    let largest = action[..3].iter().fold(0.0_f32, |m, a| m.max(a.abs()));
    if largest > 1.0 {
        // Shrink uniformly so the gripper keeps its heading.
        for a in &mut action[..3] {
            *a /= largest;
        }
    }
    action
}

/// Horizontal length of a 2-vector.
pub(crate) fn norm(v: [f32; 2]) -> f32 {
    (v[0] * v[0] + v[1] * v[1]).sqrt()
}

/// Whether the horizontal segment `from → to` passes within `radius` of `point`.
fn segment_passes_near(from: [f32; 3], to: [f32; 2], point: [f32; 3], radius: f32) -> bool {
    let d = [to[0] - from[0], to[1] - from[1]];
    let length_sq = d[0] * d[0] + d[1] * d[1];
    let w = [point[0] - from[0], point[1] - from[1]];
    let t = if length_sq > 0.0 {
        ((w[0] * d[0] + w[1] * d[1]) / length_sq).clamp(0.0, 1.0)
    } else {
        0.0
    };
    norm([w[0] - t * d[0], w[1] - t * d[1]]) < radius
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn move_toward_keeps_heading_when_clipped() {
        let cfg = ArmConfig::default();
        let action = move_toward(&cfg, [0.0; 3], [0.2, 0.1, 0.0]);
        assert!((action[0] - 1.0).abs() < 1e-6 && (action[1] - 0.5).abs() < 1e-6);
        let small = move_toward(&cfg, [0.0; 3], [0.01, 0.0, 0.0]);
        assert!((small[0] - 0.2).abs() < 1e-6);
    }

    #[test]
    fn segment_test_sees_an_object_in_the_way() {
        assert!(segment_passes_near(
            [0.0, 0.0, 0.0],
            [0.2, 0.0],
            [0.1, 0.01, 0.0],
            0.05
        ));
        assert!(!segment_passes_near(
            [0.0, 0.0, 0.0],
            [0.2, 0.0],
            [0.1, 0.1, 0.0],
            0.05
        ));
    }
}
