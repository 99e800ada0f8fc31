//! The clean stop: SIGINT or SIGTERM ends a run at the end of the episode
//! (or iteration) in progress, with a checkpoint and a summary marked
//! interrupted; `--resume` then continues into the same records as an
//! uninterrupted run; a second signal exits at once.

mod common;

use std::path::Path;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use common::{records, scratch, shoal_args, shoal_command};

/// Starts `shoal args…` in its own process group (as a shell job), so a
/// signal can go to it and its worker processes together, as Ctrl-C does.
fn start(args: &[&str], cwd: &Path) -> Child {
    use std::os::unix::process::CommandExt;
    shoal_command()
        .args(args)
        .current_dir(cwd)
        .process_group(0)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("shoal starts")
}

/// Sends `signal` to the process group of `child`.
fn signal_group(child: &Child, signal: &str) {
    let status = Command::new("kill")
        .args([&format!("-{signal}"), "--", &format!("-{}", child.id())])
        .status()
        .expect("kill runs");
    assert!(status.success(), "kill -{signal} failed");
}

/// Lines of `kind` in the run's metrics so far (0 before the file exists).
fn lines_of(run: &Path, kind: &str) -> usize {
    std::fs::read_to_string(run.join("metrics.jsonl"))
        .map(|text| {
            text.lines()
                .filter(|l| l.contains(&format!("\"kind\":\"{kind}\"")))
                .count()
        })
        .unwrap_or(0)
}

/// Waits (bounded) until the run has written `n` lines of `kind`.
fn wait_for(run: &Path, kind: &str, n: usize, child: &mut Child) {
    let start = Instant::now();
    while lines_of(run, kind) < n {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before it wrote {n} {kind} lines"
        );
        assert!(
            start.elapsed() < Duration::from_secs(300),
            "no {n} {kind} lines within 300 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits (bounded) for the child to exit; its status and stderr.
fn finish(mut child: Child, within: Duration) -> (ExitStatus, String) {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            use std::io::Read;
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            return (status, err);
        }
        if start.elapsed() > within {
            child.kill().unwrap();
            panic!("the run did not exit within {within:?} of the signal");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn summary(run: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap()
}

/// Records other than the loss lines (`update`), which a stop inside a
/// stretch of training splits in two; every episode, iteration and
/// evaluation must match.
fn comparable(run: &Path) -> Vec<serde_json::Value> {
    records(run)
        .into_iter()
        .filter(|r| r["kind"] != "update")
        .collect()
}

/// Trains `args` whole, then again with `signal` sent once `kind` lines
/// reach `after`, then resumes the interrupted run; the two must agree.
fn stop_and_resume(name: &str, args: &[&str], signal: &str, kind: &str, after: usize) {
    let dir = scratch(name);
    let whole = shoal_args(
        &[&["train"], args, &["--out", "whole", "--quiet"]].concat(),
        &dir,
    );
    assert!(whole.status.success(), "{}", common::stderr(&whole));

    let run = dir.join("split");
    let mut child = start(
        &[&["train"], args, &["--out", "split", "--quiet"]].concat(),
        &dir,
    );
    wait_for(&run, kind, after, &mut child);
    signal_group(&child, signal);
    let (status, err) = finish(child, Duration::from_secs(60));
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted: stopped after"), "{err}");
    assert!(err.lines().count() == 1, "one line: {err}");
    assert_eq!(summary(&run)["interrupted"], true);
    assert!(run.join("checkpoints").read_dir().unwrap().count() > 0);
    let stopped_at = summary(&run)["episodes"].as_u64().unwrap();
    let total = whole_episodes(&dir.join("whole"));
    assert!(
        stopped_at < total,
        "the stop came before the end ({stopped_at})"
    );

    let resumed = shoal_args(
        &[&["train"], args, &["--resume", "split", "--quiet"]].concat(),
        &dir,
    );
    assert!(resumed.status.success(), "{}", common::stderr(&resumed));
    assert_eq!(comparable(&run), comparable(&dir.join("whole")));
    assert_eq!(summary(&run)["interrupted"], serde_json::Value::Null);
    assert_eq!(
        summary(&run)["eval_return_mean"],
        summary(&dir.join("whole"))["eval_return_mean"]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

fn whole_episodes(run: &Path) -> u64 {
    summary(run)["episodes"].as_u64().unwrap()
}

const WORM: &[&str] = &[
    "worm-reinforce",
    "--set",
    "train.episodes=60",
    "--set",
    "train.eval_every=20",
    "--set",
    "train.checkpoint_every=40",
    "--set",
    "train.eval_episodes=2",
    "--set",
    "train.final_eval_episodes=2",
];

#[test]
fn sigint_stops_a_single_run_cleanly_and_resume_continues_exactly() {
    stop_and_resume("stop-sigint", WORM, "INT", "episode", 5);
}

#[test]
fn sigterm_stops_a_single_run_cleanly_and_resume_continues_exactly() {
    stop_and_resume("stop-sigterm", WORM, "TERM", "episode", 25);
}

#[test]
fn sigint_stops_a_process_pool_with_every_worker_and_resume_continues_exactly() {
    // Iterations of 2 × 4 episodes; 20 of them.
    let pool = [
        WORM,
        &[
            "--set",
            "train.episodes=160",
            "--set",
            "parallel.episodes_per_iteration=4",
            "--workers",
            "2",
            "--backend",
            "processes",
            "--set",
            "parallel.strategy=pool",
        ],
    ]
    .concat();
    stop_and_resume("stop-pool", &pool, "INT", "iteration", 3);
}

#[test]
fn a_second_signal_exits_at_once() {
    let dir = scratch("stop-twice");
    let run = dir.join("run");
    // Iterations of 40 episodes per worker: far longer than the test waits.
    let args = [
        "train",
        "worm5-pool",
        "--set",
        "parallel.episodes_per_iteration=40",
        "--set",
        "train.episodes=400",
        "--out",
        "run",
        "--quiet",
    ];
    let mut child = start(&args, &dir);
    wait_for(&run, "iteration", 1, &mut child);
    signal_group(&child, "INT");
    std::thread::sleep(Duration::from_millis(300));
    signal_group(&child, "INT");
    let (status, _) = finish(child, Duration::from_secs(10));
    assert_eq!(status.code(), Some(130));
    // Exited inside the iteration: no summary was written.
    assert!(!run.join("summary.json").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Ctrl-C during a sweep stops its cell with a checkpoint and a summary
/// marked interrupted; running the sweep again resumes that cell (it is not
/// finished) into the records of an uninterrupted run.
#[test]
fn a_sweep_stopped_by_sigint_resumes_its_interrupted_cell() {
    let dir = scratch("stop-sweep");
    let whole = shoal_args(
        &[&["train"], WORM, &["--out", "whole", "--quiet"]].concat(),
        &dir,
    );
    assert!(whole.status.success(), "{}", common::stderr(&whole));
    let sweep = [
        &["sweep"],
        WORM,
        &[
            "--grid",
            "train.eval_every=20",
            "--seeds",
            "0..1",
            "--out",
            "s",
        ],
    ]
    .concat();
    let cell = dir.join("s/train.eval_every=20/seed-0");
    let mut child = start(&sweep, &dir);
    wait_for(&cell, "episode", 5, &mut child);
    signal_group(&child, "INT");
    let (status, err) = finish(child, Duration::from_secs(60));
    assert!(!status.success(), "{err}");
    assert!(cell.join("summary.json").is_file(), "{err}");
    assert_eq!(summary(&cell)["interrupted"], true, "{err}");

    let again = shoal_args(&sweep, &dir);
    assert!(again.status.success(), "{}", common::stderr(&again));
    assert_eq!(summary(&cell)["interrupted"], serde_json::Value::Null);
    assert_eq!(comparable(&cell), comparable(&dir.join("whole")));
    std::fs::remove_dir_all(&dir).unwrap();
}
