//! shoal-rl-parallel: train one agent with many workers — on threads, processes
//! or MPI ranks — through strategies written against small traits.
//!
//! Two traits carry everything:
//!
//! * [`Communicator`]: `rank`, `size`, `barrier`, `broadcast` of `f32`,
//!   `all_reduce_sum`, `gather_bytes`, `broadcast_bytes`. Three backends
//!   implement it: threads ([`run_threads`]), processes that rank 0 spawns
//!   from the current executable and reaches over loopback TCP
//!   ([`ProcessComm`], [`run_processes`]), and MPI (`MpiComm`, cargo
//!   feature `mpi`). Sums are taken in rank order and handed to every rank,
//!   so all backends agree bit for bit, and a seeded run gives the same
//!   result on threads and on processes. [`testing::check_communicator`]
//!   checks any implementation. [`GroupComm`] makes blocks of consecutive
//!   ranks communicators of their own, for groups that run in step.
//! * [`Strategy`]: how learners cooperate, written only against the learner
//!   traits of shoal-rl-core. Three are built in:
//!   - [`Pool`] (branch-and-merge) for any [`Learner`](shoal_rl_core::Learner):
//!     every worker improves a copy of the best agent, the candidates are
//!     evaluated frozen, the best is promoted ([`GroupPool`]: each candidate
//!     a group of workers that average their gradients);
//!   - [`RolloutGather`] for a [`RolloutLearner`](shoal_rl_core::RolloutLearner):
//!     workers collect, rank 0 updates and broadcasts weights;
//!   - [`GradientAveraging`] for a [`GradientLearner`](shoal_rl_core::GradientLearner):
//!     gradients are averaged through a [`CommReducer`] so all workers stay
//!     bit-identical.
//!
//! Each strategy calls an [`OnIteration`] callback on rank 0 with an
//! [`IterationRecord`] (one line of `metrics.jsonl`) and the current learner
//! (for checkpoints); the callback can stop the run with [`Control::Stop`].
//! Runs resume from a [`Resume`] (counters and, optionally, a state).
//!
//! This crate depends only on shoal-rl-core (and serde/postcard, and `mpi` when
//! enabled): it knows nothing about networks or environments.
//!
//! # Example: a pool on two threads
//!
//! ```
//! use shoal_rl_core::{Error, EvalReport, LearnReport, Learner, Result};
//! use shoal_rl_parallel::{
//!     Communicator, Control, IterationRecord, Pool, PoolConfig, Schedule, Strategy, run_threads,
//!     worker_seed,
//! };
//!
//! /// Guesses a hidden number by random search; its return is minus the error.
//! struct Guesser { guess: f64, step: f64, rng: u64 }
//!
//! impl Guesser {
//!     fn noise(&mut self) -> f64 {
//!         // xorshift: a seeded generator without dependencies
//!         self.rng ^= self.rng << 13; self.rng ^= self.rng >> 7; self.rng ^= self.rng << 17;
//!         (self.rng % 2001) as f64 / 1000.0 - 1.0
//!     }
//! }
//!
//! impl Learner for Guesser {
//!     fn learn(&mut self, episodes: usize) -> Result<LearnReport> {
//!         let mut report = LearnReport::default();
//!         for _ in 0..episodes {
//!             let trial = self.guess + self.step * self.noise();
//!             if (trial - 42.0).abs() < (self.guess - 42.0).abs() { self.guess = trial; }
//!             report.episode_returns.push(-(self.guess - 42.0).abs());
//!             report.episode_lengths.push(1);
//!         }
//!         Ok(report)
//!     }
//!     fn evaluate(&mut self, episodes: usize, _seed: u64) -> Result<EvalReport> {
//!         let error = (self.guess - 42.0).abs();
//!         Ok(EvalReport { episodes, return_mean: -error, return_std: 0.0, length_mean: 1.0, success_rate: None })
//!     }
//!     fn save_state(&self) -> Vec<u8> { self.guess.to_le_bytes().to_vec() }
//!     fn load_state(&mut self, bytes: &[u8]) -> Result<()> {
//!         let bytes = bytes.try_into().map_err(|_| Error::Shape("a guess is 8 bytes".into()))?;
//!         self.guess = f64::from_le_bytes(bytes);
//!         Ok(())
//!     }
//! }
//!
//! let seed = 7;
//! let results = run_threads(2, |comm: &dyn Communicator| {
//!     // The learner factory gets the rank: own seed, own hyperparameters
//!     // (worker 0 takes 1/10 of the step, as the pool convention goes).
//!     let step = if comm.rank() == 0 { 1.0 } else { 10.0 };
//!     let mut learner = Guesser { guess: 0.0, step, rng: worker_seed(seed, comm.rank()) + 1 };
//!     let schedule = Schedule::default().iterations(20).episodes_per_iteration(10);
//!     let mut pool = Pool::new(PoolConfig::new(schedule));
//!     let mut lines = Vec::new(); // rank 0 would write these to metrics.jsonl
//!     let summary = pool.run(comm, &mut learner, &mut |record: &IterationRecord, _: &Guesser| {
//!         lines.push(format!("{} {:?}", record.iteration, record.field("pool/winner")));
//!         Ok(Control::Continue)
//!     })?;
//!     Ok((summary.counters.episodes, learner.guess))
//! })
//! .unwrap();
//! let (episodes, guess) = results[0];
//! assert_eq!(episodes, 20 * 10 * 2);
//! assert!((guess - 42.0).abs() < 1.0, "{guess}");
//! assert_eq!(results[0], results[1]); // every worker ends with the promoted agent
//! ```
//!
//! # Writing your own strategy
//!
//! A strategy is any type implementing [`Strategy`] for the learner trait it
//! needs: call the learner's methods, and move what must be shared with the
//! [`Communicator`] collectives (`gather_bytes` of serialised reports,
//! `broadcast_bytes` of a state, `all_reduce_sum` of parameters). Because it
//! sees only `&dyn Communicator`, the same code then runs on threads,
//! processes and MPI. Call the callback on rank 0 and share its decision
//! with a broadcast so every rank stops together.
//!
//! # Using it from a binary
//!
//! Call [`launch`] with a [`Backend`] (parsed from `threads`, `processes` or
//! `mpi`) and the worker count. With [`Backend::Processes`], rank 0 re-runs
//! **the same executable with the same arguments** as each worker; in the
//! worker the same `launch` call notices the worker environment
//! ([`is_worker_process`]), joins the run as its rank and returns `Ok(None)`.
//! So `main` needs only two rules:
//!
//! 1. do nothing with side effects before `launch` (parsing is fine; creating
//!    a run directory, printing or writing is not — a worker would repeat
//!    it);
//! 2. inside the body, print and write only when `comm.is_root()`, and after
//!    `launch` act only on `Some(result)`.
//!
//! ```no_run
//! use shoal_rl_parallel::{Backend, Communicator, launch};
//!
//! fn main() {
//!     // e.g. `trainer --workers 2 --backend processes`
//!     let backend: Backend = "processes".parse().unwrap();
//!     match launch(backend, 2, |comm: &dyn Communicator| {
//!         // build this rank's learner from comm.rank(), run a strategy...
//!         Ok(comm.size())
//!     }) {
//!         Ok(Some(size)) => println!("trained on {size} workers"), // rank 0 only
//!         Ok(None) => {}                                         // a worker: exit quietly
//!         Err(error) => {
//!             eprintln!("error: {error}");
//!             std::process::exit(1);
//!         }
//!     }
//! }
//! ```
//!
//! With MPI, build with `--features mpi` and start `mpirun -n N <binary> …
//! --backend mpi --workers N`; rank `r` should seed its generators with
//! [`worker_seed`]`(seed, r)`. Test binaries that use processes should pass
//! explicit worker arguments through [`run_processes`] and
//! [`ProcessConfig::args`] (`--exact <test name>`), so the workers run only
//! the calling test.
#![deny(missing_docs)]

mod collective;
mod comm;
mod group;
mod launch;
#[cfg(feature = "mpi")]
mod mpi_backend;
mod process;
mod profile;
mod strategy;
pub mod testing;
#[cfg(test)]
mod testutil;
mod threads;

pub use comm::{CommReducer, Communicator, MAX_WORKERS};
pub use group::GroupComm;
pub use launch::{Backend, launch, launch_with};
#[cfg(feature = "mpi")]
pub use mpi_backend::MpiComm;
pub use process::{
    COORDINATOR_PID_VAR, COORDINATOR_VAR, ProcessComm, ProcessConfig, RANK_VAR, TIMEOUT_VAR,
    TOKEN_VAR, WORLD_SIZE_VAR, is_worker_process, launch_processes, run_processes,
};
pub use profile::{Measured, TimedComm, WorkerProfile, thread_cpu_seconds};
pub use strategy::builtin::*;
pub use strategy::{
    Context, Control, Counters, IterationRecord, OnIteration, RecordValue, Resume, RunSummary,
    Schedule, Strategy, WorkerStats, decode, encode, eval_steps, hash_parameters, keep_going,
    own_error_first, require, worker_seed,
};
pub use threads::{ThreadComm, run_threads};

/// The README's example, compiled and run with the doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
