//! shoal-rl-train: training by name. The run configuration ([`config`]:
//! [`RunConfig`](config::RunConfig), the presets, TOML files and `--set`
//! overrides), the table of algorithms ([`algos`]) and the factories that
//! turn a configuration into what shoal-rl-run trains: the learner of each
//! worker, the env, the built-in strategy. The `shoal` binary is a thin
//! command line over this crate, so a program that depends on it trains any
//! preset the way `shoal train` does.
//!
//! ```no_run
//! use shoal_rl_train::{Plan, config::RunConfig, run};
//!
//! # fn main() -> shoal_rl_core::Result<()> {
//! let cfg = RunConfig::resolve("push-ddpg-her", &["train.episodes=200".into()])?;
//! if let Some((run_dir, summary)) = run(&Plan::new(cfg).out("runs/push"))? {
//!     println!("{}: {:?}", run_dir.display(), summary.eval_success_rate);
//! }
//! # Ok(())
//! # }
//! ```
//!
//! ```
//! let cfg = shoal_rl_train::config::preset("worm-reinforce").unwrap();
//! assert_eq!(cfg.seed, 0);
//! assert!(shoal_rl_train::config::preset("no-such-preset").is_err());
//! ```

pub mod algos;
#[cfg(feature = "cli")]
pub mod args;
pub mod config;
pub mod overrides;
pub mod strategies;
mod train;

pub use algos::{make_ddpg, make_hac, make_ppo, make_reinforce};
pub use train::*;

/// The README's example, compiled with the doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
