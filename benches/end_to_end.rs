//! End-to-end criterion benches through the entry points `shoal train` uses: one step of every env, one training iteration of every algorithm.
//!
//! Envs and learners are built exactly as the binary builds them
//! (the env and the learner from a preset, as a run builds them), so these numbers include the
//! boxing and the config plumbing a real run pays. The per-crate benches
//! (`shoal-rl-env`'s `worm_step`, `shoal-rl-algo`'s `ddpg_update`, …) time the
//! parts in isolation.
//!
//! `cargo bench --bench end_to_end`; `-- env_step` or `-- train_iteration`
//! for one group.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use shoal_rl::train::{Registries, preset};
use shoal_rl_core::rng_from_seed;

/// Every env kind the CLI can build, by the preset that trains on it.
const ENV_PRESETS: &[(&str, &str)] = &[
    ("worm", "worm-reinforce"),
    ("point-reach", "toy-reinforce"),
    ("arm-push", "push-ddpg-her"),
    ("ball-to-net", "ball-ddpg-her"),
    ("point-goal", "toy-ddpg-her"),
];

/// One control step (plus, every episode's end, the reset a rollout would do).
fn env_step(c: &mut Criterion) {
    let mut group = c.benchmark_group("env_step");
    for (name, preset_name) in ENV_PRESETS {
        let cfg = preset(preset_name).unwrap();
        let mut env = Registries::default().envs.make_env(&cfg.env).unwrap();
        let space = env.action_space().clone();
        let mut rng = rng_from_seed(0);
        // Pre-drawn actions keep the generator out of the timed loop.
        let actions: Vec<Vec<f32>> = (0..1024).map(|_| space.sample(&mut rng)).collect();
        env.reset(Some(0));
        let mut i = 0;
        group.bench_function(*name, |b| {
            b.iter(|| {
                let step = env.step(black_box(&actions[i % actions.len()])).unwrap();
                i += 1;
                if step.done() {
                    env.reset(None);
                }
                black_box(step.reward)
            })
        });
    }
    group.finish();
}

/// One training iteration of each algorithm on the task its preset trains,
/// with the preset's networks and batch sizes.
fn train_iteration(c: &mut Criterion) {
    // As the binary's main does: burn's megabyte tensors reuse freed memory.
    shoal_rl::allocator::keep_freed_memory_for_reuse();
    let mut group = c.benchmark_group("train_iteration");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    for name in [
        "worm-reinforce",
        "worm-ppo",
        "push-ddpg-her",
        "push-hac",
        "push-far-hac",
        "ur5-hac3",
    ] {
        let cfg = preset(name).unwrap();
        let registries = Registries::default();
        let mut learner = registries.learners(&cfg).learner(0, 1.0).unwrap();
        // One update: a REINFORCE batch, a PPO rollout and its epochs, a
        // DDPG cycle and its gradient steps, a HAC episode and its training.
        let episodes = learner
            .episodes_per_update()
            .expect("shoal's learners name their update");
        // Fill the replay memories first, so updates sample real batches.
        learner.learn(4 * episodes).unwrap();
        group.bench_function(name, |b| {
            b.iter(|| black_box(learner.learn(episodes).unwrap().env_steps()))
        });
    }
    group.finish();
}

criterion_group!(benches, env_step, train_iteration);
criterion_main!(benches);
