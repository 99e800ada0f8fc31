//! The end of a run: the final frozen-policy evaluation and `summary.json`
//! (with the task's reference and time-to-target), or, after a stop
//! request, a summary marked interrupted.

use std::path::Path;

use shoal_rl_core::{Error, Learner, Result};
use shoal_rl_eval::{Summary, read_metrics};
use shoal_rl_parallel::Counters;

use crate::recorder::{Recorder, eval_seed, run_target};
use crate::spec::RunSpec;

/// Final frozen-policy evaluation and `summary.json`, plus the task's
/// reference numbers (the worm's best travelling-wave gait).
pub(crate) fn finish_run<L: Learner + ?Sized>(
    spec: &RunSpec,
    recorder: &mut Recorder,
    learner: &mut L,
    counters: Counters,
    wall_s: f64,
) -> Result<Summary> {
    let eval = learner.evaluate(spec.train.final_eval_episodes, eval_seed(spec.seed))?;
    let mut summary = Summary {
        episodes: counters.episodes,
        env_steps: counters.env_steps,
        wall_s,
        ..Summary::default()
    }
    .eval(eval.episodes as u64, eval.return_mean, eval.success_rate)
    .extra("eval_return_std", eval.return_std);
    summary = with_run_facts(summary, spec);
    let reference = recorder.reference.get().cloned();
    if let Some(reference) = &reference {
        summary = summary.extra(
            format!("{}_return", reference.name),
            reference.episode_return,
        );
        for (key, value) in &reference.summary_fields {
            summary = summary.extra(key, value.clone());
        }
        if reference.episode_return > 0.0 {
            summary = summary.extra(
                format!("return_ratio_to_{}", reference.name),
                eval.return_mean / reference.episode_return,
            );
        }
    }
    if let Some(target) = run_target(spec, reference.map(|r| r.episode_return)) {
        let records = read_metrics(recorder.run.path())?;
        if spec.train.stop_at_target {
            // What ended the run, not the setting: a run that spent its
            // budget without reaching the target ran to the end.
            let last_eval = records.iter().rev().find(|r| r["kind"] == "eval");
            let ended_on_target = last_eval.is_some_and(|r| target.is_reached_in(r));
            summary = summary.extra("stopped_at_target", ended_on_target);
        }
        let reached = target.first_reached(&records);
        summary = summary.target(&target, reached, spec.parallel.workers as u64);
    }
    summary.write(recorder.run.path())?;
    Ok(summary)
}

/// After a stop request, with the checkpoint written: a summary marked
/// `interrupted` (no final evaluation: the run is to end within seconds).
pub(crate) fn write_interrupted(
    spec: &RunSpec,
    recorder: &mut Recorder,
    counters: Counters,
) -> Result<Summary> {
    recorder.progress.finish();
    let summary = Summary {
        episodes: counters.episodes,
        env_steps: counters.env_steps,
        wall_s: recorder.wall(),
        ..Summary::default()
    }
    .interrupted();
    let summary = with_run_facts(summary, spec);
    summary.write(recorder.run.path())?;
    Ok(summary)
}

/// What every summary, final or interrupted, says of how the run ran:
/// workers, strategy and the spec's own facts ([`RunSpec::summary_field`]).
fn with_run_facts(summary: Summary, spec: &RunSpec) -> Summary {
    let summary = summary
        .extra("workers", spec.parallel.workers)
        .extra("strategy", spec.parallel.strategy.as_str());
    spec.summary_fields
        .iter()
        .fold(summary, |summary, (key, value)| {
            summary.extra(key, value.clone())
        })
}

/// The error an interrupted run ends with: what was saved, how to go on.
pub(crate) fn interrupted_error(spec: &RunSpec, run: &Path, summary: &Summary) -> Error {
    Error::Interrupted(format!(
        "stopped after {} of {} episodes, checkpoint written; resume {} to continue \
         (--resume; RunOptions::resume)",
        summary.episodes,
        spec.train.episodes,
        run.display()
    ))
}

/// [`write_interrupted`], then [`interrupted_error`].
pub(crate) fn interrupted(
    spec: &RunSpec,
    recorder: &mut Recorder,
    counters: Counters,
) -> Result<Summary> {
    let summary = write_interrupted(spec, recorder, counters)?;
    Err(interrupted_error(spec, recorder.run.path(), &summary))
}
