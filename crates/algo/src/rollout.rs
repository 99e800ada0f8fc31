//! Whole episodes played with a stochastic policy: what the on-policy
//! algorithms ([`crate::Reinforce`], [`crate::Ppo`]) collect, ship between
//! workers and learn from.

use rand::rngs::StdRng;
use serde::{Deserialize, Serialize};
use shoal_rl_core::{Env, Error, LearnReport, Result, Space, StopFlag, derive_seed, rng_from_seed};

/// One episode as collected: enough to compute an update, and nothing more.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Rollout {
    /// Observations `s_0 … s_{T−1}`, as the env gave them, row-major `[T, obs_dim]`.
    pub obs: Vec<f32>,
    /// What the policy drew at each step, in its own space, row-major
    /// `[T, act_dim]`: unit actions in `(0, 1)` for a Beta policy, the
    /// Gaussian draw before clipping or squashing for a Gaussian one.
    pub unit_actions: Vec<f32>,
    /// Rewards `r_0 … r_{T−1}`.
    pub rewards: Vec<f32>,
    /// Observation after the last step, for bootstrapping a truncated episode.
    pub final_obs: Vec<f32>,
    /// Whether the episode ended by truncation (time limit) rather than termination.
    pub truncated: bool,
}

impl Rollout {
    /// Steps in the episode.
    pub fn len(&self) -> usize {
        self.rewards.len()
    }

    /// Whether the episode has no steps.
    pub fn is_empty(&self) -> bool {
        self.rewards.is_empty()
    }
}

/// Plays episode number `episode` of a learner seeded `seed`, drawing each
/// step's `(draw, action)` from `draw(obs, rng)`. The env seed and the
/// sampling stream depend only on `(seed, episode)`, so a resumed run
/// replays exactly what an uninterrupted one would. Returns the episode and
/// its undiscounted return.
pub(crate) fn play_episode<E: Env + ?Sized>(
    env: &mut E,
    space: &Space,
    seed: u64,
    episode: u64,
    mut draw: impl FnMut(&[f32], &mut StdRng) -> Vec<f32>,
    to_action: impl Fn(&[f32]) -> Vec<f32>,
) -> Result<(Rollout, f64)> {
    let mut play = EpisodePlay::start(env, seed, episode);
    while !play.step(env, space, |obs, rng| Ok(draw(obs, rng)), &to_action)? {}
    Ok((play.rollout, play.undiscounted))
}

/// An episode played one step at a time, for a learner that updates in the
/// middle of one (PPO's step-sized rollouts): [`play_episode`] step by step,
/// with the same env seed and sampling stream.
pub(crate) struct EpisodePlay {
    rng: StdRng,
    /// The observation the next step acts on (after the end: the last one).
    obs: Vec<f32>,
    /// The steps since the start, or since the last [`EpisodePlay::cut`].
    pub(crate) rollout: Rollout,
    /// Undiscounted return of the whole episode so far.
    pub(crate) undiscounted: f64,
    /// Steps of the whole episode so far.
    pub(crate) steps: u64,
}

impl EpisodePlay {
    /// Resets `env` for episode number `episode` of a learner seeded `seed`.
    pub(crate) fn start<E: Env + ?Sized>(env: &mut E, seed: u64, episode: u64) -> Self {
        EpisodePlay {
            rng: rng_from_seed(derive_seed(seed, 1_000 + episode)),
            obs: env.reset(Some(derive_seed(seed, 2_000_000_000 + episode))),
            rollout: Rollout::default(),
            undiscounted: 0.0,
            steps: 0,
        }
    }

    /// Takes one step with the draw `draw(obs, rng)` makes; returns whether
    /// the episode ended there, its rollout then closed (final observation,
    /// truncated or terminated).
    pub(crate) fn step<E: Env + ?Sized>(
        &mut self,
        env: &mut E,
        space: &Space,
        draw: impl FnOnce(&[f32], &mut StdRng) -> Result<Vec<f32>>,
        to_action: impl Fn(&[f32]) -> Vec<f32>,
    ) -> Result<bool> {
        let unit = draw(&self.obs, &mut self.rng)?;
        let step = env.step(&space.from_unit(&to_action(&unit)))?;
        let rollout = &mut self.rollout;
        rollout.obs.extend_from_slice(&self.obs);
        rollout.unit_actions.extend_from_slice(&unit);
        rollout.rewards.push(step.reward);
        self.undiscounted += step.reward as f64;
        self.steps += 1;
        let done = step.done();
        if done {
            rollout.truncated = !step.terminated;
            rollout.final_obs.clone_from(&step.obs);
        }
        self.obs = step.obs;
        Ok(done)
    }

    /// The steps since the last cut as a rollout that ends unfinished:
    /// marked truncated, so its advantages bootstrap from the value of the
    /// observation the episode goes on from.
    pub(crate) fn cut(&mut self) -> Rollout {
        let mut part = std::mem::take(&mut self.rollout);
        part.truncated = true;
        part.final_obs.clone_from(&self.obs);
        part
    }
}

/// The shape an on-policy learner's saved state was written for:
/// observation and action sizes.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct StateDims {
    observation: u64,
    action: u64,
}

impl StateDims {
    pub(crate) fn new(obs_dim: usize, act_dim: usize) -> Self {
        StateDims {
            observation: obs_dim as u64,
            action: act_dim as u64,
        }
    }
}

/// `episodes` episodes from `play_one` (each a rollout and its
/// undiscounted return), with the report of their returns and lengths.
pub(crate) fn collect_episodes(
    episodes: usize,
    mut play_one: impl FnMut() -> Result<(Rollout, f64)>,
) -> Result<(Vec<Rollout>, LearnReport)> {
    // Not with_capacity: `episodes` comes from the caller's budget.
    let mut rollouts = Vec::new();
    let mut report = LearnReport::default();
    for _ in 0..episodes {
        let (rollout, ret) = play_one()?;
        report.episode_returns.push(ret);
        report.episode_lengths.push(rollout.len() as u64);
        rollouts.push(rollout);
    }
    Ok((rollouts, report))
}

/// Rollouts as the bytes a rollout-gathering strategy ships to rank 0.
pub(crate) fn encode(rollouts: &[Rollout]) -> Vec<u8> {
    postcard::to_stdvec(rollouts).expect("serialising plain vectors cannot fail")
}

/// Every worker's gathered rollouts in rank order, each checked against
/// this task's observation and action sizes: bytes from another process
/// are refused, not trusted.
pub(crate) fn decode_gathered(
    gathered: &[Vec<u8>],
    obs_dim: usize,
    act_dim: usize,
) -> Result<Vec<Rollout>> {
    let mut all = Vec::new();
    for bytes in gathered {
        let batch: Vec<Rollout> = postcard::from_bytes(bytes)
            .map_err(|e| Error::Comm(format!("a gathered rollout is unreadable: {e}")))?;
        if let Some(why) = misfit(&batch, obs_dim, act_dim) {
            return Err(Error::Comm(format!("a gathered rollout {why}")));
        }
        all.extend(batch);
    }
    Ok(all)
}

/// What is wrong with the first of `rollouts` that does not fit
/// observations of `obs_dim` and actions of `act_dim` values or has a
/// non-finite reward, as the end of a sentence; `None` when all fit.
pub(crate) fn misfit(rollouts: &[Rollout], obs_dim: usize, act_dim: usize) -> Option<String> {
    rollouts.iter().find_map(|rollout| {
        let steps = rollout.len();
        let fits = rollout.obs.len() == steps * obs_dim
            && rollout.unit_actions.len() == steps * act_dim
            && rollout.final_obs.len() == obs_dim
            && rollout.rewards.iter().all(|r| r.is_finite());
        (!fits).then(|| {
            format!(
                "of {steps} steps does not fit observations of {obs_dim} and actions of \
                 {act_dim} values, or has a non-finite reward"
            )
        })
    })
}

/// Trains on `episodes` episodes in batches of at most `batch`, each
/// collected and learned from by `collect_and_update(n)`. A stop waits for
/// the batch in hand, so an update's batch is the same whether or not the
/// run was interrupted.
pub(crate) fn learn_in_batches(
    episodes: usize,
    batch: usize,
    stop: Option<&StopFlag>,
    mut collect_and_update: impl FnMut(usize) -> Result<LearnReport>,
) -> Result<LearnReport> {
    let mut report = LearnReport::default();
    let mut remaining = episodes;
    while remaining > 0 && !stop.is_some_and(StopFlag::is_requested) {
        let n = remaining.min(batch);
        report.extend(collect_and_update(n)?);
        remaining -= n;
    }
    Ok(report)
}

/// `RolloutLearner` for an on-policy learner of this crate (`$learner<E>`)
/// with inherent `collect(episodes) -> (rollouts, report)` and
/// `update(&rollout, reducer) -> scalars`, `obs_dim` and `act_dim` fields,
/// and a `GradientLearner` impl whose parameters it shares.
macro_rules! impl_rollout_learner {
    ($learner:ident) => {
        impl<E: Env> shoal_rl_core::RolloutLearner for $learner<E> {
            fn collect(&mut self, episodes: usize) -> Result<(Vec<u8>, LearnReport)> {
                let (rollouts, report) = $learner::collect(self, episodes)?;
                Ok(($crate::rollout::encode(&rollouts), report))
            }

            fn update(&mut self, rollouts: &[Vec<u8>]) -> Result<LearnReport> {
                let all = $crate::rollout::decode_gathered(rollouts, self.obs_dim, self.act_dim)?;
                let scalars = $learner::update(self, &all, &mut shoal_rl_core::Alone)?;
                Ok(LearnReport {
                    scalars,
                    ..Default::default()
                })
            }

            fn parameters(&self) -> Vec<f32> {
                shoal_rl_core::GradientLearner::parameters(self)
            }

            fn set_parameters(&mut self, params: &[f32]) -> Result<()> {
                shoal_rl_core::GradientLearner::set_parameters(self, params)
            }
        }
    };
}
pub(crate) use impl_rollout_learner;

#[cfg(test)]
mod tests {
    use shoal_rl_env::{PointReach, PointReachConfig};

    use super::*;

    #[test]
    fn an_episode_cut_in_two_is_the_whole_episode_with_a_bootstrap_at_the_cut() {
        let mut env = PointReach::new(PointReachConfig::default()).unwrap();
        let space = env.action_space().clone();
        let draw = |_: &[f32], rng: &mut StdRng| vec![rand::RngExt::random::<f32>(rng)];
        let (whole, whole_return) =
            play_episode(&mut env, &space, 3, 5, draw, |u| u.to_vec()).unwrap();

        let mut play = EpisodePlay::start(&mut env, 3, 5);
        for _ in 0..7 {
            assert!(
                !play
                    .step(&mut env, &space, |o, r| Ok(draw(o, r)), |u| u.to_vec())
                    .unwrap()
            );
        }
        let head = play.cut();
        while !play
            .step(&mut env, &space, |o, r| Ok(draw(o, r)), |u| u.to_vec())
            .unwrap()
        {}
        let tail = play.rollout;

        assert_eq!((head.len(), tail.len()), (7, whole.len() - 7));
        assert!(head.truncated, "a cut bootstraps");
        assert_eq!(
            head.final_obs,
            tail.obs[..head.final_obs.len()],
            "from where the episode goes on"
        );
        let joined = |field: fn(&Rollout) -> &Vec<f32>| {
            [field(&head).clone(), field(&tail).clone()].concat()
        };
        assert_eq!(joined(|r| &r.obs), whole.obs);
        assert_eq!(joined(|r| &r.unit_actions), whole.unit_actions);
        assert_eq!(joined(|r| &r.rewards), whole.rewards);
        assert_eq!(
            (tail.truncated, &tail.final_obs),
            (whole.truncated, &whole.final_obs)
        );
        assert_eq!(
            (play.undiscounted, play.steps),
            (whole_return, whole.len() as u64)
        );
    }
}
