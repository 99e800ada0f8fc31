//! The commands behind the `shoal` binary, callable from tests.

use std::path::{Path, PathBuf};
use std::time::Duration;

use shoal_rl_core::{Error, Result};
use shoal_rl_eval::{CheckpointSelector, RunDir};

use crate::config::{PRESETS, RunConfig, commented, key_docs, preset};
use crate::train::{MAX_EVAL_EPISODES, Plan, check_config, eval_seed, load_run, run};
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

/// The settings flags `shoal train` and `shoal config` share.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SettingsArgs {
    /// Override one setting, e.g. `--set algo.learning_rate=1e-3` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// Master seed (shorthand for --set seed=N).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Worker count (shorthand for --set parallel.workers=N).
    #[arg(long)]
    pub workers: Option<usize>,
    /// threads, processes or mpi (shorthand for --set parallel.backend=...).
    #[arg(long)]
    pub backend: Option<String>,
    /// Train for N env steps, as Stable-Baselines3's total_timesteps: ends
    /// with the update (a PPO rollout, a DDPG cycle) whose episodes reach
    /// them (shorthand for --set train.env_steps=N --set train.episodes=N;
    /// one learner only).
    #[arg(long, value_name = "N", value_parser = parse_count)]
    pub steps: Option<usize>,
}

impl SettingsArgs {
    /// Every setting as a `KEY=VALUE` override, the shorthands last.
    pub fn overrides(&self) -> Vec<String> {
        let mut overrides = self.overrides.clone();
        if let Some(seed) = self.seed {
            overrides.push(format!("seed={seed}"));
        }
        if let Some(workers) = self.workers {
            overrides.push(format!("parallel.workers={workers}"));
        }
        if let Some(backend) = &self.backend {
            overrides.push(format!("parallel.backend=\"{backend}\""));
        }
        if let Some(steps) = self.steps {
            // Every episode takes a step, so N episodes never end the run first.
            overrides.push(format!("train.env_steps={steps}"));
            overrides.push(format!("train.episodes={steps}"));
        }
        overrides
    }
}

/// Arguments of `shoal train`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct TrainArgs {
    /// A preset name (see below) or a path to a config.toml.
    pub source: Option<String>,
    #[command(flatten)]
    pub settings: SettingsArgs,
    /// Run directory (default: `runs/<preset>`, numbered if it exists).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Continue the run in DIR from its latest checkpoint.
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,
    /// With --resume: continue from checkpoint N (`ckpt-N` in DIR/checkpoints)
    /// or from a checkpoint folder given by path, instead of the latest.
    #[arg(long, value_name = "N|PATH", requires = "resume")]
    pub checkpoint: Option<String>,
    /// No progress output.
    #[arg(long)]
    pub quiet: bool,
    /// When stderr is no terminal (a log file, Slurm): seconds between two
    /// status lines (episodes, env steps, recent return and success,
    /// steps/s). The first comes as soon as the first episodes end.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0, value_parser = parse_seconds)]
    pub status_every: f64,
}

/// The `--help` epilogue of `shoal train`: presets and settable keys.
pub fn train_help() -> String {
    let mut text = String::from("Presets:\n");
    for p in PRESETS {
        text.push_str(&format!("  {:<16} {}\n", p.name, p.about()));
    }
    let registries = crate::config::Registries::default();
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

impl TrainArgs {
    /// What to do with `cfg` (from [`TrainArgs::resolve`]): where, and
    /// whether to resume.
    pub fn plan(&self, cfg: RunConfig) -> Plan {
        Plan {
            cfg,
            out: self.out.clone(),
            resume: self.resume.clone(),
            checkpoint: self.checkpoint.clone(),
            quiet: self.quiet,
            status_every: Some(Duration::from_secs_f64(self.status_every)),
        }
    }

    /// The config this invocation asks for (before any resume check).
    pub fn resolve(&self) -> Result<RunConfig> {
        let overrides = self.settings.overrides();
        match (&self.source, &self.resume) {
            (Some(source), _) => RunConfig::resolve(source, &overrides),
            (None, Some(dir)) => {
                let path = RunDir::new(dir).config();
                RunConfig::resolve(&path.to_string_lossy(), &overrides)
            }
            (None, None) => Err(Error::Config(
                "give a preset or config.toml to train, or --resume DIR".into(),
            )),
        }
    }
}

/// `shoal train`.
pub fn train(args: TrainArgs) -> Result<()> {
    let cfg = args.resolve()?;
    validate(&cfg)?;
    let plan = args.plan(cfg);
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

fn validate(cfg: &RunConfig) -> Result<()> {
    cfg.parallel.validate()?;
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
    let cfg = RunConfig::resolve(&args.source, &args.settings.overrides())?;
    check_config(&cfg)?;
    print!("{}", commented(&cfg.to_toml(), &key_docs(&cfg)?));
    Ok(())
}

/// A number of seconds in (0, 86400], for `--status-every`.
pub fn parse_seconds(text: &str) -> std::result::Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(s) if s > 0.0 && s <= 86_400.0 => Ok(s),
        _ => Err(format!("expected seconds in (0, 86400], got `{text}`")),
    }
}

/// `shoal eval`.
pub fn eval(run_dir: &Path, episodes: usize, checkpoint: &str) -> Result<()> {
    check_episodes_flag(episodes, MAX_EVAL_EPISODES)?;
    let (cfg, mut learner) = load_run(run_dir, &parse_checkpoint(checkpoint)?)?;
    let report = learner.evaluate(episodes, eval_seed(&cfg))?;
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

/// A count on the command line: digits, or a whole number in exponent
/// notation (`1e3`). Too large a count saturates, so that the range check
/// after parsing names it in one line.
///
/// ```
/// use shoal_rl::cli::parse_count;
/// assert_eq!(parse_count("20"), Ok(20));
/// assert_eq!(parse_count("1e3"), Ok(1000));
/// assert_eq!(parse_count("99999999999999999999999"), Ok(usize::MAX));
/// for bad in ["1.5", "-1", "inf", "nan", "many", ""] {
///     assert!(parse_count(bad).is_err(), "{bad}");
/// }
/// ```
pub fn parse_count(text: &str) -> std::result::Result<usize, String> {
    if let Ok(n) = text.parse::<usize>() {
        return Ok(n);
    }
    match text.parse::<f64>() {
        Ok(x) if x >= 0.0 && x.fract() == 0.0 => Ok(if x >= usize::MAX as f64 {
            usize::MAX
        } else {
            x as usize
        }),
        _ if text.bytes().all(|b| b.is_ascii_digit()) && !text.is_empty() => Ok(usize::MAX),
        _ => Err(format!("`{text}` is not a whole number")),
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
