//! `ArmScene`: the rapier world shared by the arm tasks — floor, table, kinematic gripper.

use rapier3d::parry::query::{ShapeCastOptions, ShapeCastStatus, cast_shapes};
use rapier3d::prelude::*;

use super::config::{ArmConfig, GripperShape, MAX_FINGER_OPENING};

/// Typical body size (m) given to rapier as its `length_unit`.
const LENGTH_UNIT: f32 = 0.1;

/// Position, orientation and velocities of one rigid body, in the world frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct BodyState {
    /// Centre of the body (m).
    pub position: Vector,
    /// Orientation.
    pub rotation: Rotation,
    /// Linear velocity (m/s).
    pub linvel: Vector,
    /// Angular velocity (rad/s).
    pub angvel: Vector,
}

/// A physics world holding a floor, a table and a position-controlled gripper.
///
/// The world is rebuilt on every reset (rather than bodies being moved back),
/// so no contact cache or island state survives from one episode to the next:
/// that is what makes `reset(Some(seed))` bit-identical whatever came before.
pub(crate) struct ArmScene {
    world: PhysicsWorld,
    gripper: RigidBodyHandle,
    gripper_collider: ColliderHandle,
    /// Colliders of the dynamic bodies, which the gripper may rest on.
    dynamic_colliders: Vec<ColliderHandle>,
    /// Gripper velocity (m/s) over the last control step.
    gripper_velocity: Vector,
    /// Opening (m) of each cosmetic finger.
    finger_opening: f32,
    /// Finger opening speed (m/s) over the last control step.
    finger_velocity: f32,
}

impl ArmScene {
    /// Builds the floor, the table and the gripper at its start position.
    pub fn new(cfg: &ArmConfig) -> Self {
        let mut world = PhysicsWorld::new();
        world.gravity = Vector::new(0.0, 0.0, -9.81);
        world.integration_parameters.dt = cfg.control_dt / cfg.substeps as f32;
        world.integration_parameters.num_solver_iterations = cfg.solver_iterations;
        // rapier's tolerances (allowed penetration, prediction distance, and
        // the drift under which contacts are recycled instead of recomputed)
        // are tuned for metre-sized bodies. The objects here are ~5 cm, and
        // with the default scale a recycled contact kept the gripper's stale
        // bottom-edge normal while it pushed sideways, tipping and lifting the
        // box; scaling by 0.1 fixes that at no measurable cost.
        world.integration_parameters.length_unit = LENGTH_UNIT;

        // A floor so that anything pushed off the table comes to rest instead
        // of falling forever.
        world.insert_collider(
            ColliderBuilder::cuboid(10.0, 10.0, 0.05).translation(Vector::new(0.0, 0.0, -0.05)),
            None,
        );
        let [hx, hy] = cfg.table_half_extents;
        let half_height = 0.5 * cfg.table_height;
        world.insert_collider(
            ColliderBuilder::cuboid(hx, hy, half_height)
                .translation(Vector::new(0.0, 0.0, half_height))
                .friction(cfg.table_friction),
            None,
        );

        let shape = match cfg.gripper {
            GripperShape::Block {
                half_extents: [x, y, z],
            } => ColliderBuilder::cuboid(x, y, z),
            // rapier's cylinders stand along y; turn it upright.
            GripperShape::Cylinder {
                radius,
                half_height,
            } => ColliderBuilder::cylinder(half_height, radius).rotation(Vector::new(
                std::f32::consts::FRAC_PI_2,
                0.0,
                0.0,
            )),
        };
        let [sx, sy, height] = cfg.gripper_start;
        let (gripper, gripper_collider) = world.insert(
            RigidBodyBuilder::kinematic_position_based().translation(Vector::new(
                sx,
                sy,
                cfg.table_height + height,
            )),
            shape
                .friction(cfg.gripper_friction)
                .friction_combine_rule(CoefficientCombineRule::Min),
        );
        ArmScene {
            world,
            gripper,
            gripper_collider,
            dynamic_colliders: Vec::new(),
            gripper_velocity: Vector::ZERO,
            finger_opening: 0.0,
            finger_velocity: 0.0,
        }
    }

    /// Adds a dynamic body with one collider; it never sleeps, because a
    /// sleeping body ignores the kinematic gripper.
    pub fn add_dynamic(
        &mut self,
        body: RigidBodyBuilder,
        collider: ColliderBuilder,
    ) -> RigidBodyHandle {
        let (body, collider) = self.world.insert(body.can_sleep(false), collider);
        self.dynamic_colliders.push(collider);
        body
    }

    /// Adds a fixed collider (walls, obstacles).
    pub fn add_fixed(&mut self, collider: ColliderBuilder) {
        self.world.insert_collider(collider, None);
    }

    /// Applies one validated action in [-1, 1]⁴ and advances one control step.
    ///
    /// The gripper target moves by `action[..3] · max_gripper_step`, clamped to
    /// the workspace above the table, and the gripper is driven there along a
    /// straight line over the physics substeps so its velocity is constant
    /// within the step. `action[3]` opens (> 0) or closes (< 0) the fingers.
    pub fn advance(&mut self, cfg: &ArmConfig, action: &[f32]) {
        let start = self.world.bodies[self.gripper].translation();
        let delta = Vector::new(action[0], action[1], action[2]) * cfg.max_gripper_step;
        let target = self.stop_on_top(start, clamp_to_workspace(cfg, start + delta));
        self.gripper_velocity = (target - start) / cfg.control_dt;

        let opening =
            (self.finger_opening + action[3] * cfg.max_finger_step).clamp(0.0, MAX_FINGER_OPENING);
        self.finger_velocity = (opening - self.finger_opening) / cfg.control_dt;
        self.finger_opening = opening;

        for substep in 1..=cfg.substeps {
            let fraction = substep as f32 / cfg.substeps as f32;
            self.world.bodies[self.gripper]
                .set_next_kinematic_translation(start.lerp(target, fraction));
            self.world.step();
        }
    }

    /// Lowers the gripper only until it rests on a dynamic body below it.
    ///
    /// A kinematic body has infinite mass: driven down onto a box it would
    /// press the box into the table until the solver shot it out. A real arm
    /// is stopped by the contact, so the descent ends where a downward sweep
    /// of the gripper from the new horizontal position first meets a top face.
    /// Sideways contact is left alone — that is pushing.
    fn stop_on_top(&self, start: Vector, target: Vector) -> Vector {
        let drop = start.z - target.z;
        if drop <= 0.0 {
            return target;
        }
        let gripper = &self.world.colliders[self.gripper_collider];
        let local = gripper.position_wrt_parent().copied().unwrap_or_default();
        let from = Pose::from_translation(Vector::new(target.x, target.y, start.z)) * local;
        let options = ShapeCastOptions {
            max_time_of_impact: drop,
            stop_at_penetration: false,
            ..ShapeCastOptions::default()
        };
        // Sweep each body upward relative to the gripper; a hit on the
        // gripper's downward-facing surface means the body is below it.
        let mut lowest = target.z;
        for &handle in &self.dynamic_colliders {
            let collider = &self.world.colliders[handle];
            let hit = cast_shapes(
                &from,
                Vector::ZERO,
                gripper.shape(),
                collider.position(),
                Vector::Z,
                collider.shape(),
                options,
            );
            if let Ok(Some(hit)) = hit
                && hit.status != ShapeCastStatus::PenetratingOrWithinTargetDist
                && (from.rotation * hit.normal1).z < -0.5
            {
                lowest = lowest.max(start.z - hit.time_of_impact);
            }
        }
        Vector::new(target.x, target.y, lowest)
    }

    /// Centre of the gripper (m).
    pub fn gripper_position(&self) -> Vector {
        self.world.bodies[self.gripper].translation()
    }

    /// Gripper velocity (m/s) over the last control step.
    pub fn gripper_velocity(&self) -> Vector {
        self.gripper_velocity
    }

    /// Opening (m) and opening speed (m/s) of each cosmetic finger.
    pub fn fingers(&self) -> (f32, f32) {
        (self.finger_opening, self.finger_velocity)
    }

    /// The state of a body added with [`ArmScene::add_dynamic`].
    pub fn body_state(&self, handle: RigidBodyHandle) -> BodyState {
        let body = &self.world.bodies[handle];
        BodyState {
            position: body.translation(),
            rotation: *body.rotation(),
            linvel: body.linvel(),
            angvel: body.angvel(),
        }
    }
}

/// Clamps a gripper centre into the box above the table the gripper may reach.
fn clamp_to_workspace(cfg: &ArmConfig, p: Vector) -> Vector {
    let [hx, hy] = cfg.table_half_extents;
    Vector::new(
        p.x.clamp(-hx, hx),
        p.y.clamp(-hy, hy),
        p.z.clamp(
            cfg.table_height + cfg.gripper_min_height(),
            cfg.table_height + cfg.gripper_max_height,
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gripper_moves_by_the_scaled_action_and_stops_at_the_workspace() {
        let cfg = ArmConfig::default();
        let mut scene = ArmScene::new(&cfg);
        let start = scene.gripper_position();
        scene.advance(&cfg, &[1.0, -0.5, 0.0, 0.0]);
        let moved = scene.gripper_position() - start;
        assert!(
            (moved.x - 0.05).abs() < 1e-5 && (moved.y + 0.025).abs() < 1e-5,
            "{moved:?}"
        );
        for _ in 0..20 {
            scene.advance(&cfg, &[0.0, 0.0, -1.0, 0.0]);
        }
        let lowest = cfg.table_height + cfg.gripper_min_height();
        assert!((scene.gripper_position().z - lowest).abs() < 1e-5);
    }

    #[test]
    fn gripper_lowered_onto_a_box_rests_on_it() {
        let cylinder = GripperShape::Cylinder {
            radius: 0.02,
            half_height: 0.03,
        };
        for cfg in [ArmConfig::default(), ArmConfig::default().gripper(cylinder)] {
            let mut scene = ArmScene::new(&cfg);
            let start = Vector::new(0.0, 0.0, cfg.table_height + 0.025);
            let handle = scene.add_dynamic(
                RigidBodyBuilder::dynamic().translation(start),
                ColliderBuilder::cuboid(0.025, 0.025, 0.025),
            );
            for _ in 0..10 {
                scene.advance(&cfg, &[0.0, 0.0, -1.0, 0.0]);
            }
            let box_state = scene.body_state(handle);
            let gripper_bottom = scene.gripper_position().z - cfg.gripper.half_height();
            let box_top = cfg.table_height + 0.05;
            assert!(
                (gripper_bottom - box_top).abs() < 2e-3,
                "{:?}: {gripper_bottom}",
                cfg.gripper
            );
            assert!(
                (box_state.position - start).length() < 2e-3,
                "{:?}",
                box_state.position
            );
            assert!(box_state.linvel.length() < 0.05);
        }
    }

    #[test]
    fn a_resting_box_stays_on_the_table() {
        let cfg = ArmConfig::default();
        let mut scene = ArmScene::new(&cfg);
        let start = Vector::new(0.1, 0.1, cfg.table_height + 0.025);
        let handle = scene.add_dynamic(
            RigidBodyBuilder::dynamic().translation(start),
            ColliderBuilder::cuboid(0.025, 0.025, 0.025),
        );
        for _ in 0..50 {
            scene.advance(&cfg, &[0.0; 4]);
        }
        let moved = scene.body_state(handle).position - start;
        assert!(moved.length() < 2e-3, "box drifted by {moved:?}");
    }
}
