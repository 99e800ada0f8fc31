//! The `shoal` command line: train, evaluate, plot and benchmark.

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};
use shoal_rl::bench;
use shoal_rl::cli::{self, Cli, Command};

fn main() -> ExitCode {
    // Before any thread starts; see the function's note for the numbers.
    shoal_rl::allocator::keep_freed_memory_for_reuse();
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
        Command::Eval {
            run_dir,
            episodes,
            checkpoint,
            seed,
        } => cli::eval(&run_dir, episodes, &checkpoint, seed),
        Command::Plot { run_dirs, out } => cli::plot(&run_dirs, out.as_deref()),
        Command::Render {
            run_dir,
            episodes,
            checkpoint,
            out,
        } => shoal_rl::render::render(&run_dir, episodes, &checkpoint, out.as_deref()),
        Command::Compare { run_dirs, markdown } => shoal_rl::render::compare(&run_dirs, markdown),
        Command::Sweep(args) => shoal_rl::sweep::sweep(&args),
        Command::Scale(args) => shoal_rl::scale::scale(&args),
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
                shoal_rl::core::Error::Interrupted(_) => {
                    ExitCode::from(shoal_rl::run::INTERRUPTED_EXIT as u8)
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
