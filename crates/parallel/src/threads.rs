//! The in-process backend: one thread per rank, collectives through a shared
//! mutex-guarded round ([`run_threads`], [`ThreadComm`]).

use std::cell::Cell;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use shoal_rl_core::{Error, Result};

use crate::collective::{Contribution, Outcome, combine};
use crate::comm::{Communicator, check_root, check_workers, comm_error};

/// Runs `body` on `workers` threads, one per rank, each with its own
/// [`ThreadComm`], and returns every rank's result in rank order.
///
/// Rank 0 runs on the calling thread, so thread-local state such as a
/// terminal progress bar works from rank 0. If any rank fails, the error that
/// caused the failure is returned rather than its echoes on other ranks: a
/// rank's own error (say a learner's) before an [`Error::Comm`], and a
/// communication error before a "rank N finished or failed" departure
/// notice; among equals the lowest rank's. A worker thread's panic becomes
/// [`Error::Comm`]; a panic on rank 0 propagates.
///
/// `workers == 0` is an [`Error::Config`].
///
/// ```
/// use shoal_rl_parallel::{Communicator, run_threads};
/// let ranks = run_threads(2, |comm: &dyn Communicator| Ok(comm.rank())).unwrap();
/// assert_eq!(ranks, vec![0, 1]);
/// assert!(run_threads(0, |_comm: &dyn Communicator| Ok(())).is_err());
/// ```
pub fn run_threads<T, F>(workers: usize, body: F) -> Result<Vec<T>>
where
    T: Send,
    F: Fn(&dyn Communicator) -> Result<T> + Sync,
{
    run_threads_built(workers, |_| std::thread::Builder::new(), body)
}

/// [`run_threads`] with each worker thread made from `builder(rank)` (tests
/// use it to make a spawn fail).
fn run_threads_built<T, F, B>(workers: usize, builder: B, body: F) -> Result<Vec<T>>
where
    T: Send,
    F: Fn(&dyn Communicator) -> Result<T> + Sync,
    B: Fn(usize) -> std::thread::Builder,
{
    check_workers(workers)?;
    let hub = Arc::new(Hub::new(workers));
    let body = &body;
    let outcomes: Vec<RankOutcome<T>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (1..workers)
            .map(|rank| {
                let thread_hub = Arc::clone(&hub);
                let spawned = builder(rank)
                    .name(format!("shoal-rank-{rank}"))
                    .spawn_scoped(scope, move || run_rank(thread_hub, rank, body))
                    .map_err(|e| Error::io(format!("cannot start the thread of rank {rank}"), e));
                if spawned.is_err() {
                    // A rank that never started has departed: its peers must
                    // fail their next collective, not wait for it forever.
                    hub.depart(rank);
                }
                spawned
            })
            .collect();
        let mut outcomes = vec![run_rank(Arc::clone(&hub), 0, body)];
        for (index, handle) in handles.into_iter().enumerate() {
            let rank = index + 1;
            outcomes.push(match handle {
                Err(spawn_error) => RankOutcome {
                    result: Err(spawn_error),
                    secondary: false,
                },
                Ok(handle) => handle.join().unwrap_or_else(|panic| RankOutcome {
                    result: Err(comm_error(format!(
                        "rank {rank} panicked: {}",
                        panic_message(panic.as_ref())
                    ))),
                    secondary: false,
                }),
            });
        }
        outcomes
    });
    // The root cause: an error that is not about communication (a learner's
    // own failure) beats a communication error, which beats the echo of a
    // rank's departure; among equals the lowest rank wins.
    let is_comm = |o: &RankOutcome<T>| matches!(o.result, Err(Error::Comm(_)));
    let first_error = outcomes
        .iter()
        .position(|o| o.result.is_err() && !o.secondary && !is_comm(o))
        .or_else(|| {
            outcomes
                .iter()
                .position(|o| o.result.is_err() && !o.secondary)
        })
        .or_else(|| outcomes.iter().position(|o| o.result.is_err()));
    match first_error {
        Some(rank) => {
            let outcome = outcomes.into_iter().nth(rank).expect("rank in range");
            Err(outcome.result.err().expect("an error"))
        }
        None => Ok(outcomes.into_iter().filter_map(|o| o.result.ok()).collect()),
    }
}

/// A rank's result, and whether its error was only the echo of another
/// rank's departure.
struct RankOutcome<T> {
    result: Result<T>,
    secondary: bool,
}

fn run_rank<T, F>(hub: Arc<Hub>, rank: usize, body: &F) -> RankOutcome<T>
where
    F: Fn(&dyn Communicator) -> Result<T>,
{
    let comm = ThreadComm {
        hub,
        rank,
        saw_departure: Cell::new(false),
    };
    // Marks the rank as gone even if `body` panics, so peers fail instead of waiting.
    let _departure = Departure(&comm);
    let result = body(&comm);
    RankOutcome {
        secondary: result.is_err() && comm.saw_departure.get(),
        result,
    }
}

struct Departure<'a>(&'a ThreadComm);

impl Drop for Departure<'_> {
    fn drop(&mut self) {
        self.0.hub.depart(self.0.rank);
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".into()
    }
}

/// State shared by the ranks of one [`run_threads`] call.
struct Hub {
    size: usize,
    state: Mutex<HubState>,
    wake: Condvar,
}

struct HubState {
    /// Number of completed rounds.
    generation: u64,
    /// Contributions to the round in progress, by rank.
    pending: Vec<Option<Contribution>>,
    arrived: usize,
    /// Outcome of the last completed round.
    last: Option<Arc<Result<Outcome, String>>>,
    /// Ranks whose body has returned (or panicked).
    departed: Vec<bool>,
}

impl Hub {
    fn new(size: usize) -> Self {
        Hub {
            size,
            state: Mutex::new(HubState {
                generation: 0,
                pending: (0..size).map(|_| None).collect(),
                arrived: 0,
                last: None,
                departed: vec![false; size],
            }),
            wake: Condvar::new(),
        }
    }

    /// Marks `rank` as gone and wakes every rank waiting for it.
    fn depart(&self, rank: usize) {
        let mut state = self.lock();
        state.departed[rank] = true;
        self.wake.notify_all();
    }

    fn lock(&self) -> MutexGuard<'_, HubState> {
        // No code panics while holding the lock, but do not cascade if it ever does.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The [`Communicator`] of one rank inside [`run_threads`].
pub struct ThreadComm {
    hub: Arc<Hub>,
    rank: usize,
    saw_departure: Cell<bool>,
}

impl ThreadComm {
    /// Deposits this rank's contribution and waits for the round to complete.
    fn exchange(&self, contribution: Contribution) -> Result<Arc<Result<Outcome, String>>> {
        let hub = &*self.hub;
        let mut state = hub.lock();
        let describe = contribution.describe();
        if let Some(gone) = state.departed.iter().position(|d| *d) {
            return Err(self.departure_error(gone, &describe));
        }
        let generation = state.generation;
        state.pending[self.rank] = Some(contribution);
        state.arrived += 1;
        if state.arrived == hub.size {
            let contributions = state
                .pending
                .iter_mut()
                .map(|c| c.take().expect("every rank arrived"))
                .collect();
            let outcome = Arc::new(combine(contributions));
            state.last = Some(Arc::clone(&outcome));
            state.generation += 1;
            state.arrived = 0;
            hub.wake.notify_all();
            return Ok(outcome);
        }
        loop {
            state = hub
                .wake
                .wait(state)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if state.generation != generation {
                return Ok(Arc::clone(state.last.as_ref().expect("a completed round")));
            }
            if let Some(gone) = state.departed.iter().position(|d| *d) {
                return Err(self.departure_error(gone, &describe));
            }
        }
    }

    fn departure_error(&self, gone: usize, call: &str) -> Error {
        self.saw_departure.set(true);
        comm_error(format!(
            "rank {gone} finished or failed before joining {call} (called on rank {})",
            self.rank
        ))
    }

    fn outcome(&self, contribution: Contribution) -> Result<Arc<Result<Outcome, String>>> {
        let outcome = self.exchange(contribution)?;
        if let Err(message) = outcome.as_ref() {
            return Err(comm_error(message.clone()));
        }
        Ok(outcome)
    }
}

impl Communicator for ThreadComm {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.hub.size
    }

    fn barrier(&self) -> Result<()> {
        self.outcome(Contribution::Barrier).map(|_| ())
    }

    fn broadcast(&self, values: &mut [f32], root: usize) -> Result<()> {
        check_root(root, self.size(), "broadcast")?;
        let sent = if self.rank == root {
            values.to_vec()
        } else {
            Vec::new()
        };
        let contribution = Contribution::Broadcast {
            root,
            len: values.len(),
            values: sent,
        };
        if let Ok(Outcome::Values(result)) = self.outcome(contribution)?.as_ref() {
            values.copy_from_slice(result);
        }
        Ok(())
    }

    fn all_reduce_sum(&self, values: &mut [f32]) -> Result<()> {
        let contribution = Contribution::AllReduce {
            values: values.to_vec(),
        };
        if let Ok(Outcome::Values(sum)) = self.outcome(contribution)?.as_ref() {
            values.copy_from_slice(sum);
        }
        Ok(())
    }

    fn gather_bytes(&self, payload: &[u8], root: usize) -> Result<Option<Vec<Vec<u8>>>> {
        check_root(root, self.size(), "gather_bytes")?;
        let outcome = self.outcome(Contribution::Gather {
            root,
            payload: payload.to_vec(),
        })?;
        match outcome.as_ref() {
            Ok(Outcome::Payloads { payloads, .. }) if self.rank == root => {
                Ok(Some(payloads.clone()))
            }
            _ => Ok(None),
        }
    }

    fn broadcast_bytes(&self, bytes: &mut Vec<u8>, root: usize) -> Result<()> {
        check_root(root, self.size(), "broadcast_bytes")?;
        let sent = if self.rank == root {
            bytes.clone()
        } else {
            Vec::new()
        };
        if let Ok(Outcome::Bytes(result)) = self
            .outcome(Contribution::BroadcastBytes { root, bytes: sent })?
            .as_ref()
        {
            bytes.clone_from(result);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::check_communicator;

    #[test]
    fn threads_pass_the_communicator_suite() {
        for workers in [1, 2, 3] {
            run_threads(workers, check_communicator).unwrap();
        }
    }

    #[test]
    fn zero_workers_is_a_config_error() {
        let err = run_threads(0, |_: &dyn Communicator| Ok(())).unwrap_err();
        assert!(matches!(err, Error::Config(_)), "{err}");
    }

    #[test]
    fn a_rank_that_fails_early_is_reported_instead_of_hanging() {
        let err = run_threads(3, |comm: &dyn Communicator| {
            if comm.rank() == 2 {
                return Err(Error::Config("rank 2 gave up".into()));
            }
            comm.barrier()
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "invalid configuration: rank 2 gave up");
    }

    #[test]
    fn a_rank_whose_thread_cannot_start_is_reported_instead_of_hanging() {
        // No machine has an address space this large: rank 2's spawn fails.
        let impossible_stack = |rank: usize| {
            let builder = std::thread::Builder::new();
            if rank == 2 {
                builder.stack_size(usize::MAX / 2)
            } else {
                builder
            }
        };
        let result = crate::testutil::within(std::time::Duration::from_secs(60), move || {
            run_threads_built(3, impossible_stack, |comm: &dyn Communicator| {
                comm.barrier()
            })
        });
        let err = result.unwrap_err();
        assert!(
            err.to_string()
                .contains("cannot start the thread of rank 2"),
            "{err}"
        );
    }

    #[test]
    fn more_workers_than_the_limit_is_a_config_error() {
        let err = run_threads(crate::MAX_WORKERS + 1, |_: &dyn Communicator| Ok(())).unwrap_err();
        let Error::Config(message) = err else {
            panic!("not a config error: {err}")
        };
        assert!(message.contains("at most 1024 workers"), "{message}");
    }

    #[test]
    fn a_panicking_rank_becomes_a_comm_error() {
        let err = run_threads(2, |comm: &dyn Communicator| {
            if comm.rank() == 1 {
                panic!("boom");
            }
            comm.barrier()
        })
        .unwrap_err();
        assert!(
            matches!(&err, Error::Comm(m) if m.contains("rank 1 panicked: boom")),
            "{err}"
        );
    }

    #[test]
    fn mismatched_collectives_fail_on_every_rank() {
        let err = run_threads(2, |comm: &dyn Communicator| {
            if comm.rank() == 0 {
                comm.barrier()
            } else {
                comm.all_reduce_sum(&mut [1.0])
            }
        })
        .unwrap_err();
        assert!(err.to_string().contains("ranks disagree"), "{err}");
    }
}
