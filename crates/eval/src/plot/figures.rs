//! Which figures a set of runs gets, and what goes in each (no drawing here).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::draw::{Band, Figure, Line, Panel, Weight};
use super::series::{
    Points, extract, moving_average, seed_band, smoothing_window, thin_envelope, thin_stride,
};

/// Training return against episode.
pub const RETURN_VS_EPISODE_FILE: &str = "return_vs_episode.png";
/// Training return against wall time.
pub const RETURN_VS_WALL_FILE: &str = "return_vs_wall.png";
/// Evaluation return (and success rate) against episode.
pub const EVAL_FILE: &str = "eval.png";
/// Evaluation return (and success rate) against wall time.
pub const EVAL_VS_WALL_FILE: &str = "eval_vs_wall.png";
/// Evaluation return (and success rate) against environment steps.
pub const EVAL_VS_STEPS_FILE: &str = "eval_vs_env_steps.png";
/// One panel per `losses/*` key.
pub const LOSSES_FILE: &str = "losses.png";
/// Per level of a hierarchical agent (`level0/…`, `level1/…`): its losses
/// and Q values, and its success rates.
pub const LEVELS_FILE: &str = "levels.png";
/// One panel per hindsight-relabelling category (`her/*` keys): the share
/// of sampled transitions whose goal came from where.
pub const HER_FILE: &str = "her.png";

const RETURN_KEY: &str = "charts/episodic_return";
const EVAL_RETURN_KEY: &str = "eval/return_mean";
const EVAL_SUCCESS_KEY: &str = "eval/success_rate";
/// Points drawn per curve at most; more are invisible at this resolution.
const MAX_POINTS: usize = 2000;
/// Loss keys beyond this many are left out of the losses figure.
const MAX_LOSS_PANELS: usize = 6;
/// The relabel categories in reading order (the four that sum to one, then
/// the missed-object subsets); other `her/*` keys follow, sorted.
const HER_KEYS: [&str; 6] = [
    "her/original",
    "her/static",
    "her/post_settle",
    "her/informative",
    "her/missed",
    "her/missed_in_motion",
];

/// What the plots need to know about one run.
#[derive(Clone, Debug)]
pub(crate) struct RunData {
    /// The run directory's name, used in legends.
    pub label: String,
    /// The `preset` key of its config, if any.
    pub preset: Option<String>,
    /// Its seed (`seed`, or `seed` in a top-level table), if any.
    pub seed: Option<i64>,
    /// Every other setting of its config as dotted key → value text, if it
    /// has a config: runs whose settings agree are seeds of one variant.
    pub settings: Option<BTreeMap<String, String>>,
    pub records: Vec<Value>,
}

/// Runs drawn as one unit: a single run, or the seeds of one preset (drawn
/// as their mean with a min–max band).
struct Cohort<'a> {
    label: String,
    members: Vec<&'a RunData>,
    color: usize,
}

/// Runs that agree in every setting but the seed (or, without a config,
/// share a preset) and have pairwise different seeds become one cohort,
/// labelled by the preset and the settings in which it differs from the
/// other cohorts of that preset; every other run is a cohort of its own.
fn cohorts(runs: &[RunData]) -> Vec<Cohort<'_>> {
    let variant = |run: &RunData| -> Option<String> {
        match &run.settings {
            Some(settings) => Some(format!("{settings:?}")),
            None => run.preset.clone(),
        }
    };
    let mut by_variant: BTreeMap<String, Vec<&RunData>> = BTreeMap::new();
    for run in runs {
        if let Some(key) = variant(run) {
            by_variant.entry(key).or_default().push(run);
        }
    }
    let is_seed_group = |members: &[&RunData]| {
        let seeds: BTreeSet<i64> = members.iter().filter_map(|run| run.seed).collect();
        members.len() >= 2 && seeds.len() == members.len()
    };
    let mut cohorts: Vec<Cohort> = Vec::new();
    let mut grouped: BTreeSet<String> = BTreeSet::new();
    for run in runs {
        let group = variant(run).and_then(|key| {
            let members = &by_variant[&key];
            is_seed_group(members).then_some((key, members))
        });
        match group {
            Some((key, _)) if grouped.contains(&key) => {}
            Some((key, members)) => {
                grouped.insert(key);
                let name = run.preset.clone().unwrap_or_else(|| run.label.clone());
                let differences = distinguishing_settings(run, runs);
                let name = if differences.is_empty() {
                    name
                } else {
                    format!("{name} {differences}")
                };
                cohorts.push(Cohort {
                    label: format!("{name} ({} seeds)", members.len()),
                    members: members.clone(),
                    color: cohorts.len(),
                });
            }
            None => cohorts.push(Cohort {
                label: run.label.clone(),
                members: vec![run],
                color: cohorts.len(),
            }),
        }
    }
    cohorts
}

/// `key=value` (comma-separated) for each setting in which `run` departs
/// from the rest of its preset, seeds aside: a setting that varies between
/// the preset's variants (distinct configs) is named unless `run` holds the
/// value a strict majority of the variants share. An ablation over several
/// keys thus labels each cell by its own change (`algo.her_strategy="final"`),
/// and the baseline by its preset alone, instead of every cell by every key.
fn distinguishing_settings(run: &RunData, runs: &[RunData]) -> String {
    let Some(own) = &run.settings else {
        return String::new();
    };
    let variants: BTreeSet<&BTreeMap<String, String>> = runs
        .iter()
        .filter(|other| other.preset == run.preset)
        .filter_map(|other| other.settings.as_ref())
        .collect();
    let shared_by_majority = |key: &str, value: &String| {
        let holders = variants
            .iter()
            .filter(|variant| variant.get(key) == Some(value))
            .count();
        2 * holders > variants.len()
    };
    own.iter()
        .filter(|(key, value)| !shared_by_majority(key, value))
        .map(|(key, value)| format!("{key}={value}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every figure the runs have data for, with its file name.
pub(crate) fn build_figures(runs: &[RunData]) -> Vec<(&'static str, Figure)> {
    let cohorts = cohorts(runs);
    let (by_episode, by_wall, by_steps) =
        (XAxis::episode(), XAxis::wall(runs), XAxis::env_steps(runs));
    let mut figures = Vec::new();
    // A figure is drawn only when the runs have data for one of its panels.
    let mut add = |file: &'static str, title: &str, panels: Vec<Panel>| {
        if !panels.is_empty() {
            figures.push((
                file,
                Figure {
                    title: title.into(),
                    panels,
                },
            ));
        }
    };
    add(
        RETURN_VS_EPISODE_FILE,
        "Training return",
        return_panel(&cohorts, &by_episode).into_iter().collect(),
    );
    add(
        RETURN_VS_WALL_FILE,
        "Training return over wall time",
        return_panel(&cohorts, &by_wall).into_iter().collect(),
    );
    for (file, title, axis) in [
        (EVAL_FILE, "Evaluation with the policy frozen", &by_episode),
        (
            EVAL_VS_WALL_FILE,
            "Evaluation with the policy frozen, over wall time",
            &by_wall,
        ),
        (
            EVAL_VS_STEPS_FILE,
            "Evaluation with the policy frozen, over environment steps",
            &by_steps,
        ),
    ] {
        let eval_panels = [
            eval_panel(
                &cohorts,
                axis,
                EVAL_RETURN_KEY,
                "Mean evaluation return",
                "return",
                None,
            ),
            eval_panel(
                &cohorts,
                axis,
                EVAL_SUCCESS_KEY,
                "Evaluation success rate",
                "success rate",
                Some((-0.02, 1.02)),
            ),
        ];
        add(file, title, eval_panels.into_iter().flatten().collect());
    }
    add(LOSSES_FILE, "Losses", loss_panels(runs, &cohorts));
    add(
        HER_FILE,
        "Hindsight goals by origin (share of sampled transitions)",
        her_panels(runs, &cohorts),
    );
    add(
        LEVELS_FILE,
        "Per-level metrics (hierarchical agent)",
        level_panels(runs),
    );
    figures
}

/// Raw (faint) and smoothed (bold) versions of a noisy curve.
fn smoothed_lines(raw: &Points, window: usize, color: usize, label: Option<String>) -> Vec<Line> {
    let mut lines = Vec::with_capacity(2);
    if window > 1 {
        lines.push(Line {
            points: thin_envelope(raw, MAX_POINTS),
            color,
            weight: Weight::Faint,
            label: None,
            markers: false,
        });
    }
    lines.push(Line {
        points: thin_stride(&moving_average(raw, window), MAX_POINTS),
        color,
        weight: Weight::Bold,
        label,
        markers: false,
    });
    lines
}

/// Each cohort's runs' `key` against `axis`, run by run.
fn cohort_curves(cohorts: &[Cohort], axis: &XAxis, key: &str) -> Vec<Vec<Points>> {
    cohorts
        .iter()
        .map(|c| {
            c.members
                .iter()
                .map(|run| axis.extract(&run.records, key))
                .collect()
        })
        .collect()
}

/// A cohort's runs drawn one by one (no seed band), with the label each
/// gets: the run's own among several, the cohort's alone. Empty curves are
/// skipped.
fn labelled_runs<'a>(
    cohort: &'a Cohort,
    curves: &'a [Points],
) -> impl Iterator<Item = (String, &'a Points)> {
    let many = cohort.members.len() > 1;
    cohort
        .members
        .iter()
        .zip(curves)
        .filter(|(_, curve)| !curve.is_empty())
        .map(move |(run, curve)| {
            let label = if many { &run.label } else { &cohort.label };
            (label.clone(), curve)
        })
}

/// Training return of every cohort against `axis`: seed groups as mean and
/// min–max band of their smoothed curves, single runs raw faint and smoothed bold.
fn return_panel(cohorts: &[Cohort], axis: &XAxis) -> Option<Panel> {
    let curves = cohort_curves(cohorts, axis, RETURN_KEY);
    let longest = curves.iter().flatten().map(Vec::len).max().unwrap_or(0);
    if longest == 0 {
        return None;
    }
    let window = smoothing_window(longest);
    let mut panel = panel(
        smoothing_title("Episodic return", window),
        &axis.desc,
        "episodic return",
    );
    for (cohort, raws) in cohorts.iter().zip(&curves) {
        let smoothed: Vec<Points> = raws.iter().map(|raw| moving_average(raw, window)).collect();
        match seed_band(&smoothed, MAX_POINTS) {
            Some(band) => add_band(&mut panel, cohort, &smoothed, band, false),
            None => {
                for (label, raw) in labelled_runs(cohort, raws) {
                    panel
                        .lines
                        .extend(smoothed_lines(raw, window, cohort.color, Some(label)));
                }
            }
        }
    }
    Some(panel)
}

/// Seeds faint, their min–max shaded, their mean bold and labelled.
fn add_band(
    panel: &mut Panel,
    cohort: &Cohort,
    curves: &[Points],
    band: super::series::SeedBand,
    markers: bool,
) {
    for curve in curves {
        panel.lines.push(Line {
            points: thin_stride(curve, MAX_POINTS),
            color: cohort.color,
            weight: Weight::Member,
            label: None,
            markers: false,
        });
    }
    panel.bands.push(Band {
        lower: band.lower,
        upper: band.upper,
        color: cohort.color,
    });
    panel.lines.push(Line {
        points: band.mean,
        color: cohort.color,
        weight: Weight::Bold,
        label: Some(format!("{}: mean, min–max shaded", cohort.label)),
        markers,
    });
}

/// What a panel's x axis shows: the record key, its label, and a divisor
/// turning the key's unit into the label's.
struct XAxis {
    key: &'static str,
    desc: String,
    scale: f64,
}

impl XAxis {
    fn episode() -> Self {
        XAxis {
            key: "episode",
            desc: "episode".into(),
            scale: 1.0,
        }
    }

    /// Wall time in seconds, minutes or hours, whichever suits the longest
    /// of `runs`.
    fn wall(runs: &[RunData]) -> Self {
        let units = [(3.0 * 3600.0, " (h)", 3600.0), (600.0, " (min)", 60.0)];
        Self::in_units(runs, "wall_s", "wall time", &units, " (s)")
    }

    /// Environment steps in steps, thousands or millions, whichever suits
    /// the longest of `runs`: methods whose episodes differ in length (or
    /// end early) compare at equal experience on this axis.
    fn env_steps(runs: &[RunData]) -> Self {
        let units = [(1e6, " (millions)", 1e6), (1e4, " (thousands)", 1e3)];
        Self::in_units(runs, "env_steps", "environment steps", &units, "")
    }

    /// `key` in the first of `units` (from, suffix, divisor), largest
    /// first, that the longest of `runs` reaches; else unscaled with
    /// `plain` after the name.
    fn in_units(
        runs: &[RunData],
        key: &'static str,
        name: &str,
        units: &[(f64, &str, f64)],
        plain: &str,
    ) -> Self {
        let longest = largest(runs, key);
        let (suffix, scale) = units
            .iter()
            .find(|(from, _, _)| longest >= *from)
            .map_or((plain, 1.0), |&(_, suffix, scale)| (suffix, scale));
        XAxis {
            key,
            desc: format!("{name}{suffix}"),
            scale,
        }
    }

    /// Points `(x / scale, record[y_key])`.
    fn extract(&self, records: &[Value], y_key: &str) -> Points {
        let mut points = extract(records, self.key, y_key);
        if self.scale != 1.0 {
            points.iter_mut().for_each(|p| p.0 /= self.scale);
        }
        points
    }
}

/// The largest finite value of `key` in any record of `runs` (0 if none).
fn largest(runs: &[RunData], key: &str) -> f64 {
    runs.iter()
        .flat_map(|run| &run.records)
        .filter_map(|record| record.get(key)?.as_f64())
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max)
}

fn eval_panel(
    cohorts: &[Cohort],
    axis: &XAxis,
    key: &str,
    title: &str,
    y_desc: &str,
    y_range: Option<(f64, f64)>,
) -> Option<Panel> {
    let curves = cohort_curves(cohorts, axis, key);
    if curves.iter().flatten().all(Vec::is_empty) {
        return None;
    }
    let mut panel = panel(title.to_string(), &axis.desc, y_desc);
    panel.y_range = y_range;
    for (cohort, curves) in cohorts.iter().zip(&curves) {
        match seed_band(curves, MAX_POINTS) {
            Some(band) => add_band(&mut panel, cohort, curves, band, true),
            None => {
                for (label, curve) in labelled_runs(cohort, curves) {
                    panel.lines.push(Line {
                        points: thin_stride(curve, MAX_POINTS),
                        color: cohort.color,
                        weight: Weight::Bold,
                        label: Some(label),
                        markers: curve.len() <= 60,
                    });
                }
            }
        }
    }
    Some(panel)
}

/// Sorted union of the record keys for which `select` holds.
fn keys_where(runs: &[RunData], select: impl Fn(&str) -> bool) -> BTreeSet<&str> {
    runs.iter()
        .flat_map(|run| run.records.iter())
        .filter_map(Value::as_object)
        .flat_map(|object| object.keys())
        .map(String::as_str)
        .filter(|key| select(key))
        .collect()
}

fn loss_panels(runs: &[RunData], cohorts: &[Cohort]) -> Vec<Panel> {
    let keys = keys_where(runs, |key| key.starts_with("losses/"));
    let keys: Vec<&str> = keys.into_iter().take(MAX_LOSS_PANELS).collect();
    keyed_panels(&keys, cohorts, runs.len() > 1, None)
}

/// The `her/*` shares, in [`HER_KEYS`] order, on a 0–1 axis.
fn her_panels(runs: &[RunData], cohorts: &[Cohort]) -> Vec<Panel> {
    let present = keys_where(runs, |key| key.starts_with("her/"));
    let mut keys: Vec<&str> = HER_KEYS
        .iter()
        .copied()
        .filter(|key| present.contains(key))
        .collect();
    keys.extend(present.iter().filter(|key| !HER_KEYS.contains(key)));
    keyed_panels(&keys, cohorts, runs.len() > 1, Some((-0.02, 1.02)))
}

/// One panel per key against episode: every run's curve, raw faint and
/// smoothed bold, in its cohort's colour (seeds share one legend entry).
fn keyed_panels(
    keys: &[&str],
    cohorts: &[Cohort],
    many: bool,
    y_range: Option<(f64, f64)>,
) -> Vec<Panel> {
    keys.iter()
        .filter_map(|&key| {
            let mut panel = panel(key.to_string(), "episode", "");
            panel.y_range = y_range;
            let mut labelled: BTreeSet<usize> = BTreeSet::new();
            for cohort in cohorts {
                for run in &cohort.members {
                    let raw = extract(&run.records, "episode", key);
                    if raw.is_empty() {
                        continue;
                    }
                    // One legend entry per cohort: its seeds share a colour.
                    let label =
                        (many && labelled.insert(cohort.color)).then(|| cohort.label.clone());
                    let window = smoothing_window(raw.len());
                    panel
                        .lines
                        .extend(smoothed_lines(&raw, window, cohort.color, label));
                }
            }
            (!panel.lines.is_empty()).then_some(panel)
        })
        .collect()
}

/// `level3/losses/critic` → `(3, "losses/critic")`.
fn split_level_key(key: &str) -> Option<(u32, &str)> {
    let rest = key.strip_prefix("level")?;
    let (digits, name) = rest.split_once('/')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || name.is_empty() {
        return None;
    }
    Some((digits.parse().ok()?, name))
}

/// Per level: a panel of its losses and Q values and one of its success
/// rates (0–1), so neither squashes the other. Counts (`buffer_…`) are left
/// out: they only grow.
fn level_panels(runs: &[RunData]) -> Vec<Panel> {
    let mut by_level: BTreeMap<(u32, bool), Vec<(&str, &str)>> = BTreeMap::new();
    for key in keys_where(runs, |key| split_level_key(key).is_some()) {
        if let Some((level, name)) = split_level_key(key) {
            if name.contains("buffer") {
                continue;
            }
            let rate = name.ends_with("success");
            by_level.entry((level, rate)).or_default().push((key, name));
        }
    }
    let many = runs.len() > 1;
    by_level
        .into_iter()
        .map(|((level, rate), keys)| {
            let mut panel = if rate {
                let mut panel = panel(format!("level {level}: success"), "episode", "rate");
                panel.y_range = Some((-0.02, 1.02));
                panel
            } else {
                panel(format!("level {level}: losses and Q"), "episode", "")
            };
            for (run_index, run) in runs.iter().enumerate() {
                for (key_index, (key, name)) in keys.iter().enumerate() {
                    let raw = extract(&run.records, "episode", key);
                    if raw.is_empty() {
                        continue;
                    }
                    let label = if many {
                        format!("{}: {name}", run.label)
                    } else {
                        name.to_string()
                    };
                    let color = key_index + run_index * keys.len();
                    let window = smoothing_window(raw.len());
                    panel
                        .lines
                        .extend(smoothed_lines(&raw, window, color, Some(label)));
                }
            }
            panel
        })
        .filter(|panel| !panel.lines.is_empty())
        .collect()
}

fn panel(title: String, x_desc: &str, y_desc: &str) -> Panel {
    Panel {
        title,
        x_desc: x_desc.to_string(),
        y_desc: y_desc.to_string(),
        y_range: None,
        lines: Vec::new(),
        bands: Vec::new(),
    }
}

fn smoothing_title(what: &str, window: usize) -> String {
    if window > 1 {
        format!("{what} (moving average over {window} episodes; raw faint)")
    } else {
        what.to_string()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn run(label: &str, preset: Option<&str>, seed: Option<i64>, episodes: u64) -> RunData {
        let records = (1..=episodes)
            .map(|e| {
                json!({"kind": "episode", "episode": e, "env_steps": e * 10, "wall_s": e as f64,
                       "charts/episodic_return": e as f64})
            })
            .collect();
        RunData {
            label: label.into(),
            preset: preset.map(Into::into),
            seed,
            settings: None,
            records,
        }
    }

    #[test]
    fn seeds_of_one_preset_form_one_cohort() {
        let runs = vec![
            run("a", Some("worm"), Some(1), 10),
            run("b", Some("push"), Some(1), 10),
            run("c", Some("worm"), Some(2), 10),
        ];
        let cohorts = cohorts(&runs);
        assert_eq!(cohorts.len(), 2);
        assert_eq!(cohorts[0].label, "worm (2 seeds)");
        assert_eq!(cohorts[0].members.len(), 2);
        assert_eq!(cohorts[1].label, "b");
    }

    #[test]
    fn same_preset_same_seed_runs_stay_separate() {
        let runs = vec![
            run("a", Some("worm"), Some(1), 5),
            run("b", Some("worm"), Some(1), 5),
        ];
        assert_eq!(cohorts(&runs).len(), 2);
    }

    #[test]
    fn seed_group_gets_a_band_and_single_run_does_not() {
        let runs = vec![
            run("a", Some("worm"), Some(1), 50),
            run("c", Some("worm"), Some(2), 40),
        ];
        let figures = build_figures(&runs);
        let (name, figure) = &figures[0];
        assert_eq!(*name, RETURN_VS_EPISODE_FILE);
        assert_eq!(figure.panels[0].bands.len(), 1);
        let single = build_figures(&runs[..1]);
        assert!(single[0].1.panels[0].bands.is_empty());
    }

    #[test]
    fn seed_group_is_one_band_against_episodes_and_wall_time() {
        let mut runs = vec![
            run("worm-s1", Some("worm"), Some(1), 60),
            run("worm-s2", Some("worm"), Some(2), 60),
            run("worm-s3", Some("worm"), Some(3), 60),
            run("push", Some("push"), Some(1), 30),
        ];
        for (i, data) in runs.iter_mut().enumerate() {
            for e in (10..=60).step_by(10) {
                data.records
                    .push(json!({"kind": "eval", "episode": e, "env_steps": e * 10,
                    "wall_s": e as f64 * (1.0 + i as f64), "eval/return_mean": e as f64 + i as f64,
                    "eval/success_rate": 0.01 * e as f64}));
            }
        }
        let figures = build_figures(&runs);
        let names: Vec<&str> = figures.iter().map(|(name, _)| *name).collect();
        assert_eq!(
            names,
            vec![
                RETURN_VS_EPISODE_FILE,
                RETURN_VS_WALL_FILE,
                EVAL_FILE,
                EVAL_VS_WALL_FILE,
                EVAL_VS_STEPS_FILE
            ]
        );
        for (name, figure) in &figures {
            for panel in &figure.panels {
                // One band (the three seeds), none for the lone push run.
                assert_eq!(panel.bands.len(), 1, "{name}: {}", panel.title);
                let labels: Vec<&str> = panel
                    .lines
                    .iter()
                    .filter_map(|l| l.label.as_deref())
                    .collect();
                assert_eq!(
                    labels,
                    vec!["worm (3 seeds): mean, min–max shaded", "push"],
                    "{name}: {}",
                    panel.title
                );
            }
        }
        let wall = &figures[1].1.panels[0];
        assert_eq!(wall.x_desc, "wall time (s)");
        // The band spans the wall time all three seeds cover.
        let band = &wall.bands[0];
        assert_eq!(band.lower.first().unwrap().0, 1.0);
        assert_eq!(band.lower.last().unwrap().0, 60.0);
        assert_eq!(figures[3].1.panels.len(), 2);
        assert_eq!(figures[3].1.panels[1].y_range, Some((-0.02, 1.02)));
    }

    #[test]
    fn evaluations_against_env_steps_use_each_runs_own_steps_in_readable_units() {
        // Episodes of growing length: evaluation at episode e has seen
        // 1 000 e² steps, so the axis cannot be episodes times a constant.
        let mut data = run("far", None, None, 0);
        for e in [10u64, 20, 40] {
            data.records.push(
                json!({"kind": "eval", "episode": e, "env_steps": 1_000 * e * e,
                "wall_s": e as f64, "eval/return_mean": -(e as f64),
                "eval/success_rate": 0.02 * e as f64}),
            );
        }
        let figures = build_figures(&[data]);
        let (_, steps) = figures
            .iter()
            .find(|(name, _)| *name == EVAL_VS_STEPS_FILE)
            .expect("an eval-vs-steps figure");
        let success = &steps.panels[1];
        assert_eq!(success.x_desc, "environment steps (millions)");
        assert_eq!(
            success.lines[0].points,
            vec![(0.1, 0.2), (0.4, 0.4), (1.6, 0.8)]
        );
    }

    #[test]
    fn level_keys_give_loss_and_success_panels_per_level() {
        let mut data = run("hac", None, None, 5);
        data.records.push(
            json!({"kind": "update", "episode": 5, "env_steps": 50, "wall_s": 5.0,
            "level0/losses/critic": 1.0, "level1/losses/critic": 2.0, "level1/losses/actor": 0.5,
            "level1/subgoal_success": 0.4, "level1/buffer_transitions": 5000.0,
            "losses/policy": 0.1}),
        );
        let figures = build_figures(&[data]);
        let names: Vec<&str> = figures.iter().map(|(name, _)| *name).collect();
        // (No eval records: neither eval figure.)
        assert_eq!(
            names,
            vec![
                RETURN_VS_EPISODE_FILE,
                RETURN_VS_WALL_FILE,
                LOSSES_FILE,
                LEVELS_FILE
            ]
        );
        let levels = &figures[3].1;
        let titles: Vec<&str> = levels.panels.iter().map(|p| p.title.as_str()).collect();
        assert_eq!(
            titles,
            [
                "level 0: losses and Q",
                "level 1: losses and Q",
                "level 1: success"
            ]
        );
        assert_eq!(levels.panels[1].lines.len(), 2, "the count is not plotted");
        assert_eq!(levels.panels[2].y_range, Some((-0.02, 1.02)));
    }

    #[test]
    fn level_key_parsing_rejects_lookalikes() {
        assert_eq!(
            split_level_key("level2/losses/critic"),
            Some((2, "losses/critic"))
        );
        assert_eq!(split_level_key("levels/x"), None);
        assert_eq!(split_level_key("level1/"), None);
        assert_eq!(split_level_key("level/x"), None);
    }

    #[test]
    fn her_shares_get_one_unit_panel_per_category_in_reading_order() {
        let mut data = run("ball", None, None, 5);
        data.records.push(
            json!({"kind": "update", "episode": 5, "env_steps": 50, "wall_s": 5.0,
            "her/informative": 0.5, "her/original": 0.2, "her/static": 0.1,
            "her/post_settle": 0.2, "her/missed": 0.3, "losses/critic": 1.0}),
        );
        let figures = build_figures(&[data]);
        let (name, her) = figures.iter().find(|(name, _)| *name == HER_FILE).unwrap();
        assert_eq!(*name, "her.png");
        let titles: Vec<&str> = her.panels.iter().map(|p| p.title.as_str()).collect();
        assert_eq!(
            titles,
            [
                "her/original",
                "her/static",
                "her/post_settle",
                "her/informative",
                "her/missed"
            ]
        );
        assert!(her.panels.iter().all(|p| p.y_range == Some((-0.02, 1.02))));
        // Losses stay in their own figure.
        let losses = &figures.iter().find(|(n, _)| *n == LOSSES_FILE).unwrap().1;
        assert_eq!(losses.panels.len(), 1);
    }

    #[test]
    fn seeds_of_one_setting_group_apart_from_another_setting_of_the_same_preset() {
        let with = |label: &str, seed: i64, strategy: &str| {
            let mut data = run(label, Some("ball"), Some(seed), 10);
            data.settings = Some(BTreeMap::from([
                ("algo.her_strategy".to_string(), format!("\"{strategy}\"")),
                ("preset".to_string(), "\"ball\"".to_string()),
            ]));
            data
        };
        let runs = vec![
            with("f0", 0, "future"),
            with("n0", 0, "none"),
            with("f1", 1, "future"),
            with("n1", 1, "none"),
            with("x1", 1, "final"),
        ];
        let cohorts = cohorts(&runs);
        let labels: Vec<&str> = cohorts.iter().map(|c| c.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "ball algo.her_strategy=\"future\" (2 seeds)",
                "ball algo.her_strategy=\"none\" (2 seeds)",
                "x1"
            ]
        );
        assert_eq!(cohorts[0].members.len(), 2);
        assert_eq!(cohorts[0].members[1].label, "f1");
    }

    #[test]
    fn an_ablation_labels_each_cell_by_its_own_change_and_the_baseline_by_its_preset() {
        let with = |label: &str, seed: i64, strategy: &str, skip: bool| {
            let mut data = run(label, Some("ball"), Some(seed), 10);
            data.settings = Some(BTreeMap::from([
                ("algo.her_strategy".to_string(), format!("\"{strategy}\"")),
                ("algo.her_skip_static".to_string(), skip.to_string()),
                ("preset".to_string(), "\"ball\"".to_string()),
            ]));
            data
        };
        let runs = vec![
            with("future-0", 0, "future", false),
            with("future-1", 1, "future", false),
            with("final-0", 0, "final", false),
            with("final-1", 1, "final", false),
            with("skip-0", 0, "future", true),
            with("skip-1", 1, "future", true),
        ];
        let labels: Vec<String> = cohorts(&runs).into_iter().map(|c| c.label).collect();
        assert_eq!(
            labels,
            [
                "ball (2 seeds)",
                "ball algo.her_strategy=\"final\" (2 seeds)",
                "ball algo.her_skip_static=true (2 seeds)",
            ]
        );
    }
}
