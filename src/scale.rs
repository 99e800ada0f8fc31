//! `shoal scale`: what a sweep over `parallel.workers` would take on one
//! core per worker, from the runs' profiles.
//!
//! Runs are bit-identical whatever the backend and the load, so N workers
//! oversubscribed on a few cores learn exactly as N workers on N cores
//! would: their learning curves against episodes per worker are the real
//! ones. Their wall times are not. With `parallel.profile = true` every
//! iteration record holds each worker's CPU time outside collectives and
//! the collectives it made. The time of an iteration on N cores is the
//! slowest worker's compute plus its collectives, each at the latency of
//! an all-reduce of its size measured for N workers (affine in the size:
//! `L_N(v) = L_N(1) + (v − 1) · s_N`, fitted at one value and at the runs'
//! typical size):
//!
//! ```text
//! T_N = Σ_iterations [ max_w compute_w + Σ_collectives L_N(values carried) ]
//! ```
//!
//! An all-reduce moves about twice what a broadcast or gather of the same
//! size does, so other collectives are charged as upper bounds.
//!
//! Where a run had a core per worker to itself, its measured wall time (to
//! the target and in all) is shown beside the projection, to check the
//! model.
//!
//! Efficiency is `(T_base · base workers) / (T_N · N)` against the fewest
//! workers in the sweep: once from the medians over the seeds both worker
//! counts brought to the target (a count run on fewer seeds is not set
//! against other seeds' times), and once seed by seed (each run against
//! the run of its seed), whose median and range say how much of it is one
//! lucky seed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;
use shoal_rl_core::{Error, Result};
use shoal_rl_eval::{
    RunDir, ScalingCurves, ScalingPoint, Summary, median, median_and_range, plot_scaling,
    read_metrics,
};
use shoal_rl_parallel::Backend;
use shoal_rl_run::projection::{IterationCost, Latency, iteration_cost, project};

use crate::bench::bench_in_process;
use crate::config::{ParallelConfig, config_part};

/// The report's JSON, beside the runs.
pub const SCALE_FILE: &str = "scale.json";
/// The report's figure, beside the runs.
pub const SCALE_PLOT: &str = "scale.png";
/// How deep below the sweep directory run directories are looked for
/// (`<dir>/<setting>/seed-N` is 2).
const MAX_DEPTH: usize = 3;

/// Arguments of `shoal scale`.
#[derive(clap::Args, Debug, Clone)]
pub struct ScaleArgs {
    /// Directories of finished, profiled runs that differ in
    /// `parallel.workers` and the seed (a `shoal sweep` with `--grid
    /// parallel.workers=1,2,4,… --set parallel.profile=true`). Several are
    /// read as one: a single learner's sweep beside a pool's, say.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Where `scale.json` and `scale.png` go (default: the first directory).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Markdown table instead of aligned columns.
    #[arg(long)]
    pub markdown: bool,
    /// How many times the all-reduce latency of each worker count is
    /// measured, each in a fresh process; the projection uses the median.
    /// One measurement can be several times the usual one when other work
    /// has just left the cores.
    #[arg(long, value_parser = shoal_rl_train::args::parse_count, default_value_t = 3)]
    pub latency_rounds: usize,
}

/// Most `--latency-rounds` (each takes a second or so).
const MAX_LATENCY_ROUNDS: usize = 25;

/// A finished, profiled run.
#[derive(Clone, Debug)]
struct ProfiledRun {
    dir: PathBuf,
    seed: u64,
    workers: usize,
    backend: Backend,
    iterations: Vec<IterationCost>,
    /// `(episodes per worker, score)` of every evaluation of the target metric.
    curve: Vec<(f64, f64)>,
    target_metric: String,
    episodes_to_target: Option<u64>,
    env_steps_to_target: Option<u64>,
    /// Gradient updates of each worker by the target (`charts/updates` of
    /// the iteration that reached it).
    updates_to_target: Option<u64>,
    wall_s_to_target: Option<f64>,
    /// Training wall time of the whole run (before its final evaluation).
    wall_s: f64,
}

/// What `scale` reads of a run's `config.toml`: its seed and parallel
/// settings, not its env or learner, so runs on envs this binary cannot
/// build (a Gymnasium env trained from Python) project too.
#[derive(serde::Deserialize)]
struct ScaledConfig {
    seed: u64,
    #[serde(default)]
    parallel: ParallelConfig,
}

fn load_run(dir: &Path) -> Result<ProfiledRun> {
    let run = RunDir::new(dir);
    let config: ScaledConfig =
        config_part(&run.read_config()?, &run.config().display().to_string())?;
    let Summary {
        wall_s,
        extra: summary,
        ..
    } = Summary::read(dir)?;
    let records = read_metrics(dir)?;
    let iterations: Vec<IterationCost> = records
        .iter()
        .filter(|r| r["kind"] == "iteration")
        .filter_map(iteration_cost)
        .collect();
    if iterations.is_empty() {
        return Err(Error::Config(format!(
            "{} has no profiled iterations: train it with a parallel strategy and \
             --set parallel.profile=true",
            dir.display()
        )));
    }
    let workers = config.parallel.workers;
    let target_metric = summary
        .get("target_metric")
        .and_then(Value::as_str)
        .unwrap_or("eval/return_mean")
        .to_string();
    let curve = records
        .iter()
        .filter(|r| r["kind"] == "eval")
        .filter_map(|r| {
            Some((
                r["episode"].as_u64()? as f64 / workers as f64,
                r[target_metric.as_str()].as_f64()?,
            ))
        })
        .collect();
    let episodes_to_target = summary.get("episodes_to_target").and_then(Value::as_u64);
    let updates_to_target = episodes_to_target.and_then(|target| {
        records
            .iter()
            .filter(|r| r["kind"] == "iteration")
            .find(|r| r["episode"].as_u64().is_some_and(|e| e >= target))
            .and_then(|r| r["charts/updates"].as_f64())
            .map(|updates| updates as u64)
    });
    Ok(ProfiledRun {
        dir: dir.to_path_buf(),
        seed: config.seed,
        workers,
        backend: config.parallel.backend,
        iterations,
        curve,
        target_metric,
        episodes_to_target,
        env_steps_to_target: summary.get("env_steps_to_target").and_then(Value::as_u64),
        updates_to_target,
        wall_s_to_target: summary.get("wall_s_to_target").and_then(Value::as_f64),
        wall_s,
    })
}

/// Finished run directories (a `summary.json` and a `config.toml`) at most
/// [`MAX_DEPTH`] levels below `dir`, sorted.
fn find_runs(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) -> Result<()> {
    let run = RunDir::new(dir);
    if run.summary().is_file() && run.config().is_file() {
        out.push(dir.to_path_buf());
        return Ok(());
    }
    if depth == 0 {
        return Ok(());
    }
    let entries =
        std::fs::read_dir(dir).map_err(|e| Error::io(format!("reading {}", dir.display()), e))?;
    let mut children: Vec<PathBuf> = entries
        .filter_map(|entry| Some(entry.ok()?.path()))
        .filter(|path| path.is_dir())
        .collect();
    children.sort();
    for child in children {
        find_runs(&child, depth - 1, out)?;
    }
    Ok(())
}

/// One worker count's row of the report.
#[derive(Clone, Debug, Serialize)]
pub struct ScaleRow {
    /// Workers.
    pub workers: usize,
    /// Runs.
    pub runs: usize,
    /// The seed of each run, in the order of the lists below.
    pub seeds: Vec<u64>,
    /// Runs that reached the target.
    pub reached: usize,
    /// Episodes per worker to the target, by run (`None`: not reached).
    pub per_worker_episodes_to_target: Vec<Option<f64>>,
    /// Environment steps per worker to the target (training and
    /// evaluation), by run.
    pub per_worker_env_steps_to_target: Vec<Option<f64>>,
    /// Gradient updates of each worker to the target, by run (learners
    /// that report `charts/updates`).
    pub updates_to_target: Vec<Option<u64>>,
    /// The slowest worker's compute per iteration, median over every
    /// iteration of every run, in seconds.
    pub compute_s_per_iteration: f64,
    /// The collectives' sizes (fields of the row in `scale.json`).
    #[serde(flatten)]
    pub sizes: CollectiveSizes,
    /// The latencies the projection used: the median of `latency_rounds`,
    /// each part on its own.
    pub latency: Latency,
    /// Every measurement, in the order taken.
    pub latency_rounds: Vec<Latency>,
    /// Projected seconds to the target on one core per worker, by run.
    pub projected_s_to_target: Vec<Option<f64>>,
    /// Projected seconds of the whole run, by run.
    pub projected_s_total: Vec<f64>,
    /// `(T_base · base workers) / (T · workers)` of each run against the
    /// run of the same seed with the fewest workers (`None`: either run
    /// missed the target, or no such run).
    pub efficiency_by_seed: Vec<Option<f64>>,
    /// Measured seconds to the target on the training machine, by run.
    pub measured_s_to_target: Vec<Option<f64>>,
    /// Measured training seconds of the whole run, by run.
    pub measured_s_total: Vec<f64>,
    /// Run directories, in the order of the lists above.
    pub run_dirs: Vec<PathBuf>,
}

impl ScaleRow {
    fn median_projected(&self) -> Option<f64> {
        median(
            &self
                .projected_s_to_target
                .iter()
                .flatten()
                .copied()
                .collect::<Vec<_>>(),
        )
    }
}

/// Runs `shoal scale`.
pub fn scale(args: &ScaleArgs) -> Result<()> {
    if !(1..=MAX_LATENCY_ROUNDS).contains(&args.latency_rounds) {
        return Err(Error::Config(format!(
            "--latency-rounds must be between 1 and {MAX_LATENCY_ROUNDS}, got {}",
            args.latency_rounds
        )));
    }
    let mut dirs = Vec::new();
    for dir in &args.dirs {
        if !dir.is_dir() {
            return Err(Error::Config(format!(
                "{} is not a directory",
                dir.display()
            )));
        }
        let before = dirs.len();
        find_runs(dir, MAX_DEPTH, &mut dirs)?;
        if dirs.len() == before {
            return Err(Error::Config(format!(
                "no finished runs under {}",
                dir.display()
            )));
        }
    }
    let runs = dirs
        .iter()
        .map(|dir| load_run(dir))
        .collect::<Result<Vec<_>>>()?;
    refuse_repeated_seeds(&runs)?;
    let backend = runs[0].backend;
    if let Some(other) = runs.iter().find(|r| r.backend != backend) {
        return Err(Error::Config(format!(
            "{} ran on {}, {} on {}: project one backend at a time",
            runs[0].dir.display(),
            backend.name(),
            other.dir.display(),
            other.backend.name()
        )));
    }
    let mut by_workers: BTreeMap<usize, Vec<&ProfiledRun>> = BTreeMap::new();
    for run in &runs {
        by_workers.entry(run.workers).or_default().push(run);
    }
    let sizes: BTreeMap<usize, CollectiveSizes> = by_workers
        .iter()
        .map(|(&workers, group)| (workers, CollectiveSizes::of(group)))
        .collect();
    let mut latencies = measure_latencies(backend, &sizes, args.latency_rounds)?;
    let mut rows: Vec<ScaleRow> = by_workers
        .iter()
        .map(|(&workers, group)| {
            let rounds = latencies.remove(&workers).unwrap_or_default();
            scale_row(workers, group, sizes[&workers], rounds)
        })
        .collect();
    // Every run against the run of its seed with the fewest workers.
    let base_workers = rows[0].workers as f64;
    let base = projected_by_seed(&rows[0]);
    for row in &mut rows {
        let workers = row.workers as f64;
        row.efficiency_by_seed = projected_by_seed(row)
            .into_iter()
            .map(|(seed, projected)| {
                let &(_, base_s) = base.iter().find(|(s, _)| *s == seed)?;
                Some(base_s? * base_workers / (projected? * workers))
            })
            .collect();
    }
    let table = table(&rows);
    print!(
        "{}",
        if args.markdown {
            table.to_markdown()
        } else {
            table.to_terminal()
        }
    );
    let report = serde_json::json!({
        "backend": backend.name(),
        "target_metric": runs[0].target_metric,
        "rows": rows,
    });
    let json = serde_json::to_vec_pretty(&report)
        .map_err(|e| Error::Config(format!("cannot encode the report: {e}")))?;
    let out = args.out.as_ref().unwrap_or(&args.dirs[0]);
    std::fs::create_dir_all(out)
        .map_err(|e| Error::io(format!("creating {}", out.display()), e))?;
    shoal_rl_eval::atomic_write(out.join(SCALE_FILE), &json)?;
    let curves: Vec<ScalingCurves> = by_workers
        .iter()
        .map(|(&workers, group)| ScalingCurves {
            workers,
            curves: group.iter().map(|r| r.curve.clone()).collect(),
        })
        .collect();
    let points: Vec<ScalingPoint> = rows
        .iter()
        .map(|row| ScalingPoint {
            workers: row.workers,
            projected_s: row.median_projected(),
            measured_s: median(
                &row.measured_s_to_target
                    .iter()
                    .flatten()
                    .copied()
                    .collect::<Vec<_>>(),
            ),
            efficiency_by_seed: row.efficiency_by_seed.iter().flatten().copied().collect(),
        })
        .collect();
    let plot = out.join(SCALE_PLOT);
    plot_scaling(&curves, &runs[0].target_metric, &points, &plot)?;
    eprintln!(
        "scale: wrote {} and {}",
        out.join(SCALE_FILE).display(),
        plot.display()
    );
    Ok(())
}

/// Each run is compared with the run of its seed with the fewest workers,
/// so two runs of one worker count and seed (two learning rates in one
/// sweep, or a directory given twice) would be mixed into one median.
fn refuse_repeated_seeds(runs: &[ProfiledRun]) -> Result<()> {
    let mut seen: BTreeMap<(usize, u64), &Path> = BTreeMap::new();
    for run in runs {
        if let Some(first) = seen.insert((run.workers, run.seed), &run.dir) {
            return Err(Error::Config(format!(
                "{} and {} both have parallel.workers = {} and seed = {}: give one run per \
                 worker count and seed",
                first.display(),
                run.dir.display(),
                run.workers,
                run.seed
            )));
        }
    }
    Ok(())
}

/// The collective sizes of one worker count's runs.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct CollectiveSizes {
    /// Mean values per all-reduce call (0 without all-reduces).
    pub values_per_all_reduce: u64,
    /// The size the latency is measured at besides one value: the larger of
    /// the mean all-reduce and the mean other collective, in values.
    pub measured_values: u64,
}

impl CollectiveSizes {
    fn of(group: &[&ProfiledRun]) -> Self {
        let iterations = || group.iter().flat_map(|r| &r.iterations);
        let mean = |total: u64, calls: u64| total.checked_div(calls).unwrap_or(0);
        let values_per_all_reduce = mean(
            iterations().map(|i| i.all_reduce_values).sum(),
            iterations().map(|i| i.all_reduces).sum(),
        );
        let values_per_other = mean(
            iterations().map(|i| i.other_bytes / 4).sum(),
            iterations().map(|i| i.other_collectives).sum(),
        );
        CollectiveSizes {
            values_per_all_reduce,
            measured_values: values_per_all_reduce.max(values_per_other).max(2),
        }
    }
}

/// `rounds` latency measurements of every worker count, taken round by
/// round (2, 4, 8, 2, 4, 8, …) so that a stretch of slow measurements,
/// which on a shared machine lasts seconds, falls on every count alike
/// rather than on one.
fn measure_latencies(
    backend: Backend,
    sizes: &BTreeMap<usize, CollectiveSizes>,
    rounds: usize,
) -> Result<BTreeMap<usize, Vec<Latency>>> {
    let counts: Vec<String> = sizes.range(2..).map(|(n, _)| n.to_string()).collect();
    if !counts.is_empty() {
        eprintln!(
            "scale: measuring all-reduce latencies on {} for {} workers, {rounds} rounds",
            backend.name(),
            counts.join(", ")
        );
    }
    let mut latencies: BTreeMap<usize, Vec<Latency>> = BTreeMap::new();
    for _ in 0..rounds {
        for (&workers, size) in sizes {
            let latency = measure_latency(backend, workers, size.measured_values)?;
            latencies.entry(workers).or_default().push(latency);
        }
    }
    for (&workers, size) in sizes.range(2..) {
        let each_ms: Vec<f64> = latencies[&workers]
            .iter()
            .map(|l| l.cost(1, size.measured_values as f64) * 1e3)
            .collect();
        eprintln!(
            "scale: {workers} workers: all-reduce of {} values {} ms over {rounds} rounds",
            size.measured_values,
            median_and_range(&each_ms)
        );
    }
    Ok(latencies)
}

/// One worker count's row: its runs projected with the median of the
/// all-reduce latencies measured for that many workers.
fn scale_row(
    workers: usize,
    group: &[&ProfiledRun],
    sizes: CollectiveSizes,
    rounds: Vec<Latency>,
) -> ScaleRow {
    let iterations = || group.iter().flat_map(|r| &r.iterations);
    let latency = median_latency(&rounds);
    let projections: Vec<(f64, Option<f64>)> = group
        .iter()
        .map(|r| project(&r.iterations, latency, r.episodes_to_target))
        .collect();
    let compute: Vec<f64> = iterations().map(|i| i.compute_s).collect();
    ScaleRow {
        workers,
        runs: group.len(),
        seeds: group.iter().map(|r| r.seed).collect(),
        reached: group
            .iter()
            .filter(|r| r.episodes_to_target.is_some())
            .count(),
        per_worker_episodes_to_target: group
            .iter()
            .map(|r| r.episodes_to_target.map(|e| e as f64 / workers as f64))
            .collect(),
        per_worker_env_steps_to_target: group
            .iter()
            .map(|r| r.env_steps_to_target.map(|e| e as f64 / workers as f64))
            .collect(),
        updates_to_target: group.iter().map(|r| r.updates_to_target).collect(),
        compute_s_per_iteration: median(&compute).unwrap_or(f64::NAN),
        sizes,
        latency,
        latency_rounds: rounds,
        projected_s_to_target: projections.iter().map(|p| p.1).collect(),
        projected_s_total: projections.iter().map(|p| p.0).collect(),
        efficiency_by_seed: Vec::new(),
        measured_s_to_target: group.iter().map(|r| r.wall_s_to_target).collect(),
        measured_s_total: group.iter().map(|r| r.wall_s).collect(),
        run_dirs: group.iter().map(|r| r.dir.clone()).collect(),
    }
}

/// The all-reduce latency of `workers` workers on `backend`, fitted through
/// one value and `values` values (measured in a fresh process); zero for
/// one worker, whose collectives return at once.
fn measure_latency(backend: Backend, workers: usize, values: u64) -> Result<Latency> {
    if workers == 1 {
        return Ok(Latency {
            fixed_s: 0.0,
            per_value_s: 0.0,
        });
    }
    let result = bench_in_process(
        backend,
        workers,
        &["--values".to_string(), values.to_string()],
    )?;
    let seconds = |key: &str| {
        result[key]
            .as_f64()
            .ok_or_else(|| Error::Comm(format!("the latency measurement gave no {key}: {result}")))
    };
    Ok(Latency::fit(
        seconds("all_reduce_1_s")?,
        values,
        seconds("all_reduce_s")?,
    ))
}

/// The median of each part of the measured latencies on its own (the
/// median fixed cost with the median cost per value).
fn median_latency(rounds: &[Latency]) -> Latency {
    let part = |get: fn(&Latency) -> f64| {
        median(&rounds.iter().map(get).collect::<Vec<_>>()).unwrap_or(0.0)
    };
    Latency {
        fixed_s: part(|l| l.fixed_s),
        per_value_s: part(|l| l.per_value_s),
    }
}

/// `(seed, projected seconds to the target)` of each of `row`'s runs.
fn projected_by_seed(row: &ScaleRow) -> Vec<(u64, Option<f64>)> {
    row.seeds
        .iter()
        .copied()
        .zip(row.projected_s_to_target.iter().copied())
        .collect()
}

/// `base_workers · median(T_base) / median(T)` over the seeds that reached
/// the target in both `base` and `runs`; `None` when no seed did. Medians
/// over different seeds would set one seed's luck against another's.
fn speedup_on_shared_seeds(
    base: &[(u64, Option<f64>)],
    base_workers: usize,
    runs: &[(u64, Option<f64>)],
) -> Option<f64> {
    let (before, after): (Vec<f64>, Vec<f64>) = runs
        .iter()
        .filter_map(|&(seed, projected)| {
            let base_s = base.iter().find(|(s, _)| *s == seed)?.1?;
            Some((base_s, projected?))
        })
        .unzip();
    Some(median(&before)? / median(&after)? * base_workers as f64)
}

/// The printed table: medians and ranges over seeds, the speedup and the
/// efficiency against the fewest workers over the seeds both reached the
/// target with.
fn table(rows: &[ScaleRow]) -> shoal_rl_eval::ComparisonTable {
    let columns = [
        "workers",
        "reached",
        "episodes per worker to target",
        "updates to target",
        "compute s / iteration",
        "all-reduce ms",
        "projected s to target",
        "speedup",
        "efficiency",
        "efficiency by seed",
        "measured s to target",
        "measured / projected",
        "measured / projected, whole run",
    ];
    let base = rows
        .first()
        .map(|row| (row.workers, projected_by_seed(row)));
    let rows = rows
        .iter()
        .map(|row| {
            let flat =
                |values: &[Option<f64>]| -> Vec<f64> { values.iter().flatten().copied().collect() };
            let speedup = base.as_ref().and_then(|(base_workers, base)| {
                speedup_on_shared_seeds(base, *base_workers, &projected_by_seed(row))
            });
            let ratios: Vec<f64> = row
                .measured_s_to_target
                .iter()
                .zip(&row.projected_s_to_target)
                .filter_map(|(m, p)| Some((*m)? / (*p)?))
                .collect();
            let whole_run: Vec<f64> = row
                .measured_s_total
                .iter()
                .zip(&row.projected_s_total)
                .map(|(m, p)| m / p)
                .collect();
            let number = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
            vec![
                row.workers.to_string(),
                format!("{}/{}", row.reached, row.runs),
                median_and_range(&flat(&row.per_worker_episodes_to_target)),
                median_and_range(
                    &row.updates_to_target
                        .iter()
                        .flatten()
                        .map(|u| *u as f64)
                        .collect::<Vec<_>>(),
                ),
                format!("{:.3}", row.compute_s_per_iteration),
                format!(
                    "{:.3}",
                    row.latency
                        .cost(1, row.sizes.values_per_all_reduce.max(1) as f64)
                        * 1e3
                ),
                median_and_range(&flat(&row.projected_s_to_target)),
                number(speedup),
                number(speedup.map(|s| s / row.workers as f64)),
                median_and_range(&flat(&row.efficiency_by_seed)),
                median_and_range(&flat(&row.measured_s_to_target)),
                median_and_range(&ratios),
                median_and_range(&whole_run),
            ]
        })
        .collect();
    shoal_rl_eval::ComparisonTable {
        columns: columns.iter().map(|c| c.to_string()).collect(),
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost(episodes: u64, compute_s: f64, all_reduces: u64, other: u64) -> IterationCost {
        IterationCost {
            episodes,
            compute_s,
            all_reduces,
            all_reduce_values: all_reduces * 101,
            other_collectives: other,
            other_bytes: other * 4 * 11,
        }
    }

    #[test]
    fn speedup_sets_each_count_against_the_same_seeds() {
        // Two workers on seeds 0 and 1 (100 s, 200 s), eight on seed 1
        // alone (50 s): against seed 1's 200 s, 2 · 200 / 50 = 8; the
        // medians over all seeds would say 2 · 150 / 50 = 6.
        let base = [(0, Some(100.0)), (1, Some(200.0))];
        assert_eq!(
            speedup_on_shared_seeds(&base, 2, &[(1, Some(50.0))]),
            Some(8.0)
        );
        // A seed either count missed the target with is left out of both.
        let base = [(0, Some(100.0)), (1, None), (2, Some(300.0))];
        let runs = [(0, Some(25.0)), (1, Some(40.0)), (2, None)];
        assert_eq!(speedup_on_shared_seeds(&base, 2, &runs), Some(8.0));
        // No seed in common: no figure rather than a cross-seed one.
        assert_eq!(speedup_on_shared_seeds(&base, 2, &[(5, Some(1.0))]), None);
    }

    #[test]
    fn latency_is_fitted_through_two_sizes() {
        let latency = Latency::fit(0.001, 1001, 0.011);
        assert_eq!(latency.fixed_s, 0.001);
        assert!((latency.per_value_s - 1e-5).abs() < 1e-15);
        // 3 calls of 101 values: 3 × 1 ms + 300 × 10 µs.
        assert!((latency.cost(3, 303.0) - 0.006).abs() < 1e-12);
        // A barrier carries nothing and costs the fixed part.
        assert_eq!(latency.cost(1, 0.0), 0.001);
        assert_eq!(Latency::fit(0.002, 1, 0.003).per_value_s, 0.0);
    }

    #[test]
    fn projection_adds_compute_and_collectives_by_hand() {
        let iterations = [
            cost(4, 1.0, 10, 2),
            cost(8, 2.0, 10, 2),
            cost(12, 1.5, 10, 3),
        ];
        let latency = Latency {
            fixed_s: 0.001,
            per_value_s: 0.0001,
        };
        // Each all-reduce: 1 ms + 100 × 0.1 ms = 11 ms; each other: 1 ms + 10 × 0.1 ms = 2 ms.
        // 1 + 0.11 + 0.004; + 2 + 0.11 + 0.004; + 1.5 + 0.11 + 0.006
        let (total, to_target) = project(&iterations, latency, Some(8));
        assert!((total - 4.844).abs() < 1e-12, "{total}");
        assert!((to_target.unwrap() - 3.228).abs() < 1e-12, "{to_target:?}");
        // A target between records is reached at the end of the iteration holding it.
        assert_eq!(project(&iterations, latency, Some(9)).1, Some(total));
        assert_eq!(project(&iterations, latency, None).1, None);
        assert_eq!(project(&iterations, latency, Some(13)).1, None);
    }

    /// A finished two-worker run on `processes` of an env only Python
    /// can build, as `shoal_envs.train` writes it.
    fn gymnasium_run(dir: &Path, config: &str) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("config.toml"), config).unwrap();
        std::fs::write(
            dir.join("summary.json"),
            r#"{"episodes": 8, "env_steps": 400, "wall_s": 3.5, "eval_episodes": 20,
                "episodes_to_target": 8, "target_metric": "eval/success_rate"}"#,
        )
        .unwrap();
        let iteration = |episode: u64| {
            serde_json::json!({
                "kind": "iteration", "episode": episode, "env_steps": episode * 50,
                "wall_s": episode as f64 / 2.0, "charts/updates": episode * 10,
                "time/compute_cpu_s": [0.5, 0.75], "time/all_reduces": 40,
                "time/all_reduce_values": 4000, "time/other_collectives": 1,
                "time/other_bytes": 64,
            })
        };
        let eval = serde_json::json!({
            "kind": "eval", "episode": 8, "env_steps": 400, "wall_s": 4.0,
            "eval/success_rate": 0.95,
        });
        let lines = [iteration(4), iteration(8), eval].map(|r| r.to_string());
        std::fs::write(dir.join("metrics.jsonl"), lines.join("\n") + "\n").unwrap();
    }

    #[test]
    fn a_run_on_an_env_this_binary_cannot_build_is_read_for_its_parallel_settings() {
        let dir = std::env::temp_dir().join(format!("shoal-scale-gym-{}", std::process::id()));
        let run = dir.join("run");
        gymnasium_run(
            &run,
            r#"preset = "ddpg-FetchPush-v4"
seed = 3

[env]
kind = "gymnasium-goal"
id = "gymnasium_robotics:FetchPush-v4"

[algo]
kind = "ddpg"

[parallel]
workers = 2
backend = "processes"
strategy = "averaging"
profile = true
"#,
        );
        let read = load_run(&run).unwrap();
        assert_eq!((read.seed, read.workers), (3, 2));
        assert_eq!(read.backend, Backend::Processes);
        assert_eq!(read.iterations.len(), 2);
        assert_eq!(read.iterations[1].compute_s, 0.75);
        // Evaluations against episodes per worker.
        assert_eq!(read.curve, vec![(4.0, 0.95)]);
        assert_eq!(read.updates_to_target, Some(80));

        std::fs::write(
            run.join("config.toml"),
            "preset = \"x\"\n[parallel]\nworkers = 2\n",
        )
        .unwrap();
        let message = load_run(&run).unwrap_err().to_string();
        assert!(message.contains("config.toml is malformed"), "{message}");
        assert!(message.contains("seed"), "{message}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_run_written_before_per_worker_settings_still_projects() {
        let dir = std::env::temp_dir().join(format!("shoal-scale-old-{}", std::process::id()));
        let run = dir.join("run");
        // `worker0_lr_scale` is what shoal wrote before `worker_lr_scales`;
        // the CLI reads such a run's config through `migrate`, and so must
        // `scale`, whose `[parallel]` refuses keys it does not know.
        gymnasium_run(
            &run,
            "seed = 1\n[parallel]\nworkers = 2\nstrategy = \"averaging\"\n\
             profile = true\nworker0_lr_scale = 1.0\n",
        );
        let read = load_run(&run).unwrap();
        assert_eq!((read.seed, read.workers), (1, 2));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_iteration_costs_its_slowest_worker() {
        let record = serde_json::json!({
            "kind": "iteration", "episode": 40,
            "time/compute_cpu_s": [0.5, 0.9, 0.7],
            "time/all_reduces": 41, "time/all_reduce_values": 4100, "time/other_collectives": 3,
            "time/other_bytes": 120,
        });
        assert_eq!(
            iteration_cost(&record),
            Some(IterationCost {
                episodes: 40,
                compute_s: 0.9,
                all_reduces: 41,
                all_reduce_values: 4100,
                other_collectives: 3,
                other_bytes: 120,
            })
        );
        assert_eq!(
            iteration_cost(&serde_json::json!({"kind": "iteration", "episode": 40})),
            None
        );
    }
}
