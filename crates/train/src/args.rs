//! `shoal train`'s command-line flags as clap arguments (feature `cli`), for
//! a program of one's own that trains like `shoal train`: flatten
//! [`TrainArgs`] into its parser, then [`TrainArgs::resolve_in`] and
//! [`TrainArgs::plan`] give the config and the plan to
//! [`Registries::run`].

use std::path::PathBuf;
use std::time::Duration;

use shoal_rl_core::{Error, Result};
use shoal_rl_eval::RunDir;

use shoal_rl_run::RunOptions;

use crate::config::RunConfig;
use crate::plan::Plan;
use crate::registries::Registries;

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
    /// with the update (a PPO rollout, a DDPG cycle) or the parallel
    /// iteration whose episodes reach them (shorthand for --set
    /// train.env_steps=N --set train.episodes=N).
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

impl TrainArgs {
    /// What to do with `cfg` (from [`TrainArgs::resolve`]): where, and
    /// whether to resume.
    pub fn plan(&self, cfg: RunConfig) -> Plan {
        Plan {
            cfg,
            options: RunOptions {
                out: self.out.clone(),
                resume: self.resume.clone(),
                checkpoint: self.checkpoint.clone(),
                quiet: self.quiet,
                status_every: Some(Duration::from_secs_f64(self.status_every)),
                ..RunOptions::default()
            },
        }
    }

    /// The config this invocation asks for (before any resume check).
    pub fn resolve(&self) -> Result<RunConfig> {
        self.resolve_in(&Registries::default())
    }

    /// [`TrainArgs::resolve`] with the envs, algorithms and strategies of
    /// `registries`.
    pub fn resolve_in(&self, registries: &Registries) -> Result<RunConfig> {
        let overrides = self.settings.overrides();
        match (&self.source, &self.resume) {
            (Some(source), _) => registries.resolve(source, &overrides),
            (None, Some(dir)) => {
                let path = RunDir::new(dir).config();
                registries.resolve(&path.to_string_lossy(), &overrides)
            }
            (None, None) => Err(Error::Config(
                "give a preset or config.toml to train, or --resume DIR".into(),
            )),
        }
    }
}

/// A count on the command line: digits, or a whole number in exponent
/// notation (`1e3`). Too large a count saturates, so that the range check
/// after parsing names it in one line.
///
/// ```
/// use shoal_rl_train::args::parse_count;
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

/// A number of seconds in (0, 86400], for `--status-every`.
pub fn parse_seconds(text: &str) -> std::result::Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(s) if s > 0.0 && s <= 86_400.0 => Ok(s),
        _ => Err(format!("expected seconds in (0, 86400], got `{text}`")),
    }
}
