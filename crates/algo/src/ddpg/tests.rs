use shoal_rl_core::WithoutGoals;
use shoal_rl_env::{PointGoal, PointReach, PointReachConfig};
use shoal_rl_policy::Normalizer;

use super::*;
use crate::testutil::{point_goal, two_workers};

/// Episodes of the test task: long enough to cross the arena.
const STEPS: usize = 25;

/// A small, fast configuration.
fn small() -> DdpgConfig {
    DdpgConfig {
        hidden: vec![32, 32],
        batch_size: 32,
        n_batches: 4,
        buffer_size: 10_000,
        ..DdpgConfig::default()
    }
}

/// Everything in a saved state except the Adam moments, whose bytes
/// follow a hash map's order (their effect shows in later parameters).
type Comparable = (Vec<f32>, Normalizer, Normalizer, [u64; 4]);

fn comparable<E: GoalEnv>(learner: &Ddpg<E>) -> Comparable {
    let state: DdpgState = postcard::from_bytes(&learner.save_state()).unwrap();
    let mut networks = learner.networks().clone();
    networks.load_state(&state.networks).unwrap();
    (
        networks.target_parameters(),
        state.norms.obs,
        state.norms.goal,
        [state.episodes, state.env_steps, state.rounds, state.updates],
    )
}

fn agent(config: DdpgConfig, seed: u64) -> Ddpg<PointGoal> {
    Ddpg::new(config, point_goal(STEPS), point_goal(STEPS), seed).unwrap()
}

/// [`small`] as TD3: twin critics, delayed actor, smoothing noise.
fn small_td3() -> DdpgConfig {
    DdpgConfig {
        n_critics: 2,
        policy_delay: 2,
        target_policy_noise: 0.2,
        target_noise_clip: 0.5,
        ..small()
    }
}

/// [`small`] as SAC: the Gaussian actor, twin critics, a learned
/// temperature, exploration by the policy's own draws.
fn small_sac() -> DdpgConfig {
    DdpgConfig {
        hidden: vec![32, 32],
        batch_size: 32,
        n_batches: 4,
        buffer_size: 10_000,
        ..DdpgConfig::sac()
    }
}

#[test]
fn resumed_sac_run_matches_an_uninterrupted_one_bit_for_bit() {
    assert_resumes_exactly(small_sac());
}

#[test]
fn sac_runs_repeat_exactly_and_carry_log_alpha_after_the_networks() {
    let run = |config: DdpgConfig| {
        let mut learner = agent(config, 8);
        let report = learner.learn(4).unwrap();
        (learner.parameters(), comparable(&learner), report)
    };
    let sac = run(small_sac());
    let again = run(small_sac());
    assert!(again.0 == sac.0 && again.1 == sac.1);
    assert_eq!(again.2, sac.2);
    let sizes = agent(small_sac(), 8).networks().sizes();
    assert_eq!(sizes.len(), 4, "actor, two critics, log α");
    assert_eq!(sac.0.len(), sizes.iter().sum::<usize>());
    // log α is learned: it left ln 1 = 0, and the report shows α.
    let log_alpha = sac.0[sac.0.len() - 1];
    assert!(log_alpha < 0.0, "{log_alpha}");
    let alpha = sac.2.scalars.iter().find(|(k, _)| k == "charts/alpha");
    assert!(
        alpha.is_some_and(|(_, a)| *a > 0.0 && *a <= 1.0),
        "{alpha:?}"
    );
    // α held: log α stays, and the runs differ.
    let fixed = run(DdpgConfig {
        learn_alpha: false,
        ..small_sac()
    });
    assert_eq!(fixed.0[fixed.0.len() - 1], 0.0);
    assert!(fixed.0 != sac.0);
}

#[test]
fn the_frozen_sac_policy_evaluates_the_mean_and_samples_with_the_callers_rng() {
    let mut learner = agent(small_sac(), 3);
    learner.learn(4).unwrap();
    let policy = learner.frozen_policy();
    let obs = [0.1, 0.2, 0.0, 0.0, 0.1, 0.2, 0.3, 0.4];
    let mean = policy.try_act(&obs).unwrap();
    assert_eq!(policy.try_act(&obs).unwrap(), mean);
    let sample = |seed| Policy::try_sample(&policy, &obs, &mut rng_from_seed(seed)).unwrap();
    let (first, again, other) = (sample(5), sample(5), sample(6));
    assert_eq!(first, again, "the caller's seed decides the draw");
    assert!(first != other && first != mean);
    assert!(Space::uniform(2, -1.0, 1.0).contains(&first));
    // By hand: tanh(μ + σ·ε) with ε the first two standard normal
    // draws of the caller's generator.
    let input = policy.input_for(&obs[..4], &obs[6..]).unwrap();
    let FrozenActor::Gaussian(actor) = &policy.actor else {
        panic!("SAC's policy is Gaussian")
    };
    let mut rng = rng_from_seed(5);
    let draws: Vec<f32> = (0..2).map(|_| StandardNormal.sample(&mut rng)).collect();
    let unit = actor.sample_row(&input, &draws, &policy.device);
    assert_eq!(
        policy.unit_sample(&obs, &mut rng_from_seed(5)).unwrap(),
        unit
    );
    assert_eq!(first, policy.action_space.from_symmetric(&unit));
    // DDPG's policy samples its deterministic action.
    let ddpg = agent(small(), 3).frozen_policy();
    let action = ddpg.try_act(&obs).unwrap();
    assert_eq!(
        Policy::try_sample(&ddpg, &obs, &mut rng_from_seed(5)).unwrap(),
        action
    );
}

#[test]
fn resumed_run_matches_an_uninterrupted_one_bit_for_bit() {
    assert_resumes_exactly(small());
}

#[test]
fn resumed_td3_run_matches_an_uninterrupted_one_bit_for_bit() {
    // An odd number of updates per round, so a resumed round starts on
    // an update that leaves the actor alone.
    assert_resumes_exactly(DdpgConfig {
        n_batches: 3,
        ..small_td3()
    });
}

#[test]
fn checkpoints_written_before_td3_and_sac_resume_exactly() {
    // Version 1 (one critic) and version 2 (critics without SAC's
    // temperature), as those builds wrote them.
    for version in [1, 2] {
        assert_resumes_exactly_from(small(), |state| {
            let mut old: DdpgState = postcard::from_bytes(&state).unwrap();
            old.version = version;
            old.networks = crate::actor_critic::in_old_layout(&old.networks, version);
            postcard::to_stdvec(&old).unwrap()
        });
    }
    let td3 = DdpgConfig {
        n_batches: 3,
        ..small_td3()
    };
    assert_resumes_exactly_from(td3, |state| {
        let mut old: DdpgState = postcard::from_bytes(&state).unwrap();
        old.version = 2;
        old.networks = crate::actor_critic::in_old_layout(&old.networks, 2);
        postcard::to_stdvec(&old).unwrap()
    });
}

fn assert_resumes_exactly(config: DdpgConfig) {
    assert_resumes_exactly_from(config, |state| state);
}

/// A run stopped and resumed from its state, passed through `rewrite`
/// (an older build's layout), against the uninterrupted run.
fn assert_resumes_exactly_from(config: DdpgConfig, rewrite: impl Fn(Vec<u8>) -> Vec<u8>) {
    let config = DdpgConfig {
        learning_starts: 1,
        ..config
    };
    let mut uninterrupted = agent(config.clone(), 11);
    let whole = uninterrupted.learn(7).unwrap();

    // Stop mid-cycle (3 of 2-episode cycles), save, restore into a fresh agent.
    let mut first = agent(config.clone(), 11);
    let before = first.learn(3).unwrap();
    let (state, memory) = (rewrite(first.save_state()), first.save_memory().unwrap());
    drop(first);
    let mut resumed = agent(config, 11);
    resumed.load_state(&state).unwrap();
    resumed.load_memory(&memory).unwrap();
    let after = resumed.learn(4).unwrap();

    assert!(resumed.parameters() == uninterrupted.parameters());
    assert_eq!(comparable(&resumed), comparable(&uninterrupted));
    assert!(resumed.save_memory() == uninterrupted.save_memory());
    let returns: Vec<f64> = before
        .episode_returns
        .into_iter()
        .chain(after.episode_returns)
        .collect();
    assert_eq!(returns, whole.episode_returns);
    assert!(uninterrupted.updates() > 0);
}

#[test]
fn td3_runs_repeat_exactly_and_differ_from_ddpg() {
    let run = |config: DdpgConfig| {
        let mut learner = agent(config, 8);
        learner.learn(4).unwrap();
        (learner.parameters(), comparable(&learner))
    };
    let td3 = run(small_td3());
    assert!(run(small_td3()) == td3);
    // The smoothing noise matters: the same run without it differs.
    let unsmoothed = run(DdpgConfig {
        target_policy_noise: 0.0,
        ..small_td3()
    });
    assert!(unsmoothed.0 != td3.0);
    let sizes = agent(small(), 8).networks().sizes();
    assert_eq!(
        td3.0.len(),
        sizes[0] + 2 * sizes[1],
        "actor ‖ critic ‖ critic"
    );
}

#[test]
fn the_actor_after_the_critic_step_is_another_run_that_repeats_exactly() {
    let run = |config: DdpgConfig| {
        let mut learner = agent(config, 8);
        learner.learn(4).unwrap();
        (learner.parameters(), comparable(&learner))
    };
    for base in [small_td3(), small_sac()] {
        let after = DdpgConfig {
            actor_after_critic: true,
            ..base.clone()
        };
        let stepped_first = run(after.clone());
        assert!(run(after) == stepped_first);
        assert!(run(base).0 != stepped_first.0);
    }
}

#[test]
fn td3_steps_the_actor_on_every_second_update_of_the_run() {
    let mut learner = agent(small_td3(), 0);
    let steps_actor: Vec<bool> = (0..5)
        .map(|updates| {
            learner.updates = updates;
            learner.settings().update_actor
        })
        .collect();
    assert_eq!(steps_actor, [false, true, false, true, false]);
    let settings = learner.settings();
    assert_eq!(
        (settings.target_policy_noise, settings.target_noise_clip),
        (0.2, 0.5)
    );
    // DDPG: every update steps the actor, and no noise.
    let mut ddpg = agent(small(), 0);
    for updates in 0..3 {
        ddpg.updates = updates;
        let settings = ddpg.settings();
        assert!(settings.update_actor && settings.target_policy_noise == 0.0);
    }
}

#[test]
fn stepwise_td3_moves_its_targets_with_its_actor_and_ddpg_every_round() {
    let moves = |config: DdpgConfig| -> Vec<bool> {
        let mut learner = agent(
            DdpgConfig {
                train_every: TrainEvery::Step,
                n_batches: 1,
                ..config
            },
            0,
        );
        learner.learn(1).unwrap();
        let mut tally = Tally::default();
        (0..4)
            .map(|_| {
                let before = learner.networks.target_parameters();
                learner.train_round(None, &mut Alone, &mut tally).unwrap();
                learner.networks.target_parameters() != before
            })
            .collect()
    };
    // The actor steps on every second update of the run, whatever the
    // count so far, and the targets move with it.
    let td3 = moves(small_td3());
    assert_eq!(td3.iter().filter(|m| **m).count(), 2, "{td3:?}");
    assert!(
        td3[0] != td3[1] && td3[1] != td3[2] && td3[2] != td3[3],
        "{td3:?}"
    );
    assert_eq!(moves(small()), [true; 4]);
}

#[test]
fn averaged_learning_on_one_worker_equals_plain_learning() {
    let config = DdpgConfig {
        train_every: TrainEvery::Episode,
        ..small()
    };
    let mut plain = agent(config.clone(), 3);
    let mut averaged = agent(config, 3);
    plain.learn(3).unwrap();
    averaged.learn_averaged(3, &mut Alone).unwrap();
    assert!(plain.parameters() == averaged.parameters());
    assert_eq!(comparable(&plain), comparable(&averaged));
}

#[test]
fn two_averaging_workers_keep_identical_networks_and_normalisers() {
    assert_workers_agree(small());
}

#[test]
fn two_averaging_td3_workers_keep_identical_networks_and_normalisers() {
    assert_workers_agree(small_td3());
}

#[test]
fn two_averaging_sac_workers_keep_identical_networks_temperature_and_normalisers() {
    assert_workers_agree(small_sac());
}

#[test]
fn two_averaging_workers_agree_with_the_actor_after_the_critic_step() {
    for base in [small_td3(), small_sac()] {
        assert_workers_agree(DdpgConfig {
            actor_after_critic: true,
            ..base
        });
    }
}

fn assert_workers_agree(config: DdpgConfig) {
    let start = agent(config.clone(), 100).parameters();
    let results = two_workers(|rank, reducer| {
        // Different seeds: different episodes, samples, noise and buffers.
        let mut worker = agent(config.clone(), 100 + rank as u64);
        worker.set_parameters(&start).unwrap();
        worker.learn_averaged(4, reducer).unwrap();
        let first_obs = worker.buffer().episode(0).obs(0).to_vec();
        (worker.parameters(), comparable(&worker), first_obs)
    });
    assert_ne!(
        results[0].2, results[1].2,
        "workers should see different episodes"
    );
    assert!(results[0].0 == results[1].0, "networks must agree");
    // Everything but the env steps, which are each worker's own: an
    // episode that reaches its goal early (SAC's sampled actions do on
    // this task) ends early.
    let shared = |c: &Comparable| {
        let [episodes, _, rounds, updates] = c.3;
        (
            c.0.clone(),
            c.1.clone(),
            c.2.clone(),
            [episodes, rounds, updates],
        )
    };
    assert_eq!(
        shared(&results[0].1),
        shared(&results[1].1),
        "targets, normalisers, counters must agree"
    );
    assert!(results[0].1.3[3] > 0, "some updates happened");
}

#[test]
fn step_training_is_refused_when_averaging_but_runs_alone() {
    let config = DdpgConfig {
        train_every: TrainEvery::Step,
        n_batches: 1,
        ..small()
    };
    let mut learner = agent(config, 1);
    assert!(matches!(
        learner.learn_averaged(1, &mut Alone),
        Err(Error::Config(_))
    ));
    learner.learn(2).unwrap();
    // The second episode trained after each of its steps.
    assert_eq!(learner.updates(), learner.buffer().episode(1).len() as u64);
}

#[test]
fn warmup_episodes_do_not_train() {
    // Cycles of 2 episodes; the first round follows the 4th episode.
    let mut learner = agent(
        DdpgConfig {
            learning_starts: 4,
            ..small()
        },
        2,
    );
    learner.learn(3).unwrap();
    assert_eq!(learner.updates(), 0);
    learner.learn(1).unwrap();
    assert_eq!(learner.updates(), 4);
}

#[test]
fn warmup_steps_act_at_random_and_train_from_the_step_they_end() {
    // Training after every step, with a warm-up of 1.5 episodes: the
    // first episode and half the second act at random, and every step
    // after that trains once.
    let warmup = STEPS as u64 * 3 / 2;
    let config = DdpgConfig {
        train_every: TrainEvery::Step,
        n_batches: 1,
        warmup_steps: warmup,
        ..small()
    };
    let mut learner = agent(config, 3);
    learner.learn(3).unwrap();
    assert_eq!(learner.env_steps(), 3 * STEPS as u64);
    assert_eq!(learner.updates(), learner.env_steps() - warmup);
    // Counted in steps, a warm-up of whole episodes is `learning_starts`:
    // the same random actions, the same first update, the same run.
    for train_every in [TrainEvery::Step, TrainEvery::Cycle] {
        let base = DdpgConfig {
            train_every,
            n_batches: 2,
            ..small()
        };
        let mut by_episodes = agent(
            DdpgConfig {
                learning_starts: 2,
                ..base.clone()
            },
            4,
        );
        let mut by_steps = agent(
            DdpgConfig {
                warmup_steps: 2 * STEPS as u64,
                ..base
            },
            4,
        );
        by_episodes.learn(4).unwrap();
        by_steps.learn(4).unwrap();
        assert!(by_steps.updates() > 0);
        assert!(
            comparable(&by_episodes) == comparable(&by_steps),
            "{train_every:?}"
        );
    }
    // Cycles of 2 episodes train at their end once the warm-up is over.
    let mut learner = agent(
        DdpgConfig {
            warmup_steps: 3 * STEPS as u64,
            ..small()
        },
        5,
    );
    learner.learn(2).unwrap();
    assert_eq!(learner.updates(), 0, "50 steps, still warming up");
    learner.learn(2).unwrap();
    assert_eq!(learner.updates(), 4);
}

#[test]
fn learning_reports_episodes_and_losses() {
    let mut learner = agent(small(), 5);
    let report = learner.learn(4).unwrap();
    assert_eq!(report.episode_returns.len(), 4);
    assert_eq!(report.episode_successes.len(), 4);
    assert_eq!(report.env_steps(), learner.env_steps());
    assert_eq!(learner.buffer().transitions() as u64, learner.env_steps());
    let scalar = |key: &str| {
        report
            .scalars
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| *v)
    };
    assert!(scalar("losses/critic").is_some_and(f64::is_finite));
    assert!(scalar("charts/relabelled_fraction").is_some_and(|f| f > 0.5));
    assert_eq!(scalar("charts/updates"), Some(8.0));
    // The relabel categories cover every sampled transition; the
    // relabelled ones are the relabelled fraction counted another way.
    let share = |key: &str| scalar(&format!("her/{key}")).unwrap();
    let parts = ["original", "static", "post_settle", "informative"].map(share);
    assert!((parts.iter().sum::<f64>() - 1.0).abs() < 1e-9, "{parts:?}");
    let relabelled = scalar("charts/relabelled_fraction").unwrap();
    assert!((1.0 - share("original") - relabelled).abs() < 1e-9);
}

#[test]
fn q_values_normalise_raw_rows_like_training() {
    let mut learner = Ddpg::new(small(), point_goal(10), point_goal(10), 3).unwrap();
    learner.learn(20).unwrap();
    let d = learner.dims;
    // Two rows: a stored observation, and one with a value far beyond
    // clip_obs (200) and one far beyond the normaliser's clip (5 std).
    let episode = learner.buffer().episode(0);
    let mut obs = episode.obs(3).to_vec();
    let mut wild = obs.clone();
    wild[0] = 1e6;
    obs.extend(&wild);
    let goals = [episode.desired(0), episode.desired(0)].concat();
    let actions: Vec<f32> = (0..2 * d.act).map(|i| 0.5 - 0.3 * i as f32).collect();

    // By hand: clamp raw values to ±200, subtract the mean, divide by the
    // std, clamp to ±5; observation part, then goal, per row.
    let by_hand =
        |x: f32, mean: f32, std: f32| ((x.clamp(-200.0, 200.0) - mean) / std).clamp(-5.0, 5.0);
    let (om, os) = (learner.norms.obs.mean(), learner.norms.obs.std());
    let (gm, gs) = (learner.norms.goal.mean(), learner.norms.goal.std());
    let mut inputs = Vec::new();
    for row in 0..2 {
        let o = &obs[row * d.obs..(row + 1) * d.obs];
        inputs.extend((0..d.obs).map(|i| by_hand(o[i], om[i], os[i])));
        let g = &goals[row * d.goal..(row + 1) * d.goal];
        inputs.extend((0..d.goal).map(|i| by_hand(g[i], gm[i], gs[i])));
    }
    assert_eq!(
        inputs[0..d.obs + d.goal]
            .iter()
            .filter(|x| x.abs() == 5.0)
            .count(),
        0
    );
    assert_eq!(inputs[d.obs + d.goal], 5.0);

    let q = learner.q_values(&obs, &goals, &actions).unwrap();
    assert_eq!(q, learner.networks().q_values(&inputs, &actions));
    assert_eq!(q.len(), 2);
    assert!(q[0] != q[1]);
    let err = learner.q_values(&obs, &goals, &actions[1..]).unwrap_err();
    assert!(err.to_string().contains("q_values needs rows"), "{err}");
}

#[test]
fn evaluation_is_deterministic_and_matches_hand_run_episodes() {
    // A wide success radius, so a briefly trained policy succeeds in
    // some episodes and fails in others.
    let wide = || {
        PointGoal::new(
            shoal_rl_env::PointGoalConfig::default()
                .distance_threshold(0.45)
                .max_speed(0.2)
                .max_episode_steps(STEPS),
        )
        .unwrap()
    };
    let mut learner = Ddpg::new(small(), wide(), wide(), 4).unwrap();
    learner.learn(200).unwrap();
    let report = learner.evaluate(16, 9).unwrap();
    assert_eq!(learner.evaluate(16, 9).unwrap(), report);

    // The same frozen policy run by hand from seeds 9, 10, …, success
    // judged by the distance at the end of each episode.
    let policy = learner.policy().unwrap();
    let mut env = wide();
    let (mut returns, mut lengths, mut successes) = (Vec::new(), Vec::new(), 0);
    for i in 0..16 {
        let mut obs = shoal_rl_core::Env::reset(&mut env, Some(9 + i));
        let (mut ret, mut len) = (0.0, 0.0);
        loop {
            let step = shoal_rl_core::Env::step(&mut env, &policy.act(&obs)).unwrap();
            ret += step.reward as f64;
            len += 1.0;
            obs = step.obs;
            if step.terminated || step.truncated {
                break;
            }
        }
        let (_, achieved, desired) = env.split_obs(&obs);
        let gap = achieved
            .iter()
            .zip(desired)
            .map(|(a, d)| (a - d).powi(2))
            .sum::<f32>();
        successes += usize::from(gap.sqrt() < 0.45);
        returns.push(ret);
        lengths.push(len);
    }
    assert!(
        0 < successes && successes < 16,
        "{successes} of 16 succeeded"
    );
    assert_eq!(report.success_rate, Some(successes as f64 / 16.0));
    assert_eq!(report.episodes, 16);
    assert!((report.return_mean - returns.iter().sum::<f64>() / 16.0).abs() < 1e-9);
    assert!((report.length_mean - lengths.iter().sum::<f64>() / 16.0).abs() < 1e-9);
}

#[test]
fn mismatched_or_corrupt_state_and_memory_are_errors() {
    let mut learner = agent(small(), 6);
    learner.learn(2).unwrap();
    let (state, memory) = (learner.save_state(), learner.save_memory().unwrap());
    let mut wider = agent(
        DdpgConfig {
            hidden: vec![16],
            ..small()
        },
        6,
    );
    let before = wider.save_state();
    assert!(matches!(
        wider.load_state(&state),
        Err(Error::Shape(m)) if m == "parameter vector has 1346 values, the network has 146"
    ));
    assert_eq!(
        wider.save_state(),
        before,
        "a failed load leaves the agent unchanged"
    );
    assert!(matches!(
        wider.load_state(&state[..state.len() / 2]),
        Err(Error::Shape(m)) if m.starts_with("DDPG state is unreadable: ")
    ));
    assert!(matches!(
        wider.load_memory(&memory[..memory.len() - 3]),
        Err(Error::Shape(m)) if m.starts_with("replay buffer is unreadable: episode 1 of 2: ")
    ));
    assert_eq!(wider.buffer().transitions(), 0);
}

#[test]
fn bad_configs_are_rejected_with_the_key_named() {
    for (config, key) in [
        (
            DdpgConfig {
                gamma: 1.0,
                ..small()
            },
            "gamma",
        ),
        (
            DdpgConfig {
                polyak: 1.5,
                ..small()
            },
            "polyak",
        ),
        (
            DdpgConfig {
                batch_size: 0,
                ..small()
            },
            "batch_size",
        ),
        (
            DdpgConfig {
                random_eps: -0.1,
                ..small()
            },
            "random_eps",
        ),
        (
            DdpgConfig {
                hidden: vec![0],
                ..small()
            },
            "hidden",
        ),
        (
            DdpgConfig {
                n_critics: 0,
                ..small()
            },
            "ddpg n_critics must be between 1 and 10, got 0",
        ),
        (
            DdpgConfig {
                policy_delay: 0,
                ..small()
            },
            "ddpg policy_delay must be between 1",
        ),
        (
            DdpgConfig {
                target_policy_noise: f64::NAN,
                ..small()
            },
            "ddpg target_policy_noise must be finite and non-negative",
        ),
        (
            DdpgConfig {
                target_noise_clip: -0.5,
                ..small()
            },
            "ddpg target_noise_clip must be finite and non-negative",
        ),
        (
            DdpgConfig {
                init_alpha: 0.0,
                ..small_sac()
            },
            "ddpg init_alpha must be finite and positive",
        ),
        (
            DdpgConfig {
                target_entropy: Some(f64::INFINITY),
                ..small_sac()
            },
            "ddpg target_entropy must be finite",
        ),
        (
            DdpgConfig {
                target_policy_noise: 0.2,
                ..small_sac()
            },
            "ddpg target_policy_noise must be 0 with actor = \"gaussian\"",
        ),
    ] {
        let error = Ddpg::new(config, point_goal(STEPS), point_goal(STEPS), 0)
            .err()
            .unwrap();
        assert!(error.to_string().contains(key), "{error}");
    }
}

#[test]
fn frozen_policy_rejects_observations_of_the_wrong_length() {
    let learner = agent(small(), 0);
    let policy = learner.frozen_policy();
    assert!(matches!(
        policy.try_act(&[0.0; 7]),
        Err(Error::Shape(m)) if m == "observation has 7 values, the policy expects 4 + 2 × 2"
    ));
    assert!(policy.act(&[0.0; 7]).iter().all(|a| a.is_nan()));
    let action = policy.act(&[0.1, 0.2, 0.0, 0.0, 0.1, 0.2, 0.3, 0.4]);
    assert!(Space::uniform(2, -1.0, 1.0).contains(&action));
}

#[test]
fn agents_and_policies_can_move_between_threads() {
    fn assert_send<T: Send>() {}
    assert_send::<Ddpg<PointGoal>>();
    assert_send::<DdpgPolicy>();
    assert_send::<ActorCritic>();
}

#[test]
fn works_with_boxed_goal_envs() {
    let boxed = || -> Box<dyn GoalEnv + Send> { Box::new(point_goal(STEPS)) };
    let mut learner = Ddpg::new(small(), boxed(), boxed(), 1).unwrap();
    learner.learn(2).unwrap();
    assert_eq!(learner.episodes(), 2);
}

/// DDPG's agent on a plain env (the dense reward of PointReach): no
/// goals, no relabelling, none of the goal tasks' extras.
fn plain_agent(base: DdpgConfig, seed: u64) -> Ddpg<WithoutGoals<PointReach>> {
    let config = DdpgConfig {
        hidden: vec![32, 32],
        batch_size: 64,
        n_batches: 10,
        buffer_size: 100_000,
        her: HerConfig {
            k: 0,
            ..HerConfig::default()
        },
        action_l2: 0.0,
        clip_target: false,
        ..base
    };
    let env = || WithoutGoals(PointReach::new(PointReachConfig::default()).unwrap());
    Ddpg::new(config, env(), env(), seed).unwrap()
}

#[test]
fn td3_learns_a_plain_env_from_the_rewards_it_gave() {
    assert_learns_to_reach_the_point(DdpgConfig::td3());
}

#[test]
fn sac_learns_a_plain_env_from_the_rewards_it_gave() {
    assert_learns_to_reach_the_point(DdpgConfig::sac());
}

/// 300 episodes on PointReach, where a random policy returns about −14
/// and the greedy one −1.2 (the PPO test's bounds).
fn assert_learns_to_reach_the_point(base: DdpgConfig) {
    let mut learner = plain_agent(base, 5);
    let before = learner.evaluate(20, 99).unwrap();
    learner.learn(300).unwrap();
    let after = learner.evaluate(20, 99).unwrap();
    eprintln!(
        "return: {:.2} -> {:.2}",
        before.return_mean, after.return_mean
    );
    assert!(
        after.return_mean > -2.5 && after.return_mean > before.return_mean + 3.0,
        "{:.2} -> {:.2}",
        before.return_mean,
        after.return_mean
    );
    assert_eq!(after.success_rate, None, "no goals, no success rate");
}

#[test]
fn without_normalising_the_networks_see_observations_as_the_env_gives_them() {
    let input = |normalize: bool| {
        let mut learner = plain_agent(
            DdpgConfig {
                normalize,
                ..DdpgConfig::td3()
            },
            3,
        );
        learner.learn(3).unwrap();
        let mut input = Vec::new();
        // Far outside PointReach's box, inside `clip_obs` (200).
        let obs = [7.0, -9.5, 0.25, 150.0];
        learner
            .norms
            .push_input(&obs, &[], learner.config.clip_obs as f32, &mut input)
            .unwrap();
        input
    };
    assert_eq!(input(false), vec![7.0, -9.5, 0.25, 150.0]);
    let normalised = input(true);
    assert!(
        normalised.iter().any(|x| x.abs() == 5.0),
        "standardised and clipped to ±5: {normalised:?}"
    );
}

#[test]
fn a_plain_env_refuses_relabelling_and_resumes_exactly() {
    let env = || WithoutGoals(PointReach::new(PointReachConfig::default()).unwrap());
    let message = Ddpg::new(DdpgConfig::td3(), env(), env(), 0)
        .err()
        .unwrap()
        .to_string();
    assert!(message.contains("her.k = 0"), "{message}");
    // The critic's values of an env without goals (goals of width 0).
    let q = plain_agent(DdpgConfig::td3(), 2)
        .q_values(&[0.1, -0.2, 0.3, 0.4], &[], &[0.5, -0.5])
        .unwrap();
    assert_eq!(q.len(), 2);
    // Its stored rewards go through the checkpoint's memory.
    let mut whole = plain_agent(DdpgConfig::td3(), 2);
    whole.learn(6).unwrap();
    let mut first = plain_agent(DdpgConfig::td3(), 2);
    first.learn(3).unwrap();
    let mut resumed = plain_agent(DdpgConfig::td3(), 2);
    resumed.load_state(&first.save_state()).unwrap();
    resumed.load_memory(&first.save_memory().unwrap()).unwrap();
    resumed.learn(3).unwrap();
    assert_eq!(resumed.parameters(), whole.parameters());
    assert!(resumed.buffer().episode(0).reward(0).is_some());
}

#[test]
fn ddpg_with_her_learns_to_reach_goals() {
    assert_learns_to_reach_goals(DdpgConfig::default());
}

#[test]
fn td3_with_her_learns_to_reach_goals() {
    assert_learns_to_reach_goals(DdpgConfig::td3());
}

#[test]
fn sac_with_her_learns_to_reach_goals() {
    assert_learns_to_reach_goals(DdpgConfig::sac());
}

/// 300 episodes of `base` with small networks on the test task: the
/// deterministic policy reaches the goal in at least 60 % of 50
/// evaluation episodes, 40 points more than untrained.
fn assert_learns_to_reach_goals(base: DdpgConfig) {
    let config = DdpgConfig {
        hidden: vec![32, 32],
        batch_size: 128,
        n_batches: 20,
        buffer_size: 100_000,
        ..base
    };
    let mut learner = agent(config, 42);
    let untrained = learner.evaluate(50, 1_000).unwrap().success_rate.unwrap();
    learner.learn(300).unwrap();
    let trained = learner.evaluate(50, 1_000).unwrap().success_rate.unwrap();
    eprintln!("success rate: untrained {untrained}, trained {trained}");
    assert!(
        trained >= 0.6 && trained >= untrained + 0.4,
        "{untrained} -> {trained}"
    );
}
