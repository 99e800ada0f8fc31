//! The single-learner loop: train up to the next evaluation or checkpoint,
//! record, repeat; stop cleanly when asked.

use shoal_rl_core::{Learner, Result, StopFlag};
use shoal_rl_eval::{Checkpoint, Record, RecordKind, Summary};
use shoal_rl_parallel::Counters;

use crate::finish::{finish_run, interrupted};
use crate::recorder::{Recorder, checkpoint_counters, eval_seed, restore};
use crate::spec::RunSpec;

/// Trains `learner` alone in the claimed run of `recorder` and returns the summary.
pub(crate) fn train_single<L: Learner + ?Sized>(
    spec: &RunSpec,
    learner: &mut L,
    mut recorder: Recorder,
    resume: Option<&Checkpoint>,
    stop: &StopFlag,
) -> Result<Summary> {
    let train = &spec.train;
    let mut counters = Counters::default();
    if let Some(ckpt) = resume {
        restore(learner, ckpt)?;
        counters = checkpoint_counters(ckpt);
    }
    let steps_spent = |c: &Counters| train.steps_spent(c.env_steps);
    // Learning goes in stretches of whole updates, each recorded as it ends:
    // its episode lines, with their own wall time, and its update line. A
    // learner that names no update unit learns up to the next evaluation or
    // checkpoint in one call (one episode at a time under a step budget).
    let per_update = learner.episodes_per_update().map(|n| n.max(1) as u64);
    while counters.episodes < train.episodes && !steps_spent(&counters) {
        let next_eval = next_multiple(counters.episodes, train.eval_every);
        let next_ckpt = next_multiple(counters.episodes, train.checkpoint_every);
        let boundary = next_eval.min(next_ckpt).min(train.episodes);
        let mut stretch_end = counters.episodes;
        while stretch_end < boundary && !steps_spent(&counters) {
            // Stretches are counted from the boundary chunk's start, as one
            // `learn` call over the chunk would batch its episodes.
            let stretch = match (per_update, train.env_steps) {
                (Some(n), _) => n.min(boundary - stretch_end),
                (None, Some(_)) => 1,
                (None, None) => boundary - stretch_end,
            };
            stretch_end += stretch;
            let report = learner.learn_until(stretch as usize, stop)?;
            let wall = recorder.wall();
            for (i, (ret, len)) in report
                .episode_returns
                .iter()
                .zip(&report.episode_lengths)
                .enumerate()
            {
                counters.env_steps += len;
                let mut record = Record::new(
                    RecordKind::Episode,
                    counters.episodes + i as u64 + 1,
                    counters.env_steps,
                    wall,
                )
                .scalar("charts/episodic_return", *ret)
                .scalar("charts/episodic_length", *len as f64);
                if let Some(success) = report.episode_successes.get(i) {
                    record = record.scalar("charts/success", f64::from(u8::from(*success)));
                }
                recorder.metrics.write(&record)?;
            }
            let done_now = report.episode_returns.len() as u64;
            counters.episodes += done_now;
            if done_now > 0 && !report.scalars.is_empty() {
                write_update(&mut recorder, counters, &report.scalars)?;
            }
            recorder
                .progress
                .episodes_ended(&report.episode_returns, &report.episode_successes);
            recorder
                .progress
                .advance(counters.episodes, counters.env_steps);
            if done_now < stretch {
                // Stopped inside the stretch: what was learned so far is
                // saved and the rest is learned after a resume. Written even
                // when nothing was learned: the last stretch may have ended
                // at an evaluation that was no checkpoint.
                recorder.checkpoint(learner, counters, None, None)?;
                return interrupted(spec, &mut recorder, counters);
            }
        }
        counters.iteration += 1;
        let mut done = counters.episodes == train.episodes || steps_spent(&counters);
        if counters.episodes % train.eval_every == 0 || done {
            let eval = learner.evaluate(train.eval_episodes, eval_seed(spec.seed))?;
            counters.eval_env_steps += shoal_rl_parallel::eval_steps(&eval);
            recorder.keep_if_best(learner, counters, &eval)?;
            done |= recorder.eval(counters, &eval)?;
        }
        let stopping = stop.is_requested() && !done;
        if counters.episodes % train.checkpoint_every == 0 || done || stopping {
            recorder.checkpoint(learner, counters, None, None)?;
        }
        if stopping {
            return interrupted(spec, &mut recorder, counters);
        }
        if done {
            break;
        }
    }
    recorder.progress.finish();
    let wall = recorder.wall();
    finish_run(spec, &mut recorder, learner, counters, wall)
}

fn write_update(
    recorder: &mut Recorder,
    counters: Counters,
    scalars: &[(String, f64)],
) -> Result<()> {
    let record = Record::new(
        RecordKind::Update,
        counters.episodes,
        counters.env_steps,
        recorder.wall(),
    )
    .scalars(scalars.iter().map(|(k, v)| (k.clone(), *v)));
    recorder.metrics.write(&record)
}

/// The smallest multiple of `every` strictly greater than `n`.
fn next_multiple(n: u64, every: u64) -> u64 {
    let every = every.max(1);
    (n / every + 1) * every
}
