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
use shoal_core::{Error, Result};

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

    /// Stores `t`, evicting the oldest transition when full.
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
