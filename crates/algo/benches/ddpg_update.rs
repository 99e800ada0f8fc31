//! Criterion benches of DDPG: one update (batch 256, two 256-unit hidden layers, actor + critic;
//! then TD3's and SAC's with twin critics) and drawing one HER batch of 256 from a full-sized
//! replay buffer.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use rand::RngExt;
use shoal_rl_algo::{
    ActorCritic, ActorCriticConfig, ActorKind, Episode, EpisodeDims, HerConfig, NetBatch,
    ReplayBuffer, TemperatureConfig, TransitionBatch, UpdateSettings, WithinDistance, sample_batch,
};
use shoal_rl_core::{Alone, rng_from_seed};

/// Network input width: a 25 + 3 + 3 arm-push observation, as an upper bound
/// of the 25 + 3 the agent feeds (observation ‖ desired goal).
const INPUT: usize = 31;
const ACT: usize = 4;
const BATCH: usize = 256;

fn random_batch(rows: usize) -> NetBatch {
    let mut rng = rng_from_seed(0);
    let mut values = |n: usize| {
        (0..n)
            .map(|_| rng.random_range(-1.0f32..1.0))
            .collect::<Vec<_>>()
    };
    NetBatch {
        inputs: values(rows * INPUT),
        next_inputs: values(rows * INPUT),
        actions: values(rows * ACT),
        rewards: values(rows)
            .into_iter()
            .map(|v| if v > 0.6 { 0.0 } else { -1.0 })
            .collect(),
        terminals: (0..rows).map(|i| i % 17 == 0).collect(),
        next_action_noise: Vec::new(),
        action_noise: Vec::new(),
    }
}

fn bench_update(c: &mut Criterion) {
    let config = ActorCriticConfig {
        input_dim: INPUT,
        act_dim: ACT,
        hidden: vec![256, 256],
        actor_lr: 1e-3,
        critic_lr: 1e-3,
        max_grad_norm: None,
        value_bound: None,
        critics: 1,
        actor: ActorKind::Deterministic,
        temperature: TemperatureConfig::default(),
    };
    let mut networks = ActorCritic::new(&config, 0);
    let batch = random_batch(BATCH);
    let settings = UpdateSettings::ddpg(0.98, 1.0, Some((-50.0, 0.0)));
    c.bench_function("ddpg/update_batch256_hidden256x256", |b| {
        b.iter(|| {
            black_box(
                networks
                    .update(black_box(&batch), &settings, &mut Alone)
                    .unwrap(),
            )
        })
    });
    let input = vec![0.1f32; INPUT];
    c.bench_function("ddpg/act_batch1", |b| {
        b.iter(|| black_box(networks.act(black_box(&input))))
    });

    // TD3 and SAC at the same sizes: twin critics; TD3's smoothing noise
    // and SAC's draws at s and s' come with the batch.
    let mut rng = rng_from_seed(3);
    let mut batch = batch;
    let mut normals = || {
        (0..BATCH * ACT)
            .map(|_| rng.sample::<f32, _>(rand_distr::StandardNormal))
            .collect::<Vec<_>>()
    };
    batch.next_action_noise = normals();
    batch.action_noise = normals();
    for (name, actor) in [
        (
            "td3/update_batch256_hidden256x256",
            ActorKind::Deterministic,
        ),
        ("sac/update_batch256_hidden256x256", ActorKind::Gaussian),
    ] {
        let mut networks = ActorCritic::new(
            &ActorCriticConfig {
                critics: 2,
                actor,
                ..config.clone()
            },
            0,
        );
        let mut settings = UpdateSettings::ddpg(0.98, 0.0, None);
        let mut batch = batch.clone();
        if actor == ActorKind::Deterministic {
            settings.target_policy_noise = 0.2;
            settings.target_noise_clip = 0.5;
            batch.action_noise.clear(); // only SAC draws at s
        }
        c.bench_function(name, |b| {
            b.iter(|| {
                black_box(
                    networks
                        .update(black_box(&batch), &settings, &mut Alone)
                        .unwrap(),
                )
            })
        });
    }
}

/// One HAC level's update as the authors run it: batch 1 024, 3 × 64 ReLU
/// networks, the bounded critic (H = 10), no target networks.
fn bench_hac_level(c: &mut Criterion) {
    let config = ActorCriticConfig {
        input_dim: INPUT,
        act_dim: ACT,
        hidden: vec![64, 64, 64],
        actor_lr: 1e-3,
        critic_lr: 1e-3,
        max_grad_norm: None,
        value_bound: Some(10.0),
        critics: 1,
        actor: ActorKind::Deterministic,
        temperature: TemperatureConfig::default(),
    };
    let mut networks = ActorCritic::new(&config, 0);
    let batch = random_batch(1024);
    let mut settings = UpdateSettings::ddpg(0.98, 0.0, Some((-10.0, 0.0)));
    settings.target_networks = false;
    c.bench_function("hac/level_update_batch1024_hidden64x64x64", |b| {
        b.iter(|| {
            black_box(
                networks
                    .update(black_box(&batch), &settings, &mut Alone)
                    .unwrap(),
            )
        })
    });
}

/// Sparse −1/0 reward within 5 cm, like arm push.
const PUSH: WithinDistance = WithinDistance { threshold: 0.05 };

fn bench_her(c: &mut Criterion) {
    let dims = EpisodeDims {
        obs: 25,
        goal: 3,
        act: ACT,
    };
    let mut buffer = ReplayBuffer::new(dims, 100_000).unwrap();
    let mut rng = rng_from_seed(1);
    for _ in 0..2_000 {
        let mut values = |n: usize| {
            (0..n)
                .map(|_| rng.random_range(-1.0f32..1.0))
                .collect::<Vec<_>>()
        };
        let mut episode = Episode::start(dims, &values(25), &values(3));
        for _ in 0..50 {
            episode.push(&values(3), &values(ACT), &values(25), &values(3));
        }
        buffer.push(episode).unwrap();
    }
    let config = HerConfig::default();
    let mut batch = TransitionBatch::default();
    let mut rng = rng_from_seed(2);
    c.bench_function("her/sample_batch256_future_k4", |b| {
        b.iter(|| {
            batch.clear();
            sample_batch(&buffer, &config, BATCH, &PUSH, &mut rng, &mut batch);
            black_box(batch.len())
        })
    });
}

criterion_group!(benches, bench_update, bench_hac_level, bench_her);
criterion_main!(benches);
