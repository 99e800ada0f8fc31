//! HAC's replay memory: single transitions with stored rewards, FIFO with a capacity, sampled uniformly, serialisable.
//!
//! Unlike [`crate::ReplayBuffer`], which keeps whole episodes so that HER can
//! relabel at sampling time, HAC builds its hindsight transitions when an
//! attempt ends ([`crate::attempt_transitions`]) and stores each one as it
//! is: its reward may be the subgoal-testing penalty, which no goal pair can
//! recompute.

use std::collections::VecDeque;

use rand::{Rng, RngExt};
use serde::{Deserialize, Serialize};
use shoal_rl_core::{Error, Result};

use crate::versioned::Format;

/// Widths of one level's transitions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransitionDims {
    /// Observation part `o` (without the goals).
    pub obs: usize,
    /// Goal (and subgoal) length.
    pub goal: usize,
    /// Action length: the env's for level 0, the goal's above.
    pub act: usize,
}

/// One stored transition of a level. HAC's rewards are not recomputable
/// from goals alone (the −H penalty), so they are stored, not relabelled at
/// sampling time as HER does ([`crate::sample_batch`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Transition {
    /// Observation part `o_t`.
    pub obs: Vec<f32>,
    /// Action (or subgoal) in `[-1, 1]`.
    pub action: Vec<f32>,
    /// Reward: 0, −1, or the penalty −H.
    pub reward: f32,
    /// Observation part `o_{t+1}`.
    pub next_obs: Vec<f32>,
    /// Goal the transition is replayed with.
    pub goal: Vec<f32>,
    /// No bootstrap (discount 0): the goal was reached, or a tested subgoal missed.
    pub terminal: bool,
}

/// The byte format of a [`TransitionBuffer`].
const FORMAT: Format = Format {
    name: "transition buffer",
    magic: *b"shoalHT\0",
    version: 1,
};

/// A FIFO store of single transitions with a capacity, sampled uniformly.
#[derive(Clone, Debug)]
pub struct TransitionBuffer {
    dims: TransitionDims,
    capacity: usize,
    items: VecDeque<Transition>,
}

impl TransitionBuffer {
    /// An empty buffer of at most `capacity` transitions of `dims`.
    pub fn new(dims: TransitionDims, capacity: usize) -> Result<Self> {
        if capacity == 0 {
            return Err(Error::Config(
                "transition buffer capacity must be at least 1".into(),
            ));
        }
        Ok(TransitionBuffer {
            dims,
            capacity,
            items: VecDeque::new(),
        })
    }

    /// Most transitions held; the oldest go first.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Stored transitions.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Transition `index`, oldest first.
    pub fn get(&self, index: usize) -> &Transition {
        &self.items[index]
    }

    /// Stores `t`, evicting the oldest transition when full. A transition of
    /// the wrong shape or holding a non-finite value is an error.
    pub fn push(&mut self, t: Transition) -> Result<()> {
        let d = self.dims;
        let ok = t.obs.len() == d.obs
            && t.next_obs.len() == d.obs
            && t.goal.len() == d.goal
            && t.action.len() == d.act;
        if !ok {
            return Err(Error::Shape(format!(
                "transition of {} / {} / {} / {} values does not fit {d:?}",
                t.obs.len(),
                t.next_obs.len(),
                t.goal.len(),
                t.action.len()
            )));
        }
        let values = [&t.obs, &t.next_obs, &t.goal, &t.action];
        if !t.reward.is_finite() || values.iter().any(|v| v.iter().any(|x| !x.is_finite())) {
            // A damaged saved memory can hold NaN; training on it would
            // poison every network it reaches.
            return Err(Error::Shape("transition holds a non-finite value".into()));
        }
        if self.items.len() == self.capacity {
            self.items.pop_front();
        }
        self.items.push_back(t);
        Ok(())
    }

    /// A uniformly drawn transition, or `None` when empty.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Option<&Transition> {
        if self.items.is_empty() {
            return None;
        }
        Some(&self.items[rng.random_range(0..self.items.len())])
    }

    /// The buffer as bytes behind a header (magic, version, dimensions).
    pub fn to_bytes(&self) -> Vec<u8> {
        FORMAT.write(&self.dims, &self.items)
    }

    /// Replaces the contents with [`TransitionBuffer::to_bytes`] output of the
    /// same dimensions (keeping the newest ones if over capacity); on error
    /// `self` is unchanged.
    pub fn load_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        let (transitions, rest): (Vec<Transition>, _) = FORMAT.read(bytes, &self.dims)?;
        if !rest.is_empty() {
            return Err(FORMAT.unreadable("trailing bytes after the transitions"));
        }
        let mut fresh = TransitionBuffer::new(self.dims, self.capacity)?;
        for t in transitions {
            fresh.push(t)?;
        }
        *self = fresh;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use rand::RngExt;
    use shoal_rl_core::rng_from_seed;

    use super::*;
    use crate::testutil::check_damaged_loads;

    const DIMS: TransitionDims = TransitionDims {
        obs: 2,
        goal: 1,
        act: 2,
    };

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Any buffer round trips through its bytes; every truncation is an
        /// error and any single bit flip an error or a valid buffer (right
        /// shapes, finite values, within capacity), and an error leaves the
        /// buffer it was loaded into unchanged.
        #[test]
        fn any_buffer_round_trips_and_damaged_bytes_never_load_garbage(
            terminal in prop::collection::vec(any::<bool>(), 1..12),
            seed in any::<u64>(),
            flips in prop::collection::vec(any::<prop::sample::Index>(), 256),
        ) {
            let mut rng = rng_from_seed(seed);
            let mut values = |n: usize| (0..n).map(|_| rng.random_range(-2.0f32..2.0)).collect::<Vec<_>>();
            let mut buffer = TransitionBuffer::new(DIMS, 20).unwrap();
            for end in &terminal {
                buffer
                    .push(Transition {
                        obs: values(2),
                        action: values(2),
                        reward: values(1)[0],
                        next_obs: values(2),
                        goal: values(1),
                        terminal: *end,
                    })
                    .unwrap();
            }
            let bytes = buffer.to_bytes();
            let mut restored = TransitionBuffer::new(DIMS, 20).unwrap();
            restored.load_bytes(&bytes).unwrap();
            prop_assert_eq!(&restored.items, &buffer.items);
            prop_assert_eq!(restored.to_bytes(), bytes.clone());

            let mut target = TransitionBuffer::new(DIMS, 20).unwrap();
            target
                .push(Transition {
                    obs: vec![7.0; 2],
                    action: vec![7.0; 2],
                    reward: 7.0,
                    next_obs: vec![7.0; 2],
                    goal: vec![7.0],
                    terminal: true,
                })
                .unwrap();
            let valid = |b: &TransitionBuffer| {
                if b.len() > b.capacity {
                    return Err(format!("{} transitions in a buffer of {}", b.len(), b.capacity));
                }
                for t in &b.items {
                    let shaped = t.obs.len() == 2 && t.next_obs.len() == 2 && t.goal.len() == 1 && t.action.len() == 2;
                    let values = [&t.obs, &t.next_obs, &t.goal, &t.action];
                    let finite = t.reward.is_finite() && values.iter().all(|v| v.iter().all(|x| x.is_finite()));
                    if !(shaped && finite) {
                        return Err(format!("{t:?}"));
                    }
                }
                Ok(())
            };
            check_damaged_loads(
                &bytes,
                &target,
                flips.iter().map(|i| i.index(bytes.len() * 8)),
                TransitionBuffer::to_bytes,
                TransitionBuffer::load_bytes,
                valid,
            );
        }
    }
}
