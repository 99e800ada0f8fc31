//! Replay buffer of whole goal-conditioned episodes: FIFO by episode, uniform over transitions, serialisable.
//!
//! An env without goals (goal width 0, see [`shoal_rl_core::WithoutGoals`])
//! is stored the same way, each transition with the reward the env gave:
//! with no goal there is no reward function to recompute it from.
//!
//! Hindsight relabelling needs the rest of an episode to pick a substitute
//! goal, so the buffer stores [`Episode`]s, not loose transitions. Episodes
//! may have different lengths (a goal env ends the episode on success), and
//! each one knows its real length: relabelling never reads past it.
//!
//! Capacity is counted in transitions; when a new episode overflows it, the
//! oldest episodes are evicted whole. Transitions are sampled uniformly, so a
//! short episode is not over-represented.
//!
//! [`ReplayBuffer::to_bytes`] / [`ReplayBuffer::load_bytes`] carry the buffer
//! through a checkpoint, behind a header (magic, format version, dimensions)
//! so that a buffer of another task or a corrupt file is a clear
//! [`Error`], never a panic or a silently wrong buffer.

use std::collections::VecDeque;
use std::sync::OnceLock;

use rand::{Rng, RngExt};
use serde::{Deserialize, Serialize};
use shoal_rl_core::{Error, Result};

use crate::versioned::Format;

/// Widths of the vectors a goal-conditioned episode is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EpisodeDims {
    /// Length of the observation part `o` (without the goals).
    pub obs: usize,
    /// Length of the achieved and the desired goal.
    pub goal: usize,
    /// Length of an action.
    pub act: usize,
}

/// One episode of a goal task, `T` transitions long.
///
/// Built step by step with [`Episode::start`] and [`Episode::push`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Episode {
    dims: EpisodeDims,
    /// `o_0 … o_T`, row-major `[T + 1, obs]`.
    obs: Vec<f32>,
    /// `ag_0 … ag_T`, row-major `[T + 1, goal]`: what the agent had achieved
    /// before the first step and after each step.
    achieved: Vec<f32>,
    /// `g_0 … g_{T−1}`, row-major `[T, goal]`: the goal asked for at each step.
    desired: Vec<f32>,
    /// `a_0 … a_{T−1}` in the actor's `[-1, 1]` scale, row-major `[T, act]`.
    actions: Vec<f32>,
    /// The last transition ended the task (`terminated`), rather than being
    /// cut by a time limit.
    terminated: bool,
    /// `r_0 … r_{T−1}`, the rewards the env gave, for episodes built with
    /// [`Episode::push_rewarded`]; empty for goal tasks, whose rewards are
    /// recomputed from the goals whenever a transition is replayed.
    rewards: Vec<f32>,
    /// [`Episode::motion`] for the last threshold asked, computed once:
    /// hindsight sampling asks for every transition it draws.
    #[serde(skip)]
    motion: MotionCache,
}

/// How the achieved goal (the object) moved during an episode, judged with
/// a distance threshold `eps` (goal units, e.g. metres).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Motion {
    /// Whether the achieved goal ever went farther than `eps` from where it
    /// started (`|ag_t − ag_0| > eps` for some `t`).
    pub moved: bool,
    /// The settle step `s`: the first step from which the achieved goal stays
    /// within `eps` of its final value `ag_T`. From `s` on the object rests
    /// where the episode leaves it; `s = T` when it was still moving at the
    /// end (or only got there on the last step).
    pub settle: usize,
}

/// A computed [`Motion`] with the threshold (as bits) it was computed for.
/// Compares equal to any other: it is derived from the episode, not part of it.
#[derive(Clone, Debug, Default)]
struct MotionCache(OnceLock<(u32, Motion)>);

impl PartialEq for MotionCache {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// Euclidean distance between two goals.
pub(crate) fn goal_distance(a: &[f32], b: &[f32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y) * (x - y))
        .sum::<f32>()
        .sqrt()
}

impl Episode {
    /// An episode that starts at observation part `obs` with achieved goal `achieved`.
    pub fn start(dims: EpisodeDims, obs: &[f32], achieved: &[f32]) -> Self {
        Episode {
            dims,
            obs: obs.to_vec(),
            achieved: achieved.to_vec(),
            desired: Vec::new(),
            actions: Vec::new(),
            terminated: false,
            rewards: Vec::new(),
            motion: MotionCache::default(),
        }
    }

    /// Appends the transition that took `action` toward `desired` and led to
    /// `next_obs` / `next_achieved`.
    pub fn push(
        &mut self,
        desired: &[f32],
        action: &[f32],
        next_obs: &[f32],
        next_achieved: &[f32],
    ) {
        self.desired.extend_from_slice(desired);
        self.actions.extend_from_slice(action);
        self.obs.extend_from_slice(next_obs);
        self.achieved.extend_from_slice(next_achieved);
        self.motion = MotionCache::default();
    }

    /// Appends a transition with the `reward` the env gave for it, which
    /// replay returns as is while the transition keeps its own goal: the
    /// way to store an env without goals (`goal = 0`, empty goal slices),
    /// whose reward no goal can recompute. An episode keeps rewards for
    /// all its transitions or for none ([`Episode::check`]).
    ///
    /// ```
    /// use shoal_rl_algo::{Episode, EpisodeDims};
    /// let dims = EpisodeDims { obs: 1, goal: 0, act: 1 };
    /// let mut episode = Episode::start(dims, &[0.0], &[]);
    /// episode.push_rewarded(&[], &[0.5], 2.5, &[0.1], &[]);
    /// assert_eq!(episode.reward(0), Some(2.5));
    /// assert!(episode.check(dims).is_ok());
    /// ```
    pub fn push_rewarded(
        &mut self,
        desired: &[f32],
        action: &[f32],
        reward: f32,
        next_obs: &[f32],
        next_achieved: &[f32],
    ) {
        self.push(desired, action, next_obs, next_achieved);
        self.rewards.push(reward);
    }

    /// The reward the env gave for transition `t`, if the episode keeps
    /// rewards ([`Episode::push_rewarded`]).
    pub fn reward(&self, t: usize) -> Option<f32> {
        self.rewards.get(t).copied()
    }

    /// Marks whether the last transition ended the task.
    pub fn set_terminated(&mut self, terminated: bool) {
        self.terminated = terminated;
    }

    /// Widths of the stored vectors.
    pub fn dims(&self) -> EpisodeDims {
        self.dims
    }

    /// Number of transitions `T`.
    pub fn len(&self) -> usize {
        self.actions.len() / self.dims.act.max(1)
    }

    /// Whether no transition has been pushed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the last transition ended the task.
    pub fn terminated(&self) -> bool {
        self.terminated
    }

    /// Observation part `o_t`, `t ∈ 0..=T`.
    pub fn obs(&self, t: usize) -> &[f32] {
        &self.obs[t * self.dims.obs..(t + 1) * self.dims.obs]
    }

    /// Achieved goal `ag_t`, `t ∈ 0..=T`.
    pub fn achieved(&self, t: usize) -> &[f32] {
        &self.achieved[t * self.dims.goal..(t + 1) * self.dims.goal]
    }

    /// Desired goal `g_t`, `t ∈ 0..T`.
    pub fn desired(&self, t: usize) -> &[f32] {
        &self.desired[t * self.dims.goal..(t + 1) * self.dims.goal]
    }

    /// Action `a_t`, `t ∈ 0..T`.
    pub fn action(&self, t: usize) -> &[f32] {
        &self.actions[t * self.dims.act..(t + 1) * self.dims.act]
    }

    /// How the achieved goal moved, with threshold `eps`. Computed once per
    /// episode and threshold (two passes over `ag_0 … ag_T`), then cached.
    ///
    /// ```
    /// use shoal_rl_algo::{Episode, EpisodeDims, Motion};
    /// let dims = EpisodeDims { obs: 1, goal: 1, act: 1 };
    /// let mut episode = Episode::start(dims, &[0.0], &[0.0]);
    /// for x in [0.1, 0.2, 0.2, 0.2] {
    ///     episode.push(&[1.0], &[0.0], &[0.0], &[x]);
    /// }
    /// // Moved, and at rest at 0.2 from step 2 of 4.
    /// assert_eq!(episode.motion(1e-3), Motion { moved: true, settle: 2 });
    /// ```
    pub fn motion(&self, eps: f32) -> Motion {
        match self.motion.0.get() {
            Some((bits, motion)) if *bits == eps.to_bits() => *motion,
            cached => {
                let motion = self.compute_motion(eps);
                if cached.is_none() {
                    let _ = self.motion.0.set((eps.to_bits(), motion));
                }
                motion
            }
        }
    }

    fn compute_motion(&self, eps: f32) -> Motion {
        let last = self.len();
        let (start, end) = (self.achieved(0), self.achieved(last));
        let moved = (1..=last).any(|t| goal_distance(self.achieved(t), start) > eps);
        let settle = (0..=last)
            .rev()
            .take_while(|&t| goal_distance(self.achieved(t), end) <= eps)
            .last()
            .unwrap_or(last);
        Motion { moved, settle }
    }

    /// Checks that the vectors agree with `dims` and with each other and hold
    /// only finite values.
    pub fn check(&self, dims: EpisodeDims) -> Result<()> {
        if self.dims != dims {
            return Err(Error::Shape(format!(
                "episode has dimensions {:?}, the buffer {:?}",
                self.dims, dims
            )));
        }
        if dims.act == 0 {
            return Err(Error::Shape("episodes need non-empty actions".into()));
        }
        let t = self.len();
        if dims.goal == 0 && self.rewards.len() != t {
            return Err(Error::Shape(
                "an episode without goals must keep the env's reward of every transition".into(),
            ));
        }
        if !(self.rewards.is_empty() || self.rewards.len() == t) {
            return Err(Error::Shape(format!(
                "episode keeps {} rewards for {t} transitions",
                self.rewards.len()
            )));
        }
        let consistent = t > 0
            && self.actions.len() == t * dims.act
            && self.desired.len() == t * dims.goal
            && self.obs.len() == (t + 1) * dims.obs
            && self.achieved.len() == (t + 1) * dims.goal;
        if !consistent {
            return Err(Error::Shape(format!(
                "episode vectors disagree: {} actions, {} desired, {} obs, {} achieved values",
                self.actions.len(),
                self.desired.len(),
                self.obs.len(),
                self.achieved.len()
            )));
        }
        let all = [
            &self.obs,
            &self.achieved,
            &self.desired,
            &self.actions,
            &self.rewards,
        ];
        if all.iter().any(|v| v.iter().any(|x| !x.is_finite())) {
            return Err(Error::Shape("episode holds a non-finite value".into()));
        }
        Ok(())
    }
}

/// The byte format of a [`ReplayBuffer`]; the body after the header is the
/// episode and transition counts, then the episodes follow one by one.
/// Version 2 added each episode's rewards; version 1 buffers (goal tasks
/// only, which keep none) still load.
const FORMAT: Format = Format {
    name: "replay buffer",
    magic: *b"shoalRB\0",
    version: 2,
};

/// An [`Episode`] as format version 1 wrote it: without rewards.
#[derive(Deserialize)]
struct EpisodeV1 {
    dims: EpisodeDims,
    obs: Vec<f32>,
    achieved: Vec<f32>,
    desired: Vec<f32>,
    actions: Vec<f32>,
    terminated: bool,
}

impl From<EpisodeV1> for Episode {
    fn from(old: EpisodeV1) -> Self {
        Episode {
            dims: old.dims,
            obs: old.obs,
            achieved: old.achieved,
            desired: old.desired,
            actions: old.actions,
            terminated: old.terminated,
            rewards: Vec::new(),
            motion: MotionCache::default(),
        }
    }
}

/// Decodes one episode of format `version` from the front of `bytes`.
fn take_episode(version: u32, bytes: &[u8]) -> postcard::Result<(Episode, &[u8])> {
    if version == 1 {
        postcard::take_from_bytes::<EpisodeV1>(bytes).map(|(old, rest)| (old.into(), rest))
    } else {
        postcard::take_from_bytes(bytes)
    }
}

/// A FIFO store of whole episodes with a capacity in transitions.
///
/// ```
/// use shoal_rl_algo::{Episode, EpisodeDims, ReplayBuffer};
/// let dims = EpisodeDims { obs: 1, goal: 1, act: 1 };
/// let mut buffer = ReplayBuffer::new(dims, 3).unwrap();
/// for _ in 0..2 {
///     let mut episode = Episode::start(dims, &[0.0], &[0.0]);
///     episode.push(&[1.0], &[0.5], &[0.1], &[0.1]);
///     episode.push(&[1.0], &[0.5], &[0.2], &[0.2]);
///     buffer.push(episode).unwrap();
/// }
/// // 4 transitions do not fit in 3: the first episode was evicted whole.
/// assert_eq!((buffer.episodes(), buffer.transitions()), (1, 2));
/// ```
#[derive(Clone, Debug)]
pub struct ReplayBuffer {
    dims: EpisodeDims,
    capacity: usize,
    episodes: VecDeque<Episode>,
    /// Global index of each stored episode's first transition, increasing;
    /// sampling maps a transition index to its episode by binary search.
    starts: VecDeque<u64>,
    next_start: u64,
    transitions: usize,
}

impl ReplayBuffer {
    /// An empty buffer for episodes of `dims`, holding at most `capacity` transitions.
    pub fn new(dims: EpisodeDims, capacity: usize) -> Result<Self> {
        if capacity == 0 {
            return Err(Error::Config(
                "replay buffer capacity must be at least 1".into(),
            ));
        }
        Ok(ReplayBuffer {
            dims,
            capacity,
            episodes: VecDeque::new(),
            starts: VecDeque::new(),
            next_start: 0,
            transitions: 0,
        })
    }

    /// Widths of the stored episodes.
    pub fn dims(&self) -> EpisodeDims {
        self.dims
    }

    /// Maximum number of transitions.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Stored transitions.
    pub fn transitions(&self) -> usize {
        self.transitions
    }

    /// Stored episodes.
    pub fn episodes(&self) -> usize {
        self.episodes.len()
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.transitions == 0
    }

    /// Episode `index`, oldest first.
    pub fn episode(&self, index: usize) -> &Episode {
        &self.episodes[index]
    }

    /// Stores `episode`, evicting the oldest episodes while over capacity.
    pub fn push(&mut self, episode: Episode) -> Result<()> {
        episode.check(self.dims)?;
        if episode.len() > self.capacity {
            return Err(Error::Config(format!(
                "an episode of {} transitions does not fit a replay buffer of {}",
                episode.len(),
                self.capacity
            )));
        }
        self.push_unchecked(episode);
        Ok(())
    }

    fn push_unchecked(&mut self, episode: Episode) {
        let len = episode.len();
        self.starts.push_back(self.next_start);
        self.next_start += len as u64;
        self.transitions += len;
        self.episodes.push_back(episode);
        while self.transitions > self.capacity {
            let evicted = self
                .episodes
                .pop_front()
                .expect("over capacity means non-empty");
            self.starts.pop_front();
            self.transitions -= evicted.len();
        }
    }

    /// A transition `(episode index, t)` drawn uniformly over all stored
    /// transitions, or `None` when the buffer is empty.
    pub fn sample_transition<R: Rng + ?Sized>(&self, rng: &mut R) -> Option<(usize, usize)> {
        if self.transitions == 0 {
            return None;
        }
        Some(self.transition_at(rng.random_range(0..self.transitions as u64) as usize))
    }

    /// Transition `k` of the stored ones, oldest first, as `(episode index,
    /// t)`.
    ///
    /// # Panics
    /// If `k` is not below [`ReplayBuffer::transitions`].
    pub fn transition_at(&self, k: usize) -> (usize, usize) {
        assert!(
            k < self.transitions,
            "transition {k} of {} stored",
            self.transitions
        );
        let global = self.starts[0] + k as u64;
        let index = self.starts.partition_point(|start| *start <= global) - 1;
        (index, (global - self.starts[index]) as usize)
    }

    /// Removes everything.
    pub fn clear(&mut self) {
        self.episodes.clear();
        self.starts.clear();
        self.transitions = 0;
    }

    /// The buffer as bytes: a header (magic, version, dimensions), the
    /// counts, then the episodes, oldest first.
    pub fn to_bytes(&self) -> Vec<u8> {
        let counts = (self.episodes.len() as u64, self.transitions as u64);
        let mut bytes = FORMAT.write(&self.dims, &counts);
        for episode in &self.episodes {
            bytes.extend(postcard::to_stdvec(episode).expect("serialising vectors cannot fail"));
        }
        bytes
    }

    /// Replaces the contents with a buffer written by [`ReplayBuffer::to_bytes`].
    /// The stored dimensions must match this buffer's; the capacity stays this
    /// buffer's (the oldest episodes are evicted if the saved ones do not
    /// fit). On error `self` is unchanged.
    pub fn load_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        let (version, (episodes, transitions), mut rest): (_, (u64, u64), _) =
            FORMAT.read_since(1, bytes, &self.dims)?;
        let mut loaded = ReplayBuffer::new(self.dims, self.capacity)?;
        let mut seen = 0u64;
        for i in 0..episodes {
            let (episode, tail) = take_episode(version, rest)
                .map_err(|e| FORMAT.unreadable(&format!("episode {i} of {episodes}: {e}")))?;
            episode.check(self.dims)?;
            seen += episode.len() as u64;
            loaded.push_unchecked(episode);
            rest = tail;
        }
        if !rest.is_empty() || seen != transitions {
            return Err(
                FORMAT.unreadable("length does not match its header (truncated or corrupt)")
            );
        }
        *self = loaded;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_rl_core::rng_from_seed;

    const DIMS: EpisodeDims = EpisodeDims {
        obs: 2,
        goal: 1,
        act: 1,
    };

    /// An episode of `len` steps whose values encode `(id, t)`.
    fn episode(id: f32, len: usize) -> Episode {
        let mut e = Episode::start(DIMS, &[id, 0.0], &[0.0]);
        for t in 1..=len {
            e.push(&[9.0], &[id], &[id, t as f32], &[t as f32]);
        }
        e
    }

    #[test]
    fn eviction_removes_whole_oldest_episodes() {
        let mut buffer = ReplayBuffer::new(DIMS, 10).unwrap();
        buffer.push(episode(0.0, 4)).unwrap();
        buffer.push(episode(1.0, 4)).unwrap();
        buffer.push(episode(2.0, 3)).unwrap();
        assert_eq!((buffer.episodes(), buffer.transitions()), (2, 7));
        assert_eq!(buffer.episode(0).obs(0)[0], 1.0);
    }

    #[test]
    fn sampling_is_uniform_over_transitions_and_stays_inside_episodes() {
        let mut buffer = ReplayBuffer::new(DIMS, 100).unwrap();
        buffer.push(episode(0.0, 1)).unwrap();
        buffer.push(episode(1.0, 9)).unwrap();
        let mut rng = rng_from_seed(3);
        let mut from_short = 0;
        for _ in 0..10_000 {
            let (e, t) = buffer.sample_transition(&mut rng).unwrap();
            assert!(t < buffer.episode(e).len());
            from_short += usize::from(e == 0);
        }
        // 1 of 10 transitions: expect 1000 ± 30 (binomial std), allow 5 std.
        assert!((850..1150).contains(&from_short), "{from_short}");
    }

    #[test]
    fn empty_buffer_samples_nothing_and_bad_episodes_are_rejected() {
        let mut buffer = ReplayBuffer::new(DIMS, 5).unwrap();
        assert!(buffer.sample_transition(&mut rng_from_seed(0)).is_none());
        let message = |result: Result<()>| result.unwrap_err().to_string();
        let empty = message(buffer.push(Episode::start(DIMS, &[0.0, 0.0], &[0.0])));
        assert_eq!(
            empty,
            "shape mismatch: episode vectors disagree: 0 actions, 0 desired, 2 obs, 1 achieved values"
        );
        assert_eq!(
            message(buffer.push(episode(0.0, 6))),
            "invalid configuration: an episode of 6 transitions does not fit a replay buffer of 5"
        );
        let mut nan = episode(0.0, 2);
        nan.push(&[f32::NAN], &[0.0], &[0.0, 0.0], &[0.0]);
        assert_eq!(
            message(buffer.push(nan)),
            "shape mismatch: episode holds a non-finite value"
        );
        let other = EpisodeDims { obs: 3, ..DIMS };
        let wrong = message(buffer.push(Episode::start(other, &[0.0; 3], &[0.0])));
        assert!(
            wrong.starts_with("shape mismatch: episode has dimensions "),
            "{wrong}"
        );
        assert!(matches!(
            ReplayBuffer::new(DIMS, 0),
            Err(Error::Config(m)) if m == "replay buffer capacity must be at least 1"
        ));
        assert!(buffer.is_empty(), "nothing rejected was stored");
    }

    #[test]
    fn bytes_round_trip_and_sampling_continues_identically() {
        let mut buffer = ReplayBuffer::new(DIMS, 12).unwrap();
        for id in 0..5 {
            let mut e = episode(id as f32, 3 + id % 2);
            e.set_terminated(id % 2 == 0);
            buffer.push(e).unwrap();
        }
        let mut restored = ReplayBuffer::new(DIMS, 12).unwrap();
        restored.load_bytes(&buffer.to_bytes()).unwrap();
        assert_eq!(restored.episodes, buffer.episodes);
        let (mut a, mut b) = (rng_from_seed(1), rng_from_seed(1));
        for _ in 0..100 {
            assert_eq!(
                buffer.sample_transition(&mut a),
                restored.sample_transition(&mut b)
            );
        }
    }

    #[test]
    fn buffers_of_format_version_1_still_load() {
        // Version 1 as it was written: the header, the counts, then each
        // episode's fields in order, without rewards.
        #[derive(Serialize)]
        struct Written<'a> {
            dims: EpisodeDims,
            obs: &'a [f32],
            achieved: &'a [f32],
            desired: &'a [f32],
            actions: &'a [f32],
            terminated: bool,
        }
        let episodes = [episode(0.0, 3), episode(1.0, 2)];
        let version_1 = Format {
            version: 1,
            ..FORMAT
        };
        let mut bytes = version_1.write(&DIMS, &(2u64, 5u64));
        for e in &episodes {
            bytes.extend(
                postcard::to_stdvec(&Written {
                    dims: DIMS,
                    obs: &e.obs,
                    achieved: &e.achieved,
                    desired: &e.desired,
                    actions: &e.actions,
                    terminated: e.terminated,
                })
                .unwrap(),
            );
        }
        let mut buffer = ReplayBuffer::new(DIMS, 20).unwrap();
        buffer.load_bytes(&bytes).unwrap();
        assert_eq!(buffer.episodes, episodes);
        assert_eq!(buffer.episode(0).reward(0), None);
    }

    #[test]
    fn rewarded_episodes_round_trip_and_goal_free_ones_need_their_rewards() {
        let dims = EpisodeDims {
            obs: 2,
            goal: 0,
            act: 1,
        };
        let mut e = Episode::start(dims, &[0.0, 0.0], &[]);
        for t in 0..4 {
            e.push_rewarded(
                &[],
                &[0.1 * t as f32],
                t as f32 - 1.5,
                &[t as f32, 1.0],
                &[],
            );
        }
        let mut buffer = ReplayBuffer::new(dims, 10).unwrap();
        buffer.push(e.clone()).unwrap();
        let mut restored = ReplayBuffer::new(dims, 10).unwrap();
        restored.load_bytes(&buffer.to_bytes()).unwrap();
        assert_eq!(restored.episode(0), &e);
        assert_eq!(restored.episode(0).reward(3), Some(1.5));

        let mut unrewarded = Episode::start(dims, &[0.0, 0.0], &[]);
        unrewarded.push(&[], &[0.0], &[1.0, 1.0], &[]);
        let message = buffer.push(unrewarded).unwrap_err().to_string();
        assert!(message.contains("reward of every transition"), "{message}");
        let mut nan = Episode::start(dims, &[0.0, 0.0], &[]);
        nan.push_rewarded(&[], &[0.0], f32::NAN, &[1.0, 1.0], &[]);
        assert!(buffer.push(nan).is_err());
    }

    #[test]
    fn corrupt_truncated_or_mismatched_bytes_are_errors_and_leave_the_buffer_alone() {
        let mut buffer = ReplayBuffer::new(DIMS, 20).unwrap();
        buffer.push(episode(0.0, 3)).unwrap();
        buffer.push(episode(1.0, 3)).unwrap();
        let bytes = buffer.to_bytes();

        let mut target = ReplayBuffer::new(DIMS, 20).unwrap();
        target.push(episode(7.0, 2)).unwrap();
        assert!(
            target.load_bytes(&bytes[..bytes.len() - 5]).is_err(),
            "truncated"
        );
        let mut extended = bytes.clone();
        extended.push(0);
        assert!(target.load_bytes(&extended).is_err(), "trailing bytes");
        assert!(
            target.load_bytes(b"not a buffer at all").is_err(),
            "garbage"
        );
        let mut wrong_version = bytes.clone();
        wrong_version[FORMAT.magic.len()] = 9;
        let message = target.load_bytes(&wrong_version).unwrap_err().to_string();
        assert!(message.contains("version 9"), "{message}");
        let mut other = ReplayBuffer::new(EpisodeDims { obs: 3, ..DIMS }, 20).unwrap();
        assert!(
            other
                .load_bytes(&bytes)
                .unwrap_err()
                .to_string()
                .contains("needs")
        );
        assert_eq!((target.episodes(), target.episode(0).obs(0)[0]), (1, 7.0));
    }

    #[test]
    fn loading_into_a_smaller_buffer_keeps_the_newest_episodes() {
        let mut buffer = ReplayBuffer::new(DIMS, 20).unwrap();
        for id in 0..4 {
            buffer.push(episode(id as f32, 3)).unwrap();
        }
        let mut small = ReplayBuffer::new(DIMS, 6).unwrap();
        small.load_bytes(&buffer.to_bytes()).unwrap();
        assert_eq!(small.episodes(), 2);
        assert_eq!(small.episode(0).obs(0)[0], 2.0);
    }

    use proptest::prelude::*;
    use rand::RngExt;

    use crate::testutil::check_damaged_loads;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Any buffer round trips through its bytes; every truncation is an
        /// error and any single bit flip an error or a valid buffer, and an
        /// error leaves the buffer it was loaded into unchanged.
        #[test]
        fn any_buffer_round_trips_and_damaged_bytes_never_load_garbage(
            lens in prop::collection::vec(1usize..6, 1..5),
            terminated in prop::collection::vec(any::<bool>(), 5),
            seed in any::<u64>(),
            flips in prop::collection::vec(any::<prop::sample::Index>(), 256),
        ) {
            let mut rng = rng_from_seed(seed);
            let mut value = || rng.random_range(-2.0f32..2.0);
            let mut buffer = ReplayBuffer::new(DIMS, 40).unwrap();
            for (e, len) in lens.iter().enumerate() {
                let mut episode = Episode::start(DIMS, &[value(), value()], &[value()]);
                for _ in 0..*len {
                    episode.push(&[value()], &[value()], &[value(), value()], &[value()]);
                }
                episode.set_terminated(terminated[e]);
                buffer.push(episode).unwrap();
            }
            let bytes = buffer.to_bytes();
            let mut restored = ReplayBuffer::new(DIMS, 40).unwrap();
            restored.load_bytes(&bytes).unwrap();
            prop_assert_eq!(&restored.episodes, &buffer.episodes);
            prop_assert_eq!(restored.transitions(), lens.iter().sum::<usize>());
            prop_assert_eq!(restored.to_bytes(), bytes.clone());

            let mut target = ReplayBuffer::new(DIMS, 40).unwrap();
            target.push(episode(7.0, 2)).unwrap();
            let valid = |b: &ReplayBuffer| {
                let sum: usize = b.episodes.iter().map(Episode::len).sum();
                if sum != b.transitions() || b.transitions() > b.capacity() {
                    return Err(format!("{sum} transitions counted as {}", b.transitions()));
                }
                for e in &b.episodes {
                    e.check(DIMS).map_err(|e| e.to_string())?;
                }
                let mut again = ReplayBuffer::new(DIMS, 40).unwrap();
                again.load_bytes(&b.to_bytes()).map_err(|e| e.to_string())?;
                if again.episodes != b.episodes {
                    return Err("does not round trip".into());
                }
                Ok(())
            };
            check_damaged_loads(
                &bytes,
                &target,
                flips.iter().map(|i| i.index(bytes.len() * 8)),
                ReplayBuffer::to_bytes,
                ReplayBuffer::load_bytes,
                valid,
            );
        }
    }
}
