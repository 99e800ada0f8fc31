//! Training progress: an indicatif bar on a terminal, plain log lines otherwise.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// Reports training progress on stderr.
pub struct ProgressReporter {
    bar: Option<ProgressBar>,
    quiet: bool,
    total: u64,
    last_line: Instant,
    /// Minimum time between plain log lines.
    every: Duration,
}

impl ProgressReporter {
    /// A bar if stderr is a terminal and `quiet` is false; plain lines if it
    /// is not; nothing at all if `quiet` (non-zero MPI ranks, worker processes).
    pub fn new(quiet: bool) -> Self {
        ProgressReporter {
            bar: None,
            quiet,
            total: 0,
            last_line: Instant::now(),
            every: Duration::from_secs(10),
        }
    }

    /// Begins a run of `total` episodes, `done` of which are already behind us.
    pub fn start(&mut self, total: u64, done: u64) {
        self.total = total;
        if self.quiet || !std::io::stderr().is_terminal() {
            return;
        }
        let bar = ProgressBar::new(total).with_position(done);
        bar.set_style(
            ProgressStyle::with_template(
                "{elapsed_precise} [{wide_bar}] {pos}/{len} episodes ({eta} left) {msg}",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        self.bar = Some(bar);
    }

    /// Episodes done so far, and the latest training return if known.
    pub fn advance(&mut self, episodes: u64, last_return: Option<f64>) {
        let msg = last_return
            .map(|r| format!("return {r:.2}"))
            .unwrap_or_default();
        match &self.bar {
            Some(bar) => {
                bar.set_position(episodes);
                bar.set_message(msg);
            }
            None if !self.quiet && self.last_line.elapsed() >= self.every => {
                eprintln!("episode {episodes}/{} {msg}", self.total);
                self.last_line = Instant::now();
            }
            None => {}
        }
    }

    /// A line that should stay visible (evaluation results).
    pub fn note(&mut self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None if !self.quiet => eprintln!("{line}"),
            None => {}
        }
    }

    /// Ends the bar.
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
