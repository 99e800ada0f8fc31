//! DDPG + HER on the real arm-push task: a tiny-budget smoke run, resume, and the static-episode HER option.

use shoal_algo::{Ddpg, DdpgConfig, EpisodeDims, HerConfig, TransitionBatch, sample_batch};
use shoal_core::{GradientLearner, Learner, rng_from_seed};
use shoal_env::{ArmPush, ArmPushConfig};

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
