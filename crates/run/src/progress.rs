//! Training progress on stderr: an indicatif bar on a terminal; off a
//! terminal (logs, Slurm) one status line as soon as the first episodes end,
//! then one every `RunOptions::status_every`.

use std::collections::VecDeque;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// How many of the latest training episodes a status line averages over.
pub const STATUS_WINDOW: usize = 20;

/// The default time between two status lines off a terminal.
pub const DEFAULT_STATUS_EVERY: Duration = Duration::from_secs(10);

/// Reports training progress on stderr.
pub struct ProgressReporter {
    bar: Option<ProgressBar>,
    quiet: bool,
    /// Episode budget, and the env-step budget if the run has one (the bar
    /// then counts env steps).
    episode_budget: u64,
    step_budget: Option<u64>,
    /// When the last status line was written; `None` before the first.
    last_line: Option<Instant>,
    every: Duration,
    /// The clock and env steps at the start of this process's part of the
    /// run, for steps/s.
    started: Instant,
    steps_at_start: u64,
    /// Return and success (1 or 0; goal tasks) of the latest training
    /// episodes, or mean return and success rate of the latest iterations.
    recent: VecDeque<(f64, Option<f64>)>,
    /// Whether `recent` holds iterations.
    per_iteration: bool,
}

impl ProgressReporter {
    /// Reports nothing at all if `quiet` (non-zero MPI ranks, worker
    /// processes); otherwise a bar if stderr is a terminal, status lines at
    /// most every `every` if it is not.
    pub fn new(quiet: bool, every: Duration) -> Self {
        ProgressReporter {
            bar: None,
            quiet,
            episode_budget: 0,
            step_budget: None,
            last_line: None,
            every,
            started: Instant::now(),
            steps_at_start: 0,
            recent: VecDeque::with_capacity(STATUS_WINDOW),
            per_iteration: false,
        }
    }

    /// Begins a run of `episode_budget` episodes (and `step_budget` env
    /// steps, if set), of which `episodes` and `env_steps` are already done.
    pub fn start(
        &mut self,
        episode_budget: u64,
        step_budget: Option<u64>,
        episodes: u64,
        env_steps: u64,
    ) {
        self.episode_budget = episode_budget;
        self.step_budget = step_budget;
        self.started = Instant::now();
        self.steps_at_start = env_steps;
        if self.quiet || !std::io::stderr().is_terminal() {
            return;
        }
        let (total, done, unit) = match step_budget {
            Some(steps) => (steps, env_steps, "env steps"),
            None => (episode_budget, episodes, "episodes"),
        };
        let bar = ProgressBar::new(total).with_position(done.min(total));
        bar.set_style(
            ProgressStyle::with_template(&format!(
                "{{elapsed_precise}} [{{wide_bar}}] {{pos}}/{{len}} {unit} ({{eta}} left) {{msg}}"
            ))
            .expect("valid template")
            .progress_chars("=> "),
        );
        self.bar = Some(bar);
    }

    /// Training episodes that just ended: their returns and, on goal tasks,
    /// their successes (empty otherwise).
    pub fn episodes_ended(&mut self, returns: &[f64], successes: &[bool]) {
        for (i, ret) in returns.iter().enumerate() {
            let success = successes.get(i).map(|s| f64::from(u8::from(*s)));
            self.remember(*ret, success);
        }
    }

    /// A strategy's iteration that just ended: the mean return and success
    /// rate of its training episodes.
    pub fn iteration_ended(&mut self, return_mean: f64, success_rate: Option<f64>) {
        self.per_iteration = true;
        self.remember(return_mean, success_rate);
    }

    fn remember(&mut self, ret: f64, success: Option<f64>) {
        if self.recent.len() == STATUS_WINDOW {
            self.recent.pop_front();
        }
        self.recent.push_back((ret, success));
    }

    /// The run's counters now: moves the bar, or writes a status line when
    /// the first episodes have ended or `every` has passed since the last.
    pub fn advance(&mut self, episodes: u64, env_steps: u64) {
        if self.quiet {
            return;
        }
        let stats = self.stats(env_steps);
        if let Some(bar) = &self.bar {
            bar.set_position(match self.step_budget {
                Some(_) => env_steps,
                None => episodes,
            });
            bar.set_message(stats);
            return;
        }
        let due = self.last_line.is_none_or(|at| at.elapsed() >= self.every);
        if due && !self.recent.is_empty() {
            eprintln!("{}", self.status_line(episodes, env_steps, &stats));
            self.last_line = Some(Instant::now());
        }
    }

    /// The counters of a status line, each against its budget where the
    /// run has one: a run of env steps counts episodes without a budget
    /// (its episode budget only keeps it from ending first).
    fn status_line(&self, episodes: u64, env_steps: u64, stats: &str) -> String {
        match self.step_budget {
            Some(budget) => {
                format!("episodes {episodes} | env steps {env_steps}/{budget} | {stats}")
            }
            None => format!(
                "episodes {episodes}/{} | env steps {env_steps} | {stats}",
                self.episode_budget
            ),
        }
    }

    /// "return R, success S (last N), K steps/s".
    fn stats(&self, env_steps: u64) -> String {
        let mut parts = Vec::new();
        if !self.recent.is_empty() {
            let n = self.recent.len() as f64;
            let mean = self.recent.iter().map(|(r, _)| r).sum::<f64>() / n;
            let mut text = format!("return {mean:.2}");
            let successes: Vec<f64> = self.recent.iter().filter_map(|(_, s)| *s).collect();
            if !successes.is_empty() {
                let rate = successes.iter().sum::<f64>() / successes.len() as f64;
                text.push_str(&format!(", success {rate:.2}"));
            }
            let unit = if self.per_iteration {
                " iterations"
            } else {
                ""
            };
            parts.push(format!("{text} (last {}{unit})", self.recent.len()));
        }
        let seconds = self.started.elapsed().as_secs_f64();
        if seconds > 0.0 {
            let rate = env_steps.saturating_sub(self.steps_at_start) as f64 / seconds;
            parts.push(format!("{rate:.0} steps/s"));
        }
        parts.join(" | ")
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_averages_the_last_twenty_episodes_and_their_successes() {
        let mut progress = ProgressReporter::new(true, DEFAULT_STATUS_EVERY);
        let returns: Vec<f64> = (0..30).map(f64::from).collect();
        let successes: Vec<bool> = (0..30).map(|i| i >= 25).collect();
        progress.episodes_ended(&returns, &successes);
        // Episodes 10..30: mean return 19.5; 5 of 20 succeeded.
        let stats = progress.stats(0);
        assert!(
            stats.starts_with("return 19.50, success 0.25 (last 20)"),
            "{stats}"
        );
        let mut plain = ProgressReporter::new(true, DEFAULT_STATUS_EVERY);
        plain.episodes_ended(&[1.0, 2.0], &[]);
        assert!(plain.stats(0).starts_with("return 1.50 (last 2)"));
        let mut pool = ProgressReporter::new(true, DEFAULT_STATUS_EVERY);
        pool.iteration_ended(3.0, Some(0.5));
        pool.iteration_ended(5.0, Some(1.0));
        let stats = pool.stats(0);
        assert!(
            stats.starts_with("return 4.00, success 0.75 (last 2 iterations)"),
            "{stats}"
        );
    }

    #[test]
    fn a_status_line_counts_against_the_budget_the_run_has() {
        let mut progress = ProgressReporter::new(true, DEFAULT_STATUS_EVERY);
        progress.start(200, None, 0, 0);
        assert_eq!(
            progress.status_line(2, 100, "return 1.00"),
            "episodes 2/200 | env steps 100 | return 1.00"
        );
        // `--steps 1000000` sets the episode budget to the step count too.
        progress.start(1_000_000, Some(1_000_000), 0, 0);
        assert_eq!(
            progress.status_line(2, 2_000, "return 1.00"),
            "episodes 2 | env steps 2000/1000000 | return 1.00"
        );
    }
}
