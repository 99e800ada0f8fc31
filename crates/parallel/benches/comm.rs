//! Criterion benches of collectives on 2 ranks: all-reduce of 100k `f32` and
//! barrier latency, on the threads and processes backends.
//!
//! With `--features mpi`, running the bench binary under `mpirun -n 2`
//! benches the MPI backend instead:
//! `mpirun -n 2 --oversubscribe --allow-run-as-root target/release/deps/comm-… --bench`.
//!
//! Rank 0 runs criterion; the other rank follows commands that rank 0
//! broadcasts (how many operations of which kind), so both ranks call the
//! same collectives. Process workers re-run this binary, notice the worker
//! environment and serve instead of benchmarking.

use std::time::{Duration, Instant};

use criterion::Criterion;
use shoal_rl_core::Result;
use shoal_rl_parallel::{Backend, Communicator, is_worker_process, launch};

const RANKS: usize = 2;
const VALUES: usize = 100_000;

#[derive(Clone, Copy)]
enum Op {
    Stop = 0,
    AllReduce = 1,
    Barrier = 2,
}

fn main() {
    if is_worker_process() {
        if let Err(error) = launch(Backend::Processes, RANKS, serve_or_bench) {
            eprintln!("bench worker: {error}");
            std::process::exit(1);
        }
        return;
    }
    // Under mpirun (bench built with `--features mpi`), bench the MPI backend alone.
    let backends = if started_by_mpirun() {
        vec![Backend::Mpi]
    } else {
        vec![Backend::Threads, Backend::Processes]
    };
    for backend in backends {
        BACKEND.with(|b| b.set(backend));
        if let Err(error) = launch(backend, RANKS, serve_or_bench) {
            eprintln!("bench on {backend}: {error}");
            std::process::exit(1);
        }
    }
    if BACKEND.with(|b| b.get()) != Backend::Mpi || is_rank_zero_of_mpi() {
        Criterion::default().configure_from_args().final_summary();
    }
}

/// Rank 0 under mpirun (the only rank that reports).
fn is_rank_zero_of_mpi() -> bool {
    std::env::var("OMPI_COMM_WORLD_RANK")
        .or_else(|_| std::env::var("PMI_RANK"))
        .is_ok_and(|r| r == "0")
}

/// Whether OpenMPI's or MPICH's launcher started this process.
fn started_by_mpirun() -> bool {
    cfg!(feature = "mpi")
        && ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"]
            .iter()
            .any(|v| std::env::var_os(v).is_some())
}

thread_local! {
    static BACKEND: std::cell::Cell<Backend> = const { std::cell::Cell::new(Backend::Threads) };
}

/// Rank 0 benchmarks; the others follow.
fn serve_or_bench(comm: &dyn Communicator) -> Result<()> {
    let mut values = vec![0.0f32; VALUES];
    if !comm.is_root() {
        loop {
            let (op, count) = command(comm, Op::Stop, 0)?;
            for _ in 0..count {
                run(comm, op, &mut values)?;
            }
            if op == Op::Stop as u64 {
                return Ok(());
            }
        }
    }
    // Rank 0 runs on the calling thread in both backends, so the thread-local is visible.
    let backend = BACKEND.with(|b| b.get());
    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group(format!("comm/{backend}/{RANKS}_ranks"));
    group.measurement_time(Duration::from_secs(3));
    for (name, op) in [
        ("all_reduce_100k_f32", Op::AllReduce),
        ("barrier", Op::Barrier),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|iterations| {
                command(comm, op, iterations).expect("command");
                let start = Instant::now();
                for _ in 0..iterations {
                    run(comm, op as u64, &mut values).expect("collective");
                }
                start.elapsed()
            })
        });
    }
    group.finish();
    command(comm, Op::Stop, 0)?;
    Ok(())
}

/// Broadcasts rank 0's `(op, count)` to every rank.
fn command(comm: &dyn Communicator, op: Op, count: u64) -> Result<(u64, u64)> {
    let mut bytes = [op as u64, count].map(u64::to_le_bytes).concat();
    comm.broadcast_bytes(&mut bytes, 0)?;
    let word = |i: usize| u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
    Ok((word(0), word(1)))
}

fn run(comm: &dyn Communicator, op: u64, values: &mut [f32]) -> Result<()> {
    match op {
        1 => comm.all_reduce_sum(values),
        2 => comm.barrier(),
        _ => Ok(()),
    }
}
