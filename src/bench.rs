//! `shoal bench-env` and `shoal bench-parallel`: throughput numbers printed
//! as JSON, so they can be pasted into notes and compared across machines.
//!
//! Timed code lives here and in criterion benches, never in tests.

use std::process::Command;
use std::time::Instant;

use serde_json::{Value, json};
use shoal_rl_core::{Error, Result, RolloutLearner, rng_from_seed};
use shoal_rl_parallel::{Backend, Communicator, launch};

use crate::config::EnvConfig;
use crate::registry::EnvRegistry;
use crate::train::{Registries, preset};

/// The envs `shoal bench-env` measures: every registered env, by its id.
pub fn bench_env_names() -> String {
    EnvRegistry::builtin().names().join(", ")
}

/// `shoal bench-env`: random actions on one core, env resets included, with
/// the env's default settings.
pub fn bench_env(name: &str, steps: u64) -> Result<()> {
    let envs = EnvRegistry::builtin();
    let entry = envs.get(name)?;
    let env_config = EnvConfig {
        kind: name.into(),
        settings: (entry.defaults)(),
    };
    let mut env = envs.make_env(&env_config)?;
    let mut rng = rng_from_seed(0);
    let space = env.action_space().clone();
    // Pre-drawn actions keep the generator out of the timed loop.
    let actions: Vec<Vec<f32>> = (0..1024).map(|_| space.sample(&mut rng)).collect();
    env.reset(Some(0));
    let (mut episodes, clock) = (0u64, Instant::now());
    for i in 0..steps {
        let step = env.step(&actions[i as usize % actions.len()])?;
        if step.done() {
            episodes += 1;
            env.reset(None);
        }
    }
    let seconds = clock.elapsed().as_secs_f64();
    let out = json!({
        "env": name,
        "steps": steps,
        "episodes": episodes,
        "seconds": seconds,
        "steps_per_s": steps as f64 / seconds,
    });
    println!("{out}");
    Ok(())
}

/// Values in the all-reduce measurement, as in the target.
const ALL_REDUCE_VALUES: usize = 100_000;
const ALL_REDUCE_REPEATS: u32 = 50;

/// `shoal bench-parallel`: with a backend and worker count, one measurement
/// (all-reduce of 100k `f32` and of as many as `push-ddpg-her`'s actor and
/// critic have parameters — what gradient averaging sends per update — and
/// worm rollout collection with the REINFORCE policy on every worker);
/// without, runs itself once per backend and worker count (1, 2, 4, … up to
/// `up_to`) and prints every result plus the speedups.
///
/// With `values`, measures only the latency of an all-reduce of that many
/// `f32` and of a single one (`shoal scale` projects communication from
/// these).
pub fn bench_parallel(
    backend: Option<&str>,
    workers: Option<usize>,
    episodes: usize,
    up_to: usize,
    values: Option<usize>,
) -> Result<()> {
    match (backend, workers, values) {
        (Some(backend), Some(workers), values) => {
            let backend: Backend = backend.parse()?;
            if let Some(result) =
                launch(backend, workers, |comm: &dyn Communicator| match values {
                    Some(values) => measure_all_reduce(comm, values),
                    None => measure(comm, backend, episodes),
                })?
            {
                println!("{result}");
            }
            Ok(())
        }
        (None, None, None) => sweep(episodes, up_to),
        (None, None, Some(_)) => Err(Error::Config(
            "--values needs --backend and --workers".into(),
        )),
        _ => Err(Error::Config(
            "give both --backend and --workers, or neither".into(),
        )),
    }
}

/// Most values `--values` takes: 1 GiB of `f32`.
pub const MAX_ALL_REDUCE_VALUES: usize = 1 << 28;

/// Mean seconds of one all-reduce of `values` floats and of one float on
/// the ranks of `comm`.
fn measure_all_reduce(comm: &dyn Communicator, values: usize) -> Result<Value> {
    if !(1..=MAX_ALL_REDUCE_VALUES).contains(&values) {
        return Err(Error::Config(format!(
            "--values must be between 1 and {MAX_ALL_REDUCE_VALUES}, got {values}"
        )));
    }
    let mean_seconds = |len: usize| -> Result<f64> {
        let mut buffer = vec![1.0f32; len];
        comm.all_reduce_sum(&mut buffer)?; // warm-up: connections, pages
        mean_all_reduce_seconds(comm, &mut buffer)
    };
    let large = mean_seconds(values)?;
    let single = mean_seconds(1)?;
    Ok(json!({
        "workers": comm.size(),
        "values": values,
        "all_reduce_s": large,
        "all_reduce_1_s": single,
    }))
}

/// Runs `shoal bench-parallel --backend B --workers N <args>` in a fresh
/// process (under `mpirun` for MPI) and returns its JSON line.
pub fn bench_in_process(backend: Backend, workers: usize, args: &[String]) -> Result<Value> {
    let exe = std::env::current_exe().map_err(|e| Error::io("locating the shoal binary", e))?;
    let n = workers.to_string();
    let mut command = if backend == Backend::Mpi {
        let mut mpirun = Command::new("mpirun");
        mpirun
            .args(["-n", &n, "--oversubscribe", "--allow-run-as-root"])
            .arg(&exe);
        mpirun
    } else {
        Command::new(&exe)
    };
    let output = command
        .args([
            "bench-parallel",
            "--backend",
            backend.name(),
            "--workers",
            &n,
        ])
        .args(args)
        .output()
        .map_err(|e| {
            Error::io(
                format!("running {} with {workers} workers", backend.name()),
                e,
            )
        })?;
    if !output.status.success() {
        return Err(Error::Comm(format!(
            "{} with {workers} workers failed: {}",
            backend.name(),
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    let line = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(line.trim()).map_err(|e| {
        Error::Comm(format!(
            "{}: unreadable result {line:?}: {e}",
            backend.name()
        ))
    })
}

/// Mean seconds of one all-reduce of `buffer` over [`ALL_REDUCE_REPEATS`]
/// calls, the ranks lined up by a barrier first.
fn mean_all_reduce_seconds(comm: &dyn Communicator, buffer: &mut [f32]) -> Result<f64> {
    comm.barrier()?;
    let clock = Instant::now();
    for _ in 0..ALL_REDUCE_REPEATS {
        comm.all_reduce_sum(buffer)?;
    }
    Ok(clock.elapsed().as_secs_f64() / f64::from(ALL_REDUCE_REPEATS))
}

/// One measurement on the ranks of `comm`; the JSON result on rank 0.
fn measure(comm: &dyn Communicator, backend: Backend, episodes: usize) -> Result<Value> {
    let mut values = vec![1.0f32; ALL_REDUCE_VALUES];
    let all_reduce_us = mean_all_reduce_seconds(comm, &mut values)? * 1e6;

    let mut gradients = vec![1.0f32; actor_critic_parameters()?];
    let actor_critic_us = mean_all_reduce_seconds(comm, &mut gradients)? * 1e6;

    let cfg = preset("worm-reinforce")?;
    let registries = Registries::default();
    let mut learner = registries.learners(&cfg).rollout_learner(comm.rank())?;
    comm.barrier()?;
    let clock = Instant::now();
    let (_, report) = learner.collect(episodes)?;
    let mut steps = [report.env_steps() as f32];
    comm.barrier()?;
    let seconds = clock.elapsed().as_secs_f64();
    comm.all_reduce_sum(&mut steps)?;
    Ok(json!({
        "backend": backend.name(),
        "workers": comm.size(),
        "all_reduce_100k_f32_us": all_reduce_us,
        "actor_critic_parameters": gradients.len(),
        "all_reduce_actor_critic_us": actor_critic_us,
        "rollout_env_steps": steps[0],
        "rollout_seconds": seconds,
        "rollout_steps_per_s": f64::from(steps[0]) / seconds,
    }))
}

/// Parameters of `push-ddpg-her`'s actor and critic together.
fn actor_critic_parameters() -> Result<usize> {
    let cfg = preset("push-ddpg-her")?;
    let registries = Registries::default();
    Ok(registries
        .learners(&cfg)
        .learner(0, 1.0)?
        .parameters()
        .len())
}

/// 1, 2, 4, … up to `up_to`, and `up_to` itself.
fn worker_counts(up_to: usize) -> Vec<usize> {
    let mut counts: Vec<usize> = std::iter::successors(Some(1usize), |n| n.checked_mul(2))
        .take_while(|n| *n < up_to)
        .collect();
    counts.push(up_to.max(1));
    counts.dedup();
    counts
}

/// Runs `shoal bench-parallel --backend B --workers N` for every available
/// backend and N in [`worker_counts`], each in a fresh process so
/// measurements do not share threads or sockets (more workers than cores
/// share them: the all-reduce times then include waiting for a core).
fn sweep(episodes: usize, up_to: usize) -> Result<()> {
    if !(2..=shoal_rl_parallel::MAX_WORKERS).contains(&up_to) {
        return Err(Error::Config(format!(
            "--up-to must be between 2 and {}, got {up_to}",
            shoal_rl_parallel::MAX_WORKERS
        )));
    }
    let mut backends = vec![Backend::Threads, Backend::Processes];
    let mpirun = Command::new("mpirun")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if cfg!(feature = "mpi") && mpirun {
        backends.push(Backend::Mpi);
    }
    let mut results = Vec::new();
    for backend in backends {
        let mut by_workers = Vec::new();
        for workers in worker_counts(up_to) {
            let args = ["--episodes".to_string(), episodes.to_string()];
            let result = bench_in_process(backend, workers, &args)?;
            println!("{result}");
            by_workers.push(result);
        }
        let rate = |v: &Value| v["rollout_steps_per_s"].as_f64().unwrap_or(f64::NAN);
        let by_n = |key: &str| -> Value {
            by_workers
                .iter()
                .map(|v| json!([v["workers"], v[key]]))
                .collect()
        };
        results.push(json!({
            "backend": backend.name(),
            "rollout_speedup_2_vs_1": rate(&by_workers[1]) / rate(&by_workers[0]),
            "all_reduce_100k_f32_us_2_workers": by_workers[1]["all_reduce_100k_f32_us"],
            "all_reduce_actor_critic_us_by_workers": by_n("all_reduce_actor_critic_us"),
        }));
    }
    println!("{}", json!({ "summary": results }));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_counts_double_up_to_the_limit() {
        assert_eq!(worker_counts(2), vec![1, 2]);
        assert_eq!(worker_counts(16), vec![1, 2, 4, 8, 16]);
        assert_eq!(worker_counts(12), vec![1, 2, 4, 8, 12]);
    }
}
