//! Tools for testing communicators and strategies: the conformance check
//! [`check_communicator`] and the toy learner [`Quadratic`].

mod quadratic;
mod suite;

pub use quadratic::Quadratic;
pub use suite::check_communicator;
