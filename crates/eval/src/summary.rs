//! `summary.json`: the headline numbers of a run, rewritten atomically.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use shoal_rl_core::{Error, Result};

use crate::fsio::{atomic_write, read_bytes};
use crate::run_dir::SUMMARY_FILE;

/// Headline numbers of a run. Fields that do not apply are written as
/// `null`; task-specific numbers (`gait_return`, `gait_speed`, `eval_speed`,
/// `speed_ratio`, …) go in `extra` and appear as top-level keys.
///
/// ```
/// use shoal_rl_eval::Summary;
/// let summary = Summary { episodes: 200, env_steps: 200_000, wall_s: 61.5, ..Default::default() }
///     .eval(10, 150.2, None)
///     .extra("speed_ratio", 0.82);
/// let json = serde_json::to_value(&summary).unwrap();
/// assert_eq!(json["eval_success_rate"], serde_json::Value::Null);
/// assert_eq!(json["speed_ratio"], 0.82);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Training episodes finished.
    pub episodes: u64,
    /// Training environment steps taken.
    pub env_steps: u64,
    /// Training wall time, in seconds (summed over resumed segments).
    pub wall_s: f64,
    /// Mean return of the final frozen-policy evaluation; `None` before any.
    pub eval_return_mean: Option<f64>,
    /// Success rate of the final evaluation, for goal tasks; `None` otherwise.
    pub eval_success_rate: Option<f64>,
    /// Episodes in the final evaluation (0 when there was none).
    pub eval_episodes: u64,
    /// Further task-specific numbers, flattened into the top-level object.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// The key an interrupted run's summary sets to `true`.
const INTERRUPTED_KEY: &str = "interrupted";

impl Summary {
    /// Records the final evaluation.
    #[must_use]
    pub fn eval(mut self, episodes: u64, return_mean: f64, success_rate: Option<f64>) -> Self {
        self.eval_episodes = episodes;
        self.eval_return_mean = Some(return_mean);
        self.eval_success_rate = success_rate;
        self
    }

    /// Marks the summary of a run stopped by SIGINT or SIGTERM: it ends at
    /// a checkpoint to resume from, with no final evaluation.
    #[must_use]
    pub fn interrupted(self) -> Self {
        self.extra(INTERRUPTED_KEY, true)
    }

    /// Whether this is an interrupted run's summary ([`Summary::interrupted`])
    /// rather than a finished run's.
    pub fn is_interrupted(&self) -> bool {
        self.extra.get(INTERRUPTED_KEY) == Some(&Value::Bool(true))
    }

    /// Adds a task-specific number (or any JSON value) under `key`.
    #[must_use]
    pub fn extra(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.extra.insert(key.into(), value.into());
        self
    }

    /// Writes `<run>/summary.json` atomically (pretty-printed). Non-finite
    /// numbers become `null`.
    pub fn write(&self, run_dir: impl AsRef<Path>) -> Result<()> {
        let path = run_dir.as_ref().join(SUMMARY_FILE);
        let mut text = serde_json::to_vec_pretty(self)
            .map_err(|e| Error::file(&path, format!("summary cannot be serialised: {e}")))?;
        text.push(b'\n');
        atomic_write(&path, &text)
    }

    /// Reads `<run>/summary.json`.
    pub fn read(run_dir: impl AsRef<Path>) -> Result<Self> {
        let path = run_dir.as_ref().join(SUMMARY_FILE);
        let bytes = read_bytes(&path)?;
        serde_json::from_slice(&bytes)
            .map_err(|e| Error::file(&path, format!("not a valid summary: {e}")))
    }
}

/// What a run counts as reaching its target: an evaluation record whose
/// `metric` (`eval/return_mean`, `eval/success_rate`) is at least `value`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Target {
    /// The key of the evaluation record's score.
    pub metric: String,
    /// The score to reach.
    pub value: f64,
}

/// Where a run's evaluations first reached its [`Target`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TargetReached {
    /// Training episodes before that evaluation, all workers.
    pub episodes: u64,
    /// Environment steps before it, training and evaluation (and a pool's
    /// selection) together, all workers: what reaching it cost.
    pub env_steps: u64,
    /// Training environment steps before it alone (Stable-Baselines3's
    /// timesteps), all workers.
    pub train_env_steps: u64,
    /// Wall-clock seconds of the run at that evaluation.
    pub wall_s: f64,
}

impl Target {
    /// Whether an evaluation whose `metric` scored `score` (absent: never)
    /// reaches the target.
    pub fn is_reached_by(&self, score: Option<f64>) -> bool {
        score.is_some_and(|v| v >= self.value)
    }

    /// Whether the metrics record `record` (an `eval` record as
    /// [`crate::read_metrics`] returns it) reaches the target.
    pub fn is_reached_in(&self, record: &Value) -> bool {
        self.is_reached_by(record[self.metric.as_str()].as_f64())
    }

    /// The first `eval` record of `records` (as [`crate::read_metrics`]
    /// returns them, in order) that reaches the target; `None` if none does.
    /// A record's `eval_env_steps` (absent: 0) counts toward its env steps.
    ///
    /// ```
    /// use serde_json::json;
    /// use shoal_rl_eval::Target;
    /// let records = vec![
    ///     json!({"kind": "eval", "episode": 100, "env_steps": 5000, "wall_s": 2.0, "eval/success_rate": 0.5}),
    ///     json!({"kind": "eval", "episode": 200, "env_steps": 9000, "wall_s": 4.5,
    ///            "eval_env_steps": 600, "eval/success_rate": 0.95}),
    /// ];
    /// let target = Target { metric: "eval/success_rate".into(), value: 0.9 };
    /// let reached = target.first_reached(&records).unwrap();
    /// assert_eq!((reached.episodes, reached.env_steps, reached.wall_s), (200, 9600, 4.5));
    /// assert_eq!(reached.train_env_steps, 9000);
    /// ```
    pub fn first_reached(&self, records: &[Value]) -> Option<TargetReached> {
        records
            .iter()
            .filter(|r| r["kind"] == "eval")
            .find(|r| self.is_reached_in(r))
            .map(|r| TargetReached {
                episodes: r["episode"].as_u64().unwrap_or(0),
                env_steps: r["env_steps"].as_u64().unwrap_or(0)
                    + r["eval_env_steps"].as_u64().unwrap_or(0),
                train_env_steps: r["env_steps"].as_u64().unwrap_or(0),
                wall_s: r["wall_s"].as_f64().unwrap_or(f64::NAN),
            })
    }
}

impl Summary {
    /// Records `target` and where it was first reached (`null`s if never):
    /// `target_metric`, `target_value`, `episodes_to_target`,
    /// `env_steps_to_target` (training and evaluation steps),
    /// `train_env_steps_to_target` (training steps alone), `wall_s_to_target`, and
    /// `per_worker_episodes_to_target` — the episodes over `workers`,
    /// which for a pool are the episodes of the promoted lineage and do
    /// not depend on the hardware.
    #[must_use]
    pub fn target(self, target: &Target, reached: Option<TargetReached>, workers: u64) -> Self {
        let workers = workers.max(1);
        self.extra("target_metric", target.metric.as_str())
            .extra("target_value", target.value)
            .extra("episodes_to_target", reached.map(|r| r.episodes))
            .extra("env_steps_to_target", reached.map(|r| r.env_steps))
            .extra(
                "train_env_steps_to_target",
                reached.map(|r| r.train_env_steps),
            )
            .extra("wall_s_to_target", reached.map(|r| r.wall_s))
            .extra(
                "per_worker_episodes_to_target",
                reached.map(|r| r.episodes.div_ceil(workers)),
            )
    }
}

/// A task's reference performance (the worm's best travelling-wave gait):
/// the default return target, and numbers `summary.json` reports beside the
/// trained policy's.
#[derive(Clone, Debug, PartialEq)]
pub struct Reference {
    /// What the reference is called in `summary.json`: `{name}_return` and
    /// `return_ratio_to_{name}` (e.g. `gait`).
    pub name: String,
    /// Its episode return.
    pub episode_return: f64,
    /// More fields for `summary.json` (e.g. `gait_speed`).
    pub summary_fields: Vec<(String, serde_json::Value)>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsio::testutil::TempDir;

    #[test]
    fn summary_round_trips_with_extras_and_nulls() {
        let dir = TempDir::new("summary");
        let summary = Summary {
            episodes: 5,
            env_steps: 250,
            wall_s: 1.25,
            ..Default::default()
        }
        .eval(3, -12.5, Some(0.5))
        .extra("gait_speed", 0.18)
        .extra("note", "short run");
        summary.write(dir.path()).unwrap();
        assert_eq!(Summary::read(dir.path()).unwrap(), summary);

        let plain = Summary {
            episodes: 1,
            ..Default::default()
        };
        plain.write(dir.path()).unwrap();
        let json: Value =
            serde_json::from_slice(&std::fs::read(dir.path().join(SUMMARY_FILE)).unwrap()).unwrap();
        assert!(json["eval_return_mean"].is_null());
        assert!(json["eval_success_rate"].is_null());
        assert_eq!(json["episodes"], 1);
    }

    #[test]
    fn malformed_summary_is_a_file_error() {
        let dir = TempDir::new("summary-bad");
        std::fs::write(dir.path().join(SUMMARY_FILE), "{\"episodes\": \"many\"}").unwrap();
        let err = Summary::read(dir.path()).unwrap_err();
        assert!(matches!(err, Error::File { .. }), "{err}");
        assert!(err.to_string().contains("summary.json"), "{err}");
    }

    #[test]
    fn the_first_evaluation_at_or_above_the_target_counts() {
        let records: Vec<Value> = [
            r#"{"kind":"episode","episode":1,"env_steps":50,"wall_s":0.1,"charts/episodic_return":900.0}"#,
            r#"{"kind":"eval","episode":10,"env_steps":500,"wall_s":1.0,"eval/return_mean":700.0}"#,
            r#"{"kind":"iteration","episode":20,"env_steps":1000,"wall_s":2.0,"eval/return_mean":999.0}"#,
            r#"{"kind":"eval","episode":20,"env_steps":1000,"wall_s":2.5,"eval_env_steps":150,"eval/return_mean":776.0}"#,
            r#"{"kind":"eval","episode":30,"env_steps":1500,"wall_s":3.0,"eval/return_mean":800.0}"#,
        ]
        .iter()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
        let target = |value| Target {
            metric: "eval/return_mean".into(),
            value,
        };
        // Exactly the target counts; training and other kinds never do.
        assert_eq!(
            target(776.0).first_reached(&records),
            Some(TargetReached {
                episodes: 20,
                env_steps: 1150,
                train_env_steps: 1000,
                wall_s: 2.5
            })
        );
        assert_eq!(target(800.0).first_reached(&records).unwrap().episodes, 30);
        assert_eq!(target(800.5).first_reached(&records), None);
        let missing = Target {
            metric: "eval/success_rate".into(),
            value: 0.0,
        };
        assert_eq!(missing.first_reached(&records), None);

        let json = serde_json::to_value(Summary::default().target(
            &target(776.0),
            target(776.0).first_reached(&records),
            3,
        ))
        .unwrap();
        assert_eq!(json["per_worker_episodes_to_target"], 7);
        assert_eq!(json["env_steps_to_target"], 1150);
        assert_eq!(json["train_env_steps_to_target"], 1000);
        let json = serde_json::to_value(Summary::default().target(&target(1e9), None, 1)).unwrap();
        assert!(json["episodes_to_target"].is_null() && json["wall_s_to_target"].is_null());
        assert_eq!(json["target_value"], 1e9);
    }
}
