//! shoal-rl-eval: the files of a training run — metrics log, summary,
//! checkpoints and learning-curve plots.
//!
//! A run directory ([`RunDir`]) holds:
//!
//! | file | written by | content |
//! |---|---|---|
//! | `config.toml` | [`RunDir::write_config`] | the fully resolved configuration |
//! | `metrics.jsonl` | [`MetricsLog`] | one JSON [`Record`] per line: `kind`, `episode`, `env_steps`, `wall_s`, namespaced scalars |
//! | `summary.json` | [`Summary::write`] | headline numbers; `eval_return_mean` / `eval_success_rate` are `null` where they do not apply |
//! | `checkpoints/` | [`CheckpointWriter`] | numbered checkpoints of named state blobs, the config and a checksummed meta file, plus a `latest` pointer |
//! | `plots/` | [`plot_runs`] | PNG learning curves |
//! | `run.lock` | [`RunLock`] | locked by the one process training in the directory; names it while held |
//!
//! Beyond one run's files:
//!
//! - **Rollout pictures** ([`render_worm`], [`render_arm`], [`render_gif`]):
//!   an animated GIF of an episode plus a PNG of its last frame, drawn in
//!   pure Rust from plain numbers ([`WormFrameInput`], [`ArmFrameInput`]) or
//!   from a hand-built [`Scene`] and [`Frame`]s of [`Shape`]s, so
//!   environments never touch drawing code.
//! - **Run comparison** ([`compare_runs`] → [`ComparisonTable`]): preset,
//!   seed, workers and the headline numbers of several runs, printed as
//!   aligned text ([`ComparisonTable::to_terminal`]) or Markdown
//!   ([`ComparisonTable::to_markdown`]).
//!
//! Every file is written so that a run killed at any instant leaves nothing
//! half-written: whole files go through [`atomic_write`] (temp file, fsync,
//! rename), the metrics log is append-only with one write per line, and a
//! checkpoint is complete before `latest` points at it. Loading verifies
//! lengths and CRC-32s, and bad input is a [`shoal_rl_core::Error`] naming the
//! file (`Error::File { path, reason }`), never a panic.
//!
//! The crate knows nothing of burn or rapier3d: learner and replay states
//! arrive as bytes.
//!
//! # Example: a run, a crash, a resume
//!
//! ```
//! use shoal_rl_eval::{
//!     CheckpointWriter, MetricsLog, Progress, Record, RecordKind, RunDir, Summary,
//!     check_config_matches, load_latest, plot_runs, read_metrics,
//! };
//!
//! # fn main() -> shoal_rl_core::Result<()> {
//! let run = RunDir::new(std::env::temp_dir().join(format!("shoal-doc-crate-{}", std::process::id())));
//! # let _ = std::fs::remove_dir_all(run.path());
//! let config = "preset = \"worm-reinforce\"\nseed = 3\n[algo]\nhidden = 64\n";
//! run.create()?;
//! run.write_config(config)?;
//!
//! // Train: log each episode, checkpoint every 10 (after logging them).
//! let mut log = MetricsLog::open(run.path())?;
//! for episode in 1..=25u64 {
//!     let (env_steps, wall_s) = (episode * 100, episode as f64 * 0.1);
//!     log.write(&Record::new(RecordKind::Episode, episode, env_steps, wall_s)
//!         .scalar("charts/episodic_return", episode as f64))?;
//!     if episode % 10 == 0 {
//!         let progress = Progress { episodes: episode, env_steps, wall_s, iteration: 0, seed: 3 };
//!         CheckpointWriter::new(run.path(), config, progress)
//!             .blob("learner", format!("weights after {episode}").into_bytes())
//!             .blob("replay", vec![0u8; 64])
//!             .commit()?;
//!     }
//! }
//! // ... the process is killed after episode 25; restart with `--resume`:
//! let checkpoint = load_latest(run.path())?;
//! check_config_matches(checkpoint.config(), config, &["run.episodes"])?;
//! assert_eq!(checkpoint.blob("learner")?, b"weights after 20");
//! let mut log = MetricsLog::resume(run.path(), checkpoint.progress().episodes)?;
//! assert_eq!(read_metrics(run.path())?.len(), 20); // episodes 21..=25 are redone
//! for episode in 21..=30u64 {
//!     log.write(&Record::new(RecordKind::Episode, episode, episode * 100, episode as f64 * 0.1)
//!         .scalar("charts/episodic_return", episode as f64))?;
//! }
//!
//! Summary { episodes: 30, env_steps: 3000, wall_s: 3.0, ..Default::default() }
//!     .eval(10, 29.5, None)
//!     .write(run.path())?;
//! assert_eq!(Summary::read(run.path())?.eval_return_mean, Some(29.5));
//! let pngs = plot_runs(&[run.path()], run.plots())?;
//! assert!(pngs[0].ends_with("plots/return_vs_episode.png"));
//! # std::fs::remove_dir_all(run.path()).unwrap();
//! # Ok(())
//! # }
//! ```
//!
//! `cargo run -p shoal-rl-eval --example run_dir_tour` writes a few synthetic
//! runs (three seeds of one preset, one hierarchical agent) and their plots.

#![deny(missing_docs)]

mod canvas;
mod checkpoint;
mod compare;
mod config_check;
mod fsio;
mod lock;
mod metrics;
mod plot;
mod render;
mod run_dir;
mod summary;
mod tensorboard;

pub use checkpoint::{
    CHECKPOINT_FORMAT_VERSION, Checkpoint, CheckpointMeta, CheckpointSelector, CheckpointWriter,
    FileCheck, Progress, list_checkpoints, load_checkpoint, load_latest,
};
pub use compare::{ComparisonTable, compare_groups, compare_runs, median, median_and_range};
pub use config_check::check_config_matches;
pub use fsio::atomic_write;
pub use lock::{LOCK_FILE, RunLock};
pub use metrics::{MetricsLog, Record, RecordKind, read_metrics, truncate_metrics};
pub use plot::{
    EVAL_FILE, EVAL_VS_STEPS_FILE, EVAL_VS_WALL_FILE, HER_FILE, LEVELS_FILE, LOSSES_FILE,
    PANEL_HEIGHT, PLOT_HEIGHT, PLOT_WIDTH, RETURN_VS_EPISODE_FILE, RETURN_VS_WALL_FILE,
    ScalingCurves, ScalingPoint, plot_runs, plot_scaling,
};
#[cfg(feature = "env")]
pub use render::ChainTask;
pub use render::{
    ArmFrameInput, ArmLayout, ArmObject, Bounds, ChainFrameInput, Frame, FrameView, RenderOptions,
    Rgb, RgbImage, Scene, Shape, Trail, View, WormFrameInput, arm_scene, chain_scene, draw_frame,
    render_arm, render_arm_with, render_chain, render_gif, render_worm, render_worm_with,
    worm_scene,
};
pub use run_dir::{CHECKPOINTS_DIR, CONFIG_FILE, METRICS_FILE, PLOTS_DIR, RunDir, SUMMARY_FILE};
pub use summary::{Reference, Summary, Target, TargetReached};
pub use tensorboard::{EventWriter, TENSORBOARD_DIR};

/// The README's example, compiled and run with the doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
