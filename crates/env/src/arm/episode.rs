//! `ArmCore`: the episode bookkeeping both arm tasks share (reset, step, reward, ends).

use rand::rngs::StdRng;
use rapier3d::prelude::*;
use shoal_rl_core::{Error, Info, Result, Space, Step, TimeLimit, reseed, rng_from_seed};

use super::config::ArmConfig;
use super::goal::{goal_distance, sparse_reward, within_threshold};
use super::obs::{FLAT_OBS_DIM, GOAL_DIM, observe};
use super::scene::ArmScene;

/// What a task puts into a fresh scene: the body whose centre is the achieved
/// goal, and the desired goal.
pub(crate) struct Layout {
    /// The box, ball, … the gripper has to bring to the goal.
    pub object: RigidBodyHandle,
    /// Desired goal (m).
    pub goal: Vector,
}

struct Episode {
    scene: ArmScene,
    object: RigidBodyHandle,
    goal: Vector,
}

/// Everything of an arm task except what is on the table: seeding, action
/// validation, the gripper-and-physics step, observation, sparse reward,
/// success, termination and truncation. A task supplies the layout builder.
pub(crate) struct ArmCore {
    cfg: ArmConfig,
    rng: StdRng,
    episode: Option<Episode>,
    limit: TimeLimit,
    action_space: Space,
    observation_space: Space,
}

impl ArmCore {
    /// A core for a validated config; its generator starts from seed 0 until
    /// `reset(Some(seed))`.
    pub fn new(cfg: ArmConfig) -> Self {
        ArmCore {
            limit: TimeLimit::new(cfg.max_episode_steps),
            cfg,
            rng: rng_from_seed(0),
            episode: None,
            action_space: Space::uniform(4, -1.0, 1.0),
            observation_space: Space::unbounded(FLAT_OBS_DIM),
        }
    }

    pub fn action_space(&self) -> &Space {
        &self.action_space
    }

    pub fn observation_space(&self) -> &Space {
        &self.observation_space
    }

    /// Starts an episode in a freshly built scene; `build` adds the task's
    /// bodies and samples its start state and goal from the episode generator.
    pub fn reset_with(
        &mut self,
        seed: Option<u64>,
        build: impl FnOnce(&mut ArmScene, &mut StdRng) -> Layout,
    ) -> Vec<f32> {
        reseed(&mut self.rng, seed);
        let mut scene = ArmScene::new(&self.cfg);
        let Layout { object, goal } = build(&mut scene, &mut self.rng);
        let obs = observe(&self.cfg, &scene, object, goal);
        self.episode = Some(Episode {
            scene,
            object,
            goal,
        });
        self.limit.start();
        obs
    }

    /// One control step; see the task docs for the contract.
    pub fn step(&mut self, action: &[f32]) -> Result<Step> {
        self.limit.check()?;
        let episode = self.episode.as_mut().ok_or(Error::NeedsReset)?;
        let action = self.action_space.validate(action, self.cfg.clip_actions)?;
        episode.scene.advance(&self.cfg, &action);

        let obs = observe(&self.cfg, &episode.scene, episode.object, episode.goal);
        let (achieved, desired) = goals(&obs);
        let distance = goal_distance(achieved, desired);
        let success = within_threshold(achieved, desired, self.cfg.distance_threshold);
        let reward = sparse_reward(achieved, desired, self.cfg.distance_threshold);
        let info = Info::new()
            .with("is_success", if success { 1.0 } else { 0.0 })
            .with("distance", f64::from(distance));
        Ok(self.limit.finish(Step {
            obs,
            reward,
            terminated: success && self.cfg.terminate_on_success,
            truncated: false,
            info,
        }))
    }

    pub fn compute_reward(&self, achieved: &[f32], desired: &[f32]) -> f32 {
        sparse_reward(achieved, desired, self.cfg.distance_threshold)
    }

    pub fn is_success(&self, achieved: &[f32], desired: &[f32]) -> bool {
        within_threshold(achieved, desired, self.cfg.distance_threshold)
    }
}

fn goals(obs: &[f32]) -> (&[f32], &[f32]) {
    let n = obs.len() - 2 * GOAL_DIM;
    (&obs[n..n + GOAL_DIM], &obs[n + GOAL_DIM..])
}

/// Implements `Env`, `GoalEnv` and `Debug` for a task struct with a `core: ArmCore`
/// field and an inherent `build_layout(&Config, &mut ArmScene, &mut StdRng)`
/// behind a `config` field, so both tasks share one implementation.
macro_rules! impl_arm_env {
    ($task:ty) => {
        impl std::fmt::Debug for $task {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($task))
                    .field("config", &self.config)
                    .finish_non_exhaustive()
            }
        }

        impl shoal_rl_core::Env for $task {
            fn observation_space(&self) -> &shoal_rl_core::Space {
                self.core.observation_space()
            }
            fn action_space(&self) -> &shoal_rl_core::Space {
                self.core.action_space()
            }
            fn reset(&mut self, seed: Option<u64>) -> Vec<f32> {
                let config = &self.config;
                self.core
                    .reset_with(seed, |scene, rng| Self::build_layout(config, scene, rng))
            }
            fn step(&mut self, action: &[f32]) -> shoal_rl_core::Result<shoal_rl_core::Step> {
                self.core.step(action)
            }
        }

        impl shoal_rl_core::GoalEnv for $task {
            fn goal_dim(&self) -> usize {
                $crate::arm::GOAL_DIM
            }
            fn compute_reward(&self, achieved: &[f32], desired: &[f32]) -> f32 {
                self.core.compute_reward(achieved, desired)
            }
            fn is_success(&self, achieved: &[f32], desired: &[f32]) -> bool {
                self.core.is_success(achieved, desired)
            }
        }
    };
}
pub(crate) use impl_arm_env;
