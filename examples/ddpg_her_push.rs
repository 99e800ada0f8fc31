//! DDPG + HER on the arm-push task with OpenAI baselines' defaults, printing
//! the learning curve epoch by epoch (an epoch is 50 cycles of 2 episodes).
//!
//! ```text
//! cargo run --release --example ddpg_her_push -- 30
//! ```
//!
//! The argument is the number of epochs (default 10). With one worker on one
//! core an epoch takes 10–20 s; success rises after about 15 epochs.
//! `shoal train push-ddpg-her` runs the same agent with metrics,
//! checkpoints (replay buffer included) and plots.

use shoal_rl::algo::{Ddpg, DdpgConfig};
use shoal_rl::core::Learner;
use shoal_rl::env::{ArmPush, ArmPushConfig};

fn main() -> Result<(), shoal_rl::core::Error> {
    // Batches of megabyte tensors: keep freed memory for reuse, as `shoal` does.
    shoal_rl::allocator::keep_freed_memory_for_reuse();
    let epochs: usize = match std::env::args().nth(1) {
        Some(arg) => arg.parse().map_err(|_| {
            shoal_rl::core::Error::Config(format!("epochs must be a number, got {arg:?}"))
        })?,
        None => 10,
    };
    let push = || ArmPush::new(ArmPushConfig::default());
    let mut agent = Ddpg::new(DdpgConfig::default(), push()?, push()?, 0)?;
    let eval_seed = 1_000_000;
    let untrained = agent.evaluate(50, eval_seed)?;
    println!(
        "epoch   0: eval success {:.2}",
        untrained.success_rate.unwrap_or(0.0)
    );
    let started = std::time::Instant::now();
    for epoch in 1..=epochs {
        let report = agent.learn(100)?;
        let successes = report.episode_successes.iter().filter(|s| **s).count();
        let eval = agent.evaluate(50, eval_seed)?;
        println!(
            "epoch {epoch:>3}: train success {:.2}, eval success {:.2}, {:.0} s",
            successes as f64 / report.episode_successes.len().max(1) as f64,
            eval.success_rate.unwrap_or(0.0),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
