//! DDPG + HER learns the sparse-reward point-goal task in seconds.

use shoal_rl_algo::{Ddpg, DdpgConfig};
use shoal_rl_core::Learner;
use shoal_rl_env::{PointGoal, PointGoalConfig};

fn point() -> PointGoal {
    PointGoal::new(PointGoalConfig::default()).unwrap()
}

#[test]
fn ddpg_with_her_learns_point_goal() {
    // Baselines' defaults, with smaller networks and fewer batches per cycle.
    let config = DdpgConfig {
        hidden: vec![64, 64],
        batch_size: 128,
        n_batches: 10,
        buffer_size: 100_000,
        ..DdpgConfig::default()
    };
    let mut agent = Ddpg::new(config, point(), point(), 42).unwrap();
    let untrained = agent.evaluate(50, 1_000).unwrap().success_rate.unwrap();
    agent.learn(600).unwrap();
    let trained = agent.evaluate(50, 1_000).unwrap().success_rate.unwrap();
    eprintln!("point-goal success rate: untrained {untrained}, after 600 episodes {trained}");
    // Measured: 0.0 → 0.88 (seeded, deterministic).
    assert!(
        trained >= 0.6 && trained >= untrained + 0.5,
        "{untrained} -> {trained}"
    );
}
