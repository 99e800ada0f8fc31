//! Criterion benchmark of arm-task env steps per second (target: ≥ 20,000 for arm push on one core).
//!
//! Each iteration runs 1,000 control steps, resetting whenever an episode
//! ends, so reset cost is included at its real rate (one per ≤ 50 steps).
//! `random` actions keep the gripper mostly in free space; `scripted` actions
//! keep it in contact with the object, the expensive case.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand::RngExt;
use shoal_rl_core::{Env, rng_from_seed};
use shoal_rl_env::{
    ArmPush, ArmPushConfig, BallToNet, BallToNetConfig, scripted_push_action,
    scripted_strike_action,
};

const STEPS_PER_ITERATION: u64 = 1_000;

/// Steps `env` for one iteration with actions from `policy`.
fn run<E: Env>(env: &mut E, obs: &mut Vec<f32>, policy: &mut impl FnMut(&[f32]) -> [f32; 4]) {
    for _ in 0..STEPS_PER_ITERATION {
        let step = env.step(&policy(obs)).expect("valid action");
        *obs = if step.done() {
            env.reset(None)
        } else {
            step.obs
        };
    }
    black_box(&obs);
}

fn random_actions(seed: u64) -> impl FnMut(&[f32]) -> [f32; 4] {
    // Pre-drawn so the generator's cost stays out of the measurement.
    let mut rng = rng_from_seed(seed);
    let actions: Vec<[f32; 4]> = (0..4096)
        .map(|_| std::array::from_fn(|_| rng.random_range(-1.0..=1.0)))
        .collect();
    let mut next = 0;
    move |_| {
        next = (next + 1) % actions.len();
        actions[next]
    }
}

fn bench_arm_tasks(c: &mut Criterion) {
    let mut group = c.benchmark_group("env_steps");
    group.throughput(Throughput::Elements(STEPS_PER_ITERATION));

    let push_config = ArmPushConfig::default();
    let mut push = ArmPush::new(push_config.clone()).expect("valid config");
    let mut obs = push.reset(Some(0));
    let mut policy = random_actions(1);
    group.bench_function("arm-push/random", |b| {
        b.iter(|| run(&mut push, &mut obs, &mut policy))
    });
    let mut obs = push.reset(Some(0));
    let mut policy = |o: &[f32]| scripted_push_action(o, &push_config);
    group.bench_function("arm-push/scripted", |b| {
        b.iter(|| run(&mut push, &mut obs, &mut policy))
    });

    let ball_config = BallToNetConfig::default();
    let mut ball = BallToNet::new(ball_config.clone()).expect("valid config");
    let mut obs = ball.reset(Some(0));
    let mut policy = random_actions(2);
    group.bench_function("ball-to-net/random", |b| {
        b.iter(|| run(&mut ball, &mut obs, &mut policy))
    });
    let mut obs = ball.reset(Some(0));
    let mut policy = |o: &[f32]| scripted_strike_action(o, &ball_config);
    group.bench_function("ball-to-net/scripted", |b| {
        b.iter(|| run(&mut ball, &mut obs, &mut policy))
    });

    group.finish();
}

criterion_group!(benches, bench_arm_tasks);
criterion_main!(benches);
