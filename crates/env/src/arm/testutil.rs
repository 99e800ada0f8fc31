//! Test fixtures shared by the arm tasks: rollouts and the contract checks both tasks must pass.

use rand::RngExt;
use shoal_rl_core::{Env, Error, GoalEnv, Step, rng_from_seed};

use super::obs::{FLAT_OBS_DIM, index};

/// Runs one episode from `reset(Some(seed))` to its end; returns the first
/// observation and every step.
pub(crate) fn rollout<E: Env>(
    env: &mut E,
    seed: u64,
    mut policy: impl FnMut(&[f32]) -> [f32; 4],
) -> (Vec<f32>, Vec<Step>) {
    let first = env.reset(Some(seed));
    let mut obs = first.clone();
    let mut steps = Vec::new();
    loop {
        let step = env.step(&policy(&obs)).expect("a valid action");
        obs = step.obs.clone();
        let done = step.done();
        steps.push(step);
        if done {
            return (first, steps);
        }
    }
}

/// A uniform random policy over [-1, 1]⁴ with its own seeded generator.
pub(crate) fn random_policy(seed: u64) -> impl FnMut(&[f32]) -> [f32; 4] {
    let mut rng = rng_from_seed(seed);
    move |_| std::array::from_fn(|_| rng.random_range(-1.0..=1.0))
}

/// Whether the episode ended in success.
pub(crate) fn solved(steps: &[Step]) -> bool {
    steps.last().and_then(|s| s.info.get("is_success")) == Some(1.0)
}

/// Bit patterns of every observation and reward, for exact comparison.
fn fingerprint(first: &[f32], steps: &[Step]) -> Vec<u32> {
    let mut bits: Vec<u32> = first.iter().map(|v| v.to_bits()).collect();
    for step in steps {
        bits.extend(step.obs.iter().map(|v| v.to_bits()));
        bits.push(step.reward.to_bits());
        bits.push(u32::from(step.terminated) << 1 | u32::from(step.truncated));
    }
    bits
}

/// Same seed and actions give a bit-identical episode, whatever ran before;
/// another seed gives another start.
pub(crate) fn check_seeded_determinism<E: Env>(env: &mut E, policy: impl Fn(&[f32]) -> [f32; 4]) {
    let (first, steps) = rollout(env, 11, &policy);
    let reference = fingerprint(&first, &steps);
    rollout(env, 12, random_policy(3));
    let (first_again, steps_again) = rollout(env, 11, &policy);
    assert_eq!(reference, fingerprint(&first_again, &steps_again));
    let other = env.reset(Some(12));
    assert_ne!(first, other, "different seeds gave the same start");
}

/// Flat layout, goal placement, starts that are not solved, and rewards and
/// info against distances computed here by hand (f64, from the observation's
/// object and goal slots): reward 0 and success inside `threshold`, −1
/// outside. Random episodes rarely come near the goal, so `scripted` episodes
/// (which end in success) supply steps on both sides of the threshold.
pub(crate) fn check_observations_and_rewards<E: GoalEnv>(
    env: &mut E,
    threshold: f32,
    scripted: impl Fn(&[f32]) -> [f32; 4],
) {
    assert_eq!(env.observation_space().dim(), FLAT_OBS_DIM);
    assert_eq!(env.goal_dim(), 3);
    let hand_distance = |obs: &[f32]| {
        obs[index::OBJECT_POS]
            .iter()
            .zip(&obs[index::DESIRED_GOAL])
            .map(|(a, d)| (f64::from(*a) - f64::from(*d)).powi(2))
            .sum::<f64>()
            .sqrt()
    };
    let mut episodes = Vec::new();
    for seed in 0..40 {
        episodes.push((seed, rollout(env, seed, random_policy(seed))));
    }
    for seed in 0..10 {
        episodes.push((seed, rollout(env, seed, &scripted)));
    }
    let (mut inside, mut near_outside) = (0, 0);
    for (seed, (first, steps)) in episodes {
        let (_, achieved, desired) = env.split_obs(&first);
        assert!(
            hand_distance(&first) >= f64::from(threshold),
            "seed {seed} starts solved"
        );
        assert!(
            !env.is_success(achieved, desired),
            "seed {seed} starts solved"
        );
        assert_eq!(achieved, &first[index::OBJECT_POS]);
        assert_eq!(achieved, &first[index::ACHIEVED_GOAL]);
        for step in &steps {
            let obs = &step.obs;
            assert_eq!(obs.len(), FLAT_OBS_DIM);
            assert!(obs.iter().all(|v| v.is_finite()));
            assert_eq!(obs[index::OBJECT_POS], obs[index::ACHIEVED_GOAL]);
            let distance = hand_distance(obs);
            // f32 rounding may put a distance this close on either side.
            if (distance - f64::from(threshold)).abs() < 1e-6 {
                continue;
            }
            let success = distance < f64::from(threshold);
            inside += usize::from(success);
            near_outside += usize::from(!success && distance < 2.0 * f64::from(threshold));
            assert_eq!(
                step.reward,
                if success { 0.0 } else { -1.0 },
                "seed {seed}, distance {distance}"
            );
            assert_eq!(
                step.info.get("is_success"),
                Some(if success { 1.0 } else { 0.0 })
            );
            assert!((step.info.get("distance").unwrap() - distance).abs() < 1e-6);
            let positions = obs[index::OBJECT_POS].iter().zip(&obs[index::GRIPPER_POS]);
            for (relative, (object, gripper)) in obs[index::OBJECT_REL_POS].iter().zip(positions) {
                assert!((relative - (object - gripper)).abs() < 1e-6);
            }
        }
    }
    assert!(inside >= 5, "only {inside} steps inside the threshold");
    assert!(
        near_outside >= 5,
        "only {near_outside} steps just outside the threshold"
    );
}

/// `compute_reward` is the sparse threshold reward, alone and batched.
pub(crate) fn check_compute_reward<E: GoalEnv>(env: &E, threshold: f32) {
    let goal = [0.1, -0.2, 0.425];
    let near = [0.1 + 0.9 * threshold, -0.2, 0.425];
    let far = [0.1, -0.2 + 1.1 * threshold, 0.425];
    assert_eq!(env.compute_reward(&goal, &goal), 0.0);
    assert_eq!(env.compute_reward(&near, &goal), 0.0);
    assert_eq!(env.compute_reward(&far, &goal), -1.0);
    assert!(env.is_success(&near, &goal) && !env.is_success(&far, &goal));
    let achieved = [goal, near, far].concat();
    let desired = [goal, goal, goal].concat();
    assert_eq!(
        env.compute_rewards(&achieved, &desired),
        vec![0.0, 0.0, -1.0]
    );
}

/// Bad actions are typed errors that leave the episode usable; stepping
/// before the first reset or after the end needs a reset.
pub(crate) fn check_action_errors<E: Env>(env: &mut E) {
    assert!(matches!(env.step(&[0.0; 4]), Err(Error::NeedsReset)));
    env.reset(Some(0));
    assert!(matches!(
        env.step(&[0.0, f32::NAN, 0.0, 0.0]),
        Err(Error::NonFiniteAction { index: 1, .. })
    ));
    assert!(matches!(
        env.step(&[f32::INFINITY, 0.0, 0.0, 0.0]),
        Err(Error::NonFiniteAction { index: 0, .. })
    ));
    assert!(matches!(
        env.step(&[0.0; 3]),
        Err(Error::ActionShape {
            expected: 4,
            got: 3
        })
    ));
    let step = env
        .step(&[0.0; 4])
        .expect("the episode survives rejected actions");
    assert!(step.obs.iter().all(|v| v.is_finite()));
    while !env.step(&[0.0; 4]).unwrap().done() {}
    assert!(matches!(env.step(&[0.0; 4]), Err(Error::NeedsReset)));
}

/// With clipping an out-of-range action acts as its clipped value; without
/// it, it is rejected.
pub(crate) fn check_clipping<E: Env>(clipping: &mut E, strict: &mut E) {
    clipping.reset(Some(4));
    let wild = clipping.step(&[3.0, -2.0, 0.5, 9.0]).unwrap();
    clipping.reset(Some(4));
    let clipped = clipping.step(&[1.0, -1.0, 0.5, 1.0]).unwrap();
    assert_eq!(wild, clipped);
    strict.reset(Some(4));
    assert!(matches!(
        strict.step(&[1.5, 0.0, 0.0, 0.0]),
        Err(Error::ActionOutOfBounds { index: 0, .. })
    ));
}

/// The contract tests every arm task passes, in the task's test module:
/// `env(config)`, `scripted(&config)` (its scripted solver as a policy), and
/// the goal-env checker, seeded determinism, observation and reward
/// agreement, action errors and clipping, each run on `$env`.
macro_rules! arm_task_contract_tests {
    ($env:ident, $config:ident, $scripted:ident) => {
        fn env(config: $config) -> $env {
            $env::new(config).unwrap()
        }

        fn scripted(config: &$config) -> impl Fn(&[f32]) -> [f32; 4] + '_ {
            move |obs| $scripted(obs, config)
        }

        #[test]
        fn passes_the_goal_env_checker() {
            $crate::check_goal_env($env::default).unwrap();
            let strict = $config::default()
                .clip_actions(false)
                .terminate_on_success(false);
            $crate::check_goal_env(|| env(strict.clone())).unwrap();
        }

        #[test]
        fn reset_with_same_seed_gives_same_episode() {
            let config = $config::default();
            $crate::arm::testutil::check_seeded_determinism(
                &mut env(config.clone()),
                scripted(&config),
            );
        }

        #[test]
        fn observations_rewards_and_info_agree() {
            let config = $config::default();
            $crate::arm::testutil::check_observations_and_rewards(
                &mut env(config.clone()),
                0.05,
                scripted(&config),
            );
        }

        #[test]
        fn compute_reward_is_the_sparse_threshold_reward() {
            $crate::arm::testutil::check_compute_reward(&$env::default(), 0.05);
        }

        #[test]
        fn bad_actions_are_errors_and_ended_episodes_need_reset() {
            $crate::arm::testutil::check_action_errors(&mut $env::default());
        }

        #[test]
        fn out_of_range_actions_are_clipped_unless_clipping_is_off() {
            let strict = $config::default().clip_actions(false);
            $crate::arm::testutil::check_clipping(&mut $env::default(), &mut env(strict));
        }
    };
}
pub(crate) use arm_task_contract_tests;
