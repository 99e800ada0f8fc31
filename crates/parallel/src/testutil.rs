//! Test helpers for tests that re-spawn the test binary as process workers,
//! a guard that turns a hang into a failure, and a counting allocator that
//! bounds what a call allocates.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::mpsc;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use shoal_rl_core::Result;

pub use crate::testing::Quadratic;
use crate::{Communicator, ProcessConfig, run_processes};

/// The `--exact` name of a test from its full path (`shoal_rl_parallel::a::tests::b`).
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

/// The test binary's allocator: the system one, counting what each thread
/// has live so a test can bound what a call allocates ([`peak_allocation`]).
#[global_allocator]
static COUNTING: Counting = Counting;

struct Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn count(delta: isize) {
    // `try_with`: the allocator also runs while a thread's locals are torn down.
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// SAFETY: every call is forwarded unchanged to the system allocator; the
// counters are plain thread-local cells that never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            count(layout.size() as isize);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as isize));
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        let moved = unsafe { System.realloc(ptr, layout, new) };
        if !moved.is_null() {
            count(new as isize - layout.size() as isize);
        }
        moved
    }
}

/// Runs `f` and returns its result with the most bytes it had allocated at
/// once on this thread (beyond what was live when it started).
pub fn peak_allocation<T>(f: impl FnOnce() -> T) -> (T, usize) {
    LIVE.with(|live| live.set(0));
    PEAK.with(|peak| peak.set(0));
    let out = f();
    (out, PEAK.with(|peak| peak.get()).max(0) as usize)
}
