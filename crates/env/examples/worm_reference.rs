//! Prints the worm's reference numbers: the best travelling-wave gait, a random policy's return, and env steps/s.
//!
//! ```text
//! cargo run --release -p shoal-rl-env --example worm_reference [-- LINKS]
//! ```

use std::time::Instant;

use shoal_rl_core::{Env, rng_from_seed};
use shoal_rl_env::{Worm, WormConfig, best_travelling_wave};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let links = match std::env::args().nth(1) {
        Some(arg) => arg.parse()?,
        None => 3,
    };
    let config = WormConfig::default().links(links);

    let started = Instant::now();
    let gait = best_travelling_wave(&config, 0);
    let search_s = started.elapsed().as_secs_f64();

    let mut worm = Worm::new(config.clone())?;
    let episodes = 40;
    let actions: Vec<Vec<f32>> = {
        let mut rng = rng_from_seed(1);
        (0..4096)
            .map(|_| worm.action_space().sample(&mut rng))
            .collect()
    };
    let mut returns = Vec::with_capacity(episodes);
    let mut steps = 0usize;
    let started = Instant::now();
    for episode in 0..episodes as u64 {
        worm.reset(Some(episode));
        let mut episode_return = 0.0f64;
        loop {
            let step = worm.step(&actions[steps % actions.len()])?;
            steps += 1;
            episode_return += step.reward as f64;
            if step.done() {
                break;
            }
        }
        returns.push(episode_return);
    }
    let steps_per_s = steps as f64 / started.elapsed().as_secs_f64();
    let mean = returns.iter().sum::<f64>() / returns.len() as f64;
    let std =
        (returns.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / returns.len() as f64).sqrt();

    println!("{{");
    println!("  \"env\": \"worm\", \"links\": {links},");
    println!(
        "  \"best_gait\": {{\"amplitude\": {}, \"omega\": {}, \"phase\": {:.2}, \"return\": {:.1}, \
         \"speed_m_per_s\": {:.3}, \"distance_m\": {:.2}, \"search_s\": {search_s:.2}}},",
        gait.amplitude, gait.omega, gait.phase, gait.episode_return, gait.speed, gait.distance
    );
    println!(
        "  \"random_policy\": {{\"episodes\": {episodes}, \"return_mean\": {mean:.1}, \
         \"return_std\": {std:.1}}},"
    );
    println!("  \"steps_per_s\": {steps_per_s:.0}");
    println!("}}");
    Ok(())
}
