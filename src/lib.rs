//! shoal: composable reinforcement learning in Rust.
//!
//! This facade re-exports the workspace crates and holds the `shoal`
//! binary's commands ([`cli`]). Run configuration ([`config`]), the
//! algorithm table ([`algos`]) and the training driver ([`train`]) live in
//! shoal-rl-train, so a program can train by name without this crate.
//!
//! | crate | re-exported as | job |
//! |---|---|---|
//! | shoal-rl-core | [`core`] | traits: `Env`, `GoalEnv`, `Learner`, … |
//! | shoal-rl-env | [`env`](mod@env) | the worm, the arm tasks, toy envs |
//! | shoal-rl-policy | [`policy`] | burn networks, Beta policy, special functions |
//! | shoal-rl-algo | [`algo`] | REINFORCE, PPO, DDPG, HER, HAC |
//! | shoal-rl-parallel | [`parallel`] | communicators and strategies |
//! | shoal-rl-eval | [`eval`] | metrics, checkpoints, plots |
//! | shoal-rl-run | [`run`] | the training runtime: run dirs, checkpoints, resume, clean stop |
//! | shoal-rl-registry | [`registry`] | the table of envs |
//! | shoal-rl-train | [`train`], [`config`], [`algos`] | presets, configuration, training by name |
//!
//! ```
//! let cfg = shoal_rl::train::preset("worm-reinforce").unwrap();
//! assert_eq!(cfg.seed, 0);
//! assert!(shoal_rl::train::preset("no-such-preset").is_err());
//! ```

pub use shoal_rl_algo as algo;
pub use shoal_rl_core as core;
pub use shoal_rl_env as env;
pub use shoal_rl_eval as eval;
pub use shoal_rl_parallel as parallel;
pub use shoal_rl_policy as policy;
pub use shoal_rl_registry as registry;
pub use shoal_rl_run as run;
pub use shoal_rl_train as train;
pub use shoal_rl_train::{algos, config};

pub use shoal_rl_core::allocator;
pub mod bench;
pub mod cli;
pub mod render;
pub mod scale;
pub mod sweep;

/// The README's Rust example, compiled with the doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The library pages' code, compiled and run with the doctests.
#[cfg(doctest)]
#[doc = include_str!("../docs/custom-env.md")]
pub struct CustomEnvPage;

/// The strategy page's trait example, compiled with the doctests.
#[cfg(doctest)]
#[doc = include_str!("../docs/custom-strategy.md")]
pub struct CustomStrategyPage;
