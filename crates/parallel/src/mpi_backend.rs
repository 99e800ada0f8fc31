//! The MPI backend ([`MpiComm`], cargo feature `mpi`): ranks started by
//! `mpirun`, collectives through the `mpi` crate.
//!
//! On more than two ranks all-reduce is a gather to rank 0, a sum in rank
//! order and a broadcast, rather than `MPI_Allreduce`, so the result has the
//! same bits as on the threads and processes backends (MPI's own reduction
//! order is unspecified). On two ranks each element is a single addition,
//! which commutes, so `MPI_Allreduce` is used.
//!
//! # Faults
//!
//! MPI itself decides what a dead or hung rank does, not shoal: a rank that
//! dies makes `mpirun` end the whole job (OpenMPI prints which rank exited);
//! a rank whose learner fails prints its error and calls `MPI_Abort`
//! ([`launch`](crate::launch)), so the others never wait for it; a rank that
//! hangs (stopped, deadlocked) leaves the others blocked inside the next
//! collective, as in any MPI program: bound the job with `mpirun --timeout
//! SECONDS` (OpenMPI) or the scheduler's time limit. Where it is cheap —
//! `barrier`, `gather_bytes` and `broadcast_bytes`, which move state and
//! memories rather than every gradient — the ranks first agree on which
//! collective they are in (one all-reduce of a 16-byte descriptor), so a
//! strategy that calls different collectives on different ranks is an
//! [`Error::Comm`] on every rank instead of a hang or garbage. The float
//! collectives on the hot path are not checked: a length mismatch there is
//! an MPI error that ends the job.

use mpi::collective::SystemOperation;
use mpi::datatype::PartitionMut;
use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator as _, CommunicatorCollectives, Root};
use shoal_rl_core::{Error, Result};

use crate::comm::{Communicator, add_into, check_root, comm_error};

/// Descriptors of the collectives whose ranks check that they agree.
const OP_BARRIER: u64 = 1;
const OP_GATHER: u64 = 2;
const OP_BROADCAST_BYTES: u64 = 3;

/// The [`Communicator`] of one MPI rank over `MPI_COMM_WORLD`.
///
/// Dropping it finalises MPI, which can be initialised once per process.
pub struct MpiComm {
    world: SimpleCommunicator,
    rank: usize,
    size: usize,
    // Dropped last: finalises MPI.
    _universe: Universe,
}

impl std::fmt::Debug for MpiComm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpiComm")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .finish()
    }
}

impl MpiComm {
    /// Initialises MPI and returns this rank's communicator over all ranks.
    /// Calling it twice in one process is an [`Error::Comm`].
    pub fn init() -> Result<MpiComm> {
        let universe = mpi::initialize()
            .ok_or_else(|| comm_error("MPI is already initialised in this process"))?;
        let world = universe.world();
        let rank = world.rank() as usize;
        let size = world.size() as usize;
        Ok(MpiComm {
            world,
            rank,
            size,
            _universe: universe,
        })
    }

    /// Checks that every rank is in the same collective: `op` names the call
    /// and `detail` its root. Every rank learns the verdict, so a mismatch
    /// fails everywhere at once.
    fn agree(&self, op: u64, detail: u64, call: &str) -> Result<()> {
        // max over (x, !x) gives the largest and, negated, the smallest value.
        let mine = [op, detail, !op, !detail];
        let mut seen = [0u64; 4];
        self.world
            .all_reduce_into(&mine[..], &mut seen[..], SystemOperation::max());
        if seen[0] != !seen[2] || seen[1] != !seen[3] {
            return Err(comm_error(format!(
                "ranks disagree on the collective: rank {} called {call}, another rank \
                 called something else",
                self.rank
            )));
        }
        Ok(())
    }

    /// Aborts every rank of the job with `code` (`MPI_Abort`).
    pub fn abort(&self, code: i32) -> ! {
        self.world.abort(code)
    }
}

/// `bytes`, or an empty slice of `spare` if `bytes` is empty.
///
/// An empty Rust byte slice points at address 1, which OpenMPI reads as
/// `MPI_IN_PLACE`; an empty slice of a real buffer does not.
fn real_address<'a>(bytes: &'a [u8], spare: &'a [u8; 1]) -> &'a [u8] {
    if bytes.is_empty() { &spare[..0] } else { bytes }
}

/// An MPI element count, or an error if the payload is too large for MPI's `int`.
fn mpi_count(len: usize, what: &str) -> Result<i32> {
    i32::try_from(len).map_err(|_| {
        Error::Shape(format!(
            "{what}: {len} elements exceed MPI's limit of {}",
            i32::MAX
        ))
    })
}

impl Communicator for MpiComm {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn barrier(&self) -> Result<()> {
        // The agreement is itself a synchronisation of every rank.
        self.agree(OP_BARRIER, 0, "barrier()")
    }

    fn broadcast(&self, values: &mut [f32], root: usize) -> Result<()> {
        check_root(root, self.size, "broadcast")?;
        mpi_count(values.len(), "broadcast")?;
        self.world
            .process_at_rank(root as i32)
            .broadcast_into(values);
        Ok(())
    }

    fn all_reduce_sum(&self, values: &mut [f32]) -> Result<()> {
        mpi_count(values.len() * self.size, "all_reduce_sum")?;
        if self.size <= 2 {
            // With two ranks every element is one addition, and IEEE addition
            // commutes, so MPI's own all-reduce gives the rank-order bits.
            let own = values.to_vec();
            self.world
                .all_reduce_into(&own[..], values, SystemOperation::sum());
            return Ok(());
        }
        let root = self.world.process_at_rank(0);
        if self.rank == 0 {
            let mut all = vec![0.0f32; values.len() * self.size];
            root.gather_into_root(&values[..], &mut all[..]);
            let n = values.len();
            for part in all.chunks_exact(n.max(1)).skip(1).take(self.size - 1) {
                add_into(values, part);
            }
        } else {
            root.gather_into(&values[..]);
        }
        root.broadcast_into(values);
        Ok(())
    }

    fn gather_bytes(&self, payload: &[u8], root: usize) -> Result<Option<Vec<Vec<u8>>>> {
        check_root(root, self.size, "gather_bytes")?;
        self.agree(
            OP_GATHER,
            root as u64,
            &format!("gather_bytes(root {root})"),
        )?;
        let length = mpi_count(payload.len(), "gather_bytes")?;
        let spare = [0u8; 1];
        let payload = real_address(payload, &spare);
        let root_process = self.world.process_at_rank(root as i32);
        if self.rank != root {
            root_process.gather_into(&length);
            root_process.gather_varcount_into(payload);
            return Ok(None);
        }
        let mut counts = vec![0i32; self.size];
        root_process.gather_into_root(&length, &mut counts[..]);
        let mut displacements = Vec::with_capacity(self.size);
        let mut total = 0usize;
        for &count in &counts {
            displacements.push(mpi_count(total, "gather_bytes")?);
            total += count as usize;
        }
        mpi_count(total, "gather_bytes")?;
        // One spare byte so that even an empty receive buffer has a real address.
        let mut buffer = vec![0u8; total + 1];
        {
            let mut partition =
                PartitionMut::new(&mut buffer[..total], &counts[..], &displacements[..]);
            root_process.gather_varcount_into_root(payload, &mut partition);
        }
        let payloads = counts
            .iter()
            .zip(&displacements)
            .map(|(&count, &start)| buffer[start as usize..(start + count) as usize].to_vec())
            .collect();
        Ok(Some(payloads))
    }

    fn broadcast_bytes(&self, bytes: &mut Vec<u8>, root: usize) -> Result<()> {
        check_root(root, self.size, "broadcast_bytes")?;
        self.agree(
            OP_BROADCAST_BYTES,
            root as u64,
            &format!("broadcast_bytes(root {root})"),
        )?;
        let root_process = self.world.process_at_rank(root as i32);
        let mut length = bytes.len() as u64;
        root_process.broadcast_into(&mut length);
        let length = usize::try_from(length)
            .map_err(|_| comm_error("broadcast_bytes: payload too large for this machine"))?;
        mpi_count(length, "broadcast_bytes")?;
        bytes.resize(length, 0);
        if length > 0 {
            root_process.broadcast_into(&mut bytes[..]);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::check_communicator;

    /// The only test that initialises MPI (once per process): alone it runs
    /// as an MPI singleton; under `mpirun -n N <test binary> --exact
    /// mpi_backend::tests::mpi_passes_the_communicator_suite` on N ranks.
    #[test]
    fn mpi_passes_the_communicator_suite() {
        let comm = MpiComm::init().unwrap();
        check_communicator(&comm).unwrap();
        assert!(MpiComm::init().is_err(), "MPI cannot be initialised twice");
        if comm.size() > 1 {
            // Different collectives on different ranks: an error everywhere,
            // after which the communicator still works.
            let result = if comm.rank() == 0 {
                comm.barrier()
            } else {
                comm.gather_bytes(b"x", 0).map(|_| ())
            };
            let message = result.unwrap_err().to_string();
            assert!(message.contains("ranks disagree"), "{message}");
            let mut bytes = b"again".to_vec();
            comm.broadcast_bytes(&mut bytes, 0).unwrap();
            assert_eq!(bytes, b"again");
        }
    }
}
