//! A tour of a run directory with synthetic data: config, metrics, checkpoints, summary, plots.
//!
//! `cargo run -p shoal-rl-eval --example run_dir_tour -- [OUT_DIR]` writes three seeds of a fake
//! "worm-reinforce" run and one hierarchical "push-hac" run under OUT_DIR (default
//! `target/run_dir_tour`), then plots each run alone and all of them overlaid.

use std::path::{Path, PathBuf};

use shoal_rl_eval::{
    CheckpointWriter, MetricsLog, Progress, Record, RecordKind, RunDir, Summary, load_latest,
    plot_runs,
};

/// xorshift64: deterministic noise without a dependency.
fn noise(state: &mut u64) -> f64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    (*state % 10_000) as f64 / 10_000.0 - 0.5
}

fn fake_run(
    root: &Path,
    name: &str,
    preset: &str,
    seed: u64,
    episodes: u64,
) -> shoal_rl_core::Result<PathBuf> {
    let run = RunDir::new(root.join(name));
    let _ = std::fs::remove_dir_all(run.path());
    run.create()?;
    let config = format!("preset = \"{preset}\"\nseed = {seed}\n\n[algo]\nlr = 0.001\n");
    run.write_config(&config)?;
    let hierarchical = preset.ends_with("hac");
    let mut log = MetricsLog::open(run.path())?;
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let rate = 3.0 + seed as f64;
    for episode in 1..=episodes {
        let progress = episode as f64 / episodes as f64;
        let wall_s = episode as f64 * 0.9;
        let env_steps = episode * 1000;
        let learned = 1.0 - (-rate * progress).exp();
        let record = Record::new(RecordKind::Episode, episode, env_steps, wall_s).scalar(
            "charts/episodic_return",
            180.0 * learned + 25.0 * noise(&mut state),
        );
        log.write(&record)?;
        let mut update = Record::new(RecordKind::Update, episode, env_steps, wall_s).scalar(
            "losses/policy",
            0.4 * (1.0 - learned) + 0.05 * noise(&mut state),
        );
        if hierarchical {
            update = update
                .scalar(
                    "level0/losses/critic",
                    2.0 * (1.0 - learned) + 0.2 * noise(&mut state),
                )
                .scalar("level0/losses/actor", -learned)
                .scalar(
                    "level1/losses/critic",
                    4.0 * (1.0 - learned) + 0.3 * noise(&mut state),
                )
                .scalar("level1/losses/actor", -0.8 * learned);
        }
        log.write(&update)?;
        if episode % 25 == 0 {
            let eval = Record::new(RecordKind::Eval, episode, env_steps, wall_s)
                .scalar(
                    "eval/return_mean",
                    185.0 * learned + 5.0 * noise(&mut state),
                )
                .scalar("eval/success_rate", learned.min(1.0));
            log.write(&eval)?;
        }
        if episode % 100 == 0 {
            let progress = Progress {
                episodes: episode,
                env_steps,
                wall_s,
                iteration: 0,
                seed,
            };
            CheckpointWriter::new(run.path(), &config, progress)
                .blob("learner", episode.to_le_bytes().to_vec())
                .commit()?;
        }
    }
    let checkpoint = load_latest(run.path())?;
    Summary {
        episodes,
        env_steps: episodes * 1000,
        wall_s: episodes as f64 * 0.9,
        ..Default::default()
    }
    .eval(10, 180.0, None)
    .extra("resumable_from_episode", checkpoint.progress().episodes)
    .write(run.path())?;
    Ok(run.path().to_path_buf())
}

fn main() -> shoal_rl_core::Result<()> {
    let root = std::env::args()
        .nth(1)
        .map_or_else(|| PathBuf::from("target/run_dir_tour"), PathBuf::from);
    let mut runs = Vec::new();
    for seed in 1..=3 {
        runs.push(fake_run(
            &root,
            &format!("worm-seed{seed}"),
            "worm-reinforce",
            seed,
            400 + 50 * seed,
        )?);
    }
    runs.push(fake_run(&root, "push-hac-seed1", "push-hac", 1, 300)?);
    for run in &runs {
        for path in plot_runs(&[run], run.join("plots"))? {
            println!("{}", path.display());
        }
    }
    for path in plot_runs(&runs, root.join("compare"))? {
        println!("{}", path.display());
    }
    Ok(())
}
