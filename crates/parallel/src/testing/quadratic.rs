//! [`Quadratic`]: a tiny deterministic learner (noisy gradient descent on a
//! quadratic bowl) implementing every learner trait, for testing strategies
//! and communicators without networks or environments.

use shoal_rl_core::{
    Error, EvalReport, GradientLearner, LearnReport, Learner, MeanReducer, Result, RolloutLearner,
    derive_seed, split_parameters,
};

use crate::comm::{add_into, bytes_into_f32s, f32s_to_bytes};
use crate::strategy::worker_seed;

/// The minimum the toy learner descends toward.
const TARGET: [f32; 4] = [1.0, -2.0, 0.5, 3.0];

/// A toy learner: noisy gradient descent on `|p − (1, −2, 0.5, 3)|²`.
///
/// An "episode" takes `steps_per_episode` gradient steps; its return is the
/// negative loss afterwards. The noise of episode `k` depends only on the
/// learner's seed and `k`, which is part of the state, so runs are
/// reproducible on every backend and a resumed learner continues exactly
/// where the saved one stopped. Evaluation noise depends only on the
/// evaluation seed.
///
/// ```
/// use shoal_rl_core::Learner;
/// use shoal_rl_parallel::testing::Quadratic;
/// let mut learner = Quadratic::new(1, 1);
/// let before = learner.loss();
/// learner.learn(20).unwrap();
/// assert!(learner.loss() < before);
/// ```
#[derive(Clone, Debug)]
pub struct Quadratic {
    /// The four parameters, starting at zero.
    pub params: Vec<f32>,
    /// Step size. Default: 0.005 on rank 0, 0.05 elsewhere (the pool convention).
    pub learning_rate: f32,
    /// Amplitude of the uniform gradient noise. Default: 2.0.
    pub noise: f32,
    /// Gradient steps per episode. Default: 5.
    pub steps_per_episode: usize,
    /// Seed of this worker's noise: `worker_seed(seed, rank)`.
    pub seed: u64,
    /// Episodes trained or collected so far (part of the state).
    pub episodes_seen: u64,
    /// The first noisy gradient sample of each of this worker's training
    /// episodes, before averaging: its replay memory
    /// ([`Learner::save_memory`]), different on every worker.
    pub memory: Vec<f32>,
    /// Make `learn`, `learn_averaged` and `collect` fail once this many
    /// episodes have been seen, to test failure handling. Default: `None`.
    pub fail_after: Option<u64>,
}

impl Quadratic {
    /// Worker `rank` of a run seeded with `seed`; worker 0 uses 1/10 of the
    /// learning rate, as the pool convention goes.
    pub fn new(seed: u64, rank: usize) -> Self {
        Quadratic {
            params: vec![0.0; TARGET.len()],
            learning_rate: if rank == 0 { 0.005 } else { 0.05 },
            noise: 2.0,
            steps_per_episode: 5,
            seed: worker_seed(seed, rank),
            episodes_seen: 0,
            memory: Vec::new(),
            fail_after: None,
        }
    }

    /// The squared distance to the minimum.
    pub fn loss(&self) -> f64 {
        self.params
            .iter()
            .zip(TARGET)
            .map(|(p, t)| ((p - t) as f64).powi(2))
            .sum()
    }

    fn check_failure(&self) -> Result<()> {
        match self.fail_after {
            Some(limit) if self.episodes_seen >= limit => Err(Error::Config(format!(
                "toy learner told to fail after {limit} episodes"
            ))),
            _ => Ok(()),
        }
    }

    /// The noisy gradient samples of the next episode, at the current parameters.
    fn episode_gradients(&mut self) -> Vec<Vec<f32>> {
        let episode_seed = derive_seed(self.seed, self.episodes_seen);
        self.episodes_seen += 1;
        let mut draw = 0u64;
        (0..self.steps_per_episode)
            .map(|_| {
                self.params
                    .iter()
                    .zip(TARGET)
                    .map(|(p, t)| {
                        draw += 1;
                        2.0 * (p - t) + self.noise * uniform(episode_seed, draw)
                    })
                    .collect()
            })
            .collect()
    }

    fn step(&mut self, gradient: &[f32]) {
        for (p, g) in self.params.iter_mut().zip(gradient) {
            *p -= self.learning_rate * g;
        }
    }

    fn train(&mut self, episodes: usize, reducer: &mut dyn MeanReducer) -> Result<LearnReport> {
        let mut report = LearnReport::default();
        for _ in 0..episodes {
            self.check_failure()?;
            let gradients = self.episode_gradients();
            if let Some(first) = gradients.first() {
                self.memory.push(first[0]);
            }
            for mut gradient in gradients {
                reducer.mean(&mut gradient)?;
                self.step(&gradient);
            }
            report.episode_returns.push(-self.loss());
            report.episode_lengths.push(self.steps_per_episode as u64);
            report.episode_successes.push(self.loss() < 1.0);
        }
        report
            .scalars
            .push(("losses/quadratic".into(), self.loss()));
        Ok(report)
    }
}

impl Learner for Quadratic {
    fn learn(&mut self, episodes: usize) -> Result<LearnReport> {
        self.train(episodes, &mut shoal_rl_core::Alone)
    }

    fn evaluate(&mut self, episodes: usize, seed: u64) -> Result<EvalReport> {
        // Evaluation noise depends only on the seed, so candidates face the same episodes.
        let returns: Vec<f64> = (0..episodes)
            .map(|i| -self.loss() + 0.01 * f64::from(uniform(seed, i as u64)))
            .collect();
        let mean = returns.iter().sum::<f64>() / episodes as f64;
        let std =
            (returns.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / episodes as f64).sqrt();
        Ok(EvalReport {
            episodes,
            return_mean: mean,
            return_std: std,
            length_mean: self.steps_per_episode as f64,
            success_rate: Some(if self.loss() < 1.0 { 1.0 } else { 0.0 }),
        })
    }

    fn save_state(&self) -> Vec<u8> {
        let mut bytes = self.episodes_seen.to_le_bytes().to_vec();
        bytes.extend(f32s_to_bytes(&self.params));
        bytes
    }

    fn load_state(&mut self, bytes: &[u8]) -> Result<()> {
        let expected = 8 + 4 * self.params.len();
        if bytes.len() != expected {
            return Err(Error::Shape(format!(
                "toy state is {expected} bytes, got {}",
                bytes.len()
            )));
        }
        bytes_into_f32s(&bytes[8..], &mut self.params)?;
        self.episodes_seen = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
        Ok(())
    }

    fn save_memory(&self) -> Option<Vec<u8>> {
        Some(f32s_to_bytes(&self.memory))
    }

    fn load_memory(&mut self, bytes: &[u8]) -> Result<()> {
        if !bytes.len().is_multiple_of(4) {
            return Err(Error::Shape(format!("toy memory of {} bytes", bytes.len())));
        }
        self.memory = vec![0.0; bytes.len() / 4];
        bytes_into_f32s(bytes, &mut self.memory)
    }
}

impl GradientLearner for Quadratic {
    fn parameters(&self) -> Vec<f32> {
        self.params.clone()
    }

    fn set_parameters(&mut self, params: &[f32]) -> Result<()> {
        let parts = split_parameters(params, &[self.params.len()], "the quadratic")?;
        self.params.copy_from_slice(parts[0]);
        Ok(())
    }

    fn learn_averaged(
        &mut self,
        episodes: usize,
        reducer: &mut dyn MeanReducer,
    ) -> Result<LearnReport> {
        self.train(episodes, reducer)
    }
}

impl RolloutLearner for Quadratic {
    fn collect(&mut self, episodes: usize) -> Result<(Vec<u8>, LearnReport)> {
        let mut samples = Vec::new();
        let mut report = LearnReport::default();
        for _ in 0..episodes {
            self.check_failure()?;
            for gradient in self.episode_gradients() {
                samples.extend(gradient);
            }
            report.episode_returns.push(-self.loss());
            report.episode_lengths.push(self.steps_per_episode as u64);
        }
        Ok((f32s_to_bytes(&samples), report))
    }

    fn update(&mut self, rollouts: &[Vec<u8>]) -> Result<LearnReport> {
        let dim = self.params.len();
        let mut mean = vec![0.0f32; dim];
        let mut count = 0usize;
        for rollout in rollouts {
            let mut samples = vec![0.0f32; rollout.len() / 4];
            bytes_into_f32s(rollout, &mut samples)?;
            for gradient in samples.chunks_exact(dim) {
                add_into(&mut mean, gradient);
                count += 1;
            }
        }
        for m in &mut mean {
            *m /= count.max(1) as f32;
        }
        // Several steps on the batch mean, as a batch algorithm would.
        for _ in 0..self.steps_per_episode {
            self.step(&mean);
        }
        let mut report = LearnReport::default();
        report
            .scalars
            .push(("losses/quadratic".into(), self.loss()));
        Ok(report)
    }

    fn parameters(&self) -> Vec<f32> {
        self.params.clone()
    }

    fn set_parameters(&mut self, params: &[f32]) -> Result<()> {
        GradientLearner::set_parameters(self, params)
    }
}

/// A number in `[-1, 1)` determined by `seed` and `index` (SplitMix64 via
/// `derive_seed`), so the toy needs no random-number crate.
fn uniform(seed: u64, index: u64) -> f32 {
    let bits = derive_seed(seed, index) >> 40; // 24 bits: exact in f32
    bits as f32 / (1u64 << 23) as f32 - 1.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_noise_stays_in_range_and_is_centred() {
        let draws: Vec<f32> = (0..10_000).map(|i| uniform(3, i)).collect();
        assert!(draws.iter().all(|d| (-1.0..1.0).contains(d)));
        let mean = draws.iter().sum::<f32>() / draws.len() as f32;
        assert!(mean.abs() < 0.05, "{mean}");
    }

    #[test]
    fn state_round_trips_and_rejects_the_wrong_size() {
        let mut a = Quadratic::new(5, 1);
        a.learn(3).unwrap();
        let mut b = Quadratic::new(5, 1);
        b.load_state(&a.save_state()).unwrap();
        assert_eq!(
            (a.params.clone(), a.episodes_seen),
            (b.params.clone(), b.episodes_seen)
        );
        assert!(b.load_state(&[0; 3]).is_err());
        assert_eq!(
            b.params, a.params,
            "a failed load must leave the learner unchanged"
        );
    }

    #[test]
    fn same_seed_gives_the_same_run_and_another_seed_another() {
        let run = |seed| {
            let mut q = Quadratic::new(seed, 1);
            q.learn(4).unwrap();
            q.params
        };
        assert_eq!(run(1), run(1));
        assert_ne!(run(1), run(2));
    }
}
