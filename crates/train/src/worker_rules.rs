//! The worker-aware defaults of a preset trained on several workers: the
//! settings that set the update work per episode of experience, or the
//! pool's spread of candidates, follow `parallel.workers` unless an
//! override names them. Each rule was chosen by measurements:
//!
//! - Under gradient averaging, the workers of DDPG and HAC share the
//!   preset's batch (`algo.batch_size` = batch / N, at least 1), so each
//!   update still averages one batch's worth of samples. For DDPG at 8
//!   workers that projected a median efficiency of 0.91 against 0.56
//!   with a full batch each, and at 4 workers 1.35 against 0.68
//!   (docs/experiments/scaling-push.md); for HAC, two workers on two
//!   cores reached 0.9 sooner than one (docs/experiments/hac-shared-batch.md).
//!   Past 4 workers DDPG's workers each draw a quarter of the batch and
//!   make fewer updates, the samples per cycle about unchanged
//!   ([`averaging_ddpg_work`]; a named `algo.n_batches` stays, a named
//!   `algo.batch_size` keeps both): 20 updates of 64 samples a worker
//!   on 8 workers projected a median efficiency of 1.83 against 1.03
//!   for 40 of 32, and 10 of 64 on 16 workers 1.08 against 0.46 for
//!   40 of 16 (docs/experiments/push-16-workers-batch.md).
//!   PPO keeps its settings: neither averaging nor gathering reached the
//!   gait sooner than one worker (docs/experiments/ppo-gather-scaling.md).
//! - Under gradient averaging, each DDPG or HAC worker trains at least a
//!   third of the preset's `train.episodes` ([`averaging_budget`]),
//!   unless `train.episodes` is named. A worker of many learns less per
//!   episode than one learner, so the shared budget left too few
//!   episodes each: `push-ddpg-her`'s workers needed up to 1 612 episodes
//!   each to reach 0.9 on 4 workers, 1 116 on 8 and 1 140 on 16
//!   (docs/experiments/scaling-push-defaults.md,
//!   docs/experiments/push-16-workers-batch.md), where 6 000 shared
//!   gives 1 500, 750 and 375; `push-hac`'s workers needed up to 3 100
//!   each on 4 workers and 1 550 on 8, where its 12 000 shared gives
//!   3 000 and 1 500 (docs/experiments/scaling-hac.md).
//!   `train.eval_every` and `train.checkpoint_every` (unless named)
//!   grow with the budget, so the run evaluates and checkpoints as
//!   often as the preset's: rank 0 evaluates while the others wait,
//!   and at 16 workers every 500 episodes would be 64 evaluations.
//! - A REINFORCE pool of 4 or more candidates (workers, or groups of
//!   `parallel.pool_group_size`) spreads their learning rates over a
//!   decade ([`spread_lr_scales`]) in place of the preset's
//!   `parallel.worker_lr_scales`, which were chosen for 2 workers: on
//!   the 5-link worm, projected onto one core per worker, the spread
//!   pool reached the first target 3.2× and 4.9× sooner than the best
//!   single learner with 10 and 16 workers (seeds 0–2; 1.8× and 3.9× on
//!   six), where the preset's pool gave 2.0× and 1.6×, and tied with it
//!   at 4 (docs/experiments/pool-lr-spread.md); on 7 links, 10 workers
//!   gave 2.6× against the preset's 1.6×
//!   (docs/experiments/pool-spread-worms.md).
//!
//! Applied to presets only: a config file (a run's saved `config.toml`
//! among them) already holds the values it trains with.
//!
//! A strategy says what its workers share ([`Share`]); each algorithm's
//! entry applies its own rules to that ([`AlgoEntry::worker_rules`](crate::algos::AlgoEntry::worker_rules)),
//! with the helpers here.

use crate::config::{RunConfig, TrainConfig};

/// What one worker's learner gets of a run, as the run's strategy divides
/// it ([`StrategyEntry::share`](crate::strategies::StrategyEntry::share)):
/// what algorithms size their memory and schedules by, and what their
/// worker rules read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Share {
    /// Workers in the run.
    pub workers: usize,
    /// The episodes whose experience this worker's updates learn from
    /// (PPO anneals its learning rate over them).
    pub episodes: u64,
    /// The env steps this worker collects, when the run counts steps
    /// (`train.env_steps`).
    pub env_steps: Option<u64>,
    /// This worker holds `1 / replay_split` of the run's replay capacity.
    pub replay_split: usize,
    /// Whether the workers hold one set of parameters by averaging
    /// gradients: together they are one learner.
    pub averages_gradients: bool,
    /// The pool's candidates, whose settings may differ; `None` when every
    /// worker trains the run's settings.
    pub candidates: Option<usize>,
}

impl Share {
    /// Each worker a learner of its own with an equal part of the budget:
    /// what a strategy shares unless its entry says otherwise.
    pub fn separate(workers: usize, train: &TrainConfig) -> Share {
        let workers = workers.max(1);
        Share {
            workers,
            episodes: train.episodes.div_ceil(workers as u64),
            env_steps: train.env_steps.map(|steps| steps.div_ceil(workers as u64)),
            replay_split: 1,
            averages_gradients: false,
            candidates: None,
        }
    }

    /// One worker's part of a replay capacity of `total` (at least 1).
    pub fn replay(&self, total: usize) -> usize {
        (total / self.replay_split.max(1)).max(1)
    }
}

/// The keys a preset's overrides name, which worker rules leave as given.
#[derive(Clone, Copy, Debug)]
pub struct Named<'a>(pub &'a [String]);

impl Named<'_> {
    /// Whether an override sets `key`.
    pub fn has(&self, key: &str) -> bool {
        self.0
            .iter()
            .any(|o| o.split_once('=').is_some_and(|(k, _)| k.trim() == key))
    }
}

/// The rules every learner whose averaging workers are one learner
/// (DDPG's agent, HAC) starts with: on 2 or more such workers the budget
/// is raised ([`raise_averaging_budget`]). Returns whether the batch is
/// then the algorithm's to share (it is, unless `algo.batch_size` is
/// named).
pub fn averaged_batch_follows(cfg: &mut RunConfig, share: &Share, named: Named<'_>) -> bool {
    if !share.averages_gradients || share.workers < 2 {
        return false;
    }
    raise_averaging_budget(cfg, share, named);
    !named.has("algo.batch_size")
}

/// Sets `train.episodes` of averaging workers to [`averaging_budget`]
/// (unless named) and stretches `train.eval_every` and
/// `train.checkpoint_every` (those not named) by the same factor, so the
/// run evaluates and checkpoints as often as the preset's.
pub fn raise_averaging_budget(cfg: &mut RunConfig, share: &Share, named: Named<'_>) {
    if named.has("train.episodes") {
        return;
    }
    let budget = averaging_budget(cfg.train.episodes, share.workers);
    let before = cfg.train.episodes.max(1);
    let stretch = |every: u64| (every as u128 * budget as u128 / before as u128) as u64;
    if !named.has("train.eval_every") {
        cfg.train.eval_every = stretch(cfg.train.eval_every);
    }
    if !named.has("train.checkpoint_every") {
        cfg.train.checkpoint_every = stretch(cfg.train.checkpoint_every);
    }
    cfg.train.episodes = budget;
}

/// The most averaging workers among which [`averaging_ddpg_work`] splits
/// a DDPG preset's batch; from there on each worker draws a quarter of it.
pub const SPLIT_BATCH_UP_TO: usize = 4;

/// The batch per worker and the updates per cycle of DDPG on `workers`
/// gradient-averaging workers, from one learner's `batch` and `n_batches`.
/// Every cycle the workers together draw about `batch × n_batches`
/// samples, as one learner does. Up to [`SPLIT_BATCH_UP_TO`] workers they
/// share the batch (`batch / workers` each) and make the same updates;
/// past it each draws `batch / SPLIT_BATCH_UP_TO` and makes
/// `n_batches × SPLIT_BATCH_UP_TO / workers` updates, rounded, because a
/// small batch pays an update's fixed cost and its all-reduce for few
/// samples: 64 samples and 20 updates for `push-ddpg-her` on 8 workers,
/// 64 and 10 on 16.
pub fn averaging_ddpg_work(batch: usize, n_batches: usize, workers: usize) -> (usize, usize) {
    let workers = workers.max(1);
    if workers <= SPLIT_BATCH_UP_TO {
        return (shared_batch(batch, workers), n_batches);
    }
    let updates = (n_batches * SPLIT_BATCH_UP_TO) as f64 / workers as f64;
    (
        (batch / SPLIT_BATCH_UP_TO).max(1),
        (updates.round() as usize).max(1),
    )
}

/// The share of a preset's `train.episodes` below which
/// [`averaging_budget`] does not let an averaging worker's episodes fall:
/// a third.
pub const AVERAGING_MIN_SHARE: u64 = 3;

/// `train.episodes` for `workers` gradient-averaging DDPG or HAC workers
/// from a preset's `episodes`: shared as before while each worker's part
/// is at least `episodes / AVERAGING_MIN_SHARE`, raised to that many per
/// worker past it. `push-ddpg-her`'s 6 000 stay 6 000 on 2 workers and
/// become 8 000 on 4, 16 000 on 8 and 32 000 on 16.
pub fn averaging_budget(episodes: u64, workers: usize) -> u64 {
    episodes.max(workers as u64 * episodes.div_ceil(AVERAGING_MIN_SHARE))
}

/// One worker's part of a `batch` that `workers` averaging workers share
/// (at least 1): together they draw what one learner draws.
pub fn shared_batch(batch: usize, workers: usize) -> usize {
    (batch / workers.max(1)).max(1)
}

/// The fewest pool candidates whose learning rates
/// [`Registries::resolve`](crate::Registries::resolve) spreads: 2 and 3 keep the preset's
/// (measured at 2).
pub const SPREAD_POOL_FROM: usize = 4;

/// Learning-rate multipliers for `workers` pool candidates, evenly spaced in
/// log scale from 1 to 10 and rounded to one decimal: 1.0, 2.2, 4.6, 10.0
/// for 4 workers. The candidates try a decade of step sizes each iteration
/// and the pool keeps whichever learned best, so a step too large for a
/// single learner costs one candidate, not the run.
pub fn spread_lr_scales(workers: usize) -> Vec<f64> {
    if workers < 2 {
        return vec![1.0; workers];
    }
    let last = (workers - 1) as f64;
    (0..workers)
        .map(|i| (10f64.powf(i as f64 / last) * 10.0).round() / 10.0)
        .collect()
}
