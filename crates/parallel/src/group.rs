//! [`GroupComm`]: consecutive blocks of ranks as communicators of their own,
//! for strategies whose groups run the same collectives in step (a pool
//! whose candidates are gradient-averaging groups).

use shoal_rl_core::{Error, Result};

use crate::comm::{
    Communicator, bytes_into_f32s, check_root, comm_error, f32s_to_bytes, pack_payloads,
    unpack_payloads,
};

/// The block of `group_size` consecutive ranks this rank belongs to
/// (group `g` holds ranks `g·k … g·k + k − 1`), as a [`Communicator`]
/// whose ranks are `0..k`.
///
/// It is built on the parent's collectives, with no backend of its own, so
/// it works on threads, processes and MPI alike, with one condition: **every
/// group makes the same collectives, with the same slice lengths, in the
/// same order**, since each one is a collective of all the parent's ranks.
/// Groups that run the same learner on the same schedule do (each update
/// all-reduces its gradient once in every group); a mismatch fails as the
/// parent fails on one.
///
/// An all-reduce sums over the group only, in rank order as every backend
/// does: the parent all-reduces one slot per group, which the other groups
/// fill with zeros, and adding an exact zero changes no sum. It therefore
/// moves `groups ×` the values of a group's own all-reduce. Broadcasts and
/// gathers go through the parent's byte collectives (a gather to rank 0 and
/// a broadcast of every payload), so they carry every group's payload too.
///
/// ```
/// use shoal_rl_parallel::{Communicator, GroupComm, run_threads};
/// let sums = run_threads(4, |comm: &dyn Communicator| {
///     let group = GroupComm::new(comm, 2)?;
///     let mut x = vec![comm.rank() as f32];
///     group.all_reduce_sum(&mut x)?;
///     Ok((group.group(), group.rank(), x[0]))
/// })
/// .unwrap();
/// // Ranks 0 and 1 sum 0 + 1; ranks 2 and 3 sum 2 + 3.
/// assert_eq!(sums, vec![(0, 0, 1.0), (0, 1, 1.0), (1, 0, 5.0), (1, 1, 5.0)]);
/// ```
pub struct GroupComm<'a> {
    parent: &'a dyn Communicator,
    group_size: usize,
}

impl<'a> GroupComm<'a> {
    /// This rank's group of `group_size` consecutive ranks of `parent`,
    /// whose size it must divide.
    pub fn new(parent: &'a dyn Communicator, group_size: usize) -> Result<Self> {
        if group_size == 0 || !parent.size().is_multiple_of(group_size) {
            return Err(Error::Config(format!(
                "groups of {group_size} workers do not divide {} workers",
                parent.size()
            )));
        }
        Ok(GroupComm { parent, group_size })
    }

    /// This rank's group: `parent rank / group_size`.
    pub fn group(&self) -> usize {
        self.parent.rank() / self.group_size
    }

    /// How many groups the parent holds.
    pub fn groups(&self) -> usize {
        self.parent.size() / self.group_size
    }

    /// The parent rank of this group's rank `rank`.
    pub fn parent_rank(&self, rank: usize) -> usize {
        self.group() * self.group_size + rank
    }

    /// Every parent rank's payload, on every rank.
    fn all_gather_bytes(&self, payload: &[u8]) -> Result<Vec<Vec<u8>>> {
        let gathered = self.parent.gather_bytes(payload, 0)?;
        let mut packed = gathered.map(|all| pack_payloads(&all)).unwrap_or_default();
        self.parent.broadcast_bytes(&mut packed, 0)?;
        let all = unpack_payloads(&packed)?;
        if all.len() != self.parent.size() {
            return Err(comm_error(format!(
                "a gather of {} ranks returned {} payloads",
                self.parent.size(),
                all.len()
            )));
        }
        Ok(all)
    }
}

impl Communicator for GroupComm<'_> {
    fn rank(&self) -> usize {
        self.parent.rank() % self.group_size
    }

    fn size(&self) -> usize {
        self.group_size
    }

    fn barrier(&self) -> Result<()> {
        self.parent.barrier()
    }

    fn broadcast(&self, values: &mut [f32], root: usize) -> Result<()> {
        let mut bytes = f32s_to_bytes(values);
        self.broadcast_bytes(&mut bytes, root)?;
        bytes_into_f32s(&bytes, values)
    }

    fn all_reduce_sum(&self, values: &mut [f32]) -> Result<()> {
        let len = values.len();
        let slot = self.group() * len;
        let mut slots = vec![0.0; len * self.groups()];
        slots[slot..slot + len].copy_from_slice(values);
        self.parent.all_reduce_sum(&mut slots)?;
        values.copy_from_slice(&slots[slot..slot + len]);
        Ok(())
    }

    fn gather_bytes(&self, payload: &[u8], root: usize) -> Result<Option<Vec<Vec<u8>>>> {
        check_root(root, self.group_size, "gather_bytes")?;
        let mut all = self.all_gather_bytes(payload)?;
        if self.rank() != root {
            return Ok(None);
        }
        let first = self.parent_rank(0);
        Ok(Some(all.drain(first..first + self.group_size).collect()))
    }

    fn broadcast_bytes(&self, bytes: &mut Vec<u8>, root: usize) -> Result<()> {
        check_root(root, self.group_size, "broadcast_bytes")?;
        let own = if self.rank() == root { &bytes[..] } else { &[] };
        let mut all = self.all_gather_bytes(own)?;
        *bytes = std::mem::take(&mut all[self.parent_rank(root)]);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run_threads;

    /// Every collective of every group against sums and copies computed
    /// here from the ranks' own values.
    #[test]
    fn each_group_sums_broadcasts_and_gathers_among_its_own_ranks() {
        let results = run_threads(6, |comm: &dyn Communicator| {
            let group = GroupComm::new(comm, 3)?;
            let rank = comm.rank();
            let mut sum = vec![rank as f32, 0.5 * rank as f32, -0.0];
            group.all_reduce_sum(&mut sum)?;
            let mut values = vec![rank as f32; 2];
            group.broadcast(&mut values, 2)?;
            let mut bytes = vec![rank as u8; rank];
            group.broadcast_bytes(&mut bytes, 1)?;
            let gathered = group.gather_bytes(&[rank as u8, 7], 0)?;
            group.barrier()?;
            Ok((group.rank(), group.size(), sum, values, bytes, gathered))
        })
        .unwrap();
        for (rank, (group_rank, size, sum, values, bytes, gathered)) in
            results.into_iter().enumerate()
        {
            let first = rank / 3 * 3;
            let members = [first, first + 1, first + 2];
            assert_eq!((group_rank, size), (rank % 3, 3));
            let total: f32 = members.iter().map(|&r| r as f32).sum();
            assert_eq!(sum[..2], [total, 0.5 * total]);
            assert_eq!(values, vec![(first + 2) as f32; 2]);
            assert_eq!(bytes, vec![(first + 1) as u8; first + 1]);
            let expected = members.map(|r| vec![r as u8, 7]).to_vec();
            assert_eq!(gathered, (rank == first).then_some(expected));
        }
    }

    #[test]
    fn a_group_size_must_divide_the_workers_and_roots_are_group_ranks() {
        let results = run_threads(4, |comm: &dyn Communicator| {
            let refused = GroupComm::new(comm, 3).err().map(|e| e.to_string());
            let zero = GroupComm::new(comm, 0).is_err();
            let group = GroupComm::new(comm, 2)?;
            let bad_root = group
                .broadcast_bytes(&mut Vec::new(), 2)
                .err()
                .map(|e| e.to_string());
            Ok((refused, zero, bad_root))
        })
        .unwrap();
        for (refused, zero, bad_root) in results {
            assert_eq!(
                refused.as_deref(),
                Some("invalid configuration: groups of 3 workers do not divide 4 workers")
            );
            assert!(zero);
            assert!(
                bad_root
                    .unwrap()
                    .contains("root 2 is not a rank of a world of size 2")
            );
        }
    }
}
