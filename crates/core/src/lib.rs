//! shoal-rl-core: the vocabulary every other shoal crate speaks.
//!
//! This crate is the API boundary of shoal. It defines environments ([`Env`],
//! [`GoalEnv`]), their spaces ([`Space`]) and transitions ([`Step`]), what an
//! agent exposes to evaluation ([`Policy`]) and to parallel strategies
//! ([`Learner`], [`GradientLearner`], [`RolloutLearner`]), seeding helpers and the
//! shared [`Error`] type.
//!
//! It depends on neither burn nor rapier3d: a new environment or a new
//! parallel strategy can be written against these traits alone.
//!
//! # Example: a complete environment
//!
//! ```
//! use shoal_rl_core::{Env, Error, Info, Space, Step};
//!
//! /// Move a point toward zero; the episode never terminates on its own.
//! struct Point { x: f32, space: Space }
//!
//! impl Env for Point {
//!     fn observation_space(&self) -> &Space { &self.space }
//!     fn action_space(&self) -> &Space { &self.space }
//!     fn reset(&mut self, _seed: Option<u64>) -> Vec<f32> { self.x = 0.5; vec![self.x] }
//!     fn step(&mut self, action: &[f32]) -> Result<Step, Error> {
//!         let action = self.space.validate(action, false)?;
//!         self.x = (self.x + action[0]).clamp(-1.0, 1.0);
//!         Ok(Step::new(vec![self.x], -self.x.abs()))
//!     }
//! }
//!
//! let mut env = Point { x: 0.0, space: Space::uniform(1, -1.0, 1.0) };
//! let obs = env.reset(Some(7));
//! let step = env.step(&[-0.25]).unwrap();
//! assert_eq!(obs, vec![0.5]);
//! assert_eq!(step.obs, vec![0.25]);
//! assert!(env.step(&[f32::NAN]).is_err());
//! ```
#![deny(missing_docs)]

pub mod allocator;
mod check;
pub mod docs;
mod env;
mod error;
mod learner;
mod seeding;
mod space;
mod stop;

pub use check::{check_env, check_goal_env};
pub use env::{Env, GoalEnv, Info, Step, TimeLimit, WithoutGoals};
pub use error::{Error, Result};
pub use learner::{
    Alone, EvalReport, GradientLearner, LearnReport, Learner, MeanReducer, Policy, RolloutLearner,
    SuccessFn, evaluate_policy, evaluate_policy_with, split_parameters,
};
/// The `rand` of [`rng_from_seed`]'s generator (0.10): a user on another
/// major version of rand names this one's traits through it.
pub use rand;
pub use seeding::{derive_seed, reseed, rng_from_seed};
pub use space::Space;
pub use stop::StopFlag;

/// The README's example, compiled and run with the doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
