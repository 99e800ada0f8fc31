//! `worm`: a planar multi-link swimmer in a viscous fluid, simulated with rapier3d.
//!
//! # Description
//!
//! A chain of `links` rods joined end to end by hinge joints floats in the
//! plane z = 0 (no gravity). The fluid resists motion along a rod less than
//! motion across it (resistive-force drag, `drag_normal ≫ drag_tangential`),
//! so a wave of bending that travels from head to tail pushes the body
//! forward, as in MuJoCo's `Swimmer`. The task is to swim along +x as fast as
//! possible. The head is link 0, at +x in the starting pose.
//!
//! Each joint has a position servo (rapier's implicit PD motor): the action
//! sets the servo targets, the servo produces the torque. Target angles
//! rather than raw torques make the map from action to body shape direct
//! and nearly memoryless, so a policy shapes the body itself; a random
//! policy jitters in place (its return is about −1% of the best gait's).
//!
//! # Action Space
//!
//! `Box(-1, 1, (links − 1,))`: the target angle of joint `i` is
//! `a[i] · max_joint_angle` (default ±1.2 rad). Out-of-range components are
//! clipped when `clip_actions` is true (the default) and an
//! `Error::ActionOutOfBounds` otherwise; a non-finite component is always
//! `Error::NonFiniteAction`, a wrong length `Error::ActionShape`.
//!
//! # Observation Space
//!
//! `Box(-inf, inf, (2·links + 2,))`, Swimmer's layout (8 for 3 links):
//!
//! | index | observation | unit |
//! |---|---|---|
//! | 0 | head heading (angle of link 0 to +x), wrapped to [−π, π] | rad |
//! | 1 … links−1 | joint angles (heading of link i+1 minus link i) | rad |
//! | links, links+1 | head centre velocity along x, y | m/s |
//! | links+2 | head angular velocity | rad/s |
//! | links+3 … 2·links+1 | joint angular velocities | rad/s |
//!
//! The position is not observed, so the policy cannot depend on where the
//! worm is (as in Swimmer with `exclude_current_positions_from_observation`).
//!
//! # Rewards
//!
//! `reward = forward_reward − ctrl_cost_weight · |a|²`, where
//! `forward_reward` is the mean x-velocity of the centre of mass over the
//! control step (m/s), `(x_after − x_before) / control_dt`. The return of an
//! episode is therefore `distance swum / control_dt` minus a tiny control
//! cost: 25 per metre at the default 0.04 s control step, as in Swimmer-v5.
//! `info` holds `reward_forward`, `reward_ctrl` (≤ 0), `x_position` and
//! `x_velocity` (m, m/s, centre of mass).
//!
//! # Starting State
//!
//! Nearly straight along +x with the centre of mass at the origin. The head
//! heading and every joint angle get independent `U(−s, s)` noise (rad), and
//! the head velocity (m/s), head angular velocity and joint angular velocities
//! (rad/s) get `U(−s, s)` noise too, with `s = reset_noise_scale` (0.1); the
//! other links' velocities follow from the joints. All of it is drawn from the
//! environment's generator, so `reset(Some(seed))` gives a bit-identical
//! episode for the same actions.
//!
//! # Episode End
//!
//! * Termination: never (`terminated` is always false).
//! * Truncation: after `max_episode_steps` (1000) control steps.
//!
//! Stepping after the end (or before the first reset) is `Error::NeedsReset`.
//! Should the simulation ever produce a non-finite state (only possible with
//! extreme settings), `step` returns an `Error::Config` naming it and the
//! episode needs a reset.
//!
//! # Arguments
//!
//! [`WormConfig`], built like `WormConfig::default().links(5)`:
//!
//! | field | type | default | unit |
//! |---|---|---|---|
//! | `links` | usize | 3 | |
//! | `link_length` | f32 | 1.0 | m |
//! | `link_radius` | f32 | 0.1 | m |
//! | `density` | f32 | 300 | kg/m³ |
//! | `drag_tangential` | f32 | 1.5 | N·s/m² |
//! | `drag_normal` | f32 | 30 | N·s/m² |
//! | `max_joint_angle` | f32 | 1.2 | rad |
//! | `motor_stiffness` | f32 | 400 | 1/s² |
//! | `motor_damping` | f32 | 40 | 1/s |
//! | `motor_max_torque` | f32 | 1000 | N·m |
//! | `control_dt` | f32 | 0.04 | s |
//! | `substeps` | usize | 2 | |
//! | `solver_iterations` | usize | 2 | |
//! | `pgs_iterations` | usize | 2 | |
//! | `ctrl_cost_weight` | f32 | 1e-4 | |
//! | `max_episode_steps` | usize | 1000 | steps |
//! | `reset_noise_scale` | f32 | 0.1 | rad, m/s, rad/s |
//! | `clip_actions` | bool | true | |
//!
//! # Reference numbers
//!
//! Measured in release mode with the defaults (3 links), seed 0; rerun them
//! with `cargo run --release -p shoal-rl-env --example worm_reference`:
//!
//! * best travelling wave ([`best_travelling_wave`]): amplitude 1.0,
//!   ω = 9.5 rad/s, phase −1.6 rad; return ≈ 776 over 1000 steps, mean speed
//!   ≈ 0.78 m/s (31 m);
//! * uniformly random actions: return ≈ −10 ± 16 (about −1% of the gait,
//!   the same ratio as Swimmer-v5's −3 against its 183);
//! * speed: ≈ 125,000 control steps/s on one core (5 links: ≈ 80,000).
//!
//! # Version History
//!
//! * v1: first version (rapier3d 0.36).
//!
//! # Example
//!
//! ```
//! use shoal_rl_core::Env;
//! use shoal_rl_env::{Worm, WormConfig, travelling_wave};
//!
//! let config = WormConfig::default();
//! let mut worm = Worm::new(config.clone()).unwrap();
//! worm.reset(Some(0));
//! for k in 0..100 {
//!     let t = k as f64 * config.control_dt as f64;
//!     worm.step(&travelling_wave(t, 1.0, 5.0, -1.2, 2)).unwrap();
//! }
//! assert!(worm.x_position() > 0.1, "a head-to-tail wave swims forward");
//! ```

use rand::RngExt;
use rand::rngs::StdRng;
use rapier3d::prelude::*;
use serde::{Deserialize, Serialize};
use shoal_rl_core::{Env, Error, Info, Result, Space, Step, TimeLimit, reseed, rng_from_seed};

use crate::chain::wrap_angle;
use crate::limits::{MAX_BODY_PARTS, MAX_EPISODE_STEPS, MAX_SUBSTEPS, check_count};

/// Settings of [`Worm`]; see the table in the module docs.
///
/// ```
/// use shoal_rl_env::WormConfig;
/// let config = WormConfig::default().links(5).max_episode_steps(500);
/// assert!(config.validate().is_ok());
/// assert!(WormConfig::default().links(1).validate().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WormConfig {
    /// Number of rods, 2 to 64. Default 3 (as Swimmer).
    pub links: usize,
    /// Length of each rod, m. Default 1.0.
    pub link_length: f32,
    /// Radius of each rod, m (sets its mass with `density`). Default 0.1.
    pub link_radius: f32,
    /// Density of the rods, kg/m³. Default 300. The drag is applied
    /// explicitly, so the rods must stay heavy enough that
    /// `drag_normal · link_length · dt / mass` is well below 1.
    pub density: f32,
    /// Drag per metre of rod for motion along it, N·s/m². Default 1.5.
    pub drag_tangential: f32,
    /// Drag per metre of rod for motion across it, N·s/m². Default 30. Its
    /// ratio to `drag_tangential` is what makes undulation propulsive.
    pub drag_normal: f32,
    /// Servo target of a joint at action ±1, rad. Default 1.2.
    pub max_joint_angle: f32,
    /// Servo stiffness, as angular acceleration per radian of error
    /// (rapier's acceleration-based motor model), 1/s². Default 400.
    pub motor_stiffness: f32,
    /// Servo damping, as angular acceleration per rad/s of error, 1/s. Default 40.
    pub motor_damping: f32,
    /// Largest torque a servo may exert, N·m. Default 1000.
    pub motor_max_torque: f32,
    /// Duration of one control step, s. Default 0.04 (as Swimmer-v5).
    pub control_dt: f32,
    /// Physics steps per control step. Default 2.
    pub substeps: usize,
    /// Solver iterations per physics step (rapier's `num_solver_iterations`;
    /// each one is a small integration step of its own). Default 2. With the
    /// defaults the best gait's speed is within 4% of its converged value
    /// (many more iterations and substeps); fewer total small steps make a
    /// random policy drift backward (a solver-order artefact).
    pub solver_iterations: usize,
    /// Constraint relaxation sweeps inside each solver iteration (rapier's
    /// `num_internal_pgs_iterations`). Default 2: cheap, and it removes most
    /// of the head-to-tail ordering bias of a single sweep.
    pub pgs_iterations: usize,
    /// Weight of the squared-action control cost. Default 1e-4 (as Swimmer-v5).
    pub ctrl_cost_weight: f32,
    /// Control steps before the episode is truncated. Default 1000.
    pub max_episode_steps: usize,
    /// Half-width of the uniform noise on the starting angles (rad) and
    /// velocities (m/s, rad/s). Default 0.1.
    pub reset_noise_scale: f32,
    /// Clip out-of-range actions (true) or reject them with an error (false). Default true.
    pub clip_actions: bool,
}

impl Default for WormConfig {
    fn default() -> Self {
        WormConfig {
            links: 3,
            link_length: 1.0,
            link_radius: 0.1,
            density: 300.0,
            drag_tangential: 1.5,
            drag_normal: 30.0,
            max_joint_angle: 1.2,
            motor_stiffness: 400.0,
            motor_damping: 40.0,
            motor_max_torque: 1000.0,
            control_dt: 0.04,
            substeps: 2,
            solver_iterations: 2,
            pgs_iterations: 2,
            ctrl_cost_weight: 1e-4,
            max_episode_steps: 1000,
            reset_noise_scale: 0.1,
            clip_actions: true,
        }
    }
}

impl WormConfig {
    builder_methods! {
        /// Sets [`WormConfig::links`].
        links: usize,
        /// Sets [`WormConfig::link_length`] (m).
        link_length: f32,
        /// Sets [`WormConfig::link_radius`] (m).
        link_radius: f32,
        /// Sets [`WormConfig::density`] (kg/m³).
        density: f32,
        /// Sets [`WormConfig::drag_tangential`] (N·s/m²).
        drag_tangential: f32,
        /// Sets [`WormConfig::drag_normal`] (N·s/m²).
        drag_normal: f32,
        /// Sets [`WormConfig::max_joint_angle`] (rad).
        max_joint_angle: f32,
        /// Sets [`WormConfig::motor_stiffness`] (1/s²).
        motor_stiffness: f32,
        /// Sets [`WormConfig::motor_damping`] (1/s).
        motor_damping: f32,
        /// Sets [`WormConfig::motor_max_torque`] (N·m).
        motor_max_torque: f32,
        /// Sets [`WormConfig::control_dt`] (s).
        control_dt: f32,
        /// Sets [`WormConfig::substeps`].
        substeps: usize,
        /// Sets [`WormConfig::solver_iterations`].
        solver_iterations: usize,
        /// Sets [`WormConfig::pgs_iterations`].
        pgs_iterations: usize,
        /// Sets [`WormConfig::ctrl_cost_weight`].
        ctrl_cost_weight: f32,
        /// Sets [`WormConfig::max_episode_steps`].
        max_episode_steps: usize,
        /// Sets [`WormConfig::reset_noise_scale`].
        reset_noise_scale: f32,
        /// Sets [`WormConfig::clip_actions`].
        clip_actions: bool,
    }

    /// Checks that the settings describe a simulable worm, naming the first problem.
    pub fn validate(&self) -> Result<()> {
        let bad = |msg: String| Err(Error::Config(format!("worm: {msg}")));
        check_count("worm: links", self.links, 2, MAX_BODY_PARTS)?;
        for (name, value) in [
            ("worm: substeps", self.substeps),
            ("worm: solver_iterations", self.solver_iterations),
            ("worm: pgs_iterations", self.pgs_iterations),
        ] {
            check_count(name, value, 1, MAX_SUBSTEPS)?;
        }
        check_count(
            "worm: max_episode_steps",
            self.max_episode_steps,
            1,
            MAX_EPISODE_STEPS,
        )?;
        for (name, value) in [
            ("link_length", self.link_length),
            ("link_radius", self.link_radius),
            ("density", self.density),
            ("control_dt", self.control_dt),
            ("max_joint_angle", self.max_joint_angle),
            ("motor_stiffness", self.motor_stiffness),
            ("motor_max_torque", self.motor_max_torque),
        ] {
            if !(value.is_finite() && value > 0.0) {
                return bad(format!("{name} must be positive and finite, got {value}"));
            }
        }
        for (name, value) in [
            ("drag_tangential", self.drag_tangential),
            ("drag_normal", self.drag_normal),
            ("motor_damping", self.motor_damping),
            ("ctrl_cost_weight", self.ctrl_cost_weight),
            ("reset_noise_scale", self.reset_noise_scale),
        ] {
            if !(value.is_finite() && value >= 0.0) {
                return bad(format!("{name} must be ≥ 0 and finite, got {value}"));
            }
        }
        if self.max_joint_angle >= std::f32::consts::PI {
            return bad(format!(
                "max_joint_angle must be below π, got {}",
                self.max_joint_angle
            ));
        }
        // Explicit drag decays a velocity by the factor (1 − c·dt/m) per
        // physics step; near 1 it overshoots and the worm jitters or blows up.
        let decay =
            self.drag_tangential.max(self.drag_normal) * self.link_length * self.physics_dt()
                / self.link_mass();
        if decay > 0.5 {
            return bad(format!(
                "drag · link_length · dt / mass = {decay:.2} is too large for explicit drag \
                 (must be ≤ 0.5); raise density or substeps, or lower the drag"
            ));
        }
        Ok(())
    }

    /// Mass of one rod, kg.
    pub fn link_mass(&self) -> f32 {
        self.density * std::f32::consts::PI * self.link_radius.powi(2) * self.link_length
    }

    /// Duration of one physics step, s.
    pub fn physics_dt(&self) -> f32 {
        self.control_dt / self.substeps as f32
    }
}

/// The swimming worm, `worm`; see the module docs.
pub struct Worm {
    cfg: WormConfig,
    world: PhysicsWorld,
    /// Rods, head first.
    links: Vec<RigidBodyHandle>,
    /// Hinges; joint `i` joins link `i` (front) to link `i + 1`.
    joints: Vec<ImpulseJointHandle>,
    observation_space: Space,
    action_space: Space,
    rng: StdRng,
    limit: TimeLimit,
}

impl std::fmt::Debug for Worm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worm")
            .field("cfg", &self.cfg)
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

impl Worm {
    /// A worm with the given settings (validated). Call [`Env::reset`] before stepping.
    pub fn new(cfg: WormConfig) -> Result<Self> {
        cfg.validate()?;
        let mut worm = Worm {
            observation_space: Space::unbounded(2 * cfg.links + 2),
            action_space: Space::uniform(cfg.links - 1, -1.0, 1.0),
            world: PhysicsWorld::new(),
            links: Vec::new(),
            joints: Vec::new(),
            rng: rng_from_seed(0),
            limit: TimeLimit::new(cfg.max_episode_steps),
            cfg,
        };
        let straight = StartPose::straight(worm.cfg.links);
        worm.build(&straight);
        Ok(worm)
    }

    /// The settings.
    pub fn config(&self) -> &WormConfig {
        &self.cfg
    }

    /// x-coordinate of the centre of mass, m (0 at the start of an episode).
    pub fn x_position(&self) -> f32 {
        let sum: f32 = self
            .links
            .iter()
            .map(|h| self.world.bodies[*h].translation().x)
            .sum();
        sum / self.links.len() as f32
    }

    /// Control steps taken in the current episode.
    pub fn elapsed_steps(&self) -> usize {
        self.limit.elapsed()
    }

    /// The chain's outline for drawing: the head tip, every joint, then the
    /// tail tip, as `[x, y]` in metres.
    pub fn outline(&self) -> Vec<[f32; 2]> {
        let half = 0.5 * self.cfg.link_length;
        let mut points = Vec::with_capacity(self.links.len() + 1);
        for (i, handle) in self.links.iter().enumerate() {
            let body = &self.world.bodies[*handle];
            let (centre, (cos, sin)) = (body.translation(), heading(body));
            if i == 0 {
                points.push([centre.x + half * cos, centre.y + half * sin]);
            }
            points.push([centre.x - half * cos, centre.y - half * sin]);
        }
        points
    }

    /// Replaces the world with a fresh one in `pose`. A fresh world carries no
    /// solver state (warm starts, island bookkeeping) from an earlier
    /// episode, which is what makes seeded resets bit-identical.
    fn build(&mut self, pose: &StartPose) {
        let cfg = &self.cfg;
        let mut world = PhysicsWorld::new();
        world.gravity = Vector::ZERO;
        world.integration_parameters.dt = cfg.physics_dt();
        world.integration_parameters.num_solver_iterations = cfg.solver_iterations;
        world.integration_parameters.num_internal_pgs_iterations = cfg.pgs_iterations;
        // No colliders, so continuous collision detection has nothing to do.
        world.integration_parameters.max_ccd_substeps = 0;

        let mass = cfg.link_mass();
        let (length, radius) = (cfg.link_length, cfg.link_radius);
        // Solid cylinder along its local x axis.
        let axial = 0.5 * mass * radius * radius;
        let transverse = mass * (3.0 * radius * radius + length * length) / 12.0;
        let half = 0.5 * length;
        let mut links = Vec::with_capacity(cfg.links);
        for (i, link) in pose.links.iter().enumerate() {
            // Only the head is locked to the plane: the hinges keep the rest
            // planar. Locking every link makes each hinge's out-of-plane rows
            // massless on both sides, and rapier's solver then goes unstable.
            let locked = if i == 0 {
                LockedAxes::TRANSLATION_LOCKED_Z
                    | LockedAxes::ROTATION_LOCKED_X
                    | LockedAxes::ROTATION_LOCKED_Y
            } else {
                LockedAxes::empty()
            };
            let body = RigidBodyBuilder::dynamic()
                .translation(Vector::new(link.centre[0], link.centre[1], 0.0))
                .rotation(Vector::new(0.0, 0.0, link.heading))
                .linvel(Vector::new(link.velocity[0], link.velocity[1], 0.0))
                .angvel(Vector::new(0.0, 0.0, link.spin))
                .locked_axes(locked)
                .additional_mass_properties(MassProperties::new(
                    Vector::ZERO,
                    mass,
                    Vector::new(axial, transverse, transverse),
                ))
                .can_sleep(false)
                .build();
            links.push(world.bodies.insert(body));
        }
        let mut joints = Vec::with_capacity(cfg.links - 1);
        for pair in links.windows(2) {
            let joint = RevoluteJointBuilder::new(Vector::Z)
                .local_anchor1(Vector::new(-half, 0.0, 0.0))
                .local_anchor2(Vector::new(half, 0.0, 0.0))
                .motor_position(0.0, cfg.motor_stiffness, cfg.motor_damping)
                .motor_max_force(cfg.motor_max_torque)
                .build();
            joints.push(world.impulse_joints.insert(pair[0], pair[1], joint, true));
        }
        self.world = world;
        self.links = links;
        self.joints = joints;
    }

    fn observe(&self) -> Vec<f32> {
        let bodies = &self.world.bodies;
        let links = self.links.len();
        let mut obs = Vec::with_capacity(2 * links + 2);
        let head = &bodies[self.links[0]];
        let head_yaw = yaw(head);
        obs.push(wrap_angle(head_yaw));
        let mut previous = head_yaw;
        for handle in &self.links[1..] {
            let current = yaw(&bodies[*handle]);
            obs.push(wrap_angle(current - previous));
            previous = current;
        }
        let head_spin = head.angvel().z;
        obs.extend([head.linvel().x, head.linvel().y, head_spin]);
        let mut previous = head_spin;
        for handle in &self.links[1..] {
            let current = bodies[*handle].angvel().z;
            obs.push(current - previous);
            previous = current;
        }
        obs
    }

    /// Sets every rod's drag force and torque for the coming physics step
    /// (resistive-force theory: each element of a rod feels
    /// `−c_t·v_along − c_n·v_across` per metre; integrated over the rod this is
    /// a force through its centre plus a torque `−c_n·L³/12·ω`).
    fn apply_drag(&mut self) {
        let cfg = &self.cfg;
        let (length, tangential, normal) = (cfg.link_length, cfg.drag_tangential, cfg.drag_normal);
        let rotational = normal * length.powi(3) / 12.0;
        for handle in &self.links {
            let body = &mut self.world.bodies[*handle];
            let (cos, sin) = heading(body);
            let axis = Vector::new(cos, sin, 0.0);
            let velocity = body.linvel();
            let along = axis * velocity.dot(axis);
            let across = velocity - along;
            let force = -(along * tangential + across * normal) * length;
            let torque = -rotational * body.angvel().z;
            body.reset_forces(false);
            body.reset_torques(false);
            body.add_force(Vector::new(force.x, force.y, 0.0), false);
            body.add_torque(Vector::new(0.0, 0.0, torque), false);
        }
    }
}

/// Angle of a body's x axis to the world x axis (its rotation about z), rad.
fn yaw(body: &RigidBody) -> f32 {
    let q = body.rotation();
    2.0 * q.z.atan2(q.w)
}

/// Unit vector along a body's x axis, as `(cos, sin)` of its yaw.
fn heading(body: &RigidBody) -> (f32, f32) {
    let (sin, cos) = yaw(body).sin_cos();
    (cos, sin)
}

/// Where each rod starts and how it moves.
struct StartPose {
    links: Vec<LinkState>,
}

struct LinkState {
    centre: [f32; 2],
    heading: f32,
    velocity: [f32; 2],
    spin: f32,
}

impl StartPose {
    fn straight(links: usize) -> Self {
        StartPose::from_joints(
            1.0,
            0.0,
            &vec![0.0; links - 1],
            [0.0; 2],
            0.0,
            &vec![0.0; links - 1],
        )
    }

    /// The chain with the given head heading and joint angles, shifted so the
    /// centre of mass is at the origin, moving rigidly-consistently with the
    /// given head velocity, head spin and joint speeds (the hinges would
    /// otherwise yank mismatched velocities together on the first step).
    fn from_joints(
        link_length: f32,
        head_heading: f32,
        joint_angles: &[f32],
        head_velocity: [f32; 2],
        head_spin: f32,
        joint_speeds: &[f32],
    ) -> Self {
        let half = 0.5 * link_length;
        let mut links = Vec::with_capacity(joint_angles.len() + 1);
        links.push(LinkState {
            centre: [0.0, 0.0],
            heading: head_heading,
            velocity: head_velocity,
            spin: head_spin,
        });
        for (angle, speed) in joint_angles.iter().zip(joint_speeds) {
            let front = links.last().expect("the head is in");
            let (front_sin, front_cos) = front.heading.sin_cos();
            // The hinge sits at the tail end of the front rod.
            let hinge_offset = [-half * front_cos, -half * front_sin];
            let hinge = [
                front.centre[0] + hinge_offset[0],
                front.centre[1] + hinge_offset[1],
            ];
            let hinge_velocity = [
                front.velocity[0] - front.spin * hinge_offset[1],
                front.velocity[1] + front.spin * hinge_offset[0],
            ];
            let heading = front.heading + angle;
            let spin = front.spin + speed;
            let (sin, cos) = heading.sin_cos();
            let centre_offset = [-half * cos, -half * sin];
            links.push(LinkState {
                centre: [hinge[0] + centre_offset[0], hinge[1] + centre_offset[1]],
                heading,
                velocity: [
                    hinge_velocity[0] - spin * centre_offset[1],
                    hinge_velocity[1] + spin * centre_offset[0],
                ],
                spin,
            });
        }
        let count = links.len() as f32;
        let mean_x = links.iter().map(|l| l.centre[0]).sum::<f32>() / count;
        let mean_y = links.iter().map(|l| l.centre[1]).sum::<f32>() / count;
        for link in &mut links {
            link.centre[0] -= mean_x;
            link.centre[1] -= mean_y;
        }
        StartPose { links }
    }
}

impl Env for Worm {
    fn observation_space(&self) -> &Space {
        &self.observation_space
    }

    fn action_space(&self) -> &Space {
        &self.action_space
    }

    fn reset(&mut self, seed: Option<u64>) -> Vec<f32> {
        reseed(&mut self.rng, seed);
        let noise = self.cfg.reset_noise_scale;
        let joints = self.cfg.links - 1;
        let rng = &mut self.rng;
        let mut draw = || {
            if noise > 0.0 {
                rng.random_range(-noise..=noise)
            } else {
                0.0
            }
        };
        let head_heading = draw();
        let joint_angles: Vec<f32> = (0..joints).map(|_| draw()).collect();
        let head_velocity = [draw(), draw()];
        let head_spin = draw();
        let joint_speeds: Vec<f32> = (0..joints).map(|_| draw()).collect();
        let pose = StartPose::from_joints(
            self.cfg.link_length,
            head_heading,
            &joint_angles,
            head_velocity,
            head_spin,
            &joint_speeds,
        );
        self.build(&pose);
        self.limit.start();
        self.observe()
    }

    fn step(&mut self, action: &[f32]) -> Result<Step> {
        self.limit.check()?;
        let action = self.action_space.validate(action, self.cfg.clip_actions)?;
        let cfg = &self.cfg;
        for (handle, a) in self.joints.iter().zip(action.iter()) {
            let joint = self
                .world
                .impulse_joints
                .get_mut(*handle, false)
                .expect("worm joint");
            joint
                .data
                .as_revolute_mut()
                .expect("worm joints are revolute")
                .set_motor_position(
                    a * cfg.max_joint_angle,
                    cfg.motor_stiffness,
                    cfg.motor_damping,
                );
        }
        let ctrl_cost = cfg.ctrl_cost_weight * action.iter().map(|a| a * a).sum::<f32>();
        let control_dt = cfg.control_dt;
        let x_before = self.x_position();
        for _ in 0..self.cfg.substeps {
            self.apply_drag();
            self.world.step();
        }
        let x_after = self.x_position();
        let obs = self.observe();
        if !x_after.is_finite() || obs.iter().any(|v| !v.is_finite()) {
            self.limit.abort();
            return Err(Error::Config(
                "worm: the simulation produced a non-finite state; raise density or substeps, \
                 or lower the drag or motor gains"
                    .into(),
            ));
        }
        let x_velocity = (x_after - x_before) / control_dt;
        let info = Info::new()
            .with("reward_forward", x_velocity as f64)
            .with("reward_ctrl", -ctrl_cost as f64)
            .with("x_position", x_after as f64)
            .with("x_velocity", x_velocity as f64);
        let step = Step::new(obs, x_velocity - ctrl_cost);
        Ok(self.limit.finish(Step { info, ..step }))
    }
}

/// The open-loop travelling-wave gait: joint `i` gets
/// `amplitude · sin(omega · t + i · phase)` (action units, `t` in seconds).
/// A negative `phase` makes the wave run from head to tail, which swims
/// forward.
///
/// ```
/// let a = shoal_rl_env::travelling_wave(0.0, 0.5, 3.0, 1.0, 2);
/// assert_eq!(a.len(), 2);
/// assert_eq!(a[0], 0.0);
/// assert!((a[1] - 0.5 * 1f32.sin()).abs() < 1e-6);
/// ```
pub fn travelling_wave(t: f64, amplitude: f32, omega: f32, phase: f32, joints: usize) -> Vec<f32> {
    (0..joints)
        .map(|i| amplitude * (omega as f64 * t + i as f64 * phase as f64).sin() as f32)
        .collect()
}

/// A travelling-wave gait and what it achieves over one full episode: the
/// reference a trained policy is measured against.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GaitReference {
    /// Wave amplitude, action units (joint angle `amplitude · max_joint_angle`).
    pub amplitude: f32,
    /// Angular frequency, rad/s.
    pub omega: f32,
    /// Phase offset between neighbouring joints, rad.
    pub phase: f32,
    /// Return of one full episode (`max_episode_steps` control steps).
    pub episode_return: f64,
    /// Mean forward speed of the centre of mass over that episode, m/s.
    pub speed: f64,
    /// Distance the centre of mass moved along x over that episode, m.
    pub distance: f64,
}

/// Plays a travelling wave for `steps` control steps from the start drawn
/// with `seed`; returns the [`GaitReference`] of that rollout.
pub fn run_gait(
    cfg: &WormConfig,
    seed: u64,
    amplitude: f32,
    omega: f32,
    phase: f32,
    steps: usize,
) -> Result<GaitReference> {
    let mut worm = Worm::new(cfg.clone().max_episode_steps(steps.max(1)))?;
    worm.reset(Some(seed));
    let start = worm.x_position();
    let joints = cfg.links - 1;
    let mut episode_return = 0.0;
    for k in 0..steps {
        let t = k as f64 * cfg.control_dt as f64;
        episode_return += worm
            .step(&travelling_wave(t, amplitude, omega, phase, joints))?
            .reward as f64;
    }
    let distance = (worm.x_position() - start) as f64;
    let duration = steps.max(1) as f64 * cfg.control_dt as f64;
    Ok(GaitReference {
        amplitude,
        omega,
        phase,
        episode_return,
        speed: distance / duration,
        distance,
    })
}

/// Finds the fastest travelling wave for `cfg` by grid search: a coarse grid
/// over amplitude, frequency and phase on short rollouts (200 control
/// steps), then a finer grid around the winner, then one full episode with
/// the best gait, all from the start drawn with `seed`. About 600 short
/// rollouts: around a second in release mode for the default worm.
///
/// ```no_run
/// use shoal_rl_env::{WormConfig, best_travelling_wave};
/// let gait = best_travelling_wave(&WormConfig::default(), 0);
/// println!("{:.2} m/s with omega = {} rad/s, phase = {} rad", gait.speed, gait.omega, gait.phase);
/// ```
///
/// # Panics
/// If `cfg` is invalid ([`WormConfig::validate`]); [`try_best_travelling_wave`]
/// returns that as an error instead.
pub fn best_travelling_wave(cfg: &WormConfig, seed: u64) -> GaitReference {
    match try_best_travelling_wave(cfg, seed) {
        Ok(gait) => gait,
        Err(error) => panic!("best_travelling_wave: {error}"),
    }
}

/// [`best_travelling_wave`], with an invalid configuration (or one on which
/// every wave destabilises the simulation) as an error.
pub fn try_best_travelling_wave(cfg: &WormConfig, seed: u64) -> Result<GaitReference> {
    cfg.validate()?;
    let probe_steps = 200.min(cfg.max_episode_steps);
    let mut best: Option<GaitReference> = None;
    let mut consider = |amplitude: f32, omega: f32, phase: f32| {
        // A gait that destabilises an extreme configuration is simply not a candidate.
        if let Ok(gait) = run_gait(cfg, seed, amplitude, omega, phase, probe_steps)
            && best.as_ref().is_none_or(|b| gait.distance > b.distance)
        {
            best = Some(gait.clone());
        }
        best.clone()
    };
    let mut coarse = None;
    for amplitude in [0.5f32, 0.75, 1.0] {
        for omega in (1..=12).map(|k| k as f32) {
            for phase in (-7..=7).filter(|k| *k != 0).map(|k| k as f32 * 0.4) {
                coarse = consider(amplitude, omega, phase);
            }
        }
    }
    let coarse = coarse.ok_or_else(|| {
        Error::Config("worm: every travelling wave made the simulation unstable".into())
    })?;
    let mut fine = Some(coarse.clone());
    for amplitude in [coarse.amplitude - 0.125, coarse.amplitude] {
        for omega in (-3..=3).map(|k| coarse.omega + k as f32 * 0.25) {
            for phase in (-3..=3).map(|k| coarse.phase + k as f32 * 0.1) {
                if amplitude > 0.0 && omega > 0.0 {
                    fine = consider(amplitude, omega, phase);
                }
            }
        }
    }
    let winner = fine.expect("the coarse winner is a candidate");
    run_gait(
        cfg,
        seed,
        winner.amplitude,
        winner.omega,
        winner.phase,
        cfg.max_episode_steps,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rollout(worm: &mut Worm, seed: u64, actions: &[Vec<f32>]) -> Vec<(Vec<f32>, f32)> {
        let mut out = vec![(worm.reset(Some(seed)), 0.0)];
        for action in actions {
            let step = worm.step(action).unwrap();
            out.push((step.obs, step.reward));
        }
        out
    }

    fn random_actions(seed: u64, joints: usize, steps: usize) -> Vec<Vec<f32>> {
        let mut rng = rng_from_seed(seed);
        let space = Space::uniform(joints, -1.0, 1.0);
        (0..steps).map(|_| space.sample(&mut rng)).collect()
    }

    #[test]
    fn worm_passes_the_env_checker() {
        crate::check_env(|| Worm::new(WormConfig::default()).unwrap()).unwrap();
        crate::check_env(|| Worm::new(WormConfig::default().links(5).clip_actions(false)).unwrap())
            .unwrap();
    }

    #[test]
    fn same_seed_gives_bit_identical_episode() {
        let actions = random_actions(5, 2, 300);
        let mut worm = Worm::new(WormConfig::default()).unwrap();
        let first = rollout(&mut worm, 11, &actions);
        let other = rollout(&mut worm, 12, &actions);
        let again = rollout(&mut worm, 11, &actions);
        assert_eq!(first, again);
        assert_ne!(first[0].0, other[0].0);
    }

    #[test]
    fn reset_puts_the_centre_of_mass_at_the_origin() {
        let mut worm = Worm::new(WormConfig::default().links(5)).unwrap();
        let obs = worm.reset(Some(3));
        assert_eq!(obs.len(), 12);
        assert!(worm.x_position().abs() < 1e-6);
        assert!(
            obs.iter().all(|v| v.abs() <= 0.1 + 1e-6),
            "noise beyond 0.1: {obs:?}"
        );
    }

    #[test]
    fn starting_velocities_respect_the_hinges() {
        let mut worm = Worm::new(WormConfig::default().reset_noise_scale(0.5)).unwrap();
        worm.reset(Some(9));
        let outline_before = worm.outline();
        // The hinge points of neighbouring rods must move together: after a
        // tiny free step they still coincide.
        let link_length = worm.config().link_length;
        for pair in outline_before.windows(2) {
            let gap =
                ((pair[0][0] - pair[1][0]).powi(2) + (pair[0][1] - pair[1][1]).powi(2)).sqrt();
            assert!((gap - link_length).abs() < 1e-5);
        }
        let step = worm.step(&[0.0, 0.0]).unwrap();
        assert!(step.obs.iter().all(|v| v.is_finite()));
        let outline_after = worm.outline();
        for pair in outline_after.windows(2) {
            let gap =
                ((pair[0][0] - pair[1][0]).powi(2) + (pair[0][1] - pair[1][1]).powi(2)).sqrt();
            assert!((gap - link_length).abs() < 1e-3, "hinge opened: {gap}");
        }
    }

    #[test]
    fn travelling_wave_swims_forward_and_random_actions_do_not() {
        let cfg = WormConfig::default();
        let steps = 250;
        let wave = run_gait(&cfg, 0, 1.0, 5.0, -1.2, steps).unwrap();
        let mut worm = Worm::new(cfg.clone()).unwrap();
        let mut random_distances = Vec::new();
        for seed in 0..4 {
            worm.reset(Some(seed));
            for action in random_actions(100 + seed, 2, steps) {
                worm.step(&action).unwrap();
            }
            random_distances.push(worm.x_position() as f64);
        }
        let random_mean = random_distances.iter().sum::<f64>() / random_distances.len() as f64;
        assert!(
            wave.distance > 1.0,
            "the wave swam only {} m in 10 s",
            wave.distance
        );
        assert!(
            wave.distance > 10.0 * random_mean.abs(),
            "wave {} m vs random {random_distances:?} m",
            wave.distance
        );
    }

    #[test]
    fn grid_search_finds_a_gait_at_least_as_fast_as_random_off_grid_ones() {
        let cfg = WormConfig::default().max_episode_steps(400);
        let gait = best_travelling_wave(&cfg, 0);
        // Gaits drawn off the search grid (continuous amplitude, frequency
        // and phase), played for the same 400 steps from the same start.
        let mut rng = rng_from_seed(21);
        let random: Vec<GaitReference> = (0..16)
            .map(|_| {
                let amplitude = rng.random_range(0.3f32..1.0);
                let omega = rng.random_range(0.5f32..12.5);
                let phase = rng.random_range(-2.8f32..2.8);
                run_gait(&cfg, 0, amplitude, omega, phase, 400).unwrap()
            })
            .collect();
        let fastest = random.iter().map(|g| g.speed).fold(f64::MIN, f64::max);
        assert!(fastest > 0.0, "some random wave swims forward");
        assert!(gait.speed >= fastest, "{gait:?} vs {fastest} m/s");
        // The reported numbers are those of the winning wave replayed.
        let replay = run_gait(&cfg, 0, gait.amplitude, gait.omega, gait.phase, 400).unwrap();
        assert_eq!(replay, gait);
        // Return ≈ distance / control_dt: the control cost is tiny.
        let per_metre = gait.episode_return / gait.distance;
        assert!(
            (per_metre - 25.0).abs() < 0.5,
            "return per metre {per_metre}"
        );
        assert!(matches!(
            try_best_travelling_wave(&cfg.links(1), 0),
            Err(Error::Config(m)) if m == "worm: links must be between 2 and 64, got 1"
        ));
    }

    #[test]
    fn backward_wave_swims_backward() {
        let cfg = WormConfig::default();
        let forward = run_gait(&cfg, 0, 1.0, 5.0, -1.2, 200).unwrap();
        let backward = run_gait(&cfg, 0, 1.0, 5.0, 1.2, 200).unwrap();
        assert!(forward.distance > 0.0 && backward.distance < 0.0);
    }

    #[test]
    fn servo_holds_the_commanded_joint_angles() {
        let mut worm = Worm::new(WormConfig::default().reset_noise_scale(0.0).links(4)).unwrap();
        worm.reset(Some(0));
        let mut obs = Vec::new();
        for _ in 0..50 {
            obs = worm.step(&[0.5, -0.5, 0.25]).unwrap().obs;
        }
        let max = worm.config().max_joint_angle;
        for (joint, target) in [0.5 * max, -0.5 * max, 0.25 * max].into_iter().enumerate() {
            let angle = obs[1 + joint];
            assert!(
                (angle - target).abs() < 0.02,
                "joint {joint} at {angle}, target {target}"
            );
        }
        // Holding a shape still, the worm comes to rest.
        let speeds = &obs[4..];
        assert!(
            speeds.iter().all(|v| v.abs() < 0.05),
            "still moving: {speeds:?}"
        );
    }

    #[test]
    fn info_holds_the_reward_terms() {
        let mut worm = Worm::new(WormConfig::default()).unwrap();
        worm.reset(Some(0));
        let step = worm.step(&[1.0, -1.0]).unwrap();
        let forward = step.info.get("reward_forward").unwrap();
        let ctrl = step.info.get("reward_ctrl").unwrap();
        assert!((forward + ctrl - step.reward as f64).abs() < 1e-6);
        assert!((ctrl + 2e-4).abs() < 1e-9);
        assert_eq!(step.info.get("x_velocity"), Some(forward));
        assert_eq!(step.info.get("x_position"), Some(worm.x_position() as f64));
    }

    #[test]
    fn bad_actions_are_errors_and_never_corrupt_state() {
        let mut worm = Worm::new(WormConfig::default().clip_actions(false)).unwrap();
        assert!(matches!(worm.step(&[0.0, 0.0]), Err(Error::NeedsReset)));
        worm.reset(Some(0));
        assert!(matches!(
            worm.step(&[f32::NAN, 0.0]),
            Err(Error::NonFiniteAction { .. })
        ));
        assert!(matches!(
            worm.step(&[0.0, f32::INFINITY]),
            Err(Error::NonFiniteAction { .. })
        ));
        assert!(matches!(
            worm.step(&[2.0, 0.0]),
            Err(Error::ActionOutOfBounds { .. })
        ));
        assert!(matches!(worm.step(&[0.0]), Err(Error::ActionShape { .. })));
        assert_eq!(
            worm.elapsed_steps(),
            0,
            "rejected actions must not advance time"
        );
        let step = worm.step(&[0.1, 0.1]).unwrap();
        assert!(step.obs.iter().all(|v| v.is_finite()));
    }

    #[test]
    fn out_of_range_actions_are_clipped_by_default() {
        let mut clipped = Worm::new(WormConfig::default()).unwrap();
        let mut exact = Worm::new(WormConfig::default()).unwrap();
        clipped.reset(Some(4));
        exact.reset(Some(4));
        let a = clipped.step(&[7.0, -3.0]).unwrap();
        let b = exact.step(&[1.0, -1.0]).unwrap();
        assert_eq!(a.obs, b.obs);
    }

    #[test]
    fn episode_truncates_at_the_step_limit() {
        let mut worm = Worm::new(WormConfig::default().max_episode_steps(3)).unwrap();
        worm.reset(Some(0));
        assert!(!worm.step(&[0.0, 0.0]).unwrap().truncated);
        assert!(!worm.step(&[0.0, 0.0]).unwrap().truncated);
        let last = worm.step(&[0.0, 0.0]).unwrap();
        assert!(last.truncated && !last.terminated);
        assert!(matches!(worm.step(&[0.0, 0.0]), Err(Error::NeedsReset)));
        worm.reset(None);
        assert!(worm.step(&[0.0, 0.0]).is_ok());
    }

    #[test]
    fn invalid_config_is_rejected() {
        let message = |cfg: WormConfig| match Worm::new(cfg) {
            Err(Error::Config(message)) => message,
            other => panic!("expected a config error, got {other:?}"),
        };
        let cfg = WormConfig::default;
        assert_eq!(
            message(cfg().links(1)),
            "worm: links must be between 2 and 64, got 1"
        );
        assert_eq!(
            message(cfg().substeps(0)),
            "worm: substeps must be between 1 and 1000, got 0"
        );
        assert_eq!(
            message(cfg().control_dt(0.0)),
            "worm: control_dt must be positive and finite, got 0"
        );
        assert_eq!(
            message(cfg().density(f32::NAN)),
            "worm: density must be positive and finite, got NaN"
        );
        assert_eq!(
            message(cfg().drag_normal(-1.0)),
            "worm: drag_normal must be ≥ 0 and finite, got -1"
        );
        assert_eq!(
            message(cfg().max_joint_angle(4.0)),
            "worm: max_joint_angle must be below π, got 4"
        );
        // Too light for explicit drag at this step size.
        let light = message(cfg().density(1.0));
        assert!(
            light.starts_with("worm: drag · link_length · dt / mass = "),
            "{light}"
        );
        assert!(
            light.contains("is too large for explicit drag (must be ≤ 0.5)"),
            "{light}"
        );
        assert!(Worm::new(cfg()).is_ok());
    }
}
