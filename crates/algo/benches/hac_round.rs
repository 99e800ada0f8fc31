//! Criterion bench of HAC on arm push: one training episode and the round
//! of updates after it (`Hac::learn(1)`), with `push-hac`'s settings (2
//! levels, H = 10, hidden [64, 64, 64], 40 batches per level) at the
//! paper's batch of 1 024 and at DDPG + HER's 256.
//!
//! The agent first plays and learns a few episodes so the buffers hold
//! transitions of every kind; each measured iteration is then one more
//! episode, as in training.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use shoal_algo::{Hac, HacConfig};
use shoal_core::Learner;
use shoal_env::{ArmPush, ArmPushConfig};

const WARM_UP_EPISODES: usize = 5;

fn push_hac(batch_size: usize) -> Hac<ArmPush> {
    let env = ArmPushConfig::default();
    let (low, high) = env.arm.object_region(0.0, 0.1);
    let config = HacConfig {
        levels: 2,
        horizon: 10,
        batch_size,
        subgoal_low: Some(low),
        subgoal_high: Some(high),
        ..HacConfig::default()
    };
    let train_env = ArmPush::new(env.clone()).expect("the default push is valid");
    let eval_env = ArmPush::new(env).expect("the default push is valid");
    let mut agent =
        Hac::new(config, train_env, eval_env, 0).expect("push-hac's settings are valid");
    agent
        .learn(WARM_UP_EPISODES)
        .expect("warm-up episodes learn");
    agent
}

fn bench_round(c: &mut Criterion) {
    // As the `shoal` binary does: a round frees and reallocates megabytes
    // of tensors, which glibc would otherwise return to the kernel.
    shoal_core::allocator::keep_freed_memory_for_reuse();
    let mut group = c.benchmark_group("hac");
    // An iteration takes a tenth of a second or more: ten samples suffice.
    group.sample_size(10);
    for batch_size in [1024, 256] {
        let mut agent = push_hac(batch_size);
        group.bench_function(format!("push_episode_and_round_batch{batch_size}"), |b| {
            b.iter(|| black_box(agent.learn(1).unwrap()))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_round);
criterion_main!(benches);
