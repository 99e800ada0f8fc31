//! `shoal sweep` through the binary: the grid runs, a half-finished sweep
//! continues without re-running finished cells, an interrupted cell
//! resumes from its checkpoint, and a bad grid fails before anything runs.

mod common;

use std::path::Path;

use common::{assert_clean_failure, scratch, shoal, stderr};

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
    shoal(&args, dir)
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
        &[
            "sweep",
            "toy-reinforce",
            "--grid",
            "algo.gama=0.9,0.99",
            "--out",
            "s",
        ],
        &dir,
    );
    assert_clean_failure(&out, "cell algo.gama=0.9: unknown key `algo.gama`");
    assert!(!dir.join("s").exists());
    let out = shoal(
        &["sweep", "toy-reinforce", "--seeds", "0..5000", "--out", "s"],
        &dir,
    );
    assert_clean_failure(&out, "--seeds `0..5000` names more than 1000 seeds");
    assert!(!dir.join("s").exists());
}
