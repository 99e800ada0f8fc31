//! The transitions of one level's attempt: hindsight actions, hindsight
//! goals and subgoal tests ([`Attempt`], [`attempt_transitions`]).

use rand::{Rng, RngExt};

use super::config::HindsightGoals;
use crate::her::GoalReward;
use crate::transition_buffer::Transition;

/// What one level did in one attempt: `T` actions from state 0 to state `T`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Attempt {
    /// The goal the level was given.
    pub goal: Vec<f32>,
    /// Observation parts `o_0 … o_T`.
    pub obs: Vec<Vec<f32>>,
    /// Achieved goals `ag_0 … ag_T`.
    pub achieved: Vec<Vec<f32>>,
    /// Proposed actions `a_0 … a_{T−1}` in `[-1, 1]`.
    pub actions: Vec<Vec<f32>>,
    /// Hindsight actions: what the level below achieved when it missed the
    /// proposed subgoal, else the proposed action.
    pub hindsight_actions: Vec<Vec<f32>>,
    /// Whether action `t` was a tested subgoal to penalise: one the level
    /// below missed (under [`PenaltyRule::MaxedOut`](super::PenaltyRule),
    /// only after using all its actions).
    pub missed_tests: Vec<bool>,
}

impl Attempt {
    pub(super) fn start(goal: &[f32], obs: &[f32], achieved: &[f32]) -> Self {
        Attempt {
            goal: goal.to_vec(),
            obs: vec![obs.to_vec()],
            achieved: vec![achieved.to_vec()],
            ..Attempt::default()
        }
    }

    /// Number of actions taken.
    pub fn len(&self) -> usize {
        self.actions.len()
    }

    /// Whether no action was taken.
    pub fn is_empty(&self) -> bool {
        self.actions.is_empty()
    }
}

/// All transitions HAC stores for one attempt, in this order: per action `t`,
/// the hindsight action transition, then (if `t` was a missed test) the
/// penalty transition; then the hindsight goal transitions:
/// - `future`: per action `t`, `her_k` transitions with goals drawn from
///   `ag_{t+1} … ag_T`;
/// - `attempt`: `min(her_k, T)` goals, `ag_T` and the rest drawn uniformly
///   from `ag_1 … ag_T`, in ascending order, each relabelling every action
///   `0 … T−1` (the authors' `finalize_goal_replay`).
pub fn attempt_transitions<G: GoalReward + ?Sized, R: Rng + ?Sized>(
    attempt: &Attempt,
    hindsight: HindsightGoals,
    her_k: usize,
    penalty: f32,
    goals: &G,
    rng: &mut R,
) -> Vec<Transition> {
    let n = attempt.len();
    let mut out = Vec::with_capacity(n * (2 + her_k));
    let transition = |t: usize, action: &[f32], goal: &[f32]| {
        let next = &attempt.achieved[t + 1];
        Transition {
            obs: attempt.obs[t].clone(),
            action: action.to_vec(),
            reward: goals.reward(next, goal),
            next_obs: attempt.obs[t + 1].clone(),
            goal: goal.to_vec(),
            terminal: goals.success(next, goal),
        }
    };
    // ---- hindsight action and subgoal-testing transitions ----
    for t in 0..n {
        out.push(transition(t, &attempt.hindsight_actions[t], &attempt.goal));
        if attempt.missed_tests[t] {
            // The *proposed* subgoal, penalised, with discount 0.
            out.push(Transition {
                obs: attempt.obs[t].clone(),
                action: attempt.actions[t].clone(),
                reward: penalty,
                next_obs: attempt.obs[t + 1].clone(),
                goal: attempt.goal.clone(),
                terminal: true,
            });
        }
    }
    // ---- hindsight goal transitions ----
    match hindsight {
        HindsightGoals::Future => {
            for t in 0..n {
                for _ in 0..her_k {
                    let future = rng.random_range(t + 1..=n);
                    out.push(transition(
                        t,
                        &attempt.hindsight_actions[t],
                        &attempt.achieved[future],
                    ));
                }
            }
        }
        HindsightGoals::Attempt if n > 0 => {
            let count = her_k.min(n);
            let mut picks: Vec<usize> = (1..count).map(|_| rng.random_range(1..=n)).collect();
            picks.push(n);
            picks.sort_unstable();
            for goal in picks {
                for t in 0..n {
                    out.push(transition(
                        t,
                        &attempt.hindsight_actions[t],
                        &attempt.achieved[goal],
                    ));
                }
            }
        }
        HindsightGoals::Attempt => {}
    }
    out
}
