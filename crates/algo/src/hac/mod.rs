//! HAC, Hierarchical Actor-Critic (Levy et al., 2019, "Learning Multi-Level Hierarchies with Hindsight").
//!
//! Read in this order: `config.rs` (the settings, with the paper's
//! values), `models.rs` (the shared networks, [`HacModels`]), `attempt.rs`
//! (the three kinds of transitions built from one level's attempt),
//! `rollout.rs` (the hierarchical rollout), then `agent.rs` (the agent,
//! [`Hac`], and its `Learner` plumbing). Each level replays from a [`TransitionBuffer`]
//! (`transition_buffer.rs`) and learns through an [`ActorCritic`].
//!
//! # The hierarchy
//!
//! Level `L − 1` (the top) is given the environment's desired goal; every
//! level `i > 0` proposes a *subgoal* — by default in the achieved-goal
//! space, or in chosen components of the observation
//! ([`HacConfig::subgoal_indices`], e.g. where the gripper should be) — and
//! level `i − 1` gets at most `H` actions to reach it. Level 0 acts in the
//! environment. An attempt of level `i` ends after `H` actions, when the
//! achieved goal reaches the goal of level `i` or of any level above it, or
//! when the environment ends the episode; with
//! [`HacConfig::top_level_unlimited`] the top level's one attempt has no
//! `H` limit and lasts the episode. Each level is a DDPG learner
//! ([`ActorCritic`]) whose critic targets are clipped to `[−H, 0]`.
//!
//! # Transitions (the part that is easy to get wrong)
//!
//! For every action of level `i` with state `s`, goal `g`, next state `s'`:
//!
//! * **hindsight action**: the action is replaced by the subgoal the level
//!   below actually achieved (`ag(s')`) when it missed the proposed one, so
//!   the upper level learns from a lower level that behaves optimally;
//!   reward `0` / terminal when `ag(s')` reaches `g`, else `−1`.
//! * **hindsight goal**: the same transition with `g` replaced by an
//!   achieved goal of the attempt: HER's `future` (`k` per transition, from
//!   later states) or the authors' scheme (`k` per attempt, each relabelling
//!   every transition; [`HacConfig::hindsight_goals`]).
//! * **subgoal testing** (levels `i > 0`): with probability λ a proposed
//!   subgoal is *tested*: every level below acts without noise, and if the
//!   subgoal is missed the *proposed* action gets reward `−H` with discount
//!   0, teaching the level which subgoals are out of reach; under the
//!   authors' rule ([`PenaltyRule::MaxedOut`]) only when the level below
//!   used all its `H` actions.
//!
//! # Reproducibility
//!
//! Episode `k` resets its environment with the seed derived from `(seed, k)`
//! and explores with generators derived from `(seed, k)`; the training round
//! after episode `k` samples with a generator derived from `(seed, k)`.
//! Counters and networks are the state, the buffers the memory, so a resumed
//! run continues with exactly the numbers of an uninterrupted one.
//!
//! # Sharing networks
//!
//! [`HacModels`] (one [`ActorCritic`] and two normalisers per level) is apart
//! from [`Hac`] (envs, buffers, counters): several workers are built from
//! clones of one `HacModels` ([`Hac::with_models`]) and stay bit-identical
//! under [`GradientLearner::learn_averaged`], where every gradient and the
//! normaliser statistics pass through the reducer. The reducer calls of an
//! episode do not depend on its length (1 + levels × `n_batches`, with
//! `wait_for_batch` one more, whose answer every worker shares, for the
//! levels that wait), so workers whose episodes differ never fall out of step.

mod agent;
mod attempt;
mod config;
mod models;
mod rollout;
#[cfg(test)]
mod tests;

pub use agent::Hac;
pub use attempt::{Attempt, attempt_transitions};
pub use config::{HacConfig, HindsightGoals, MAX_LEVEL_BUFFER, PenaltyRule};
pub use models::{HacLevel, HacModels};
pub use rollout::HacFrame;
