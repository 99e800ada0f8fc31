//! shoal-rl-train: training by name. One door for every front end
//! ([`Registries`]: the envs, algorithms and strategies a config may name)
//! with four operations: [`resolve`](Registries::resolve) a preset or a
//! TOML file with `--set` overrides into a [`RunConfig`](config::RunConfig),
//! [`check`](Registries::check) it, [`run`](Registries::run) a [`Plan`],
//! [`load_policy`](Registries::load_policy) from a run directory. The
//! `shoal` binary and the Python module are thin layers over them, so a
//! program that depends on this crate trains any preset the way
//! `shoal train` does.
//!
//! The crate by concern, each module using only those above it:
//!
//! | module | holds |
//! |---|---|
//! | [`config`] | the schema: [`RunConfig`](config::RunConfig) as plain data, and the checks its values alone decide |
//! | [`presets`] | the built-in presets, every file under `presets/` |
//! | [`worker_rules`] | what a strategy gives each worker ([`Share`](worker_rules::Share)) and the measured rules settings follow |
//! | [`algos`] | the algorithm registry: each entry's settings, factories and worker rules |
//! | [`learners`] | every worker's learner, from a config, its registries and its share |
//! | [`strategies`] | the strategy registry: each entry's checks, share and run |
//! | [`registries`] | the door: resolve, check, run, load |
//! | [`reference`](mod@reference) | the configuration reference, generated from the doc comments |
//! | `args` | `shoal train`'s flags (feature `cli`) |
//!
//! ```no_run
//! use shoal_rl_train::{Plan, Registries};
//!
//! # fn main() -> shoal_rl_core::Result<()> {
//! let shoal = Registries::default();
//! let cfg = shoal.resolve("push-ddpg-her", &["train.episodes=200".into()])?;
//! if let Some((run_dir, summary)) = shoal.run(&Plan::new(cfg).out("runs/push"))? {
//!     println!("{}: {:?}", run_dir.display(), summary.eval_success_rate);
//! }
//! # Ok(())
//! # }
//! ```
//!
//! ```
//! let cfg = shoal_rl_train::preset("worm-reinforce").unwrap();
//! assert_eq!(cfg.seed, 0);
//! assert!(shoal_rl_train::preset("no-such-preset").is_err());
//! ```

pub mod algos;
#[cfg(feature = "cli")]
pub mod args;
pub mod config;
pub mod learners;
pub mod overrides;
pub mod plan;
pub mod policy;
pub mod presets;
mod read;
pub mod reference;
pub mod registries;
pub mod strategies;
pub mod worker_rules;

pub use plan::{Plan, eval_seed};
pub use policy::TrainedPolicy;
pub use registries::{
    RESUME_MAY_CHANGE, Registries, check, load_policy, load_run, load_run_state, preset, resolve,
    run,
};
pub use strategies::{RunContext, StrategySetup};

/// The README's example, compiled with the doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
