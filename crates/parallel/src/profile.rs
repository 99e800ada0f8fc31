//! Where a worker's time goes: CPU time spent computing and time spent in
//! collectives, per iteration ([`WorkerProfile`]), measured by wrapping the
//! communicator ([`TimedComm`]).
//!
//! CPU time of the worker's own thread, not wall time, is what makes the
//! profile useful on an oversubscribed machine: 16 workers sharing 2 cores
//! each wait for a core, but the CPU time each spends computing is what it
//! would spend on a core of its own. With the all-reduce latency measured
//! per worker count, that projects the wall time of N workers on N cores.

use std::cell::Cell;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use shoal_rl_core::Result;

use crate::comm::Communicator;

/// One worker's time over one iteration (from one record to the next).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkerProfile {
    /// CPU time of the worker's thread outside collectives, in seconds:
    /// environment steps, forward and backward passes, evaluation and
    /// checkpoints (rank 0's are counted in the iteration after the one
    /// they follow).
    pub compute_cpu_s: f64,
    /// Wall time inside collectives, in seconds (with more workers than
    /// cores, mostly waiting for the others).
    pub comm_wall_s: f64,
    /// `all_reduce_sum` calls.
    pub all_reduces: u64,
    /// Values those calls summed, in all.
    pub all_reduce_values: u64,
    /// Every other collective (broadcasts, gathers, barriers).
    pub other_collectives: u64,
    /// Bytes those collectives carried, as this worker saw them: its
    /// payload of a gather, the message of a broadcast.
    pub other_bytes: u64,
}

/// A measured value kept beside computed ones, such as the profile in an
/// [`IterationRecord`](crate::IterationRecord): equal to any other, so two
/// records compare by what they computed, not by how long it took.
///
/// ```
/// use shoal_rl_parallel::Measured;
/// assert_eq!(Measured(1.5), Measured(2.0));
/// assert_eq!(Measured(1.5).0, 1.5);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Measured<T>(pub T);

impl<T> PartialEq for Measured<T> {
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}

impl<T> std::ops::Deref for Measured<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// CPU time consumed by the calling thread so far, in seconds (`None`
/// where the platform has no per-thread clock).
pub fn thread_cpu_seconds() -> Option<f64> {
    #[cfg(unix)]
    {
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes one timespec through a valid pointer.
        let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
        (status == 0).then_some(now.tv_sec as f64 + now.tv_nsec as f64 * 1e-9)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// A [`Communicator`] that passes every call through to another and keeps
/// the time spent inside them; [`TimedComm::take`] returns the profile
/// since the previous take.
pub struct TimedComm<'a> {
    inner: &'a dyn Communicator,
    since_cpu: Cell<f64>,
    comm_cpu_s: Cell<f64>,
    profile: Cell<WorkerProfile>,
}

impl<'a> TimedComm<'a> {
    /// Times the calls made through it to `inner`, from now.
    pub fn new(inner: &'a dyn Communicator) -> Self {
        TimedComm {
            inner,
            since_cpu: Cell::new(thread_cpu_seconds().unwrap_or(0.0)),
            comm_cpu_s: Cell::new(0.0),
            profile: Cell::new(WorkerProfile::default()),
        }
    }

    /// The profile since the previous take (or since [`TimedComm::new`]),
    /// and a fresh start. Call it on the thread that makes the calls.
    pub fn take(&self) -> WorkerProfile {
        let now = thread_cpu_seconds().unwrap_or(0.0);
        let mut profile = self.profile.take();
        profile.compute_cpu_s = (now - self.since_cpu.get() - self.comm_cpu_s.take()).max(0.0);
        self.since_cpu.set(now);
        profile
    }

    fn timed<T>(&self, kind: Call, call: impl FnOnce() -> T) -> T {
        let (cpu, wall) = (thread_cpu_seconds().unwrap_or(0.0), Instant::now());
        let result = call();
        let mut profile = self.profile.get();
        profile.comm_wall_s += wall.elapsed().as_secs_f64();
        match kind {
            Call::AllReduce { values } => {
                profile.all_reduces += 1;
                profile.all_reduce_values += values as u64;
            }
            Call::Other { bytes } => {
                profile.other_collectives += 1;
                profile.other_bytes += bytes as u64;
            }
        }
        self.profile.set(profile);
        self.comm_cpu_s
            .set(self.comm_cpu_s.get() + thread_cpu_seconds().unwrap_or(0.0) - cpu);
        result
    }
}

/// What a timed call was.
#[derive(Clone, Copy)]
enum Call {
    AllReduce { values: usize },
    Other { bytes: usize },
}

impl Communicator for TimedComm<'_> {
    fn rank(&self) -> usize {
        self.inner.rank()
    }

    fn size(&self) -> usize {
        self.inner.size()
    }

    fn barrier(&self) -> Result<()> {
        self.timed(Call::Other { bytes: 0 }, || self.inner.barrier())
    }

    fn broadcast(&self, values: &mut [f32], root: usize) -> Result<()> {
        let bytes = std::mem::size_of_val(values);
        self.timed(Call::Other { bytes }, || self.inner.broadcast(values, root))
    }

    fn all_reduce_sum(&self, values: &mut [f32]) -> Result<()> {
        let call = Call::AllReduce {
            values: values.len(),
        };
        self.timed(call, || self.inner.all_reduce_sum(values))
    }

    fn gather_bytes(&self, payload: &[u8], root: usize) -> Result<Option<Vec<Vec<u8>>>> {
        let call = Call::Other {
            bytes: payload.len(),
        };
        self.timed(call, || self.inner.gather_bytes(payload, root))
    }

    fn broadcast_bytes(&self, bytes: &mut Vec<u8>, root: usize) -> Result<()> {
        // The message's length is known to every rank only afterwards.
        let result = self.timed(Call::Other { bytes: 0 }, || {
            self.inner.broadcast_bytes(bytes, root)
        });
        let mut profile = self.profile.get();
        profile.other_bytes += bytes.len() as u64;
        self.profile.set(profile);
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run_threads;

    /// Spins for about `seconds` of this thread's CPU time.
    fn burn_cpu(seconds: f64) -> u64 {
        let start = thread_cpu_seconds().unwrap();
        let mut x = 1u64;
        while thread_cpu_seconds().unwrap() - start < seconds {
            for _ in 0..10_000 {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            }
        }
        x
    }

    #[test]
    fn compute_and_collectives_are_counted_apart() {
        let profiles = run_threads(2, |comm: &dyn Communicator| {
            let timed = TimedComm::new(comm);
            // Rank 1 computes 0.2 s more before the all-reduce, so rank 0
            // waits there, without computing, until rank 1 arrives.
            std::hint::black_box(burn_cpu(0.05 + 0.2 * comm.rank() as f64));
            let mut values = vec![1.0f32; 1000];
            let arrived = std::time::Instant::now();
            timed.all_reduce_sum(&mut values)?;
            timed.all_reduce_sum(&mut values[..10])?;
            timed.barrier()?;
            let mut message = if comm.rank() == 0 {
                vec![7u8; 300]
            } else {
                Vec::new()
            };
            timed.broadcast_bytes(&mut message, 0)?;
            timed.gather_bytes(&[1, 2, 3], 0)?;
            let first = timed.take();
            let second = timed.take();
            Ok((first, second, arrived))
        })
        .unwrap();
        for (rank, (first, second, _)) in profiles.iter().enumerate() {
            let expected = 0.05 + 0.2 * rank as f64;
            assert!(
                (first.compute_cpu_s - expected).abs() < 0.03,
                "rank {rank}: {first:?}"
            );
            // A barrier, a broadcast of 300 bytes and a gather of 3.
            assert_eq!(
                (
                    first.all_reduces,
                    first.all_reduce_values,
                    first.other_collectives,
                    first.other_bytes
                ),
                (2, 1010, 3, 303)
            );
            assert_eq!(second.all_reduces, 0, "take starts afresh");
            assert!(second.compute_cpu_s < 0.01, "{second:?}");
        }
        // CPU times above do not depend on the machine's load; wall times
        // do, so the wait is checked against what caused it: an all-reduce
        // cannot end on rank 0 before rank 1 has arrived at it (less the
        // moment between taking the time and calling).
        let rank_1_later = profiles[1].2.saturating_duration_since(profiles[0].2);
        assert!(rank_1_later.as_secs_f64() > 0.0);
        assert!(
            profiles[0].0.comm_wall_s >= rank_1_later.as_secs_f64() - 1e-3,
            "rank 0 waited {:?} for rank 1, which arrived {rank_1_later:?} later",
            profiles[0].0.comm_wall_s
        );
    }
}
