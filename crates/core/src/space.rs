//! Bounded continuous spaces (Gymnasium's `Box`).

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// A box in ℝⁿ with per-component bounds, like Gymnasium's `spaces.Box`.
///
/// Bounds may be infinite (observations usually are).
///
/// ```
/// use shoal_rl_core::Space;
/// let space = Space::uniform(2, -1.0, 1.0);
/// assert_eq!(space.dim(), 2);
/// assert_eq!(space.validate(&[2.0, 0.0], true).unwrap().as_ref(), &[1.0, 0.0]);
/// assert!(space.validate(&[2.0, 0.0], false).is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Space {
    /// Lower bound of each component.
    pub low: Vec<f32>,
    /// Upper bound of each component.
    pub high: Vec<f32>,
}

impl Space {
    /// A box with the given bounds.
    ///
    /// # Panics
    /// If the bounds differ in length or some `low > high`: a space is built
    /// by code, not from user input, so this is a programming error.
    pub fn new(low: Vec<f32>, high: Vec<f32>) -> Self {
        assert_eq!(low.len(), high.len(), "space bounds differ in length");
        assert!(
            low.iter().zip(&high).all(|(l, h)| l <= h),
            "space has low > high"
        );
        Space { low, high }
    }

    /// A `dim`-dimensional box with the same bounds on every component.
    pub fn uniform(dim: usize, low: f32, high: f32) -> Self {
        Space::new(vec![low; dim], vec![high; dim])
    }

    /// An unbounded `dim`-dimensional space.
    pub fn unbounded(dim: usize) -> Self {
        Space::uniform(dim, f32::NEG_INFINITY, f32::INFINITY)
    }

    /// Number of components.
    pub fn dim(&self) -> usize {
        self.low.len()
    }

    /// Whether `x` has the right length and lies inside the bounds.
    pub fn contains(&self, x: &[f32]) -> bool {
        x.len() == self.dim()
            && x.iter()
                .zip(self.low.iter().zip(&self.high))
                .all(|(v, (l, h))| *l <= *v && *v <= *h)
    }

    /// Checks an action: wrong length or a non-finite component is always an
    /// error; an out-of-range component is clipped when `clip` is true and an
    /// error otherwise. Borrows when nothing had to change.
    pub fn validate<'a>(&self, action: &'a [f32], clip: bool) -> Result<Cow<'a, [f32]>> {
        if action.len() != self.dim() {
            return Err(Error::ActionShape {
                expected: self.dim(),
                got: action.len(),
            });
        }
        if let Some((index, &value)) = action.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(Error::NonFiniteAction { index, value });
        }
        if self.contains(action) {
            return Ok(Cow::Borrowed(action));
        }
        if !clip {
            let index = (0..self.dim())
                .find(|&i| !(self.low[i] <= action[i] && action[i] <= self.high[i]))
                .expect("an out-of-range component exists");
            return Err(Error::ActionOutOfBounds {
                index,
                value: action[index],
                low: self.low[index],
                high: self.high[index],
            });
        }
        Ok(Cow::Owned(self.clip(action)))
    }

    /// Clamps every component into the bounds.
    pub fn clip(&self, x: &[f32]) -> Vec<f32> {
        x.iter()
            .zip(self.low.iter().zip(&self.high))
            .map(|(v, (l, h))| v.clamp(*l, *h))
            .collect()
    }

    /// Maps `u ∈ [0, 1]ⁿ` affinely onto the box (the box must be bounded).
    pub fn from_unit(&self, u: &[f32]) -> Vec<f32> {
        u.iter()
            .zip(self.low.iter().zip(&self.high))
            .map(|(u, (l, h))| l + u * (h - l))
            .collect()
    }

    /// Maps `a ∈ [-1, 1]ⁿ` affinely onto the box (the box must be bounded).
    pub fn from_symmetric(&self, a: &[f32]) -> Vec<f32> {
        self.from_unit(&a.iter().map(|a| 0.5 * (a + 1.0)).collect::<Vec<_>>())
    }

    /// Inverse of [`Space::from_unit`].
    pub fn to_unit(&self, x: &[f32]) -> Vec<f32> {
        x.iter()
            .zip(self.low.iter().zip(&self.high))
            .map(|(x, (l, h))| (x - l) / (h - l))
            .collect()
    }

    /// A uniformly random point of a bounded box.
    pub fn sample(&self, rng: &mut impl rand::Rng) -> Vec<f32> {
        use rand::RngExt;
        self.low
            .iter()
            .zip(&self.high)
            .map(|(l, h)| rng.random_range(*l..=*h))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validate_rejects_nan_and_wrong_length() {
        let s = Space::uniform(2, -1.0, 1.0);
        assert!(matches!(
            s.validate(&[f32::NAN, 0.0], true),
            Err(Error::NonFiniteAction { index: 0, .. })
        ));
        assert!(matches!(
            s.validate(&[0.0], true),
            Err(Error::ActionShape {
                expected: 2,
                got: 1
            })
        ));
        assert!(matches!(
            s.validate(&[0.0, 1.5], false),
            Err(Error::ActionOutOfBounds { index: 1, .. })
        ));
    }

    #[test]
    fn unit_mapping_round_trips() {
        let s = Space::new(vec![-2.0, 0.0], vec![2.0, 10.0]);
        let x = s.from_unit(&[0.25, 0.5]);
        assert_eq!(x, vec![-1.0, 5.0]);
        assert_eq!(s.to_unit(&x), vec![0.25, 0.5]);
        assert_eq!(s.from_symmetric(&[0.0, 1.0]), vec![0.0, 10.0]);
    }
}
