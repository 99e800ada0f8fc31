//! Running mean / standard-deviation normaliser whose statistics can be averaged across workers.
//!
//! This is OpenAI baselines HER's `Normalizer`: statistics are kept as a sum,
//! a sum of squares and a count, `std = sqrt(max(eps², E[x²] − E[x]²))`, and
//! inputs are mapped to `clip((x − mean) / std, −clip, clip)`.
//!
//! # Keeping workers identical
//!
//! New data goes into *pending* sums ([`Normalizer::update`]); the mean and
//! standard deviation used by [`Normalizer::normalize`] only change when the
//! pending sums are folded in. In gradient-parallel training every worker
//! calls [`Normalizer::sync`] at the same point of its schedule:
//!
//! 1. [`Normalizer::pending_stats`] packs the pending sums as
//!    `[sum (dim) | sum of squares (dim) | count (1)]`, in `f32`;
//! 2. the [`MeanReducer`] replaces that vector with its mean over the
//!    workers — the same bits on every worker;
//! 3. [`Normalizer::apply_stats`] adds the averaged vector to the totals and
//!    clears the pending sums.
//!
//! Every worker therefore adds the same numbers to the same totals and holds
//! bit-identical statistics. Averaging instead of summing scales sums and
//! count alike (by 1 / world size), so mean and standard deviation equal
//! those of the pooled data; baselines synchronises the same way. On one
//! worker ([`shoal_rl_core::Alone`]) the same code runs, so single-worker and
//! parallel runs execute the same arithmetic.

use serde::{Deserialize, Serialize};
use shoal_rl_core::{Error, MeanReducer, Result};

/// Running statistics of a feature vector and the clipped standardisation they define.
///
/// ```
/// use shoal_rl_core::Alone;
/// use shoal_rl_policy::Normalizer;
/// let mut norm = Normalizer::new(1);
/// norm.update(&[1.0, 3.0]).unwrap();
/// norm.sync(&mut Alone).unwrap();
/// assert_eq!(norm.mean(), &[2.0]);
/// assert_eq!(norm.normalize(&[3.0]).unwrap(), vec![1.0]);
/// assert_eq!(norm.normalize(&[1e9]).unwrap(), vec![5.0]); // clipped
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Normalizer {
    /// Normalised values are clipped to `[-clip, clip]`. Default 5.
    clip: f32,
    /// Lower bound of the standard deviation. Default 1e-2.
    eps: f32,
    sum: Vec<f64>,
    sum_sq: Vec<f64>,
    count: f64,
    pending_sum: Vec<f64>,
    pending_sum_sq: Vec<f64>,
    pending_count: f64,
    mean: Vec<f32>,
    std: Vec<f32>,
}

impl Normalizer {
    /// A normaliser of `dim` features with clip 5 and eps 1e-2 (baselines'
    /// defaults); before any data it is the identity (mean 0, std 1) followed
    /// by clipping.
    pub fn new(dim: usize) -> Self {
        Normalizer {
            clip: 5.0,
            eps: 1e-2,
            sum: vec![0.0; dim],
            sum_sq: vec![0.0; dim],
            count: 0.0,
            pending_sum: vec![0.0; dim],
            pending_sum_sq: vec![0.0; dim],
            pending_count: 0.0,
            mean: vec![0.0; dim],
            std: vec![1.0; dim],
        }
    }

    /// Sets the clip range of normalised values (must be positive).
    #[must_use]
    pub fn with_clip(mut self, clip: f32) -> Self {
        self.clip = clip;
        self
    }

    /// Sets the lower bound of the standard deviation (must be positive).
    #[must_use]
    pub fn with_eps(mut self, eps: f32) -> Self {
        self.eps = eps;
        self.recompute();
        self
    }

    /// Checks the clip range and eps set through the builders.
    pub fn validate(&self) -> Result<()> {
        if !(self.clip > 0.0 && self.eps > 0.0) {
            return Err(Error::Config(format!(
                "normaliser clip ({}) and eps ({}) must be positive",
                self.clip, self.eps
            )));
        }
        Ok(())
    }

    /// Number of features.
    pub fn dim(&self) -> usize {
        self.mean.len()
    }

    /// Rows folded into the statistics so far (after averaging across
    /// workers, this is the per-worker mean).
    pub fn count(&self) -> f64 {
        self.count
    }

    /// Current mean of each feature.
    pub fn mean(&self) -> &[f32] {
        &self.mean
    }

    /// Current standard deviation of each feature (at least eps).
    pub fn std(&self) -> &[f32] {
        &self.std
    }

    /// Adds row-major `rows` (a multiple of [`Normalizer::dim`] values) to the
    /// pending sums. The statistics in use do not change until the next sync.
    pub fn update(&mut self, rows: &[f32]) -> Result<()> {
        let dim = self.dim();
        if dim == 0 || !rows.len().is_multiple_of(dim) {
            return Err(Error::Shape(format!(
                "normaliser of {dim} features got {} values",
                rows.len()
            )));
        }
        if let Some(bad) = rows.iter().find(|v| !v.is_finite()) {
            return Err(Error::Shape(format!(
                "normaliser input is not finite ({bad})"
            )));
        }
        for row in rows.chunks_exact(dim) {
            for (i, &v) in row.iter().enumerate() {
                let v = v as f64;
                self.pending_sum[i] += v;
                self.pending_sum_sq[i] += v * v;
            }
        }
        self.pending_count += (rows.len() / dim) as f64;
        Ok(())
    }

    /// The pending sums since the last sync, as `[sum | sum of squares | count]`
    /// (`2·dim + 1` values) ready for a [`MeanReducer`].
    pub fn pending_stats(&self) -> Vec<f32> {
        let mut out = Vec::with_capacity(2 * self.dim() + 1);
        out.extend(self.pending_sum.iter().map(|v| *v as f32));
        out.extend(self.pending_sum_sq.iter().map(|v| *v as f32));
        out.push(self.pending_count as f32);
        out
    }

    /// Folds a (possibly averaged) [`Normalizer::pending_stats`] vector into
    /// the totals, clears the pending sums and recomputes mean and std.
    pub fn apply_stats(&mut self, stats: &[f32]) -> Result<()> {
        let dim = self.dim();
        if stats.len() != 2 * dim + 1 {
            return Err(Error::Shape(format!(
                "normaliser statistics have {} values, expected {}",
                stats.len(),
                2 * dim + 1
            )));
        }
        if stats.iter().any(|v| !v.is_finite()) || stats[2 * dim] < 0.0 {
            return Err(Error::Shape("normaliser statistics are not finite".into()));
        }
        for i in 0..dim {
            self.sum[i] += stats[i] as f64;
            self.sum_sq[i] += stats[dim + i] as f64;
        }
        self.count += stats[2 * dim] as f64;
        self.pending_sum.iter_mut().for_each(|v| *v = 0.0);
        self.pending_sum_sq.iter_mut().for_each(|v| *v = 0.0);
        self.pending_count = 0.0;
        self.recompute();
        Ok(())
    }

    /// Averages the pending sums across workers through `reducer` and folds
    /// them in (see the module docs for why this keeps workers identical).
    pub fn sync(&mut self, reducer: &mut dyn MeanReducer) -> Result<()> {
        let mut stats = self.pending_stats();
        reducer.mean(&mut stats)?;
        self.apply_stats(&stats)
    }

    fn recompute(&mut self) {
        if self.count <= 0.0 {
            return;
        }
        let eps_sq = (self.eps as f64).powi(2);
        for i in 0..self.dim() {
            let mean = self.sum[i] / self.count;
            let var = (self.sum_sq[i] / self.count - mean * mean).max(eps_sq);
            self.mean[i] = mean as f32;
            self.std[i] = var.sqrt() as f32;
        }
    }

    /// The mean and standard deviation in use, as `[mean | std]` (`2·dim`
    /// values): what a worker that acts with another learner's statistics
    /// needs (rollout gathering, where only rank 0 sees every observation).
    pub fn in_use(&self) -> Vec<f32> {
        let mut out = self.mean.clone();
        out.extend_from_slice(&self.std);
        out
    }

    /// Acts with another normaliser's [`Normalizer::in_use`] statistics from
    /// now on. The totals stay as they are, so the next sync recomputes
    /// mean and std from this normaliser's own data.
    pub fn use_statistics(&mut self, in_use: &[f32]) -> Result<()> {
        let dim = self.dim();
        if in_use.len() != 2 * dim {
            return Err(Error::Shape(format!(
                "normaliser statistics in use have {} values, expected {}",
                in_use.len(),
                2 * dim
            )));
        }
        let (mean, std) = in_use.split_at(dim);
        if mean.iter().any(|v| !v.is_finite()) || std.iter().any(|s| !(s.is_finite() && *s > 0.0)) {
            return Err(Error::Shape(
                "normaliser statistics in use must be finite, with positive std".into(),
            ));
        }
        self.mean.copy_from_slice(mean);
        self.std.copy_from_slice(std);
        Ok(())
    }

    /// `clip((x − mean) / std, −clip, clip)` of row-major `rows`.
    pub fn normalize(&self, rows: &[f32]) -> Result<Vec<f32>> {
        let mut out = Vec::with_capacity(rows.len());
        self.normalize_into(rows, &mut out)?;
        Ok(out)
    }

    /// Like [`Normalizer::normalize`], appending to `out` (no allocation in hot loops).
    pub fn normalize_into(&self, rows: &[f32], out: &mut Vec<f32>) -> Result<()> {
        self.normalize_clipped_into(rows, f32::INFINITY, out)
    }

    /// Like [`Normalizer::normalize_into`], but first clamps raw values to
    /// `[-input_clip, input_clip]` (baselines' `clip_obs`, which keeps one wild
    /// observation from dominating).
    pub fn normalize_clipped_into(
        &self,
        rows: &[f32],
        input_clip: f32,
        out: &mut Vec<f32>,
    ) -> Result<()> {
        let dim = self.dim();
        if dim == 0 || !rows.len().is_multiple_of(dim) {
            return Err(Error::Shape(format!(
                "normaliser of {dim} features got {} values",
                rows.len()
            )));
        }
        for row in rows.chunks_exact(dim) {
            out.extend(
                row.iter()
                    .zip(self.mean.iter().zip(&self.std))
                    .map(|(x, (m, s))| {
                        ((x.clamp(-input_clip, input_clip) - m) / s).clamp(-self.clip, self.clip)
                    }),
            );
        }
        Ok(())
    }
}

/// The two normalisers of a goal-conditioned network's input — one for the
/// observation part, one for the goal — as DDPG and every HAC level keep
/// them. Inputs are clamped to ±`clip_obs` (baselines' `clip_obs`) before
/// they are counted or normalised.
///
/// ```
/// use shoal_rl_core::Alone;
/// use shoal_rl_policy::GoalNormalizer;
///
/// let mut norms = GoalNormalizer::new(2, 1, 5.0, 0.01);
/// norms.update_clamped(&[1.0, 2.0, 3.0, 4.0], &[0.5, 1.5], 200.0).unwrap();
/// GoalNormalizer::sync_all([&mut norms], &mut Alone).unwrap();
/// let mut input = Vec::new();
/// norms.push_input(&[2.0, 3.0], &[1.0], 200.0, &mut input).unwrap();
/// assert_eq!(input, vec![0.0, 0.0, 0.0]); // the means map to zero
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GoalNormalizer {
    /// Normaliser of the observation part.
    pub obs: Normalizer,
    /// Normaliser of the goal.
    pub goal: Normalizer,
}

impl GoalNormalizer {
    /// Fresh normalisers of `obs_dim` and `goal_dim` features, clipping
    /// normalised values to ±`clip` with standard deviations of at least `eps`.
    pub fn new(obs_dim: usize, goal_dim: usize, clip: f32, eps: f32) -> Self {
        let normalizer = |dim| Normalizer::new(dim).with_clip(clip).with_eps(eps);
        GoalNormalizer {
            obs: normalizer(obs_dim),
            goal: normalizer(goal_dim),
        }
    }

    /// Counts row-major observation parts and goals, each clamped to
    /// ±`clip_obs` first, into the pending statistics.
    pub fn update_clamped(&mut self, obs: &[f32], goals: &[f32], clip_obs: f32) -> Result<()> {
        let clamp = |v: &[f32]| {
            v.iter()
                .map(|x| x.clamp(-clip_obs, clip_obs))
                .collect::<Vec<_>>()
        };
        self.obs.update(&clamp(obs))?;
        if self.without_goals(goals) {
            return Ok(());
        }
        self.goal.update(&clamp(goals))
    }

    /// A task without goals (goal width 0, e.g. a plain env under DDPG)
    /// keeps no goal statistics; its empty goals pass through as nothing.
    fn without_goals(&self, goals: &[f32]) -> bool {
        self.goal.dim() == 0 && goals.is_empty()
    }

    /// Appends the network input for observation part `obs` and goal `goal`:
    /// each clamped to ±`clip_obs`, then normalised.
    pub fn push_input(
        &self,
        obs: &[f32],
        goal: &[f32],
        clip_obs: f32,
        out: &mut Vec<f32>,
    ) -> Result<()> {
        self.obs.normalize_clipped_into(obs, clip_obs, out)?;
        if self.without_goals(goal) {
            return Ok(());
        }
        self.goal.normalize_clipped_into(goal, clip_obs, out)
    }

    /// Averages the pending statistics of every normaliser in `all` (each
    /// pair's observation, then goal statistics, in order) in one reducer
    /// call and folds them in, so workers call the reducer equally often
    /// however many normalisers they keep.
    pub fn sync_all<'a>(
        all: impl IntoIterator<Item = &'a mut GoalNormalizer>,
        reducer: &mut dyn MeanReducer,
    ) -> Result<()> {
        let all: Vec<&mut GoalNormalizer> = all.into_iter().collect();
        let mut stats = Vec::new();
        let mut ends = Vec::with_capacity(2 * all.len());
        for norms in &all {
            stats.extend(norms.obs.pending_stats());
            ends.push(stats.len());
            stats.extend(norms.goal.pending_stats());
            ends.push(stats.len());
        }
        reducer.mean(&mut stats)?;
        let mut start = 0;
        for (norms, ends) in all.into_iter().zip(ends.chunks_exact(2)) {
            norms.obs.apply_stats(&stats[start..ends[0]])?;
            norms.goal.apply_stats(&stats[ends[0]..ends[1]])?;
            start = ends[1];
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_rl_core::Alone;

    /// A reducer standing in for two workers, the other of which sent `other`.
    struct TwoWorkers(Vec<f32>);
    impl MeanReducer for TwoWorkers {
        fn mean(&mut self, values: &mut [f32]) -> Result<()> {
            values
                .iter_mut()
                .zip(&self.0)
                .for_each(|(v, o)| *v = 0.5 * (*v + o));
            Ok(())
        }
    }

    #[test]
    fn statistics_match_numpy_population_mean_and_std() {
        // numpy: x.mean(0) = [3, 5], x.std(0) = [1.6329932, 2.9439203]
        let mut norm = Normalizer::new(2);
        norm.update(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        norm.update(&[5.0, 9.0]).unwrap();
        norm.sync(&mut Alone).unwrap();
        assert_eq!(norm.count(), 3.0);
        assert!((norm.mean()[0] - 3.0).abs() < 1e-6 && (norm.mean()[1] - 5.0).abs() < 1e-6);
        assert!((norm.std()[0] - 1.632_993_2).abs() < 1e-5);
        assert!((norm.std()[1] - 2.943_920_3).abs() < 1e-5);
        let z = norm.normalize(&[1.0, 9.0]).unwrap();
        assert!((z[0] + 2.0 / 1.632_993_2).abs() < 1e-5);
        assert!((z[1] - 4.0 / 2.943_920_3).abs() < 1e-5);
    }

    #[test]
    fn statistics_accumulate_over_several_syncs() {
        let mut norm = Normalizer::new(1);
        norm.update(&[1.0, 2.0]).unwrap();
        norm.sync(&mut Alone).unwrap();
        norm.update(&[6.0]).unwrap();
        norm.sync(&mut Alone).unwrap();
        assert!((norm.mean()[0] - 3.0).abs() < 1e-6);
    }

    #[test]
    fn normalised_values_are_clipped_and_std_has_a_floor() {
        let mut norm = Normalizer::new(1).with_clip(2.0).with_eps(0.5);
        norm.update(&[1.0, 1.0, 1.0]).unwrap();
        norm.sync(&mut Alone).unwrap();
        assert_eq!(norm.std(), &[0.5]);
        assert_eq!(
            norm.normalize(&[1.25, 100.0, -100.0]).unwrap(),
            vec![0.5, 2.0, -2.0]
        );
        let mut out = Vec::new();
        norm.normalize_clipped_into(&[1.25, 1.6], 1.5, &mut out)
            .unwrap();
        assert_eq!(out, vec![0.5, 1.0]);
    }

    #[test]
    fn statistics_are_unused_until_synced_and_identity_when_empty() {
        let mut norm = Normalizer::new(2);
        assert_eq!(norm.normalize(&[0.5, -7.0]).unwrap(), vec![0.5, -5.0]);
        norm.update(&[10.0, 10.0]).unwrap();
        assert_eq!(norm.mean(), &[0.0, 0.0]);
        norm.sync(&mut Alone).unwrap();
        assert_eq!(norm.mean(), &[10.0, 10.0]);
    }

    #[test]
    fn averaging_pending_stats_gives_the_pooled_statistics() {
        // Worker A saw {0, 2}, worker B saw {4, 6, 8}: pooled mean 4, var 8.
        let mut worker_b = Normalizer::new(1);
        worker_b.update(&[4.0, 6.0, 8.0]).unwrap();
        let mut worker_a = Normalizer::new(1);
        worker_a.update(&[0.0, 2.0]).unwrap();
        worker_a
            .sync(&mut TwoWorkers(worker_b.pending_stats()))
            .unwrap();
        assert!((worker_a.mean()[0] - 4.0).abs() < 1e-6);
        assert!((worker_a.std()[0] - 8f32.sqrt()).abs() < 1e-5);
    }

    #[test]
    fn bad_shapes_and_non_finite_values_are_errors() {
        let message = |result: Result<()>| result.unwrap_err().to_string();
        let mut norm = Normalizer::new(2);
        assert_eq!(
            message(norm.update(&[1.0, 2.0, 3.0])),
            "shape mismatch: normaliser of 2 features got 3 values"
        );
        assert_eq!(
            message(norm.update(&[1.0, f32::NAN])),
            "shape mismatch: normaliser input is not finite (NaN)"
        );
        assert_eq!(
            message(norm.normalize(&[1.0]).map(drop)),
            "shape mismatch: normaliser of 2 features got 1 values"
        );
        assert_eq!(
            message(norm.apply_stats(&[0.0; 4])),
            "shape mismatch: normaliser statistics have 4 values, expected 5"
        );
        assert_eq!(
            message(norm.apply_stats(&[0.0, 0.0, 0.0, 0.0, -1.0])),
            "shape mismatch: normaliser statistics are not finite",
            "a negative count"
        );
        assert!(matches!(
            Normalizer::new(1).with_clip(0.0).validate(),
            Err(Error::Config(m)) if m == "normaliser clip (0) and eps (0.01) must be positive"
        ));
        // The rejected calls changed nothing.
        assert_eq!(norm.pending_stats(), vec![0.0; 5]);
        assert_eq!((norm.count(), norm.mean()), (0.0, &[0.0, 0.0][..]));
    }
}
