//! DDPG + HER on the real arm-push task: a tiny-budget smoke run, resume, the static-episode HER option, and (optimised builds only) learning to push.

use shoal_rl_algo::{Ddpg, DdpgConfig, EpisodeDims, HerConfig, TransitionBatch, sample_batch};
use shoal_rl_core::{GradientLearner, Learner, rng_from_seed};
use shoal_rl_env::{ArmPush, ArmPushConfig};

fn push() -> ArmPush {
    ArmPush::new(ArmPushConfig::default()).unwrap()
}

fn tiny() -> DdpgConfig {
    DdpgConfig {
        hidden: vec![16, 16],
        batch_size: 16,
        n_batches: 2,
        buffer_size: 5_000,
        ..DdpgConfig::default()
    }
}

#[test]
fn ddpg_trains_and_evaluates_on_arm_push() {
    let mut agent = Ddpg::new(tiny(), push(), push(), 3).unwrap();
    let report = agent.learn(4).unwrap();
    assert_eq!(
        agent.buffer().dims(),
        EpisodeDims {
            obs: 25,
            goal: 3,
            act: 4
        }
    );
    assert_eq!(report.episode_lengths.len(), 4);
    // Sparse reward: −1 per step except a final success step (0), which ends
    // the episode; otherwise the 50-step limit does.
    for ((len, ret), success) in report
        .episode_lengths
        .iter()
        .zip(&report.episode_returns)
        .zip(&report.episode_successes)
    {
        assert_eq!(*len == 50, !success, "length {len}, success {success}");
        assert_eq!(*ret, -(*len as f64) + f64::from(u8::from(*success)));
    }
    assert_eq!(agent.updates(), 4);
    let eval = agent.evaluate(4, 0).unwrap();
    let rate = eval.success_rate.expect("a goal task reports success");
    assert_eq!(eval.episodes, 4);
    assert_eq!(eval.return_mean, -eval.length_mean + rate);
    assert_eq!(agent.evaluate(4, 0).unwrap(), eval, "evaluation is frozen");
}

#[test]
fn arm_push_run_resumes_exactly_from_state_and_memory() {
    let mut whole = Ddpg::new(tiny(), push(), push(), 5).unwrap();
    whole.learn(4).unwrap();

    let mut first = Ddpg::new(tiny(), push(), push(), 5).unwrap();
    first.learn(2).unwrap();
    let (state, memory) = (first.save_state(), first.save_memory().unwrap());
    let mut resumed = Ddpg::new(tiny(), push(), push(), 5).unwrap();
    resumed.load_state(&state).unwrap();
    resumed.load_memory(&memory).unwrap();
    resumed.learn(2).unwrap();

    assert!(resumed.parameters() == whole.parameters());
    assert!(resumed.save_memory() == whole.save_memory());
}

#[test]
fn skipping_static_episodes_relabels_less_on_arm_push() {
    // Mostly random pushing: in many episodes the box is never touched.
    let config = DdpgConfig {
        learning_starts: 6,
        ..tiny()
    };
    let mut agent = Ddpg::new(config, push(), push(), 9).unwrap();
    agent.learn(6).unwrap();
    let env = push();
    let fraction = |her: &HerConfig| {
        let mut batch = TransitionBatch::default();
        sample_batch(
            agent.buffer(),
            her,
            4_000,
            &env,
            &mut rng_from_seed(1),
            &mut batch,
        );
        let trivial = (0..batch.len())
            .filter(|&i| batch.goal_steps[i].is_some() && batch.rewards[i] == 0.0)
            .count();
        (
            batch.relabelled_fraction(),
            trivial as f64 / batch.len() as f64,
        )
    };
    let (plain_relabelled, plain_successes) = fraction(&HerConfig::default());
    let skip = HerConfig {
        skip_static: true,
        ..HerConfig::default()
    };
    let (skip_relabelled, skip_successes) = fraction(&skip);
    assert!((plain_relabelled - 0.8).abs() < 0.03, "{plain_relabelled}");
    assert!(
        skip_relabelled < plain_relabelled,
        "{skip_relabelled} vs {plain_relabelled}"
    );
    assert!(
        skip_successes < plain_successes,
        "{skip_successes} vs {plain_successes}"
    );
}

/// Arm push is learned: two workers averaging every gradient and the
/// normaliser statistics (OpenAI baselines' MPI setup, on threads) with the
/// `push-ddpg-her` defaults reach eval success ≥ 0.3 after 1 250 episodes
/// each, from 0 untrained. The bar is below this machine's 0.68 because a
/// seed's trajectory differs between CPU models (the matrix kernels
/// dispatch per CPU) and a new machine is like a new seed: over seeds, two
/// such workers first reach 0.9 after 1 250 to 2 500 episodes each
/// (docs/experiments/scaling-push.md). Minutes of training, so `#[ignore]`d in the plain `cargo test`;
/// CI runs `cargo test --workspace --test ddpg_arm_push -- --ignored` with
/// the same dev build (whose profile optimises burn and rapier; the numbers
/// are the same bits as in release; the dependencies' debug assertions and
/// overflow checks are off, which took this test from 655 s to 393 s). Measured (dev build, 2 cores, two
/// niced trainings beside it): eval success 0.00, 0.00, 0.06, 0.54, 0.68
/// after 250, 500, 750, 1 000, 1 250 episodes per worker, about 70 s per
/// 250 (393 s in all; 655 s with the dependencies' debug assertions on).
#[test]
#[ignore = "minutes of training; CI runs it with --ignored"]
fn two_averaging_workers_learn_to_push() {
    use shoal_rl_parallel::{CommReducer, Communicator, run_threads};
    // As the `shoal` binary does, so the test trains as `shoal train` would.
    shoal_rl_core::allocator::keep_freed_memory_for_reuse();
    let start = std::time::Instant::now();
    let rates = run_threads(2, |comm: &dyn Communicator| {
        let config = DdpgConfig {
            buffer_size: 500_000,
            ..DdpgConfig::default()
        };
        let mut agent = Ddpg::new(config, push(), push(), comm.rank() as u64)?;
        // Both start from rank 0's networks, as `parallel.strategy=averaging` does.
        let mut parameters = agent.parameters();
        comm.broadcast(&mut parameters, 0)?;
        agent.set_parameters(&parameters)?;
        let mut reducer = CommReducer::new(comm);
        let mut rate = 0.0;
        for round in 1..=5 {
            agent.learn_averaged(250, &mut reducer)?;
            rate = agent.evaluate(50, 1_000_000)?.success_rate.unwrap_or(0.0);
            if comm.rank() == 0 {
                eprintln!(
                    "{} episodes per worker: eval success {rate:.2}, {:.0} s",
                    250 * round,
                    start.elapsed().as_secs_f64()
                );
            }
        }
        Ok(rate)
    })
    .unwrap();
    assert_eq!(rates[0], rates[1], "averaging keeps the workers identical");
    assert!(
        rates[0] >= 0.3,
        "eval success {} after 2 × 1 250 episodes",
        rates[0]
    );
}
