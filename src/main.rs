//! The `shoal` command line: train, evaluate, plot and benchmark.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use shoal::{bench, cli};

#[derive(Parser, Debug)]
#[command(
    name = "shoal",
    version,
    about = "Composable reinforcement learning: worms, arms, and parallel training"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Train an agent from a preset or a config.toml.
    Train(cli::TrainArgs),
    /// Print the complete configuration (config.toml) that `shoal train`
    /// would run with the same preset and settings.
    Config(cli::ConfigArgs),
    /// Evaluate a run's latest checkpoint with the policy frozen; prints JSON.
    Eval {
        /// The run directory.
        run_dir: PathBuf,
        /// Evaluation episodes.
        #[arg(long, value_parser = cli::parse_count, default_value_t = 20)]
        episodes: usize,
    },
    /// Write PNG learning curves of one or more runs.
    Plot {
        /// Run directories (several are overlaid on one figure).
        #[arg(required = true)]
        run_dirs: Vec<PathBuf>,
        /// Output directory (default: the first run's plots/).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Measure environment steps per second on one core; prints JSON.
    BenchEnv {
        /// The env to measure (the names are filled in from the bench table).
        env: String,
        /// Control steps to time.
        #[arg(long, default_value_t = 200_000)]
        steps: u64,
    },
    /// Render rollouts of a run's frozen policy to an animated GIF (+ PNG of the last frame).
    Render {
        /// The run directory.
        run_dir: PathBuf,
        /// Episodes to render.
        #[arg(long, value_parser = cli::parse_count, default_value_t = 1)]
        episodes: usize,
        /// Output GIF (default: <run-dir>/render.gif).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Train a grid of settings × seeds (resumable); prints medians and
    /// ranges per setting.
    Sweep(shoal::sweep::SweepArgs),
    /// Project a sweep over parallel.workers of profiled runs onto one
    /// core per worker: time to target, speedup, efficiency; writes
    /// scale.json and scale.png into the directory.
    Scale(shoal::scale::ScaleArgs),
    /// Print the summaries of several runs side by side.
    Compare {
        /// Run directories.
        #[arg(required = true)]
        run_dirs: Vec<PathBuf>,
        /// Markdown table instead of aligned columns.
        #[arg(long)]
        markdown: bool,
    },
    /// Measure all-reduce latency (100k floats and the actor-critic's
    /// parameter count) and rollout throughput per backend with 1, 2, 4, …
    /// workers; prints JSON lines.
    BenchParallel {
        /// Measure only this backend (with --workers).
        #[arg(long)]
        backend: Option<String>,
        /// Measure only this worker count (with --backend).
        #[arg(long)]
        workers: Option<usize>,
        /// Worm episodes each worker collects.
        #[arg(long, default_value_t = 4)]
        episodes: usize,
        /// Without --backend: measure 1, 2, 4, … workers up to this many.
        #[arg(long, default_value_t = 2)]
        up_to: usize,
        /// With --backend and --workers: only the latency of an all-reduce
        /// of this many floats, and of one float.
        #[arg(long)]
        values: Option<usize>,
    },
}

fn main() -> ExitCode {
    // Before any thread starts; see the function's note for the numbers.
    shoal::allocator::keep_freed_memory_for_reuse();
    end_quietly_on_a_closed_pipe();
    let help = cli::train_help();
    let envs = format!("The env to measure: {}", bench::bench_env_names());
    let command = Cli::command()
        .mut_subcommand("train", |c| c.after_long_help(help))
        .mut_subcommand("bench-env", |c| c.mut_arg("env", |a| a.help(envs)));
    let matches = command.get_matches();
    let parsed = match Cli::from_arg_matches(&matches) {
        Ok(parsed) => parsed,
        Err(e) => e.exit(),
    };
    let outcome = match parsed.command {
        Command::Train(args) => cli::train(args),
        Command::Config(args) => cli::config(&args),
        Command::Eval { run_dir, episodes } => cli::eval(&run_dir, episodes),
        Command::Plot { run_dirs, out } => cli::plot(&run_dirs, out.as_deref()),
        Command::Render {
            run_dir,
            episodes,
            out,
        } => shoal::render::render(&run_dir, episodes, out.as_deref()),
        Command::Compare { run_dirs, markdown } => shoal::render::compare(&run_dirs, markdown),
        Command::Sweep(args) => shoal::sweep::sweep(&args),
        Command::Scale(args) => shoal::scale::scale(&args),
        Command::BenchEnv { env, steps } => bench::bench_env(&env, steps),
        Command::BenchParallel {
            backend,
            workers,
            episodes,
            up_to,
            values,
        } => bench::bench_parallel(backend.as_deref(), workers, episodes, up_to, values),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            match e {
                shoal::core::Error::Interrupted(_) => {
                    ExitCode::from(shoal::run::INTERRUPTED_EXIT as u8)
                }
                _ => ExitCode::FAILURE,
            }
        }
    }
}

/// `shoal compare … | head` closes the pipe early; like other Unix tools,
/// end then without a word. Rust ignores SIGPIPE, which turns the next
/// `println!` into a panic; restoring the default action ends the process
/// at that write instead.
fn end_quietly_on_a_closed_pipe() {
    #[cfg(unix)]
    {
        use std::ffi::c_int;
        const SIGPIPE: c_int = 13;
        const SIG_DFL: usize = 0;
        unsafe extern "C" {
            fn signal(signum: c_int, handler: usize) -> usize;
        }
        // SAFETY: setting a signal's action to the default, once, before any
        // thread starts.
        unsafe {
            signal(SIGPIPE, SIG_DFL);
        }
    }
}
