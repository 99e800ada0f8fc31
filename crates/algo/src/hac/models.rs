//! [`HacModels`]: the networks and normalisers of every level, shareable
//! between workers.

use serde::{Deserialize, Serialize};
use shoal_rl_core::{Error, MeanReducer, Result, derive_seed, split_parameters};
use shoal_rl_policy::GoalNormalizer;

use super::config::HacConfig;
use crate::actor_critic::{ActorCritic, ActorCriticConfig, ActorKind, TemperatureConfig};
use crate::transition_buffer::{Transition, TransitionDims};

/// The [`derive_seed`] stream of level `l`'s networks starts here
/// (`MODEL_STREAM + l`); the agent's env and exploration streams follow.
pub(super) const MODEL_STREAM: u64 = 1 << 40;

/// One level's networks and input normalisers.
#[derive(Clone)]
pub struct HacLevel {
    /// Actor, critic, their targets and optimisers.
    pub networks: ActorCritic,
    /// Normalisers of the observation part and of the goal (the level's
    /// goal, in achieved-goal units).
    pub norms: GoalNormalizer,
}

#[derive(Serialize, Deserialize)]
pub(super) struct LevelState {
    pub(super) networks: Vec<u8>,
    pub(super) norms: GoalNormalizer,
}

/// Every level's networks and normalisers, apart from any agent so that
/// several agents (workers) can start from, and keep, one set of networks.
#[derive(Clone)]
pub struct HacModels {
    pub(super) dims: TransitionDims,
    /// Length of a subgoal: the goal of every level below the top and the
    /// action of every level above the bottom.
    pub(super) subgoal_dim: usize,
    pub(super) clip_obs: f32,
    pub(super) levels: Vec<HacLevel>,
}

impl HacModels {
    /// Networks for `config.levels` levels on observations of `obs_dim`,
    /// goals of `goal_dim` and env actions of `act_dim`, initialised from `seed`.
    pub fn new(
        config: &HacConfig,
        obs_dim: usize,
        goal_dim: usize,
        act_dim: usize,
        seed: u64,
    ) -> Result<Self> {
        config.validate()?;
        let subgoal_dim = config.subgoal_dim(goal_dim);
        let levels = (0..config.levels)
            .map(|level| {
                let act = if level == 0 { act_dim } else { subgoal_dim };
                let goal = if level + 1 == config.levels {
                    goal_dim
                } else {
                    subgoal_dim
                };
                let networks = ActorCritic::new(
                    &ActorCriticConfig {
                        input_dim: obs_dim + goal,
                        act_dim: act,
                        hidden: config.hidden.clone(),
                        actor_lr: config.actor_lr,
                        critic_lr: config.critic_lr,
                        max_grad_norm: config.max_grad_norm,
                        value_bound: config.value_bound(),
                        critics: 1,
                        actor: ActorKind::Deterministic,
                        temperature: TemperatureConfig::default(),
                    },
                    derive_seed(seed, MODEL_STREAM + level as u64),
                );
                HacLevel {
                    networks,
                    norms: GoalNormalizer::new(
                        obs_dim,
                        goal,
                        config.norm_clip as f32,
                        config.norm_eps as f32,
                    ),
                }
            })
            .collect();
        Ok(HacModels {
            dims: TransitionDims {
                obs: obs_dim,
                goal: goal_dim,
                act: act_dim,
            },
            subgoal_dim,
            clip_obs: config.clip_obs as f32,
            levels,
        })
    }

    /// Number of levels.
    pub fn len(&self) -> usize {
        self.levels.len()
    }

    /// Always false: a hierarchy has at least one level.
    pub fn is_empty(&self) -> bool {
        self.levels.is_empty()
    }

    /// Level `i` (0 acts in the env).
    pub fn level(&self, i: usize) -> &HacLevel {
        &self.levels[i]
    }

    /// What level `level` stores: its goal is the env's at the top, a
    /// subgoal below; its action is the env's at the bottom, a subgoal above.
    pub(super) fn level_dims(&self, level: usize) -> TransitionDims {
        TransitionDims {
            obs: self.dims.obs,
            goal: if level + 1 == self.levels.len() {
                self.dims.goal
            } else {
                self.subgoal_dim
            },
            act: if level == 0 {
                self.dims.act
            } else {
                self.subgoal_dim
            },
        }
    }

    /// Appends level `level`'s normalised input for `obs` and `goal`: what
    /// its actor and critic see (a probe of a trained level reads them here).
    pub fn push_input(
        &self,
        level: usize,
        obs: &[f32],
        goal: &[f32],
        out: &mut Vec<f32>,
    ) -> Result<()> {
        self.levels[level]
            .norms
            .push_input(obs, goal, self.clip_obs, out)
    }

    /// Level `level`'s deterministic action in `[-1, 1]`.
    pub(super) fn act(&self, level: usize, obs: &[f32], goal: &[f32]) -> Result<Vec<f32>> {
        let mut input = Vec::with_capacity(obs.len() + goal.len());
        self.push_input(level, obs, goal, &mut input)?;
        Ok(self.levels[level].networks.act(&input))
    }

    /// Every level's actor ‖ critic parameters, level 0 first.
    pub fn parameters(&self) -> Vec<f32> {
        self.levels
            .iter()
            .flat_map(|l| l.networks.parameters())
            .collect()
    }

    /// Overwrites the parameters from [`HacModels::parameters`] output.
    pub fn set_parameters(&mut self, params: &[f32]) -> Result<()> {
        let sizes: Vec<usize> = self
            .levels
            .iter()
            .map(|l| l.networks.parameters().len())
            .collect();
        let parts = split_parameters(params, &sizes, "the levels")?;
        let mut levels = self.levels.clone();
        for (level, part) in levels.iter_mut().zip(parts) {
            level.networks.set_parameters(part)?;
        }
        self.levels = levels;
        Ok(())
    }

    /// Networks, targets, optimiser moments and normalisers of every level.
    pub fn save_state(&self) -> Vec<u8> {
        let states: Vec<LevelState> = self
            .levels
            .iter()
            .map(|l| LevelState {
                networks: l.networks.save_state(),
                norms: l.norms.clone(),
            })
            .collect();
        postcard::to_stdvec(&states).expect("serialising plain vectors cannot fail")
    }

    /// Restores [`HacModels::save_state`] output, written by a HAC state of
    /// `version` (older network layouts are upgraded); on error `self` is
    /// unchanged.
    pub fn load_state(&mut self, bytes: &[u8], version: u32) -> Result<()> {
        let states: Vec<LevelState> = read_per_level(bytes, "HAC state", self.levels.len())?;
        let mut levels = self.levels.clone();
        for (i, (level, state)) in levels.iter_mut().zip(states).enumerate() {
            if state.norms.obs.dim() != self.dims.obs
                || state.norms.goal.dim() != self.level_dims(i).goal
            {
                return Err(Error::Shape(
                    "HAC state normalises features of another size".into(),
                ));
            }
            level
                .networks
                .load_state(&crate::actor_critic::upgrade_state(
                    &state.networks,
                    version,
                )?)?;
            level.norms = state.norms;
        }
        self.levels = levels;
        Ok(())
    }

    /// Adds a level's new transitions to its normaliser's pending sums.
    pub(super) fn observe(&mut self, level: usize, transitions: &[Transition]) -> Result<()> {
        let (mut obs, mut goals) = (Vec::new(), Vec::new());
        for t in transitions {
            obs.extend_from_slice(&t.obs);
            goals.extend_from_slice(&t.goal);
        }
        self.levels[level]
            .norms
            .update_clamped(&obs, &goals, self.clip_obs)
    }

    /// Averages every normaliser's pending statistics in one reducer call.
    pub(super) fn sync_normalizers(&mut self, reducer: &mut dyn MeanReducer) -> Result<()> {
        GoalNormalizer::sync_all(self.levels.iter_mut().map(|l| &mut l.norms), reducer)
    }
}

/// One value per level, as `postcard` wrote the list: refused, naming
/// `what`, if unreadable or if it holds another number of levels than
/// `levels` (the agent's).
pub(super) fn read_per_level<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
    what: &str,
    levels: usize,
) -> Result<Vec<T>> {
    let values: Vec<T> = postcard::from_bytes(bytes)
        .map_err(|e| Error::Shape(format!("{what} is unreadable: {e}")))?;
    if values.len() != levels {
        return Err(Error::Shape(format!(
            "{what} has {} levels, this agent {levels}",
            values.len()
        )));
    }
    Ok(values)
}
