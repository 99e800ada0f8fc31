//! Criterion bench of one PPO update at `worm-ppo`'s batch: two 1 000-step
//! worm episodes, 10 epochs of 32 minibatches, 64 × 64 policy and value
//! networks (`benches/python/ppo_update.py` times SB3's PPO the same way).

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use shoal_rl_algo::{Ppo, PpoConfig};
use shoal_rl_core::RolloutLearner;
use shoal_rl_env::{Worm, WormConfig};

fn bench_update(c: &mut Criterion) {
    let worm = || Worm::new(WormConfig::default()).unwrap();
    let config = PpoConfig {
        gamma: 0.999,
        learning_rate: 1e-3,
        ..PpoConfig::default()
    };
    let mut ppo = Ppo::new(config.clone(), worm(), worm(), 0).unwrap();
    let (rollout, report) = RolloutLearner::collect(&mut ppo, config.episodes_per_rollout).unwrap();
    assert_eq!(report.env_steps(), 2_000);
    c.bench_function("ppo/update_2000steps_10x32_hidden64x64", |b| {
        b.iter(|| {
            black_box(
                RolloutLearner::update(&mut ppo, black_box(std::slice::from_ref(&rollout)))
                    .unwrap(),
            )
        })
    });
}

criterion_group!(benches, bench_update);
criterion_main!(benches);
