//! Using a trained policy from Rust: load a run directory's best (or
//! latest) checkpoint and act with it in a fresh instance of its env.
//!
//! ```text
//! shoal train worm-ppo --out runs/ppo
//! cargo run --release --example use_policy -- runs/ppo best
//! ```
//!
//! Prints one line per episode: its return and length. The policy acts
//! deterministically (exploration off) on the run's evaluation seeds, so
//! the returns are those `shoal eval` reports for the same checkpoint.
//! Given a seed after the episode count, it samples its actions instead,
//! as the learner explored (`use_policy runs/ppo best 3 7`).

use shoal_rl::core::{Error, Result};
use shoal_rl::eval::CheckpointSelector;
use shoal_rl::train::{eval_seed, load_policy};

fn main() {
    if let Err(error) = run() {
        eprintln!("error: {error}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [run_dir, which, ..] = args.as_slice() else {
        return Err(Error::Config(
            "usage: use_policy RUN_DIR latest|best|N [EPISODES [SAMPLE_SEED]]".into(),
        ));
    };
    let episodes: u64 = match args.get(2) {
        Some(n) => n
            .parse()
            .map_err(|_| Error::Config(format!("EPISODES must be a count, got `{n}`")))?,
        None => 3,
    };
    let mut sampler = match args.get(3) {
        Some(seed) => Some(shoal_rl::core::rng_from_seed(seed.parse().map_err(
            |_| Error::Config(format!("SAMPLE_SEED must be a whole number, got `{seed}`")),
        )?)),
        None => None,
    };
    let policy = load_policy(run_dir.as_ref(), &CheckpointSelector::parse(which))?;
    let mut env = policy.make_env()?;
    let first_seed = eval_seed(policy.config());
    for episode in 0..episodes {
        let mut obs = env.reset(Some(first_seed.wrapping_add(episode)));
        let (mut total, mut steps) = (0.0, 0u64);
        loop {
            let action = match &mut sampler {
                Some(rng) => policy.sample(&obs, rng)?,
                None => policy.act(&obs)?,
            };
            let step = env.step(&action)?;
            total += step.reward as f64;
            steps += 1;
            if step.done() {
                break;
            }
            obs = step.obs;
        }
        println!("episode {episode}: return {total} in {steps} steps");
    }
    Ok(())
}
