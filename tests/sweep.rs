//! `shoal sweep` through the binary: the grid runs, a half-finished sweep
//! continues without re-running finished cells, an interrupted cell
//! resumes from its checkpoint, and a bad grid fails before anything runs.

mod common;

use std::path::Path;

use common::{assert_clean_failure, scratch, shoal, shoal_args, stderr};

const TINY: &[&str] = &[
    "--set",
    "train.episodes=200",
    "--set",
    "train.eval_every=100",
    "--set",
    "train.checkpoint_every=100",
    "--set",
    "train.target_return=-1000",
];

fn sweep(dir: &Path, seeds: &str) -> std::process::Output {
    let args = [
        &["sweep", "toy-reinforce", "--grid", "algo.gamma=0.9,0.99"][..],
        TINY,
        &["--seeds", seeds, "--jobs", "2", "--out", "s"],
    ]
    .concat();
    shoal_args(&args, dir)
}

fn summary_bytes(dir: &Path, setting: &str, seed: u64) -> Vec<u8> {
    std::fs::read(
        dir.join("s")
            .join(setting)
            .join(format!("seed-{seed}/summary.json")),
    )
    .unwrap()
}

#[test]
fn a_sweep_runs_its_grid_and_continues_where_it_stopped() {
    let dir = scratch("sweep");
    let first = sweep(&dir, "0..2");
    assert!(first.status.success(), "{}", stderr(&first));
    assert!(
        stderr(&first).contains("4 cells, 0 finished, 4 to run"),
        "{}",
        stderr(&first)
    );
    let table = String::from_utf8_lossy(&first.stdout).to_string();
    for setting in ["algo.gamma=0.9 ", "algo.gamma=0.99 "] {
        let row = table.lines().find(|l| l.starts_with(setting)).unwrap();
        // Two runs, both past the (low) target.
        assert!(
            row.contains(" 2/2 ") && row.matches("2/2").count() == 2,
            "{row}"
        );
    }
    for (setting, gamma) in [("algo.gamma=0.9", "0.9"), ("algo.gamma=0.99", "0.99")] {
        for seed in 0..2 {
            let config = std::fs::read_to_string(
                dir.join("s")
                    .join(setting)
                    .join(format!("seed-{seed}/config.toml")),
            )
            .unwrap();
            assert!(config.contains(&format!("seed = {seed}\n")), "{config}");
            assert!(config.contains(&format!("gamma = {gamma}\n")), "{config}");
        }
    }
    let kept = summary_bytes(&dir, "algo.gamma=0.9", 0);
    let kept_time = std::fs::metadata(dir.join("s/algo.gamma=0.9/seed-0/summary.json"))
        .unwrap()
        .modified()
        .unwrap();

    // An interrupted cell: its checkpoint is there, its summary is not.
    let interrupted = dir.join("s/algo.gamma=0.99/seed-1/summary.json");
    let finished = std::fs::read(&interrupted).unwrap();
    std::fs::remove_file(&interrupted).unwrap();

    // The same sweep with one more seed: two new cells and the interrupted one run.
    let second = sweep(&dir, "0..3");
    assert!(second.status.success(), "{}", stderr(&second));
    assert!(
        stderr(&second).contains("6 cells, 3 finished, 3 to run"),
        "{}",
        stderr(&second)
    );
    assert_eq!(summary_bytes(&dir, "algo.gamma=0.9", 0), kept);
    let again = std::fs::metadata(dir.join("s/algo.gamma=0.9/seed-0/summary.json"))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(again, kept_time, "a finished cell was run again");
    // Resumed from its last checkpoint, the cell ends as it had.
    let resumed: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&interrupted).unwrap()).unwrap();
    let before: serde_json::Value = serde_json::from_slice(&finished).unwrap();
    assert_eq!(resumed["eval_return_mean"], before["eval_return_mean"]);
    assert_eq!(resumed["episodes"], 200);
    let log = std::fs::read_to_string(dir.join("s/algo.gamma=0.99/seed-1.log")).unwrap();
    assert!(!log.contains("error"), "{log}");
    let table = String::from_utf8_lossy(&second.stdout).to_string();
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("algo.gamma=0.9 ") && l.contains(" 3/3 "))
    );
}

#[test]
fn a_bad_grid_fails_before_anything_runs() {
    let dir = scratch("sweep-bad");
    let out = shoal(
        "sweep toy-reinforce --grid algo.gama=0.9,0.99 --out s",
        &dir,
    );
    assert_clean_failure(&out, "cell algo.gama=0.9: unknown key `algo.gama`");
    assert!(!dir.join("s").exists());
    let out = shoal("sweep toy-reinforce --seeds 0..5000 --out s", &dir);
    assert_clean_failure(&out, "--seeds `0..5000` names more than 1000 seeds");
    assert!(!dir.join("s").exists());
}

/// A sweep over worker counts with profiles, then `shoal scale`: one row
/// per worker count, and each run's projected time recomputed here from
/// its own records and the latencies the report measured.
#[test]
fn scale_projects_a_profiled_averaging_sweep() {
    scale_projects_a_profiled_worker_sweep("averaging");
}

/// The same for the branch-and-merge pool: its broadcasts of the winner's
/// state are charged as collectives of their size.
#[test]
fn scale_projects_a_profiled_pool_sweep() {
    scale_projects_a_profiled_worker_sweep("pool");
}

/// The same for rollout gather: rank 0's update is part of its compute.
#[test]
fn scale_projects_a_profiled_gather_sweep() {
    scale_projects_a_profiled_worker_sweep("gather");
}

fn scale_projects_a_profiled_worker_sweep(strategy: &str) {
    let dir = scratch(&format!("scale-{strategy}"));
    let strategy_setting = format!("parallel.strategy=\"{strategy}\"");
    let out = shoal_args(
        &[
            "sweep",
            "toy-reinforce",
            "--grid",
            "parallel.workers=1,2,3",
            "--set",
            &strategy_setting,
            "--set",
            "parallel.episodes_per_iteration=2",
            "--set",
            "parallel.profile=true",
            "--set",
            "train.episodes=48",
            "--set",
            "train.eval_every=12",
            "--set",
            "train.target_return=-1000",
            "--seeds",
            "0..2",
            "--out",
            "s",
        ],
        &dir,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let out = shoal("scale s --latency-rounds 2", &dir);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("s/scale.json")).unwrap()).unwrap();
    assert!(dir.join("s/scale.png").is_file());
    let rows = report["rows"].as_array().unwrap();
    let workers: Vec<u64> = rows
        .iter()
        .map(|r| r["workers"].as_u64().unwrap())
        .collect();
    assert_eq!(workers, [1, 2, 3]);
    // Each run's efficiency against the one-worker run of its seed (the
    // same `seed-K` folder name): T₁ / (T_N · N).
    let seed_of = |run: &serde_json::Value| {
        Path::new(run.as_str().unwrap())
            .file_name()
            .unwrap()
            .to_owned()
    };
    let one_worker: Vec<_> = rows[0]["run_dirs"]
        .as_array()
        .unwrap()
        .iter()
        .map(seed_of)
        .zip(rows[0]["projected_s_to_target"].as_array().unwrap())
        .collect();
    for row in rows {
        let n = row["workers"].as_f64().unwrap();
        let efficiencies = row["efficiency_by_seed"].as_array().unwrap();
        let runs = row["run_dirs"].as_array().unwrap();
        let projected = row["projected_s_to_target"].as_array().unwrap();
        assert_eq!(efficiencies.len(), runs.len());
        for ((efficiency, run), t_n) in efficiencies.iter().zip(runs).zip(projected) {
            let (_, t_1) = one_worker
                .iter()
                .find(|(seed, _)| *seed == seed_of(run))
                .unwrap();
            let expected = t_1.as_f64().unwrap() / (t_n.as_f64().unwrap() * n);
            let efficiency = efficiency.as_f64().unwrap();
            assert!(
                (efficiency - expected).abs() < 1e-12,
                "{efficiency} vs {expected}"
            );
        }
    }
    for row in rows {
        let n = row["workers"].as_u64().unwrap();
        assert_eq!(row["runs"], 2);
        // A target every run reaches at its first evaluation: 12 episodes.
        assert_eq!(row["reached"], 2);
        for per_worker in row["per_worker_episodes_to_target"].as_array().unwrap() {
            assert_eq!(per_worker.as_f64(), Some(12.0 / n as f64));
        }
        // REINFORCE reports no update count; the env steps come from the summaries.
        assert!(
            row["updates_to_target"]
                .as_array()
                .unwrap()
                .iter()
                .all(|u| u.is_null())
        );
        let latency = &row["latency"];
        let (fixed_s, per_value_s) = (
            latency["fixed_s"].as_f64().unwrap(),
            latency["per_value_s"].as_f64().unwrap(),
        );
        // Two measurements: each part is their mean (the median of two).
        let rounds = row["latency_rounds"].as_array().unwrap();
        assert_eq!(rounds.len(), 2, "{row}");
        let mean_of =
            |key: &str| (rounds[0][key].as_f64().unwrap() + rounds[1][key].as_f64().unwrap()) / 2.0;
        assert!((fixed_s - mean_of("fixed_s")).abs() <= 1e-15 * fixed_s.max(1.0));
        assert!((per_value_s - mean_of("per_value_s")).abs() <= 1e-15 * per_value_s.max(1.0));
        if n == 1 {
            assert_eq!((fixed_s, per_value_s), (0.0, 0.0));
        } else {
            assert!(fixed_s > 0.0 && per_value_s >= 0.0, "{latency}");
        }
        // calls × fixed + the values beyond one per call × per value
        let cost =
            |calls: f64, values: f64| calls * fixed_s + (values - calls).max(0.0) * per_value_s;
        let dirs = row["run_dirs"].as_array().unwrap();
        let totals = row["projected_s_total"].as_array().unwrap();
        let env_steps = row["per_worker_env_steps_to_target"].as_array().unwrap();
        for ((run, total), steps) in dirs.iter().zip(totals).zip(env_steps) {
            let summary: serde_json::Value = serde_json::from_slice(
                &std::fs::read(dir.join(run.as_str().unwrap()).join("summary.json")).unwrap(),
            )
            .unwrap();
            assert_eq!(
                steps.as_f64().unwrap(),
                summary["env_steps_to_target"].as_f64().unwrap() / n as f64
            );
            let records = common::records(&dir.join(run.as_str().unwrap()));
            let iterations: Vec<_> = records
                .iter()
                .filter(|r| r["kind"] == "iteration")
                .collect();
            // 48 episodes / (n workers × 2) iterations, every one profiled.
            assert_eq!(iterations.len() as u64, 48 / (2 * n));
            let mut expected = 0.0;
            for r in iterations {
                let compute = r["time/compute_cpu_s"].as_array().unwrap();
                assert_eq!(compute.len() as u64, n);
                let slowest = compute
                    .iter()
                    .map(|v| v.as_f64().unwrap())
                    .fold(0.0, f64::max);
                let calls = r["time/all_reduces"].as_f64().unwrap();
                let others = r["time/other_collectives"].as_f64().unwrap();
                match strategy {
                    // REINFORCE averages its gradient (and value gradient)
                    // once per update.
                    "averaging" => assert!(n == 1 || calls >= 1.0, "{r}"),
                    // The candidates' scores, then the winner's state.
                    "pool" | "gather" => assert!(n == 1 || others >= 1.0, "{r}"),
                    _ => unreachable!(),
                }
                let field = |key: &str| r[key].as_f64().unwrap();
                expected += slowest
                    + cost(calls, field("time/all_reduce_values"))
                    + cost(
                        field("time/other_collectives"),
                        field("time/other_bytes") / 4.0,
                    );
            }
            let total = total.as_f64().unwrap();
            assert!((total - expected).abs() < 1e-9, "{total} vs {expected}");
        }
    }
}

/// Runs from several directories are projected together (a single
/// learner's sweep beside a pool's) into the `--out` directory; one worker
/// count and seed twice is refused, since medians would mix them.
#[test]
fn scale_reads_several_directories_and_refuses_a_repeated_seed() {
    let dir = scratch("scale-dirs");
    for (workers, strategy, out) in [(1, "averaging", "single"), (2, "pool", "pool")] {
        let out = shoal(
            &format!(
                "sweep toy-reinforce --grid parallel.workers={workers} \
                 --set 'parallel.strategy=\"{strategy}\"' --set parallel.episodes_per_iteration=2 \
                 --set parallel.profile=true --set train.episodes=24 --set train.eval_every=12 \
                 --set train.target_return=-1000 --seeds 0..2 --out {out}"
            ),
            &dir,
        );
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let out = shoal("scale single pool --out both --latency-rounds 1", &dir);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("both/scale.json")).unwrap()).unwrap();
    assert!(dir.join("both/scale.png").is_file());
    assert!(!dir.join("single/scale.json").exists());
    let rows = report["rows"].as_array().unwrap();
    for (row, (workers, source)) in rows.iter().zip([(1, "single"), (2, "pool")]) {
        assert_eq!(row["workers"], workers);
        let runs = row["run_dirs"].as_array().unwrap();
        assert_eq!(runs.len(), 2);
        assert!(
            runs.iter().all(|r| r.as_str().unwrap().starts_with(source)),
            "{runs:?}"
        );
        // Each pool run is compared with the single learner of its seed.
        assert!(
            row["efficiency_by_seed"]
                .as_array()
                .unwrap()
                .iter()
                .all(|e| e.is_f64())
        );
    }
    assert_eq!(rows.len(), 2);
    assert_clean_failure(
        &shoal("scale single pool single", &dir),
        "both have parallel.workers = 1 and seed = 0: give one run per worker count and seed",
    );
    assert_clean_failure(
        &shoal("scale single missing", &dir),
        "missing is not a directory",
    );
}

#[test]
fn scale_refuses_runs_without_profiles_and_empty_directories() {
    let dir = scratch("scale-refused");
    std::fs::create_dir_all(dir.join("empty")).unwrap();
    assert_clean_failure(&shoal("scale empty", &dir), "no finished runs under empty");
    assert_clean_failure(
        &shoal("scale empty --latency-rounds 0", &dir),
        "--latency-rounds must be between 1 and 25, got 0",
    );
    let out = shoal(
        "train toy-reinforce --out plain/run --quiet --set train.episodes=20",
        &dir,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_clean_failure(
        &shoal("scale plain", &dir),
        "has no profiled iterations: train it with a parallel strategy and --set parallel.profile=true",
    );
}
