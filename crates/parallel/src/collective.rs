//! One round of a collective as data: what each rank contributes, and how the
//! contributions combine. The threads and processes backends both funnel every
//! collective through [`combine`], so they agree bit for bit and report
//! mismatched calls the same way.

use crate::comm::add_into;

/// What one rank brings to a collective call.
#[derive(Debug)]
pub(crate) enum Contribution {
    /// `barrier()`.
    Barrier,
    /// `broadcast(values, root)`: every rank states its slice length; only the
    /// root's `values` are used (others send an empty vector).
    Broadcast {
        root: usize,
        len: usize,
        values: Vec<f32>,
    },
    /// `all_reduce_sum(values)`.
    AllReduce { values: Vec<f32> },
    /// `gather_bytes(payload, root)`.
    Gather { root: usize, payload: Vec<u8> },
    /// `broadcast_bytes(bytes, root)`: only the root's bytes are used.
    BroadcastBytes { root: usize, bytes: Vec<u8> },
}

impl Contribution {
    /// The call as a user wrote it, for error messages.
    pub(crate) fn describe(&self) -> String {
        match self {
            Contribution::Barrier => "barrier()".into(),
            Contribution::Broadcast { root, len, .. } => {
                format!("broadcast({len} values, root {root})")
            }
            Contribution::AllReduce { values } => {
                format!("all_reduce_sum({} values)", values.len())
            }
            Contribution::Gather { root, .. } => format!("gather_bytes(root {root})"),
            Contribution::BroadcastBytes { root, .. } => format!("broadcast_bytes(root {root})"),
        }
    }

    /// Whether two contributions are the same call (kind, root and length).
    fn same_call(&self, other: &Contribution) -> bool {
        use Contribution::*;
        match (self, other) {
            (Barrier, Barrier) => true,
            (
                Broadcast {
                    root: a, len: la, ..
                },
                Broadcast {
                    root: b, len: lb, ..
                },
            ) => a == b && la == lb,
            (AllReduce { values: a }, AllReduce { values: b }) => a.len() == b.len(),
            (Gather { root: a, .. }, Gather { root: b, .. }) => a == b,
            (BroadcastBytes { root: a, .. }, BroadcastBytes { root: b, .. }) => a == b,
            _ => false,
        }
    }
}

/// The result of a completed round, shared by every rank.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// A barrier completed.
    Done,
    /// The broadcast values or the all-reduce sum.
    Values(Vec<f32>),
    /// Every rank's gather payload, indexed by rank (read by the root only).
    Payloads { root: usize, payloads: Vec<Vec<u8>> },
    /// The broadcast bytes.
    Bytes(Vec<u8>),
}

/// Combines one contribution per rank (indexed by rank) into the round's
/// outcome, or explains why the ranks' calls do not match.
pub(crate) fn combine(contributions: Vec<Contribution>) -> Result<Outcome, String> {
    let first = contributions
        .first()
        .ok_or("a collective needs at least one rank")?;
    if let Some((rank, odd)) = contributions
        .iter()
        .enumerate()
        .skip(1)
        .find(|(_, c)| !first.same_call(c))
    {
        return Err(format!(
            "ranks disagree on the collective: rank 0 called {}, rank {rank} called {}",
            first.describe(),
            odd.describe()
        ));
    }
    let root_of = |c: &Contribution| match c {
        Contribution::Broadcast { root, .. }
        | Contribution::Gather { root, .. }
        | Contribution::BroadcastBytes { root, .. } => Some(*root),
        _ => None,
    };
    if let Some(root) = root_of(first)
        && root >= contributions.len()
    {
        return Err(format!(
            "{}: root {root} is not a rank of a world of size {}",
            first.describe(),
            contributions.len()
        ));
    }
    let mut contributions = contributions;
    Ok(match &contributions[0] {
        Contribution::Barrier => Outcome::Done,
        Contribution::Broadcast { root, len, .. } => {
            let (root, len) = (*root, *len);
            let values = match contributions.swap_remove(root) {
                Contribution::Broadcast { values, .. } => values,
                _ => unreachable!("all contributions are broadcasts"),
            };
            if values.len() != len {
                return Err(format!(
                    "broadcast: root {root} sent {} values, expected {len}",
                    values.len()
                ));
            }
            Outcome::Values(values)
        }
        Contribution::AllReduce { .. } => {
            // Sum strictly in rank order, once, so every rank gets the same bits.
            let mut parts = contributions.into_iter().map(|c| match c {
                Contribution::AllReduce { values } => values,
                _ => unreachable!("all contributions are all-reduces"),
            });
            let mut sum = parts.next().expect("at least one rank");
            for part in parts {
                add_into(&mut sum, &part);
            }
            Outcome::Values(sum)
        }
        Contribution::Gather { root, .. } => {
            let root = *root;
            let payloads = contributions
                .into_iter()
                .map(|c| match c {
                    Contribution::Gather { payload, .. } => payload,
                    _ => unreachable!("all contributions are gathers"),
                })
                .collect();
            Outcome::Payloads { root, payloads }
        }
        Contribution::BroadcastBytes { root, .. } => {
            let root = *root;
            match contributions.swap_remove(root) {
                Contribution::BroadcastBytes { bytes, .. } => Outcome::Bytes(bytes),
                _ => unreachable!("all contributions are byte broadcasts"),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_reduce_sums_in_rank_order() {
        // In f32, (1 + 1e8) − 1e8 = 0 (1e8 + 1 rounds to 1e8) while
        // (−1e8 + 1e8) + 1 = 1: only rank order gives 0.
        let values = [1.0f32, 1e8, -1e8];
        let rank_order = values.iter().fold(0.0f32, |sum, v| sum + v);
        let reverse = values.iter().rev().fold(0.0f32, |sum, v| sum + v);
        assert_ne!(
            rank_order.to_bits(),
            reverse.to_bits(),
            "inputs tell orders apart"
        );
        let outcome = combine(
            values
                .iter()
                .map(|v| Contribution::AllReduce { values: vec![*v] })
                .collect(),
        )
        .unwrap();
        match outcome {
            Outcome::Values(v) => assert_eq!(v[0].to_bits(), rank_order.to_bits(), "got {}", v[0]),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn mismatched_calls_are_reported_with_both_sides() {
        let err = combine(vec![
            Contribution::Barrier,
            Contribution::Gather {
                root: 0,
                payload: vec![],
            },
        ])
        .unwrap_err();
        assert!(err.contains("rank 0 called barrier()"), "{err}");
        assert!(err.contains("rank 1 called gather_bytes(root 0)"), "{err}");
    }

    #[test]
    fn mismatched_lengths_are_reported() {
        let err = combine(vec![
            Contribution::AllReduce {
                values: vec![1.0; 3],
            },
            Contribution::AllReduce {
                values: vec![1.0; 4],
            },
        ])
        .unwrap_err();
        assert!(
            err.contains("3 values") && err.contains("4 values"),
            "{err}"
        );
    }

    #[test]
    fn root_outside_the_world_is_reported() {
        let err = combine(vec![Contribution::BroadcastBytes {
            root: 2,
            bytes: vec![],
        }])
        .unwrap_err();
        assert!(err.contains("root 2"), "{err}");
    }
}
