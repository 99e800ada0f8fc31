//! Fixtures the algorithm tests share: two workers on threads with a reducer between them, and the goal task they learn.

use std::sync::{Arc, Barrier, Mutex};

use shoal_rl_core::{Error, MeanReducer, Result};
use shoal_rl_env::{PointGoal, PointGoalConfig};

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

/// A single worker's reducer that records every message it is asked to
/// average and hands back what `tamper(index, message)` makes of it — the
/// identity stands in for [`shoal_rl_core::Alone`]; a negation shows the
/// learner steps with the reducer's answer rather than its own copy.
pub(crate) struct Recording {
    pub(crate) messages: Vec<Vec<f32>>,
    tamper: Box<Tamper>,
}

/// What [`Recording`] does to message `index` before handing it back.
type Tamper = dyn FnMut(usize, &mut [f32]);

impl Recording {
    /// Hands every message back unchanged.
    pub(crate) fn identity() -> Self {
        Recording::tampering(|_, _| {})
    }

    /// Hands message `i` back as `tamper(i, message)` left it.
    pub(crate) fn tampering(tamper: impl FnMut(usize, &mut [f32]) + 'static) -> Self {
        Recording {
            messages: Vec::new(),
            tamper: Box::new(tamper),
        }
    }
}

impl MeanReducer for Recording {
    fn mean(&mut self, values: &mut [f32]) -> Result<()> {
        self.messages.push(values.to_vec());
        (self.tamper)(self.messages.len() - 1, values);
        Ok(())
    }
}

/// Negates every value of a message.
pub(crate) fn negate(values: &mut [f32]) {
    values.iter_mut().for_each(|v| *v = -*v);
}

/// The parameters after Adam's first step (β₁ 0.9, β₂ 0.999, ε 1e-8) from
/// `before` on `grads`, clipped to global norm `clip` first: with both
/// moments bias-corrected the step is `lr · g / (|g| + ε)`, written here
/// from the paper rather than through burn.
pub(crate) fn adam_first_step(
    before: &[f32],
    grads: &[f32],
    lr: f64,
    clip: Option<f64>,
) -> Vec<f64> {
    assert_eq!(before.len(), grads.len());
    let norm = grads
        .iter()
        .map(|g| (*g as f64).powi(2))
        .sum::<f64>()
        .sqrt();
    let scale = clip.map_or(1.0, |c| if norm > c { c / norm } else { 1.0 });
    before
        .iter()
        .zip(grads)
        .map(|(p, g)| {
            let g = *g as f64 * scale;
            *p as f64 - lr * g / (g.abs() + 1e-8)
        })
        .collect()
}

/// Asserts `actual[i]` is within `tol` of `expected[i]` for every `i`.
pub(crate) fn assert_all_close(actual: &[f32], expected: &[f64], tol: f64, what: &str) {
    assert_eq!(actual.len(), expected.len(), "{what}: lengths");
    for (i, (a, e)) in actual.iter().zip(expected).enumerate() {
        assert!(
            (*a as f64 - e).abs() <= tol,
            "{what}[{i}]: {a} vs expected {e} (tolerance {tol})"
        );
    }
}

/// Loads damaged copies of a saved memory `bytes` into a copy of `target`
/// (which holds something else): every strict prefix and the bytes with one
/// more byte must be errors, and each bit of `bits` flipped an error or a memory `valid`
/// accepts; an error must leave the target's saved bytes as they were.
/// Returns how many flips loaded. Panics (a proptest failure) otherwise.
pub(crate) fn check_damaged_loads<B: Clone>(
    bytes: &[u8],
    target: &B,
    bits: impl IntoIterator<Item = usize>,
    to_bytes: impl Fn(&B) -> Vec<u8>,
    load: impl Fn(&mut B, &[u8]) -> Result<()>,
    valid: impl Fn(&B) -> std::result::Result<(), String>,
) -> usize {
    let untouched = to_bytes(target);
    for cut in 0..bytes.len() {
        let mut copy = target.clone();
        assert!(
            load(&mut copy, &bytes[..cut]).is_err(),
            "a prefix of {cut} of {} bytes loaded",
            bytes.len()
        );
        assert!(
            to_bytes(&copy) == untouched,
            "a failed load of {cut} bytes changed the memory"
        );
    }
    for extra in [0u8, 1, 255] {
        let mut copy = target.clone();
        let longer = [bytes, &[extra]].concat();
        assert!(
            load(&mut copy, &longer).is_err(),
            "a trailing byte {extra} loaded"
        );
        assert!(
            to_bytes(&copy) == untouched,
            "a failed load (trailing byte) changed the memory"
        );
    }
    let mut loaded = 0;
    for bit in bits {
        let mut flipped = bytes.to_vec();
        flipped[bit / 8] ^= 1 << (bit % 8);
        let mut copy = target.clone();
        match load(&mut copy, &flipped) {
            Err(_) => assert!(
                to_bytes(&copy) == untouched,
                "a failed load (bit {bit}) changed the memory"
            ),
            Ok(()) => {
                if let Err(why) = valid(&copy) {
                    panic!("bit {bit} flipped loaded an invalid memory: {why}");
                }
                loaded += 1;
            }
        }
    }
    loaded
}

/// `tanh` MLP in f64 from flat parameters laid out as `flatten` does:
/// per layer the `[in, out]` weight row-major, then the bias.
pub(crate) fn mlp_f64(params: &[f64], sizes: &[usize], x: &[f64]) -> Vec<f64> {
    let (mut at, mut h) = (0, x.to_vec());
    for (layer, pair) in sizes.windows(2).enumerate() {
        let (inp, out) = (pair[0], pair[1]);
        let (w, b) = (&params[at..at + inp * out], &params[at + inp * out..]);
        h = (0..out)
            .map(|o| {
                let z = b[o] + (0..inp).map(|i| h[i] * w[i * out + o]).sum::<f64>();
                if layer + 2 < sizes.len() { z.tanh() } else { z }
            })
            .collect();
        at += inp * out + out;
    }
    h
}

/// Central differences of `f` at `x`, in f64.
pub(crate) fn numeric_gradient(x: &[f64], f: impl Fn(&[f64]) -> f64) -> Vec<f64> {
    let mut probe = x.to_vec();
    (0..x.len())
        .map(|i| {
            let h = 1e-6;
            probe[i] = x[i] + h;
            let up = f(&probe);
            probe[i] = x[i] - h;
            let down = f(&probe);
            probe[i] = x[i];
            (up - down) / (2.0 * h)
        })
        .collect()
}
