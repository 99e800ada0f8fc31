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
        shoal_rl_train::config::RunConfig::resolve(
            dir.join("threads-whole/config.toml").to_str().unwrap(),
            &[],
        )
        .unwrap(),
    )
    .resume(dir.join("threads-whole"));
    let refused = shoal_rl_train::run(&plan).unwrap_err().to_string();
    assert!(
        refused.contains(
            "unknown parallel.strategy `local-sgd` (strategies: none, pool, gather, averaging)"
        ),
        "{refused}"
    );
}
