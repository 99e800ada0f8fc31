//! The agent ([`Hac`]): envs, buffers and counters around shared
//! [`HacModels`], and its `Learner` plumbing.

use rand::rngs::StdRng;
use serde::{Deserialize, Serialize};
use shoal_rl_core::{
    Alone, Error, EvalReport, GoalEnv, GradientLearner, LearnReport, Learner, MeanReducer, Result,
    Space, StopFlag, derive_seed, rng_from_seed,
};

use super::config::HacConfig;
use super::models::{HacModels, read_per_level};
use super::rollout::{Explore, HacFrame, Run, subgoal_reward};
use crate::actor_critic::{NetBatch, UpdateTally};
use crate::check;
use crate::transition_buffer::{Transition, TransitionBuffer};
use crate::versioned::read_state;

/// Streams of [`derive_seed`] for the generators of episode / round `k`
/// (the levels' networks draw from `models::MODEL_STREAM`'s).
const ENV_STREAM: u64 = 2 << 40;
const EXPLORE_STREAM: u64 = 3 << 40;
const NOISE_STREAM: u64 = 4 << 40;
const ROUND_STREAM: u64 = 5 << 40;

/// Bumped whenever [`HacState`]'s layout changes (2: each level's
/// networks hold a list of critics, for TD3's two; 3: and SAC's
/// temperature, absent for HAC's deterministic actors).
const STATE_VERSION: u32 = 3;

/// Everything [`Hac`] changes while training, except the buffers.
#[derive(Serialize, Deserialize)]
pub(super) struct HacState {
    pub(super) version: u32,
    pub(super) models: Vec<u8>,
    pub(super) episodes: u64,
    pub(super) env_steps: u64,
    pub(super) updates: u64,
}

/// Sums of one level's update statistics over a `learn` call.
#[derive(Clone, Copy, Default)]
struct Tally {
    networks: UpdateTally,
    attempts: u64,
    reached: u64,
}

/// A HAC agent on its own goal environment.
///
/// ```no_run
/// # fn demo<E: shoal_rl_core::GoalEnv>(env: E, eval_env: E) -> shoal_rl_core::Result<()> {
/// use shoal_rl_algo::{Hac, HacConfig};
/// use shoal_rl_core::Learner;
/// let mut agent = Hac::new(HacConfig::default(), env, eval_env, 7)?;
/// agent.learn(100)?;
/// println!("success rate {:?}", agent.evaluate(10, 0)?.success_rate);
/// # Ok(()) }
/// ```
pub struct Hac<E: GoalEnv> {
    config: HacConfig,
    env: E,
    eval_env: E,
    action_space: Space,
    subgoal_space: Space,
    models: HacModels,
    buffers: Vec<TransitionBuffer>,
    seed: u64,
    episodes: u64,
    env_steps: u64,
    updates: u64,
}

impl<E: GoalEnv> Hac<E> {
    /// An agent with networks initialised from `seed`, training on `env` and
    /// evaluating on `eval_env` (two instances of the same task).
    pub fn new(config: HacConfig, env: E, eval_env: E, seed: u64) -> Result<Self> {
        config.validate()?;
        let (goal, full) = (env.goal_dim(), env.observation_space().dim());
        if goal == 0 || full < 2 * goal {
            return Err(Error::Config(format!(
                "a goal env needs goals inside its observation (observation {full}, goal {goal})"
            )));
        }
        let models = HacModels::new(
            &config,
            full - 2 * goal,
            goal,
            env.action_space().dim(),
            seed,
        )?;
        Self::with_models(config, models, env, eval_env, seed)
    }

    /// An agent on existing (possibly shared, cloned) models; `seed` drives
    /// only its episodes and sampling.
    pub fn with_models(
        config: HacConfig,
        models: HacModels,
        env: E,
        eval_env: E,
        seed: u64,
    ) -> Result<Self> {
        config.validate()?;
        let (goal, full) = (env.goal_dim(), env.observation_space().dim());
        let d = models.dims;
        if goal != d.goal
            || full != d.obs + 2 * goal
            || env.action_space().dim() != d.act
            || models.len() != config.levels
            || models.subgoal_dim != config.subgoal_dim(goal)
        {
            return Err(Error::Config(format!(
                "the models ({} levels, {d:?}) do not fit this env and config",
                models.len()
            )));
        }
        let action_space = check::matching_bounded_envs(&env, &eval_env, "HAC")?;
        // Indices into the observation: the named components, else the achieved goal's.
        let components: Vec<usize> = match &config.subgoal_indices {
            Some(indices) => {
                if let Some(&i) = indices.iter().find(|&&i| i >= d.obs) {
                    return Err(Error::Config(format!(
                        "hac subgoal_indices names component {i}; the env's observation part \
                         has {}",
                        d.obs
                    )));
                }
                indices.clone()
            }
            None => (d.obs..d.obs + goal).collect(),
        };
        let subgoal_space = match (&config.subgoal_low, &config.subgoal_high) {
            (Some(low), Some(high)) => Space::new(low.clone(), high.clone()),
            _ => {
                let space = env.observation_space();
                Space::new(
                    components.iter().map(|&i| space.low[i]).collect(),
                    components.iter().map(|&i| space.high[i]).collect(),
                )
            }
        };
        let bounded = subgoal_space
            .low
            .iter()
            .zip(&subgoal_space.high)
            .all(|(l, h)| l.is_finite() && h.is_finite() && l < h);
        if subgoal_space.dim() != components.len() || !bounded {
            return Err(Error::Config(format!(
                "hac subgoal_low / subgoal_high must give {} finite bounds (the subgoal's \
                 components are unbounded in the env's observation space, or the config's \
                 length differs)",
                components.len()
            )));
        }
        if let Some(thresholds) = &config.subgoal_thresholds
            && thresholds.len() != components.len()
        {
            return Err(Error::Config(format!(
                "hac subgoal_thresholds has {} values; a subgoal has {} components",
                thresholds.len(),
                components.len()
            )));
        }
        let buffers = (0..config.levels)
            .map(|level| {
                TransitionBuffer::new(models.level_dims(level), config.buffer_capacity(level))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Hac {
            config,
            env,
            eval_env,
            action_space,
            subgoal_space,
            models,
            buffers,
            seed,
            episodes: 0,
            env_steps: 0,
            updates: 0,
        })
    }

    /// The hyperparameters.
    pub fn config(&self) -> &HacConfig {
        &self.config
    }

    /// The networks of every level.
    pub fn models(&self) -> &HacModels {
        &self.models
    }

    /// Replaces the networks (e.g. with a copy shared by other workers).
    pub fn set_models(&mut self, models: HacModels) -> Result<()> {
        if models.dims != self.models.dims
            || models.subgoal_dim != self.models.subgoal_dim
            || models.len() != self.models.len()
        {
            return Err(Error::Shape("the models have another shape".into()));
        }
        self.models = models;
        Ok(())
    }

    /// Level `level`'s replay buffer.
    pub fn buffer(&self, level: usize) -> &TransitionBuffer {
        &self.buffers[level]
    }

    /// The box subgoals are proposed in.
    pub fn subgoal_space(&self) -> &Space {
        &self.subgoal_space
    }

    /// Episodes trained so far (survives save/load).
    pub fn episodes(&self) -> u64 {
        self.episodes
    }

    /// Environment steps trained so far (survives save/load).
    pub fn env_steps(&self) -> u64 {
        self.env_steps
    }

    /// Gradient steps taken so far, over all levels (survives save/load).
    pub fn updates(&self) -> u64 {
        self.updates
    }

    /// Plays one episode on `env` from the reset observation `first`: the
    /// top level attempts the desired goal once, recursing down. With
    /// `watched`, the outcome holds a frame per step.
    fn run(
        env: &mut E,
        first: &[f32],
        models: &HacModels,
        config: &HacConfig,
        spaces: (&Space, &Space),
        explore: Option<Explore>,
        watched: bool,
    ) -> Result<RunOutcome> {
        let levels = models.len();
        let mut run = Run {
            env,
            models,
            config,
            action_space: spaces.0,
            subgoal_space: spaces.1,
            explore,
            frames: watched.then(Vec::new),
            obs: Vec::new(),
            achieved: Vec::new(),
            desired: Vec::new(),
            at_subgoal: Vec::new(),
            subgoal_reward: subgoal_reward(config),
            goals: vec![Vec::new(); levels],
            done: false,
            success: false,
            undiscounted: 0.0,
            steps: 0,
            transitions: vec![Vec::new(); levels],
            attempts: vec![0; levels],
            reached_goals: vec![0; levels],
        };
        run.split(first)?;
        let desired = run.desired.clone();
        // Whether the top level maxed out matters to no one above it.
        let _maxed_out = run.attempt(levels - 1, &desired, false)?;
        if !run.done {
            // The top level's attempt ran out before the env ended the episode.
            run.success = run.env.is_success(&run.achieved, &run.desired);
        }
        run.frame();
        Ok(RunOutcome {
            undiscounted: run.undiscounted,
            steps: run.steps,
            success: run.success,
            transitions: run.transitions,
            attempts: run.attempts,
            reached: run.reached_goals,
            frames: run.frames.unwrap_or_default(),
        })
    }

    /// Plays training episode `k = self.episodes` with exploration.
    fn collect_episode(&mut self) -> Result<RunOutcome> {
        let k = self.episodes;
        let noise = (0..self.config.levels)
            .map(|level| {
                let dim = self.models.level_dims(level).act;
                let seed = derive_seed(derive_seed(self.seed, NOISE_STREAM + k), level as u64);
                self.config
                    .noise
                    .build(dim, self.config.noise_scale(level) as f32, seed)
            })
            .collect::<Result<Vec<_>>>()?;
        let explore = Explore {
            rng: rng_from_seed(derive_seed(self.seed, EXPLORE_STREAM + k)),
            noise,
        };
        let first = self.env.reset(Some(derive_seed(self.seed, ENV_STREAM + k)));
        Self::run(
            &mut self.env,
            &first,
            &self.models,
            &self.config,
            (&self.action_space, &self.subgoal_space),
            Some(explore),
            false,
        )
    }

    /// Turns sampled transitions of `level` into network inputs.
    fn prepare_batch(&self, level: usize, rng: &mut StdRng, out: &mut NetBatch) -> Result<()> {
        out.inputs.clear();
        out.next_inputs.clear();
        out.actions.clear();
        out.rewards.clear();
        out.terminals.clear();
        for _ in 0..self.config.batch_size {
            let t = self.buffers[level]
                .sample(rng)
                .expect("every level stores transitions in every episode");
            self.models
                .push_input(level, &t.obs, &t.goal, &mut out.inputs)?;
            self.models
                .push_input(level, &t.next_obs, &t.goal, &mut out.next_inputs)?;
            out.actions.extend_from_slice(&t.action);
            out.rewards.push(t.reward);
            out.terminals.push(t.terminal);
        }
        Ok(())
    }

    /// `n_batches` gradient steps per level, then each level's target
    /// update. The round after episode `k` samples with the generator derived
    /// from `(seed, k)`.
    fn train_round(&mut self, reducer: &mut dyn MeanReducer, tallies: &mut [Tally]) -> Result<()> {
        let mut rng = rng_from_seed(derive_seed(self.seed, ROUND_STREAM + self.episodes));
        let settings = self.config.settings();
        let ready = self.levels_ready(reducer)?;
        let mut batch = NetBatch::default();
        for (level, tally) in tallies.iter_mut().enumerate() {
            if !ready[level] {
                continue;
            }
            for _ in 0..self.config.n_batches {
                self.prepare_batch(level, &mut rng, &mut batch)?;
                let networks = &mut self.models.levels[level].networks;
                tally
                    .networks
                    .add(networks.update(&batch, &settings, reducer)?);
                self.updates += 1;
            }
            if self.config.target_networks {
                self.models.levels[level]
                    .networks
                    .update_targets(self.config.polyak)?;
            }
        }
        Ok(())
    }

    /// Which levels train this round: all, or with `wait_for_batch` those
    /// whose buffer holds a batch on every worker (one reducer call, so
    /// workers agree and stay in step).
    fn levels_ready(&self, reducer: &mut dyn MeanReducer) -> Result<Vec<bool>> {
        if !self.config.wait_for_batch {
            return Ok(vec![true; self.buffers.len()]);
        }
        let mut full: Vec<f32> = self
            .buffers
            .iter()
            .map(|b| f32::from(u8::from(b.len() >= self.config.batch_size)))
            .collect();
        reducer.mean(&mut full)?;
        Ok(full.iter().map(|&f| f == 1.0).collect())
    }

    /// Trains `episodes` episodes (fewer if `stop` is requested: every
    /// episode trains every level before the next, so any episode is a
    /// clean stop point).
    fn learn_with(
        &mut self,
        episodes: usize,
        reducer: &mut dyn MeanReducer,
        stop: Option<&StopFlag>,
    ) -> Result<LearnReport> {
        let mut report = LearnReport::default();
        let mut tallies = vec![Tally::default(); self.config.levels];
        for _ in 0..episodes {
            if stop.is_some_and(StopFlag::is_requested) {
                break;
            }
            let outcome = self.collect_episode()?;
            report.episode_returns.push(outcome.undiscounted);
            report.episode_lengths.push(outcome.steps);
            report.episode_successes.push(outcome.success);
            self.env_steps += outcome.steps;
            for (level, transitions) in outcome.transitions.into_iter().enumerate() {
                tallies[level].attempts += outcome.attempts[level];
                tallies[level].reached += outcome.reached[level];
                self.models.observe(level, &transitions)?;
                for t in transitions {
                    self.buffers[level].push(t)?;
                }
            }
            // ---- after every episode: sync statistics, then train every level ----
            self.models.sync_normalizers(reducer)?;
            self.train_round(reducer, &mut tallies)?;
            self.episodes += 1;
        }
        for (level, tally) in tallies.iter().enumerate() {
            let means = tally.networks.means();
            report.scalars.extend([
                (format!("level{level}/actor_loss"), means.actor_loss),
                (format!("level{level}/critic_loss"), means.critic_loss),
                (format!("level{level}/q_mean"), means.q_mean),
                (format!("level{level}/actor_at_bound"), means.actor_at_bound),
                (
                    format!("level{level}/subgoal_success"),
                    tally.reached as f64 / tally.attempts.max(1) as f64,
                ),
                (
                    format!("level{level}/buffer_transitions"),
                    self.buffers[level].len() as f64,
                ),
            ]);
        }
        report
            .scalars
            .push(("charts/updates".to_string(), self.updates as f64));
        Ok(report)
    }
}

/// What one episode produced.
struct RunOutcome {
    undiscounted: f64,
    steps: u64,
    success: bool,
    transitions: Vec<Vec<Transition>>,
    attempts: Vec<u64>,
    reached: Vec<u64>,
    frames: Vec<HacFrame>,
}

impl<E: GoalEnv> Hac<E> {
    /// Plays `episodes` frozen-policy episodes as [`Learner::evaluate`]
    /// does (episode `i` reset with `seed + i`), returning a frame before
    /// every environment step and after the last one of each episode.
    pub fn watch(&mut self, episodes: usize, seed: u64) -> Result<Vec<HacFrame>> {
        let mut frames = Vec::new();
        for i in 0..episodes {
            let outcome = self.frozen_episode(seed.wrapping_add(i as u64), true)?;
            frames.extend(
                outcome
                    .frames
                    .into_iter()
                    .map(|f| HacFrame { episode: i, ..f }),
            );
        }
        Ok(frames)
    }

    /// One episode on the evaluation env with every level deterministic,
    /// no subgoal tests and nothing stored.
    fn frozen_episode(&mut self, seed: u64, watched: bool) -> Result<RunOutcome> {
        let first = self.eval_env.reset(Some(seed));
        Self::run(
            &mut self.eval_env,
            &first,
            &self.models,
            &self.config,
            (&self.action_space, &self.subgoal_space),
            None,
            watched,
        )
    }
}

impl<E: GoalEnv> Learner for Hac<E> {
    fn learn(&mut self, episodes: usize) -> Result<LearnReport> {
        self.learn_with(episodes, &mut Alone, None)
    }

    fn learn_until(&mut self, episodes: usize, stop: &StopFlag) -> Result<LearnReport> {
        self.learn_with(episodes, &mut Alone, Some(stop))
    }

    /// Every level trains after each episode.
    fn episodes_per_update(&self) -> Option<usize> {
        Some(1)
    }

    /// Every level deterministic, no subgoal tests, nothing stored, on the
    /// evaluation env; episode `i` is reset with `seed + i`.
    fn evaluate(&mut self, episodes: usize, seed: u64) -> Result<EvalReport> {
        let (mut returns, mut lengths, mut successes) = (Vec::new(), Vec::new(), 0usize);
        for i in 0..episodes {
            let outcome = self.frozen_episode(seed.wrapping_add(i as u64), false)?;
            returns.push(outcome.undiscounted);
            lengths.push(outcome.steps as f64);
            successes += usize::from(outcome.success);
        }
        Ok(EvalReport::from_episodes(
            &returns,
            &lengths,
            Some(successes),
        ))
    }

    fn save_state(&self) -> Vec<u8> {
        postcard::to_stdvec(&HacState {
            version: STATE_VERSION,
            models: self.models.save_state(),
            episodes: self.episodes,
            env_steps: self.env_steps,
            updates: self.updates,
        })
        .expect("serialising plain vectors cannot fail")
    }

    fn load_state(&mut self, bytes: &[u8]) -> Result<()> {
        let state: HacState = read_state("HAC state", bytes, 1..=STATE_VERSION, |s: &HacState| {
            s.version
        })?;
        let mut models = self.models.clone();
        models.load_state(&state.models, state.version)?;
        self.models = models;
        self.episodes = state.episodes;
        self.env_steps = state.env_steps;
        self.updates = state.updates;
        Ok(())
    }

    fn save_memory(&self) -> Option<Vec<u8>> {
        let buffers: Vec<Vec<u8>> = self.buffers.iter().map(|b| b.to_bytes()).collect();
        Some(postcard::to_stdvec(&buffers).expect("serialising bytes cannot fail"))
    }

    fn load_memory(&mut self, bytes: &[u8]) -> Result<()> {
        let blobs: Vec<Vec<u8>> = read_per_level(bytes, "HAC memory", self.buffers.len())?;
        let mut buffers = self.buffers.clone();
        for (buffer, blob) in buffers.iter_mut().zip(&blobs) {
            buffer.load_bytes(blob)?;
        }
        self.buffers = buffers;
        Ok(())
    }
}

impl<E: GoalEnv> GradientLearner for Hac<E> {
    fn parameters(&self) -> Vec<f32> {
        self.models.parameters()
    }

    fn set_parameters(&mut self, params: &[f32]) -> Result<()> {
        self.models.set_parameters(params)
    }

    fn learn_averaged(
        &mut self,
        episodes: usize,
        reducer: &mut dyn MeanReducer,
    ) -> Result<LearnReport> {
        self.learn_with(episodes, reducer, None)
    }
}
