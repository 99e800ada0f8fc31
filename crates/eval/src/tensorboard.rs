//! TensorBoard scalars: every numeric field of a metrics record, written
//! beside `metrics.jsonl` as a TensorBoard event file.
//!
//! ```text
//! <run>/tensorboard/events.out.tfevents.<unix time>.shoal.<pid>
//! ```
//!
//! An event file is a TFRecord stream of `Event` protocol buffers (the
//! messages below, encoded by prost): a length, its masked CRC-32C, the
//! event, and the event's masked CRC-32C. The first event names the file
//! version; each record then becomes one event whose summary holds its
//! scalars, at the record's `env_steps` (Stable-Baselines3 logs against
//! timesteps too). A resumed run writes a new file in the same folder;
//! TensorBoard reads the folder as one run.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use prost::Message;
use shoal_rl_core::{Error, Result};

use crate::fsio::create_dir_all;

/// The folder of a run's event files.
pub const TENSORBOARD_DIR: &str = "tensorboard";

/// `tensorflow.Event`, the fields shoal writes.
#[derive(Clone, PartialEq, Message)]
struct Event {
    #[prost(double, tag = "1")]
    wall_time: f64,
    #[prost(int64, tag = "2")]
    step: i64,
    #[prost(string, optional, tag = "3")]
    file_version: Option<String>,
    #[prost(message, optional, tag = "5")]
    summary: Option<Summary>,
}

/// `tensorflow.Summary`.
#[derive(Clone, PartialEq, Message)]
struct Summary {
    #[prost(message, repeated, tag = "1")]
    value: Vec<SummaryValue>,
}

/// `tensorflow.Summary.Value` with a `simple_value`.
#[derive(Clone, PartialEq, Message)]
struct SummaryValue {
    #[prost(string, tag = "1")]
    tag: String,
    #[prost(float, optional, tag = "2")]
    simple_value: Option<f32>,
}

/// TFRecord's checksum: CRC-32C, rotated and offset so that a CRC over
/// data holding CRCs stays well distributed.
fn masked_crc(bytes: &[u8]) -> u32 {
    let crc = crc32c::crc32c(bytes);
    crc.rotate_right(15).wrapping_add(0xa282_ead8)
}

/// Appends TensorBoard events to one event file.
#[derive(Debug)]
pub struct EventWriter {
    file: BufWriter<File>,
    path: PathBuf,
}

impl EventWriter {
    /// A new event file in `<run_dir>/tensorboard/`, opened with its
    /// file-version event.
    pub fn create(run_dir: impl AsRef<Path>) -> Result<Self> {
        let dir = run_dir.as_ref().join(TENSORBOARD_DIR);
        create_dir_all(&dir)?;
        let now = unix_time();
        let path = dir.join(format!(
            "events.out.tfevents.{}.shoal.{}",
            now as u64,
            std::process::id()
        ));
        let file = File::create(&path)
            .map_err(|e| Error::io(format!("creating {}", path.display()), e))?;
        let mut writer = EventWriter {
            file: BufWriter::new(file),
            path,
        };
        writer.write_event(&Event {
            wall_time: now,
            step: 0,
            file_version: Some("brain.Event:2".into()),
            summary: None,
        })?;
        Ok(writer)
    }

    /// Writes `scalars` (tag, value) as one event at `step`; nothing if
    /// there are none. Non-finite values are left out, as in the JSON lines.
    pub fn scalars<'s>(
        &mut self,
        step: u64,
        scalars: impl IntoIterator<Item = (&'s str, f64)>,
    ) -> Result<()> {
        let value: Vec<SummaryValue> = scalars
            .into_iter()
            .filter(|(_, v)| v.is_finite())
            .map(|(tag, v)| SummaryValue {
                tag: tag.to_string(),
                simple_value: Some(v as f32),
            })
            .collect();
        if value.is_empty() {
            return Ok(());
        }
        self.write_event(&Event {
            wall_time: unix_time(),
            step: i64::try_from(step).unwrap_or(i64::MAX),
            file_version: None,
            summary: Some(Summary { value }),
        })
    }

    /// Hands every event written so far to the OS, so TensorBoard sees it.
    pub fn flush(&mut self) -> Result<()> {
        self.file
            .flush()
            .map_err(|e| Error::io(format!("writing {}", self.path.display()), e))
    }

    /// The event file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn write_event(&mut self, event: &Event) -> Result<()> {
        let data = event.encode_to_vec();
        let length = (data.len() as u64).to_le_bytes();
        let mut frame = Vec::with_capacity(data.len() + 16);
        frame.extend_from_slice(&length);
        frame.extend_from_slice(&masked_crc(&length).to_le_bytes());
        frame.extend_from_slice(&data);
        frame.extend_from_slice(&masked_crc(&data).to_le_bytes());
        self.file
            .write_all(&frame)
            .map_err(|e| Error::io(format!("writing {}", self.path.display()), e))
    }
}

fn unix_time() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masked_crc_is_tfrecords() {
        // CRC-32C of "123456789" is 0xE3069283 (its check value); rotated
        // right by 15 it is 0x2507C60D, plus 0xa282ead8 0xC78AB0E5 (by hand).
        assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(masked_crc(b"123456789"), 0xc78a_b0e5);
    }

    #[test]
    fn events_are_framed_records_that_decode_back() {
        let dir = std::env::temp_dir().join(format!("shoal-tb-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut writer = EventWriter::create(&dir).unwrap();
        writer
            .scalars(1000, [("charts/episodic_return", 12.5), ("bad", f64::NAN)])
            .unwrap();
        writer.scalars(2000, []).unwrap();
        writer.flush().unwrap();
        let bytes = std::fs::read(writer.path()).unwrap();
        let mut events = Vec::new();
        let mut rest = &bytes[..];
        while !rest.is_empty() {
            let length = u64::from_le_bytes(rest[..8].try_into().unwrap()) as usize;
            assert_eq!(
                u32::from_le_bytes(rest[8..12].try_into().unwrap()),
                masked_crc(&rest[..8])
            );
            let data = &rest[12..12 + length];
            let crc = u32::from_le_bytes(rest[12 + length..16 + length].try_into().unwrap());
            assert_eq!(crc, masked_crc(data));
            events.push(Event::decode(data).unwrap());
            rest = &rest[16 + length..];
        }
        assert_eq!(events.len(), 2, "the version, then one event with scalars");
        assert_eq!(events[0].file_version.as_deref(), Some("brain.Event:2"));
        let summary = events[1].summary.as_ref().unwrap();
        assert_eq!(events[1].step, 1000);
        assert_eq!(summary.value.len(), 1, "NaN is left out");
        assert_eq!(summary.value[0].tag, "charts/episodic_return");
        assert_eq!(summary.value[0].simple_value, Some(12.5));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
