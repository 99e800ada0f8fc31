//! Projecting a parallel run onto one core per worker, from the profiles
//! its iteration lines carry (`parallel.profile`: `time/compute_cpu_s`,
//! `time/all_reduces`, …).
//!
//! Runs are bit-identical whatever the backend and the load, so N workers
//! oversubscribed on a few cores learn exactly as N workers on N cores
//! would. Their wall times are not what N cores give: the time of an
//! iteration on N cores is the slowest worker's compute plus its
//! collectives, each at the latency of an all-reduce of its size measured
//! for N workers (affine in the size: `L_N(v) = L_N(1) + (v − 1) · s_N`):
//!
//! ```text
//! T_N = Σ_iterations [ max_w compute_w + Σ_collectives L_N(values carried) ]
//! ```
//!
//! An all-reduce moves about twice what a broadcast or gather of the same
//! size does, so other collectives are charged as upper bounds.

use serde::Serialize;
use serde_json::Value;

/// What one iteration cost, from its record.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IterationCost {
    /// Training episodes after it, all workers.
    pub episodes: u64,
    /// The slowest worker's CPU time outside collectives, in seconds.
    pub compute_s: f64,
    /// All-reduce calls of each worker.
    pub all_reduces: u64,
    /// Values those calls summed, per worker.
    pub all_reduce_values: u64,
    /// Other collectives of each worker.
    pub other_collectives: u64,
    /// Bytes they carried.
    pub other_bytes: u64,
}

/// The all-reduce latency for one worker count, affine in the values
/// carried: `fixed_s + (values − 1) · per_value_s`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Latency {
    /// One all-reduce of a single value, in seconds.
    pub fixed_s: f64,
    /// Each further value, in seconds.
    pub per_value_s: f64,
}

impl Latency {
    /// Fitted through an all-reduce of one value (`single_s`) and one of
    /// `values` values (`many_s`).
    pub fn fit(single_s: f64, values: u64, many_s: f64) -> Self {
        let per_value_s = if values > 1 {
            ((many_s - single_s) / (values - 1) as f64).max(0.0)
        } else {
            0.0
        };
        Latency {
            fixed_s: single_s,
            per_value_s,
        }
    }

    /// `calls` collectives carrying `values` values in all.
    pub fn cost(&self, calls: u64, values: f64) -> f64 {
        calls as f64 * self.fixed_s + (values - calls as f64).max(0.0) * self.per_value_s
    }
}

/// The projected wall time of `iterations` on one core per worker: in all,
/// and up to the end of the iteration after which the run had trained
/// `episodes_to_target` episodes (`None` if never).
pub fn project(
    iterations: &[IterationCost],
    latency: Latency,
    episodes_to_target: Option<u64>,
) -> (f64, Option<f64>) {
    let mut total = 0.0;
    let mut to_target = None;
    for it in iterations {
        total += it.compute_s
            + latency.cost(it.all_reduces, it.all_reduce_values as f64)
            + latency.cost(it.other_collectives, it.other_bytes as f64 / 4.0);
        if to_target.is_none() && episodes_to_target.is_some_and(|e| it.episodes >= e) {
            to_target = Some(total);
        }
    }
    (total, to_target)
}

/// The cost of an iteration record written with `parallel.profile`, or
/// `None` for a record without a profile.
pub fn iteration_cost(record: &Value) -> Option<IterationCost> {
    let compute = record["time/compute_cpu_s"].as_array()?;
    let compute_s = compute.iter().filter_map(Value::as_f64).fold(0.0, f64::max);
    Some(IterationCost {
        episodes: record["episode"].as_u64()?,
        compute_s,
        all_reduces: record["time/all_reduces"].as_u64()?,
        all_reduce_values: record["time/all_reduce_values"].as_u64()?,
        other_collectives: record["time/other_collectives"].as_u64()?,
        other_bytes: record["time/other_bytes"].as_u64()?,
    })
}
