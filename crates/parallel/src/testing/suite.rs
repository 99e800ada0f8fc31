//! A reusable conformance check for [`Communicator`] implementations, run
//! identically on every backend (and usable on your own).

use shoal_rl_core::{Error, Result};

use crate::comm::{Communicator, comm_error};

/// Length of the large-payload checks (100k `f32`, 400 kB).
const LARGE: usize = 100_000;

/// Exercises every collective of `comm` and checks the results; call it on
/// every rank. Checks: rank and size, barrier, broadcast from every root,
/// all-reduce correctness and bit-identity across ranks, gather order to
/// every root (including empty and uneven payloads), byte broadcast from
/// every root, and 100k-`f32` payloads.
///
/// A failed check is an [`Error::Comm`] naming the check and the rank.
///
/// ```
/// use shoal_rl_parallel::run_threads;
/// use shoal_rl_parallel::testing::check_communicator;
/// run_threads(3, check_communicator).unwrap();
/// ```
pub fn check_communicator(comm: &dyn Communicator) -> Result<()> {
    let (rank, size) = (comm.rank(), comm.size());
    let fail = |check: &str, detail: String| -> Error {
        comm_error(format!(
            "communicator check `{check}` failed on rank {rank}: {detail}"
        ))
    };
    if size == 0 || rank >= size {
        return Err(fail("rank and size", format!("rank {rank}, size {size}")));
    }
    if comm.is_root() != (rank == 0) {
        return Err(fail("is_root", format!("is_root() = {}", comm.is_root())));
    }

    // Everyone agrees on the world size.
    let mut sizes = vec![size as f32];
    comm.all_reduce_sum(&mut sizes)?;
    if sizes[0] != (size * size) as f32 {
        return Err(fail("size agreement", format!("sum of sizes {}", sizes[0])));
    }

    comm.barrier()?;
    comm.barrier()?;

    for root in 0..size {
        let mut values = if rank == root {
            vec![root as f32 + 0.5, -1.0, f32::MIN_POSITIVE]
        } else {
            vec![f32::NAN; 3]
        };
        comm.broadcast(&mut values, root)?;
        if values != [root as f32 + 0.5, -1.0, f32::MIN_POSITIVE] {
            return Err(fail(
                "broadcast",
                format!("from root {root} got {values:?}"),
            ));
        }
    }
    let mut empty: [f32; 0] = [];
    comm.broadcast(&mut empty, 0)?;

    // All-reduce: exact integers first, then values whose f32 sum depends on
    // the order, to check that every rank gets the same bits.
    let mut counts: Vec<f32> = (0..5).map(|i| (rank * 10 + i) as f32).collect();
    comm.all_reduce_sum(&mut counts)?;
    let rank_sum = (size * (size - 1) / 2) as f32;
    let expected: Vec<f32> = (0..5)
        .map(|i| rank_sum * 10.0 + (i * size) as f32)
        .collect();
    if counts != expected {
        return Err(fail(
            "all_reduce_sum",
            format!("got {counts:?}, expected {expected:?}"),
        ));
    }
    let mut awkward: Vec<f32> = (0..64).map(|i| awkward_value(rank, i)).collect();
    comm.all_reduce_sum(&mut awkward)?;
    let expected: Vec<f32> = (0..64)
        .map(|i| (1..size).fold(awkward_value(0, i), |acc, r| acc + awkward_value(r, i)))
        .collect();
    if awkward
        .iter()
        .map(|v| v.to_bits())
        .ne(expected.iter().map(|v| v.to_bits()))
    {
        return Err(fail(
            "all_reduce_sum rank order",
            "sum differs from the rank-order sum".into(),
        ));
    }
    check_identical_everywhere(comm, &awkward, "all_reduce_sum identical on all ranks")?;

    for root in 0..size {
        // Uneven lengths, and an empty payload from rank 1.
        let payload: Vec<u8> = if rank == 1 {
            Vec::new()
        } else {
            (0..rank * 3 + 1).map(|i| (rank + i) as u8).collect()
        };
        let gathered = comm.gather_bytes(&payload, root)?;
        match (rank == root, gathered) {
            (true, Some(all)) => {
                for (r, got) in all.iter().enumerate() {
                    let want: Vec<u8> = if r == 1 {
                        Vec::new()
                    } else {
                        (0..r * 3 + 1).map(|i| (r + i) as u8).collect()
                    };
                    if *got != want {
                        return Err(fail(
                            "gather_bytes",
                            format!("to root {root}, rank {r} sent {got:?}"),
                        ));
                    }
                }
                if all.len() != size {
                    return Err(fail(
                        "gather_bytes",
                        format!("{} payloads for {size} ranks", all.len()),
                    ));
                }
            }
            (false, None) => {}
            (is_root, got) => {
                return Err(fail(
                    "gather_bytes",
                    format!("root {root}: rank {rank} (root: {is_root}) received {got:?}"),
                ));
            }
        }
    }

    for root in 0..size {
        let message: Vec<u8> = format!("from {root}").into_bytes();
        let mut bytes = if rank == root {
            message.clone()
        } else {
            vec![0xAA; 100]
        };
        comm.broadcast_bytes(&mut bytes, root)?;
        if bytes != message {
            return Err(fail(
                "broadcast_bytes",
                format!("from root {root} got {bytes:?}"),
            ));
        }
    }
    let mut nothing = if rank == 0 { Vec::new() } else { vec![1, 2, 3] };
    comm.broadcast_bytes(&mut nothing, 0)?;
    if !nothing.is_empty() {
        return Err(fail(
            "broadcast_bytes",
            "an empty broadcast left bytes behind".into(),
        ));
    }

    // Large payloads.
    let mut large: Vec<f32> = (0..LARGE)
        .map(|i| (i % 1000) as f32 + rank as f32)
        .collect();
    comm.all_reduce_sum(&mut large)?;
    let bad = (0..LARGE).find(|&i| large[i] != (i % 1000) as f32 * size as f32 + rank_sum);
    if let Some(i) = bad {
        return Err(fail(
            "large all_reduce_sum",
            format!("element {i} = {}", large[i]),
        ));
    }
    let root = size - 1;
    let mut large = if rank == root {
        (0..LARGE).map(|i| i as f32).collect()
    } else {
        vec![0.0; LARGE]
    };
    comm.broadcast(&mut large, root)?;
    if let Some(i) = (0..LARGE).find(|&i| large[i] != i as f32) {
        return Err(fail(
            "large broadcast",
            format!("element {i} = {}", large[i]),
        ));
    }
    let big_bytes: Vec<u8> = (0..LARGE * 4).map(|i| (i * 7 + rank) as u8).collect();
    if let Some(all) = comm.gather_bytes(&big_bytes, 0)? {
        for (r, got) in all.iter().enumerate() {
            if got.len() != LARGE * 4
                || got.iter().enumerate().any(|(i, b)| *b != (i * 7 + r) as u8)
            {
                return Err(fail(
                    "large gather_bytes",
                    format!("payload of rank {r} differs"),
                ));
            }
        }
    }
    comm.barrier()
}

/// A value whose sums in f32 depend on the order of addition.
fn awkward_value(rank: usize, i: usize) -> f32 {
    let sign = if (rank + i).is_multiple_of(2) {
        1.0
    } else {
        -1.0
    };
    sign * (1.0 + rank as f32 * 0.1 + i as f32 * 1e-3) * 10f32.powi(((rank * 7 + i) % 9) as i32 - 4)
}

/// Checks that `values` has the same bits on every rank, via a gather of the
/// raw bytes to rank 0 and a broadcast of the verdict.
fn check_identical_everywhere(comm: &dyn Communicator, values: &[f32], check: &str) -> Result<()> {
    let bytes = crate::comm::f32s_to_bytes(values);
    let verdict = match comm.gather_bytes(&bytes, 0)? {
        Some(all) => all
            .iter()
            .position(|b| *b != all[0])
            .map(|r| r as f32)
            .unwrap_or(-1.0),
        None => 0.0,
    };
    let mut verdict = [verdict];
    comm.broadcast(&mut verdict, 0)?;
    if verdict[0] >= 0.0 {
        return Err(comm_error(format!(
            "communicator check `{check}` failed: rank {} differs from rank 0",
            verdict[0]
        )));
    }
    Ok(())
}
