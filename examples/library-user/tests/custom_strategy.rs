//! A strategy defined outside shoal (`src/bin/custom_strategy.rs`, local
//! SGD), registered by name, runs like a built-in: its run directory is
//! plotted and its policy evaluated by shoal's crates, and a resumed run
//! equals an uninterrupted one, record for record, on threads and on
//! processes.

mod common;

use std::path::Path;

use common::{records, scratch};
use shoal_rl_core::Learner;

const SCHEDULE: &[&str] = &[
    "--set",
    "train.eval_every=160",
    "--set",
    "train.checkpoint_every=160",
    "--quiet",
];

fn run_example(dir: &Path, args: &[&str]) {
    common::run("custom_strategy", dir, &[args, SCHEDULE].concat());
}

#[test]
fn workers_that_differ_between_syncs_resume_exactly_from_a_checkpoint_between_them() {
    // Averaging every 3 iterations, the checkpoint after iteration 8 falls
    // between syncs: each worker's own state must come back.
    let dir = scratch("custom-strategy-sync");
    let common = ["--workers", "2", "--sync-every", "3"];
    let run = |extra: &[&str]| run_example(&dir, &[&common[..], extra].concat());
    run(&["--set", "train.episodes=320", "--out", "whole"]);
    run(&["--set", "train.episodes=160", "--out", "split"]);
    let checkpoint = dir.join("split/checkpoints/ckpt-000001");
    assert!(
        checkpoint.join("worker-1/learner.bin").is_file(),
        "the second worker's own state is kept"
    );
    run(&["--set", "train.episodes=320", "--resume", "split"]);
    assert_eq!(records(&dir.join("split")), records(&dir.join("whole")));
}

#[test]
fn a_strategy_from_outside_plots_evaluates_and_resumes_like_a_built_in() {
    let dir = scratch("custom-strategy");
    let mut uninterrupted = None;
    for backend in ["threads", "processes"] {
        let whole = format!("{backend}-whole");
        let split = format!("{backend}-split");
        let common = ["--backend", backend, "--workers", "2"];
        run_example(
            &dir,
            &[
                &common[..],
                &["--set", "train.episodes=320", "--out", &whole],
            ]
            .concat(),
        );
        run_example(
            &dir,
            &[
                &common[..],
                &["--set", "train.episodes=160", "--out", &split],
            ]
            .concat(),
        );
        run_example(
            &dir,
            &[
                &common[..],
                &["--set", "train.episodes=320", "--resume", &split],
            ]
            .concat(),
        );
        let whole_records = records(&dir.join(&whole));
        assert_eq!(whole_records.len(), 18, "16 iterations and 2 evaluations");
        assert!(
            whole_records
                .iter()
                .filter(|r| r["kind"] == "iteration")
                .all(|r| r["strategy"] == "local-sgd" && r["workers"] == 2)
        );
        assert_eq!(records(&dir.join(&split)), whole_records, "{backend}");
        let config = std::fs::read_to_string(dir.join(&whole).join("config.toml")).unwrap();
        assert!(config.contains("strategy = \"local-sgd\""), "{config}");
        match &uninterrupted {
            None => uninterrupted = Some(whole_records),
            Some(threads) => assert_eq!(&whole_records, threads, "processes equal threads"),
        }

        // shoal's tools read the run directory: what `shoal plot` draws and
        // `shoal eval` evaluates.
        let plots = dir.join(&whole).join("plots");
        shoal_rl_eval::plot_runs(&[dir.join(&whole)], &plots).unwrap();
        let png = std::fs::read(plots.join("eval.png")).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        let selector = shoal_rl_eval::CheckpointSelector::Latest;
        let (cfg, mut learner) = shoal_rl_train::load_run(&dir.join(&whole), &selector).unwrap();
        let report = learner
            .evaluate(4, shoal_rl_train::eval_seed(&cfg))
            .unwrap();
        assert_eq!(report.episodes, 4);
        assert!(report.return_mean.is_finite());
    }
    // Without the registration (as `shoal train` is) local SGD is unknown:
    // one line naming the strategies there are.
    let plan = shoal_rl_train::Plan::new(
        shoal_rl_train::resolve(dir.join("threads-whole/config.toml").to_str().unwrap(), &[])
            .unwrap(),
    )
    .resume(dir.join("threads-whole"));
    let refused = shoal_rl_train::run(&plan).unwrap_err().to_string();
    assert!(
        refused.contains(
            "unknown parallel.strategy `local-sgd` (strategies: none, pool, gather, averaging"
        ),
        "{refused}"
    );
}

#[test]
fn local_sgd_stopped_by_ctrl_c_between_syncs_resumes_exactly() {
    use std::os::unix::process::CommandExt;
    use std::time::{Duration, Instant};
    // Averaging every 1 000 iterations: in this run the workers never meet
    // again after the start, so wherever Ctrl-C stops it, it stops between
    // syncs with every worker's own state to keep.
    let dir = scratch("custom-strategy-ctrl-c");
    let args = [
        "--workers",
        "2",
        "--sync-every",
        "1000",
        "--set",
        "train.episodes=3000",
    ];
    run_example(&dir, &[&args[..], &["--out", "whole"]].concat());
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_custom_strategy"))
        .args([&args[..], SCHEDULE, &["--out", "split"]].concat())
        .current_dir(&dir)
        // Its own process group, as a shell job: Ctrl-C reaches the group.
        .process_group(0)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let iterations = || {
        std::fs::read_to_string(dir.join("split/metrics.jsonl"))
            .map(|text| text.matches("\"kind\":\"iteration\"").count())
            .unwrap_or(0)
    };
    let start = Instant::now();
    while iterations() < 3 {
        assert!(child.try_wait().unwrap().is_none(), "the run ended first");
        assert!(start.elapsed() < Duration::from_secs(300));
        std::thread::sleep(Duration::from_millis(10));
    }
    let group = format!("-{}", child.id());
    let kill = std::process::Command::new("kill")
        .args(["-INT", "--", &group])
        .status();
    assert!(kill.unwrap().success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "a clean stop");
    let summary = std::fs::read_to_string(dir.join("split/summary.json")).unwrap();
    let summary: serde_json::Value = serde_json::from_str(&summary).unwrap();
    assert_eq!(summary["interrupted"], true, "{summary}");
    let stopped_at = summary["episodes"].as_u64().unwrap();
    assert!(
        stopped_at < 3000,
        "the stop came before the end ({stopped_at})"
    );
    run_example(&dir, &[&args[..], &["--resume", "split"]].concat());
    assert_eq!(records(&dir.join("split")), records(&dir.join("whole")));
}
