//! Seeding: every random generator in shoal is derived from one user seed.

use rand::SeedableRng;
use rand::rngs::StdRng;

/// The generator shoal uses everywhere, built from a `u64` seed.
///
/// ```
/// use rand::RngExt;
/// let a: f64 = shoal_rl_core::rng_from_seed(3).random();
/// let b: f64 = shoal_rl_core::rng_from_seed(3).random();
/// assert_eq!(a, b);
/// ```
pub fn rng_from_seed(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

/// What an env's `reset(seed)` does with its seed, as Gymnasium's
/// `super().reset(seed=seed)`: `Some` starts `rng` over from that seed,
/// `None` carries on with the stream it has.
///
/// ```
/// use rand::RngExt;
/// let mut rng = shoal_rl_core::rng_from_seed(1);
/// shoal_rl_core::reseed(&mut rng, Some(3));
/// let first: f64 = rng.random();
/// shoal_rl_core::reseed(&mut rng, None);
/// let second: f64 = rng.random();
/// assert_eq!(first, shoal_rl_core::rng_from_seed(3).random::<f64>());
/// assert_ne!(first, second);
/// ```
pub fn reseed(rng: &mut StdRng, seed: Option<u64>) {
    if let Some(seed) = seed {
        *rng = rng_from_seed(seed);
    }
}

/// A seed for a sub-stream, such as worker `rank` or the evaluation env,
/// that differs from `seed` and from every other `stream` in a well-mixed way
/// (SplitMix64 finaliser), so neighbouring seeds give unrelated streams.
///
/// ```
/// use shoal_rl_core::derive_seed;
/// assert_ne!(derive_seed(1, 0), derive_seed(1, 1));
/// assert_eq!(derive_seed(1, 2), derive_seed(1, 2));
/// ```
pub fn derive_seed(seed: u64, stream: u64) -> u64 {
    let mut z = seed ^ stream.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
