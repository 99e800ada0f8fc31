//! Runs the communicator check, all three strategies and the pool of
//! averaging groups (with the toy learner) on one backend, and checks that
//! the strategies give the same results as on threads. This is how the MPI
//! backend is tested:
//!
//! ```text
//! cargo build -p shoal-rl-parallel --features mpi --example comm_suite
//! mpirun -n 2 --oversubscribe --allow-run-as-root target/debug/examples/comm_suite mpi 2
//! cargo run -p shoal-rl-parallel --example comm_suite -- processes 3
//! ```
//!
//! Prints one line per check on rank 0 and exits non-zero if any fails.
//!
//! `comm_suite <backend> <workers> fail-rank R` instead makes rank R's
//! learner fail during the pool: the run must end with an error (under
//! `mpirun`, rank R aborts the job) and a non-zero exit, never a hang.

use shoal_rl_core::{Error, Result};
use shoal_rl_parallel::testing::{Quadratic, check_communicator};
use shoal_rl_parallel::{
    AveragingConfig, Backend, Communicator, Control, GatherConfig, GradientAveraging, GroupPool,
    IterationRecord, Pool, PoolConfig, RolloutGather, Schedule, Strategy, launch, run_threads,
};

const SEED: u64 = 3;

/// Rank 0's records and final parameters for one strategy.
type Digest = (Vec<IterationRecord>, Vec<f32>);

fn main() {
    let mut args = std::env::args().skip(1);
    let backend = args.next().unwrap_or_else(|| "threads".into());
    let workers = args.next().unwrap_or_else(|| "2".into());
    let failing = match (args.next().as_deref(), args.next()) {
        (Some("fail-rank"), Some(rank)) => Some(rank),
        (None, None) => None,
        _ => {
            eprintln!("usage: comm_suite <backend> <workers> [fail-rank R]");
            std::process::exit(2);
        }
    };
    if let Some(rank) = failing {
        let result = fail_rank(&backend, &workers, &rank);
        eprintln!("error: {}", result.unwrap_err());
        std::process::exit(1);
    }
    if let Err(error) = run(&backend, &workers) {
        eprintln!("error: {error}");
        std::process::exit(1);
    }
}

fn run(backend: &str, workers: &str) -> Result<()> {
    let backend: Backend = backend.parse()?;
    let workers: usize = workers
        .parse()
        .map_err(|_| Error::Config(format!("worker count must be a number, got {workers:?}")))?;
    let Some(digests) = launch(backend, workers, everything)? else {
        return Ok(()); // not rank 0
    };
    println!("communicator check: ok on {workers} ranks ({backend})");
    let reference = run_threads(workers, everything)?.swap_remove(0);
    let mut all_match = true;
    for ((name, digest), (_, expected)) in digests.iter().zip(&reference) {
        let (records, params) = digest;
        let matches = digest == expected;
        all_match &= matches;
        let last = records
            .last()
            .and_then(|r| r.train_return_mean)
            .unwrap_or(f64::NAN);
        println!(
            "{name}: {} iterations, last train return {last:.4}, parameters {params:?}, {} threads",
            records.len(),
            if matches {
                "identical to"
            } else {
                "DIFFERENT FROM"
            }
        );
    }
    if all_match {
        Ok(())
    } else {
        Err(Error::Comm(format!("{backend} and threads disagree")))
    }
}

/// Runs the pool with rank `rank`'s learner failing after two episodes;
/// returns the error (an `Ok` is itself an error: the failure went unseen).
fn fail_rank(backend: &str, workers: &str, rank: &str) -> Result<()> {
    let backend: Backend = backend.parse()?;
    let (Ok(workers), Ok(failing)) = (workers.parse::<usize>(), rank.parse::<usize>()) else {
        return Err(Error::Config(
            "worker count and rank must be numbers".into(),
        ));
    };
    let outcome = launch(backend, workers, |comm: &dyn Communicator| {
        let mut learner = Quadratic::new(SEED, comm.rank());
        if comm.rank() == failing {
            learner.fail_after = Some(2);
        }
        let pool = PoolConfig::new(Schedule::default().iterations(6).episodes_per_iteration(4));
        digest(comm, &mut Pool::new(pool), learner)
    });
    match outcome {
        Ok(_) => Err(Error::Comm(format!(
            "rank {failing} failed but the run ended without an error"
        ))),
        Err(error) => Err(error),
    }
}

/// The body every rank runs: the communicator check, then each strategy.
fn everything(comm: &dyn Communicator) -> Result<Vec<(String, Digest)>> {
    check_communicator(comm)?;
    let pool = PoolConfig::new(
        Schedule::default()
            .iterations(6)
            .episodes_per_iteration(4)
            .eval_interval(3),
    )
    .selection_episodes(3);
    let gather = GatherConfig::new(
        Schedule::default()
            .iterations(6)
            .episodes_per_iteration(2)
            .eval_interval(3),
    );
    let averaging = AveragingConfig::new(
        Schedule::default()
            .iterations(6)
            .episodes_per_iteration(2)
            .eval_interval(3),
    );
    let mut same_rate = Quadratic::new(SEED, comm.rank());
    same_rate.learning_rate = 0.05;
    // Pairs where the ranks pair up, else one group of every rank.
    let group_size = if comm.size().is_multiple_of(2) {
        2
    } else {
        comm.size()
    };
    Ok(vec![
        (
            "pool".into(),
            digest(
                comm,
                &mut Pool::new(pool.clone()),
                Quadratic::new(SEED, comm.rank()),
            )?,
        ),
        (
            "gather".into(),
            digest(
                comm,
                &mut RolloutGather::new(gather),
                Quadratic::new(SEED, comm.rank()),
            )?,
        ),
        (
            "averaging".into(),
            digest(
                comm,
                &mut GradientAveraging::new(averaging),
                same_rate.clone(),
            )?,
        ),
        (
            format!("pool of groups of {group_size}"),
            digest(comm, &mut GroupPool::new(pool, group_size), same_rate)?,
        ),
    ])
}

/// Runs `strategy` and checks that every rank ends with the same parameters.
fn digest<S: Strategy<Quadratic>>(
    comm: &dyn Communicator,
    strategy: &mut S,
    mut learner: Quadratic,
) -> Result<Digest> {
    let mut records = Vec::new();
    strategy.run(
        comm,
        &mut learner,
        &mut |record: &IterationRecord, _: &Quadratic| {
            records.push(record.clone());
            Ok(Control::Continue)
        },
    )?;
    let bytes: Vec<u8> = learner
        .params
        .iter()
        .flat_map(|p| p.to_le_bytes())
        .collect();
    if let Some(all) = comm.gather_bytes(&bytes, 0)?
        && let Some(rank) = all.iter().position(|b| *b != bytes)
    {
        return Err(Error::Comm(format!(
            "{}: rank {rank} ended with other parameters than rank 0",
            strategy.name()
        )));
    }
    Ok((records, learner.params))
}
