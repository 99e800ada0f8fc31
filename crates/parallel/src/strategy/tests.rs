//! Every strategy on threads and processes: agreement, resume, failures.

use std::time::Duration;

use shoal_rl_core::{EvalReport, GradientLearner, LearnReport, Learner, MeanReducer};

use super::*;
use crate::testutil::{Quadratic, on_processes, test_path, within};
use crate::{
    AveragingConfig, CommReducer, GatherConfig, GradientAveraging, GroupPool, Pool, PoolConfig,
    RolloutGather, run_threads,
};

const SEED: u64 = 11;
const LIMIT: Duration = Duration::from_secs(300);

/// What one rank ends with: rank 0's records, its parameters, the summary.
type Outcome = (Vec<IterationRecord>, Vec<f32>, RunSummary);

fn run_with<L, S>(comm: &dyn Communicator, strategy: &mut S, learner: &mut L) -> Result<Outcome>
where
    L: GradientLearner + Clone,
    S: Strategy<L>,
{
    let mut records = Vec::new();
    let summary = strategy.run(comm, learner, &mut |record: &IterationRecord, _: &L| {
        records.push(record.clone());
        Ok(Control::Continue)
    })?;
    Ok((records, learner.parameters(), summary))
}

/// 8 iterations of 4 episodes, 3 selection episodes per candidate, the
/// promoted agent evaluated on 2 episodes at iterations 4 and 8.
fn pool_config() -> PoolConfig {
    PoolConfig::new(
        Schedule::default()
            .iterations(8)
            .episodes_per_iteration(4)
            .eval_interval(4)
            .eval_episodes(2)
            .seed(SEED),
    )
    .selection_episodes(3)
}

fn pool_body(comm: &dyn Communicator) -> Result<Outcome> {
    run_with(
        comm,
        &mut Pool::new(pool_config()),
        &mut Quadratic::new(SEED, comm.rank()),
    )
}

fn gather_body(comm: &dyn Communicator) -> Result<Outcome> {
    let config = GatherConfig::new(
        Schedule::default()
            .iterations(8)
            .episodes_per_iteration(2)
            .eval_interval(4),
    );
    run_with(
        comm,
        &mut RolloutGather::new(config),
        &mut Quadratic::new(SEED, comm.rank()),
    )
}

fn averaging_body(comm: &dyn Communicator) -> Result<Outcome> {
    let config = AveragingConfig::new(
        Schedule::default()
            .iterations(8)
            .episodes_per_iteration(2)
            .eval_interval(4),
    );
    let mut learner = Quadratic::new(SEED, comm.rank());
    learner.learning_rate = 0.05;
    // Different starting points: the strategy must broadcast rank 0's.
    learner.params = vec![comm.rank() as f32; 4];
    run_with(comm, &mut GradientAveraging::new(config), &mut learner)
}

#[test]
fn every_record_carries_each_workers_profile() {
    let outcomes = run_threads(3, averaging_body).unwrap();
    let (records, _, _) = &outcomes[0];
    let steps = Quadratic::new(SEED, 0).steps_per_episode as u64;
    for record in records {
        assert_eq!(record.profile.len(), 3, "iteration {}", record.iteration);
        for (rank, worker) in record.profile.iter().enumerate() {
            // One all-reduce of the 4 parameters' gradient per step, 2
            // episodes per iteration; and at least the stats' gather.
            assert_eq!(
                (worker.all_reduces, worker.all_reduce_values),
                (2 * steps, 2 * steps * 4),
                "rank {rank}, iteration {}",
                record.iteration
            );
            assert!(worker.other_collectives >= 1);
            assert!(worker.compute_cpu_s >= 0.0 && worker.comm_wall_s >= 0.0);
        }
    }
}

/// Checks what every strategy promises, whatever the backend.
fn check_outcomes(outcomes: &[Outcome], iterations: u64) {
    let (records, parameters, summary) = &outcomes[0];
    assert_eq!(records.len() as u64, iterations);
    for (i, record) in records.iter().enumerate() {
        assert_eq!(record.iteration, i as u64 + 1);
        assert_eq!(record.workers, outcomes.len());
    }
    assert_eq!(summary.last.as_ref(), records.last());
    assert!(!summary.stopped_early);
    for (rank, (other_records, other_parameters, other_summary)) in
        outcomes.iter().enumerate().skip(1)
    {
        assert!(other_records.is_empty(), "rank {rank} called the callback");
        assert_eq!(other_summary, summary, "rank {rank} has another summary");
        let bits = |p: &[f32]| p.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            bits(other_parameters),
            bits(parameters),
            "rank {rank} has other parameters"
        );
    }
    let first = records.first().unwrap().train_return_mean.unwrap();
    let last = records.last().unwrap().train_return_mean.unwrap();
    assert!(last > first, "training did not improve: {first} -> {last}");
}

fn same_on_threads_and_processes(test: &str, body: fn(&dyn Communicator) -> Result<Outcome>) {
    same_on_threads_and_processes_with(test, 3, body);
}

fn same_on_threads_and_processes_with(
    test: &str,
    workers: usize,
    body: fn(&dyn Communicator) -> Result<Outcome>,
) {
    let test = test.to_string();
    let on_processes = within(LIMIT, move || on_processes(&test, workers, body)).unwrap();
    let Some(on_processes) = on_processes else {
        return;
    };
    let on_threads = run_threads(workers, body).unwrap();
    assert_eq!(on_threads, on_processes);
    check_outcomes(&on_threads, 8);
}

/// Sixteen ranks, more than this machine has cores: every strategy still
/// gives the same bits on threads and on processes (the scaling
/// experiments rely on it to run N workers oversubscribed).
#[test]
fn every_strategy_agrees_on_threads_and_processes_with_16_workers() {
    let test = test_path!(every_strategy_agrees_on_threads_and_processes_with_16_workers);
    // One process run per strategy would re-spawn 15 workers each time;
    // a worker re-runs this whole test, so all three share one run.
    let body = |comm: &dyn Communicator| -> Result<Vec<Outcome>> {
        Ok(vec![
            pool_body(comm)?,
            gather_body(comm)?,
            averaging_body(comm)?,
        ])
    };
    let on_processes = within(LIMIT, move || on_processes(test, 16, body)).unwrap();
    let Some(on_processes) = on_processes else {
        return;
    };
    let on_threads = run_threads(16, body).unwrap();
    assert_eq!(on_threads, on_processes);
    for strategy in 0..3 {
        let outcomes: Vec<Outcome> = on_threads.iter().map(|o| o[strategy].clone()).collect();
        check_outcomes(&outcomes, 8);
    }
}

#[test]
fn pool_gives_identical_results_on_threads_and_processes() {
    same_on_threads_and_processes(
        test_path!(pool_gives_identical_results_on_threads_and_processes),
        pool_body,
    );
}

fn group_pool_body(comm: &dyn Communicator) -> Result<Outcome> {
    let mut learner = Quadratic::new(SEED, comm.rank());
    learner.learning_rate = group_rate(comm.rank());
    run_with(comm, &mut GroupPool::new(pool_config(), 2), &mut learner)
}

/// The groups' collectives are the parent's, so a group pool agrees bit for
/// bit across backends too.
#[test]
fn group_pool_gives_identical_results_on_threads_and_processes() {
    same_on_threads_and_processes_with(
        test_path!(group_pool_gives_identical_results_on_threads_and_processes),
        4,
        group_pool_body,
    );
}

#[test]
fn gather_gives_identical_results_on_threads_and_processes() {
    same_on_threads_and_processes(
        test_path!(gather_gives_identical_results_on_threads_and_processes),
        gather_body,
    );
}

#[test]
fn averaging_gives_identical_results_on_threads_and_processes() {
    same_on_threads_and_processes(
        test_path!(averaging_gives_identical_results_on_threads_and_processes),
        averaging_body,
    );
}

#[test]
fn pool_records_every_workers_evaluation_and_the_winner() {
    let outcomes = run_threads(3, pool_body).unwrap();
    for record in &outcomes[0].0 {
        let Some(RecordValue::Numbers(means)) = record.field("pool/worker_eval_means") else {
            panic!("no worker_eval_means in {record:?}")
        };
        assert_eq!(means.len(), 3);
        let Some(&RecordValue::Count(winner)) = record.field("pool/winner") else {
            panic!("no winner in {record:?}")
        };
        let best = means.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        assert_eq!(means[winner as usize], best);
        assert_eq!(
            record.field("pool/selection_return_mean"),
            Some(&RecordValue::Number(best))
        );
        // Selection: 3 candidates × 3 episodes × 5 steps an iteration;
        // the unbiased evaluation: 2 episodes × 5 steps at 4 and 8.
        let evaluations = record.iteration / 4;
        assert_eq!(record.eval.is_some(), record.iteration % 4 == 0);
        assert_eq!(
            record.eval_env_steps,
            record.iteration * 3 * 3 * 5 + evaluations * 2 * 5
        );
        assert_eq!(record.episodes, record.iteration * 3 * 4);
        assert_eq!(record.env_steps, record.episodes * 5);
    }
}

/// A group pool of one worker per candidate is the pool, record for record.
#[test]
fn a_group_pool_of_single_workers_runs_exactly_as_the_pool() {
    let grouped = run_threads(3, |comm: &dyn Communicator| {
        run_with(
            comm,
            &mut GroupPool::new(pool_config(), 1),
            &mut Quadratic::new(SEED, comm.rank()),
        )
    })
    .unwrap();
    let plain = run_threads(3, pool_body).unwrap();
    check_outcomes(&grouped, 8);
    assert_eq!(grouped, plain);
}

/// The learning rate of a group's members: the pool convention, by group.
fn group_rate(rank: usize) -> f32 {
    if rank / 2 == 0 { 0.005 } else { 0.05 }
}

/// Four workers in two candidates of two: after one iteration every
/// member has scored the parameters that its pair reached by averaging
/// gradients (here recomputed by each pair alone on two threads), and
/// every worker holds the better pair's.
#[test]
fn a_group_pool_trains_each_candidate_by_averaging_within_its_group() {
    let config = || {
        PoolConfig::new(
            Schedule::default()
                .iterations(1)
                .episodes_per_iteration(4)
                .seed(SEED),
        )
    };
    let outcomes = run_threads(4, |comm: &dyn Communicator| {
        let mut learner = Quadratic::new(SEED, comm.rank());
        learner.learning_rate = group_rate(comm.rank());
        run_with(comm, &mut GroupPool::new(config(), 2), &mut learner)
    })
    .unwrap();
    let pairs: Vec<Vec<f32>> = (0..2)
        .map(|group| {
            let members = run_threads(2, |comm: &dyn Communicator| {
                let rank = 2 * group + comm.rank();
                let mut learner = Quadratic::new(SEED, rank);
                learner.learning_rate = group_rate(rank);
                learner.learn_averaged(4, &mut CommReducer::new(comm))?;
                Ok(learner.params)
            })
            .unwrap();
            assert_eq!(members[0], members[1]);
            members[0].clone()
        })
        .collect();
    assert_ne!(pairs[0], pairs[1]);
    let (records, parameters, _) = &outcomes[0];
    let Some(RecordValue::Numbers(means)) = records[0].field("pool/worker_eval_means") else {
        panic!("no worker_eval_means in {:?}", records[0])
    };
    let loss = |params: &[f32]| {
        Quadratic {
            params: params.to_vec(),
            ..Quadratic::new(SEED, 0)
        }
        .loss()
    };
    for (rank, mean) in means.iter().enumerate() {
        // A selection score is −loss plus evaluation noise below 0.01.
        assert!(
            (mean + loss(&pairs[rank / 2])).abs() < 0.01,
            "rank {rank}: {mean}"
        );
    }
    let scores = [(means[0] + means[1]) / 2.0, (means[2] + means[3]) / 2.0];
    let best = usize::from(scores[1] > scores[0]);
    assert_eq!(
        records[0].field("pool/winner"),
        Some(&RecordValue::Count(2 * best as u64))
    );
    assert_eq!(
        records[0].field("pool/selection_return_mean"),
        Some(&RecordValue::Number(scores[best]))
    );
    assert_eq!(parameters, &pairs[best]);
    for (_, other, _) in &outcomes[1..] {
        assert_eq!(other, parameters);
    }
}

/// Members trained with different learning rates drift apart: the run
/// ends on every rank with one error naming them.
#[test]
fn a_group_pool_ends_the_run_when_members_of_a_candidate_differ() {
    let outcomes = run_threads(4, |comm: &dyn Communicator| {
        let mut learner = Quadratic::new(SEED, comm.rank());
        // The pool convention by rank, not by candidate: ranks 0 and 1 differ.
        Ok(
            run_with(comm, &mut GroupPool::new(pool_config(), 2), &mut learner)
                .err()
                .map(|e| e.to_string()),
        )
    })
    .unwrap();
    // Rank 0 decides; the others learn it from rank 0.
    for (rank, error) in outcomes.iter().enumerate() {
        let error = error.as_deref().unwrap();
        assert!(
            error.ends_with(
                "parameters of rank 1 differ from rank 0 after iteration 1: the members of a \
                 candidate must train with the same settings and pass every gradient through \
                 the reducer"
            ),
            "rank {rank}: {error}"
        );
    }
}

#[test]
fn a_group_pool_refuses_groups_that_do_not_divide_the_workers() {
    let outcomes = run_threads(3, |comm: &dyn Communicator| {
        Ok(run_with(
            comm,
            &mut GroupPool::new(pool_config(), 2),
            &mut Quadratic::new(SEED, comm.rank()),
        )
        .err()
        .map(|e| e.to_string()))
    })
    .unwrap();
    for error in outcomes {
        assert_eq!(
            error.as_deref(),
            Some("invalid configuration: groups of 2 workers do not divide 3 workers")
        );
    }
}

#[test]
fn pool_evaluates_the_promoted_agent_as_a_single_learner_would() {
    let outcomes = run_threads(3, |comm: &dyn Communicator| {
        let mut learner = Quadratic::new(SEED, comm.rank());
        let mut promoted = Vec::new();
        Pool::new(pool_config()).run(
            comm,
            &mut learner,
            &mut |record: &IterationRecord, l: &Quadratic| {
                if let Some(eval) = &record.eval {
                    promoted.push((eval.clone(), l.save_state()));
                }
                Ok(Control::Continue)
            },
        )?;
        Ok(promoted)
    })
    .unwrap();
    let promoted = &outcomes[0];
    assert_eq!(promoted.len(), 2, "evaluations at iterations 4 and 8");
    for (eval, state) in promoted {
        // A learner outside the pool, loaded with the promoted agent and
        // evaluated on the run's seed, as a single learner's run does.
        let mut alone = Quadratic::new(SEED, 0);
        alone.load_state(state).unwrap();
        let expected = alone.evaluate(2, SEED).unwrap();
        assert_eq!(eval.return_mean.to_bits(), expected.return_mean.to_bits());
        assert_eq!(eval.episodes, 2);
    }
}

#[test]
fn gather_and_averaging_evaluate_at_the_interval() {
    for body in [
        gather_body as fn(&dyn Communicator) -> Result<Outcome>,
        averaging_body,
    ] {
        let outcomes = run_threads(2, body).unwrap();
        let evaluated: Vec<u64> = outcomes[0]
            .0
            .iter()
            .filter(|r| r.eval.is_some())
            .map(|r| r.iteration)
            .collect();
        assert_eq!(evaluated, vec![4, 8]);
    }
}

#[test]
fn strategies_run_on_a_single_worker() {
    for body in [
        pool_body as fn(&dyn Communicator) -> Result<Outcome>,
        gather_body,
        averaging_body,
    ] {
        let outcomes = run_threads(1, body).unwrap();
        assert_eq!(outcomes[0].0.len(), 8);
    }
}

#[test]
fn callback_can_stop_every_rank() {
    let outcomes = run_threads(2, |comm: &dyn Communicator| {
        let mut learner = Quadratic::new(SEED, comm.rank());
        let mut pool = Pool::new(PoolConfig::new(
            Schedule::default().iterations(10).episodes_per_iteration(1),
        ));
        pool.run(
            comm,
            &mut learner,
            &mut |record: &IterationRecord, _: &Quadratic| {
                Ok(if record.iteration == 3 {
                    Control::Stop
                } else {
                    Control::Continue
                })
            },
        )
    })
    .unwrap();
    for summary in outcomes {
        assert!(summary.stopped_early);
        assert_eq!(summary.counters.iteration, 3);
    }
}

#[test]
fn callback_error_ends_the_run_on_every_rank() {
    let err = run_threads(2, |comm: &dyn Communicator| {
        let mut learner = Quadratic::new(SEED, comm.rank());
        learner.learning_rate = 0.05;
        let config = AveragingConfig::new(Schedule::default().iterations(5).eval_interval(0));
        GradientAveraging::new(config).run(
            comm,
            &mut learner,
            &mut |_: &IterationRecord, _: &Quadratic| {
                Err(Error::file("metrics.jsonl", "disk full"))
            },
        )
    })
    .unwrap_err();
    assert_eq!(err.to_string(), "metrics.jsonl: disk full");
}

fn failing_body(comm: &dyn Communicator, which: usize) -> Result<RunSummary> {
    let mut learner = Quadratic::new(SEED, comm.rank());
    learner.learning_rate = 0.05; // the same everywhere, as gradient averaging needs
    if comm.rank() == 1 {
        learner.fail_after = Some(3);
    }
    let quiet = &mut keep_going::<Quadratic>;
    match which {
        0 => Pool::new(PoolConfig::new(
            Schedule::default().iterations(5).episodes_per_iteration(2),
        ))
        .run(comm, &mut learner, quiet),
        1 => RolloutGather::new(GatherConfig::new(
            Schedule::default().iterations(5).episodes_per_iteration(2),
        ))
        .run(comm, &mut learner, quiet),
        _ => GradientAveraging::new(AveragingConfig::new(
            Schedule::default().iterations(5).episodes_per_iteration(2),
        ))
        .run(comm, &mut learner, quiet),
    }
}

#[test]
fn a_failing_learner_ends_the_run_with_its_error_on_threads() {
    for which in 0..3 {
        let err = run_threads(3, |comm: &dyn Communicator| failing_body(comm, which)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid configuration: toy learner told to fail after 3 episodes",
            "strategy {which}"
        );
    }
}

#[test]
fn a_failing_learner_ends_the_run_cleanly_on_processes() {
    // One process run (a worker re-runs this whole test) trying the pool and
    // the gather in turn: a failure shared by the strategy leaves the
    // communicator usable.
    let test = test_path!(a_failing_learner_ends_the_run_cleanly_on_processes);
    let messages = within(LIMIT, move || {
        on_processes(test, 2, |comm| {
            let messages: Vec<String> = (0..2)
                .map(|which| failing_body(comm, which).unwrap_err().to_string())
                .collect();
            comm.barrier()?;
            Ok(messages)
        })
    });
    let Some(messages) = messages.unwrap() else {
        return;
    };
    let cause = "invalid configuration: toy learner told to fail after 3 episodes";
    assert_eq!(
        messages[0],
        vec![format!("communication failed: rank 1 failed: {cause}"); 2]
    );
    assert_eq!(messages[1], vec![cause.to_string(); 2]);
}

#[test]
fn a_learner_failing_inside_averaging_is_named_on_processes() {
    // The failing worker leaves its peer inside a reduction; rank 0 must
    // still name the cause, not only the mismatch it saw.
    let test = test_path!(a_learner_failing_inside_averaging_is_named_on_processes);
    let result = within(LIMIT, move || {
        on_processes(test, 2, |comm| failing_body(comm, 2))
    });
    let message = result.unwrap_err().to_string();
    assert!(
        message.contains("toy learner told to fail after 3 episodes"),
        "{message}"
    );
}

#[test]
fn resumed_pool_matches_an_uninterrupted_run() {
    let config = PoolConfig::new(Schedule::default().iterations(6).episodes_per_iteration(3))
        .selection_episodes(2);
    let uninterrupted = run_threads(2, |comm: &dyn Communicator| {
        let mut learner = Quadratic::new(SEED, comm.rank());
        let mut checkpoint = None;
        let summary = Pool::new(config.clone()).run(
            comm,
            &mut learner,
            &mut |record: &IterationRecord, l: &Quadratic| {
                if record.iteration == 4 {
                    checkpoint = Some((record.counters(), l.save_state()));
                }
                Ok(Control::Continue)
            },
        )?;
        Ok((summary, learner.params.clone(), checkpoint))
    })
    .unwrap();
    let (counters, state) = uninterrupted[0].2.clone().unwrap();
    let resumed = run_threads(2, |comm: &dyn Communicator| {
        let mut learner = Quadratic::new(SEED, comm.rank());
        let resume = Resume {
            counters,
            state: comm.is_root().then(|| state.clone()),
            memories: Vec::new(),
            ..Resume::default()
        };
        let mut pool = Pool::new(config.clone());
        let summary = pool.resume(comm, &mut learner, &resume, &mut keep_going)?;
        Ok((summary, learner.params.clone()))
    })
    .unwrap();
    assert_eq!(resumed[0].0, uninterrupted[0].0);
    assert_eq!(resumed[0].1, uninterrupted[0].1);
}

#[test]
fn every_workers_memory_is_checkpointed_and_restored_on_resume() {
    let config = AveragingConfig::new(
        Schedule::default()
            .iterations(6)
            .episodes_per_iteration(2)
            .eval_interval(0)
            .memory_interval(2),
    );
    // Averaging workers share one learning rate.
    let worker = |rank: usize| Quadratic {
        learning_rate: 0.05,
        ..Quadratic::new(SEED, rank)
    };
    let uninterrupted = run_threads(2, |comm: &dyn Communicator| {
        let mut learner = worker(comm.rank());
        let (mut gathered_at, mut checkpoint) = (Vec::new(), None);
        GradientAveraging::new(config.clone()).run(
            comm,
            &mut learner,
            &mut |record: &IterationRecord, l: &Quadratic| {
                if let Some(memories) = &record.memories {
                    gathered_at.push(record.iteration);
                    if record.iteration == 4 {
                        checkpoint = Some((record.counters(), l.save_state(), memories.clone()));
                    }
                }
                Ok(Control::Continue)
            },
        )?;
        Ok((learner.memory.clone(), gathered_at, checkpoint))
    })
    .unwrap();
    assert_eq!(uninterrupted[0].1, vec![2, 4, 6]);
    let (counters, state, memories) = uninterrupted[0].2.clone().unwrap();
    assert_eq!(memories.len(), 2);
    assert_ne!(memories[0], memories[1], "each worker keeps its own memory");

    let resumed = run_threads(2, |comm: &dyn Communicator| {
        let mut learner = worker(comm.rank());
        let resume = Resume {
            counters,
            state: comm.is_root().then(|| state.clone()),
            memories: if comm.is_root() {
                memories.clone()
            } else {
                Vec::new()
            },
            ..Resume::default()
        };
        GradientAveraging::new(config.clone()).resume(
            comm,
            &mut learner,
            &resume,
            &mut keep_going,
        )?;
        Ok(learner.memory.clone())
    })
    .unwrap();
    for rank in 0..2 {
        assert_eq!(resumed[rank], uninterrupted[rank].0, "rank {rank}");
        assert_eq!(resumed[rank].len(), 12, "6 iterations × 2 episodes");
    }

    // The same for the pool, and a checkpoint of the wrong world size.
    let pool_resumed_with = |memories: Vec<Vec<u8>>| {
        run_threads(2, |comm: &dyn Communicator| {
            let mut learner = worker(comm.rank());
            let resume = Resume {
                memories: memories.clone(),
                ..Resume::default()
            };
            let pool =
                PoolConfig::new(Schedule::default().episodes_per_iteration(10).iterations(0));
            Pool::new(pool).resume(comm, &mut learner, &resume, &mut keep_going)?;
            Ok(learner.memory.clone())
        })
    };
    let restored = pool_resumed_with(vec![vec![0; 4], 7.0f32.to_le_bytes().to_vec()]);
    assert_eq!(restored.unwrap(), vec![vec![0.0], vec![7.0]]);
    let error = pool_resumed_with(vec![Vec::new()]).unwrap_err().to_string();
    assert!(
        error.contains("replay memories of 1 workers, the run has 2"),
        "{error}"
    );
}

#[test]
fn resumed_gather_continues_the_counters() {
    let resumed = run_threads(2, |comm: &dyn Communicator| {
        let mut learner = Quadratic::new(SEED, comm.rank());
        let counters = Counters {
            iteration: 5,
            episodes: 20,
            env_steps: 100,
            eval_env_steps: 0,
        };
        let mut saved = Quadratic::new(SEED, 0);
        saved.params = vec![1.0, -2.0, 0.5, 3.0];
        let resume = Resume {
            counters,
            state: Some(saved.save_state()),
            memories: Vec::new(),
            ..Resume::default()
        };
        let config = GatherConfig::new(
            Schedule::default()
                .iterations(6)
                .episodes_per_iteration(2)
                .eval_interval(0),
        );
        let summary =
            RolloutGather::new(config).resume(comm, &mut learner, &resume, &mut keep_going)?;
        Ok((summary, learner.loss()))
    })
    .unwrap();
    let (summary, loss) = &resumed[1];
    assert_eq!(
        summary.counters,
        Counters {
            iteration: 6,
            episodes: 24,
            env_steps: 120,
            eval_env_steps: 0
        }
    );
    assert!(
        *loss < 0.5,
        "worker 1 did not receive the resumed parameters: loss {loss}"
    );
}

/// A learner that ignores the reducer: its workers drift apart.
#[derive(Clone)]
struct Selfish(Quadratic);

impl Learner for Selfish {
    fn learn(&mut self, episodes: usize) -> Result<LearnReport> {
        self.0.learn(episodes)
    }
    fn evaluate(&mut self, episodes: usize, seed: u64) -> Result<EvalReport> {
        self.0.evaluate(episodes, seed)
    }
    fn save_state(&self) -> Vec<u8> {
        self.0.save_state()
    }
    fn load_state(&mut self, bytes: &[u8]) -> Result<()> {
        self.0.load_state(bytes)
    }
}

impl GradientLearner for Selfish {
    fn parameters(&self) -> Vec<f32> {
        GradientLearner::parameters(&self.0)
    }
    fn set_parameters(&mut self, params: &[f32]) -> Result<()> {
        GradientLearner::set_parameters(&mut self.0, params)
    }
    fn learn_averaged(&mut self, episodes: usize, _: &mut dyn MeanReducer) -> Result<LearnReport> {
        self.0.learn(episodes)
    }
}

#[test]
fn averaging_detects_workers_that_drift_apart() {
    let err = run_threads(2, |comm: &dyn Communicator| {
        let mut learner = Selfish(Quadratic::new(SEED, comm.rank()));
        GradientAveraging::new(AveragingConfig::new(Schedule::default().iterations(3))).run(
            comm,
            &mut learner,
            &mut keep_going,
        )
    })
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("parameters of rank 1 differ from rank 0 after iteration 1"),
        "{err}"
    );
}

#[test]
fn bad_strategy_configs_are_config_errors() {
    let err = run_threads(1, |comm: &dyn Communicator| {
        let mut learner = Quadratic::new(SEED, 0);
        RolloutGather::new(GatherConfig::new(
            Schedule::default().episodes_per_iteration(0),
        ))
        .run(comm, &mut learner, &mut keep_going)
    })
    .unwrap_err();
    assert!(matches!(err, Error::Config(_)), "{err}");
}

#[test]
fn due_at_the_interval_and_after_the_last_iteration() {
    let at: Vec<u64> = (1..=25).filter(|i| due(10, *i, 25)).collect();
    assert_eq!(at, vec![10, 20, 25]);
    assert!((1..=25).all(|i| !due(0, i, 25)));
    assert_eq!((1..=6).filter(|i| due(1, *i, 6)).count(), 6);
}
