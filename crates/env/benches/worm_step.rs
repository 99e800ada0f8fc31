//! Criterion benchmark of worm env steps per second (target: ≥ 50,000 control steps/s on one core).
//!
//! Each iteration runs 1,000 control steps, resetting whenever an episode
//! ends, so the reset (a fresh rapier world) is included at its real rate of
//! one per 1,000 steps. Actions are a travelling wave (what a swimming
//! policy does) or uniform noise (what an untrained policy does); both are
//! precomputed so only the environment is measured.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use shoal_rl_core::{Env, Space, rng_from_seed};
use shoal_rl_env::{Worm, WormConfig, travelling_wave};

const STEPS_PER_ITERATION: u64 = 1_000;

/// Steps `worm` for one iteration, cycling through `actions`.
fn run(worm: &mut Worm, actions: &[Vec<f32>], next: &mut usize) {
    for _ in 0..STEPS_PER_ITERATION {
        let step = worm.step(&actions[*next]).expect("valid action");
        *next = (*next + 1) % actions.len();
        if step.done() {
            black_box(worm.reset(None));
        } else {
            black_box(step.obs);
        }
    }
}

fn wave_actions(cfg: &WormConfig) -> Vec<Vec<f32>> {
    (0..1000)
        .map(|k| {
            travelling_wave(
                k as f64 * cfg.control_dt as f64,
                1.0,
                9.0,
                -1.6,
                cfg.links - 1,
            )
        })
        .collect()
}

fn random_actions(cfg: &WormConfig) -> Vec<Vec<f32>> {
    let space = Space::uniform(cfg.links - 1, -1.0, 1.0);
    let mut rng = rng_from_seed(1);
    (0..4096).map(|_| space.sample(&mut rng)).collect()
}

fn bench_worm(c: &mut Criterion) {
    let mut group = c.benchmark_group("env_steps");
    group.throughput(Throughput::Elements(STEPS_PER_ITERATION));
    for (name, cfg) in [
        ("worm", WormConfig::default()),
        ("worm/5-links", WormConfig::default().links(5)),
    ] {
        for (policy, actions) in [
            ("wave", wave_actions(&cfg)),
            ("random", random_actions(&cfg)),
        ] {
            let mut worm = Worm::new(cfg.clone()).expect("valid config");
            worm.reset(Some(0));
            let mut next = 0;
            group.bench_function(format!("{name}/{policy}"), |b| {
                b.iter(|| run(&mut worm, &actions, &mut next))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_worm);
criterion_main!(benches);
