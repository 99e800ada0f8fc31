//! The hierarchical rollout: each level proposes, the level below tries
//! for at most `H` actions, level 0 acts in the environment.

use rand::RngExt;
use rand::rngs::StdRng;
use shoal_rl_core::{Error, GoalEnv, Result, Space};
use shoal_rl_policy::ActionNoise;

use super::attempt::{Attempt, attempt_transitions};
use super::config::{HacConfig, PenaltyRule};
use super::models::HacModels;
use crate::her::{GoalReward, WithinBox, WithinDistance};
use crate::transition_buffer::Transition;

/// One moment of a watched episode ([`Hac::watch`](super::Hac::watch)): what a renderer needs
/// to draw the agent and the subgoals it is pursuing.
#[derive(Clone, Debug, PartialEq)]
pub struct HacFrame {
    /// Which of the watched episodes, from 0.
    pub episode: usize,
    /// The environment's observation: `observation ‖ achieved ‖ desired`.
    pub observation: Vec<f32>,
    /// The subgoal each level below the top is pursuing, lowest level
    /// first, in achieved-goal units or the observation components of
    /// [`HacConfig::subgoal_indices`] (the top level pursues the desired goal).
    pub subgoals: Vec<Vec<f32>>,
}

/// Exploration of a training episode.
pub(super) struct Explore {
    pub(super) rng: StdRng,
    /// One noise source per level.
    pub(super) noise: Vec<Box<dyn ActionNoise + Send>>,
}

/// How the levels below the top score their subgoals, when not as the env
/// scores its goals.
pub(super) enum SubgoalScoring {
    /// Within a Euclidean distance.
    Distance(WithinDistance),
    /// Every component within its own threshold.
    Box(WithinBox),
}

impl GoalReward for SubgoalScoring {
    fn success(&self, achieved: &[f32], desired: &[f32]) -> bool {
        match self {
            SubgoalScoring::Distance(within) => within.success(achieved, desired),
            SubgoalScoring::Box(within) => within.success(achieved, desired),
        }
    }
}

/// How the levels below the top score their subgoals: per component within
/// `subgoal_thresholds` when given; else within `subgoal_threshold` (0.05
/// when absent) for subgoals of `subgoal_indices`; for achieved-goal
/// subgoals within `subgoal_threshold` when it is given, else (`None`) as
/// the env scores its goals.
pub(super) fn subgoal_reward(config: &HacConfig) -> Option<SubgoalScoring> {
    if let Some(thresholds) = &config.subgoal_thresholds {
        return Some(SubgoalScoring::Box(WithinBox {
            thresholds: thresholds.iter().map(|&t| t as f32).collect(),
        }));
    }
    let threshold = match (&config.subgoal_indices, config.subgoal_threshold) {
        (Some(_), threshold) => threshold.unwrap_or(0.05),
        (None, Some(threshold)) => threshold,
        (None, None) => return None,
    };
    Some(SubgoalScoring::Distance(WithinDistance {
        threshold: threshold as f32,
    }))
}

/// The state of one episode while the levels recurse.
pub(super) struct Run<'a, E: GoalEnv> {
    pub(super) env: &'a mut E,
    pub(super) models: &'a HacModels,
    pub(super) config: &'a HacConfig,
    pub(super) action_space: &'a Space,
    pub(super) subgoal_space: &'a Space,
    /// `None` when evaluating: no noise, no tests, nothing stored.
    pub(super) explore: Option<Explore>,
    /// What [`Hac::watch`] sees: one frame before every env step and after the last.
    pub(super) frames: Option<Vec<HacFrame>>,
    pub(super) obs: Vec<f32>,
    pub(super) achieved: Vec<f32>,
    pub(super) desired: Vec<f32>,
    /// Where the agent is in subgoal space: the observation's
    /// `subgoal_indices` components (absent: empty, the achieved goal is).
    pub(super) at_subgoal: Vec<f32>,
    /// How the levels below the top score subgoals, when not as the env
    /// scores goals (see [`subgoal_reward`]).
    pub(super) subgoal_reward: Option<SubgoalScoring>,
    /// The goal each level is pursuing, index = level.
    pub(super) goals: Vec<Vec<f32>>,
    pub(super) done: bool,
    pub(super) success: bool,
    pub(super) undiscounted: f64,
    pub(super) steps: u64,
    /// Per level: the new transitions, attempts and attempts that reached their goal.
    pub(super) transitions: Vec<Vec<Transition>>,
    pub(super) attempts: Vec<u64>,
    pub(super) reached_goals: Vec<u64>,
}

impl<E: GoalEnv> Run<'_, E> {
    /// Records the current observation and the subgoals of the levels below
    /// the top, when watched.
    pub(super) fn frame(&mut self) {
        if let Some(frames) = &mut self.frames {
            frames.push(HacFrame {
                episode: 0,
                observation: [&self.obs[..], &self.achieved, &self.desired].concat(),
                subgoals: self.goals[..self.goals.len() - 1].to_vec(),
            });
        }
    }

    pub(super) fn split(&mut self, obs: &[f32]) -> Result<()> {
        let d = self.models.dims;
        if obs.len() != d.obs + 2 * d.goal {
            return Err(Error::Shape(format!(
                "the env returned an observation of {} values, expected {}",
                obs.len(),
                d.obs + 2 * d.goal
            )));
        }
        self.obs = obs[..d.obs].to_vec();
        self.achieved = obs[d.obs..d.obs + d.goal].to_vec();
        self.desired = obs[d.obs + d.goal..].to_vec();
        if let Some(indices) = &self.config.subgoal_indices {
            self.at_subgoal = indices.iter().map(|&i| self.obs[i]).collect();
        }
        Ok(())
    }

    /// The scoring of `level`'s goals: the env's for the top level, and for
    /// the levels below unless the config gives subgoals a scoring of their own.
    fn scoring(&self, level: usize) -> &dyn GoalReward {
        match &self.subgoal_reward {
            Some(subgoal) if level + 1 < self.goals.len() => subgoal,
            _ => &*self.env,
        }
    }

    /// Where `level` is in the space of its goals.
    fn achieved_by(&self, level: usize) -> &[f32] {
        match self.config.subgoal_indices {
            Some(_) if level + 1 < self.goals.len() => &self.at_subgoal,
            _ => &self.achieved,
        }
    }

    /// Whether `level` has reached `goal`.
    fn reached(&self, level: usize, goal: &[f32]) -> bool {
        self.scoring(level).success(self.achieved_by(level), goal)
    }

    /// Level `level`'s action in `[-1, 1]`: random with probability
    /// `random_eps`, else the actor's plus noise; deterministic when not
    /// exploring or while a subgoal above is being tested.
    fn choose(&mut self, level: usize, goal: &[f32], testing: bool) -> Result<Vec<f32>> {
        let (random_eps, dim) = (self.config.random_eps, self.models.level_dims(level).act);
        if let Some(ex) = self.explore.as_mut().filter(|_| !testing) {
            // Drawn before the actor runs, so a random action costs no forward pass.
            if ex.rng.random::<f64>() < random_eps {
                return Ok((0..dim)
                    .map(|_| ex.rng.random_range(-1.0f32..=1.0))
                    .collect());
            }
            let mean = self.models.act(level, &self.obs, goal)?;
            let noise = self.explore.as_mut().expect("checked above").noise[level].sample();
            return Ok(mean
                .iter()
                .zip(noise)
                .map(|(a, n)| (a + n).clamp(-1.0, 1.0))
                .collect());
        }
        self.models.act(level, &self.obs, goal)
    }

    /// Runs one attempt of `level` toward `goal`; `testing` when a subgoal
    /// above is being tested. Returns whether the attempt *maxed out*: used
    /// all its `H` actions without reaching `goal`.
    pub(super) fn attempt(&mut self, level: usize, goal: &[f32], testing: bool) -> Result<bool> {
        self.goals[level] = goal.to_vec();
        let limit = self.config.attempt_limit(level);
        let mut attempt = Attempt::start(goal, &self.obs, self.achieved_by(level));
        for _ in 0..limit {
            let action = self.choose(level, goal, testing)?;
            let (hindsight, missed_test) = if level > 0 {
                // ---- propose a subgoal, maybe test it, let the level below try ----
                let subgoal = self.subgoal_space.from_symmetric(&action);
                let test = testing
                    || match &mut self.explore {
                        Some(ex) => ex.rng.random::<f64>() < self.config.subgoal_test_rate,
                        None => false,
                    };
                let maxed_out = self.attempt(level - 1, &subgoal, test)?;
                if self.reached(level - 1, &subgoal) {
                    (action.clone(), false)
                } else {
                    // Hindsight action: the subgoal the level below did reach.
                    let unit = self.subgoal_space.to_unit(self.achieved_by(level - 1));
                    let hindsight = unit.iter().map(|u| (2.0 * u - 1.0).clamp(-1.0, 1.0));
                    let penalise = match self.config.penalty_rule {
                        PenaltyRule::AnyMiss => test,
                        PenaltyRule::MaxedOut => test && maxed_out,
                    };
                    (hindsight.collect(), penalise)
                }
            } else {
                // ---- act in the environment ----
                self.frame();
                let step = self.env.step(&self.action_space.from_symmetric(&action))?;
                self.split(&step.obs)?;
                self.undiscounted += step.reward as f64;
                self.steps += 1;
                if step.done() {
                    self.done = true;
                    self.success = match step.info.get("is_success") {
                        Some(flag) => flag > 0.5,
                        None => self.env.is_success(&self.achieved, &self.desired),
                    };
                }
                (action.clone(), false)
            };
            attempt.actions.push(action);
            attempt.hindsight_actions.push(hindsight);
            attempt.missed_tests.push(missed_test);
            attempt.obs.push(self.obs.clone());
            attempt.achieved.push(self.achieved_by(level).to_vec());
            // Stop when this level's goal or any higher level's is reached.
            let reached_any = (level..self.goals.len()).any(|j| self.reached(j, &self.goals[j]));
            if self.done || reached_any {
                break;
            }
        }
        let reached = self.reached(level, goal);
        self.attempts[level] += 1;
        self.reached_goals[level] += u64::from(reached);
        if let Some(mut ex) = self.explore.take() {
            let new = attempt_transitions(
                &attempt,
                self.config.hindsight_goals,
                self.config.her_k,
                self.config.penalty(),
                self.scoring(level),
                &mut ex.rng,
            );
            self.explore = Some(ex);
            self.transitions[level].extend(new);
        }
        Ok(attempt.len() == limit && !reached)
    }
}
