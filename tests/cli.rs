//! End-to-end tests of the `shoal` binary: a tiny training run through the
//! real entry point, and bad input rejected with one clear line.

mod common;

use std::path::Path;
use std::process::Output;

use common::{assert_clean_failure, records, scratch, shoal, shoal_args, stderr};

const TINY: &[&str] = &[
    "--set",
    "train.episodes=40",
    "--set",
    "train.eval_every=20",
    "--set",
    "train.checkpoint_every=20",
    "--quiet",
];

fn train_tiny(dir: &Path, out: &str, extra: &[&str]) -> Output {
    let mut args = vec!["train", "toy-reinforce", "--out", out];
    args.extend_from_slice(TINY);
    args.extend_from_slice(extra);
    shoal_args(&args, dir)
}

#[test]
fn the_best_evaluated_model_is_kept_and_eval_repeats_its_evaluation() {
    let dir = scratch("best");
    let out = train_tiny(
        &dir,
        "run",
        &[
            "--set",
            "train.episodes=100",
            "--set",
            "train.eval_every=10",
            "--set",
            "train.eval_episodes=4",
            "--set",
            "train.final_eval_episodes=4",
            "--set",
            "train.checkpoint_every=50",
            // Ten times the preset's step size: the toy gets worse after its
            // first evaluation, so the best model is not the latest.
            "--set",
            "algo.learning_rate=0.1",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let run = dir.join("run");
    let evals: Vec<(u64, f64)> = records(&run)
        .iter()
        .filter(|r| r["kind"] == "eval")
        .map(|r| {
            (
                r["episode"].as_u64().unwrap(),
                r["eval/return_mean"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(evals.len(), 10);
    // The first evaluation with the highest mean return is the best.
    let (best_episode, best_return) = evals
        .iter()
        .copied()
        .fold((0, f64::NEG_INFINITY), |b, e| if e.1 > b.1 { e } else { b });
    let last = evals.last().unwrap().1;
    assert!(
        last < best_return,
        "this seed's last evaluation is its best: {evals:?}"
    );
    let pointer = std::fs::read_to_string(run.join("checkpoints/best")).unwrap();
    let meta: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            run.join("checkpoints")
                .join(pointer.trim())
                .join("meta.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(meta["episodes"], best_episode);
    // Reloaded, each checkpoint repeats its own evaluation exactly.
    let eval = |which: &str| {
        let out = shoal_args(
            &["eval", "run", "--episodes", "4", "--checkpoint", which],
            &dir,
        );
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()["return_mean"]
            .as_f64()
            .unwrap()
    };
    assert_eq!(eval("best"), best_return);
    assert_eq!(eval("latest"), last);
    // `--seed` plays other episodes: the run's evaluation seed repeats the
    // run's own evaluation, a held-out one does not.
    let eval_seeded = |seed: &str| {
        let out = shoal_args(
            &[
                "eval",
                "run",
                "--episodes",
                "4",
                "--checkpoint",
                "best",
                "--seed",
                seed,
            ],
            &dir,
        );
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()["return_mean"]
            .as_f64()
            .unwrap()
    };
    let config: toml::Table = std::fs::read_to_string(run.join("config.toml"))
        .unwrap()
        .parse()
        .unwrap();
    let run_seed = config["seed"].as_integer().unwrap() as u64;
    let own_seed = shoal_rl_run::eval_seed(run_seed).to_string();
    assert_eq!(eval_seeded(&own_seed), best_return);
    assert_ne!(eval_seeded("1"), best_return);
    let bad = shoal_args(&["eval", "run", "--checkpoint", "runs/x"], &dir);
    assert_clean_failure(
        &bad,
        "--checkpoint expects `latest`, `best` or a checkpoint number",
    );
}

#[test]
fn off_a_terminal_a_status_line_follows_the_first_episodes_and_records_stream_per_update() {
    let dir = scratch("status");
    // stderr is a pipe here, as in a log file or under Slurm.
    let out = shoal_args(&["train", "toy-ddpg-her", "--out", "run"], &dir);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    let status: Vec<&str> = err.lines().filter(|l| l.starts_with("episodes ")).collect();
    // The first line comes with the first cycle (2 episodes), long before
    // the 10 s between lines.
    assert!(
        status[0].starts_with("episodes 2/200 | env steps "),
        "{err}"
    );
    assert!(status[0].contains(" | return "), "{err}");
    assert!(
        status[0].contains(", success ") && status[0].ends_with(" steps/s"),
        "{err}"
    );
    // Every cycle's episodes are written as it ends, with their own wall
    // time, and one update line after them: not in blocks per evaluation.
    let run = records(&dir.join("run"));
    let kinds: Vec<&str> = run.iter().map(|r| r["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds[..6],
        [
            "episode", "episode", "update", "episode", "episode", "update"
        ]
    );
    let updates = kinds.iter().filter(|k| **k == "update").count();
    assert_eq!(updates, 100, "one per DDPG cycle of 2 episodes");
    // `records` drops the wall times; read them from the file.
    let walls: Vec<f64> = std::fs::read_to_string(dir.join("run/metrics.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|r| r["kind"] == "episode")
        .map(|r| r["wall_s"].as_f64().unwrap())
        .collect();
    assert!(walls.windows(2).all(|w| w[0] <= w[1]));
    assert!(walls[0] < walls[walls.len() - 1], "{walls:?}");
}

#[test]
fn a_budget_in_env_steps_ends_with_the_update_that_spends_it() {
    let dir = scratch("steps");
    let out = shoal_args(
        &[
            "train", "toy-ppo", "--steps", "1000", "--out", "run", "--quiet",
        ],
        &dir,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let steps: Vec<u64> = records(&dir.join("run"))
        .iter()
        .filter(|r| r["kind"] == "episode")
        .map(|r| r["env_steps"].as_u64().unwrap())
        .collect();
    // toy-ppo updates on rollouts of 8 episodes: the run ends with the
    // rollout that spends the budget, not in the middle of one (which would
    // give PPO a smaller batch than its setting).
    let rollout = 8;
    assert_eq!(steps.len() % rollout, 0, "{steps:?}");
    let (last, before) = (steps[steps.len() - 1], steps[steps.len() - 1 - rollout]);
    assert!(before < 1000 && last >= 1000, "{before}, {last}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run/summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["env_steps"], last);
    assert_eq!(summary["episodes"], steps.len());
    // A parallel run ends after the iteration whose episodes (all
    // workers') spend the budget, with its final checkpoint and summary.
    let parallel = shoal_args(
        &[
            "train",
            "toy-ppo",
            "--steps",
            "1000",
            "--workers",
            "2",
            "--set",
            "parallel.strategy=\"averaging\"",
            "--out",
            "p",
            "--quiet",
        ],
        &dir,
    );
    assert!(parallel.status.success(), "{}", stderr(&parallel));
    let steps: Vec<u64> = records(&dir.join("p"))
        .iter()
        .filter(|r| r["kind"] == "iteration")
        .map(|r| r["env_steps"].as_u64().unwrap())
        .collect();
    let (last, before) = (steps[steps.len() - 1], steps[steps.len() - 2]);
    assert!(before < 1000 && last >= 1000, "{steps:?}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("p/summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["env_steps"], last);
    let latest = std::fs::read_to_string(dir.join("p/checkpoints/latest")).unwrap();
    let meta = dir
        .join("p/checkpoints")
        .join(latest.trim())
        .join("meta.json");
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(meta).unwrap()).unwrap();
    assert_eq!(
        meta["env_steps"], last,
        "the last iteration is checkpointed"
    );
}

#[test]
fn tiny_training_run_writes_a_complete_run_directory() {
    let dir = scratch("complete");
    let out = train_tiny(&dir, "run", &["--set", "train.final_eval_episodes=5"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let run = dir.join("run");
    for file in ["config.toml", "metrics.jsonl", "summary.json"] {
        assert!(run.join(file).is_file(), "missing {file}");
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["episodes"], 40);
    assert!(summary["eval_return_mean"].is_number());
    assert!(summary["eval_success_rate"].is_null());
    assert!(summary["wall_s"].as_f64().unwrap() > 0.0);

    // `shoal eval` reloads the final checkpoint and evaluates on the run's
    // evaluation seeds: with the final evaluation's episode count it repeats
    // the summary's numbers exactly, which a wrong checkpoint, seed or
    // frozen policy would not.
    let final_episodes = "5";
    let eval = |episodes: &str| {
        let out = shoal_args(&["eval", "run", "--episodes", episodes], &dir);
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let report = eval(final_episodes);
    assert_eq!(report["episodes"], 5);
    assert_eq!(
        report["return_mean"], summary["eval_return_mean"],
        "{report} vs {summary}"
    );
    assert!(report["success_rate"].is_null());
    assert_eq!(eval("3")["episodes"], 3);
    assert_ne!(
        eval("3")["return_mean"],
        report["return_mean"],
        "3 episodes, not all"
    );

    let plot = shoal("plot run", &dir);
    assert!(plot.status.success(), "{}", stderr(&plot));
    let (width, height, pixels) = decode_png(&run.join("plots").join("return_vs_episode.png"));
    assert_eq!(
        (width, height),
        (shoal_rl::eval::PLOT_WIDTH, shoal_rl::eval::PLOT_HEIGHT)
    );
    // The run's curve is drawn in the first tab10 colour across the plot.
    let curve: Vec<u32> = (0..width * height)
        .filter(|i| pixels[*i as usize * 3..*i as usize * 3 + 3] == [31, 119, 180])
        .map(|i| i % width)
        .collect();
    assert!(curve.len() > 300, "{} curve pixels", curve.len());
    let span = curve.iter().max().unwrap() - curve.iter().min().unwrap();
    assert!(span > width / 2, "the curve spans {span} of {width} pixels");
}

/// Width, height and RGB bytes of a PNG.
fn decode_png(path: &Path) -> (u32, u32, Vec<u8>) {
    let decoder = png::Decoder::new(std::fs::File::open(path).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let rgb = match info.color_type {
        png::ColorType::Rgb => buf[..info.buffer_size()].to_vec(),
        png::ColorType::Rgba => buf[..info.buffer_size()]
            .chunks(4)
            .flat_map(|p| p[..3].to_vec())
            .collect(),
        other => panic!("unexpected PNG colour type {other:?}"),
    };
    (info.width, info.height, rgb)
}

#[test]
fn progress_lines_report_each_evaluation_unless_quiet() {
    // Without a terminal, progress is plain lines on stderr: one per
    // evaluation (every 20 of the 40 episodes, then the final one), and
    // where the run went; `--quiet` keeps only the latter.
    let dir = scratch("progress");
    let args = |out| {
        vec![
            "train",
            "toy-reinforce",
            "--out",
            out,
            "--set",
            "train.episodes=40",
            "--set",
            "train.eval_every=20",
        ]
    };
    let loud = shoal_args(&args("loud"), &dir);
    assert!(loud.status.success(), "{}", stderr(&loud));
    let text = stderr(&loud);
    let evals: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(": eval return "))
        .collect();
    assert_eq!(evals.len(), 2, "{text}");
    assert!(evals[0].starts_with("episode 20: eval return "), "{text}");
    assert!(evals[1].starts_with("episode 40: eval return "), "{text}");
    assert!(text.contains("run directory: loud"), "{text}");
    let quiet = shoal_args(&[args("quiet"), vec!["--quiet"]].concat(), &dir);
    assert!(quiet.status.success(), "{}", stderr(&quiet));
    assert!(
        !stderr(&quiet).contains("eval return"),
        "{}",
        stderr(&quiet)
    );
}

#[test]
fn same_seed_gives_identical_training_metrics() {
    let dir = scratch("determinism");
    assert!(train_tiny(&dir, "a", &[]).status.success());
    assert!(train_tiny(&dir, "b", &[]).status.success());
    let returns = |run: &str| -> Vec<String> {
        std::fs::read_to_string(dir.join(run).join("metrics.jsonl"))
            .unwrap()
            .lines()
            .filter(|l| l.contains("\"episode\"") && l.contains("episodic_return"))
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                v["charts/episodic_return"].to_string()
            })
            .collect()
    };
    let a = returns("a");
    assert_eq!(a.len(), 40);
    assert_eq!(a, returns("b"));

    // `--seed 3` is the config's `seed = 3`: recorded, the same run as
    // `--set seed=3`, and another run than seed 0's.
    assert!(train_tiny(&dir, "c", &["--seed", "3"]).status.success());
    assert!(train_tiny(&dir, "d", &["--set", "seed=3"]).status.success());
    let config = std::fs::read_to_string(dir.join("c").join("config.toml")).unwrap();
    assert!(config.lines().any(|l| l == "seed = 3"), "{config}");
    assert_eq!(returns("c"), returns("d"));
    assert_ne!(returns("c"), a, "seed 3 trains another run than seed 0");
}

/// Trains `preset` with `extra` arguments for 40 episodes in one go, and
/// again as 20 episodes plus a `--resume` to 40 in a second process; every
/// metrics record (wall-clock times aside) and the summary must agree.
/// Returns the run directories' parent.
fn assert_resume_matches(name: &str, preset: &str, extra: &[&str]) -> std::path::PathBuf {
    let dir = scratch(&format!("resume-{name}"));
    let train = |out: &str, episodes: u64, resume: bool| {
        let episodes = format!("train.episodes={episodes}");
        let mut args = vec![
            "train",
            preset,
            if resume { "--resume" } else { "--out" },
            out,
        ];
        args.extend_from_slice(&[
            "--set",
            &episodes,
            "--set",
            "train.eval_every=20",
            "--set",
            "train.checkpoint_every=20",
            "--quiet",
        ]);
        args.extend_from_slice(extra);
        let out = shoal_args(&args, &dir);
        assert!(out.status.success(), "{name}: {}", stderr(&out));
    };
    train("full", 40, false);
    train("split", 20, false);
    let halfway = records(&dir.join("split"));
    train("split", 40, true);
    let (full, split) = (records(&dir.join("full")), records(&dir.join("split")));
    assert!(
        halfway.len() < full.len() && full.len() >= 4,
        "{name}: {} records halfway, {} in all",
        halfway.len(),
        full.len()
    );
    assert_eq!(full.len(), split.len(), "{name}");
    for (i, (a, b)) in full.iter().zip(&split).enumerate() {
        assert_eq!(a, b, "{name}: record {i} differs after the resume");
    }
    assert_eq!(
        summary_without_wall(&dir.join("full")),
        summary_without_wall(&dir.join("split")),
        "{name}"
    );
    dir
}

const TWO_THREADS: &[&str] = &["--workers", "2", "--backend", "threads"];
const TWO_PROCESSES: &[&str] = &["--workers", "2", "--backend", "processes"];

#[test]
fn resume_reinforce_matches_every_record_of_an_uninterrupted_run() {
    assert_resume_matches("reinforce", "toy-reinforce", &[]);
}

#[test]
fn resume_pool_matches_every_record_on_threads_and_processes() {
    for (backend, workers) in [("threads", TWO_THREADS), ("processes", TWO_PROCESSES)] {
        let args = [workers, &["--set", "parallel.strategy=\"pool\""]].concat();
        assert_resume_matches(&format!("pool-{backend}"), "toy-reinforce", &args);
    }
}

#[test]
fn resume_gather_matches_every_record_on_threads_and_processes() {
    for (backend, workers) in [("threads", TWO_THREADS), ("processes", TWO_PROCESSES)] {
        let args = [workers, &["--set", "parallel.strategy=\"gather\""]].concat();
        assert_resume_matches(&format!("gather-{backend}"), "toy-reinforce", &args);
    }
}

#[test]
fn resume_ppo_matches_every_record_alone_and_on_every_strategy() {
    // The split run first trains with a budget of 20 episodes, and PPO's
    // learning rate anneals over the budget it is given: constant here, so
    // both halves see the schedule of the uninterrupted run.
    let constant = ["--set", "algo.anneal_lr=false"];
    let dir = assert_resume_matches("ppo", "toy-ppo", &constant);
    let full = records(&dir.join("full"));
    assert!(full.iter().any(|r| r.get("losses/approx_kl").is_some()));
    for strategy in ["gather", "averaging", "pool"] {
        let strategy_set = format!("parallel.strategy=\"{strategy}\"");
        for (backend, workers) in [("threads", TWO_THREADS), ("processes", TWO_PROCESSES)] {
            let args = [
                workers,
                &constant,
                &["--set", &strategy_set],
                &["--set", "parallel.episodes_per_iteration=5"],
            ]
            .concat();
            assert_resume_matches(&format!("ppo-{strategy}-{backend}"), "toy-ppo", &args);
        }
    }
}

#[test]
fn resume_ddpg_matches_every_record_of_an_uninterrupted_run() {
    let dir = assert_resume_matches("ddpg", "toy-ddpg-her", &[]);
    assert!(
        records(&dir.join("full"))
            .iter()
            .any(|r| r.get("losses/critic").is_some())
    );
}

#[test]
fn resumed_averaging_restores_every_workers_replay_memory_on_threads_and_processes() {
    for (backend, workers) in [("threads", TWO_THREADS), ("processes", TWO_PROCESSES)] {
        // Rank 1 resuming with an empty buffer would sample other
        // transitions: its losses, averaged into every record, would differ.
        let args = [workers, &["--set", "parallel.strategy=\"averaging\""]].concat();
        let dir = assert_resume_matches(&format!("averaging-{backend}"), "toy-ddpg-her", &args);
        let checkpoints = dir.join("split").join("checkpoints");
        let latest = std::fs::read_to_string(checkpoints.join("latest")).unwrap();
        let rank1 = checkpoints
            .join(latest.trim())
            .join("worker-1")
            .join("memory.bin");
        assert!(
            rank1.is_file(),
            "{backend}: rank 1's replay memory is checkpointed"
        );
        let full = records(&dir.join("full"));
        assert!(full.iter().any(|r| r.get("losses/critic").is_some()));
    }
}

#[test]
fn a_resume_may_turn_profiling_on_but_not_change_how_workers_train() {
    let dir = scratch("resume-profile");
    let train = |args: &[&str]| {
        let mut all = vec![
            "train",
            "toy-reinforce",
            "--quiet",
            "--workers",
            "2",
            "--set",
            "parallel.strategy=\"averaging\"",
            "--set",
            "train.checkpoint_every=20",
        ];
        all.extend_from_slice(args);
        shoal_args(&all, &dir)
    };
    let out = train(&["--out", "run", "--set", "train.episodes=20"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = train(&[
        "--resume",
        "run",
        "--set",
        "train.episodes=40",
        "--set",
        "parallel.profile=true",
        "--set",
        "parallel.timeout_s=60",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let profiled: Vec<bool> = records(&dir.join("run"))
        .iter()
        .filter(|r| r["kind"] == "iteration")
        .map(|r| r.get("time/compute_cpu_s").is_some())
        .collect();
    // 20 episodes / (2 workers × 10) per iteration: one before, one after.
    assert_eq!(profiled, [false, true]);
    let config = std::fs::read_to_string(dir.join("run/config.toml")).unwrap();
    assert!(config.contains("profile = true"), "{config}");

    let out = train(&[
        "--resume",
        "run",
        "--set",
        "train.episodes=60",
        "--set",
        "parallel.episodes_per_iteration=5",
    ]);
    assert_clean_failure(
        &out,
        "resume config mismatch: parallel.episodes_per_iteration is 10 in the checkpoint but 5 now",
    );
}

#[test]
fn unknown_preset_is_one_clear_error() {
    let dir = scratch("unknown-preset");
    let out = shoal("train worm-reinforcee", &dir);
    assert_clean_failure(&out, "unknown preset `worm-reinforcee`");
    assert!(
        !dir.join("runs").exists(),
        "nothing may be written for bad input"
    );
}

#[test]
fn unknown_set_key_is_one_clear_error() {
    let dir = scratch("unknown-key");
    let out = shoal("train toy-reinforce --set algo.learnin_rate=1", &dir);
    assert_clean_failure(&out, "unknown key `algo.learnin_rate`");
}

#[test]
fn malformed_value_is_one_clear_error() {
    let dir = scratch("malformed-value");
    let out = shoal("train toy-reinforce --set algo.gamma=fast", &dir);
    assert_clean_failure(&out, "gamma");
    let out = shoal("train toy-reinforce --set nonsense", &dir);
    assert_clean_failure(&out, "key=value");
}

#[test]
fn malformed_config_file_is_one_clear_error() {
    let dir = scratch("malformed-toml");
    std::fs::write(dir.join("bad.toml"), "preset = \"x\"\nseed = [oops\n").unwrap();
    let out = shoal("train bad.toml", &dir);
    assert_clean_failure(&out, "bad.toml is malformed");
}

#[test]
fn zero_workers_and_unknown_backend_are_clear_errors() {
    let dir = scratch("workers");
    assert_clean_failure(&shoal("train toy-reinforce --workers 0", &dir), "workers");
    assert_clean_failure(
        &shoal("train toy-reinforce --backend carrier-pigeon", &dir),
        "unknown backend \"carrier-pigeon\"",
    );
}

#[test]
fn corrupt_checkpoint_is_a_clear_error_and_changes_nothing() {
    let dir = scratch("corrupt");
    assert!(train_tiny(&dir, "run", &[]).status.success());
    let run = dir.join("run");
    let latest = std::fs::read_to_string(run.join("checkpoints").join("latest")).unwrap();
    let state = run
        .join("checkpoints")
        .join(latest.trim())
        .join("learner.bin");
    let mut bytes = std::fs::read(&state).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xFF;
    std::fs::write(&state, &bytes).unwrap();
    let metrics_before = std::fs::read(run.join("metrics.jsonl")).unwrap();

    let out = shoal("eval run", &dir);
    assert_clean_failure(&out, "learner.bin");
    let mut args = vec!["train", "toy-reinforce", "--resume", "run"];
    args.extend_from_slice(TINY);
    assert_clean_failure(&shoal_args(&args, &dir), "learner.bin");
    assert_eq!(
        std::fs::read(run.join("metrics.jsonl")).unwrap(),
        metrics_before
    );
    assert_eq!(std::fs::read(&state).unwrap(), bytes);
}

#[test]
fn resume_with_a_mismatched_config_is_a_clear_error() {
    let dir = scratch("mismatch");
    assert!(train_tiny(&dir, "run", &[]).status.success());
    let mut args = vec![
        "train",
        "toy-reinforce",
        "--resume",
        "run",
        "--set",
        "algo.hidden=[16]",
    ];
    args.extend_from_slice(TINY);
    assert_clean_failure(&shoal_args(&args, &dir), "algo.hidden");
}

#[test]
fn train_help_lists_every_preset_and_values_as_written() {
    let dir = scratch("help");
    let out = shoal("train --help", &dir);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for preset in shoal_rl::train::presets::PRESETS {
        let line = format!("  {:<16} {}", preset.name, preset.about());
        assert!(text.contains(&line), "`{line}` missing from --help");
    }
    for needle in [
        "algo.learning_rate",
        "train.episodes",
        // An f32 setting, printed as in the source, not widened to f64.
        "env.control_dt = 0.04\n",
    ] {
        assert!(text.contains(needle), "`{needle}` missing from --help");
    }
}

#[test]
fn bench_env_help_names_every_env() {
    let dir = scratch("bench-help");
    let out = shoal("bench-env --help", &dir);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let envs = shoal_rl::registry::EnvRegistry::builtin().names();
    assert!(envs.len() >= 5);
    for name in envs {
        assert!(
            text.contains(name),
            "`{name}` missing from bench-env --help"
        );
    }
}

#[test]
fn bench_env_prints_steps_per_second_as_json() {
    let dir = scratch("bench");
    let out = shoal("bench-env worm --steps 2000", &dir);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // 2 500 steps of 1 000-step worm episodes: two finished episodes.
    let out = shoal("bench-env worm --steps 2500", &dir);
    assert!(out.status.success(), "{}", stderr(&out));
    let v2: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (&v["env"], &v["steps"], &v["episodes"]),
        (&"worm".into(), &2000.into(), &2.into())
    );
    assert_eq!((&v2["steps"], &v2["episodes"]), (&2500.into(), &2.into()));
    for v in [v, v2] {
        let (seconds, rate) = (
            v["seconds"].as_f64().unwrap(),
            v["steps_per_s"].as_f64().unwrap(),
        );
        assert!(seconds > 0.0, "{v}");
        let steps = v["steps"].as_f64().unwrap();
        assert!((rate * seconds - steps).abs() < 1e-6 * steps, "{v}");
    }
    assert_clean_failure(
        &shoal("bench-env submarine", &dir),
        "unknown env `submarine`",
    );
}

/// The summary of a finished run, minus the wall-clock time.
fn summary_without_wall(run: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(run.join("summary.json")).unwrap();
    let mut summary: serde_json::Value = serde_json::from_str(&text).unwrap();
    summary.as_object_mut().unwrap().remove("wall_s");
    summary
}

#[test]
fn every_strategy_gives_the_same_run_on_threads_and_processes() {
    // 2 workers, and 16 on 2 cores (the widest the scaling series goes):
    // both backends must give the same run to the bit either way.
    // PPO, whose statistics travel with its parameters, on 2 workers.
    let dir = scratch("backends");
    for (preset, workers, per_iteration) in [
        ("toy-reinforce", 2u64, 10u64),
        ("toy-reinforce", 16, 1),
        ("toy-ppo", 2, 8),
    ] {
        let episodes = 2 * workers * per_iteration;
        for strategy in ["pool", "gather", "averaging"] {
            let mut runs = Vec::new();
            for backend in ["threads", "processes"] {
                let out_dir = format!("{preset}-{strategy}-{workers}-{backend}");
                let out = shoal_args(
                    &[
                        "train",
                        preset,
                        "--out",
                        &out_dir,
                        "--quiet",
                        "--workers",
                        &workers.to_string(),
                        "--backend",
                        backend,
                        "--set",
                        &format!("parallel.strategy=\"{strategy}\""),
                        "--set",
                        &format!("parallel.episodes_per_iteration={per_iteration}"),
                        "--set",
                        &format!("train.episodes={episodes}"),
                        "--set",
                        "train.eval_every=20",
                        "--set",
                        "train.checkpoint_every=20",
                    ],
                    &dir,
                );
                assert!(
                    out.status.success(),
                    "{preset}, {strategy}, {workers} workers on {backend}: {}",
                    stderr(&out)
                );
                let records = records(&dir.join(&out_dir));
                let iterations = records.iter().filter(|r| r["kind"] == "iteration").count();
                assert_eq!(
                    iterations, 2,
                    "{episodes} episodes / ({workers} workers × {per_iteration}) per iteration"
                );
                runs.push((records, summary_without_wall(&dir.join(&out_dir))));
            }
            assert!(
                runs[0] == runs[1],
                "{preset}, {strategy}, {workers} workers: threads and processes differ"
            );
            assert_eq!(runs[0].1["episodes"], episodes);
        }
    }
}

#[test]
fn td3_and_sac_give_the_same_run_on_threads_and_processes() {
    // The off-policy learners take both strategies that apply to them (a
    // gather needs a batch algorithm); TD3's smoothing noise and SAC's
    // draws come from each worker's seeded round generator, and averaging
    // with the critics first sends two messages per update.
    let dir = scratch("backends-off-policy");
    // A kind switched on a DDPG preset takes the new kind's defaults for
    // the keys the preset leaves out; each learner's own keys are named
    // anyway, so the runs stay these variants if the defaults move.
    let own_keys = |kind: &str| -> &'static [&'static str] {
        match kind {
            "td3" => &[
                "algo.n_critics=2",
                "algo.policy_delay=2",
                "algo.target_policy_noise=0.2",
            ],
            _ => &[
                "algo.n_critics=2",
                "algo.init_alpha=1.0",
                "algo.action_l2=0.0",
                "algo.clip_target=false",
            ],
        }
    };
    for kind in ["td3", "sac"] {
        for strategy in ["averaging", "pool"] {
            for actor_after_critic in [false, true] {
                let mut runs = Vec::new();
                for backend in ["threads", "processes"] {
                    let out_dir = format!("{kind}-{strategy}-{actor_after_critic}-{backend}");
                    let mut args: Vec<String> = [
                        "train",
                        "toy-ddpg-her",
                        "--out",
                        &out_dir,
                        "--quiet",
                        "--workers",
                        "2",
                        "--backend",
                        backend,
                    ]
                    .map(String::from)
                    .into();
                    for set in [
                        format!("algo.kind=\"{kind}\""),
                        format!("algo.actor_after_critic={actor_after_critic}"),
                        format!("parallel.strategy=\"{strategy}\""),
                        "train.episodes=8".into(),
                        "train.eval_every=4".into(),
                        "train.eval_episodes=2".into(),
                    ]
                    .into_iter()
                    .chain(own_keys(kind).iter().map(|key| key.to_string()))
                    {
                        args.extend(["--set".into(), set]);
                    }
                    let out = shoal_args(&args, &dir);
                    assert!(
                        out.status.success(),
                        "{kind}, {strategy} on {backend}: {}",
                        stderr(&out)
                    );
                    let records = records(&dir.join(&out_dir));
                    assert!(
                        records.iter().any(|r| r["kind"] == "eval"),
                        "{kind}, {strategy}: the run evaluated"
                    );
                    assert_eq!(
                        records.iter().any(|r| r.get("charts/alpha").is_some()),
                        kind == "sac",
                        "{kind}: SAC, and only SAC, learns a temperature"
                    );
                    runs.push((records, summary_without_wall(&dir.join(&out_dir))));
                }
                assert!(
                    runs[0] == runs[1],
                    "{kind}, {strategy}, actor_after_critic = {actor_after_critic}: \
                     threads and processes differ"
                );
            }
        }
    }
}

#[test]
fn pool_metrics_name_the_winner_and_every_candidate() {
    let dir = scratch("pool-metrics");
    let out = train_tiny(
        &dir,
        "run",
        &["--workers", "2", "--set", "parallel.strategy=\"pool\""],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let metrics = std::fs::read_to_string(dir.join("run").join("metrics.jsonl")).unwrap();
    let line = metrics
        .lines()
        .find(|l| l.contains("\"iteration\""))
        .unwrap();
    let record: serde_json::Value = serde_json::from_str(line).unwrap();
    let means: Vec<f64> = record["pool/worker_eval_means"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_f64().unwrap())
        .collect();
    assert_eq!(means.len(), 2);
    assert_ne!(
        means[0], means[1],
        "worker 0 trains at 1/10 of the learning rate"
    );
    // The winner is the candidate with the best evaluation, and its
    // evaluation is the one the record reports as the selection.
    let best = if means[1] > means[0] { 1 } else { 0 };
    assert_eq!(record["pool/winner"], best, "{record}");
    assert_eq!(
        record["pool/selection_return_mean"], means[best],
        "{record}"
    );
}

#[test]
fn config_prints_the_configuration_train_runs_with() {
    let dir = scratch("config");
    let settings = [
        "--seed",
        "3",
        "--set",
        "algo.learning_rate=0.002",
        "--set",
        "train.episodes=16",
        "--set",
        "train.eval_every=8",
    ];
    let printed = shoal_args(&[&["config", "toy-ppo"][..], &settings].concat(), &dir);
    assert!(printed.status.success(), "{}", stderr(&printed));
    let out = shoal_args(
        &[
            &["train", "toy-ppo", "--out", "run", "--quiet"][..],
            &settings,
        ]
        .concat(),
        &dir,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let saved = std::fs::read_to_string(dir.join("run/config.toml")).unwrap();
    // The same file with every key's doc above it as a comment.
    let printed = String::from_utf8_lossy(&printed.stdout);
    let uncommented: Vec<&str> = printed.lines().filter(|l| !l.starts_with("# ")).collect();
    assert_eq!(uncommented.join("\n") + "\n", saved);
    assert!(printed.contains("# Master seed; worker `r` uses `seed + r`.\nseed = 3\n"));
    assert!(saved.contains("seed = 3\n") && saved.contains("learning_rate = 0.002\n"));

    // Every key of another algorithm's preset, not only the help's.
    let ddpg = shoal("config push-ddpg-her", &dir);
    let text = String::from_utf8_lossy(&ddpg.stdout);
    for key in [
        "batch_size = ",
        "[algo.her]\n",
        "\nstrategy = ",
        "n_batches = ",
    ] {
        assert!(text.contains(key), "`{key}` missing from\n{text}");
    }
    let her = &text[text.find("[algo.her]\n").unwrap()..];
    assert!(her.contains("\nstrategy = \"final\"\n"), "{her}");

    // The same refusals as `shoal train`, before anything is written.
    assert_clean_failure(
        &shoal("config worm-reinforcee", &dir),
        "unknown preset `worm-reinforcee`",
    );
    assert_clean_failure(
        &shoal("config toy-reinforce --workers 2", &dir),
        "parallel.strategy=pool|gather|averaging",
    );
    assert!(!dir.join("runs").exists());
}

#[test]
fn averaging_workers_share_the_ddpg_and_hac_presets_batch_and_budget_unless_set() {
    let dir = scratch("worker-aware");
    let setting = |preset: &str, section: &str, key: &str, extra: &[&str]| {
        let args = [
            &["config", preset, "--set", "parallel.strategy=\"averaging\""][..],
            extra,
        ]
        .concat();
        let out = shoal_args(&args, &dir);
        assert!(out.status.success(), "{}", stderr(&out));
        let cfg: toml::Table = toml::from_str(&String::from_utf8_lossy(&out.stdout)).unwrap();
        cfg[section][key].as_integer().unwrap()
    };
    let preset_batch =
        |preset: &str, key: &str, extra: &[&str]| setting(preset, "algo", key, extra);
    let batch = |extra: &[&str]| preset_batch("push-ddpg-her", "batch_size", extra);
    // The documented values: 256 shared by the workers.
    assert_eq!(batch(&["--workers", "1"]), 256);
    assert_eq!(batch(&["--workers", "2"]), 128);
    assert_eq!(batch(&["--workers", "4"]), 64);
    let updates = |extra: &[&str]| preset_batch("push-ddpg-her", "n_batches", extra);
    assert_eq!(updates(&["--workers", "4"]), 40);
    // Past 4 workers: a quarter of the batch each, fewer updates.
    assert_eq!(batch(&["--workers", "8"]), 64);
    assert_eq!(updates(&["--workers", "8"]), 20);
    assert_eq!(batch(&["--workers", "16"]), 64);
    assert_eq!(updates(&["--workers", "16"]), 10);
    // Naming the updates keeps them; naming the batch keeps both.
    assert_eq!(
        updates(&["--workers", "16", "--set", "algo.n_batches=40"]),
        40
    );
    assert_eq!(
        batch(&["--workers", "16", "--set", "algo.n_batches=40"]),
        64
    );
    assert_eq!(
        updates(&["--workers", "16", "--set", "algo.batch_size=16"]),
        40
    );
    // HAC keeps sharing its batch: the rule was measured on DDPG.
    assert_eq!(
        preset_batch("push-hac", "batch_size", &["--workers", "16"]),
        16
    );
    assert_eq!(
        preset_batch("push-hac", "batch_size", &["--workers", "2"]),
        128
    );
    assert_eq!(
        preset_batch("push-hac", "batch_size", &["--workers", "8"]),
        32
    );
    // Each DDPG or HAC worker trains at least a third of the preset's
    // budget (6 000 and 12 000), unless the budget is named.
    let budget = |preset: &str, extra: &[&str]| setting(preset, "train", "episodes", extra);
    assert_eq!(budget("push-ddpg-her", &["--workers", "1"]), 6_000);
    assert_eq!(budget("push-ddpg-her", &["--workers", "2"]), 6_000);
    assert_eq!(budget("push-ddpg-her", &["--workers", "4"]), 8_000);
    assert_eq!(budget("push-ddpg-her", &["--workers", "8"]), 16_000);
    assert_eq!(budget("push-ddpg-her", &["--workers", "16"]), 32_000);
    assert_eq!(budget("push-hac", &["--workers", "8"]), 32_000);
    assert_eq!(
        budget(
            "push-ddpg-her",
            &["--workers", "8", "--set", "train.episodes=5000"]
        ),
        5_000
    );
    assert_eq!(
        budget(
            "push-ddpg-her",
            &["--workers", "8", "--set", "algo.batch_size=256"]
        ),
        16_000
    );
    assert_eq!(
        budget("worm-ppo", &["--workers", "8"]),
        budget("worm-ppo", &[])
    );
    // Evaluations and checkpoints stretch with it: 12 and 6 a run.
    let every = |key: &str, extra: &[&str]| setting("push-ddpg-her", "train", key, extra);
    assert_eq!(every("eval_every", &["--workers", "1"]), 500);
    assert_eq!(every("eval_every", &["--workers", "8"]), 1_333);
    assert_eq!(every("checkpoint_every", &["--workers", "16"]), 5_333);
    assert_eq!(
        every(
            "eval_every",
            &["--workers", "8", "--set", "train.eval_every=100"]
        ),
        100
    );
    assert_eq!(
        every(
            "eval_every",
            &["--workers", "8", "--set", "train.episodes=6000"]
        ),
        500
    );
    // PPO keeps its minibatches: no measurement chose a rule for it.
    assert_eq!(
        preset_batch("worm-ppo", "minibatches", &["--workers", "8"]),
        preset_batch("worm-ppo", "minibatches", &["--workers", "1"])
    );
    // An explicit setting wins, before or after the worker count.
    assert_eq!(
        batch(&["--workers", "8", "--set", "algo.batch_size=256"]),
        256
    );
    assert_eq!(
        batch(&["--set", "algo.batch_size=100", "--workers", "4"]),
        100
    );
    // What the run trains with is what `shoal config` showed.
    let out = shoal(
        r#"train toy-ddpg-her --workers 2 --set 'parallel.strategy="averaging"' --set train.episodes=4 --out run --quiet"#,
        &dir,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let saved = std::fs::read_to_string(dir.join("run/config.toml")).unwrap();
    assert!(saved.contains("batch_size = 32\n"), "{saved}");
}

/// A pool whose candidates are pairs of averaging workers, through the
/// binary: the winner is always a pair's first rank, and every worker's
/// settings are its pair's.
#[test]
fn a_pool_of_averaging_pairs_trains_through_the_binary() {
    let dir = scratch("group-pool");
    let out = shoal(
        r#"train toy-reinforce --workers 4 --set 'parallel.strategy="pool"' --set parallel.pool_group_size=2 --set 'parallel.worker_lr_scales=[1.0, 3.0]' --set train.episodes=80 --set parallel.episodes_per_iteration=2 --out run --quiet"#,
        &dir,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let iterations: Vec<serde_json::Value> = records(&dir.join("run"))
        .into_iter()
        .filter(|r| r["kind"] == "iteration")
        .collect();
    assert_eq!(iterations.len(), 10);
    for record in &iterations {
        let winner = record["pool/winner"].as_u64().unwrap();
        assert!(winner == 0 || winner == 2, "{record}");
        let scales: Vec<f64> = record["pool/worker_settings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["lr_scale"].as_f64().unwrap())
            .collect();
        assert_eq!(scales, [1.0, 1.0, 3.0, 3.0]);
    }
}

#[test]
fn a_reinforce_pool_spreads_its_learning_rates_from_four_workers_unless_they_are_set() {
    let dir = scratch("worker-aware-pool");
    let scales = |extra: &str| {
        let out = shoal(&format!("config worm5-pool {extra}"), &dir);
        assert!(out.status.success(), "{}", stderr(&out));
        let cfg: toml::Table = toml::from_str(&String::from_utf8_lossy(&out.stdout)).unwrap();
        cfg["parallel"]["worker_lr_scales"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_float().unwrap())
            .collect::<Vec<f64>>()
    };
    // The documented values: the preset's pair up to 3 workers, then a
    // decade spread evenly in log scale (10^(i / (N - 1)), one decimal).
    assert_eq!(scales("--workers 2"), [1.0, 3.0]);
    assert_eq!(scales("--workers 3"), [1.0, 3.0]);
    assert_eq!(scales("--workers 4"), [1.0, 2.2, 4.6, 10.0]);
    assert_eq!(
        scales("--workers 10"),
        [1.0, 1.3, 1.7, 2.2, 2.8, 3.6, 4.6, 6.0, 7.7, 10.0]
    );
    assert_eq!(scales("--workers 16").len(), 16);
    // An explicit setting wins, before or after the worker count.
    assert_eq!(
        scales("--workers 8 --set 'parallel.worker_lr_scales=[1.0, 3.0]'"),
        [1.0, 3.0]
    );
    assert_eq!(
        scales("--set 'parallel.worker_lr_scales=[2.0]' --workers 8"),
        [2.0]
    );
    // Candidates of several workers: the spread counts candidates.
    assert_eq!(
        scales("--workers 8 --set parallel.pool_group_size=2"),
        [1.0, 2.2, 4.6, 10.0]
    );
    assert_eq!(
        scales("--workers 6 --set parallel.pool_group_size=2"),
        [1.0, 3.0]
    );
    // Only the pool spreads: averaging REINFORCE keeps the preset's list.
    assert_eq!(
        scales("--workers 8 --set 'parallel.strategy=\"averaging\"'"),
        [1.0, 3.0]
    );
    // What a pool run trains with, and saves for its resume, is the spread.
    let out = shoal(
        r#"train toy-reinforce --workers 4 --set 'parallel.strategy="pool"' --set train.episodes=80 --out run --quiet"#,
        &dir,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let saved: toml::Table =
        toml::from_str(&std::fs::read_to_string(dir.join("run/config.toml")).unwrap()).unwrap();
    assert_eq!(
        saved["parallel"]["worker_lr_scales"],
        toml::Value::try_from([1.0, 2.2, 4.6, 10.0]).unwrap()
    );
}

#[test]
fn several_workers_need_a_parallel_strategy() {
    let dir = scratch("no-strategy");
    let out = shoal("train toy-reinforce --workers 2", &dir);
    assert_clean_failure(&out, "parallel.strategy=pool|gather|averaging");
    assert!(
        !dir.join("runs").exists(),
        "nothing is written for a refused run"
    );
}

#[test]
fn render_writes_a_gif_and_compare_tabulates_runs() {
    let dir = scratch("render");
    let worm = shoal(
        "train worm-reinforce --out worm --set env.max_episode_steps=40 --set train.episodes=2 --set train.final_eval_episodes=1 --quiet",
        &dir,
    );
    assert!(worm.status.success(), "{}", stderr(&worm));
    let render = shoal("render worm --out worm/swim.gif", &dir);
    assert!(render.status.success(), "{}", stderr(&render));
    // One 40-step episode: a frame before every step and one after the last.
    assert_eq!(gif_frames(&dir.join("worm/swim.gif")), (720, 432, 41));
    let (width, height, _) = decode_png(&dir.join("worm/swim.png"));
    assert_eq!((width, height), (720, 432));
    // Eight episodes are 328 steps, over the 300-frame cap: every second
    // step (0, 2, …, 326) and the last (327).
    let long = shoal("render worm --episodes 8 --out worm/long.gif", &dir);
    assert!(long.status.success(), "{}", stderr(&long));
    assert_eq!(gif_frames(&dir.join("worm/long.gif")), (720, 432, 165));

    assert!(train_tiny(&dir, "toy", &[]).status.success());
    let toy_render = shoal("render toy", &dir);
    assert_clean_failure(&toy_render, "no renderer for env `point-reach`");

    let table = shoal("compare worm toy --markdown", &dir);
    assert!(table.status.success(), "{}", stderr(&table));
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.contains("| worm | worm-reinforce |"), "{text}");
    assert!(text.contains("| toy | toy-reinforce |"), "{text}");
}

/// Width, height and frame count of a GIF.
fn gif_frames(path: &Path) -> (u16, u16, usize) {
    let mut options = gif::DecodeOptions::new();
    options.set_color_output(gif::ColorOutput::Indexed);
    let mut decoder = options
        .read_info(std::fs::File::open(path).unwrap())
        .unwrap();
    let (width, height) = (decoder.width(), decoder.height());
    let mut frames = 0;
    while decoder.read_next_frame().unwrap().is_some() {
        frames += 1;
    }
    (width, height, frames)
}

// ---------------------------------------------------------------------------
// Every preset, end to end through the binary, on a budget of seconds
// ---------------------------------------------------------------------------

/// Trains preset `name` for `episodes` episodes (evaluating and
/// checkpointing once, at the end) with the extra `--set`s, and checks the
/// run directory: its files, its config, and the summary's counts.
fn run_preset(name: &str, episodes: u64, sets: &[&str], goal_task: bool) -> std::path::PathBuf {
    // A directory of each call's own: tests run in parallel, and two may
    // train the same preset.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = scratch(&format!("preset-{name}-{call}"));
    let budget = [
        format!("train.episodes={episodes}"),
        format!("train.eval_every={episodes}"),
        format!("train.checkpoint_every={episodes}"),
        "train.eval_episodes=1".to_string(),
        "train.final_eval_episodes=2".to_string(),
    ];
    // An experiment's config (docs/experiments/configs/) trains by path.
    let config = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs/experiments/configs")
        .join(format!("{name}.toml"));
    let source = match config.is_file() {
        true => config.to_string_lossy().into_owned(),
        false => name.to_string(),
    };
    let mut args = vec!["train", &source, "--out", "run", "--quiet"];
    for set in budget
        .iter()
        .map(String::as_str)
        .chain(sets.iter().copied())
    {
        args.extend_from_slice(&["--set", set]);
    }
    let out = shoal_args(&args, &dir);
    assert!(out.status.success(), "{name}: {}", stderr(&out));

    let run = dir.join("run");
    for file in ["config.toml", "metrics.jsonl", "summary.json"] {
        assert!(run.join(file).is_file(), "{name}: missing {file}");
    }
    let latest = std::fs::read_to_string(run.join("checkpoints").join("latest")).unwrap();
    assert!(
        run.join("checkpoints").join(latest.trim()).is_dir(),
        "{name}: `latest` names no checkpoint"
    );
    let config = std::fs::read_to_string(run.join("config.toml")).unwrap();
    assert!(
        config.contains(&format!("preset = \"{name}\"")),
        "{name}: {config}"
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["episodes"], episodes, "{name}: {summary}");
    assert!(
        summary["env_steps"].as_u64().unwrap() >= episodes,
        "{name}: {summary}"
    );
    assert!(summary["eval_return_mean"].is_number(), "{name}: {summary}");
    // Goal tasks report a success rate in [0, 1]; the worm and the reaching
    // toy have no notion of success.
    let success = &summary["eval_success_rate"];
    if goal_task {
        let rate = success.as_f64().unwrap_or(-1.0);
        assert!((0.0..=1.0).contains(&rate), "{name}: {summary}");
    } else {
        assert!(success.is_null(), "{name}: {summary}");
    }
    run
}

/// Settings that shorten a preset's run to seconds, each set where the
/// preset has the key: short episodes, one episode per update or rollout,
/// two gradient steps on small batches from the first episode on, one
/// episode per pool iteration.
const SHORTER: &[(&str, &str)] = &[
    ("env.max_episode_steps", "40"),
    ("env.arm.max_episode_steps", "40"),
    ("algo.episodes_per_update", "1"),
    ("algo.episodes_per_rollout", "1"),
    ("algo.n_batches", "2"),
    ("algo.batch_size", "32"),
    ("algo.learning_starts", "1"),
    ("parallel.episodes_per_iteration", "1"),
    ("parallel.pool_eval_episodes", "1"),
];

/// Every preset file and every experiment's config trains end to end,
/// shortened (checkpoint, summary, evaluation, a success rate on goal
/// tasks): the cases come from the files, so a new preset is tested by its
/// file alone.
#[test]
fn every_preset_and_experiment_config_runs_end_to_end() {
    let configs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/experiments/configs");
    let experiment_configs = std::fs::read_dir(&configs)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "toml"))
        .map(|path| path.file_stem().unwrap().to_string_lossy().into_owned());
    let presets = shoal_rl::train::presets::PRESETS
        .iter()
        .map(|p| p.name.to_string());
    let registries = shoal_rl::train::Registries::default();
    let mut tested = 0;
    for name in presets.chain(experiment_configs) {
        let file = configs.join(format!("{name}.toml"));
        let source = if file.is_file() {
            file.to_string_lossy().into_owned()
        } else {
            name.clone()
        };
        let cfg = registries.resolve(&source, &[]).unwrap();
        let keys: Vec<String> = shoal_rl::train::overrides::list_keys(&cfg.to_table())
            .into_iter()
            .map(|(key, _)| key)
            .collect();
        let sets: Vec<String> = SHORTER
            .iter()
            .filter(|(key, _)| keys.iter().any(|k| k == key))
            .map(|(key, value)| format!("{key}={value}"))
            .collect();
        let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
        let goal_task = registries.is_goal_task(&cfg).unwrap();
        run_preset(&name, 4, &sets, goal_task);
        tested += 1;
    }
    assert!(tested >= 30, "only {tested} presets and configs found");
}

/// Two gradient steps per training round: enough to run every part.
const FEW_UPDATES: &[&str] = &["algo.n_batches=2"];

#[test]
fn preset_push_ddpg_her_renders_its_policy() {
    let run = run_preset("push-ddpg-her", 2, FEW_UPDATES, true);
    let out = shoal("render run --episodes 1", run.parent().unwrap());
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(run.join("render.png").is_file());
}

/// The off-policy worm presets with 20-step episodes, training from the
/// second episode on small batches.
const SHORT_OFF_POLICY_WORM: &[&str] = &[
    "env.max_episode_steps=20",
    "algo.learning_starts=1",
    "algo.batch_size=32",
];

#[test]
fn worm_td3_and_sac_take_a_gradient_step_per_env_step() {
    for name in ["worm-td3", "worm-sac", "worm7-td3", "worm7-sac"] {
        let run = run_preset(name, 3, SHORT_OFF_POLICY_WORM, false);
        let metrics = std::fs::read_to_string(run.join("metrics.jsonl")).unwrap();
        // A gradient step per env step from the second episode on.
        assert!(
            metrics.contains("\"charts/updates\":40.0"),
            "{name}: {metrics}"
        );
    }
}

/// The paper tasks' presets with 40-step episodes and a small batch.
const SHORT_JOINTED: &[&str] = &[
    "env.max_episode_steps=40",
    "algo.n_batches=2",
    "algo.batch_size=32",
];

#[test]
fn preset_ur5_hac3_renders_every_level() {
    let run = run_preset("ur5-hac3", 2, SHORT_JOINTED, true);
    let out = shoal("render run --episodes 1", run.parent().unwrap());
    assert!(out.status.success(), "{}", stderr(&out));
    for file in ["render.gif", "render.png"] {
        assert!(run.join(file).is_file(), "missing {file}");
    }
}

#[test]
fn preset_pendulum_hac3_renders() {
    let run = run_preset("pendulum-hac3", 2, SHORT_JOINTED, true);
    let out = shoal("render run --episodes 1", run.parent().unwrap());
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(run.join("render.png").is_file());
}

#[test]
fn three_level_hac_trains_through_the_binary() {
    // H = 4 with 3 levels: 4³ = 64 steps cover the toy's episode, and every
    // level acts, collects transitions and trains.
    let dir = scratch("hac-three-levels");
    let out = shoal(
        "train toy-hac --out run --quiet --set algo.levels=3 --set algo.horizon=4 --set algo.n_batches=2 --set train.episodes=6 --set train.eval_every=3 --set train.eval_episodes=1 --set train.final_eval_episodes=2",
        &dir,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let updates: Vec<serde_json::Value> = records(&dir.join("run"))
        .into_iter()
        .filter(|r| r["kind"] == "update")
        .collect();
    assert!(!updates.is_empty());
    let last = updates.last().unwrap();
    for level in 0..3 {
        let stored = last[format!("level{level}/buffer_transitions")]
            .as_f64()
            .unwrap_or_else(|| panic!("no level {level} in {last}"));
        assert!(stored > 0.0, "level {level} stored nothing: {last}");
    }
    assert!(last.get("level3/buffer_transitions").is_none(), "{last}");
    // Two gradient steps per level after each of the 6 episodes: 6 × 3 × 2.
    assert_eq!(last["charts/updates"].as_f64(), Some(36.0), "{last}");
    let summary = summary_without_wall(&dir.join("run"));
    assert_eq!(summary["episodes"], 6);
    assert!(summary["eval_success_rate"].is_number(), "{summary}");
}

/// Runs written by the version before `[algo.her]` and the per-variant
/// keys (`tests/fixtures/earlier-layout`: `toy-ddpg-her` as `ddpg`, `td3`
/// and `sac`, `algo.hidden = [4]`, 4 episodes with a checkpoint; their
/// `config.toml` holds the flat `her_*` keys and every variant's keys)
/// resume to 8 episodes, and every record equals a run of 8 episodes that
/// today's version trained in one go.
#[test]
fn runs_of_the_earlier_config_layout_resume_exactly() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/earlier-layout");
    for kind in ["ddpg", "td3", "sac"] {
        let dir = scratch(&format!("earlier-layout-{kind}"));
        copy_dir(&fixtures.join(kind), &dir.join("resumed"));
        let saved = std::fs::read_to_string(dir.join("resumed/config.toml")).unwrap();
        assert!(
            saved.contains("her_k = 4"),
            "{kind}: not the earlier layout"
        );
        let episodes = ["--set", "train.episodes=8", "--quiet"];
        let mut resume = vec!["train", "--resume", "resumed"];
        resume.extend(episodes);
        let out = shoal_args(&resume, &dir);
        assert!(out.status.success(), "{kind}: {}", stderr(&out));
        let kind_set = format!("algo.kind=\"{kind}\"");
        let mut fresh = vec![
            "train",
            "toy-ddpg-her",
            "--out",
            "fresh",
            "--set",
            &kind_set,
            "--set",
            "algo.hidden=[4]",
            "--set",
            "train.checkpoint_every=4",
            "--set",
            "train.eval_every=4",
        ];
        fresh.extend(episodes);
        let out = shoal_args(&fresh, &dir);
        assert!(out.status.success(), "{kind}: {}", stderr(&out));
        let (resumed, fresh) = (records(&dir.join("resumed")), records(&dir.join("fresh")));
        assert!(fresh.len() >= 8, "{kind}: {} records", fresh.len());
        assert_eq!(resumed, fresh, "{kind}");
        assert_eq!(
            summary_without_wall(&dir.join("resumed")),
            summary_without_wall(&dir.join("fresh")),
            "{kind}"
        );
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}
