//! Teach the worm to swim with REINFORCE and a Beta policy, through the
//! library API rather than the CLI, and compare it with the best open-loop
//! travelling wave.
//!
//! ```text
//! cargo run --release --example reinforce_worm -- 2000
//! ```
//!
//! The argument is the number of training episodes (default 1000; about a
//! minute in release mode). `shoal train worm-reinforce` does the same with
//! metrics, checkpoints and plots.

use shoal_rl::algo::{Reinforce, ReinforceConfig};
use shoal_rl::core::Learner;
use shoal_rl::env::{Worm, WormConfig, best_travelling_wave};

fn main() -> Result<(), shoal_rl::core::Error> {
    let episodes: usize = match std::env::args().nth(1) {
        Some(arg) => arg.parse().map_err(|_| {
            shoal_rl::core::Error::Config(format!("episodes must be a number, got {arg:?}"))
        })?,
        None => 1000,
    };
    let config = WormConfig::default();
    let seed = 0;
    let mut agent = Reinforce::new(
        ReinforceConfig::default(),
        Worm::new(config.clone())?,
        Worm::new(config.clone())?,
        seed,
    )?;
    let gait = best_travelling_wave(&config, seed);
    println!(
        "reference gait: amplitude {:.2}, omega {:.2} rad/s, phase {:.2} rad -> return {:.1} ({:.3} m/s)",
        gait.amplitude, gait.omega, gait.phase, gait.episode_return, gait.speed
    );
    let report_every = (episodes / 10).max(1);
    let mut done = 0;
    while done < episodes {
        let chunk = report_every.min(episodes - done);
        let report = agent.learn(chunk)?;
        done += chunk;
        let train = report.episode_returns.iter().sum::<f64>() / chunk as f64;
        let eval = agent.evaluate(5, 1_000)?;
        println!(
            "episode {done:>6}: train return {train:8.1}, frozen-policy eval {:8.1} ({:.0}% of the gait)",
            eval.return_mean,
            100.0 * eval.return_mean / gait.episode_return
        );
    }
    Ok(())
}
