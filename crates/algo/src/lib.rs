//! shoal-algo: the learning algorithms, one readable file each.
//!
//! * [`reinforce`]: REINFORCE with a baseline for Beta policies.
//! * [`ddpg`]: DDPG with hindsight experience replay for goal tasks, with
//!   OpenAI baselines' HER defaults ([`Ddpg`], [`DdpgConfig`]); its networks
//!   and single update ([`ActorCritic`]) are reusable on their own, and
//!   [`DdpgPolicy`] is the frozen policy for evaluation.
//! * [`hac`]: Hierarchical Actor-Critic with hindsight (Levy et al.), 2–3
//!   levels of [`ActorCritic`] with subgoal testing ([`Hac`], [`HacConfig`]);
//!   the levels' networks ([`HacModels`]) can be shared by several agents.
//! * [`replay`]: a replay buffer of whole episodes ([`ReplayBuffer`],
//!   [`Episode`]), FIFO by episode, serialisable behind a versioned header.
//! * [`her`]: hindsight relabelling (`future` / `final` / `episode`, `k`),
//!   with options against `future`'s weak spots on objects that never move
//!   or have come to rest ([`HerConfig`], [`sample_batch`]).
//!
//! Every algorithm implements [`shoal_core::Learner`] (and, where it makes
//! sense, [`shoal_core::GradientLearner`] / [`shoal_core::RolloutLearner`]), so
//! the strategies of `shoal-parallel` can drive it. This crate never spawns a
//! thread or touches a socket: parallelism lives in `shoal-parallel`.

mod check;
pub mod ddpg;
pub mod hac;
pub mod her;
pub mod reinforce;
pub mod replay;

pub use check::{MAX_BATCH, MAX_HER_K, MAX_HORIZON, MAX_LAYERS, MAX_WIDTH};
pub use ddpg::{
    ActorCritic, ActorCriticConfig, Ddpg, DdpgConfig, DdpgPolicy, NetBatch, TrainEvery,
    UpdateSettings, UpdateStats,
};
pub use hac::{
    Attempt, Hac, HacConfig, HacFrame, HacLevel, HacModels, Transition, TransitionBuffer,
    TransitionDims, attempt_transitions,
};
pub use her::{
    GoalOrigin, GoalReward, HerConfig, HerStrategy, MissedRelabel, RelabelCounts, TransitionBatch,
    goal_origin, sample_batch, sample_episode,
};
pub use reinforce::{Baseline, Reinforce, ReinforceConfig, Rollout};
pub use replay::{Episode, EpisodeDims, Motion, ReplayBuffer};
