//! Learning-curve PNGs from one or more run directories.

mod draw;
mod figures;
mod scaling;
mod series;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use shoal_rl_core::{Error, Result};

pub use draw::{PANEL_HEIGHT, PLOT_HEIGHT, PLOT_WIDTH};
pub use figures::{
    EVAL_FILE, EVAL_VS_STEPS_FILE, EVAL_VS_WALL_FILE, HER_FILE, LEVELS_FILE, LOSSES_FILE,
    RETURN_VS_EPISODE_FILE, RETURN_VS_WALL_FILE,
};
pub use scaling::{ScalingCurves, ScalingPoint, plot_scaling};

use crate::canvas::register_embedded_font;
use crate::fsio::create_dir_all;
use crate::metrics::read_metrics;
use crate::run_dir::{CONFIG_FILE, METRICS_FILE};
use figures::RunData;

/// Draws the learning curves of `run_dirs` into `out_dir` as PNGs and
/// returns the paths written. Several runs are overlaid, with a legend
/// labelled by run-directory name; runs whose `config.toml` agree in every
/// setting but the seed are drawn as their mean with the min–max range
/// shaded (against episodes and against wall time alike), so the spread
/// over seeds is seen before a difference between presets or settings is
/// believed. Such a group is labelled by its preset and the settings that
/// tell it from the other groups of that preset
/// (`ball-ddpg-her algo.her_strategy="final" (3 seeds)`).
///
/// Figures, each written only when the metrics hold its data:
///
/// | file | content |
/// |---|---|
/// | `return_vs_episode.png` | `charts/episodic_return` against `episode`: moving average, raw faint |
/// | `return_vs_wall.png` | the same against `wall_s` |
/// | `eval.png` | `eval/return_mean`, and `eval/success_rate` in a second panel when present |
/// | `eval_vs_wall.png` | the same against `wall_s` (how fast parallel training gets there) |
/// | `eval_vs_env_steps.png` | the same against `env_steps` (methods compared at equal experience) |
/// | `losses.png` | one panel per `losses/*` key |
/// | `her.png` | one panel per `her/*` share (hindsight goals by origin, DDPG + HER) |
/// | `levels.png` | one panel per level for keys `level0/…`, `level1/…` (hierarchical agents) |
///
/// A one-panel figure is [`PLOT_WIDTH`] × [`PLOT_HEIGHT`] pixels; one with
/// `n` panels is [`PLOT_WIDTH`] × `n` · [`PANEL_HEIGHT`]. Each PNG is
/// written to a temp file and renamed into place. Text uses DejaVu Sans
/// compiled into the binary, so no system font is needed.
///
/// Errors: no run directories, an unreadable or malformed `metrics.jsonl`,
/// or metrics with nothing to plot yet.
///
/// ```
/// use shoal_rl_eval::{MetricsLog, Record, RecordKind, plot_runs};
/// let run = std::env::temp_dir().join(format!("shoal-doc-plot-{}", std::process::id()));
/// let mut log = MetricsLog::open(&run).unwrap();
/// for episode in 1..=30u64 {
///     let record = Record::new(RecordKind::Episode, episode, episode * 50, episode as f64 * 0.1)
///         .scalar("charts/episodic_return", (episode as f64).sqrt());
///     log.write(&record).unwrap();
/// }
/// let written = plot_runs(&[run.clone()], run.join("plots")).unwrap();
/// assert!(written.iter().any(|p| p.ends_with("return_vs_episode.png")));
/// # std::fs::remove_dir_all(&run).unwrap();
/// ```
pub fn plot_runs<P: AsRef<Path>>(
    run_dirs: &[P],
    out_dir: impl AsRef<Path>,
) -> Result<Vec<PathBuf>> {
    let out_dir = out_dir.as_ref();
    let first = run_dirs
        .first()
        .ok_or_else(|| Error::Config("plotting needs at least one run directory".into()))?;
    let runs = run_dirs
        .iter()
        .map(|dir| load_run(dir.as_ref()))
        .collect::<Result<Vec<_>>>()?;
    let figures = figures::build_figures(&runs);
    if figures.is_empty() {
        return Err(Error::file(
            first.as_ref().join(METRICS_FILE),
            "no episode, evaluation or loss records to plot yet",
        ));
    }
    register_embedded_font()?;
    create_dir_all(out_dir)?;
    let mut written = Vec::with_capacity(figures.len());
    for (file_name, figure) in &figures {
        let path = out_dir.join(file_name);
        draw::render(figure, &path)?;
        written.push(path);
    }
    Ok(written)
}

/// Metrics plus the preset and seed from `config.toml`; a missing or
/// unreadable config only means the run is not grouped with others.
fn load_run(run_dir: &Path) -> Result<RunData> {
    let records = read_metrics(run_dir)?;
    let label = run_dir
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| run_dir.display().to_string());
    let config: Option<toml::Table> = std::fs::read_to_string(run_dir.join(CONFIG_FILE))
        .ok()
        .and_then(|text| text.parse().ok());
    let preset = config
        .as_ref()
        .and_then(|c| c.get("preset"))
        .and_then(|v| v.as_str())
        .map(str::to_string);
    let seed = config.as_ref().and_then(find_seed);
    let settings = config.as_ref().map(|config| {
        let mut settings = BTreeMap::new();
        flatten_settings("", config, &mut settings);
        settings
    });
    Ok(RunData {
        label,
        preset,
        seed,
        settings,
        records,
    })
}

/// Every leaf of `table` as `prefix.key` → its TOML text, except seeds.
fn flatten_settings(prefix: &str, table: &toml::Table, out: &mut BTreeMap<String, String>) {
    for (key, value) in table {
        if key == "seed" {
            continue;
        }
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match value {
            toml::Value::Table(inner) => flatten_settings(&path, inner, out),
            leaf => {
                out.insert(path, leaf.to_string());
            }
        }
    }
}

/// `seed` at the top level, or else in the first top-level table holding one.
fn find_seed(config: &toml::Table) -> Option<i64> {
    config
        .get("seed")
        .and_then(toml::Value::as_integer)
        .or_else(|| {
            config
                .values()
                .filter_map(toml::Value::as_table)
                .find_map(|table| table.get("seed").and_then(toml::Value::as_integer))
        })
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;
    use crate::fsio::testutil::TempDir;
    use crate::metrics::{MetricsLog, Record, RecordKind};
    use crate::run_dir::RunDir;

    /// A synthetic run: noisy rising returns, evals every 20 episodes, losses.
    fn synthetic_run(root: &Path, name: &str, seed: u64, episodes: u64, levels: bool) -> PathBuf {
        let run = RunDir::new(root.join(name));
        run.write_config(&format!("preset = \"worm-reinforce\"\nseed = {seed}\n"))
            .unwrap();
        let mut log = MetricsLog::open(run.path()).unwrap();
        let mut noise = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        for episode in 1..=episodes {
            noise ^= noise << 13;
            noise ^= noise >> 7;
            noise ^= noise << 17;
            let jitter = (noise % 1000) as f64 / 1000.0 - 0.5;
            let progress = episode as f64 / episodes as f64;
            let wall = episode as f64 * 0.7;
            log.write(
                &Record::new(RecordKind::Episode, episode, episode * 1000, wall)
                    .scalar("charts/episodic_return", 150.0 * progress + 30.0 * jitter),
            )
            .unwrap();
            let mut update = Record::new(RecordKind::Update, episode, episode * 1000, wall).scalar(
                "losses/policy",
                1.0 / (1.0 + progress * 10.0) + 0.05 * jitter,
            );
            if levels {
                update = update
                    .scalar("level0/losses/critic", 2.0 - progress)
                    .scalar("level1/losses/critic", 3.0 - 2.0 * progress)
                    .scalar("level1/losses/actor", -progress);
            }
            log.write(&update).unwrap();
            if episode % 20 == 0 {
                log.write(
                    &Record::new(RecordKind::Eval, episode, episode * 1000, wall)
                        .scalar("eval/return_mean", 160.0 * progress)
                        .scalar("eval/success_rate", progress.min(1.0)),
                )
                .unwrap();
            }
        }
        run.path().to_path_buf()
    }

    /// Width and height from a PNG's IHDR chunk.
    fn png_size(bytes: &[u8]) -> (u32, u32) {
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
        assert_eq!(&bytes[12..16], b"IHDR");
        let word = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
        (word(16), word(20))
    }

    #[test]
    fn single_run_gets_pngs_of_the_documented_size() {
        let tmp = TempDir::new("plot-single");
        let run = synthetic_run(tmp.path(), "worm-seed1", 1, 300, true);
        let out = run.join("plots");
        let written = plot_runs(&[run], &out).unwrap();
        let names: Vec<String> = written
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                RETURN_VS_EPISODE_FILE,
                RETURN_VS_WALL_FILE,
                EVAL_FILE,
                EVAL_VS_WALL_FILE,
                EVAL_VS_STEPS_FILE,
                LOSSES_FILE,
                LEVELS_FILE
            ]
        );
        let expected = [(PLOT_WIDTH, PLOT_HEIGHT), (PLOT_WIDTH, PLOT_HEIGHT)];
        for (path, size) in written.iter().zip(expected) {
            let bytes = fs::read(path).unwrap();
            assert!(
                bytes.len() > 10_000,
                "{} is suspiciously small",
                path.display()
            );
            assert_eq!(png_size(&bytes), size);
        }
        // eval (against episodes, wall time, env steps): return + success
        // rate; levels: level 0 and level 1.
        for i in [2, 3, 4, 6] {
            assert_eq!(
                png_size(&fs::read(&written[i]).unwrap()),
                (PLOT_WIDTH, 2 * PANEL_HEIGHT),
                "{}",
                written[i].display()
            );
        }
        // Only the PNGs remain: temp files were renamed away.
        assert_eq!(fs::read_dir(&out).unwrap().count(), written.len());
    }

    #[test]
    fn several_seeds_and_another_run_overlay_into_one_figure() {
        let tmp = TempDir::new("plot-many");
        let runs = vec![
            synthetic_run(tmp.path(), "worm-seed1", 1, 200, false),
            synthetic_run(tmp.path(), "worm-seed2", 2, 180, false),
            synthetic_run(tmp.path(), "worm-seed3", 3, 220, false),
        ];
        let other = synthetic_run(tmp.path(), "push-run", 9, 120, false);
        fs::write(
            other.join(CONFIG_FILE),
            "preset = \"push-ddpg-her\"\nseed = 9\n",
        )
        .unwrap();
        let mut all = runs.clone();
        all.push(other);
        let out = tmp.path().join("compare");
        let written = plot_runs(&all, &out).unwrap();
        assert_eq!(written.len(), 6);
        let bytes = fs::read(&written[0]).unwrap();
        assert_eq!(png_size(&bytes), (PLOT_WIDTH, PLOT_HEIGHT));
    }

    #[test]
    fn run_without_records_is_a_clear_error() {
        let tmp = TempDir::new("plot-empty");
        MetricsLog::open(tmp.path()).unwrap();
        let err = plot_runs(&[tmp.path()], tmp.path().join("plots")).unwrap_err();
        assert!(
            err.to_string()
                .contains("no episode, evaluation or loss records"),
            "{err}"
        );
        assert!(!tmp.path().join("plots").exists());
        let err = plot_runs::<PathBuf>(&[], tmp.path()).unwrap_err();
        assert!(matches!(err, Error::Config(_)));
    }

    #[test]
    fn missing_metrics_file_names_it() {
        let tmp = TempDir::new("plot-missing");
        let err = plot_runs(&[tmp.path()], tmp.path().join("plots")).unwrap_err();
        assert!(err.to_string().contains("metrics.jsonl"), "{err}");
    }
}
