//! An env defined outside shoal-rl-env (`src/bin/custom_env.rs`, a two-link
//! reacher) trains with DDPG + HER through the runtime library: its run
//! directory is plotted by shoal-rl-eval, and a resumed run equals an
//! uninterrupted one, record for record.

mod common;

use std::path::Path;

use common::{records, scratch};

fn run_example(dir: &Path, args: &[&str]) -> String {
    common::run("custom_env", dir, &[args, &["--eval-every", "20"]].concat())
}

#[test]
fn an_env_from_outside_trains_checkpoints_and_resumes_exactly() {
    let dir = scratch("custom-env");
    let whole = run_example(&dir, &["--episodes", "60", "--out", "whole"]);
    run_example(&dir, &["--episodes", "20", "--out", "split"]);
    let resumed = run_example(&dir, &["--episodes", "60", "--resume", "split"]);
    assert_eq!(records(&dir.join("split")), records(&dir.join("whole")));
    let summary = |text: &str| {
        let mut s: serde_json::Value = serde_json::from_str(text).unwrap();
        s.as_object_mut()
            .unwrap()
            .retain(|k, _| !k.starts_with("wall_s"));
        s
    };
    assert_eq!(summary(&resumed), summary(&whole));
    assert_eq!(summary(&whole)["episodes"], 60);
    assert!(summary(&whole)["eval_success_rate"].is_number());
    // A refused resume: the run's own config, not another seed's.
    let out = common::program(
        "custom_env",
        &dir,
        &["--episodes", "80", "--seed", "1", "--resume", "whole"],
    );
    common::assert_one_error_line(&out, "cannot resume from");
    // shoal's plots read the run directory (what `shoal plot` draws).
    let plots = shoal_rl_eval::plot_runs(&[dir.join("whole")], dir.join("plots")).unwrap();
    assert!(!plots.is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}
