//! A reusable environment checker, like Gymnasium's `check_env`: spaces, seeding, bounds and bad-input handling.
//!
//! [`check_env`] runs any [`Env`] through the contract written on the trait
//! and reports the first violation as a sentence; [`check_goal_env`] adds the
//! [`GoalEnv`] rules hindsight relabelling relies on. Use them in the tests
//! of every environment:
//!
//! It lives here, beside the traits, so that checking an env of your own
//! needs neither physics nor networks.
//!
//! ```
//! use shoal_rl_core::rand::{RngExt, rngs::StdRng};
//! use shoal_rl_core::{Env, Result, Space, Step, TimeLimit, check_env, reseed, rng_from_seed};
//!
//! /// Walk toward zero from a seeded start; a time limit ends each episode
//! /// after 3 steps.
//! struct Walk { x: f32, rng: StdRng, space: Space, limit: TimeLimit }
//!
//! impl Env for Walk {
//!     fn observation_space(&self) -> &Space { &self.space }
//!     fn action_space(&self) -> &Space { &self.space }
//!     fn reset(&mut self, seed: Option<u64>) -> Vec<f32> {
//!         reseed(&mut self.rng, seed);
//!         self.limit.start();
//!         self.x = self.rng.random_range(-1.0..1.0);
//!         vec![self.x]
//!     }
//!     fn step(&mut self, action: &[f32]) -> Result<Step> {
//!         self.limit.check()?;
//!         let action = self.space.validate(action, false)?;
//!         self.x = (self.x + action[0]).clamp(-1.0, 1.0);
//!         Ok(self.limit.finish(Step::new(vec![self.x], -self.x.abs())))
//!     }
//! }
//!
//! let space = Space::uniform(1, -1.0, 1.0);
//! check_env(|| Walk { x: 0.0, rng: rng_from_seed(0), space: space.clone(), limit: TimeLimit::new(3) })
//!     .unwrap();
//! ```

use crate::{Env, Error, GoalEnv, Space, Step, rng_from_seed};

/// Longest episode the checker plays before it gives up waiting for the end.
const MAX_EPISODE_STEPS: usize = 100_000;
/// Seed of the episodes the checker compares.
const SEED: u64 = 1234;
/// Seed of the random actions the checker plays.
const ACTION_SEED: u64 = 99;

/// Checks that environments made by `make` keep the [`Env`] contract:
///
/// * both spaces are well formed, the action space bounded (so it can be sampled);
/// * every observation has the right length, is finite and lies in the
///   observation space; every reward and `info` value is finite;
/// * the same seed and actions give a bit-identical episode, on a fresh
///   instance and on a reused one; different seeds give different starts;
///   `reset(None)` continues the random stream instead of repeating it;
/// * a non-finite action is `Error::NonFiniteAction` and leaves no trace
///   on the episode; a wrong-length action is `Error::ActionShape`; an
///   out-of-range action is either clipped into a valid step or
///   `Error::ActionOutOfBounds`; the env is usable after a reset;
/// * episodes end, and stepping after the end is `Error::NeedsReset`.
///
/// Returns the first violation found, as a sentence naming it.
pub fn check_env<E: Env>(make: impl Fn() -> E) -> Result<(), String> {
    let mut env = make();
    check_spaces(env.observation_space(), env.action_space())?;

    // Determinism: fresh instance, same instance reused, and a twin.
    let first = play(&mut env, SEED, ACTION_SEED)?;
    expect_needs_reset(&mut env, "after the episode ended")?;
    let again = play(&mut env, SEED, ACTION_SEED)?;
    same_trace(&first, &again).map_err(|e| format!("reset(Some(seed)) on a used env: {e}"))?;
    let mut twin = make();
    let twin_trace = play(&mut twin, SEED, ACTION_SEED)?;
    same_trace(&first, &twin_trace).map_err(|e| format!("a second instance: {e}"))?;

    // Different seeds, and reset(None).
    let starts: Vec<Vec<f32>> = (0..3).map(|seed| env.reset(Some(seed))).collect();
    if starts[0] == starts[1] || starts[1] == starts[2] {
        return Err("different seeds gave the same starting observation".into());
    }
    let seeded = env.reset(Some(SEED));
    let continued = env.reset(None);
    check_obs(env.observation_space(), &continued, "reset(None)")?;
    if continued == seeded {
        return Err(
            "reset(None) repeated the seeded start instead of continuing the stream".into(),
        );
    }
    twin.reset(Some(SEED));
    if twin.reset(None) != continued {
        return Err("reset(Some(seed)) then reset(None) differs between two instances".into());
    }

    check_bad_actions(&make)?;
    Ok(())
}

/// [`check_env`] plus the rules of [`GoalEnv`]: the observation is
/// `[observation | achieved_goal | desired_goal]`; every step's reward equals
/// `compute_reward(achieved, desired)` of its observation, bit for bit;
/// `compute_reward` depends on nothing but its arguments (a fresh instance
/// agrees) and matches `compute_rewards`; reaching the desired goal exactly
/// is a success; the desired goal stays fixed within an episode; and an
/// `"is_success"` entry in `info`, if present, agrees with `is_success`.
pub fn check_goal_env<E: GoalEnv>(make: impl Fn() -> E) -> Result<(), String> {
    check_env(&make)?;
    let mut env = make();
    let goal_dim = env.goal_dim();
    let obs_dim = env.observation_space().dim();
    if goal_dim == 0 || obs_dim < 2 * goal_dim {
        return Err(format!(
            "goal_dim {goal_dim} does not fit the observation of length {obs_dim} as \
             [observation | achieved | desired]"
        ));
    }
    let trace = play(&mut env, SEED, ACTION_SEED)?;
    let fresh = make();
    let (_, _, first_desired) = env.split_obs(&trace.reset_obs);
    let first_desired = first_desired.to_vec();
    let (mut achieved_batch, mut desired_batch, mut rewards) = (Vec::new(), Vec::new(), Vec::new());
    for (t, step) in trace.steps.iter().enumerate() {
        let (_, achieved, desired) = env.split_obs(&step.obs);
        if desired != first_desired.as_slice() {
            return Err(format!(
                "the desired goal changed during the episode at step {t}"
            ));
        }
        let recomputed = env.compute_reward(achieved, desired);
        if recomputed.to_bits() != step.reward.to_bits() {
            return Err(format!(
                "step {t}: reward {} but compute_reward(achieved, desired) = {recomputed}",
                step.reward
            ));
        }
        if fresh.compute_reward(achieved, desired).to_bits() != recomputed.to_bits() {
            return Err(format!(
                "step {t}: compute_reward depends on the environment's state"
            ));
        }
        if let Some(flag) = step.info.get("is_success") {
            let success = env.is_success(achieved, desired);
            if (flag != 0.0) != success {
                return Err(format!(
                    "step {t}: info is_success = {flag} but is_success(achieved, desired) = {success}"
                ));
            }
        }
        achieved_batch.extend_from_slice(achieved);
        desired_batch.extend_from_slice(desired);
        rewards.push(recomputed);
    }
    if env.compute_rewards(&achieved_batch, &desired_batch) != rewards {
        return Err("compute_rewards disagrees with compute_reward row by row".into());
    }
    if !env.is_success(&first_desired, &first_desired) {
        return Err("reaching the desired goal exactly is not a success".into());
    }
    Ok(())
}

/// One played episode.
struct Trace {
    reset_obs: Vec<f32>,
    steps: Vec<Step>,
}

fn check_spaces(observation: &Space, action: &Space) -> Result<(), String> {
    for (name, space) in [("observation", observation), ("action", action)] {
        if space.low.len() != space.high.len() {
            return Err(format!("the {name} space's bounds differ in length"));
        }
        if space.dim() == 0 {
            return Err(format!("the {name} space is empty"));
        }
        if space
            .low
            .iter()
            .zip(&space.high)
            .any(|(l, h)| l.is_nan() || h.is_nan() || l > h)
        {
            return Err(format!("the {name} space has NaN bounds or low > high"));
        }
    }
    if action
        .low
        .iter()
        .chain(&action.high)
        .any(|v| !v.is_finite())
    {
        return Err("the action space is unbounded; continuous actions need finite bounds".into());
    }
    Ok(())
}

fn check_obs(space: &Space, obs: &[f32], context: &str) -> Result<(), String> {
    if obs.len() != space.dim() {
        return Err(format!(
            "{context}: observation has {} components, the space has {}",
            obs.len(),
            space.dim()
        ));
    }
    if let Some(i) = obs.iter().position(|v| !v.is_finite()) {
        return Err(format!(
            "{context}: observation component {i} is {}",
            obs[i]
        ));
    }
    if let Some(i) = (0..obs.len()).find(|&i| !(space.low[i] <= obs[i] && obs[i] <= space.high[i]))
    {
        return Err(format!(
            "{context}: observation component {i} = {} lies outside [{}, {}]",
            obs[i], space.low[i], space.high[i]
        ));
    }
    Ok(())
}

fn check_step(space: &Space, step: &Step, context: &str) -> Result<(), String> {
    check_obs(space, &step.obs, context)?;
    if !step.reward.is_finite() {
        return Err(format!("{context}: reward is {}", step.reward));
    }
    if let Some((key, value)) = step.info.iter().find(|(_, v)| !v.is_finite()) {
        return Err(format!("{context}: info {key} is {value}"));
    }
    Ok(())
}

/// Resets with `seed` and plays uniformly random actions until the episode ends.
fn play<E: Env>(env: &mut E, seed: u64, action_seed: u64) -> Result<Trace, String> {
    let reset_obs = env.reset(Some(seed));
    check_obs(env.observation_space(), &reset_obs, "reset")?;
    let mut rng = rng_from_seed(action_seed);
    let mut steps = Vec::new();
    for t in 0..MAX_EPISODE_STEPS {
        let action = env.action_space().sample(&mut rng);
        let step = env
            .step(&action)
            .map_err(|e| format!("step {t} with the in-range action {action:?} failed: {e}"))?;
        check_step(env.observation_space(), &step, &format!("step {t}"))?;
        let done = step.done();
        steps.push(step);
        if done {
            return Ok(Trace { reset_obs, steps });
        }
    }
    Err(format!("no episode ended within {MAX_EPISODE_STEPS} steps"))
}

fn same_bits(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

fn same_trace(a: &Trace, b: &Trace) -> Result<(), String> {
    if !same_bits(&a.reset_obs, &b.reset_obs) {
        return Err("the same seed gave a different starting observation".into());
    }
    for (t, (x, y)) in a.steps.iter().zip(&b.steps).enumerate() {
        let same = same_bits(&x.obs, &y.obs)
            && x.reward.to_bits() == y.reward.to_bits()
            && x.terminated == y.terminated
            && x.truncated == y.truncated
            && x.info == y.info;
        if !same {
            return Err(format!("the same seed and actions diverged at step {t}"));
        }
    }
    if a.steps.len() != b.steps.len() {
        return Err(format!(
            "the same seed and actions gave episodes of {} and {} steps",
            a.steps.len(),
            b.steps.len()
        ));
    }
    Ok(())
}

fn expect_needs_reset<E: Env>(env: &mut E, when: &str) -> Result<(), String> {
    let action = env.action_space().sample(&mut rng_from_seed(0));
    match env.step(&action) {
        Err(Error::NeedsReset) => Ok(()),
        Err(other) => Err(format!(
            "step {when} failed with `{other}` instead of NeedsReset"
        )),
        Ok(_) => Err(format!(
            "step {when} succeeded; it must fail with NeedsReset"
        )),
    }
}

fn check_bad_actions<E: Env>(make: &impl Fn() -> E) -> Result<(), String> {
    let mut env = make();
    let mut twin = make();
    let space = env.action_space().clone();
    let valid = space.sample(&mut rng_from_seed(ACTION_SEED));
    env.reset(Some(SEED));
    twin.reset(Some(SEED));

    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let mut action = valid.clone();
        action[space.dim() - 1] = bad;
        match env.step(&action) {
            Err(Error::NonFiniteAction { .. }) => {}
            Err(other) => {
                return Err(format!(
                    "a {bad} action failed with `{other}`, not NonFiniteAction"
                ));
            }
            Ok(_) => return Err(format!("a {bad} action was accepted")),
        }
    }
    for len in [0, space.dim() - 1, space.dim() + 1] {
        if len == space.dim() {
            continue;
        }
        match env.step(&vec![0.5 * (space.low[0] + space.high[0]); len]) {
            Err(Error::ActionShape { .. }) => {}
            Err(other) => {
                return Err(format!(
                    "an action of length {len} failed with `{other}`, not ActionShape"
                ));
            }
            Ok(_) => return Err(format!("an action of length {len} was accepted")),
        }
    }
    let after_rejections = env
        .step(&valid)
        .map_err(|e| format!("a valid step after rejected actions failed: {e}"))?;
    let untouched = twin
        .step(&valid)
        .map_err(|e| format!("a valid step failed: {e}"))?;
    if !same_bits(&after_rejections.obs, &untouched.obs)
        || after_rejections.reward != untouched.reward
    {
        return Err("rejected actions changed the episode".into());
    }

    let too_big: Vec<f32> = space.high.iter().map(|h| h + 1.0 + h.abs()).collect();
    env.reset(Some(SEED));
    match env.step(&too_big) {
        Ok(step) => check_step(
            env.observation_space(),
            &step,
            "an out-of-range (clipped) action",
        )?,
        Err(Error::ActionOutOfBounds { .. }) => {}
        Err(other) => {
            return Err(format!(
                "an out-of-range action failed with `{other}`, not ActionOutOfBounds"
            ));
        }
    }

    let obs = env.reset(Some(SEED + 1));
    check_obs(env.observation_space(), &obs, "reset after bad actions")?;
    let step = env
        .step(&valid)
        .map_err(|e| format!("step after reset following bad actions failed: {e}"))?;
    check_step(
        env.observation_space(),
        &step,
        "step after reset following bad actions",
    )
}

#[cfg(test)]
mod tests {
    use crate::{Info, Result};

    use super::*;

    /// A configurable env that breaks one rule at a time.
    #[derive(Clone, Default)]
    struct Faulty {
        ignores_seed: bool,
        accepts_nan: bool,
        nan_obs_at_step: Option<usize>,
        never_ends: bool,
        steps_after_end: bool,
        state: f32,
        counter: u64,
        steps: usize,
        done: bool,
    }

    const SPACE_LOW: f32 = -1.0;

    impl Env for Faulty {
        fn observation_space(&self) -> &Space {
            static SPACE: std::sync::OnceLock<Space> = std::sync::OnceLock::new();
            SPACE.get_or_init(|| Space::unbounded(1))
        }
        fn action_space(&self) -> &Space {
            static SPACE: std::sync::OnceLock<Space> = std::sync::OnceLock::new();
            SPACE.get_or_init(|| Space::uniform(1, SPACE_LOW, 1.0))
        }
        fn reset(&mut self, seed: Option<u64>) -> Vec<f32> {
            match seed {
                Some(seed) if !self.ignores_seed => self.counter = seed,
                _ => self.counter += 1,
            }
            self.state = (self.counter % 1000) as f32 * 0.001;
            self.steps = 0;
            self.done = false;
            vec![self.state]
        }
        fn step(&mut self, action: &[f32]) -> Result<Step> {
            if self.done && !self.steps_after_end {
                return Err(Error::NeedsReset);
            }
            let action = if self.accepts_nan {
                std::borrow::Cow::Borrowed(action)
            } else {
                self.action_space().validate(action, true)?
            };
            if action.len() != 1 {
                return Err(Error::ActionShape {
                    expected: 1,
                    got: action.len(),
                });
            }
            self.state += action[0];
            self.steps += 1;
            let obs = if self.nan_obs_at_step == Some(self.steps) {
                f32::NAN
            } else {
                self.state
            };
            self.done = !self.never_ends && self.steps >= 10;
            Ok(Step {
                obs: vec![obs],
                reward: -self.state.abs(),
                terminated: false,
                truncated: self.done,
                info: Info::new(),
            })
        }
    }

    #[test]
    fn a_correct_env_passes() {
        check_env(Faulty::default).unwrap();
    }

    fn failure(env: Faulty) -> String {
        check_env(move || env.clone()).unwrap_err()
    }

    #[test]
    fn each_broken_rule_is_reported() {
        let ignores_seed = failure(Faulty {
            ignores_seed: true,
            ..Faulty::default()
        });
        // The second play of the same seed on the same instance starts
        // elsewhere: the first rule a seed-ignoring env breaks.
        assert_eq!(
            ignores_seed,
            "reset(Some(seed)) on a used env: the same seed gave a different starting observation"
        );
        let nan = failure(Faulty {
            accepts_nan: true,
            ..Faulty::default()
        });
        assert!(nan.contains("NaN action was accepted"), "{nan}");
        let nan_obs = failure(Faulty {
            nan_obs_at_step: Some(3),
            ..Faulty::default()
        });
        assert!(
            nan_obs.contains("step 2: observation component 0 is NaN"),
            "{nan_obs}"
        );
        let endless = failure(Faulty {
            never_ends: true,
            ..Faulty::default()
        });
        assert!(endless.contains("no episode ended"), "{endless}");
        let after_end = failure(Faulty {
            steps_after_end: true,
            ..Faulty::default()
        });
        assert!(after_end.contains("NeedsReset"), "{after_end}");
    }
}
