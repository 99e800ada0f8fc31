//! shoal-rl-algo: the learning algorithms, one readable file each.
//!
//! * REINFORCE with a baseline for Beta policies ([`Reinforce`],
//!   [`ReinforceConfig`]).
//! * PPO with GAE(λ), a Beta policy by default and a Gaussian one to
//!   compare ([`Ppo`], [`PpoConfig`], [`PolicyKind`]).
//! * DDPG with hindsight experience replay for goal tasks, with OpenAI
//!   baselines' HER defaults ([`Ddpg`], [`DdpgConfig`]); [`DdpgPolicy`] is
//!   the frozen policy for evaluation.
//! * DDPG's networks and single update ([`ActorCritic`]), reusable on their
//!   own: DDPG and every HAC level are built from it.
//! * Hierarchical Actor-Critic with hindsight (Levy et al.), 2–3 levels of
//!   [`ActorCritic`] with subgoal testing ([`Hac`], [`HacConfig`]); the
//!   levels' networks ([`HacModels`]) can be shared by several agents.
//! * Replay memories: whole episodes for HER ([`ReplayBuffer`],
//!   [`Episode`]) and HAC's single transitions ([`TransitionBuffer`]), both
//!   serialisable behind one versioned header.
//! * Hindsight relabelling (`future` / `final` / `episode`, `k`), with
//!   options against `future`'s weak spots on objects that never move or
//!   have come to rest ([`HerConfig`], [`sample_batch`]).
//!
//! Every algorithm implements [`shoal_rl_core::Learner`] (and, where it makes
//! sense, [`shoal_rl_core::GradientLearner`] / [`shoal_rl_core::RolloutLearner`]), so
//! the strategies of `shoal-rl-parallel` can drive it. This crate never spawns a
//! thread or touches a socket: parallelism lives in `shoal-rl-parallel`.
#![deny(missing_docs)]

mod actor_critic;
mod check;
mod ddpg;
mod hac;
mod her;
mod ppo;
mod reinforce;
mod replay;
mod rollout;
mod transition_buffer;
mod versioned;

#[cfg(test)]
mod testutil;

pub use actor_critic::{
    AT_BOUND, ActorCritic, ActorCriticConfig, ActorKind, BoundGradient, CriticLoss, FrozenActor,
    NetBatch, TemperatureConfig, UpdateSettings, UpdateStats, share_at_bound,
};
pub use check::{MAX_BATCH, MAX_HER_K, MAX_HORIZON, MAX_LAYERS, MAX_WIDTH};
pub use ddpg::{Ddpg, DdpgConfig, DdpgPolicy, DdpgVariant, TrainEvery};
pub use hac::{
    Attempt, Hac, HacConfig, HacFrame, HacLevel, HacModels, HindsightGoals, MAX_LEVEL_BUFFER,
    PenaltyRule, attempt_transitions,
};
pub use her::{
    GoalOrigin, GoalReward, HerConfig, HerStrategy, MissedRelabel, RelabelCounts, TransitionBatch,
    WithinBox, WithinDistance, goal_origin, sample_batch, sample_batch_with_playing,
    sample_episode,
};
pub use ppo::{PolicyKind, Ppo, PpoConfig, PpoPolicy, gae};
pub use reinforce::{Baseline, Reinforce, ReinforceConfig};
pub use replay::{Episode, EpisodeDims, Motion, ReplayBuffer};
pub use rollout::Rollout;
pub use transition_buffer::{Transition, TransitionBuffer, TransitionDims};

/// The README's example, compiled and run with the doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The documented fields of one of this crate's settings structs
/// (`PpoConfig`, `DdpgConfig`, …), from its source.
pub fn config_docs(name: &str) -> Option<Vec<shoal_rl_core::docs::FieldDoc>> {
    shoal_rl_core::docs::struct_docs(
        &[
            include_str!("reinforce.rs"),
            include_str!("ppo.rs"),
            include_str!("ddpg.rs"),
            include_str!("her.rs"),
            include_str!("hac/config.rs"),
        ],
        name,
    )
}
