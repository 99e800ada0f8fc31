//! The metrics log: `metrics.jsonl`, one JSON object per line, append-only.
//!
//! Every record carries four header fields, then namespaced scalars:
//!
//! | field | meaning |
//! |---|---|
//! | `kind` | `"episode"`, `"eval"`, `"iteration"` or `"update"` ([`RecordKind`]) |
//! | `episode` | training episodes finished when the record was written (for an `episode` record: that episode's 1-based index) |
//! | `env_steps` | training environment steps taken so far |
//! | `wall_s` | seconds of training wall time so far (excluding time before a resume) |
//! | `charts/episodic_return`, `losses/policy`, `eval/return_mean`, `eval/success_rate`, `level0/losses/critic`, … | scalars |
//!
//! Each line is handed to the OS in one write as soon as it is logged, so a
//! killed run leaves a valid prefix plus at most one torn final line, which
//! [`read_metrics`] skips and [`MetricsLog::open`] repairs.
//!
//! Resuming: a checkpoint taken after `N` episodes is only consistent with the
//! records whose `episode` is at most `N`; [`MetricsLog::resume`] drops the
//! rest, so a resumed run's log equals an uninterrupted run's. For that to be
//! exact, commit a checkpoint only after logging every record of its episode
//! count (log, then checkpoint).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;
use shoal_rl_core::{Error, Result};

use crate::fsio::{atomic_write, create_dir_all, read_bytes};
use crate::run_dir::METRICS_FILE;
use crate::tensorboard::EventWriter;

/// What a metrics record describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RecordKind {
    /// One finished training episode (`charts/episodic_return`, `charts/episodic_length`).
    Episode,
    /// A frozen-policy evaluation (`eval/return_mean`, `eval/success_rate`).
    Eval,
    /// One iteration of a parallel strategy (e.g. a branch-and-merge round).
    Iteration,
    /// One or more optimiser updates (`losses/policy`, `losses/critic`).
    Update,
}

impl RecordKind {
    /// The value of the `kind` field.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordKind::Episode => "episode",
            RecordKind::Eval => "eval",
            RecordKind::Iteration => "iteration",
            RecordKind::Update => "update",
        }
    }
}

/// One metrics line, built field by field; serialises with the header fields
/// first and the rest in insertion order.
///
/// ```
/// use shoal_rl_eval::{Record, RecordKind};
/// let record = Record::new(RecordKind::Episode, 12, 12_000, 3.5)
///     .scalar("charts/episodic_return", 41.0)
///     .field("worker", 2);
/// assert_eq!(
///     serde_json::to_string(&record).unwrap(),
///     r#"{"kind":"episode","episode":12,"env_steps":12000,"wall_s":3.5,"charts/episodic_return":41.0,"worker":2}"#
/// );
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    fields: Vec<(String, Value)>,
}

impl Record {
    /// A record with its four header fields.
    pub fn new(kind: RecordKind, episode: u64, env_steps: u64, wall_s: f64) -> Self {
        Record {
            fields: Vec::with_capacity(8),
        }
        .field("kind", kind.as_str())
        .field("episode", episode)
        .field("env_steps", env_steps)
        .field("wall_s", wall_s)
    }

    /// Sets a numeric field (non-finite values are written as `null`).
    #[must_use]
    pub fn scalar(self, key: impl Into<String>, value: f64) -> Self {
        self.field(key, value)
    }

    /// Sets several numeric fields, e.g. `LearnReport::scalars`.
    #[must_use]
    pub fn scalars<K: Into<String>>(self, pairs: impl IntoIterator<Item = (K, f64)>) -> Self {
        pairs
            .into_iter()
            .fold(self, |record, (key, value)| record.scalar(key, value))
    }

    /// Sets any JSON field, replacing an earlier value of the same key.
    #[must_use]
    pub fn field(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        let key = key.into();
        let value = value.into();
        match self.fields.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.fields.push((key, value)),
        }
        self
    }

    /// The value of a field, if set.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.fields.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

impl Serialize for Record {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.fields.len()))?;
        for (key, value) in &self.fields {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// Append-only writer of `<run>/metrics.jsonl`.
///
/// ```
/// use shoal_rl_eval::{MetricsLog, Record, RecordKind, read_metrics};
/// let run = std::env::temp_dir().join(format!("shoal-doc-metrics-{}", std::process::id()));
/// let mut log = MetricsLog::open(&run).unwrap();
/// log.write(&Record::new(RecordKind::Episode, 1, 1000, 0.2).scalar("charts/episodic_return", -3.0))
///     .unwrap();
/// log.write(&serde_json::json!({
///     "kind": "update", "episode": 1, "env_steps": 1000, "wall_s": 0.3, "losses/policy": 0.5
/// }))
/// .unwrap();
/// let records = read_metrics(&run).unwrap();
/// assert_eq!(records.len(), 2);
/// assert_eq!(records[1]["losses/policy"], 0.5);
/// # std::fs::remove_dir_all(&run).unwrap();
/// ```
#[derive(Debug)]
pub struct MetricsLog {
    file: File,
    path: PathBuf,
    /// The run's TensorBoard event file, opened with the first scalar.
    events: Option<EventWriter>,
}

impl MetricsLog {
    /// Opens (creating the run directory and file if needed) for appending.
    /// A torn final line left by a killed run is removed first, so new
    /// records start on a line of their own.
    pub fn open(run_dir: impl AsRef<Path>) -> Result<Self> {
        let run_dir = run_dir.as_ref();
        create_dir_all(run_dir)?;
        let path = run_dir.join(METRICS_FILE);
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)
            .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
        repair_torn_tail(&mut file, &path)?;
        Ok(MetricsLog {
            file,
            path,
            events: None,
        })
    }

    /// Opens for a run resumed from a checkpoint taken after `episodes`
    /// episodes: records with a larger `episode` are dropped first (see the
    /// module docs).
    pub fn resume(run_dir: impl AsRef<Path>, episodes: u64) -> Result<Self> {
        truncate_metrics(run_dir.as_ref(), episodes)?;
        Self::open(run_dir)
    }

    /// Appends one record as a line. It must serialise to a JSON object with
    /// a string `kind`, integer `episode` and `env_steps`, and numeric
    /// `wall_s`; anything else is rejected before touching the file.
    pub fn write<T: Serialize + ?Sized>(&mut self, record: &T) -> Result<()> {
        let mut line = serde_json::to_vec(record)
            .map_err(|e| Error::file(&self.path, format!("record cannot be serialised: {e}")))?;
        // Validate exactly the bytes that will land in the file.
        let value: Value = serde_json::from_slice(&line)
            .map_err(|e| Error::file(&self.path, format!("record is not JSON: {e}")))?;
        validate_record(&value)
            .map_err(|reason| Error::file(&self.path, format!("record to append {reason}")))?;
        line.push(b'\n');
        // One write per line: a crash leaves at most one torn line.
        self.file
            .write_all(&line)
            .map_err(|e| Error::io(format!("appending to {}", self.path.display()), e))?;
        self.mirror_to_tensorboard(&value)
    }

    /// Writes the record's namespaced numbers (`charts/…`, `losses/…`,
    /// `eval/…`: the keys with a `/`) to the run's TensorBoard event file
    /// at its `env_steps`, and hands them to the OS so TensorBoard sees
    /// them as training goes.
    fn mirror_to_tensorboard(&mut self, record: &Value) -> Result<()> {
        let Some(fields) = record.as_object() else {
            return Ok(());
        };
        let scalars: Vec<(&str, f64)> = fields
            .iter()
            .filter(|(key, _)| key.contains('/'))
            .filter_map(|(key, value)| Some((key.as_str(), value.as_f64()?)))
            .collect();
        if scalars.is_empty() {
            return Ok(());
        }
        let step = fields.get("env_steps").and_then(Value::as_u64).unwrap_or(0);
        let events = match &mut self.events {
            Some(events) => events,
            None => {
                let run_dir = self.path.parent().unwrap_or(Path::new("."));
                self.events.insert(EventWriter::create(run_dir)?)
            }
        };
        events.scalars(step, scalars)?;
        events.flush()
    }

    /// Flushes every record written so far to disk. Lines reach the OS at
    /// once but the disk only when it decides; call this before committing a
    /// checkpoint so that a power cut cannot leave a checkpoint whose
    /// records are lost.
    pub fn sync(&self) -> Result<()> {
        self.file
            .sync_data()
            .map_err(|e| Error::io(format!("syncing {}", self.path.display()), e))
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Reads every record of `<run>/metrics.jsonl`, in order.
///
/// A torn final line (no newline and not valid JSON — what a killed run
/// leaves) is skipped. Any other line that is not a valid record is an
/// [`Error::File`] naming the file and the 1-based line number.
pub fn read_metrics(run_dir: impl AsRef<Path>) -> Result<Vec<Value>> {
    let path = run_dir.as_ref().join(METRICS_FILE);
    let bytes = read_bytes(&path)?;
    Ok(parse_lines(&bytes, &path)?
        .into_iter()
        .map(|line| line.value)
        .collect())
}

/// Drops every record whose `episode` exceeds `episodes` (and a torn final
/// line), rewriting `<run>/metrics.jsonl` atomically; kept lines are kept
/// byte for byte. Returns how many records were dropped. A missing file is
/// left missing. A malformed line is an error and leaves the file unchanged.
pub fn truncate_metrics(run_dir: impl AsRef<Path>, episodes: u64) -> Result<usize> {
    let path = run_dir.as_ref().join(METRICS_FILE);
    if !path.exists() {
        return Ok(0);
    }
    let bytes = read_bytes(&path)?;
    let lines = parse_lines(&bytes, &path)?;
    let mut kept = Vec::with_capacity(bytes.len());
    let mut dropped = 0;
    for line in &lines {
        if line.value["episode"]
            .as_u64()
            .is_some_and(|e| e <= episodes)
        {
            kept.extend_from_slice(line.text);
            kept.push(b'\n');
        } else {
            dropped += 1;
        }
    }
    if kept.len() != bytes.len() {
        atomic_write(&path, &kept)?;
    }
    Ok(dropped)
}

/// One parsed line: its bytes (without the newline) and value.
struct Line<'a> {
    text: &'a [u8],
    value: Value,
}

/// Parses a JSONL buffer, skipping blank lines and a torn final line.
fn parse_lines<'a>(bytes: &'a [u8], path: &Path) -> Result<Vec<Line<'a>>> {
    let ends_with_newline = bytes.last() == Some(&b'\n');
    let pieces: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    let mut lines = Vec::with_capacity(pieces.len());
    for (index, text) in pieces.iter().enumerate() {
        let is_unterminated_tail = index + 1 == pieces.len() && !ends_with_newline;
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let parsed = serde_json::from_slice::<Value>(text)
            .map_err(|e| format!("is not valid JSON ({e})"))
            .and_then(|value| validate_record(&value).map(|()| value));
        match parsed {
            Ok(value) => lines.push(Line { text, value }),
            Err(_) if is_unterminated_tail => {}
            Err(reason) => {
                return Err(Error::file(
                    path,
                    format!("line {}: record {reason}", index + 1),
                ));
            }
        }
    }
    Ok(lines)
}

/// Checks the header fields every record must carry; the error completes
/// the sentence "record …".
fn validate_record(value: &Value) -> std::result::Result<(), String> {
    let Some(object) = value.as_object() else {
        return Err("is not a JSON object".into());
    };
    if !object.get("kind").is_some_and(Value::is_string) {
        return Err("has no string \"kind\" field".into());
    }
    for key in ["episode", "env_steps"] {
        if object.get(key).and_then(Value::as_u64).is_none() {
            return Err(format!("has no non-negative integer \"{key}\" field"));
        }
    }
    if !object.get("wall_s").is_some_and(Value::is_number) {
        return Err("has no numeric \"wall_s\" field".into());
    }
    Ok(())
}

/// Makes the file end in a newline: a complete record that only lost its
/// newline gets one back, a torn record is cut off.
fn repair_torn_tail(file: &mut File, path: &Path) -> Result<()> {
    let io_err = |e| Error::io(format!("repairing {}", path.display()), e);
    let len = file.metadata().map_err(io_err)?.len();
    if len == 0 {
        return Ok(());
    }
    // Usually the file ends cleanly: check one byte before reading it all.
    let mut last = [0u8; 1];
    file.seek(SeekFrom::End(-1)).map_err(io_err)?;
    file.read_exact(&mut last).map_err(io_err)?;
    if last[0] == b'\n' {
        return Ok(());
    }
    let bytes = read_bytes(path)?;
    let tail_start = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let tail = &bytes[tail_start..];
    let tail_is_record = serde_json::from_slice::<Value>(tail)
        .ok()
        .is_some_and(|value| validate_record(&value).is_ok());
    if tail_is_record {
        file.write_all(b"\n").map_err(io_err)?;
    } else {
        file.set_len(tail_start as u64).map_err(io_err)?;
        // Appends go to the end regardless, but keep the cursor consistent.
        file.seek(SeekFrom::End(0)).map_err(io_err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::fs;

    use serde_json::json;

    use super::*;
    use crate::fsio::testutil::TempDir;

    fn episode(n: u64, ret: f64) -> Record {
        Record::new(RecordKind::Episode, n, n * 100, n as f64 * 0.5)
            .scalar("charts/episodic_return", ret)
    }

    fn write_episodes(run: &Path, count: u64) {
        let mut log = MetricsLog::open(run).unwrap();
        for n in 1..=count {
            log.write(&episode(n, n as f64)).unwrap();
        }
    }

    #[test]
    fn records_round_trip_in_order() {
        let dir = TempDir::new("metrics-roundtrip");
        write_episodes(dir.path(), 3);
        let records = read_metrics(dir.path()).unwrap();
        assert_eq!(records.len(), 3);
        assert_eq!(records[2]["episode"], 3);
        assert_eq!(records[2]["charts/episodic_return"], 3.0);
        assert_eq!(records[0]["kind"], "episode");
    }

    #[test]
    fn non_finite_scalar_is_written_as_null() {
        let dir = TempDir::new("metrics-nan");
        let mut log = MetricsLog::open(dir.path()).unwrap();
        log.write(&episode(1, f64::NAN)).unwrap();
        assert!(read_metrics(dir.path()).unwrap()[0]["charts/episodic_return"].is_null());
    }

    #[test]
    fn truncated_final_line_is_skipped() {
        let dir = TempDir::new("metrics-torn");
        write_episodes(dir.path(), 2);
        let path = dir.path().join(METRICS_FILE);
        let mut bytes = fs::read(&path).unwrap();
        bytes.extend_from_slice(br#"{"kind":"episode","episode":3,"env_st"#);
        fs::write(&path, &bytes).unwrap();
        assert_eq!(read_metrics(dir.path()).unwrap().len(), 2);
    }

    #[test]
    fn malformed_middle_line_is_an_error_naming_file_and_line() {
        let dir = TempDir::new("metrics-bad");
        write_episodes(dir.path(), 1);
        let path = dir.path().join(METRICS_FILE);
        let mut bytes = fs::read(&path).unwrap();
        bytes.extend_from_slice(b"{not json\n");
        bytes.extend_from_slice(&serde_json::to_vec(&episode(2, 0.0)).unwrap());
        bytes.push(b'\n');
        fs::write(&path, &bytes).unwrap();
        let err = read_metrics(dir.path()).unwrap_err();
        let message = err.to_string();
        assert!(matches!(err, Error::File { .. }));
        assert!(message.contains("metrics.jsonl"), "{message}");
        assert!(message.contains("line 2"), "{message}");
    }

    #[test]
    fn line_without_header_fields_is_an_error() {
        let dir = TempDir::new("metrics-header");
        fs::write(
            dir.path().join(METRICS_FILE),
            "{\"kind\":\"episode\",\"wall_s\":1}\n",
        )
        .unwrap();
        let message = read_metrics(dir.path()).unwrap_err().to_string();
        assert!(
            message.contains("line 1") && message.contains("\"episode\""),
            "{message}"
        );
    }

    #[test]
    fn write_rejects_record_without_kind_and_leaves_file_unchanged() {
        let dir = TempDir::new("metrics-reject");
        let mut log = MetricsLog::open(dir.path()).unwrap();
        let err = log
            .write(&json!({"episode": 1, "env_steps": 1, "wall_s": 0.0}))
            .unwrap_err();
        assert!(err.to_string().contains("kind"), "{err}");
        assert!(log.write(&json!([1, 2])).is_err());
        assert_eq!(fs::read(dir.path().join(METRICS_FILE)).unwrap(), b"");
    }

    #[test]
    fn reopening_after_torn_write_starts_a_clean_line() {
        let dir = TempDir::new("metrics-reopen");
        write_episodes(dir.path(), 2);
        let path = dir.path().join(METRICS_FILE);
        let mut bytes = fs::read(&path).unwrap();
        bytes.extend_from_slice(b"{\"kind\":\"epi");
        fs::write(&path, &bytes).unwrap();
        let mut log = MetricsLog::open(dir.path()).unwrap();
        log.write(&episode(3, 3.0)).unwrap();
        let episodes: Vec<u64> = read_metrics(dir.path())
            .unwrap()
            .iter()
            .map(|r| r["episode"].as_u64().unwrap())
            .collect();
        assert_eq!(episodes, vec![1, 2, 3]);
    }

    #[test]
    fn reopening_keeps_complete_record_that_lost_its_newline() {
        let dir = TempDir::new("metrics-newline");
        write_episodes(dir.path(), 2);
        let path = dir.path().join(METRICS_FILE);
        let mut bytes = fs::read(&path).unwrap();
        bytes.pop();
        fs::write(&path, &bytes).unwrap();
        MetricsLog::open(dir.path())
            .unwrap()
            .write(&episode(3, 3.0))
            .unwrap();
        assert_eq!(read_metrics(dir.path()).unwrap().len(), 3);
    }

    #[test]
    fn resume_matches_uninterrupted_run() {
        let uninterrupted = TempDir::new("metrics-straight");
        write_episodes(uninterrupted.path(), 6);

        // Crashed after episode 5 with a checkpoint at episode 4 and a torn line.
        let resumed = TempDir::new("metrics-resumed");
        write_episodes(resumed.path(), 5);
        let path = resumed.path().join(METRICS_FILE);
        let mut bytes = fs::read(&path).unwrap();
        bytes.extend_from_slice(b"{\"kind\":");
        fs::write(&path, &bytes).unwrap();

        let mut log = MetricsLog::resume(resumed.path(), 4).unwrap();
        for n in 5..=6 {
            log.write(&episode(n, n as f64)).unwrap();
        }
        assert_eq!(
            fs::read(resumed.path().join(METRICS_FILE)).unwrap(),
            fs::read(uninterrupted.path().join(METRICS_FILE)).unwrap()
        );
    }

    #[test]
    fn truncate_reports_dropped_count_and_tolerates_missing_file() {
        let dir = TempDir::new("metrics-truncate");
        assert_eq!(truncate_metrics(dir.path(), 3).unwrap(), 0);
        assert!(!dir.path().join(METRICS_FILE).exists());
        write_episodes(dir.path(), 5);
        assert_eq!(truncate_metrics(dir.path(), 3).unwrap(), 2);
        assert_eq!(read_metrics(dir.path()).unwrap().len(), 3);
    }

    #[test]
    fn record_field_replaces_earlier_value() {
        let record = episode(1, 1.0).scalar("charts/episodic_return", 2.0);
        assert_eq!(record.get("charts/episodic_return"), Some(&json!(2.0)));
        let text = serde_json::to_string(&record).unwrap();
        assert_eq!(text.matches("episodic_return").count(), 1);
    }
}
