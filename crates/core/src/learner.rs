//! What agents expose: a frozen [`Policy`] for evaluation, and the [`Learner`]
//! family that parallel strategies drive.
//!
//! The learner traits speak only `f32` slices and byte payloads, so a strategy
//! in `shoal-rl-parallel` (or in a user's own crate) can move agents between
//! threads, processes or MPI ranks without knowing which network library or
//! environment is inside.

use serde::{Deserialize, Serialize};

use crate::{Env, Result, Step, StopFlag};

/// A frozen policy: a map from observation to action, deterministic
/// ([`Policy::act`]) or drawn from the policy's distribution
/// ([`Policy::try_sample`]).
///
/// ```
/// use shoal_rl_core::Policy;
/// struct Zero;
/// impl Policy for Zero {
///     fn act(&self, obs: &[f32]) -> Vec<f32> { vec![0.0; obs.len()] }
/// }
/// assert_eq!(Zero.act(&[1.0, 2.0]), vec![0.0, 0.0]);
/// ```
pub trait Policy {
    /// The action to take in `obs`, with exploration switched off.
    fn act(&self, obs: &[f32]) -> Vec<f32>;

    /// [`Policy::act`], or the error that kept the policy from acting (an
    /// observation of the wrong shape). Default: `act` never fails.
    fn try_act(&self, obs: &[f32]) -> Result<Vec<f32>> {
        Ok(self.act(obs))
    }

    /// An action drawn with `rng` from the policy's distribution in `obs`,
    /// as the learner explores (a Beta or Gaussian draw), within the action
    /// space. Default, for deterministic policies (DDPG's actor, as in
    /// Stable-Baselines3's `predict`): [`Policy::try_act`].
    fn try_sample(&self, obs: &[f32], rng: &mut dyn rand::Rng) -> Result<Vec<f32>> {
        let _ = rng;
        self.try_act(obs)
    }
}

/// What a stretch of training did: one entry per finished episode, plus losses.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LearnReport {
    /// Undiscounted return of each training episode, in order.
    pub episode_returns: Vec<f64>,
    /// Length in steps of each training episode.
    pub episode_lengths: Vec<u64>,
    /// Success flag of each training episode, for goal tasks.
    pub episode_successes: Vec<bool>,
    /// Mean losses and other scalars of the update(s), namespaced
    /// (`losses/policy`, `charts/entropy`).
    pub scalars: Vec<(String, f64)>,
}

impl LearnReport {
    /// Environment steps taken.
    pub fn env_steps(&self) -> u64 {
        self.episode_lengths.iter().sum()
    }

    /// Appends `other`; scalars of the later report win.
    pub fn extend(&mut self, other: LearnReport) {
        self.episode_returns.extend(other.episode_returns);
        self.episode_lengths.extend(other.episode_lengths);
        self.episode_successes.extend(other.episode_successes);
        for (k, v) in other.scalars {
            match self.scalars.iter_mut().find(|(key, _)| *key == k) {
                Some(slot) => slot.1 = v,
                None => self.scalars.push((k, v)),
            }
        }
    }
}

/// Result of evaluating a frozen policy over several episodes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvalReport {
    /// Episodes run.
    pub episodes: usize,
    /// Mean undiscounted return.
    pub return_mean: f64,
    /// Standard deviation of the return.
    pub return_std: f64,
    /// Mean episode length in steps.
    pub length_mean: f64,
    /// Fraction of successful episodes, for goal tasks.
    pub success_rate: Option<f64>,
}

impl EvalReport {
    /// Summarises evaluation episodes: their undiscounted returns and
    /// lengths, and for goal tasks how many succeeded. Every evaluation in
    /// shoal reports through this, so the statistics mean the same everywhere.
    pub fn from_episodes(returns: &[f64], lengths: &[f64], successes: Option<usize>) -> Self {
        let n = returns.len().max(1) as f64;
        let mean = returns.iter().sum::<f64>() / n;
        let variance = returns.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / n;
        EvalReport {
            episodes: returns.len(),
            return_mean: mean,
            return_std: variance.sqrt(),
            length_mean: lengths.iter().sum::<f64>() / n,
            success_rate: successes.map(|s| s as f64 / n),
        }
    }
}

/// Averages a vector over all workers. A learner that trains with gradient
/// parallelism calls it on its flat gradient (and on normaliser statistics)
/// before every optimiser step; on one worker it does nothing.
///
/// ```
/// use shoal_rl_core::{Alone, MeanReducer};
/// let mut grads = vec![1.0, 2.0];
/// Alone.mean(&mut grads).unwrap();
/// assert_eq!(grads, vec![1.0, 2.0]);
/// ```
pub trait MeanReducer {
    /// Replaces every element with its mean across workers.
    fn mean(&mut self, values: &mut [f32]) -> Result<()>;
}

/// The [`MeanReducer`] of a single worker.
#[derive(Clone, Copy, Debug, Default)]
pub struct Alone;

impl MeanReducer for Alone {
    fn mean(&mut self, _values: &mut [f32]) -> Result<()> {
        Ok(())
    }
}

/// An agent that improves itself on its own environment: the unit a parallel
/// strategy schedules.
///
/// `save_state` / `load_state` carry everything that training changes
/// (parameters, optimiser moments, normalisers), so a strategy can copy the
/// best agent into every worker; hyperparameters set at construction (such as
/// a per-worker learning rate) are *not* part of the state and survive a load.
///
/// ```
/// use shoal_rl_core::{EvalReport, LearnReport, Learner, Result};
/// /// A "learner" whose skill grows by one per episode.
/// struct Counter(u32);
/// impl Learner for Counter {
///     fn learn(&mut self, episodes: usize) -> Result<LearnReport> {
///         self.0 += episodes as u32;
///         Ok(LearnReport { episode_returns: vec![self.0 as f64; episodes], episode_lengths: vec![1; episodes], ..Default::default() })
///     }
///     fn evaluate(&mut self, episodes: usize, _seed: u64) -> Result<EvalReport> {
///         Ok(EvalReport { episodes, return_mean: self.0 as f64, return_std: 0.0, length_mean: 1.0, success_rate: None })
///     }
///     fn save_state(&self) -> Vec<u8> { self.0.to_le_bytes().to_vec() }
///     fn load_state(&mut self, bytes: &[u8]) -> Result<()> {
///         self.0 = u32::from_le_bytes(bytes.try_into().map_err(|_| shoal_rl_core::Error::Shape("4 bytes".into()))?);
///         Ok(())
///     }
/// }
/// let mut a = Counter(0);
/// a.learn(3).unwrap();
/// let mut b = Counter(0);
/// b.load_state(&a.save_state()).unwrap();
/// assert_eq!(b.evaluate(1, 0).unwrap().return_mean, 3.0);
/// ```
pub trait Learner {
    /// Trains for `episodes` episodes of its own environment.
    fn learn(&mut self, episodes: usize) -> Result<LearnReport>;
    /// Trains like [`Learner::learn`], but returns early, at the first point
    /// where stopping changes nothing about what follows (an episode, or a
    /// batch of episodes that one update uses), once `stop` is requested.
    /// The report then holds the episodes done so far. Learning the rest
    /// later with `learn` continues exactly as one call would have, though
    /// the losses of the two parts are reported apart.
    ///
    /// Default: no earlier stop point than the whole stretch.
    fn learn_until(&mut self, episodes: usize, stop: &StopFlag) -> Result<LearnReport> {
        let _ = stop;
        self.learn(episodes)
    }
    /// The episodes one update learns from (a PPO rollout, a DDPG cycle),
    /// if the learner has such a unit: learning `n` episodes then equals
    /// learning them in stretches of this many (the last maybe shorter), so
    /// a training loop may split its work there to report each update as it
    /// happens. Default `None`: no split finer than a whole call of
    /// [`Learner::learn`] is promised, and the loop learns up to its next
    /// evaluation or checkpoint in one call.
    fn episodes_per_update(&self) -> Option<usize> {
        None
    }
    /// Runs `episodes` episodes with the policy frozen (deterministic actions,
    /// no updates) on an evaluation environment seeded from `seed`.
    fn evaluate(&mut self, episodes: usize, seed: u64) -> Result<EvalReport>;
    /// Everything training changes, as bytes.
    fn save_state(&self) -> Vec<u8>;
    /// Restores a state written by [`Learner::save_state`] of a learner with the
    /// same architecture; a mismatch is an error and leaves `self` unchanged.
    fn load_state(&mut self, bytes: &[u8]) -> Result<()>;

    /// The experience memory (a replay buffer), if the learner keeps one.
    /// Checkpoints store it as a separate blob beside the state, because it
    /// can be large and strategies that copy agents between workers do not
    /// need it.
    fn save_memory(&self) -> Option<Vec<u8>> {
        None
    }

    /// The current policy, frozen (deterministic, no exploration), for
    /// rendering or evaluating outside the learner; `None` for learners whose
    /// acting cannot be expressed as a stateless [`Policy`] (HAC holds a
    /// subgoal across steps).
    fn policy(&self) -> Option<Box<dyn Policy>> {
        None
    }

    /// Restores memory written by [`Learner::save_memory`]; on error `self`
    /// is unchanged. Learners without memory reject any bytes.
    fn load_memory(&mut self, bytes: &[u8]) -> Result<()> {
        let _ = bytes;
        Err(crate::Error::Shape(
            "this learner keeps no experience memory".into(),
        ))
    }
}

/// A learner whose updates are driven by gradients that can be averaged
/// across workers, keeping every worker's parameters bit-identical.
pub trait GradientLearner: Learner {
    /// All trainable parameters, flattened in a fixed order.
    fn parameters(&self) -> Vec<f32>;
    /// Overwrites the parameters from a vector produced by [`GradientLearner::parameters`].
    fn set_parameters(&mut self, params: &[f32]) -> Result<()>;
    /// Like [`Learner::learn`], but every gradient (and any running statistic
    /// that feeds the networks) passes through `reducer` before it is used.
    fn learn_averaged(
        &mut self,
        episodes: usize,
        reducer: &mut dyn MeanReducer,
    ) -> Result<LearnReport>;
}

/// Splits a flat parameter vector, as [`GradientLearner::parameters`]
/// writes it, into consecutive parts of the given `sizes`; `parts` names
/// them for the error when the length is not their sum (a vector from
/// another model).
///
/// ```
/// use shoal_rl_core::split_parameters;
/// let parts = split_parameters(&[1.0, 2.0, 3.0], &[1, 2], "actor and critic").unwrap();
/// assert_eq!(parts, [&[1.0][..], &[2.0, 3.0][..]]);
/// let err = split_parameters(&[1.0], &[1, 2], "actor and critic").unwrap_err();
/// assert_eq!(err.to_string(), "shape mismatch: parameter vector has 1 values, actor and critic have 3");
/// ```
pub fn split_parameters<'a>(
    params: &'a [f32],
    sizes: &[usize],
    parts: &str,
) -> Result<Vec<&'a [f32]>> {
    let expected: usize = sizes.iter().sum();
    if params.len() != expected {
        return Err(crate::Error::Shape(format!(
            "parameter vector has {} values, {parts} have {expected}",
            params.len()
        )));
    }
    let mut rest = params;
    Ok(sizes
        .iter()
        .map(|&size| {
            let (part, tail) = rest.split_at(size);
            rest = tail;
            part
        })
        .collect())
}

/// A batch learner that can split collection from update: workers collect
/// rollouts with the current policy, one worker updates on all of them.
pub trait RolloutLearner: Learner {
    /// Collects `episodes` episodes with the current (stochastic) policy,
    /// serialised for transport; the report describes them.
    fn collect(&mut self, episodes: usize) -> Result<(Vec<u8>, LearnReport)>;
    /// Updates on rollouts gathered from every worker.
    fn update(&mut self, rollouts: &[Vec<u8>]) -> Result<LearnReport>;
    /// All trainable parameters, flattened in a fixed order.
    fn parameters(&self) -> Vec<f32>;
    /// Overwrites the parameters.
    fn set_parameters(&mut self, params: &[f32]) -> Result<()>;
}

/// Runs `policy` for `episodes` episodes on `env` and summarises the returns.
/// Episode `i` is reset with seed `seed + i`, so two policies evaluated with
/// the same seed face the same starting states.
///
/// `is_success`, if given, reads success from the final step's info key.
pub fn evaluate_policy<E: Env + ?Sized, P: Policy + ?Sized>(
    env: &mut E,
    policy: &P,
    episodes: usize,
    seed: u64,
    success_key: Option<&str>,
) -> Result<EvalReport> {
    match success_key {
        Some(key) => {
            let from_info = |_: &E, step: &Step| step.info.get(key).unwrap_or(0.0) > 0.5;
            evaluate_policy_with(env, policy, episodes, seed, Some(&from_info))
        }
        None => evaluate_policy_with(env, policy, episodes, seed, None),
    }
}

/// Decides whether an episode succeeded from its env and final step.
pub type SuccessFn<'a, E> = dyn Fn(&E, &Step) -> bool + 'a;

/// [`evaluate_policy`], with the success of an episode decided by
/// `success(env, final_step)` (a goal task: the final step's `is_success`
/// info, or the goals compared); `None`: no success rate.
pub fn evaluate_policy_with<E: Env + ?Sized, P: Policy + ?Sized>(
    env: &mut E,
    policy: &P,
    episodes: usize,
    seed: u64,
    success: Option<&SuccessFn<'_, E>>,
) -> Result<EvalReport> {
    // Grown as episodes finish, not reserved: `episodes` may be a user's typo.
    let (mut returns, mut lengths) = (Vec::new(), Vec::new());
    let mut successes = 0usize;
    for i in 0..episodes {
        let mut obs = env.reset(Some(seed.wrapping_add(i as u64)));
        let (mut ret, mut len) = (0.0f64, 0u64);
        loop {
            let step = env.step(&policy.try_act(&obs)?)?;
            ret += step.reward as f64;
            len += 1;
            if step.done() {
                if success.is_some_and(|succeeded| succeeded(env, &step)) {
                    successes += 1;
                }
                break;
            }
            obs = step.obs;
        }
        returns.push(ret);
        lengths.push(len as f64);
    }
    Ok(EvalReport::from_episodes(
        &returns,
        &lengths,
        success.map(|_| successes),
    ))
}

impl<L: Learner + ?Sized> Learner for Box<L> {
    fn learn(&mut self, episodes: usize) -> Result<LearnReport> {
        (**self).learn(episodes)
    }
    fn learn_until(&mut self, episodes: usize, stop: &StopFlag) -> Result<LearnReport> {
        (**self).learn_until(episodes, stop)
    }
    fn episodes_per_update(&self) -> Option<usize> {
        (**self).episodes_per_update()
    }
    fn evaluate(&mut self, episodes: usize, seed: u64) -> Result<EvalReport> {
        (**self).evaluate(episodes, seed)
    }
    fn save_state(&self) -> Vec<u8> {
        (**self).save_state()
    }
    fn load_state(&mut self, bytes: &[u8]) -> Result<()> {
        (**self).load_state(bytes)
    }
    fn save_memory(&self) -> Option<Vec<u8>> {
        (**self).save_memory()
    }
    fn load_memory(&mut self, bytes: &[u8]) -> Result<()> {
        (**self).load_memory(bytes)
    }
    fn policy(&self) -> Option<Box<dyn Policy>> {
        (**self).policy()
    }
}

impl<L: GradientLearner + ?Sized> GradientLearner for Box<L> {
    fn parameters(&self) -> Vec<f32> {
        (**self).parameters()
    }
    fn set_parameters(&mut self, params: &[f32]) -> Result<()> {
        (**self).set_parameters(params)
    }
    fn learn_averaged(
        &mut self,
        episodes: usize,
        reducer: &mut dyn MeanReducer,
    ) -> Result<LearnReport> {
        (**self).learn_averaged(episodes, reducer)
    }
}

impl<L: RolloutLearner + ?Sized> RolloutLearner for Box<L> {
    fn collect(&mut self, episodes: usize) -> Result<(Vec<u8>, LearnReport)> {
        (**self).collect(episodes)
    }
    fn update(&mut self, rollouts: &[Vec<u8>]) -> Result<LearnReport> {
        (**self).update(rollouts)
    }
    fn parameters(&self) -> Vec<f32> {
        (**self).parameters()
    }
    fn set_parameters(&mut self, params: &[f32]) -> Result<()> {
        (**self).set_parameters(params)
    }
}
