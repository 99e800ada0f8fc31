//! The commands behind the `shoal` binary, callable from tests.

use std::path::{Path, PathBuf};

use shoal_rl_core::{Error, Result};
use shoal_rl_eval::{CheckpointSelector, RunDir};

use crate::config::MAX_EVAL_EPISODES;
use crate::train::presets::PRESETS;
use crate::train::reference::{commented, key_docs};
use crate::train::{Registries, eval_seed, load_run, preset, run};
pub use shoal_rl_train::args::{SettingsArgs, TrainArgs, parse_count, parse_seconds};
use shoal_rl_train::overrides::list_keys;

/// The `shoal` command line; `main` parses it, and tests parse the
/// documented commands with it.
#[derive(clap::Parser, Debug)]
#[command(
    name = "shoal",
    version,
    about = "Composable reinforcement learning: worms, arms, and parallel training"
)]
pub struct Cli {
    #[command(subcommand)]
    /// What to do.
    pub command: Command,
}

/// A `shoal` subcommand with its arguments.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Train an agent from a preset or a config.toml.
    Train(TrainArgs),
    /// Print the complete configuration (config.toml) that `shoal train`
    /// would run with the same preset and settings.
    Config(ConfigArgs),
    /// Evaluate a run's checkpoint (the latest unless --checkpoint says
    /// otherwise) with the policy frozen; prints JSON.
    Eval {
        /// The run directory.
        run_dir: PathBuf,
        /// Evaluation episodes.
        #[arg(long, value_parser = parse_count, default_value_t = 20)]
        episodes: usize,
        /// Which checkpoint: `latest`, `best` (the best-evaluated model) or
        /// a number N (`ckpt-N`).
        #[arg(long, default_value = "latest")]
        checkpoint: String,
        /// Reset seed of the first episode (episode i resets with SEED + i).
        /// Default: the run's evaluation seed, so the episodes are those of
        /// the run's own evaluations; another seed plays episodes the run
        /// never evaluated on, held out from the choice of `best`.
        #[arg(long)]
        seed: Option<u64>,
    },
    /// Write PNG learning curves of one or more runs.
    Plot {
        /// Run directories (several are overlaid on one figure).
        #[arg(required = true)]
        run_dirs: Vec<PathBuf>,
        /// Output directory (default: the first run's plots/).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Measure environment steps per second on one core; prints JSON.
    BenchEnv {
        /// The env to measure (the names are filled in from the bench table).
        env: String,
        /// Control steps to time.
        #[arg(long, default_value_t = 200_000)]
        steps: u64,
    },
    /// Render rollouts of a run's frozen policy to an animated GIF (+ PNG of the last frame).
    Render {
        /// The run directory.
        run_dir: PathBuf,
        /// Episodes to render.
        #[arg(long, value_parser = parse_count, default_value_t = 1)]
        episodes: usize,
        /// Which checkpoint: `latest`, `best` (the best-evaluated model) or
        /// a number N (`ckpt-N`).
        #[arg(long, default_value = "latest")]
        checkpoint: String,
        /// Output GIF (default: RUN_DIR/render.gif).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Train a grid of settings × seeds (resumable); prints medians and
    /// ranges per setting.
    Sweep(crate::sweep::SweepArgs),
    /// Project a sweep over parallel.workers of profiled runs onto one
    /// core per worker: time to target, speedup, efficiency; writes
    /// scale.json and scale.png into the directory.
    Scale(crate::scale::ScaleArgs),
    /// Print the summaries of several runs side by side.
    Compare {
        /// Run directories.
        #[arg(required = true)]
        run_dirs: Vec<PathBuf>,
        /// Markdown table instead of aligned columns.
        #[arg(long)]
        markdown: bool,
    },
    /// Measure all-reduce latency (100k floats and the actor-critic's
    /// parameter count) and rollout throughput per backend with 1, 2, 4, …
    /// workers; prints JSON lines.
    BenchParallel {
        /// Measure only this backend (with --workers).
        #[arg(long)]
        backend: Option<String>,
        /// Measure only this worker count (with --backend).
        #[arg(long)]
        workers: Option<usize>,
        /// Worm episodes each worker collects.
        #[arg(long, default_value_t = 4)]
        episodes: usize,
        /// Without --backend: measure 1, 2, 4, … workers up to this many.
        #[arg(long, default_value_t = 2)]
        up_to: usize,
        /// With --backend and --workers: only the latency of an all-reduce
        /// of this many floats, and of one float.
        #[arg(long)]
        values: Option<usize>,
    },
}

/// The `--help` epilogue of `shoal train`: presets and settable keys.
pub fn train_help() -> String {
    let mut text = String::from("Presets:\n");
    for p in PRESETS {
        text.push_str(&format!("  {:<16} {}\n", p.name, p.about()));
    }
    let registries = Registries::default();
    text.push_str("\nAlgorithms (algo.kind):\n");
    for a in registries.algos.entries() {
        text.push_str(&format!("  {:<16} {}\n", a.kind, a.about));
    }
    text.push_str("\nStrategies (parallel.strategy):\n");
    for s in registries.strategies.entries() {
        text.push_str(&format!("  {:<16} {}\n", s.name, s.about));
    }
    text.push_str("\nEnvs (env.kind):\n");
    for e in registries.envs.entries() {
        text.push_str(&format!("  {:<16} {}\n", e.id, e.about));
    }
    text.push_str(
        "\nKeys for --set, with worm-reinforce's values (other algorithms and envs have \
         other keys: `shoal config PRESET` prints a preset's complete configuration):\n",
    );
    if let Ok(cfg) = preset("worm-reinforce") {
        for (key, value) in list_keys(&cfg.to_table()) {
            text.push_str(&format!("  {key} = {value}\n"));
        }
    }
    text
}

/// `shoal train`.
pub fn train(args: TrainArgs) -> Result<()> {
    let plan = args.plan(args.resolve()?);
    // On parallel runs only rank 0 gets a result; worker processes end here.
    if let Some((run_dir, summary)) = run(&plan)? {
        println!(
            "{}",
            serde_json::to_string_pretty(&summary).expect("summary is JSON")
        );
        eprintln!("run directory: {}", run_dir.display());
    }
    Ok(())
}

/// Arguments of `shoal config`.
#[derive(clap::Args, Debug, Clone)]
pub struct ConfigArgs {
    /// A preset name (as `shoal train` lists them) or a path to a config.toml.
    pub source: String,
    #[command(flatten)]
    pub settings: SettingsArgs,
}

/// `shoal config`: the complete configuration `shoal train` would run with
/// the same arguments, as the `config.toml` it would write, after the same
/// checks.
pub fn config(args: &ConfigArgs) -> Result<()> {
    let registries = Registries::default();
    let cfg = registries.resolve(&args.source, &args.settings.overrides())?;
    registries.check(&cfg)?;
    print!(
        "{}",
        commented(&cfg.to_toml(), &key_docs(&registries, &cfg)?)
    );
    Ok(())
}

/// `shoal eval`.
pub fn eval(run_dir: &Path, episodes: usize, checkpoint: &str, seed: Option<u64>) -> Result<()> {
    check_episodes_flag(episodes, MAX_EVAL_EPISODES)?;
    let (cfg, mut learner) = load_run(run_dir, &parse_checkpoint(checkpoint)?)?;
    let report = learner.evaluate(episodes, seed.unwrap_or_else(|| eval_seed(&cfg)))?;
    println!(
        "{}",
        serde_json::to_string_pretty(&report).expect("report is JSON")
    );
    Ok(())
}

/// `--checkpoint` of `eval` and `render`: `latest`, `best` or a number;
/// a path is refused (these commands read the run directory's own).
pub fn parse_checkpoint(text: &str) -> Result<CheckpointSelector> {
    match CheckpointSelector::parse(text) {
        CheckpointSelector::Dir(_) => Err(Error::Config(format!(
            "--checkpoint expects `latest`, `best` or a checkpoint number, got `{text}`"
        ))),
        which => Ok(which),
    }
}

/// `--episodes N` of `eval` and `render`, between 1 and `max`.
pub fn check_episodes_flag(episodes: usize, max: usize) -> Result<()> {
    if (1..=max).contains(&episodes) {
        Ok(())
    } else {
        Err(Error::Config(format!(
            "--episodes must be between 1 and {max}, got {episodes}"
        )))
    }
}

/// `shoal plot`.
pub fn plot(run_dirs: &[PathBuf], out: Option<&Path>) -> Result<()> {
    let out = match out {
        Some(out) => out.to_path_buf(),
        None => RunDir::new(&run_dirs[0]).plots(),
    };
    for path in shoal_rl_eval::plot_runs(run_dirs, &out)? {
        println!("{}", path.display());
    }
    Ok(())
}
