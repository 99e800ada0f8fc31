//! Criterion bench of one PPO update at `worm-ppo`'s batch: two 1 000-step
//! worm episodes, 10 epochs of 32 minibatches, 64 × 64 policy and value
//! networks (`benches/python/ppo_update.py` times SB3's PPO the same way).
//! Every timed update starts from the same learner state: repeated updates
//! on one rollout would drive the policy to extremes, where the Beta
//! special functions cost less and the gradient finally turns NaN.

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use shoal_rl_algo::{Ppo, PpoConfig};
use shoal_rl_core::{Learner, RolloutLearner};
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
    let state = ppo.save_state();
    let fresh = || {
        let mut ppo = Ppo::new(config.clone(), worm(), worm(), 0).unwrap();
        ppo.load_state(&state).unwrap();
        ppo
    };
    c.bench_function("ppo/update_2000steps_10x32_hidden64x64", |b| {
        b.iter_batched(
            fresh,
            |mut ppo| {
                RolloutLearner::update(&mut ppo, black_box(std::slice::from_ref(&rollout))).unwrap()
            },
            BatchSize::PerIteration,
        )
    });
}

criterion_group!(benches, bench_update);
criterion_main!(benches);
