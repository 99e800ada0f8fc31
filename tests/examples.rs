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
