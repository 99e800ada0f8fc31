//! REINFORCE with a baseline (Williams, 1992), for Beta policies (Chou et al., 2017).
//!
//! Read top to bottom: the config with its defaults, one episode of
//! collection, returns and advantages, the update, then the `Learner`
//! plumbing that lets parallel strategies drive it.
//!
//! The policy gradient of a Beta policy needs ∂ log p / ∂(α, β), which involves
//! the digamma function that burn lacks. We compute that score analytically,
//! carry it through α = 1 + softplus(z) to the raw outputs, and back through
//! the network by hand ([`MlpTape`], as PPO does); the value regression's
//! gradient goes back the same way. The tests hold both to the losses
//! written out in f64.

use burn::module::Module;
use serde::{Deserialize, Serialize};
use shoal_rl_core::{
    Alone, Env, EvalReport, GradientLearner, LearnReport, Learner, MeanReducer, Result, Space,
    StopFlag, derive_seed, evaluate_policy, split_parameters,
};
use shoal_rl_policy::{
    Activation, BetaPolicyConfig, BetaPolicyNet, FrozenBetaPolicy, Mlp, MlpConfig, MlpTape,
    Trained, beta_entropy, beta_entropy_grad, beta_log_prob_grad, beta_parameter, sample_unit,
    training_device,
};

use crate::check;
use crate::rollout::{Rollout, StateDims, collect_episodes, learn_in_batches, play_episode};
use crate::versioned::Format;

/// One row of raw policy outputs (the α half, then the β half) as the
/// Beta's (α, β) per action component.
fn beta_parameters(raw: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let (alpha, beta) = raw.split_at(raw.len() / 2);
    (
        alpha.iter().map(|z| beta_parameter(*z).0).collect(),
        beta.iter().map(|z| beta_parameter(*z).0).collect(),
    )
}

/// What the advantage subtracts from the return.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Baseline {
    /// No baseline: advantage = return.
    None,
    /// An exponential running mean of returns-to-go.
    RunningMean,
    /// A learned state-value network V(s), trained by regression on returns.
    Value,
}

/// Hyperparameters of [`Reinforce`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReinforceConfig {
    /// Discount factor γ. Default 0.99.
    pub gamma: f64,
    /// Adam step size of the policy. Default 3e-4.
    pub learning_rate: f64,
    /// Adam step size of the value network. Default 1e-3.
    pub value_learning_rate: f64,
    /// Hidden layer widths of the policy and value networks. Default [64, 64].
    pub hidden: Vec<usize>,
    /// Baseline subtracted from returns. Default `value`.
    pub baseline: Baseline,
    /// Standardise advantages within each update batch. Default true.
    pub normalize_advantages: bool,
    /// Weight of the entropy bonus. Default 0.0.
    pub entropy_coef: f64,
    /// Episodes collected per gradient step. Default 1.
    pub episodes_per_update: usize,
    /// Global gradient-norm clip. Default 0.5.
    pub max_grad_norm: f64,
    /// Decay of the running-mean baseline per update. Default 0.9.
    pub running_mean_decay: f64,
}

impl ReinforceConfig {
    /// Checks every value; the error names the offending key.
    pub fn validate(&self) -> Result<()> {
        if !(0.0..=1.0).contains(&self.gamma) {
            return Err(check::bad(
                "reinforce",
                "gamma",
                format!("must be in [0, 1], got {}", self.gamma),
            ));
        }
        check::positive("reinforce", "learning_rate", self.learning_rate)?;
        check::positive("reinforce", "value_learning_rate", self.value_learning_rate)?;
        check::positive("reinforce", "max_grad_norm", self.max_grad_norm)?;
        check::hidden("reinforce", &self.hidden)?;
        check::count(
            "reinforce",
            "episodes_per_update",
            self.episodes_per_update,
            check::MAX_BATCH,
        )?;
        if !self.entropy_coef.is_finite() {
            return Err(check::bad("reinforce", "entropy_coef", "must be finite"));
        }
        if !(0.0..=1.0).contains(&self.running_mean_decay) {
            return Err(check::bad(
                "reinforce",
                "running_mean_decay",
                "must be in [0, 1]",
            ));
        }
        Ok(())
    }
}

impl Default for ReinforceConfig {
    fn default() -> Self {
        ReinforceConfig {
            gamma: 0.99,
            learning_rate: 3e-4,
            value_learning_rate: 1e-3,
            hidden: vec![64, 64],
            baseline: Baseline::Value,
            normalize_advantages: true,
            entropy_coef: 0.0,
            episodes_per_update: 1,
            max_grad_norm: 0.5,
            running_mean_decay: 0.9,
        }
    }
}

/// Everything [`Reinforce`] changes while training, for checkpoints and for
/// copying the best agent between workers.
#[derive(Serialize, Deserialize)]
struct ReinforceState {
    policy: Vec<u8>,
    value: Vec<u8>,
    running_mean: f64,
    episodes: u64,
    env_steps: u64,
}

/// The saved state's header: bumped whenever [`ReinforceState`] changes.
const STATE_FORMAT: Format = Format {
    name: "REINFORCE state",
    magic: *b"shoalRFS",
    version: 1,
};

/// A REINFORCE agent on its own environment.
pub struct Reinforce<E: Env> {
    config: ReinforceConfig,
    env: E,
    eval_env: E,
    action_space: Space,
    obs_dim: usize,
    act_dim: usize,
    policy: Trained<BetaPolicyNet>,
    value: Trained<Mlp>,
    /// Each network's passes by hand on its flat parameters (acting,
    /// predictions and gradients).
    policy_tape: MlpTape,
    value_tape: MlpTape,
    running_mean: f64,
    seed: u64,
    episodes: u64,
    env_steps: u64,
}

impl<E: Env> Reinforce<E> {
    /// An agent with networks initialised from `seed`, training on `env` and
    /// evaluating on `eval_env` (two instances of the same task).
    pub fn new(config: ReinforceConfig, env: E, eval_env: E, seed: u64) -> Result<Self> {
        config.validate()?;
        let action_space = check::bounded_actions(&env, "a Beta policy")?;
        let obs_dim = env.observation_space().dim();
        let act_dim = action_space.dim();
        let device = training_device();
        let net = BetaPolicyConfig::new(obs_dim, act_dim)
            .with_hidden(config.hidden.clone())
            .init(derive_seed(seed, 1), &device);
        let value_net = shoal_rl_policy::canonicalise(
            MlpConfig::new(obs_dim, config.hidden.clone(), 1).init_with(Activation::Tanh, &device),
            derive_seed(seed, 2),
        );
        let clip = Some(config.max_grad_norm);
        let policy = Trained::adam(net, config.learning_rate, clip);
        Ok(Reinforce {
            policy_tape: MlpTape::new(policy.module().shape()),
            value_tape: MlpTape::new(value_net.shape()),
            value: Trained::adam(value_net, config.value_learning_rate, clip),
            config,
            env,
            eval_env,
            action_space,
            obs_dim,
            act_dim,
            policy,
            running_mean: 0.0,
            seed,
            episodes: 0,
            env_steps: 0,
        })
    }

    /// The hyperparameters.
    pub fn config(&self) -> &ReinforceConfig {
        &self.config
    }

    fn state_dims(&self) -> StateDims {
        StateDims::new(self.obs_dim, self.act_dim)
    }

    /// Episodes trained so far (survives save/load).
    pub fn episodes(&self) -> u64 {
        self.episodes
    }

    /// The current policy, frozen for evaluation.
    pub fn frozen_policy(&self) -> FrozenBetaPolicy {
        FrozenBetaPolicy::new(self.policy.module(), self.action_space.clone())
    }

    // ---------------------------------------------------------------------
    // Collection
    // ---------------------------------------------------------------------

    /// Plays one episode with the stochastic policy (seeded by its number:
    /// see [`play_episode`]).
    fn collect_episode(&mut self) -> Result<(Rollout, f64)> {
        let (tape, params) = (&mut self.policy_tape, self.policy.params());
        let (rollout, undiscounted) = play_episode(
            &mut self.env,
            &self.action_space,
            self.seed,
            self.episodes,
            |obs, rng| {
                let (alpha, beta) = beta_parameters(tape.forward(params, obs));
                sample_unit(&alpha, &beta, rng)
            },
            |unit| unit.to_vec(),
        )?;
        self.episodes += 1;
        self.env_steps += rollout.len() as u64;
        Ok((rollout, undiscounted))
    }

    fn collect(&mut self, episodes: usize) -> Result<(Vec<Rollout>, LearnReport)> {
        collect_episodes(episodes, || self.collect_episode())
    }

    // ---------------------------------------------------------------------
    // Returns, baseline, advantages
    // ---------------------------------------------------------------------

    fn values(&mut self, obs: &[f32]) -> Vec<f32> {
        self.value_tape.forward(self.value.params(), obs).to_vec()
    }

    /// Discounted returns-to-go. A truncated episode is not over for the task,
    /// so with a value baseline its tail is bootstrapped with V(s_T).
    fn returns(&mut self, rollout: &Rollout) -> Vec<f64> {
        let mut tail = if rollout.truncated && self.config.baseline == Baseline::Value {
            self.values(&rollout.final_obs)[0] as f64
        } else {
            0.0
        };
        let mut returns = vec![0.0; rollout.len()];
        for t in (0..rollout.len()).rev() {
            tail = rollout.rewards[t] as f64 + self.config.gamma * tail;
            returns[t] = tail;
        }
        returns
    }

    // ---------------------------------------------------------------------
    // Update
    // ---------------------------------------------------------------------

    /// One gradient step on `rollouts`; every gradient goes through `reducer`
    /// (averaged across workers in gradient-parallel training).
    fn update(
        &mut self,
        rollouts: &[Rollout],
        reducer: &mut dyn MeanReducer,
    ) -> Result<Vec<(String, f64)>> {
        let obs: Vec<f32> = rollouts
            .iter()
            .flat_map(|r| r.obs.iter().copied())
            .collect();
        let units: Vec<f32> = rollouts
            .iter()
            .flat_map(|r| r.unit_actions.iter().copied())
            .collect();
        let returns: Vec<f64> = rollouts.iter().flat_map(|r| self.returns(r)).collect();
        let n = returns.len();
        if n == 0 {
            return Ok(Vec::new());
        }

        let baseline: Vec<f64> = match self.config.baseline {
            Baseline::None => vec![0.0; n],
            Baseline::RunningMean => vec![self.running_mean; n],
            Baseline::Value => self.values(&obs).into_iter().map(f64::from).collect(),
        };
        let mut advantages: Vec<f64> = returns.iter().zip(&baseline).map(|(g, b)| g - b).collect();
        if self.config.normalize_advantages && n > 1 {
            let mean = advantages.iter().sum::<f64>() / n as f64;
            let std =
                (advantages.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
            advantages
                .iter_mut()
                .for_each(|a| *a = (*a - mean) / (std + 1e-8));
        }

        // ---- policy: the analytic Beta score, back through the network ----
        let act_dim = self.act_dim;
        let out = self.policy_tape.forward(self.policy.params(), &obs);
        let mut d_out = vec![0.0f32; out.len()];
        let mut entropy = 0.0;
        for (row, (raw, d_row)) in out
            .chunks_exact(2 * act_dim)
            .zip(d_out.chunks_exact_mut(2 * act_dim))
            .enumerate()
        {
            let adv = advantages[row];
            for j in 0..act_dim {
                let ((a, slope_a), (b, slope_b)) =
                    (beta_parameter(raw[j]), beta_parameter(raw[act_dim + j]));
                let (a, b, x) = (a as f64, b as f64, units[row * act_dim + j] as f64);
                let (ga, gb) = beta_log_prob_grad(x, a, b);
                let (ea, eb) = beta_entropy_grad(a, b);
                // Minimising −(A·log p + c·H) averaged over time steps.
                let coef_alpha = -(adv * ga + self.config.entropy_coef * ea) / n as f64;
                let coef_beta = -(adv * gb + self.config.entropy_coef * eb) / n as f64;
                d_row[j] = (coef_alpha * slope_a as f64) as f32;
                d_row[act_dim + j] = (coef_beta * slope_b as f64) as f32;
                entropy += beta_entropy(a, b);
            }
        }
        let mut policy_grads = vec![0.0f32; self.policy.params().len()];
        self.policy_tape
            .backward(self.policy.params(), &d_out, Some(&mut policy_grads), None);

        // ---- value: regression on returns, mean((V − G)²) ----
        let mut value_grads = Vec::new();
        let mut value_loss = 0.0;
        if self.config.baseline == Baseline::Value {
            let predicted = self.value_tape.forward(self.value.params(), &obs);
            let mut d_value = vec![0.0f32; n];
            for ((d, v), g) in d_value.iter_mut().zip(predicted).zip(&returns) {
                let error = *v - *g as f32;
                value_loss += (error * error) as f64;
                *d = 2.0 * error / n as f32;
            }
            value_loss /= n as f64;
            value_grads = vec![0.0f32; self.value.params().len()];
            self.value_tape
                .backward(self.value.params(), &d_value, Some(&mut value_grads), None);
        }

        // ---- average across workers (one message), then step ----
        let split = policy_grads.len();
        policy_grads.extend_from_slice(&value_grads);
        reducer.mean(&mut policy_grads)?;
        let (policy_part, value_part) = policy_grads.split_at_mut(split);
        let grad_norm = self.policy.step(policy_part)?;
        if self.config.baseline == Baseline::Value {
            self.value.step(value_part)?;
        }

        let mean_return = returns.iter().sum::<f64>() / n as f64;
        if self.config.baseline == Baseline::RunningMean {
            let d = self.config.running_mean_decay;
            self.running_mean = d * self.running_mean + (1.0 - d) * mean_return;
        }
        Ok(vec![
            ("losses/value".into(), value_loss),
            ("losses/policy_grad_norm".into(), grad_norm),
            ("charts/entropy".into(), entropy / (n * self.act_dim) as f64),
        ])
    }

    fn learn_with(
        &mut self,
        episodes: usize,
        reducer: &mut dyn MeanReducer,
        stop: Option<&StopFlag>,
    ) -> Result<LearnReport> {
        let batch = self.config.episodes_per_update;
        learn_in_batches(episodes, batch, stop, |n| {
            let (rollouts, mut report) = self.collect(n)?;
            report.extend(LearnReport {
                scalars: self.update(&rollouts, reducer)?,
                ..Default::default()
            });
            Ok(report)
        })
    }
}

impl<E: Env> Learner for Reinforce<E> {
    fn learn(&mut self, episodes: usize) -> Result<LearnReport> {
        self.learn_with(episodes, &mut Alone, None)
    }

    fn learn_until(&mut self, episodes: usize, stop: &StopFlag) -> Result<LearnReport> {
        self.learn_with(episodes, &mut Alone, Some(stop))
    }

    /// `episodes_per_update` episodes.
    fn episodes_per_update(&self) -> Option<usize> {
        Some(self.config.episodes_per_update)
    }
    fn policy(&self) -> Option<Box<dyn shoal_rl_core::Policy>> {
        Some(Box::new(self.frozen_policy()))
    }

    fn evaluate(&mut self, episodes: usize, seed: u64) -> Result<EvalReport> {
        let policy = self.frozen_policy();
        evaluate_policy(&mut self.eval_env, &policy, episodes, seed, None)
    }

    fn save_state(&self) -> Vec<u8> {
        STATE_FORMAT.write(
            &self.state_dims(),
            &ReinforceState {
                policy: self.policy.save_state(),
                value: self.value.save_state(),
                running_mean: self.running_mean,
                episodes: self.episodes,
                env_steps: self.env_steps,
            },
        )
    }

    fn load_state(&mut self, bytes: &[u8]) -> Result<()> {
        let state: ReinforceState = if bytes.starts_with(&STATE_FORMAT.magic) {
            STATE_FORMAT.read(bytes, &self.state_dims())?.0
        } else {
            // Written before the state had a header (format 0): the same
            // fields, bare; a wrong shape is still caught by the networks.
            postcard::from_bytes(bytes).map_err(|e| STATE_FORMAT.unreadable(&e.to_string()))?
        };
        let (mut policy, mut value) = (self.policy.clone(), self.value.clone());
        policy.load_state(&state.policy)?;
        value.load_state(&state.value)?;
        self.policy = policy;
        self.value = value;
        self.running_mean = state.running_mean;
        self.episodes = state.episodes;
        self.env_steps = state.env_steps;
        Ok(())
    }
}

impl<E: Env> GradientLearner for Reinforce<E> {
    fn parameters(&self) -> Vec<f32> {
        let mut flat = self.policy.parameters();
        flat.extend(self.value.parameters());
        flat
    }

    fn set_parameters(&mut self, params: &[f32]) -> Result<()> {
        let sizes = [
            self.policy.module().num_params(),
            self.value.module().num_params(),
        ];
        let parts = split_parameters(params, &sizes, "the policy and value network")?;
        let (mut policy, mut value) = (self.policy.clone(), self.value.clone());
        policy.set_parameters(parts[0])?;
        value.set_parameters(parts[1])?;
        self.policy = policy;
        self.value = value;
        Ok(())
    }

    fn learn_averaged(
        &mut self,
        episodes: usize,
        reducer: &mut dyn MeanReducer,
    ) -> Result<LearnReport> {
        self.learn_with(episodes, reducer, None)
    }
}

crate::rollout::impl_rollout_learner!(Reinforce);

#[cfg(test)]
mod tests {
    use shoal_rl_core::{Error, GradientLearner, Learner, RolloutLearner};
    use shoal_rl_env::{PointReach, PointReachConfig};

    use super::*;
    use shoal_rl_policy::digamma;

    use crate::testutil::{
        Recording, adam_first_step, assert_all_close, mlp_f64, negate, numeric_gradient,
    };

    fn toy(seed: u64, config: ReinforceConfig) -> Reinforce<PointReach> {
        let env = || PointReach::new(PointReachConfig::default()).unwrap();
        Reinforce::new(config, env(), env(), seed).unwrap()
    }

    fn fast() -> ReinforceConfig {
        ReinforceConfig {
            learning_rate: 3e-2,
            hidden: vec![32],
            episodes_per_update: 8,
            ..ReinforceConfig::default()
        }
    }

    #[test]
    fn learns_to_reach_the_point() {
        // A random policy returns about −14 on PointReach, the greedy one −1.2.
        let mut agent = toy(0, fast());
        let before = agent.evaluate(20, 99).unwrap().return_mean;
        agent.learn(400).unwrap();
        let after = agent.evaluate(20, 99).unwrap().return_mean;
        assert!(
            after > -4.0,
            "after 400 episodes: {after:.2} (before {before:.2})"
        );
        assert!(after - before > 4.0, "before {before:.2}, after {after:.2}");
    }

    #[test]
    fn every_baseline_learns_where_no_baseline_does_not() {
        // Raw advantages (not standardised, which would cancel any constant
        // baseline) and one episode per update: every return on PointReach
        // is negative, so without a baseline each update mostly lowers the
        // probability of whatever was done. A working baseline centres the
        // returns. Measured after 400 episodes on seeds 1–4 (greedy −1.2,
        // random −14): value −1.6 to −1.8, running mean −1.9 to −2.2, none
        // −7.9 to −11.4.
        let after = |baseline, seed| {
            let config = ReinforceConfig {
                baseline,
                normalize_advantages: false,
                episodes_per_update: 1,
                learning_rate: 1e-2,
                value_learning_rate: 0.1,
                hidden: vec![32],
                ..ReinforceConfig::default()
            };
            let mut agent = toy(seed, config);
            agent.learn(400).unwrap();
            agent.evaluate(20, 5).unwrap().return_mean
        };
        for seed in [1, 2] {
            let none = after(Baseline::None, seed);
            assert!(none < -6.0, "seed {seed}: no baseline reached {none:.2}");
            for baseline in [Baseline::Value, Baseline::RunningMean] {
                let learned = after(baseline, seed);
                assert!(
                    learned > -3.0,
                    "seed {seed}, {baseline:?}: {learned:.2} (none {none:.2})"
                );
            }
        }
    }

    #[test]
    fn same_seed_same_training_and_resume_matches() {
        let mut a = toy(3, fast());
        let mut b = toy(3, fast());
        let ra = a.learn(48).unwrap();
        let rb = b.learn(24).unwrap();
        // b is saved, restored into a fresh agent, and continues.
        let mut c = toy(3, fast());
        c.load_state(&b.save_state()).unwrap();
        let rc = c.learn(24).unwrap();
        let mut joined = rb.episode_returns.clone();
        joined.extend(rc.episode_returns);
        assert_eq!(ra.episode_returns, joined);
        assert_eq!(
            GradientLearner::parameters(&a),
            GradientLearner::parameters(&c)
        );
    }

    /// The policy and value gradients of one REINFORCE update on `rollouts`,
    /// from the textbook losses differentiated numerically in f64:
    /// `−(1/n) Σ [Â_t log Beta(x_t; α(s_t), β(s_t)) + c_H · H(α(s_t), β(s_t))]`
    /// with `Â` the standardised `G_t − V(s_t)`, and `(1/n) Σ (V(s_t) − G_t)²`.
    fn oracle_gradients(
        agent: &Reinforce<PointReach>,
        rollouts: &[Rollout],
        hidden: &[usize],
    ) -> (Vec<f64>, Vec<f64>) {
        let widen = |v: Vec<f32>| v.into_iter().map(f64::from).collect::<Vec<_>>();
        let policy = widen(agent.policy.parameters());
        let value = widen(agent.value.parameters());
        let (obs_dim, act_dim, gamma) = (agent.obs_dim, agent.act_dim, agent.config.gamma);
        let entropy_coef = agent.config.entropy_coef;
        let sizes = |out: usize| [&[obs_dim][..], hidden, &[out]].concat();
        let v = |theta: &[f64], s: &[f32]| mlp_f64(theta, &sizes(1), &widen(s.to_vec()))[0];
        let (mut steps, mut returns) = (Vec::new(), Vec::new());
        for r in rollouts {
            let mut tail = if r.truncated {
                v(&value, &r.final_obs)
            } else {
                0.0
            };
            let mut g = vec![0.0; r.rewards.len()];
            for t in (0..g.len()).rev() {
                tail = r.rewards[t] as f64 + gamma * tail;
                g[t] = tail;
            }
            returns.extend(g);
            for t in 0..r.rewards.len() {
                steps.push((
                    &r.obs[t * obs_dim..(t + 1) * obs_dim],
                    &r.unit_actions[t * act_dim..(t + 1) * act_dim],
                ));
            }
        }
        let n = steps.len() as f64;
        let raw: Vec<f64> = steps
            .iter()
            .zip(&returns)
            .map(|((s, _), g)| g - v(&value, s))
            .collect();
        let mean = raw.iter().sum::<f64>() / n;
        let std = (raw.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / n).sqrt();
        let advantages: Vec<f64> = raw.iter().map(|a| (a - mean) / (std + 1e-8)).collect();
        let softplus = |z: f64| z.exp().ln_1p();
        let policy_loss = |theta: &[f64]| {
            let mut sum = 0.0;
            for ((s, x), adv) in steps.iter().zip(&advantages) {
                let out = mlp_f64(theta, &sizes(2 * act_dim), &widen(s.to_vec()));
                for j in 0..act_dim {
                    let (a, b, x) = (
                        1.0 + softplus(out[j]),
                        1.0 + softplus(out[act_dim + j]),
                        x[j] as f64,
                    );
                    let ln_b = shoal_rl_policy::lgamma(a) + shoal_rl_policy::lgamma(b)
                        - shoal_rl_policy::lgamma(a + b);
                    let log_p = (a - 1.0) * x.ln() + (b - 1.0) * (1.0 - x).ln() - ln_b;
                    // The Beta's differential entropy, from its definition.
                    let (da, db, dab) = (digamma(a), digamma(b), digamma(a + b));
                    let entropy = ln_b - (a - 1.0) * da - (b - 1.0) * db + (a + b - 2.0) * dab;
                    sum += adv * log_p + entropy_coef * entropy;
                }
            }
            -sum / n
        };
        let value_loss = |theta: &[f64]| {
            steps
                .iter()
                .zip(&returns)
                .map(|((s, _), g)| (v(theta, s) - g).powi(2))
                .sum::<f64>()
                / n
        };
        (
            numeric_gradient(&policy, policy_loss),
            numeric_gradient(&value, value_loss),
        )
    }

    #[test]
    fn one_update_sends_the_textbook_gradient_through_the_reducer_and_steps_with_its_answer() {
        // A tiny net, one update of 8 episodes, and the value baseline
        // (bootstrapped truncations and standardised advantages included),
        // with an entropy bonus whose sign the oracle fixes.
        let config = ReinforceConfig {
            hidden: vec![4],
            entropy_coef: 0.05,
            ..fast()
        };
        let mut plain = toy(4, config.clone());
        let before = GradientLearner::parameters(&plain);
        let (policy_lr, value_lr) = (config.learning_rate, config.value_learning_rate);

        // The oracle sees the same rollouts: collection is seeded per episode.
        let mut twin = toy(4, config.clone());
        let (rollouts, _) = twin.collect(8).unwrap();
        assert!(rollouts.iter().any(|r| r.truncated));
        let (policy_grad, value_grad) = oracle_gradients(&twin, &rollouts, &config.hidden);

        let mut recorded = Recording::identity();
        let mut averaged = toy(4, config.clone());
        averaged.learn_averaged(8, &mut recorded).unwrap();
        assert_eq!(recorded.messages.len(), 1, "one message per update");
        let sent = &recorded.messages[0];
        let split = policy_grad.len();
        assert_eq!(sent.len(), split + value_grad.len());
        let scale = |g: &[f64]| g.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        assert_all_close(
            &sent[..split],
            &policy_grad,
            1e-4 * scale(&policy_grad),
            "policy gradient",
        );
        assert_all_close(
            &sent[split..],
            &value_grad,
            1e-4 * scale(&value_grad),
            "value gradient",
        );

        // Plain learning takes Adam's first step (each net clipped to
        // max_grad_norm on its own) on exactly that gradient.
        plain.learn(8).unwrap();
        let after = GradientLearner::parameters(&plain);
        let clip = Some(config.max_grad_norm);
        let mut expected = adam_first_step(&before[..split], &sent[..split], policy_lr, clip);
        expected.extend(adam_first_step(
            &before[split..],
            &sent[split..],
            value_lr,
            clip,
        ));
        assert_all_close(&after, &expected, 1e-6, "parameters after one update");
        assert_eq!(GradientLearner::parameters(&averaged), after);

        // A reducer that answers with the negated gradient sends every
        // parameter the other way: the step uses the reducer's answer.
        let mut negating = Recording::tampering(|_, values| negate(values));
        let mut reversed = toy(4, config.clone());
        reversed.learn_averaged(8, &mut negating).unwrap();
        let backwards: Vec<f64> = before
            .iter()
            .zip(&expected)
            .map(|(b, e)| 2.0 * *b as f64 - e)
            .collect();
        assert_all_close(
            &GradientLearner::parameters(&reversed),
            &backwards,
            1e-6,
            "negated step",
        );
    }

    #[test]
    fn collect_then_update_equals_learn() {
        let mut a = toy(5, fast());
        let mut b = toy(5, fast());
        a.learn(8).unwrap();
        let (rollout, _) = RolloutLearner::collect(&mut b, 8).unwrap();
        RolloutLearner::update(&mut b, &[rollout]).unwrap();
        assert_eq!(
            RolloutLearner::parameters(&a),
            RolloutLearner::parameters(&b)
        );
    }

    #[test]
    fn bad_configs_and_states_are_rejected() {
        let env = || PointReach::new(PointReachConfig::default()).unwrap();
        let bad = ReinforceConfig {
            gamma: 1.5,
            ..fast()
        };
        assert!(matches!(
            Reinforce::new(bad, env(), env(), 0),
            Err(Error::Config(m)) if m == "reinforce gamma must be in [0, 1], got 1.5"
        ));
        let mut agent = toy(0, fast());
        let mut state = agent.save_state();
        state.truncate(state.len() / 2);
        let before = GradientLearner::parameters(&agent);
        assert!(matches!(
            agent.load_state(&state),
            Err(Error::Shape(m)) if m.starts_with("REINFORCE state is unreadable: ")
        ));
        assert_eq!(
            before,
            GradientLearner::parameters(&agent),
            "a failed load changes nothing"
        );
    }

    #[test]
    fn states_carry_a_version_and_older_bare_states_still_load() {
        let mut trained = toy(3, fast());
        trained.learn(16).unwrap();
        let state = trained.save_state();
        assert!(state.starts_with(b"shoalRFS"), "the header leads");

        // Before the header, a state was the fields alone: it still loads.
        let bare = postcard::to_stdvec(&ReinforceState {
            policy: trained.policy.save_state(),
            value: trained.value.save_state(),
            running_mean: trained.running_mean,
            episodes: trained.episodes,
            env_steps: trained.env_steps,
        })
        .unwrap();
        let (mut from_bare, mut from_versioned) = (toy(0, fast()), toy(0, fast()));
        from_bare.load_state(&bare).unwrap();
        from_versioned.load_state(&state).unwrap();
        assert_eq!(from_bare.episodes(), 16);
        assert!(
            GradientLearner::parameters(&from_bare) == GradientLearner::parameters(&trained),
            "the bare state restores the networks"
        );
        assert!(
            from_bare.learn(8).unwrap() == from_versioned.learn(8).unwrap(),
            "and trains on as the versioned one does"
        );

        // A later format is refused in one line, naming both versions.
        let mut future = state.clone();
        future[8] = 2; // postcard's varint of the version, right after the magic
        assert_eq!(
            toy(0, fast()).load_state(&future).unwrap_err().to_string(),
            "shape mismatch: REINFORCE state has format version 2, this build reads version 1"
        );
        // So is a state of another task's shape.
        let env = || {
            PointReach::new(PointReachConfig {
                dim: 2,
                ..PointReachConfig::default()
            })
            .unwrap()
        };
        let mut other = Reinforce::new(fast(), env(), env(), 0).unwrap();
        let err = other.load_state(&state).unwrap_err().to_string();
        assert!(err.contains("REINFORCE state holds"), "{err}");
    }
}
