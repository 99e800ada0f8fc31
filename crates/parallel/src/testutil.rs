//! Test helpers for tests that re-spawn the test binary as process workers,
//! and a guard that turns a hang into a failure.

use std::sync::mpsc;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use shoal_core::Result;

pub use crate::testing::Quadratic;
use crate::{Communicator, ProcessConfig, run_processes};

/// The `--exact` name of a test from its full path (`shoal_parallel::a::tests::b`).
pub fn exact_name(full_path: &str) -> &str {
    full_path
        .split_once("::")
        .map_or(full_path, |(_, rest)| rest)
}

/// Worker arguments that make a re-spawned test binary run only `test`.
pub fn worker_config(full_path: &str) -> ProcessConfig {
    ProcessConfig::default()
        .args([
            "--exact",
            exact_name(full_path),
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .exit_grace(Duration::from_secs(10))
}

/// The full path of a test function, for [`worker_config`].
macro_rules! test_path {
    ($name:ident) => {
        concat!(module_path!(), "::", stringify!($name))
    };
}
pub(crate) use test_path;

/// Runs `body` on `workers` processes of this test binary. `Some(results)` on
/// rank 0; `None` in a worker, where the test should return at once.
pub fn on_processes<T, F>(test: &str, workers: usize, body: F) -> Result<Option<Vec<T>>>
where
    T: Serialize + DeserializeOwned,
    F: Fn(&dyn Communicator) -> Result<T>,
{
    run_processes(workers, &worker_config(test), body)
}

/// Runs `f` on its own thread and fails the test if it takes longer than
/// `limit`: the guard that turns a hang into a failure.
pub fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(f());
    });
    receiver
        .recv_timeout(limit)
        .unwrap_or_else(|_| panic!("did not finish within {limit:?} (hung or panicked)"))
}
