//! Every example program runs to its end on a tiny budget (the custom env
//! and strategy have tests of their own), so none rots unseen.

mod common;

use common::{run_example, scratch, shoal, stderr};

#[test]
fn the_worm_examples_train_and_report_every_chunk() {
    let dir = scratch("examples-worm");
    for name in ["reinforce_worm", "ppo_worm"] {
        let out = run_example(name, &dir, &["2"]);
        assert!(out.starts_with("reference gait: "), "{name}: {out}");
        assert_eq!(
            out.lines().filter(|l| l.starts_with("episode ")).count(),
            2,
            "{name}: one line per chunk of the 2 episodes: {out}"
        );
    }
}

#[test]
fn the_push_examples_train_and_evaluate() {
    let dir = scratch("examples-push");
    let ddpg = run_example("ddpg_her_push", &dir, &["1"]);
    assert!(ddpg.contains("epoch   1: train success"), "{ddpg}");
    let hac = run_example("hac_push", &dir, &["4"]);
    assert!(hac.lines().count() >= 2, "{hac}");
}

#[test]
fn a_trained_policy_acts_from_its_run_directory() {
    let dir = scratch("examples-use-policy");
    let out = shoal(
        "train toy-ppo --out run --quiet --set train.episodes=16 --set train.eval_every=8",
        &dir,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    for which in ["latest", "best"] {
        let out = run_example("use_policy", &dir, &["run", which, "2"]);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2, "{out}");
        assert!(lines[0].starts_with("episode 0: return "), "{out}");
    }
    // On the run's evaluation seeds it repeats `shoal eval`'s episode,
    // which evaluates through the learner instead.
    let eval = shoal("eval run --episodes 1", &dir);
    assert!(eval.status.success(), "{}", stderr(&eval));
    let report: serde_json::Value = serde_json::from_slice(&eval.stdout).unwrap();
    let out = run_example("use_policy", &dir, &["run", "latest", "1"]);
    let ret: f64 = out
        .split_whitespace()
        .nth(3)
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("no return in {out}"));
    assert_eq!(ret, report["return_mean"].as_f64().unwrap(), "{out}");
    // Sampled actions (a seed after the episode count) leave the mean's
    // return, and repeat by seed.
    let sampled = run_example("use_policy", &dir, &["run", "latest", "1", "7"]);
    assert_ne!(sampled, out, "sampled actions differ from the mean");
    assert_eq!(
        run_example("use_policy", &dir, &["run", "latest", "1", "7"]),
        sampled
    );
    // A HAC run has no stateless policy: one clear line.
    let hac = shoal(
        "train toy-hac --out hac --quiet --set train.episodes=2 --set train.eval_every=2",
        &dir,
    );
    assert!(hac.status.success(), "{}", stderr(&hac));
    let out = std::process::Command::new(common::example("use_policy"))
        .args(["hac", "latest"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no stateless policy"), "{err}");
}

#[test]
fn her_audit_reads_a_run_window_by_window() {
    let dir = scratch("examples-her-audit");
    let out = shoal(
        "train push-ddpg-her --out run --quiet --set train.episodes=8 --set train.checkpoint_every=8 --set algo.n_batches=2",
        &dir,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let audit = run_example("her_audit", &dir, &["run", "4"]);
    // A header, a separator, then one row per window of 4 of the 8 episodes.
    let rows: Vec<&str> = audit.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(rows.len(), 4, "{audit}");
}
