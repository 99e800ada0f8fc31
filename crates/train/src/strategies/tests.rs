use std::path::Path;

use shoal_rl_core::Result;
use shoal_rl_eval::{CheckpointSelector, load_checkpoint};
use shoal_rl_run::NO_STOP_TARGET;

use crate::algos::make_reinforce;
use crate::config::RunConfig;
use crate::plan::Plan;
use crate::registries::{Registries, check, resolve, run};

/// Pool worker `rank`'s REINFORCE learner, as the pool builds it.
fn candidate_reinforce(
    cfg: &RunConfig,
    rank: usize,
) -> shoal_rl_algo::Reinforce<Box<dyn shoal_rl_core::Env>> {
    let registries = Registries::default();
    let learners = registries.learners(cfg);
    let worker_cfg = learners.candidate_config(rank).unwrap();
    let worker = registries.learners(&worker_cfg);
    make_reinforce(
        &worker
            .context(rank, cfg.parallel.lr_scale_of(rank))
            .unwrap(),
    )
    .unwrap()
}
use shoal_rl_algo::ReinforceConfig;

fn pool_of(workers: usize, extra: &[&str]) -> Result<RunConfig> {
    let mut overrides = vec![
        "parallel.strategy=pool".to_string(),
        format!("parallel.workers={workers}"),
    ];
    overrides.extend(extra.iter().map(|s| s.to_string()));
    resolve("toy-reinforce", &overrides)
}

#[test]
fn each_pool_worker_gets_its_own_settings() {
    let cfg = pool_of(
        3,
        &[
            "parallel.worker_lr_scales=[0.5, 2.0]",
            r#"parallel.worker_overrides=[[], ["algo.gamma=0.9", "algo.learning_rate=0.004"]]"#,
        ],
    )
    .unwrap();
    let base: ReinforceConfig = cfg.algo.settings().unwrap();
    // (learning rate, gamma) each worker must train with, by hand.
    let expected = [
        (base.learning_rate * 0.5, base.gamma),
        (0.004 * 2.0, 0.9),
        (base.learning_rate, base.gamma),
    ];
    for (rank, (lr, gamma)) in expected.into_iter().enumerate() {
        let learner = candidate_reinforce(&cfg, rank);
        assert_eq!(learner.config().learning_rate, lr, "worker {rank}");
        assert_eq!(learner.config().gamma, gamma, "worker {rank}");
    }
}

#[test]
fn bad_per_worker_settings_are_refused_with_one_line() {
    let refused = |extra: &[&str], workers: usize| {
        let cfg = pool_of(workers, extra).unwrap();
        let plan = Plan::new(cfg)
            .out(std::env::temp_dir().join("shoal-never-created"))
            .quiet();
        run(&plan).unwrap_err().to_string()
    };
    assert_eq!(
        refused(&["parallel.worker_lr_scales=[0.1, 1.0, 1.0]"], 2),
        "invalid configuration: parallel.worker_lr_scales and worker_overrides name 3 \
         candidates; the pool has 2"
    );
    assert_eq!(
        refused(
            &[
                "parallel.pool_group_size=2",
                "parallel.worker_lr_scales=[1.0, 2.0]"
            ],
            2
        ),
        "invalid configuration: parallel.worker_lr_scales and worker_overrides name 2 \
         candidates; the pool has 1"
    );
    assert_eq!(
        refused(&["parallel.pool_group_size=2"], 3),
        "invalid configuration: parallel.pool_group_size must divide parallel.workers (3), \
         got 2"
    );
    assert_eq!(
        refused(&["parallel.pool_group_size=0"], 2),
        "invalid configuration: parallel.pool_group_size must divide parallel.workers (2), \
         got 0"
    );
    assert_eq!(
        refused(&["parallel.worker_lr_scales=[0.1, -1.0]"], 2),
        "invalid configuration: parallel.worker_lr_scales must be positive and finite, got -1"
    );
    assert_eq!(
        refused(&[r#"parallel.worker_overrides=[["seed=3"]]"#], 2),
        "invalid configuration: parallel.worker_overrides may set algo.* keys only, got \
         `seed=3`"
    );
    assert_eq!(
        refused(
            &[r#"parallel.worker_overrides=[[], ["algo.gamma=0.9", "algo.kind=\"sac\""]]"#],
            2
        ),
        "invalid configuration: parallel.worker_overrides may not change algo.kind (got \
         `algo.kind=\"sac\"`): the pool's candidates load one another's state, so they \
         train one kind"
    );
    assert_eq!(
        refused(
            &[r#"parallel.worker_overrides=[[], ["algo.gamma=fast"]]"#],
            2
        ),
        "invalid configuration: parallel.worker_overrides of candidate 1: `algo.gamma` \
         expects a float, got `fast`"
    );
    assert_eq!(
        refused(
            &[
                "parallel.pool_group_size=2",
                r#"parallel.worker_overrides=[[], ["algo.gamma=fast"]]"#
            ],
            4
        ),
        "invalid configuration: parallel.worker_overrides of candidate 1: `algo.gamma` \
         expects a float, got `fast`"
    );
    // Networks of other sizes: the pool could not load one candidate's
    // state into another, at its first winner.
    assert_eq!(
        refused(
            &[r#"parallel.worker_overrides=[[], ["algo.hidden=[16]"]]"#],
            2
        ),
        "invalid configuration: parallel.worker_overrides of candidate 1: its learner \
         cannot take candidate 0's state (shape mismatch: parameter vector has 162 values, \
         the network has 82); the pool loads the winner's state into every worker, so \
         candidates may differ in settings, not in network shapes"
    );
    // Candidate 0 alone changed: candidate 1 takes the run's table.
    assert_eq!(
        refused(&[r#"parallel.worker_overrides=[["algo.hidden=[16]"]]"#], 3),
        "invalid configuration: parallel.worker_overrides of candidate 1: its learner \
         cannot take candidate 0's state (shape mismatch: parameter vector has 82 values, \
         the network has 162); the pool loads the winner's state into every worker, so \
         candidates may differ in settings, not in network shapes"
    );
    assert!(!std::env::temp_dir().join("shoal-never-created").exists());
    let averaging = resolve(
        "push-ddpg-her",
        &[
            "parallel.strategy=averaging".into(),
            "parallel.workers=2".into(),
            r#"parallel.worker_overrides=[["algo.actor_lr=0.1"]]"#.into(),
        ],
    )
    .unwrap();
    assert_eq!(
        check(&averaging).unwrap_err().to_string(),
        "invalid configuration: parallel.worker_overrides applies to the pool; strategy \
         `averaging` trains workers that must share one setting"
    );
    let mut grouped_averaging = averaging.clone();
    grouped_averaging.parallel.worker_overrides.clear();
    grouped_averaging.parallel.pool_group_size = 2;
    assert_eq!(
        check(&grouped_averaging).unwrap_err().to_string(),
        "invalid configuration: parallel.pool_group_size applies to the pool, not strategy \
         `averaging`"
    );
}

/// With candidates of 2 workers, both members of a candidate get its
/// settings: worker r reads entry r / 2 of each list.
#[test]
fn the_members_of_a_candidate_share_its_settings() {
    let cfg = pool_of(
        4,
        &[
            "parallel.pool_group_size=2",
            "parallel.worker_lr_scales=[0.5, 2.0]",
            r#"parallel.worker_overrides=[["algo.gamma=0.9"]]"#,
        ],
    )
    .unwrap();
    let base: ReinforceConfig = cfg.algo.settings().unwrap();
    let expected = [
        (base.learning_rate * 0.5, 0.9),
        (base.learning_rate * 0.5, 0.9),
        (base.learning_rate * 2.0, base.gamma),
        (base.learning_rate * 2.0, base.gamma),
    ];
    for (rank, (lr, gamma)) in expected.into_iter().enumerate() {
        let learner = candidate_reinforce(&cfg, rank);
        assert_eq!(learner.config().learning_rate, lr, "worker {rank}");
        assert_eq!(learner.config().gamma, gamma, "worker {rank}");
    }
    let settings = crate::strategies::pool_worker_settings(&cfg.parallel);
    assert_eq!(settings[1]["lr_scale"], 0.5);
    assert_eq!(settings[3]["lr_scale"], 2.0);
}

/// The `eval` records of a run, read by hand.
fn evals(run: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(run.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|r| r["kind"] == "eval")
        .collect()
}

#[test]
fn summary_says_where_the_run_first_reached_its_target() {
    let dir = std::env::temp_dir().join(format!("shoal-target-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let train = |name: &str, extra: &[&str]| {
        let mut overrides: Vec<String> = ["train.episodes=400", "train.eval_every=40"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        overrides.extend(extra.iter().map(|s| s.to_string()));
        let plan = Plan::new(resolve("toy-reinforce", &overrides).unwrap())
            .out(dir.join(name))
            .quiet();
        let (path, summary) = run(&plan).unwrap().unwrap();
        (path, serde_json::to_value(&summary).unwrap())
    };
    // No target on the toy by default.
    let (free, summary) = train("free", &[]);
    assert!(summary.get("target_value").is_none(), "{summary}");
    let scores: Vec<f64> = evals(&free)
        .iter()
        .map(|r| r["eval/return_mean"].as_f64().unwrap())
        .collect();
    // A target first met by a later evaluation than the first: the
    // third-best score, so at least two evaluations reach it.
    let mut sorted = scores.clone();
    sorted.sort_by(f64::total_cmp);
    let target = sorted[sorted.len() - 3];
    let (run_dir, summary) = train("target", &[&format!("train.target_return={target}")]);
    let records = evals(&run_dir);
    let first = records
        .iter()
        .find(|r| r["eval/return_mean"].as_f64().unwrap() >= target)
        .unwrap();
    assert_eq!(summary["target_metric"], "eval/return_mean");
    assert_eq!(summary["target_value"], target);
    assert_eq!(summary["episodes_to_target"], first["episode"]);
    assert_eq!(summary["per_worker_episodes_to_target"], first["episode"]);
    assert_eq!(summary["wall_s_to_target"], first["wall_s"]);
    // Evaluation steps count: every evaluation before and at the target.
    let eval_steps = first["eval_env_steps"].as_u64().unwrap();
    let evaluations = records.iter().take_while(|r| *r != first).count() as u64 + 1;
    assert!(
        eval_steps >= evaluations * 10,
        "10 episodes of 1+ steps each"
    );
    assert_eq!(
        summary["env_steps_to_target"].as_u64().unwrap(),
        first["env_steps"].as_u64().unwrap() + eval_steps
    );
    // Out of reach: the numbers are null, the target is still recorded.
    let (_, summary) = train("never", &["train.target_return=1e9"]);
    assert!(summary["episodes_to_target"].is_null());
    assert!(summary["wall_s_to_target"].is_null());
    assert!(summary.get("stopped_at_target").is_none(), "{summary}");
    // Asked to stop there, it still runs its whole budget (here the
    // env-step one, spent before the 400 episodes) and says so.
    let (_, summary) = train(
        "never-stopped",
        &[
            "train.target_return=1e9",
            "train.stop_at_target=true",
            "train.env_steps=2000",
        ],
    );
    assert!(summary["episodes"].as_u64().unwrap() < 400, "{summary}");
    assert_eq!(summary["stopped_at_target"], false, "{summary}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `train.stop_at_target` on `preset`: the run ends at the first
/// evaluation that reaches the target, with the same evaluations as a
/// run without the stop up to there, and its last checkpoint (a parallel
/// run's holding every worker's memory) resumes into exactly the rest of
/// that run.
fn stops_at_target_and_resumes_exactly(preset: &str, metric: &str, extra: &[&str]) {
    let dir = std::env::temp_dir().join(format!("shoal-stop-{preset}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let plan = |name: &str, resume: bool, more: &[String]| {
        let mut overrides: Vec<String> = ["train.episodes=240", "train.eval_every=40"]
            .iter()
            .chain(extra)
            .map(|s| s.to_string())
            .collect();
        overrides.extend(more.iter().cloned());
        let plan = Plan::new(resolve(preset, &overrides).unwrap()).quiet();
        match resume {
            true => plan.resume(dir.join(name)),
            false => plan.out(dir.join(name)),
        }
    };
    let scores = |run: &Path| -> Vec<(u64, f64)> {
        evals(run)
            .iter()
            .map(|r| (r["episode"].as_u64().unwrap(), r[metric].as_f64().unwrap()))
            .collect()
    };
    let (free, _) = run(&plan("free", false, &[])).unwrap().unwrap();
    let free_scores = scores(&free);
    // The best score before the last evaluation: first reached before the end.
    let target = free_scores[..free_scores.len() - 1]
        .iter()
        .map(|(_, score)| *score)
        .fold(f64::NEG_INFINITY, f64::max);
    let reached_at = free_scores.iter().find(|(_, s)| *s >= target).unwrap().0;
    assert!(reached_at < 240);
    let key = match metric {
        "eval/success_rate" => "train.target_success",
        _ => "train.target_return",
    };
    let stop = [
        format!("{key}={target}"),
        "train.stop_at_target=true".into(),
    ];
    let (stopped, summary) = run(&plan("stopped", false, &stop)).unwrap().unwrap();
    assert_eq!(summary.episodes, reached_at);
    assert_eq!(summary.extra["stopped_at_target"], true);
    let stopped_scores = scores(&stopped);
    assert_eq!(stopped_scores, free_scores[..stopped_scores.len()]);
    assert_eq!(stopped_scores.last().unwrap().0, reached_at);
    let ckpt = load_checkpoint(&stopped, &CheckpointSelector::Latest, None).unwrap();
    assert_eq!(ckpt.progress().episodes, reached_at);

    let go_on = [
        format!("{key}={target}"),
        "train.stop_at_target=false".into(),
    ];
    let (resumed, summary) = run(&plan("stopped", true, &go_on)).unwrap().unwrap();
    assert_eq!(summary.extra.get("stopped_at_target"), None);
    assert_eq!(scores(&resumed), free_scores);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_single_learner_stops_at_its_target_and_resumes_exactly() {
    stops_at_target_and_resumes_exactly("toy-reinforce", "eval/return_mean", &[]);
}

#[test]
fn averaging_workers_stop_at_their_target_and_resume_with_their_memories() {
    stops_at_target_and_resumes_exactly(
        "toy-ddpg-her",
        "eval/success_rate",
        &["parallel.strategy=averaging", "parallel.workers=2"],
    );
}

#[test]
fn stop_at_target_without_a_target_is_refused() {
    let cfg = resolve("toy-reinforce", &["train.stop_at_target=true".into()]).unwrap();
    assert_eq!(
        check(&cfg).unwrap_err().to_string(),
        format!("invalid configuration: {NO_STOP_TARGET}")
    );
}

/// PPO's step-sized rollouts cut episodes, so the strategies that
/// schedule whole episodes refuse them before a worker starts; one
/// learner and the pool take them.
#[test]
fn step_sized_ppo_rollouts_are_refused_where_workers_share_whole_episodes() {
    let with = |strategy: &str| {
        let mut overrides = vec!["algo.steps_per_rollout=64".to_string()];
        if strategy != "none" {
            overrides.push(format!("parallel.strategy={strategy}"));
            overrides.push("parallel.workers=2".into());
        }
        check(&resolve("toy-ppo", &overrides).unwrap())
    };
    for (strategy, named) in [
        ("averaging", "gradient averaging"),
        ("gather", "rollout gathering"),
    ] {
        assert_eq!(
            with(strategy).unwrap_err().to_string(),
            format!(
                "invalid configuration: ppo steps_per_rollout is 64, but {named} schedules \
                 whole episodes: set it to 0 (episodes_per_rollout), or train one learner or \
                 the pool"
            ),
            "{strategy}"
        );
    }
    with("none").unwrap();
    with("pool").unwrap();
}
