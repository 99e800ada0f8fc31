//! `JointChain`: a serial chain of torque-driven revolute joints on a rapier
//! multibody, the body of the jointed tasks ([`Ur5Reacher`](crate::Ur5Reacher),
//! [`InvertedPendulum`](crate::InvertedPendulum)).
//!
//! A multibody works in joint coordinates, so the angles and velocities it
//! reports are exact, not recovered from body poses. Each joint's actuator is
//! a pair of equal and opposite torques on the two links it joins (MuJoCo's
//! `motor`), less a viscous joint damping recomputed every physics step.
//! Links carry no colliders: these tasks concern joint angles only.

use rapier3d::prelude::*;

/// One link of a chain, described at zero joint angles in the world frame.
#[derive(Clone, Debug)]
pub(crate) struct LinkSpec {
    /// Axis of the joint that moves this link (unit, right-handed: a
    /// positive angle turns the link about it).
    pub axis: Vector,
    /// Where that joint is (m).
    pub joint: Vector,
    /// Mass (kg).
    pub mass: f32,
    /// Centre of mass, relative to the joint (m).
    pub com: Vector,
    /// Principal moments of inertia about the centre of mass (kg·m²).
    pub inertia: Vector,
}

/// A rod of `rod_mass` spread along `length` of the x axis with a point
/// mass `tip_mass` at its end: (mass, centre of mass on x, principal inertia
/// about it), the inertia across the rod on y and z and a small floor on x.
pub(crate) fn rod_with_tip(rod_mass: f32, length: f32, tip_mass: f32) -> (f32, f32, Vector) {
    let mass = rod_mass + tip_mass;
    let com = (rod_mass * 0.5 * length + tip_mass * length) / mass;
    let across = rod_mass * length * length / 12.0
        + rod_mass * (0.5 * length - com).powi(2)
        + tip_mass * (length - com).powi(2);
    // A rod has almost no inertia about its own axis; rapier needs some.
    let along = 1e-3 * mass;
    (mass, com, Vector::new(along, across, across))
}

/// A fixed base and a serial chain of revolute joints in one rapier world.
pub(crate) struct JointChain {
    world: PhysicsWorld,
    links: Vec<RigidBodyHandle>,
    /// Each joint's axis in its link's frame.
    axes: Vec<Vector>,
    /// The multibody joint moving each link.
    joints: Vec<MultibodyJointHandle>,
    damping: Vec<f32>,
}

/// The chain's state; the rapier world has no `Debug`.
impl std::fmt::Debug for JointChain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JointChain")
            .field("angles", &self.angles())
            .field("velocities", &self.velocities())
            .finish_non_exhaustive()
    }
}

impl JointChain {
    /// A chain of `links` on a fixed base, with `gravity`, physics steps of
    /// `dt` s and joint damping `damping` (N·m·s/rad per joint), starting at
    /// `angles` (rad) and `velocities` (rad/s).
    ///
    /// The world is built anew for every episode, so no solver state carries
    /// over: that keeps seeded resets bit-identical.
    pub fn new(
        links: &[LinkSpec],
        gravity: Vector,
        dt: f32,
        damping: &[f32],
        angles: &[f32],
        velocities: &[f32],
    ) -> Self {
        let mut world = PhysicsWorld::new();
        world.gravity = gravity;
        world.integration_parameters.dt = dt;
        world.integration_parameters.max_ccd_substeps = 0;
        let base = world.insert_body(RigidBodyBuilder::fixed());
        let (mut parent, mut parent_origin) = (base, Vector::ZERO);
        let mut handles = Vec::with_capacity(links.len());
        let mut joints = Vec::with_capacity(links.len());
        for spec in links {
            let body = world.insert_body(
                RigidBodyBuilder::dynamic()
                    .translation(spec.joint)
                    .additional_mass_properties(MassProperties::new(
                        spec.com,
                        spec.mass,
                        spec.inertia,
                    ))
                    .can_sleep(false),
            );
            let joint = RevoluteJointBuilder::new(spec.axis)
                .local_anchor1(spec.joint - parent_origin)
                .local_anchor2(Vector::ZERO)
                .contacts_enabled(false);
            let handle = world
                .multibody_joints
                .insert(parent, body, joint, true)
                .expect("a serial chain has no loops");
            handles.push(body);
            joints.push(handle);
            (parent, parent_origin) = (body, spec.joint);
        }
        let mut chain = JointChain {
            world,
            links: handles,
            axes: links.iter().map(|l| l.axis).collect(),
            joints,
            damping: damping.to_vec(),
        };
        chain.place(angles, velocities);
        chain
    }

    /// Moves the chain to `angles` and `velocities` from its zero pose.
    fn place(&mut self, angles: &[f32], velocities: &[f32]) {
        let world = &mut self.world;
        let index = world
            .multibody_joints
            .rigid_body_link(self.links[0])
            .expect("every link is in the multibody")
            .multibody;
        let multibody = world
            .multibody_joints
            .get_multibody_mut(index)
            .expect("the chain's multibody exists");
        // Until a first kinematics pass the root counts as free, with six
        // coordinates of its own; after it, the fixed root has none.
        multibody.forward_kinematics(&world.bodies, true);
        multibody.apply_displacements(angles);
        multibody
            .generalized_velocity_mut()
            .copy_from_slice(velocities);
        multibody.forward_kinematics(&world.bodies, true);
        multibody.update_rigid_bodies(&mut world.bodies, true);
    }

    /// Joint angles (rad), unwrapped.
    pub fn angles(&self) -> Vec<f32> {
        (0..self.joints.len())
            .map(|j| {
                let (multibody, link) = self.world.multibody_joints.get(self.joints[j]).unwrap();
                // A revolute joint's one free coordinate is its x rotation.
                multibody.link(link).unwrap().joint().coords()[3]
            })
            .collect()
    }

    /// Joint velocities (rad/s).
    pub fn velocities(&self) -> Vec<f32> {
        (0..self.joints.len())
            .map(|j| {
                let (multibody, link) = self.world.multibody_joints.get(self.joints[j]).unwrap();
                multibody.joint_velocity(multibody.link(link).unwrap())[0]
            })
            .collect()
    }

    /// The world position of `point` given in link `link`'s frame (m).
    pub fn point_on_link(&self, link: usize, point: Vector) -> Vector {
        let body = &self.world.bodies[self.links[link]];
        body.translation() + body.rotation() * point
    }

    /// One physics step with actuator torques `torques` (N·m), less damping.
    pub fn step(&mut self, torques: &[f32]) {
        let velocities = self.velocities();
        self.apply_and_step(torques, &velocities);
    }

    /// One physics step with the actuator torques (N·m) `actuator` computes
    /// from the joint velocities at its start (a servo's), less damping.
    pub fn step_with(&mut self, actuator: impl FnOnce(&[f32]) -> Vec<f32>) {
        let velocities = self.velocities();
        let torques = actuator(&velocities);
        self.apply_and_step(&torques, &velocities);
    }

    fn apply_and_step(&mut self, torques: &[f32], velocities: &[f32]) {
        let bodies = &mut self.world.bodies;
        for handle in &self.links {
            bodies[*handle].reset_torques(false);
        }
        for (j, handle) in self.links.iter().enumerate() {
            let net = torques[j] - self.damping[j] * velocities[j];
            let axis = bodies[*handle].rotation() * self.axes[j];
            bodies[*handle].add_torque(axis * net, false);
            if j > 0 {
                bodies[self.links[j - 1]].add_torque(-axis * net, false);
            }
        }
        self.world.step();
    }
}

/// `angle` wrapped into `[−π, π)`.
pub fn wrap_angle(angle: f32) -> f32 {
    use std::f32::consts::PI;
    (angle + PI).rem_euclid(2.0 * PI) - PI
}
