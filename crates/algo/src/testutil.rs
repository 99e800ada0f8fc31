//! Fixtures the algorithm tests share: two workers on threads with a reducer between them, and the goal task they learn.

use std::sync::{Arc, Barrier, Mutex};

use shoal_core::{Error, MeanReducer, Result};
use shoal_env::{PointGoal, PointGoalConfig};

/// Stands in for two workers on threads: each `mean` call waits for the
/// other and averages in rank order, so both get the same bits — what the
/// threads backend's all-reduce guarantees.
pub(crate) struct PairReducer {
    rank: usize,
    slots: Arc<Mutex<[Vec<f32>; 2]>>,
    barrier: Arc<Barrier>,
}

impl MeanReducer for PairReducer {
    fn mean(&mut self, values: &mut [f32]) -> Result<()> {
        self.slots.lock().unwrap()[self.rank] = values.to_vec();
        self.barrier.wait();
        let agreed = {
            let slots = self.slots.lock().unwrap();
            let agreed = slots[0].len() == slots[1].len();
            if agreed {
                for (i, v) in values.iter_mut().enumerate() {
                    *v = (slots[0][i] + slots[1][i]) / 2.0;
                }
            }
            agreed
        };
        // Both wait here even on a mismatch, so neither is left hanging.
        self.barrier.wait();
        if agreed {
            Ok(())
        } else {
            Err(Error::Comm(
                "workers reduced vectors of different lengths".into(),
            ))
        }
    }
}

/// Runs `work(rank, reducer)` for ranks 0 and 1 on two threads joined by a
/// [`PairReducer`]; returns their results in rank order.
pub(crate) fn two_workers<T: Send>(work: impl Fn(usize, &mut PairReducer) -> T + Sync) -> Vec<T> {
    let slots = Arc::new(Mutex::new([Vec::new(), Vec::new()]));
    let barrier = Arc::new(Barrier::new(2));
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..2)
            .map(|rank| {
                let mut reducer = PairReducer {
                    rank,
                    slots: slots.clone(),
                    barrier: barrier.clone(),
                };
                let work = &work;
                scope.spawn(move || work(rank, &mut reducer))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// The goal task the DDPG and HAC tests learn: [`PointGoal`] with a wider
/// success radius (0.1) and a faster point (0.2 per step), truncated after
/// `max_steps`.
pub(crate) fn point_goal(max_steps: usize) -> PointGoal {
    PointGoal::new(
        PointGoalConfig::default()
            .distance_threshold(0.1)
            .max_speed(0.2)
            .max_episode_steps(max_steps),
    )
    .unwrap()
}
