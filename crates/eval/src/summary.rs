//! `summary.json`: the headline numbers of a run, rewritten atomically.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use shoal_core::{Error, Result};

use crate::fsio::{atomic_write, read_bytes};
use crate::run_dir::SUMMARY_FILE;

/// Headline numbers of a run. Fields that do not apply are written as
/// `null`; task-specific numbers (`gait_return`, `gait_speed`, `eval_speed`,
/// `speed_ratio`, …) go in `extra` and appear as top-level keys.
///
/// ```
/// use shoal_eval::Summary;
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

impl Summary {
    /// Records the final evaluation.
    #[must_use]
    pub fn eval(mut self, episodes: u64, return_mean: f64, success_rate: Option<f64>) -> Self {
        self.eval_episodes = episodes;
        self.eval_return_mean = Some(return_mean);
        self.eval_success_rate = success_rate;
        self
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
}
