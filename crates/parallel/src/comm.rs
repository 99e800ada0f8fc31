//! The [`Communicator`] trait every backend implements, and [`CommReducer`], the
//! [`MeanReducer`] that averages over a communicator.

use shoal_rl_core::{Error, MeanReducer, Result};

/// Collective operations over a fixed group of workers ("ranks" `0..size`).
///
/// Every method is *collective*: all ranks must call the same methods in the
/// same order with matching arguments (same `root`, same slice lengths). The
/// threads and processes backends detect a mismatch and return
/// [`Error::Comm`] on every rank; MPI may hang or abort instead, as MPI does.
///
/// A failed peer (a worker thread that returned early, a process that crashed)
/// makes the collective fail with [`Error::Comm`] rather than hang.
///
/// Sums are taken in rank order (`((x₀ + x₁) + x₂) + …`) and the one result is
/// handed to every rank, so all ranks hold bit-identical values and the three
/// backends agree bit for bit.
///
/// ```
/// use shoal_rl_parallel::{Communicator, run_threads};
/// let sums = run_threads(3, |comm: &dyn Communicator| {
///     let mut x = vec![comm.rank() as f32, 1.0];
///     comm.all_reduce_sum(&mut x)?;
///     Ok(x)
/// })
/// .unwrap();
/// assert_eq!(sums, vec![vec![3.0, 3.0]; 3]);
/// ```
pub trait Communicator {
    /// This worker's rank, in `0..size()`. Rank 0 is the root that prints and writes.
    fn rank(&self) -> usize;
    /// Number of workers.
    fn size(&self) -> usize;
    /// Returns once every rank has called `barrier`.
    fn barrier(&self) -> Result<()>;
    /// Overwrites `values` on every rank with the contents of `values` on `root`.
    /// All ranks must pass slices of the same length.
    fn broadcast(&self, values: &mut [f32], root: usize) -> Result<()>;
    /// Replaces `values` on every rank with the element-wise sum over all
    /// ranks. All ranks must pass slices of the same length.
    fn all_reduce_sum(&self, values: &mut [f32]) -> Result<()>;
    /// Collects one byte payload per rank on `root`: `Some(payloads)` indexed by
    /// rank on `root`, `None` on every other rank. Payload lengths may differ.
    fn gather_bytes(&self, payload: &[u8], root: usize) -> Result<Option<Vec<Vec<u8>>>>;
    /// Replaces `bytes` on every rank with the contents of `bytes` on `root`;
    /// the length need not be known in advance.
    fn broadcast_bytes(&self, bytes: &mut Vec<u8>, root: usize) -> Result<()>;

    /// Whether this is rank 0, the rank that prints and writes files.
    fn is_root(&self) -> bool {
        self.rank() == 0
    }
}

/// A [`MeanReducer`] that averages over every rank of a [`Communicator`]:
/// all-reduce sum, then divide by the world size. Because the sum is the same
/// bits on every rank, so is the mean, and learners that pass every gradient
/// through it stay bit-identical.
///
/// ```
/// use shoal_rl_core::MeanReducer;
/// use shoal_rl_parallel::{CommReducer, Communicator, run_threads};
/// let means = run_threads(2, |comm: &dyn Communicator| {
///     let mut grad = vec![comm.rank() as f32 * 2.0];
///     CommReducer::new(comm).mean(&mut grad)?;
///     Ok(grad[0])
/// })
/// .unwrap();
/// assert_eq!(means, vec![1.0, 1.0]);
/// ```
#[derive(Clone, Copy)]
pub struct CommReducer<'a> {
    comm: &'a dyn Communicator,
    calls: u64,
}

impl<'a> CommReducer<'a> {
    /// A reducer over all ranks of `comm`.
    pub fn new(comm: &'a dyn Communicator) -> Self {
        CommReducer { comm, calls: 0 }
    }

    /// How many times [`MeanReducer::mean`] has been called.
    pub fn calls(&self) -> u64 {
        self.calls
    }
}

impl MeanReducer for CommReducer<'_> {
    fn mean(&mut self, values: &mut [f32]) -> Result<()> {
        self.calls += 1;
        if self.comm.size() == 1 {
            return Ok(());
        }
        self.comm.all_reduce_sum(values)?;
        let size = self.comm.size() as f32;
        for v in values.iter_mut() {
            *v /= size;
        }
        Ok(())
    }
}

/// `Error::Comm` from anything printable.
pub(crate) fn comm_error(message: impl Into<String>) -> Error {
    Error::Comm(message.into())
}

/// The most workers any backend starts: far beyond the scale shoal is
/// measured at, and small enough that a typo (`--workers 30000`) is an
/// error rather than an exhausted machine.
pub const MAX_WORKERS: usize = 1024;

/// Checks a requested worker count: at least 1, at most [`MAX_WORKERS`].
pub(crate) fn check_workers(workers: usize) -> Result<()> {
    if workers == 0 {
        return Err(Error::Config(
            "the number of workers must be at least 1, got 0".into(),
        ));
    }
    if workers > MAX_WORKERS {
        return Err(Error::Config(format!(
            "{workers} workers requested; shoal runs at most {MAX_WORKERS} workers"
        )));
    }
    Ok(())
}

/// Checks that `root` names a rank of a world of `size`.
pub(crate) fn check_root(root: usize, size: usize, op: &str) -> Result<()> {
    if root >= size {
        return Err(comm_error(format!(
            "{op}: root {root} is not a rank of a world of size {size}"
        )));
    }
    Ok(())
}

/// Adds `values` into `sum` element-wise; the caller guarantees equal lengths.
pub(crate) fn add_into(sum: &mut [f32], values: &[f32]) {
    for (s, v) in sum.iter_mut().zip(values) {
        *s += *v;
    }
}

/// Little-endian bytes of an `f32` slice (the wire and MPI-independent format).
pub(crate) fn f32s_to_bytes(values: &[f32]) -> Vec<u8> {
    let mut out = vec![0u8; values.len() * 4];
    for (chunk, v) in out.chunks_exact_mut(4).zip(values) {
        chunk.copy_from_slice(&v.to_le_bytes());
    }
    out
}

/// Fills `out` from little-endian bytes; `bytes.len()` must be `4 * out.len()`.
pub(crate) fn bytes_into_f32s(bytes: &[u8], out: &mut [f32]) -> Result<()> {
    if bytes.len() != out.len() * 4 {
        return Err(Error::Shape(format!(
            "expected {} f32 values, received {} bytes",
            out.len(),
            bytes.len()
        )));
    }
    for (v, chunk) in out.iter_mut().zip(bytes.chunks_exact(4)) {
        *v = f32::from_le_bytes(chunk.try_into().expect("chunks of 4"));
    }
    Ok(())
}

/// Packs byte payloads as `[count u64][len u64, bytes]…` (little endian).
pub(crate) fn pack_payloads(payloads: &[Vec<u8>]) -> Vec<u8> {
    let total: usize = payloads.iter().map(|p| p.len() + 8).sum::<usize>() + 8;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&(payloads.len() as u64).to_le_bytes());
    for p in payloads {
        out.extend_from_slice(&(p.len() as u64).to_le_bytes());
        out.extend_from_slice(p);
    }
    out
}

/// Inverse of [`pack_payloads`].
pub(crate) fn unpack_payloads(bytes: &[u8]) -> Result<Vec<Vec<u8>>> {
    let bad = || comm_error("malformed gathered payload list");
    let mut rest = bytes;
    let take_u64 = |rest: &mut &[u8]| -> Result<u64> {
        let (head, tail) = rest.split_at_checked(8).ok_or_else(bad)?;
        *rest = tail;
        Ok(u64::from_le_bytes(head.try_into().expect("8 bytes")))
    };
    let count = take_u64(&mut rest)? as usize;
    // Every payload needs at least its 8-byte length, so a count the bytes
    // cannot hold reserves no more than the bytes could.
    let mut out = Vec::with_capacity(count.min(rest.len() / 8));
    for _ in 0..count {
        let len = take_u64(&mut rest)? as usize;
        let (head, tail) = rest.split_at_checked(len).ok_or_else(bad)?;
        out.push(head.to_vec());
        rest = tail;
    }
    if !rest.is_empty() {
        return Err(bad());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_packing_round_trips_including_empty_payloads() {
        let payloads = vec![vec![1, 2, 3], vec![], vec![9; 1000]];
        assert_eq!(
            unpack_payloads(&pack_payloads(&payloads)).unwrap(),
            payloads
        );
    }

    const MALFORMED: &str = "communication failed: malformed gathered payload list";

    #[test]
    fn truncated_payload_list_is_an_error() {
        let packed = pack_payloads(&[vec![1, 2, 3]]);
        // Written out by hand: count 1, length 3, the bytes.
        assert_eq!(
            packed,
            [[1, 0, 0, 0, 0, 0, 0, 0], [3, 0, 0, 0, 0, 0, 0, 0]]
                .concat()
                .into_iter()
                .chain([1, 2, 3])
                .collect::<Vec<u8>>()
        );
        let error = unpack_payloads(&packed[..packed.len() - 1]).unwrap_err();
        assert!(matches!(error, Error::Comm(_)));
        assert_eq!(error.to_string(), MALFORMED);
        let error = unpack_payloads(&[packed.clone(), vec![0]].concat()).unwrap_err();
        assert_eq!(error.to_string(), MALFORMED, "trailing bytes");
    }

    use proptest::prelude::*;

    use crate::testutil::peak_allocation;

    proptest! {
        #[test]
        fn any_payload_list_round_trips(
            payloads in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..64), 0..20)
        ) {
            let packed = pack_payloads(&payloads);
            let expected_len: usize = 8 + payloads.iter().map(|p| 8 + p.len()).sum::<usize>();
            prop_assert_eq!(packed.len(), expected_len);
            prop_assert_eq!(unpack_payloads(&packed).unwrap(), payloads);
            // Every strict prefix is an error: nothing can stop early.
            for cut in 0..packed.len() {
                let error = unpack_payloads(&packed[..cut]).unwrap_err();
                prop_assert_eq!(error.to_string(), MALFORMED);
            }
        }

        /// Any byte string unpacks to the one list that packs back to it, or
        /// is the one error; and the call never holds more than 4 bytes per
        /// input byte (a 24-byte `Vec` per 8-byte length prefix, plus the
        /// payload bytes) and the error's message, whatever count or lengths
        /// the bytes claim.
        #[test]
        fn any_bytes_unpack_to_their_list_or_an_error(
            count in prop_oneof![0u64..6, any::<u64>()],
            lens in prop::collection::vec(prop_oneof![0u64..16, any::<u64>()], 0..6),
            noise in prop::collection::vec(any::<u8>(), 0..64),
            cut in any::<prop::sample::Index>(),
        ) {
            let mut bytes = count.to_le_bytes().to_vec();
            for (i, len) in lens.iter().enumerate() {
                bytes.extend(len.to_le_bytes());
                bytes.extend(noise.iter().take(*len as usize).map(|b| b ^ i as u8));
            }
            bytes.extend(&noise);
            let bytes = &bytes[..cut.index(bytes.len() + 1)];
            let (unpacked, peak) = peak_allocation(|| unpack_payloads(bytes));
            prop_assert!(peak <= 4 * bytes.len() + MALFORMED.len(), "{peak} bytes allocated for {} input bytes", bytes.len());
            match unpacked {
                Ok(list) => prop_assert_eq!(pack_payloads(&list), bytes),
                Err(error) => prop_assert_eq!(error.to_string(), MALFORMED),
            }
        }
    }

    #[test]
    fn f32_bytes_round_trip_and_reject_wrong_length() {
        let values = [1.5f32, -0.0, f32::MAX, 1e-30];
        let mut back = [0.0f32; 4];
        bytes_into_f32s(&f32s_to_bytes(&values), &mut back).unwrap();
        assert_eq!(back.map(f32::to_bits), values.map(f32::to_bits));
        assert!(bytes_into_f32s(&[0; 7], &mut [0.0; 2]).is_err());
    }
}
