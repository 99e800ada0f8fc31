//! `shoal train`: builds envs and learners from a [`RunConfig`], runs the
//! training loop (alone or through a parallel strategy), and keeps the run
//! directory — metrics, checkpoints, summary, plots — up to date.

use std::time::Instant;

use serde_json::json;
use shoal_algo::Reinforce;
use shoal_core::{Env, Error, Learner, Result, derive_seed};
use shoal_eval::{
    Checkpoint, CheckpointWriter, MetricsLog, Progress, Record, RecordKind, RunDir, Summary,
};

use crate::config::{AlgoConfig, EnvConfig, RunConfig};
use crate::progress::ProgressReporter;

/// Seed stream of the evaluation episodes: the same for every evaluation of a
/// run, so successive evaluations face the same starting states.
const EVAL_STREAM: u64 = 0xE7A1;

/// A fresh instance of the configured environment.
pub fn make_env(cfg: &EnvConfig) -> Result<Box<dyn Env>> {
    Ok(match cfg {
        EnvConfig::Worm(worm) => Box::new(shoal_env::Worm::new(worm.clone())?),
        EnvConfig::PointReach(toy) => Box::new(shoal_env::PointReach::new(toy.clone())?),
    })
}

/// The learner of worker `rank` (seeded `seed + rank`); `lr_scale`
/// multiplies its learning rates (per-worker hyperparameters of the pool).
pub fn make_learner(cfg: &RunConfig, rank: usize, lr_scale: f64) -> Result<Box<dyn Learner>> {
    let seed = cfg.seed + rank as u64;
    match &cfg.algo {
        AlgoConfig::Reinforce(algo) => {
            let mut algo = algo.clone();
            algo.learning_rate *= lr_scale;
            algo.value_learning_rate *= lr_scale;
            let learner = Reinforce::new(algo, make_env(&cfg.env)?, make_env(&cfg.env)?, seed)?;
            Ok(Box::new(learner))
        }
    }
}

/// The evaluation seed of a run.
pub fn eval_seed(cfg: &RunConfig) -> u64 {
    derive_seed(cfg.seed, EVAL_STREAM)
}

/// Where a run starts: from scratch, or from a checkpoint.
pub struct Start {
    /// Episodes already trained.
    pub episodes: u64,
    /// Env steps already taken.
    pub env_steps: u64,
    /// Wall-clock seconds already spent.
    pub wall_s: f64,
}

/// Trains a single learner (no parallel strategy) and returns the summary.
pub fn train_single(
    cfg: &RunConfig,
    run: &RunDir,
    resume: Option<&Checkpoint>,
    progress: &mut ProgressReporter,
) -> Result<Summary> {
    let mut learner = make_learner(cfg, 0, 1.0)?;
    let mut start = Start {
        episodes: 0,
        env_steps: 0,
        wall_s: 0.0,
    };
    let mut metrics = match resume {
        Some(ckpt) => {
            learner.load_state(ckpt.blob("learner")?)?;
            let p = ckpt.progress();
            start = Start {
                episodes: p.episodes,
                env_steps: p.env_steps,
                wall_s: p.wall_s,
            };
            MetricsLog::resume(run.path(), p.episodes)?
        }
        None => MetricsLog::open(run.path())?,
    };
    let clock = Instant::now();
    let wall = |start: &Start| start.wall_s + clock.elapsed().as_secs_f64();
    let (mut episodes, mut env_steps) = (start.episodes, start.env_steps);
    let config_toml = cfg.to_toml();
    progress.start(cfg.train.episodes, episodes);

    while episodes < cfg.train.episodes {
        // Train up to the next evaluation or checkpoint boundary, whichever comes first.
        let next_eval = next_multiple(episodes, cfg.train.eval_every);
        let next_ckpt = next_multiple(episodes, cfg.train.checkpoint_every);
        let chunk = next_eval.min(next_ckpt).min(cfg.train.episodes) - episodes;
        let report = learner.learn(chunk as usize)?;
        for (i, (ret, len)) in report
            .episode_returns
            .iter()
            .zip(&report.episode_lengths)
            .enumerate()
        {
            env_steps += len;
            let record = Record::new(
                RecordKind::Episode,
                episodes + i as u64 + 1,
                env_steps,
                wall(&start),
            )
            .scalar("charts/episodic_return", *ret)
            .scalar("charts/episodic_length", *len as f64);
            metrics.write(&record)?;
        }
        episodes += chunk;
        let last_return = report.episode_returns.last().copied();
        if !report.scalars.is_empty() {
            let record = Record::new(RecordKind::Update, episodes, env_steps, wall(&start))
                .scalars(report.scalars.iter().map(|(k, v)| (k.clone(), *v)));
            metrics.write(&record)?;
        }
        if episodes % cfg.train.eval_every == 0 || episodes == cfg.train.episodes {
            let eval = learner.evaluate(cfg.train.eval_episodes, eval_seed(cfg))?;
            let mut record = Record::new(RecordKind::Eval, episodes, env_steps, wall(&start))
                .scalar("eval/return_mean", eval.return_mean)
                .scalar("eval/return_std", eval.return_std);
            if let Some(rate) = eval.success_rate {
                record = record.scalar("eval/success_rate", rate);
            }
            metrics.write(&record)?;
            progress.note(&format!(
                "episode {episodes}: eval return {:.2}",
                eval.return_mean
            ));
        }
        if episodes % cfg.train.checkpoint_every == 0 || episodes == cfg.train.episodes {
            let state = learner.save_state();
            let p = Progress {
                episodes,
                env_steps,
                wall_s: wall(&start),
                iteration: 0,
                seed: cfg.seed,
            };
            CheckpointWriter::new(run.path(), &config_toml, p)
                .blob("learner", &state[..])
                .commit()?;
        }
        progress.advance(episodes, last_return);
    }
    progress.finish();
    finish_run(
        cfg,
        run,
        learner.as_mut(),
        episodes,
        env_steps,
        wall(&start),
    )
}

/// Final frozen-policy evaluation and `summary.json`, plus reference numbers
/// for the task (the worm's best travelling-wave gait).
pub fn finish_run(
    cfg: &RunConfig,
    run: &RunDir,
    learner: &mut dyn Learner,
    episodes: u64,
    env_steps: u64,
    wall_s: f64,
) -> Result<Summary> {
    let eval = learner.evaluate(cfg.train.final_eval_episodes, eval_seed(cfg))?;
    let mut summary = Summary {
        episodes,
        env_steps,
        wall_s,
        ..Summary::default()
    }
    .eval(eval.episodes as u64, eval.return_mean, eval.success_rate)
    .extra("eval_return_std", eval.return_std);
    if let EnvConfig::Worm(worm) = &cfg.env {
        let gait = shoal_env::best_travelling_wave(worm, cfg.seed);
        summary = summary
            .extra("gait_return", gait.episode_return)
            .extra("gait_speed", gait.speed)
            .extra(
                "gait",
                json!({"amplitude": gait.amplitude, "omega": gait.omega, "phase": gait.phase}),
            );
        if gait.episode_return > 0.0 {
            summary = summary.extra(
                "return_ratio_to_gait",
                eval.return_mean / gait.episode_return,
            );
        }
    }
    summary.write(run.path())?;
    Ok(summary)
}

/// The smallest multiple of `every` strictly greater than `n`.
fn next_multiple(n: u64, every: u64) -> u64 {
    let every = every.max(1);
    (n / every + 1) * every
}

/// Checks `cfg` against the config stored with a checkpoint; only the budget
/// (`train.*`) may differ on resume.
pub fn check_resume_config(ckpt: &Checkpoint, cfg: &RunConfig) -> Result<()> {
    shoal_eval::check_config_matches(ckpt.config(), &cfg.to_toml(), &["train"])
        .map_err(|e| Error::Config(format!("cannot resume: {e}")))
}
