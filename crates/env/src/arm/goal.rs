//! Goal arithmetic shared by the arm tasks: distances, the sparse reward, start and goal sampling.

use rand::{Rng, RngExt};

/// Euclidean distance between two goals (m). Extra components of the longer
/// slice are ignored.
pub fn goal_distance(achieved: &[f32], desired: &[f32]) -> f32 {
    achieved
        .iter()
        .zip(desired)
        .map(|(a, d)| (a - d) * (a - d))
        .sum::<f32>()
        .sqrt()
}

/// Whether `achieved` lies strictly closer than `threshold` to `desired`.
pub fn within_threshold(achieved: &[f32], desired: &[f32], threshold: f32) -> bool {
    goal_distance(achieved, desired) < threshold
}

/// FetchPush's sparse reward: 0 when the goal is reached, −1 otherwise.
pub fn sparse_reward(achieved: &[f32], desired: &[f32], threshold: f32) -> f32 {
    if within_threshold(achieved, desired, threshold) {
        0.0
    } else {
        -1.0
    }
}

/// A uniform point of the rectangle `center ± half` (m).
pub(crate) fn sample_rect(rng: &mut impl Rng, center: [f32; 2], half: [f32; 2]) -> [f32; 2] {
    [
        center[0] + rng.random_range(-half[0]..=half[0]),
        center[1] + rng.random_range(-half[1]..=half[1]),
    ]
}

/// A uniform point of the rectangle `center ± half` at least `min_distance`
/// from `away_from` (rejection sampling).
///
/// The callers' config validation guarantees that such points make up a
/// sizeable part of the rectangle, so the loop ends after a few draws.
pub(crate) fn sample_rect_away_from(
    rng: &mut impl Rng,
    center: [f32; 2],
    half: [f32; 2],
    away_from: [f32; 2],
    min_distance: f32,
) -> [f32; 2] {
    loop {
        let p = sample_rect(rng, center, half);
        if goal_distance(&p, &away_from) >= min_distance {
            return p;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_reward_is_zero_inside_and_minus_one_outside_the_threshold() {
        assert_eq!(
            sparse_reward(&[0.0, 0.0, 0.0], &[0.03, 0.0, 0.0], 0.05),
            0.0
        );
        assert_eq!(
            sparse_reward(&[0.0, 0.0, 0.0], &[0.0, 0.06, 0.0], 0.05),
            -1.0
        );
        assert_eq!(
            sparse_reward(&[0.0, 0.0, 0.0], &[0.0, 0.0, 0.05], 0.05),
            -1.0
        );
        assert!((goal_distance(&[1.0, 2.0, 2.0], &[0.0; 3]) - 3.0).abs() < 1e-6);
    }

    #[test]
    fn sampled_points_keep_their_distance() {
        let mut rng = shoal_rl_core::rng_from_seed(1);
        for _ in 0..1000 {
            let p = sample_rect_away_from(&mut rng, [0.0, 0.0], [0.15, 0.15], [0.0, 0.0], 0.1);
            assert!(goal_distance(&p, &[0.0, 0.0]) >= 0.1);
            assert!(p[0].abs() <= 0.15 && p[1].abs() <= 0.15);
        }
    }
}
