//! A cooperative stop request: set by a signal handler (or by hand), read
//! by training loops at the points where they can stop cleanly.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A shared "please stop" flag. Clones share one flag: whoever holds a
/// clone can [`request`](StopFlag::request) a stop, and the loops that
/// were handed one finish the episode or iteration they are in, then stop.
///
/// ```
/// use shoal_rl_core::StopFlag;
///
/// let flag = StopFlag::new();
/// let seen_by_the_loop = flag.clone();
/// assert!(!seen_by_the_loop.is_requested());
/// flag.request();
/// assert!(seen_by_the_loop.is_requested());
/// ```
#[derive(Clone, Debug, Default)]
pub struct StopFlag(Arc<AtomicBool>);

impl StopFlag {
    /// A flag no one has raised yet.
    pub fn new() -> Self {
        StopFlag::default()
    }

    /// The flag behind an `Arc<AtomicBool>` that something else sets, such
    /// as a signal handler registered with `signal-hook`.
    pub fn from_shared(flag: Arc<AtomicBool>) -> Self {
        StopFlag(flag)
    }

    /// Asks every holder to stop at its next clean point.
    pub fn request(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Withdraws the request (a new run in the same process starts clear).
    pub fn clear(&self) {
        self.0.store(false, Ordering::SeqCst);
    }

    /// Whether a stop was requested.
    pub fn is_requested(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// Two flags are equal when they are in the same state (`Resume` and other
/// plain-data holders compare by value).
impl PartialEq for StopFlag {
    fn eq(&self, other: &Self) -> bool {
        self.is_requested() == other.is_requested()
    }
}

impl Eq for StopFlag {}
