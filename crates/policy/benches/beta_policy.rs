//! Criterion benches of the Beta policy: acting at batch 1 and one
//! forward + backward + Adam step over a 1000-step episode.

use std::hint::black_box;

use burn::module::Module;
use criterion::{Criterion, criterion_group, criterion_main};
use shoal_rl_policy::{BetaPolicyConfig, Trained, rows_to_tensor, training_device};

fn bench_beta_policy(c: &mut Criterion) {
    let device = training_device();
    let plain = device.clone().inner();
    let net = BetaPolicyConfig::new(8, 2).init(0, &device);
    let acting = net.valid();
    let obs = [0.1f32; 8];
    c.bench_function("beta_policy/act_batch1", |b| {
        b.iter(|| black_box(acting.distribution(black_box(&obs), &plain)))
    });

    let mut trained = Trained::adam(net, 3e-4, Some(0.5));
    let batch = vec![0.1f32; 1000 * 8];
    c.bench_function("beta_policy/update_batch1000", |b| {
        b.iter(|| {
            let (alpha, beta) = trained.module().forward(rows_to_tensor(&batch, 8, &device));
            let loss = (alpha - beta).sum();
            let mut grads = trained.take_grads(&mut loss.backward());
            trained.step(&mut grads).unwrap();
        })
    });
}

criterion_group!(benches, bench_beta_policy);
criterion_main!(benches);
