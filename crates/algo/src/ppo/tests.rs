use shoal_rl_core::{Error, GradientLearner, Learner, RolloutLearner};
use shoal_rl_env::{PointReach, PointReachConfig};
use shoal_rl_policy::{digamma, lgamma};

use super::*;
use crate::testutil::{assert_all_close, mlp_f64, numeric_gradient, two_workers};

fn toy_env() -> PointReach {
    PointReach::new(PointReachConfig::default()).unwrap()
}

fn toy(seed: u64, config: PpoConfig) -> Ppo<PointReach> {
    Ppo::new(config, toy_env(), toy_env(), seed).unwrap()
}

fn fast() -> PpoConfig {
    PpoConfig {
        episodes_per_rollout: 8,
        minibatches: 4,
        hidden: vec![32],
        learning_rate: 3e-3,
        ..PpoConfig::default()
    }
}

#[test]
fn the_learning_rate_anneals_over_an_env_step_budget_from_the_full_rate() {
    // Rollouts of 8 point-reach episodes, all of one length: s steps an
    // update. Over 4s steps the rate is 3e-3 × (1, 3/4, 1/2, 1/4).
    let per_update = toy(0, fast()).learn(8).unwrap().env_steps();
    let mut ppo = toy(0, fast()).anneal_over_env_steps(4 * per_update);
    let mut rates = Vec::new();
    for _ in 0..4 {
        assert_eq!(ppo.learn(8).unwrap().env_steps(), per_update);
        rates.push(ppo.policy.learning_rate);
    }
    for (rate, by_hand) in rates.iter().zip([3e-3, 2.25e-3, 1.5e-3, 0.75e-3]) {
        assert!((rate - by_hand).abs() < 1e-12, "{rates:?}");
    }
    // By episodes, as before: 16 episodes, so 3e-3 × (1, 1/2).
    let mut ppo = toy(0, fast()).anneal_over(16);
    ppo.learn(16).unwrap();
    assert!((ppo.policy.learning_rate - 1.5e-3).abs() < 1e-12);
}

// ---- GAE against its definition ----

/// `Â_t = Σ_l (γλ)^l δ_{t+l}`, summed forward from the definition.
fn gae_by_definition(
    rewards: &[f64],
    values: &[f64],
    bootstrap: f64,
    gamma: f64,
    lambda: f64,
) -> Vec<f64> {
    let next = |t: usize| {
        if t + 1 < values.len() {
            values[t + 1]
        } else {
            bootstrap
        }
    };
    let delta: Vec<f64> = (0..rewards.len())
        .map(|t| rewards[t] + gamma * next(t) - values[t])
        .collect();
    (0..rewards.len())
        .map(|t| {
            (t..rewards.len())
                .map(|u| (gamma * lambda).powi((u - t) as i32) * delta[u])
                .sum()
        })
        .collect()
}

#[test]
fn gae_and_value_targets_match_the_definition() {
    let rewards = [1.0, -0.5, 2.0, 0.25];
    let values = [0.3, -0.1, 0.8, 0.5];
    for (bootstrap, gamma, lambda) in [(0.7, 0.9, 0.8), (0.0, 0.99, 0.95), (1.5, 0.5, 0.0)] {
        let (advantages, targets) = gae(&rewards, &values, bootstrap, gamma, lambda);
        let expected = gae_by_definition(&rewards, &values, bootstrap, gamma, lambda);
        for t in 0..4 {
            assert!((advantages[t] - expected[t]).abs() < 1e-12, "Â_{t}");
            assert!((targets[t] - (expected[t] + values[t])).abs() < 1e-12);
        }
    }
    // λ = 1: the target is the discounted return with the bootstrap.
    let (_, targets) = gae(&rewards, &values, 0.7, 0.9, 1.0);
    let monte_carlo = 1.0 + 0.9 * (-0.5 + 0.9 * (2.0 + 0.9 * (0.25 + 0.9 * 0.7)));
    assert!((targets[0] - monte_carlo).abs() < 1e-12);
    // λ = 0: one-step TD.
    let (advantages, _) = gae(&rewards, &values, 0.7, 0.9, 0.0);
    assert!((advantages[1] - (-0.5 + 0.9 * 0.8 + 0.1)).abs() < 1e-12);
}

// ---- one minibatch's losses and gradients against an f64 oracle ----

fn softplus64(z: f64) -> f64 {
    z.exp().ln_1p()
}

/// The PPO losses of `rows`, written from the paper in f64:
/// `−mean(min(ρÂ, clip(ρ)Â)) − c·mean(Σ_j H_j)` with `Â` standardised
/// (unbiased std) and `½·mean(max((V − R)², (V_old + clip(V − V_old) − R)²))`.
struct Oracle<'a> {
    kind: PolicyKind,
    config: &'a PpoConfig,
    batch: &'a Batch,
    rows: &'a [usize],
    obs_dim: usize,
    act_dim: usize,
}

impl Oracle<'_> {
    fn sizes(&self, out: usize) -> Vec<usize> {
        [&[self.obs_dim][..], &self.config.hidden, &[out]].concat()
    }

    fn obs(&self, i: usize) -> Vec<f64> {
        self.batch.obs[i * self.obs_dim..(i + 1) * self.obs_dim]
            .iter()
            .map(|v| *v as f64)
            .collect()
    }

    /// (log-density, entropy) of row `i`'s draws under parameters `theta`.
    fn density(&self, theta: &[f64], i: usize) -> (f64, f64) {
        let out = mlp_f64(theta, &self.sizes(2 * self.act_dim), &self.obs(i));
        let (mut log_p, mut entropy) = (0.0, 0.0);
        for j in 0..self.act_dim {
            let x = self.batch.draws[i * self.act_dim + j] as f64;
            let (za, zb) = (out[j], out[self.act_dim + j]);
            match self.kind {
                PolicyKind::Beta => {
                    let (a, b) = (1.0 + softplus64(za), 1.0 + softplus64(zb));
                    let ln_b = lgamma(a) + lgamma(b) - lgamma(a + b);
                    log_p += (a - 1.0) * x.ln() + (b - 1.0) * (1.0 - x).ln() - ln_b;
                    entropy += ln_b - (a - 1.0) * digamma(a) - (b - 1.0) * digamma(b)
                        + (a + b - 2.0) * digamma(a + b);
                }
                _ => {
                    let s = zb.clamp(-5.0, 2.0);
                    let pi = std::f64::consts::PI;
                    log_p += -0.5 * ((x - za) / s.exp()).powi(2) - s - 0.5 * (2.0 * pi).ln();
                    entropy += s + 0.5 * (2.0 * pi * std::f64::consts::E).ln();
                }
            }
        }
        (log_p, entropy)
    }

    fn advantages(&self) -> Vec<f64> {
        let raw: Vec<f64> = self
            .rows
            .iter()
            .map(|&i| self.batch.advantages[i])
            .collect();
        let n = raw.len() as f64;
        let mean = raw.iter().sum::<f64>() / n;
        let std = (raw.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
        raw.iter().map(|a| (a - mean) / (std + 1e-8)).collect()
    }

    /// (clipped surrogate, the same plus the entropy bonus).
    fn policy_loss(&self, theta: &[f64]) -> (f64, f64) {
        let eps = self.config.clip_range;
        let (mut surrogate, mut entropy) = (0.0, 0.0);
        for (&i, adv) in self.rows.iter().zip(self.advantages()) {
            let (log_p, h) = self.density(theta, i);
            let ratio = (log_p - self.batch.log_prob_old[i]).exp();
            surrogate += (ratio * adv).min(ratio.clamp(1.0 - eps, 1.0 + eps) * adv);
            entropy += h;
        }
        let n = self.rows.len() as f64;
        (
            -surrogate / n,
            -surrogate / n - self.config.entropy_coef * entropy / n,
        )
    }

    fn value_loss(&self, phi: &[f64]) -> f64 {
        let c = self.config.value_clip_range;
        let total: f64 = self
            .rows
            .iter()
            .map(|&i| {
                let v = mlp_f64(phi, &self.sizes(1), &self.obs(i))[0];
                let (old, target) = (self.batch.values_old[i], self.batch.targets[i]);
                let held = old + (v - old).clamp(-c, c);
                (v - target).powi(2).max((held - target).powi(2))
            })
            .sum();
        0.5 * total / self.rows.len() as f64
    }
}

#[test]
fn minibatch_losses_and_gradients_match_the_paper_in_f64() {
    for kind in [PolicyKind::Beta, PolicyKind::GaussianClip] {
        let config = PpoConfig {
            hidden: vec![4],
            policy: kind,
            entropy_coef: 0.1,
            value_clip_range: 0.2,
            ..fast()
        };
        let mut agent = toy(6, config.clone());
        let (rollouts, _) = agent.collect(2).unwrap();
        let mut batch = agent.prepare(&rollouts, false, &mut Alone).unwrap();
        // Old log-densities pushed off the current ones, so every
        // branch of the clipped objective is taken: ratios e^±0.5 lie
        // outside [0.8, 1.2] and e^±0.05 inside, with advantages of
        // both signs; old values ±0.5 away put the value clip to work.
        for i in 0..batch.len() {
            batch.log_prob_old[i] += [0.5, -0.5, 0.05, -0.05][i % 4];
            batch.values_old[i] = batch.targets[i] + [0.5, -0.5, 0.0][i % 3];
            batch.advantages[i] = [1.0, -2.0, 0.5, 3.0, -1.0][i % 5] + 0.01 * i as f64;
        }
        let rows: Vec<usize> = (0..batch.len()).step_by(3).collect();
        let (grads, stats) = agent.minibatch_gradients(&batch, &rows);

        let oracle = Oracle {
            kind,
            config: &config,
            batch: &batch,
            rows: &rows,
            obs_dim: agent.obs_dim,
            act_dim: agent.act_dim,
        };
        let widen = |v: Vec<f32>| v.into_iter().map(f64::from).collect::<Vec<_>>();
        let (theta, phi) = (
            widen(agent.policy.parameters()),
            widen(agent.value.parameters()),
        );
        let (surrogate, _) = oracle.policy_loss(&theta);
        assert!(
            (stats.policy_loss - surrogate).abs() < 1e-5,
            "{kind:?}: surrogate"
        );
        assert!(
            (stats.value_loss - oracle.value_loss(&phi)).abs() < 1e-4,
            "{kind:?}: value loss"
        );
        let clipped = rows
            .iter()
            .filter(|&&i| {
                (oracle.density(&theta, i).0 - batch.log_prob_old[i]).abs() > 0.2f64.ln_1p()
            })
            .count();
        assert!(
            clipped > 0 && stats.clip_fraction > 0.0,
            "{kind:?}: some ratios leave the range"
        );

        let policy_grad = numeric_gradient(&theta, |t| oracle.policy_loss(t).1);
        let value_grad = numeric_gradient(&phi, |p| oracle.value_loss(p));
        let scale = |g: &[f64]| g.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let split = theta.len();
        assert_eq!(grads.len(), split + phi.len());
        assert_all_close(
            &grads[..split],
            &policy_grad,
            1e-3 * scale(&policy_grad),
            "policy gradient",
        );
        assert_all_close(
            &grads[split..],
            &value_grad,
            1e-3 * scale(&value_grad),
            "value gradient",
        );
    }
}

#[test]
fn advantages_are_standardised_within_each_minibatch() {
    // Scaling and shifting every advantage leaves a standardised
    // minibatch's gradient unchanged, and changes an unstandardised one.
    let gradient = |normalize, shift: f64, scale: f64| {
        let config = PpoConfig {
            hidden: vec![4],
            normalize_advantages: normalize,
            ..fast()
        };
        let mut agent = toy(2, config);
        let (rollouts, _) = agent.collect(2).unwrap();
        let mut batch = agent.prepare(&rollouts, false, &mut Alone).unwrap();
        batch
            .advantages
            .iter_mut()
            .for_each(|a| *a = *a * scale + shift);
        let rows: Vec<usize> = (0..batch.len()).collect();
        agent.minibatch_gradients(&batch, &rows).0
    };
    let base = gradient(true, 0.0, 1.0);
    let moved: Vec<f64> = gradient(true, 5.0, 3.0)
        .into_iter()
        .map(f64::from)
        .collect();
    let scale = base.iter().fold(0.0f32, |m, v| m.max(v.abs())) as f64;
    assert_all_close(&base, &moved, 1e-4 * scale, "standardised gradient");
    assert_ne!(gradient(false, 0.0, 1.0), gradient(false, 5.0, 3.0));
}

// ---- learning, determinism, parallel paths ----

#[test]
fn learns_to_reach_the_point() {
    // A random policy returns about −14 on PointReach, the greedy one −1.2.
    let mut agent = toy(0, fast());
    let before = agent.evaluate(20, 99).unwrap().return_mean;
    agent.learn(400).unwrap();
    let after = agent.evaluate(20, 99).unwrap().return_mean;
    assert!(
        after > -2.5,
        "after 400 episodes: {after:.2} (before {before:.2})"
    );
}

#[test]
fn same_seed_same_training_and_resume_matches() {
    let mut a = toy(3, fast());
    let mut b = toy(3, fast());
    let ra = a.learn(48).unwrap();
    let rb = b.learn(24).unwrap();
    let mut c = toy(3, fast());
    c.load_state(&b.save_state()).unwrap();
    let rc = c.learn(24).unwrap();
    let mut joined = rb.episode_returns.clone();
    joined.extend(rc.episode_returns);
    assert_eq!(ra.episode_returns, joined);
    assert!(GradientLearner::parameters(&a) == GradientLearner::parameters(&c));
    assert!(
        a.observations == c.observations && a.returns == c.returns,
        "statistics too"
    );
    // And the optimisers: both go on to take the same steps.
    a.learn(8).unwrap();
    c.learn(8).unwrap();
    assert!(GradientLearner::parameters(&a) == GradientLearner::parameters(&c));
}

#[test]
fn gathered_rollouts_update_as_one_learner_learns() {
    let mut a = toy(5, fast());
    let mut b = toy(5, fast());
    a.learn(8).unwrap();
    let (rollout, _) = RolloutLearner::collect(&mut b, 8).unwrap();
    RolloutLearner::update(&mut b, &[rollout]).unwrap();
    assert!(GradientLearner::parameters(&a) == GradientLearner::parameters(&b));
    assert!(a.observations == b.observations && a.returns == b.returns);
    // A worker that adopts the parameters acts with the same statistics.
    let mut worker = toy(9, fast());
    RolloutLearner::set_parameters(&mut worker, &RolloutLearner::parameters(&b)).unwrap();
    assert_eq!(worker.observations.in_use(), b.observations.in_use());
    assert_eq!(
        worker.frozen_policy().act(&[0.3, -0.2]),
        b.frozen_policy().act(&[0.3, -0.2])
    );
}

#[test]
fn two_averaging_workers_stay_identical() {
    let config = PpoConfig {
        target_kl: 0.01,
        ..fast()
    };
    let start = GradientLearner::parameters(&toy(10, config.clone()));
    let states = two_workers(|rank, reducer| {
        // Each worker plays its own episodes from the shared start.
        let mut agent = toy(10 + rank as u64, config.clone());
        GradientLearner::set_parameters(&mut agent, &start).unwrap();
        agent.learn_averaged(16, reducer).unwrap();
        (
            GradientLearner::parameters(&agent),
            agent.observations.clone(),
            agent.returns.clone(),
        )
    });
    assert!(states[0].0 == states[1].0, "parameters differ");
    assert!(states[0].1 == states[1].1, "observation statistics differ");
    assert!(states[0].2 == states[1].2, "return statistics differ");
    assert!(states[0].0 != start, "and they learned");
}

#[test]
fn a_gaussian_policy_learns_too() {
    for policy in [PolicyKind::GaussianClip, PolicyKind::GaussianTanh] {
        let mut agent = toy(1, PpoConfig { policy, ..fast() });
        agent.learn(400).unwrap();
        let after = agent.evaluate(20, 99).unwrap().return_mean;
        assert!(after > -3.0, "{policy:?}: {after:.2}");
    }
}

#[test]
fn bad_configs_states_and_rollouts_are_rejected() {
    let bad = PpoConfig {
        gae_lambda: 1.5,
        ..fast()
    };
    assert!(matches!(
        Ppo::new(bad, toy_env(), toy_env(), 0),
        Err(Error::Config(m)) if m == "ppo gae_lambda must be in [0, 1], got 1.5"
    ));
    let mut agent = toy(0, fast());
    agent.learn(8).unwrap();
    let mut state = agent.save_state();
    let before = agent.save_state();
    state.truncate(state.len() / 2);
    assert!(agent.load_state(&state).is_err());
    assert_eq!(agent.save_state(), before, "a failed load changes nothing");

    let two_d = || PointReach::new(PointReachConfig::default().dim(2)).unwrap();
    let mut other = Ppo::new(fast(), two_d(), two_d(), 0).unwrap();
    let err = other.load_state(&before).unwrap_err().to_string();
    assert!(err.contains("PPO state holds"), "{err}");

    let (bytes, _) = RolloutLearner::collect(&mut other, 1).unwrap();
    let err = RolloutLearner::update(&mut agent, &[bytes])
        .unwrap_err()
        .to_string();
    assert!(err.contains("does not fit observations of 2"), "{err}");
    assert!(GradientLearner::set_parameters(&mut agent, &[0.0; 3]).is_err());
}

// ---- step-sized rollouts ----

fn in_steps(steps_per_rollout: usize) -> PpoConfig {
    PpoConfig {
        steps_per_rollout,
        ..fast()
    }
}

#[test]
fn step_sized_rollouts_update_every_n_steps_and_carry_the_rest() {
    // Point-reach episodes last 20 steps. With 48-step rollouts, 7 episodes
    // (140 steps) update at steps 48 and 96, the second cut inside episode
    // 4 (steps 80–99), and leave its last 4 steps and episodes 5–6 waiting.
    let mut agent = toy(0, in_steps(48));
    assert_eq!(agent.episodes_per_update(), None);
    let report = agent.learn(7).unwrap();
    assert_eq!(report.episode_lengths, vec![20; 7]);
    assert_eq!(agent.updates, 2);
    let waiting: Vec<usize> = agent.pending.iter().map(Rollout::len).collect();
    assert_eq!(waiting, vec![4, 20, 20]);
    assert!(report.scalars.iter().any(|(k, _)| k == "losses/policy"));
    // One more episode (160 steps) crosses 144: an update, 16 left.
    agent.learn(1).unwrap();
    assert_eq!(agent.updates, 3);
    assert_eq!(agent.pending.iter().map(Rollout::len).sum::<usize>(), 16);
    assert_eq!(agent.env_steps, 160);
}

#[test]
fn reward_scaling_runs_the_discounted_return_on_across_a_cut() {
    // γ = 0.5 and rewards of 1: an episode's discounted returns are 1, 1.5,
    // 1.75, 1.875, 1.9375, whether or not an update cuts it after step 3.
    let config = PpoConfig {
        gamma: 0.5,
        ..in_steps(48)
    };
    let piece = |steps: usize| Rollout {
        rewards: vec![1.0; steps],
        ..Rollout::default()
    };
    let mut cut = toy(0, config.clone());
    cut.scaled_rewards(&[piece(3)], true, &mut Alone).unwrap();
    assert_eq!(cut.cut_return, 1.75);
    cut.scaled_rewards(&[piece(2), piece(1)], false, &mut Alone)
        .unwrap();
    assert_eq!(cut.cut_return, 0.0);
    let mut whole = toy(0, config);
    whole
        .scaled_rewards(&[piece(5), piece(1)], false, &mut Alone)
        .unwrap();
    // The returns of both episodes, as SB3's VecNormalize sees them.
    let seen = [1.0, 1.5, 1.75, 1.875, 1.9375, 1.0_f64];
    let mean = seen.iter().sum::<f64>() / 6.0;
    let std = (seen.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / 6.0).sqrt();
    for agent in [&cut, &whole] {
        assert!((agent.returns.mean()[0] as f64 - mean).abs() < 1e-6);
        assert!((agent.returns.std()[0] as f64 - std).abs() < 1e-5);
    }
}

#[test]
fn step_sized_rollouts_resume_exactly_with_the_steps_waiting() {
    let mut whole = toy(4, in_steps(50));
    let uninterrupted = whole.learn(9).unwrap();
    let mut first = toy(4, in_steps(50));
    let mut returns = first.learn(4).unwrap().episode_returns;
    assert!(
        !first.pending.is_empty(),
        "the test must stop between updates"
    );
    let mut resumed = toy(4, in_steps(50));
    resumed.load_state(&first.save_state()).unwrap();
    returns.extend(resumed.learn(5).unwrap().episode_returns);
    assert_eq!(returns, uninterrupted.episode_returns);
    assert!(GradientLearner::parameters(&whole) == GradientLearner::parameters(&resumed));
    assert_eq!(whole.save_state(), resumed.save_state());
}

#[test]
fn step_sized_rollouts_learn_to_reach_the_point() {
    // 150-step rollouts: most updates cut an episode.
    let mut agent = toy(0, in_steps(150));
    agent.learn(400).unwrap();
    let after = agent.evaluate(20, 99).unwrap().return_mean;
    assert!(after > -2.5, "after 400 episodes: {after:.2}");
}

#[test]
fn step_sized_rollouts_are_refused_where_whole_episodes_are_scheduled() {
    let err = Ppo::new(in_steps(2), toy_env(), toy_env(), 0)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("at least minibatches (4), got 2"), "{err}");
    let mut agent = toy(0, in_steps(48));
    let err = agent.learn_averaged(2, &mut Alone).unwrap_err().to_string();
    assert!(
        err.contains("steps_per_rollout is 48, but gradient averaging schedules whole episodes"),
        "{err}"
    );
    let err = RolloutLearner::collect(&mut agent, 2)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("rollout gathering schedules whole episodes"),
        "{err}"
    );
    // Steps waiting for a step-sized rollout mean nothing to whole episodes.
    agent.learn(1).unwrap();
    let mut by_episodes = toy(0, fast());
    let before = by_episodes.save_state();
    let err = by_episodes
        .load_state(&agent.save_state())
        .unwrap_err()
        .to_string();
    assert!(err.contains("steps_per_rollout is 0"), "{err}");
    assert_eq!(by_episodes.save_state(), before);
}

/// The fixed-size part of `agent`'s saved state, which every format
/// version starts with.
fn state_of(agent: &Ppo<PointReach>) -> PpoState {
    PpoState {
        policy: agent.policy.save_state(),
        value: agent.value.save_state(),
        observations: agent.observations.clone(),
        returns: agent.returns.clone(),
        episodes: agent.episodes,
        env_steps: agent.env_steps,
        updates: agent.updates,
        episodes_learned: agent.episodes_learned,
    }
}

#[test]
fn a_state_of_format_version_1_still_loads() {
    let mut agent = toy(2, fast());
    agent.learn(8).unwrap();
    let version_1 = Format {
        version: 1,
        ..STATE_FORMAT
    }
    .write(&agent.state_dims(), &state_of(&agent));
    let mut loaded = toy(7, fast());
    loaded.load_state(&version_1).unwrap();
    assert_eq!(loaded.save_state(), agent.save_state());
}

#[test]
fn a_state_of_format_version_2_loads_without_a_cut_return_and_a_nan_one_is_refused() {
    // 4 episodes of 20 steps with 50-step rollouts: the update at step 50
    // cut episode 2, and its last 10 steps wait with episode 3.
    let mut agent = toy(3, in_steps(50));
    agent.learn(4).unwrap();
    assert_eq!(agent.pending[0].len(), 10);
    assert_ne!(agent.cut_return, 0.0);
    let mut version_2 = Format {
        version: 2,
        ..STATE_FORMAT
    }
    .write(&agent.state_dims(), &state_of(&agent));
    version_2.extend(postcard::to_stdvec(&agent.pending).unwrap());
    let mut loaded = toy(7, in_steps(50));
    loaded.load_state(&version_2).unwrap();
    assert_eq!(loaded.pending, agent.pending);
    assert_eq!(loaded.cut_return, 0.0);

    let mut nan = STATE_FORMAT.write(&agent.state_dims(), &state_of(&agent));
    nan.extend(postcard::to_stdvec(&agent.pending).unwrap());
    nan.extend(postcard::to_stdvec(&f64::NAN).unwrap());
    let before = loaded.save_state();
    let err = loaded.load_state(&nan).unwrap_err().to_string();
    assert!(err.contains("cut episode's return is not finite"), "{err}");
    assert_eq!(loaded.save_state(), before);
}
