//! `pendulum` ([`InvertedPendulum`]): swing a pendulum up and hold
//! it near upright, the HAC paper's inverted pendulum (Levy et al., 2019).
//!
//! * **Description**: a rapier multibody with one hinge: a massless pole of
//!   `length` (0.5 m) with a 1 kg ball at its end, hinge damping 0.1
//!   N·m·s/rad and gravity, as in the paper's MuJoCo model. The motor's
//!   largest torque (2 N·m) is below the ball's weight times the pole
//!   (4.9 N·m), so the pendulum must swing up. The goal is an angle and an
//!   angular velocity; the angle 0 is upright.
//! * **Action Space**: `Box(-1, 1, (1,))`: the hinge torque as a fraction of
//!   `max_torque`, held for `control_dt` (20 ms, in `substeps` = 10 physics
//!   steps). Out-of-range actions are clipped when `clip_actions` (default),
//!   else an error; non-finite ones are always an error.
//! * **Observation Space**: `Box((7,))` laid out as GoalEnv's
//!   `[observation | achieved_goal | desired_goal]`: `[cos θ, sin θ, θ̇ |
//!   θ, θ̇ | goal θ, goal θ̇]`, the angle wrapped to [−π, π) and the
//!   velocity clipped to ±15 rad/s. HAC's subgoals are the achieved goal's
//!   space, as in the paper.
//! * **Rewards**: sparse, `0` when the angle is within `angle_threshold`
//!   (9.5°) of the goal's (the difference wrapped) and the velocity within
//!   `velocity_threshold` (0.6 rad/s) of its, else `−1`;
//!   [`GoalEnv::compute_reward`] is that pure function of the two goals.
//!   `info` holds `"is_success"` (0/1).
//! * **Starting State**: the angle uniform in [π/4, 7π/4] (away from
//!   upright), the velocity uniform in [−0.05, 0.05]. The goal's angle is
//!   uniform in `goal_angle_range` (±16°) and its velocity in
//!   `goal_speed_range` (±0.6 rad/s), the paper's training goals. The
//!   paper tests on the upright goal (0, 0): both ranges `[0.0, 0.0]`, as
//!   the `pendulum-hac*` presets set for their evaluation envs
//!   (`[eval_env]`).
//! * **Episode End**: terminated on success when `terminate_on_success`
//!   (default true); truncated after `max_episode_steps` (1 000, the paper's).
//! * **Arguments**: [`InvertedPendulumConfig`].
//!
//! [`scripted_swing_up_action`] pumps energy into the swing and catches the
//! pendulum with a PD controller: a scripted solution.
//!
//! # Version History
//!
//! * v1: first version.
//!
//! ```
//! use shoal_rl_core::{Env, GoalEnv};
//! use shoal_rl_env::{InvertedPendulum, InvertedPendulumConfig};
//!
//! let mut env = InvertedPendulum::new(InvertedPendulumConfig::default()).unwrap();
//! let obs = env.reset(Some(0));
//! let (_, achieved, desired) = env.split_obs(&obs);
//! assert_eq!(env.compute_reward(achieved, desired), -1.0, "it starts hanging");
//! ```

use std::f32::consts::PI;

use rand::RngExt;
use rand::rngs::StdRng;
use rapier3d::prelude::Vector;
use serde::{Deserialize, Serialize};
use shoal_rl_core::{
    Env, Error, GoalEnv, Info, Result, Space, Step, TimeLimit, reseed, rng_from_seed,
};

use crate::chain::{JointChain, LinkSpec, wrap_angle};
use crate::limits::{MAX_EPISODE_STEPS, MAX_SUBSTEPS, check_count};

const GRAVITY: f32 = 9.81;
/// Observed angular velocities are clipped to ±this, rad/s (the paper's).
const MAX_OBSERVED_SPEED: f32 = 15.0;

/// Settings of [`InvertedPendulum`]; the defaults are the paper's task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct InvertedPendulumConfig {
    /// Pole length, hinge to ball, m. Default 0.5.
    pub length: f32,
    /// The ball's mass, kg. Default 1.
    pub mass: f32,
    /// Largest hinge torque, N·m. Default 2.
    pub max_torque: f32,
    /// Viscous hinge damping, N·m·s/rad. Default 0.1.
    pub damping: f32,
    /// The goal angle is reached within this, rad. Default 9.5° (0.1658).
    pub angle_threshold: f32,
    /// The goal velocity is reached within this, rad/s. Default 0.6.
    pub velocity_threshold: f32,
    /// Duration of one action, s. Default 0.02.
    pub control_dt: f32,
    /// Physics steps per action (each `control_dt / substeps` long). Default 10.
    pub substeps: usize,
    /// Actions per episode. Default 1000.
    pub max_episode_steps: usize,
    /// End the episode when the goal is reached. Default true.
    pub terminate_on_success: bool,
    /// Clip out-of-range actions (else they are an error). Default true.
    pub clip_actions: bool,
    /// The goal angle is drawn uniformly from `[low, high]`, rad, within
    /// [−π, π). Default ±16° (the paper's training goals; it tests on
    /// `[0.0, 0.0]`).
    pub goal_angle_range: [f32; 2],
    /// The goal velocity is drawn uniformly from `[low, high]`, rad/s,
    /// within ±15. Default ±0.6 (the paper's training goals; it tests on
    /// `[0.0, 0.0]`).
    pub goal_speed_range: [f32; 2],
}

impl Default for InvertedPendulumConfig {
    fn default() -> Self {
        InvertedPendulumConfig {
            length: 0.5,
            mass: 1.0,
            max_torque: 2.0,
            damping: 0.1,
            angle_threshold: 9.5f32.to_radians(),
            velocity_threshold: 0.6,
            control_dt: 0.02,
            substeps: 10,
            max_episode_steps: 1000,
            terminate_on_success: true,
            clip_actions: true,
            goal_angle_range: [-16f32.to_radians(), 16f32.to_radians()],
            goal_speed_range: [-0.6, 0.6],
        }
    }
}

impl InvertedPendulumConfig {
    builder_methods! {
        /// Sets [`InvertedPendulumConfig::max_episode_steps`].
        max_episode_steps: usize,
    }

    /// Checks every value; the error names the offending key.
    pub fn validate(&self) -> Result<()> {
        for (name, value) in [
            ("length", self.length),
            ("mass", self.mass),
            ("max_torque", self.max_torque),
            ("angle_threshold", self.angle_threshold),
            ("velocity_threshold", self.velocity_threshold),
            ("control_dt", self.control_dt),
        ] {
            if !(value.is_finite() && value > 0.0) {
                return Err(Error::Config(format!(
                    "pendulum: {name} must be positive and finite, got {value}"
                )));
            }
        }
        if !(self.damping.is_finite() && self.damping >= 0.0) {
            return Err(Error::Config(format!(
                "pendulum: damping must be finite and non-negative, got {}",
                self.damping
            )));
        }
        for (name, [low, high], bound) in [
            ("goal_angle_range", self.goal_angle_range, PI),
            (
                "goal_speed_range",
                self.goal_speed_range,
                MAX_OBSERVED_SPEED,
            ),
        ] {
            if !(low.is_finite()
                && high.is_finite()
                && -bound <= low
                && low <= high
                && high <= bound)
            {
                return Err(Error::Config(format!(
                    "pendulum: {name} must be [low, high] with -{bound} <= low <= high <= {bound}, \
                     got [{low}, {high}]"
                )));
            }
        }
        check_count("pendulum: substeps", self.substeps, 1, MAX_SUBSTEPS)?;
        check_count(
            "pendulum: max_episode_steps",
            self.max_episode_steps,
            1,
            MAX_EPISODE_STEPS,
        )
    }
}

/// Energy pumping far from upright, a PD catch near it: a scripted
/// swing-up toward the goal of `obs`, in `[-1, 1]` action units.
pub fn scripted_swing_up_action(config: &InvertedPendulumConfig, obs: &[f32]) -> Vec<f32> {
    let (angle, speed) = (obs[3], obs[4]);
    let (goal_angle, goal_speed) = (obs[5], obs[6]);
    let inertia = config.mass * config.length * config.length;
    let torque = if angle.abs() < 0.6 {
        let error = wrap_angle(goal_angle - angle);
        12.0 * error + 2.0 * (goal_speed - speed)
    } else {
        // Energy relative to resting upright; push along the swing while short of it.
        let energy = 0.5 * inertia * speed * speed
            + config.mass * GRAVITY * config.length * (angle.cos() - 1.0);
        let push = if speed.abs() < 1e-3 {
            1.0
        } else {
            speed.signum()
        };
        -10.0 * energy * push
    };
    vec![(torque / config.max_torque).clamp(-1.0, 1.0)]
}

/// The inverted pendulum, `pendulum`; see the module docs.
#[derive(Debug)]
pub struct InvertedPendulum {
    cfg: InvertedPendulumConfig,
    chain: JointChain,
    goal: [f32; 2],
    observation_space: Space,
    action_space: Space,
    rng: StdRng,
    limit: TimeLimit,
}

impl InvertedPendulum {
    /// A pendulum with the given settings (validated). Call [`Env::reset`] before stepping.
    pub fn new(cfg: InvertedPendulumConfig) -> Result<Self> {
        cfg.validate()?;
        let v = MAX_OBSERVED_SPEED;
        let observation_space = Space::new(
            vec![-1.0, -1.0, -v, -PI, -v, -PI, -v],
            vec![1.0, 1.0, v, PI, v, PI, v],
        );
        Ok(InvertedPendulum {
            chain: Self::chain(&cfg, 0.0, 0.0),
            observation_space,
            action_space: Space::uniform(1, -1.0, 1.0),
            goal: [0.0; 2],
            rng: rng_from_seed(0),
            limit: TimeLimit::new(cfg.max_episode_steps),
            cfg,
        })
    }

    fn chain(cfg: &InvertedPendulumConfig, angle: f32, speed: f32) -> JointChain {
        // The ball, a 5 cm sphere, at the pole's end; the pole stands along z.
        let ball = 0.4 * cfg.mass * 0.05 * 0.05;
        let pole = LinkSpec {
            axis: Vector::Y,
            joint: Vector::ZERO,
            mass: cfg.mass,
            com: Vector::new(0.0, 0.0, cfg.length),
            inertia: Vector::splat(ball),
        };
        JointChain::new(
            &[pole],
            Vector::new(0.0, 0.0, -GRAVITY),
            cfg.control_dt / cfg.substeps as f32,
            &[cfg.damping],
            &[angle],
            &[speed],
        )
    }

    /// The settings.
    pub fn config(&self) -> &InvertedPendulumConfig {
        &self.cfg
    }

    /// Puts the pendulum at `angle` (rad, 0 upright) with `speed` (rad/s)
    /// and the goal at `goal`, keeping the step count: for tests and renders.
    pub fn set_state(&mut self, angle: f32, speed: f32, goal: [f32; 2]) {
        self.chain = Self::chain(&self.cfg, angle, speed);
        self.goal = goal;
    }

    /// The ball's position in the world (x, z), m.
    pub fn ball_position(&self) -> [f32; 2] {
        let p = self
            .chain
            .point_on_link(0, Vector::new(0.0, 0.0, self.cfg.length));
        [p.x, p.z]
    }

    /// The current observation.
    pub fn observe(&self) -> Vec<f32> {
        let angle = wrap_angle(self.chain.angles()[0]);
        let speed = self.chain.velocities()[0].clamp(-MAX_OBSERVED_SPEED, MAX_OBSERVED_SPEED);
        vec![
            angle.cos(),
            angle.sin(),
            speed,
            angle,
            speed,
            self.goal[0],
            self.goal[1],
        ]
    }
}

impl Env for InvertedPendulum {
    fn observation_space(&self) -> &Space {
        &self.observation_space
    }

    fn action_space(&self) -> &Space {
        &self.action_space
    }

    fn reset(&mut self, seed: Option<u64>) -> Vec<f32> {
        reseed(&mut self.rng, seed);
        let angle = self.rng.random_range(PI / 4.0..=7.0 * PI / 4.0);
        let speed = self.rng.random_range(-0.05..=0.05);
        let ([angle_low, angle_high], [speed_low, speed_high]) =
            (self.cfg.goal_angle_range, self.cfg.goal_speed_range);
        self.goal = [
            self.rng.random_range(angle_low..=angle_high),
            self.rng.random_range(speed_low..=speed_high),
        ];
        self.chain = Self::chain(&self.cfg, angle, speed);
        self.limit.start();
        self.observe()
    }

    fn step(&mut self, action: &[f32]) -> Result<Step> {
        self.limit.check()?;
        let action = self.action_space.validate(action, self.cfg.clip_actions)?;
        let torque = [action[0] * self.cfg.max_torque];
        for _ in 0..self.cfg.substeps {
            self.chain.step(&torque);
        }
        let obs = self.observe();
        let (achieved, desired) = (&obs[3..5], &obs[5..7]);
        let success = self.is_success(achieved, desired);
        Ok(self.limit.finish(Step {
            reward: self.compute_reward(achieved, desired),
            terminated: success && self.cfg.terminate_on_success,
            truncated: false,
            info: Info::new().with("is_success", if success { 1.0 } else { 0.0 }),
            obs,
        }))
    }
}

impl GoalEnv for InvertedPendulum {
    fn goal_dim(&self) -> usize {
        2
    }

    fn is_success(&self, achieved: &[f32], desired: &[f32]) -> bool {
        wrap_angle(achieved[0] - desired[0]).abs() <= self.cfg.angle_threshold
            && (achieved[1] - desired[1]).abs() <= self.cfg.velocity_threshold
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check_goal_env;

    #[test]
    fn goals_come_from_their_ranges_and_bad_ranges_are_refused() {
        let goals = |cfg: InvertedPendulumConfig| -> Vec<[f32; 2]> {
            let mut env = InvertedPendulum::new(cfg).unwrap();
            (0..200)
                .map(|seed| {
                    let obs = env.reset(Some(seed));
                    [obs[5], obs[6]]
                })
                .collect()
        };
        // The paper's test goal: upright and still, every episode.
        let upright = goals(InvertedPendulumConfig {
            goal_angle_range: [0.0, 0.0],
            goal_speed_range: [0.0, 0.0],
            ..InvertedPendulumConfig::default()
        });
        assert!(upright.iter().all(|goal| *goal == [0.0, 0.0]));
        // The training goals fill ±16° and ±0.6 rad/s.
        let train = goals(InvertedPendulumConfig::default());
        let bound = 16f32.to_radians();
        assert!(
            train
                .iter()
                .all(|[a, v]| a.abs() <= bound && v.abs() <= 0.6)
        );
        assert!(train.iter().any(|[a, _]| *a > 0.8 * bound));
        assert!(train.iter().any(|[a, _]| *a < -0.8 * bound));
        assert!(train.iter().any(|[_, v]| *v > 0.48) && train.iter().any(|[_, v]| *v < -0.48));
        for (angle, speed) in [
            ([0.2, 0.1], [0.0, 0.0]),
            ([0.0, 4.0], [0.0, 0.0]),
            ([0.0, 0.0], [f32::NAN, 0.0]),
            ([0.0, 0.0], [-20.0, 0.0]),
        ] {
            let message = InvertedPendulum::new(InvertedPendulumConfig {
                goal_angle_range: angle,
                goal_speed_range: speed,
                ..InvertedPendulumConfig::default()
            })
            .err()
            .unwrap()
            .to_string();
            assert!(message.contains("_range must be [low, high]"), "{message}");
        }
    }

    #[test]
    fn it_swings_like_a_pendulum_of_its_length() {
        // Released from 0.1 rad off hanging, undamped, without torque, a
        // point pendulum's period is 2π·√(L/g) ≈ 1.418 s: after half of it
        // the ball is at the other extreme.
        let cfg = InvertedPendulumConfig {
            damping: 0.0,
            ..InvertedPendulumConfig::default()
        };
        let mut env = InvertedPendulum::new(cfg.clone()).unwrap();
        env.reset(Some(0));
        env.set_state(PI - 0.1, 0.0, [0.0; 2]);
        let control_dt = cfg.control_dt;
        let half_period = PI * (cfg.length / GRAVITY).sqrt();
        let steps = (half_period / control_dt).round() as usize;
        for _ in 0..steps {
            env.step(&[0.0]).unwrap();
        }
        let angle = env.observe()[3];
        // The ball's 5 cm sphere adds 0.4 % to the period.
        assert!(
            (wrap_angle(angle - (-PI + 0.1))).abs() < 0.02,
            "angle {angle}"
        );
        // Upright: the ball above the hinge; a quarter turn: beside it.
        env.set_state(0.0, 0.0, [0.0; 2]);
        let [x, z] = env.ball_position();
        assert!(x.abs() < 1e-5 && (z - 0.5).abs() < 1e-5, "{x} {z}");
        env.set_state(PI / 2.0, 0.0, [0.0; 2]);
        let [x, z] = env.ball_position();
        assert!((x - 0.5).abs() < 1e-5 && z.abs() < 1e-5, "{x} {z}");
    }

    #[test]
    fn the_motor_cannot_lift_it_straight_but_the_scripted_swing_up_reaches_the_goal() {
        let cfg = InvertedPendulumConfig::default();
        let mut env = InvertedPendulum::new(cfg.clone()).unwrap();
        // Full torque from hanging: it stalls below horizontal.
        env.reset(Some(1));
        env.set_state(PI, 0.0, [0.0; 2]);
        let mut highest = PI;
        for _ in 0..200 {
            let obs = env.step(&[1.0]).unwrap().obs;
            highest = highest.min(obs[3].abs());
        }
        assert!(highest > PI / 2.0, "lifted to {highest} rad from upright");
        for seed in 0..5 {
            let mut obs = env.reset(Some(seed));
            loop {
                let step = env.step(&scripted_swing_up_action(&cfg, &obs)).unwrap();
                obs = step.obs.clone();
                if step.done() {
                    assert_eq!(step.info.get("is_success"), Some(1.0), "seed {seed}");
                    break;
                }
            }
        }
    }

    #[test]
    fn seeds_repeat_and_the_checker_passes() {
        let mut env =
            InvertedPendulum::new(InvertedPendulumConfig::default().max_episode_steps(30)).unwrap();
        let run = |env: &mut InvertedPendulum| {
            let mut all = env.reset(Some(4));
            for _ in 0..30 {
                all.extend(env.step(&[0.7]).unwrap().obs);
            }
            all
        };
        let first = run(&mut env);
        assert_eq!(first, run(&mut env));
        check_goal_env(|| {
            InvertedPendulum::new(InvertedPendulumConfig::default().max_episode_steps(40)).unwrap()
        })
        .unwrap();
        let bad = InvertedPendulumConfig {
            max_torque: 0.0,
            ..InvertedPendulumConfig::default()
        };
        let message = InvertedPendulum::new(bad).unwrap_err().to_string();
        assert!(message.contains("max_torque"), "{message}");
    }
}
