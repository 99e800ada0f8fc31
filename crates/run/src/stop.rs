//! The clean stop: SIGINT and SIGTERM (Ctrl-C, or what Slurm sends before a
//! job's time limit) raise a [`StopFlag`]; the loops finish the episode or
//! iteration they are in, checkpoint and return
//! [`Error::Interrupted`](shoal_rl_core::Error::Interrupted). A second signal
//! exits at once, and a watchdog exits once the grace period
//! (`train.stop_grace_s`) has passed without a clean stop.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use shoal_rl_core::{Error, Result, StopFlag};

use crate::spec::{RunOptions, RunSpec};

/// Exit status after a signal the run could not stop cleanly for (a second
/// signal, or the grace period over): 128 + SIGINT, as shells report.
pub const INTERRUPTED_EXIT: i32 = 130;

/// The process's one set of handlers: signals are process-wide, so every
/// run in the process shares the flag they raise.
struct Handlers {
    flag: Arc<AtomicBool>,
    /// Grace period of the run in progress, in milliseconds; 0: no run is
    /// stopping under the watchdog.
    grace_ms: Arc<AtomicU64>,
}

static HANDLERS: OnceLock<std::result::Result<Handlers, String>> = OnceLock::new();

fn handlers() -> Result<&'static Handlers> {
    HANDLERS
        .get_or_init(|| {
            let flag = Arc::new(AtomicBool::new(false));
            let install = || -> std::io::Result<()> {
                for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
                    // Registered first, so it sees the flag as the earlier
                    // signal left it: a second signal exits at once.
                    signal_hook::flag::register_conditional_shutdown(
                        signal,
                        INTERRUPTED_EXIT,
                        Arc::clone(&flag),
                    )?;
                    signal_hook::flag::register(signal, Arc::clone(&flag))?;
                }
                Ok(())
            };
            install().map_err(|e| format!("installing the SIGINT/SIGTERM handlers: {e}"))?;
            let grace_ms = Arc::new(AtomicU64::new(0));
            spawn_watchdog(Arc::clone(&flag), Arc::clone(&grace_ms));
            Ok(Handlers { flag, grace_ms })
        })
        .as_ref()
        .map_err(|e| Error::Config(e.clone()))
}

/// Exits the process when a stop was requested and the run in progress has
/// not stopped within its grace period.
fn spawn_watchdog(flag: Arc<AtomicBool>, grace_ms: Arc<AtomicU64>) {
    std::thread::Builder::new()
        .name("shoal-stop-watchdog".into())
        .spawn(move || {
            let mut since: Option<Instant> = None;
            loop {
                std::thread::sleep(Duration::from_millis(50));
                let grace = grace_ms.load(Ordering::SeqCst);
                if !flag.load(Ordering::SeqCst) || grace == 0 {
                    since = None;
                    continue;
                }
                let start = *since.get_or_insert_with(Instant::now);
                if start.elapsed() >= Duration::from_millis(grace) {
                    eprintln!(
                        "error: interrupted: the episode in progress did not end within \
                         train.stop_grace_s = {} s; exiting without a new checkpoint (the last \
                         one resumes)",
                        grace as f64 / 1000.0
                    );
                    std::process::exit(INTERRUPTED_EXIT);
                }
            }
        })
        .expect("spawning the stop watchdog");
}

/// A flag SIGINT and SIGTERM raise, for a program that stops cleanly by
/// itself (as `shoal sweep` does: it stops starting runs and waits for the
/// ones in progress). The handlers are the runs' own: a second signal ends
/// the process at once with [`INTERRUPTED_EXIT`].
pub fn stop_on_signals() -> Result<StopFlag> {
    let handlers = handlers()?;
    Ok(StopFlag::from_shared(Arc::clone(&handlers.flag)))
}

/// While alive, SIGINT and SIGTERM stop the run that holds it within
/// `grace`; dropped when the run ends.
pub(crate) struct StopGuard {
    flag: StopFlag,
    grace_ms: Option<Arc<AtomicU64>>,
}

impl StopGuard {
    /// Installs the handlers (once per process) and arms the watchdog with
    /// `grace`; a request left over from an earlier run is cleared.
    pub(crate) fn on_signals(grace: Duration) -> Result<Self> {
        let handlers = handlers()?;
        handlers.flag.store(false, Ordering::SeqCst);
        let millis = u64::try_from(grace.as_millis()).unwrap_or(u64::MAX).max(1);
        handlers.grace_ms.store(millis, Ordering::SeqCst);
        Ok(StopGuard {
            flag: StopFlag::from_shared(Arc::clone(&handlers.flag)),
            grace_ms: Some(Arc::clone(&handlers.grace_ms)),
        })
    }

    /// A flag no signal raises (the caller handles signals itself).
    pub(crate) fn manual(flag: StopFlag) -> Self {
        StopGuard {
            flag,
            grace_ms: None,
        }
    }

    pub(crate) fn flag(&self) -> &StopFlag {
        &self.flag
    }
}

impl Drop for StopGuard {
    fn drop(&mut self) {
        if let Some(grace) = &self.grace_ms {
            grace.store(0, Ordering::SeqCst);
        }
    }
}

/// The stop source of a run: the caller's flag, or SIGINT/SIGTERM.
pub(crate) fn stop_guard(spec: &RunSpec, options: &RunOptions) -> Result<StopGuard> {
    let grace = spec.train.stop_grace()?;
    match &options.stop {
        Some(flag) => Ok(StopGuard::manual(flag.clone())),
        None => StopGuard::on_signals(grace),
    }
}
