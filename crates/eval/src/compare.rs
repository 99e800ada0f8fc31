//! Side-by-side table of several runs' headline numbers, for the terminal
//! or a Markdown report.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;
use shoal_rl_core::{Error, Result};

use crate::fsio::read_text;
use crate::run_dir::{CONFIG_FILE, SUMMARY_FILE};
use crate::summary::Summary;

/// Columns every comparison has, before the `extra` ones.
const FIXED_COLUMNS: [&str; 9] = [
    "run",
    "preset",
    "seed",
    "workers",
    "episodes",
    "env_steps",
    "wall_s",
    "eval_return_mean",
    "eval_success_rate",
];

/// The headline numbers of several runs as rows of text cells, one per
/// run, ready to print. Built by [`compare_runs`]; cells that do not apply
/// (no success rate for the worm, no config) read `-`.
#[derive(Clone, Debug, PartialEq)]
pub struct ComparisonTable {
    /// Column names: `run`, `preset`, `seed`, `workers`, `episodes`,
    /// `env_steps`, `wall_s`, `eval_return_mean`, `eval_success_rate`,
    /// then every numeric `extra` key of `summary.json` that all runs share
    /// (e.g. `return_ratio_to_gait`), sorted.
    pub columns: Vec<String>,
    /// One row per run, in the order given, cells aligned with `columns`.
    pub rows: Vec<Vec<String>>,
}

/// Reads `summary.json` and `config.toml` of each run directory and lines
/// them up: preset and seed from the config's top level, workers from
/// `[parallel] workers` (1 when absent), the rest from the summary.
///
/// Errors: no run directories, or a run whose `summary.json` is missing or
/// malformed (the error names that run's directory). A missing or
/// malformed `config.toml` only leaves preset, seed and workers blank.
///
/// ```
/// use shoal_rl_eval::{RunDir, Summary, compare_runs};
/// # fn main() -> shoal_rl_core::Result<()> {
/// let root = std::env::temp_dir().join(format!("shoal-doc-compare-{}", std::process::id()));
/// for (name, seed, ret) in [("a", 1, 100.0), ("b", 2, 120.0)] {
///     let run = RunDir::new(root.join(name));
///     run.write_config(&format!("preset = \"worm-reinforce\"\nseed = {seed}\n[parallel]\nworkers = 4\n"))?;
///     Summary { episodes: 500, env_steps: 50_000, wall_s: 60.0, ..Default::default() }
///         .eval(10, ret, None)
///         .extra("return_ratio_to_gait", ret / 150.0)
///         .write(run.path())?;
/// }
/// let table = compare_runs(&[root.join("a"), root.join("b")])?;
/// assert!(table.columns.contains(&"return_ratio_to_gait".to_string()));
/// println!("{}", table.to_terminal());
/// assert!(table.to_markdown().starts_with("| run |"));
/// # std::fs::remove_dir_all(&root).unwrap();
/// # Ok(())
/// # }
/// ```
pub fn compare_runs<P: AsRef<Path>>(run_dirs: &[P]) -> Result<ComparisonTable> {
    if run_dirs.is_empty() {
        return Err(Error::Config(
            "comparing needs at least one run directory".into(),
        ));
    }
    let mut runs = Vec::with_capacity(run_dirs.len());
    for dir in run_dirs {
        let dir = dir.as_ref();
        if !dir.join(SUMMARY_FILE).is_file() {
            return Err(Error::file(
                dir.join(SUMMARY_FILE),
                format!(
                    "run {} has no summary yet (is it still training, or not a run directory?)",
                    dir.display()
                ),
            ));
        }
        let summary = Summary::read(dir)?;
        let config: Option<toml::Table> = read_text(&dir.join(CONFIG_FILE))
            .ok()
            .and_then(|text| text.parse().ok());
        runs.push((dir, summary, config));
    }

    let numeric_extras = |summary: &Summary| -> BTreeSet<String> {
        summary
            .extra
            .iter()
            .filter(|(_, v)| v.is_number())
            .map(|(k, _)| k.clone())
            .collect()
    };
    let mut extras = numeric_extras(&runs[0].1);
    for (_, summary, _) in &runs[1..] {
        let keys = numeric_extras(summary);
        extras.retain(|k| keys.contains(k));
    }

    // `workers` is also in summaries; the config's value is the column.
    extras.retain(|k| !FIXED_COLUMNS.contains(&k.as_str()));
    let mut columns: Vec<String> = FIXED_COLUMNS.iter().map(|c| c.to_string()).collect();
    columns.extend(extras.iter().cloned());
    let rows = runs
        .iter()
        .map(|(dir, summary, config)| {
            let name = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| dir.display().to_string());
            let preset = config
                .as_ref()
                .and_then(|c| c.get("preset"))
                .and_then(toml::Value::as_str)
                .unwrap_or("-")
                .to_string();
            let seed = config
                .as_ref()
                .and_then(|c| c.get("seed"))
                .and_then(toml::Value::as_integer)
                .map_or_else(|| "-".into(), |s| s.to_string());
            let workers = match config {
                Some(c) => c
                    .get("parallel")
                    .and_then(toml::Value::as_table)
                    .and_then(|p| p.get("workers"))
                    .and_then(toml::Value::as_integer)
                    .unwrap_or(1)
                    .to_string(),
                None => "-".into(),
            };
            let mut row = vec![
                name,
                preset,
                seed,
                workers,
                summary.episodes.to_string(),
                summary.env_steps.to_string(),
                format!("{:.1}", summary.wall_s),
                format_number(summary.eval_return_mean),
                format_number(summary.eval_success_rate),
            ];
            row.extend(
                extras
                    .iter()
                    .map(|k| format_number(summary.extra.get(k).and_then(Value::as_f64))),
            );
            row
        })
        .collect();
    Ok(ComparisonTable { columns, rows })
}

/// Numbers a grouped comparison summarises per group, when any run has them.
const GROUP_METRICS: [&str; 7] = [
    "eval_return_mean",
    "eval_success_rate",
    "return_ratio_to_gait",
    "episodes_to_target",
    "per_worker_episodes_to_target",
    "wall_s_to_target",
    "wall_s",
];

/// One row per group of runs (e.g. the seeds of one setting of a sweep):
/// `group`, `runs` (with a summary / given), `reached` (runs whose
/// `episodes_to_target` is set, when any run has a target), then for every
/// number some run has among `eval_return_mean`, `eval_success_rate`,
/// `return_ratio_to_gait`, `episodes_to_target`,
/// `per_worker_episodes_to_target`, `wall_s_to_target` and `wall_s`, `median [min, max]` over
/// the runs that have it. A run without `summary.json` yet counts as not
/// finished rather than an error, so a half-done sweep can be compared.
///
/// ```
/// use shoal_rl_eval::{Summary, compare_groups};
/// # fn main() -> shoal_rl_core::Result<()> {
/// let root = std::env::temp_dir().join(format!("shoal-doc-groups-{}", std::process::id()));
/// for (seed, ret) in [(0, 90.0), (1, 100.0), (2, 130.0)] {
///     std::fs::create_dir_all(root.join(format!("seed-{seed}"))).unwrap();
///     Summary { episodes: 10, ..Default::default() }
///         .eval(5, ret, None)
///         .write(root.join(format!("seed-{seed}")))?;
/// }
/// let runs: Vec<_> = (0..4).map(|s| root.join(format!("seed-{s}"))).collect();
/// let table = compare_groups(&[("lr=1e-3".to_string(), runs)])?;
/// assert_eq!(table.rows[0][..2], ["lr=1e-3".to_string(), "3/4".to_string()]);
/// assert_eq!(table.rows[0][2], "100.00 [90.00, 130.00]");
/// # std::fs::remove_dir_all(&root).unwrap();
/// # Ok(())
/// # }
/// ```
pub fn compare_groups<P: AsRef<Path>>(groups: &[(String, Vec<P>)]) -> Result<ComparisonTable> {
    let mut summaries = Vec::with_capacity(groups.len());
    for (_, dirs) in groups {
        let mut finished = Vec::new();
        for dir in dirs {
            if dir.as_ref().join(SUMMARY_FILE).is_file() {
                finished.push(Summary::read(dir)?);
            }
        }
        summaries.push(finished);
    }
    let value = |summary: &Summary, key: &str| -> Option<f64> {
        match key {
            "eval_return_mean" => summary.eval_return_mean,
            "eval_success_rate" => summary.eval_success_rate,
            "wall_s" => Some(summary.wall_s),
            other => summary.extra.get(other).and_then(Value::as_f64),
        }
    };
    let all = || summaries.iter().flatten();
    let metrics: Vec<&str> = GROUP_METRICS
        .into_iter()
        .filter(|key| all().any(|s| value(s, key).is_some()))
        .collect();
    let targeted = all().any(|s| s.extra.contains_key("target_value"));
    let mut columns = vec!["group".to_string(), "runs".to_string()];
    if targeted {
        columns.push("reached".into());
    }
    columns.extend(metrics.iter().map(|m| m.to_string()));
    let rows = groups
        .iter()
        .zip(&summaries)
        .map(|((name, dirs), finished)| {
            let mut row = vec![name.clone(), format!("{}/{}", finished.len(), dirs.len())];
            if targeted {
                let reached = finished
                    .iter()
                    .filter(|s| value(s, "episodes_to_target").is_some())
                    .count();
                row.push(format!("{reached}/{}", finished.len()));
            }
            row.extend(metrics.iter().map(|key| {
                let values: Vec<f64> = finished.iter().filter_map(|s| value(s, key)).collect();
                median_and_range(&values)
            }));
            row
        })
        .collect();
    Ok(ComparisonTable { columns, rows })
}

/// The median of `values`, NaNs left out (the mean of the middle two for
/// an even count); `None` when nothing is left.
///
/// ```
/// assert_eq!(shoal_rl_eval::median(&[3.0, 1.0, f64::NAN, 2.0]), Some(2.0));
/// assert_eq!(shoal_rl_eval::median(&[4.0, 1.0]), Some(2.5));
/// assert_eq!(shoal_rl_eval::median(&[]), None);
/// ```
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// `median [min, max]` of `values`, NaNs left out, as the comparison
/// tables print it; `-` when empty.
///
/// ```
/// assert_eq!(shoal_rl_eval::median_and_range(&[0.5, 0.25, 1.0]), "0.500 [0.250, 1.000]");
/// ```
pub fn median_and_range(values: &[f64]) -> String {
    let Some(middle) = median(values) else {
        return "-".into();
    };
    let finite = values.iter().copied().filter(|v| !v.is_nan());
    let low = finite.clone().fold(f64::INFINITY, f64::min);
    let high = finite.fold(f64::NEG_INFINITY, f64::max);
    format!(
        "{} [{}, {}]",
        format_number(Some(middle)),
        format_number(Some(low)),
        format_number(Some(high))
    )
}

/// Four significant-ish decimals for ratios and rates, fewer for large
/// returns; `-` for a number that does not apply.
fn format_number(value: Option<f64>) -> String {
    match value {
        None => "-".into(),
        Some(v) if !v.is_finite() => v.to_string(),
        Some(v) if v.abs() >= 1000.0 => format!("{v:.1}"),
        Some(v) if v.abs() >= 10.0 => format!("{v:.2}"),
        Some(v) => format!("{v:.3}"),
    }
}

/// Whether a column holds numbers (right-aligned) rather than names.
fn is_numeric_column(index: usize) -> bool {
    index >= 2
}

impl ComparisonTable {
    /// Width of each column: its longest cell or header, in characters.
    fn widths(&self) -> Vec<usize> {
        self.columns
            .iter()
            .enumerate()
            .map(|(i, name)| {
                self.rows
                    .iter()
                    .map(|row| row[i].chars().count())
                    .chain([name.chars().count()])
                    .max()
                    .unwrap_or(0)
            })
            .collect()
    }

    /// Plain text with aligned columns (names left, numbers right), a dashed
    /// rule under the header, ending in a newline; for `shoal compare` in a
    /// terminal.
    pub fn to_terminal(&self) -> String {
        let widths = self.widths();
        let line = |cells: &[String]| {
            let padded: Vec<String> = cells
                .iter()
                .enumerate()
                .map(|(i, cell)| {
                    if is_numeric_column(i) {
                        format!("{cell:>width$}", width = widths[i])
                    } else {
                        format!("{cell:<width$}", width = widths[i])
                    }
                })
                .collect();
            padded.join("  ").trim_end().to_string()
        };
        let mut out = line(&self.columns);
        out.push('\n');
        let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
        out.push_str(&rule.join("  "));
        out.push('\n');
        for row in &self.rows {
            out.push_str(&line(row));
            out.push('\n');
        }
        out
    }

    /// A GitHub-flavoured Markdown table (numbers right-aligned), ending in
    /// a newline; for pasting into a report or an issue.
    pub fn to_markdown(&self) -> String {
        let escape = |cell: &String| cell.replace('|', "\\|");
        let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
        let mut out = line(self.columns.iter().map(escape).collect());
        out.push_str(&line(
            (0..self.columns.len())
                .map(|i| if is_numeric_column(i) { "---:" } else { "---" }.to_string())
                .collect(),
        ));
        for row in &self.rows {
            out.push_str(&line(row.iter().map(escape).collect()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsio::testutil::TempDir;
    use crate::run_dir::RunDir;

    fn run(root: &Path, name: &str, config: Option<&str>, summary: &str) -> std::path::PathBuf {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        if let Some(config) = config {
            RunDir::new(&dir).write_config(config).unwrap();
        }
        std::fs::write(dir.join(SUMMARY_FILE), summary).unwrap();
        dir
    }

    #[test]
    fn table_lines_up_runs_with_common_extras() {
        let tmp = TempDir::new("compare");
        let a = run(
            tmp.path(),
            "worm-1",
            Some("preset = \"worm-reinforce\"\nseed = 1\n[parallel]\nworkers = 10\n"),
            r#"{"episodes": 2000, "env_steps": 2000000, "wall_s": 3600.26,
               "eval_return_mean": 152.346, "eval_success_rate": null, "eval_episodes": 20,
               "return_ratio_to_gait": 0.8123, "gait_return": 187.5, "note": "text is skipped"}"#,
        );
        let b = run(
            tmp.path(),
            "push-hac",
            Some("preset = \"push-hac\"\nseed = 7\n"),
            r#"{"episodes": 30, "env_steps": 1500, "wall_s": 12.0,
               "eval_return_mean": -20.5, "eval_success_rate": 0.25, "eval_episodes": 8,
               "return_ratio_to_gait": 1.5}"#,
        );
        let c = run(
            tmp.path(),
            "no-config",
            None,
            r#"{"episodes": 1, "env_steps": 2, "wall_s": 0.5, "eval_return_mean": null,
               "eval_success_rate": null, "eval_episodes": 0, "return_ratio_to_gait": 0.1}"#,
        );
        let table = compare_runs(&[&a, &b, &c]).unwrap();
        assert_eq!(
            table.columns,
            [
                "run",
                "preset",
                "seed",
                "workers",
                "episodes",
                "env_steps",
                "wall_s",
                "eval_return_mean",
                "eval_success_rate",
                "return_ratio_to_gait"
            ]
        );
        assert_eq!(
            table.rows[0],
            [
                "worm-1",
                "worm-reinforce",
                "1",
                "10",
                "2000",
                "2000000",
                "3600.3",
                "152.35",
                "-",
                "0.812"
            ]
        );
        assert_eq!(table.rows[1][3], "1", "workers default to 1");
        assert_eq!(table.rows[1][8], "0.250");
        assert_eq!(&table.rows[2][1..4], ["-", "-", "-"]);

        let text = table.to_terminal();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5);
        assert!(lines[1].starts_with("--------"));
        // Right-aligned numbers end in the same column.
        let end = |line: &str, cell: &str| line.find(cell).unwrap() + cell.len();
        assert_eq!(end(lines[2], "2000000"), end(lines[3], "1500"));
        assert_eq!(end(lines[0], "env_steps"), end(lines[2], "2000000"));

        let md = table.to_markdown();
        let md_lines: Vec<&str> = md.lines().collect();
        assert_eq!(md_lines.len(), 5);
        assert!(md_lines[0].starts_with("| run | preset | seed |"));
        assert!(md_lines[1].starts_with("| --- | --- | ---: |"));
        assert!(md_lines[3].contains("| push-hac | push-hac | 7 | 1 |"));
    }

    #[test]
    fn missing_summary_names_the_run() {
        let tmp = TempDir::new("compare-missing");
        let ok = run(
            tmp.path(),
            "done",
            None,
            r#"{"episodes": 1, "env_steps": 1, "wall_s": 1.0, "eval_return_mean": null,
               "eval_success_rate": null, "eval_episodes": 0}"#,
        );
        let unfinished = tmp.path().join("still-training");
        std::fs::create_dir_all(&unfinished).unwrap();
        let err = compare_runs(&[&ok, &unfinished]).unwrap_err();
        let message = err.to_string();
        assert!(message.contains("still-training"), "{message}");
        assert!(message.contains("summary.json"), "{message}");
        assert!(compare_runs::<&Path>(&[]).is_err());
    }

    #[test]
    fn malformed_summary_is_a_file_error() {
        let tmp = TempDir::new("compare-bad");
        let bad = run(tmp.path(), "bad", None, "{\"episodes\": ");
        let err = compare_runs(&[&bad]).unwrap_err();
        assert!(matches!(err, Error::File { .. }), "{err}");
        assert!(err.to_string().contains("bad"), "{err}");
    }

    #[test]
    fn extras_not_in_every_run_are_left_out() {
        let tmp = TempDir::new("compare-extras");
        let base = r#""episodes": 1, "env_steps": 1, "wall_s": 1.0, "eval_return_mean": 1.0,
               "eval_success_rate": null, "eval_episodes": 1"#;
        let a = run(
            tmp.path(),
            "a",
            None,
            &format!("{{{base}, \"x\": 1, \"y\": 2}}"),
        );
        let b = run(tmp.path(), "b", None, &format!("{{{base}, \"y\": 3}}"));
        let table = compare_runs(&[a, b]).unwrap();
        assert_eq!(table.columns.last().unwrap(), "y");
        assert_eq!(table.columns.len(), FIXED_COLUMNS.len() + 1);
    }

    #[test]
    fn median_and_range_by_hand() {
        assert_eq!(median_and_range(&[3.0, 1.0, 2.0]), "2.000 [1.000, 3.000]");
        assert_eq!(
            median_and_range(&[4.0, 1.0, 2.0, 3.0]),
            "2.500 [1.000, 4.000]"
        );
        assert_eq!(median_and_range(&[f64::NAN, 5.0]), "5.000 [5.000, 5.000]");
        assert_eq!(median_and_range(&[]), "-");
        assert_eq!(
            median_and_range(&[1200.0, 800.0, 1000.0]),
            "1000.0 [800.00, 1200.0]"
        );
    }

    #[test]
    fn groups_count_finished_runs_and_those_that_reached_the_target() {
        let root = TempDir::new("groups");
        let target = |reached: Option<u64>, ret: f64| {
            Summary::default()
                .eval(5, ret, Some(ret / 100.0))
                .extra("target_value", 0.9)
                .extra("episodes_to_target", reached)
        };
        for run in ["a0", "a1", "b0"] {
            std::fs::create_dir_all(root.path().join(run)).unwrap();
        }
        target(Some(300), 95.0)
            .write(root.path().join("a0"))
            .unwrap();
        target(None, 50.0).write(root.path().join("a1")).unwrap();
        target(Some(100), 99.0)
            .write(root.path().join("b0"))
            .unwrap();
        let groups = vec![
            (
                "a".to_string(),
                vec![
                    root.path().join("a0"),
                    root.path().join("a1"),
                    root.path().join("a2"),
                ],
            ),
            ("b".to_string(), vec![root.path().join("b0")]),
        ];
        let table = compare_groups(&groups).unwrap();
        assert_eq!(
            table.columns,
            [
                "group",
                "runs",
                "reached",
                "eval_return_mean",
                "eval_success_rate",
                "episodes_to_target",
                "wall_s"
            ]
        );
        assert_eq!(
            table.rows[0][..4],
            ["a", "2/3", "1/2", "72.50 [50.00, 95.00]"]
        );
        // The median over the runs that reached it, not over all.
        assert_eq!(table.rows[0][5], "300.00 [300.00, 300.00]");
        assert_eq!(table.rows[1][..3], ["b", "1/1", "1/1"]);
    }

    #[test]
    fn a_summary_key_named_like_a_column_is_not_a_second_column() {
        let root = TempDir::new("compare-workers");
        let run = RunDir::new(root.path().join("r"));
        run.write_config("preset = \"worm-pool\"\nseed = 0\n[parallel]\nworkers = 3\n")
            .unwrap();
        Summary::default()
            .eval(5, 1.0, None)
            .extra("workers", 3)
            .extra("gait_return", 2.0)
            .write(run.path())
            .unwrap();
        let table = compare_runs(&[run.path()]).unwrap();
        let workers = table.columns.iter().filter(|c| *c == "workers").count();
        assert_eq!(workers, 1, "{:?}", table.columns);
        assert_eq!(table.columns.last().unwrap(), "gait_return");
    }
}
