//! Fault injection through the real `shoal` binary: run directories shared
//! by two processes, foreign directories, runs killed between checkpoints,
//! damaged checkpoints, and settings that must be refused with one line
//! before anything is written.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{assert_clean_failure, records, shoal, shoal_args, shoal_command, stderr};

fn spawn(args: &[&str], cwd: &Path) -> Child {
    shoal_command()
        .args(args)
        .current_dir(cwd)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the shoal binary starts")
}

fn succeeds(out: Output) -> Output {
    assert!(out.status.success(), "{}", stderr(&out));
    out
}

/// A fresh scratch directory for one test of this file.
fn scratch(name: &str) -> PathBuf {
    common::scratch(&format!("faults-{name}"))
}

/// Every file below `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                out.insert(path.strip_prefix(root).unwrap().to_path_buf(), bytes);
            }
        }
    }
    let mut files = BTreeMap::new();
    walk(dir, dir, &mut files);
    files
}

/// Polls `ready` every few milliseconds for up to a minute.
fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ready() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn signal(child: &Child, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -{name} failed");
}

fn budget(episodes: u64, every: u64) -> Vec<String> {
    [
        format!("train.episodes={episodes}"),
        format!("train.eval_every={every}"),
        format!("train.checkpoint_every={every}"),
        "train.eval_episodes=2".into(),
        "train.final_eval_episodes=2".into(),
    ]
    .into_iter()
    .flat_map(|kv| ["--set".to_string(), kv])
    .collect()
}

/// `shoal train <source> <dir_flag> <dir> <budget> --quiet <extra>`.
fn train_args(
    source: &str,
    dir_flag: &str,
    dir: &str,
    episodes: u64,
    every: u64,
    extra: &[&str],
) -> Vec<String> {
    let mut args: Vec<String> = vec!["train".into(), source.into(), dir_flag.into(), dir.into()];
    args.extend(budget(episodes, every));
    args.push("--quiet".into());
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn run_shoal(args: &[String], cwd: &Path) -> Output {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    shoal_args(&args, cwd)
}

fn spawn_shoal(args: &[String], cwd: &Path) -> Child {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    spawn(&args, cwd)
}

/// Hierarchical actor-critic on the goal-conditioned point toy task: no
/// preset trains HAC in seconds, so tests write its config.
const TOY_HAC: &str = r#"
preset = "toy-hac"
seed = 0

[env]
kind = "point-goal"

[algo]
kind = "hac"
levels = 2
horizon = 5
hidden = [16, 16]
batch_size = 16
n_batches = 2
buffer_size = 10000
"#;

// ---------------------------------------------------------------------------
// Run directories are owned
// ---------------------------------------------------------------------------

#[test]
fn second_training_on_a_running_directory_is_refused_and_writes_nothing() {
    let dir = scratch("two-trainings");
    // A toy episode takes about a millisecond: the first record (at 100)
    // leaves the run 900 more to be stopped in.
    let args = train_args("toy-reinforce", "--out", "run", 1000, 100, &[]);
    let mut first = spawn_shoal(&args, &dir);
    let run = dir.join("run");
    wait_for("the first run's first metrics", || {
        std::fs::read_to_string(run.join("metrics.jsonl")).is_ok_and(|m| m.lines().count() > 0)
    });
    // Freeze the first run so that its files can be compared byte for byte
    // around the second attempt.
    signal(&first, "STOP");
    assert!(
        first.try_wait().unwrap().is_none(),
        "the first run finished before it could be stopped; raise its budget"
    );
    let before = snapshot(&run);
    let holder = format!("pid {}", first.id());
    assert!(
        String::from_utf8_lossy(&before[Path::new("run.lock")]).starts_with(&holder),
        "the lock file names its holder"
    );

    let second = run_shoal(&args, &dir);
    let resume = run_shoal(
        &train_args("toy-reinforce", "--resume", "run", 2000, 100, &[]),
        &dir,
    );
    let after = snapshot(&run);
    signal(&first, "CONT");
    for out in [&second, &resume] {
        assert_clean_failure(out, "run directory is in use by another shoal process");
        assert_clean_failure(out, &holder);
    }
    assert!(before == after, "a refused process changed the run's files");

    let status = first.wait().unwrap();
    assert!(status.success(), "the first run failed after the refusals");
    // And the first run is the run it would have been alone.
    succeeds(run_shoal(
        &train_args("toy-reinforce", "--out", "alone", 1000, 100, &[]),
        &dir,
    ));
    assert_eq!(records(&run), records(&dir.join("alone")));
    assert_eq!(std::fs::read(run.join("run.lock")).unwrap(), b"");
}

#[test]
fn foreign_directory_as_out_is_refused_and_left_byte_for_byte() {
    let dir = scratch("foreign");
    let foreign = dir.join("photos");
    std::fs::create_dir_all(foreign.join("2024")).unwrap();
    std::fs::write(foreign.join("notes.txt"), "do not touch").unwrap();
    std::fs::write(foreign.join("2024").join("a.jpg"), [0xFFu8, 0xD8, 0xFF]).unwrap();
    std::fs::write(foreign.join("metrics.jsonl"), "not a shoal metrics log\n").unwrap();
    let before = snapshot(&foreign);

    let out = run_shoal(
        &train_args("toy-reinforce", "--out", "photos", 20, 10, &[]),
        &dir,
    );
    assert_clean_failure(&out, "photos is not empty and holds no shoal run");
    assert!(
        before == snapshot(&foreign),
        "the foreign directory changed"
    );

    // A finished run is not a fresh --out either, and stays as it was.
    succeeds(run_shoal(
        &train_args("toy-reinforce", "--out", "done", 20, 10, &[]),
        &dir,
    ));
    let before = snapshot(&dir.join("done"));
    let out = run_shoal(
        &train_args("toy-reinforce", "--out", "done", 20, 10, &[]),
        &dir,
    );
    assert_clean_failure(&out, "done already holds a run; resume it (--resume done");
    assert!(before == snapshot(&dir.join("done")));

    std::fs::write(dir.join("a-file"), "x").unwrap();
    let out = run_shoal(
        &train_args("toy-reinforce", "--out", "a-file", 20, 10, &[]),
        &dir,
    );
    assert_clean_failure(&out, "a-file: exists and is not a directory");
    assert_eq!(std::fs::read(dir.join("a-file")).unwrap(), b"x");

    // An empty directory is fine.
    std::fs::create_dir_all(dir.join("empty")).unwrap();
    succeeds(run_shoal(
        &train_args("toy-reinforce", "--out", "empty", 20, 10, &[]),
        &dir,
    ));
}

#[test]
fn default_run_directories_are_claimed_atomically() {
    let dir = scratch("numbered");
    let mut args: Vec<String> = vec!["train".into(), "toy-reinforce".into(), "--quiet".into()];
    args.extend(budget(20, 10));
    let children: Vec<Child> = (0..3).map(|_| spawn_shoal(&args, &dir)).collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let mut names: Vec<String> = std::fs::read_dir(dir.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["toy-reinforce", "toy-reinforce-2", "toy-reinforce-3"]
    );
    for name in names {
        let run = dir.join("runs").join(name);
        assert_eq!(
            records(&run)
                .iter()
                .filter(|r| r["kind"] == "episode")
                .count(),
            20,
            "each run wrote its own metrics alone"
        );
    }
}

// ---------------------------------------------------------------------------
// Killed and resumed
// ---------------------------------------------------------------------------

/// Trains `source` to `episodes` uninterrupted, and again killed (SIGKILL)
/// at a point where it has written a checkpoint and records past it but not
/// finished, then resumed; the metrics must agree.
///
/// Where the kill lands is not left to timing: a toy run logs a record per
/// millisecond, faster than any poll, so the victim is stopped (SIGSTOP)
/// before its files are read and killed only if they show such a point;
/// otherwise it continues for a moment and is stopped again.
fn killed_run_resumes_to_the_uninterrupted_records(
    name: &str,
    source: &str,
    episodes: u64,
    extra: &[&str],
) {
    const EVERY: u64 = 20;
    let dir = scratch(name);
    if source.ends_with(".toml") {
        std::fs::write(dir.join(source), TOY_HAC).unwrap();
    }
    // Evaluations (and metrics) every 5 episodes, checkpoints every EVERY.
    let mut extra = extra.to_vec();
    extra.extend(["--set", "train.eval_every=5"]);
    let args = |flag: &str, run: &str| train_args(source, flag, run, episodes, EVERY, &extra);
    succeeds(run_shoal(&args("--out", "full"), &dir));
    let full = records(&dir.join("full"));

    let mut victim = spawn_shoal(&args("--out", "killed"), &dir);
    let killed = dir.join("killed");
    let start = Instant::now();
    let latest = loop {
        assert!(
            victim.try_wait().unwrap().is_none(),
            "the run finished before it could be killed past a checkpoint; raise its budget"
        );
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "timed out waiting for a checkpoint with records past it"
        );
        signal(&victim, "STOP");
        if let Some(latest) = killable_at(&killed, EVERY) {
            break latest;
        }
        signal(&victim, "CONT");
        std::thread::sleep(Duration::from_millis(2));
    };
    victim.kill().unwrap();
    assert!(!victim.wait().unwrap().success());
    assert!(latest < episodes, "killed before its last checkpoint");

    succeeds(run_shoal(&args("--resume", "killed"), &dir));
    assert!(full.iter().any(|r| r["kind"] == "eval"));
    assert_eq!(records(&killed), full);
}

/// The episode of the run's latest checkpoint if it has one, has logged
/// records past it and has not written its summary: a point where a kill
/// leaves records the resume must discard.
fn killable_at(run: &Path, every: u64) -> Option<u64> {
    let latest = std::fs::read_to_string(run.join("checkpoints").join("latest")).ok()?;
    let index: u64 = latest.trim().strip_prefix("ckpt-")?.parse().ok()?;
    let checkpoint_episode = index * every;
    // The last line may be half written; only whole records count.
    let metrics = std::fs::read_to_string(run.join("metrics.jsonl")).ok()?;
    let past = metrics
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .any(|r| {
            r["episode"]
                .as_u64()
                .is_some_and(|e| e > checkpoint_episode)
        });
    (past && !run.join("summary.json").exists()).then_some(checkpoint_episode)
}

#[test]
fn killed_reinforce_run_resumes_to_the_same_metrics() {
    // A toy REINFORCE episode takes about a millisecond: a longer budget
    // leaves the stepping loop room to find a point to kill.
    killed_run_resumes_to_the_uninterrupted_records("kill-reinforce", "toy-reinforce", 400, &[]);
}

#[test]
fn killed_ddpg_run_resumes_to_the_same_metrics() {
    killed_run_resumes_to_the_uninterrupted_records(
        "kill-ddpg",
        "toy-ddpg-her",
        60,
        &["--set", "algo.hidden=[16, 16]", "--set", "algo.n_batches=2"],
    );
}

#[test]
fn killed_hac_run_resumes_to_the_same_metrics() {
    killed_run_resumes_to_the_uninterrupted_records("kill-hac", "toy-hac.toml", 60, &[]);
}

#[test]
fn resume_from_a_named_checkpoint_and_a_damaged_latest() {
    let dir = scratch("named-checkpoint");
    succeeds(run_shoal(
        &train_args("toy-reinforce", "--out", "full", 40, 10, &[]),
        &dir,
    ));
    succeeds(run_shoal(
        &train_args("toy-reinforce", "--out", "split", 20, 10, &[]),
        &dir,
    ));
    let checkpoints = dir.join("split").join("checkpoints");
    assert_eq!(
        std::fs::read_to_string(checkpoints.join("latest")).unwrap(),
        "ckpt-000002\n"
    );
    let state = checkpoints.join("ckpt-000002").join("learner.bin");
    let mut bytes = std::fs::read(&state).unwrap();
    bytes[10] ^= 0x55;
    std::fs::write(&state, &bytes).unwrap();
    let before = snapshot(&dir.join("split"));

    let resume = train_args("toy-reinforce", "--resume", "split", 40, 10, &[]);
    let out = run_shoal(&resume, &dir);
    assert_clean_failure(&out, "ckpt-000002/learner.bin: corrupt");
    assert_clean_failure(
        &out,
        "the newest intact checkpoint is split/checkpoints/ckpt-000001 (select it with --checkpoint 1)",
    );
    let mut no_such = resume.clone();
    no_such.extend(["--checkpoint".into(), "7".into()]);
    assert_clean_failure(
        &run_shoal(&no_such, &dir),
        "has no checkpoint 7 (checkpoints: 1, 2)",
    );
    let after = snapshot(&dir.join("split"));
    // Refusals change nothing (the lock file is emptied again on exit).
    assert!(before == after, "a refused resume changed the run");

    let mut from_first = resume.clone();
    from_first.extend(["--checkpoint".into(), "1".into()]);
    succeeds(run_shoal(&from_first, &dir));
    assert_eq!(records(&dir.join("split")), records(&dir.join("full")));
}

// ---------------------------------------------------------------------------
// Validation: one line, before anything is written
// ---------------------------------------------------------------------------

/// Trains with `sets` into `--out run`; must fail with `needle` and leave
/// no `run` behind.
fn refused(dir: &Path, source: &str, sets: &[&str], needle: &str) {
    let mut args = vec!["train", source, "--out", "run", "--quiet"];
    for set in sets {
        args.extend(["--set", set]);
    }
    let out = shoal_args(&args, dir);
    assert_clean_failure(&out, needle);
    assert!(
        !dir.join("run").exists(),
        "{sets:?}: a refused run left files"
    );
}

#[test]
fn every_learner_refuses_bad_widths_rates_and_clip_limits() {
    let dir = scratch("validation-learners");
    std::fs::write(dir.join("hac.toml"), TOY_HAC).unwrap();
    let width = "layer widths must be between 1 and 8192, got 0";
    refused(
        &dir,
        "toy-reinforce",
        &["algo.hidden=[0]"],
        &format!("reinforce hidden {width}"),
    );
    refused(
        &dir,
        "toy-ddpg-her",
        &["algo.hidden=[64, 0]"],
        &format!("ddpg hidden {width}"),
    );
    refused(
        &dir,
        "hac.toml",
        &["algo.hidden=[0]"],
        &format!("hac hidden {width}"),
    );
    refused(
        &dir,
        "toy-reinforce",
        &["algo.hidden=[100000]"],
        "reinforce hidden layer widths must be between 1 and 8192, got 100000",
    );
    for (value, shown) in [
        ("inf", "inf"),
        ("nan", "NaN"),
        ("-0.001", "-0.001"),
        ("0", "0"),
    ] {
        let lr = format!("algo.learning_rate={value}");
        refused(
            &dir,
            "toy-reinforce",
            &[&lr],
            &format!("reinforce learning_rate must be finite and positive, got {shown}"),
        );
        let lr = format!("algo.critic_lr={value}");
        refused(
            &dir,
            "toy-ddpg-her",
            &[&lr],
            &format!("ddpg critic_lr must be finite and positive, got {shown}"),
        );
        let lr = format!("algo.actor_lr={value}");
        refused(
            &dir,
            "hac.toml",
            &[&lr],
            &format!("hac actor_lr must be finite and positive, got {shown}"),
        );
    }
    for (value, shown) in [("-0.5", "-0.5"), ("nan", "NaN")] {
        let clip = format!("algo.max_grad_norm={value}");
        let needle =
            |algo: &str| format!("{algo} max_grad_norm must be finite and positive, got {shown}");
        refused(&dir, "toy-reinforce", &[&clip], &needle("reinforce"));
        // Optional in DDPG and HAC: absent by default, settable with --set.
        refused(&dir, "toy-ddpg-her", &[&clip], &needle("ddpg"));
        refused(&dir, "hac.toml", &[&clip], &needle("hac"));
    }
    refused(
        &dir,
        "hac.toml",
        &["algo.gamma=1.5"],
        "hac gamma must be in [0, 1)",
    );
    // A check that only the learner's constructor can make (the subgoal box
    // against the env's goal size) still comes before the run directory.
    refused(
        &dir,
        "hac.toml",
        &["algo.subgoal_low=[-1.0]", "algo.subgoal_high=[1.0]"],
        "hac subgoal_low / subgoal_high must give 2 finite bounds",
    );
    refused(
        &dir,
        "toy-ddpg-her",
        &["algo.no_such_key=1"],
        "unknown key `algo.no_such_key`",
    );
    refused(
        &dir,
        "toy-ddpg-her",
        &["algo.max_grad_norm=\"big\""],
        "`algo.max_grad_norm`",
    );
}

#[test]
fn counts_are_bounded_and_zero_episodes_is_refused_by_every_strategy() {
    let dir = scratch("validation-counts");
    refused(
        &dir,
        "toy-reinforce",
        &["train.eval_episodes=9223372036854775807"],
        "train.eval_episodes must be between 1 and 1000000, got 9223372036854775807",
    );
    refused(
        &dir,
        "toy-reinforce",
        &["train.final_eval_episodes=0"],
        "train.final_eval_episodes must be between 1 and 1000000, got 0",
    );
    refused(
        &dir,
        "toy-reinforce",
        &["train.checkpoint_every=0"],
        "train.checkpoint_every must be between 1 and",
    );
    refused(
        &dir,
        "toy-reinforce",
        &["algo.episodes_per_update=9223372036854775807"],
        "reinforce episodes_per_update must be between 1 and 65536",
    );
    refused(
        &dir,
        "toy-ddpg-her",
        &["algo.batch_size=9223372036854775807"],
        "ddpg batch_size must be between 1 and 65536",
    );
    // Env counts too: a learner keeps whole episodes in memory.
    refused(
        &dir,
        "toy-ddpg-her",
        &["env.max_episode_steps=100000000000"],
        "point-goal: max_episode_steps must be between 1 and 1000000, got 100000000000",
    );
    refused(
        &dir,
        "worm-reinforce",
        &["env.links=1000000000000"],
        "worm: links must be between 2 and 64, got 1000000000000",
    );
    for strategy in ["none", "pool", "gather", "averaging"] {
        let workers = if strategy == "none" { "1" } else { "2" };
        let strategy = format!("parallel.strategy=\"{strategy}\"");
        let workers = format!("parallel.workers={workers}");
        refused(
            &dir,
            "toy-reinforce",
            &["train.episodes=0", &strategy, &workers],
            "train.episodes must be between 1 and",
        );
    }

    succeeds(run_shoal(
        &train_args("toy-reinforce", "--out", "ok", 10, 10, &[]),
        &dir,
    ));
    for episodes in ["1000000000000", "1e12"] {
        let out = shoal_args(&["eval", "ok", "--episodes", episodes], &dir);
        assert_clean_failure(
            &out,
            "--episodes must be between 1 and 1000000, got 1000000000000",
        );
    }
    let out = shoal("render ok --episodes 1000000000000", &dir);
    assert_clean_failure(
        &out,
        "--episodes must be between 1 and 100, got 1000000000000",
    );
    // A finished budget cannot be resumed as if there were more to do.
    let out = run_shoal(
        &train_args("toy-reinforce", "--resume", "ok", 10, 10, &[]),
        &dir,
    );
    assert_clean_failure(
        &out,
        "already trained 10 episodes; to continue, raise train.episodes",
    );
    // Killed in its final evaluation: the last checkpoint is at the budget
    // and there is no summary. Resuming finishes the run as it would have.
    let summary_file = dir.join("ok").join("summary.json");
    let without_times = |bytes: &[u8]| {
        let mut summary: serde_json::Value = serde_json::from_slice(bytes).unwrap();
        let map = summary.as_object_mut().unwrap();
        map.retain(|key, _| !key.starts_with("wall_s"));
        summary
    };
    let finished = without_times(&std::fs::read(&summary_file).unwrap());
    std::fs::remove_file(&summary_file).unwrap();
    succeeds(run_shoal(
        &train_args("toy-reinforce", "--resume", "ok", 10, 10, &[]),
        &dir,
    ));
    assert_eq!(
        without_times(&std::fs::read(&summary_file).unwrap()),
        finished
    );
}

#[test]
fn optional_settings_can_be_set_and_resumed() {
    let dir = scratch("optional-keys");
    std::fs::write(dir.join("hac.toml"), TOY_HAC).unwrap();
    let sets = ["--set", "algo.gamma=0.9", "--set", "algo.max_grad_norm=1"];
    succeeds(run_shoal(
        &train_args("hac.toml", "--out", "hac", 10, 10, &sets),
        &dir,
    ));
    let config = std::fs::read_to_string(dir.join("hac").join("config.toml")).unwrap();
    assert!(config.contains("gamma = 0.9"), "{config}");
    assert!(config.contains("max_grad_norm = 1.0"), "{config}");
    // Resuming with a different optional value is a mismatch, said once.
    let mut args = train_args(
        "hac.toml",
        "--resume",
        "hac",
        20,
        10,
        &["--set", "algo.gamma=0.8"],
    );
    args.extend(["--set".into(), "algo.max_grad_norm=1".into()]);
    assert_clean_failure(
        &run_shoal(&args, &dir),
        "algo.gamma is 0.9 in the checkpoint but 0.8 now",
    );
    let ddpg = [
        "--set",
        "algo.max_grad_norm=0.5",
        "--set",
        "algo.hidden=[16]",
    ];
    succeeds(run_shoal(
        &train_args("toy-ddpg-her", "--out", "ddpg", 4, 2, &ddpg),
        &dir,
    ));
    let config = std::fs::read_to_string(dir.join("ddpg").join("config.toml")).unwrap();
    assert!(config.contains("max_grad_norm = 0.5"), "{config}");
}

#[test]
fn eval_and_render_need_only_the_model() {
    let dir = scratch("model-only");
    let tiny = [
        "--set",
        "algo.hidden=[16]",
        "--set",
        "algo.n_batches=1",
        "--set",
        "algo.batch_size=8",
    ];
    succeeds(run_shoal(
        &train_args("push-ddpg-her", "--out", "push", 2, 2, &tiny),
        &dir,
    ));
    let checkpoints = dir.join("push").join("checkpoints");
    let latest = std::fs::read_to_string(checkpoints.join("latest")).unwrap();
    let memory = checkpoints.join(latest.trim()).join("memory.bin");
    std::fs::remove_file(&memory).unwrap();

    let eval = succeeds(shoal("eval push --episodes 2", &dir));
    let report: serde_json::Value = serde_json::from_slice(&eval.stdout).unwrap();
    assert_eq!(report["episodes"], 2);
    succeeds(shoal("render push --out push/look.gif", &dir));
    assert!(
        std::fs::read(dir.join("push/look.gif"))
            .unwrap()
            .starts_with(b"GIF89a")
    );
    // Resuming does need the memory, and says which file is missing.
    let out = run_shoal(
        &train_args("push-ddpg-her", "--resume", "push", 4, 2, &tiny),
        &dir,
    );
    assert_clean_failure(&out, "memory.bin: missing from the checkpoint");
}
