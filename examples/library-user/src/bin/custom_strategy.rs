//! A parallel strategy written outside shoal-rl-parallel, against its public
//! API only, that runs like a built-in: **local SGD** (periodic parameter
//! averaging, the "FedAvg" scheme). Every worker trains its own copy for a
//! few episodes, then the parameters of all workers are averaged with one
//! all-reduce and every worker continues from the average.
//!
//! With `--sync-every K` the workers average only every K iterations and
//! learn alone in between, each with its own optimiser; a checkpoint taken
//! between syncs holds every worker's own state, so a resume from it (or
//! from a Ctrl-C) continues exactly.
//!
//! The strategy implements the three required methods of
//! [`Strategy`](shoal_rl_parallel::Strategy); registered by name beside
//! shoal's own ([`StrategyRegistry`]), it trains through
//! [`Registries::run`] as `shoal train` trains its built-ins, with
//! everything they get: a locked run directory, `metrics.jsonl`,
//! checkpoints with every worker's replay memory, `--resume`, the final
//! evaluation and `summary.json`, on threads, processes or MPI. The
//! program takes `shoal train`'s flags ([`TrainArgs`]).
//!
//! ```text
//! cargo run --release --bin custom_strategy -- --workers 2 --out runs/local-sgd
//! cargo run --release --bin custom_strategy -- --backend processes --workers 2 --out runs/p
//! cargo run --release --bin custom_strategy -- --resume runs/local-sgd --set train.episodes=1600
//! shoal plot runs/local-sgd && shoal eval runs/local-sgd
//! ```
//!
//! Without a preset it trains REINFORCE on the point-reaching toy task
//! (`toy-reinforce`); any preset whose learner averages gradients works.

use clap::Parser;
use shoal_library_user::{LocalSgd, NAME};
use shoal_rl_train::Registries;
use shoal_rl_train::args::TrainArgs;
use shoal_rl_train::strategies::{StrategyEntry, StrategyRegistry};

/// The same flags as `shoal train`.
#[derive(Parser)]
#[command(about = "Train with local SGD, a strategy defined outside shoal")]
struct Cli {
    #[command(flatten)]
    train: TrainArgs,
    /// Average the workers every K iterations (1: every iteration).
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    sync_every: u64,
}

fn main() {
    // Batches of megabyte tensors: keep freed memory for reuse, as `shoal` does.
    shoal_rl_core::allocator::keep_freed_memory_for_reuse();
    let cli = Cli::parse();
    let (mut args, sync_every) = (cli.train, cli.sync_every);
    if args.resume.is_none() {
        args.source.get_or_insert_with(|| "toy-reinforce".into());
        args.settings
            .overrides
            .push(format!("parallel.strategy=\"{NAME}\""));
    }
    // Local SGD beside shoal's strategies: any config that names it trains
    // with it, a resumed one included.
    let strategies = StrategyRegistry::builtin().with(StrategyEntry::new(
        NAME,
        "local SGD: workers learn alone and average every K iterations",
        move |run| run.run_strategy(|setup| Ok(LocalSgd::new(setup.schedule(), sync_every))),
    ));
    let registries = Registries::default().strategies(strategies);
    let outcome = args
        .resolve_in(&registries)
        .and_then(|cfg| registries.run(&args.plan(cfg)));
    match outcome {
        Ok(Some((run_dir, summary))) => {
            println!(
                "{}",
                serde_json::to_string_pretty(&summary).expect("summary is JSON")
            );
            eprintln!("run directory: {}", run_dir.display());
        }
        Ok(None) => {} // a worker process or MPI rank > 0: rank 0 reports
        Err(error) => {
            eprintln!("error: {error}");
            std::process::exit(shoal_library_user::exit_code(&error));
        }
    }
}
