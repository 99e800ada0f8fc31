//! The rollouts the Python bindings must reproduce to the bit (crates/python/tests/fixtures).
//!
//! This test rolls out every env for fixed seeds and actions and checks the
//! committed fixture still says exactly that, so the fixture cannot drift
//! from the envs: a change to an env's dynamics fails here first. After a
//! deliberate change, rewrite it with
//! `SHOAL_WRITE_FIXTURE=1 cargo test -p shoal-rl-env --test python_fixture`.
//!
//! Floats are stored as their bit patterns (`f32::to_bits`, `f64::to_bits`
//! for `info` values) so that no decimal round trip can hide a difference.

use std::fmt::Write;
use std::path::PathBuf;

use rand::RngExt;
use shoal_rl_core::{Env, rng_from_seed};
use shoal_rl_env::{
    ArmPush, ArmPushConfig, BallToNet, BallToNetConfig, Worm, WormConfig, scripted_push_action,
    scripted_strike_action, travelling_wave,
};

/// Which actions an episode takes.
enum Actions {
    /// The worm's travelling wave (ω = 5 rad/s, phase −1.2).
    Wave,
    /// The scripted pusher of `ArmPush`.
    Push(ArmPushConfig),
    /// The scripted striker of `BallToNet`.
    Strike(BallToNetConfig),
    /// Uniform in [−1.5, 1.5] (so some are clipped), from a generator seeded with this.
    Random(u64),
}

impl Actions {
    fn next(&self, rng: &mut rand::rngs::StdRng, obs: &[f32], k: usize, dim: usize) -> Vec<f32> {
        match self {
            Actions::Wave => travelling_wave(k as f64 * 0.04, 1.0, 5.0, -1.2, dim),
            Actions::Push(config) => scripted_push_action(obs, config).to_vec(),
            Actions::Strike(config) => scripted_strike_action(obs, config).to_vec(),
            Actions::Random(_) => (0..dim).map(|_| rng.random_range(-1.5..=1.5)).collect(),
        }
    }
}

fn bits(xs: &[f32]) -> String {
    let items: Vec<String> = xs.iter().map(|x| x.to_bits().to_string()).collect();
    format!("[{}]", items.join(","))
}

/// One episode as JSON: `reset(seed)` (`null` continues the stream), then
/// up to `steps` steps or until it ends.
fn episode<E: Env>(env: &mut E, seed: Option<u64>, actions: Actions, steps: usize) -> String {
    let mut rng = rng_from_seed(match actions {
        Actions::Random(seed) => seed,
        _ => 0,
    });
    let mut obs = env.reset(seed);
    let seed = seed.map_or_else(|| "null".to_string(), |s| s.to_string());
    let mut out = format!("{{\"seed\":{seed},\"reset_obs\":{},\"steps\":[", bits(&obs));
    let dim = env.action_space().dim();
    for k in 0..steps {
        let action = actions.next(&mut rng, &obs, k, dim);
        let step = env.step(&action).expect("fixture actions are valid");
        let info: Vec<String> = step
            .info
            .iter()
            .map(|(key, v)| format!("\"{key}\":{}", v.to_bits()))
            .collect();
        if k > 0 {
            out.push(',');
        }
        write!(
            out,
            "\n{{\"action\":{},\"obs\":{},\"reward\":{},\"terminated\":{},\"truncated\":{},\"info\":{{{}}}}}",
            bits(&action),
            bits(&step.obs),
            step.reward.to_bits(),
            step.terminated,
            step.truncated,
            info.join(",")
        )
        .unwrap();
        let done = step.done();
        obs = step.obs;
        if done {
            break;
        }
    }
    out.push_str("]}");
    out
}

/// `id`'s rollouts with the settings `config` (a JSON object of `gymnasium.make` kwargs).
fn case(id: &str, config: &str, episodes: &[String]) -> String {
    format!(
        "{{\"id\":\"{id}\",\"config\":{config},\"episodes\":[\n{}]}}",
        episodes.join(",\n")
    )
}

fn fixture() -> String {
    let mut worm = Worm::new(WormConfig::default()).unwrap();
    let worm_default = case(
        "shoal/Worm-v0",
        "{}",
        &[
            episode(&mut worm, Some(3), Actions::Wave, 30),
            episode(&mut worm, None, Actions::Random(1), 30),
        ],
    );
    let mut worm5 = Worm::new(WormConfig::default().links(5).reset_noise_scale(0.2)).unwrap();
    let worm_five_links = case(
        "shoal/Worm-v0",
        "{\"links\":5,\"reset_noise_scale\":0.2}",
        &[episode(&mut worm5, Some(11), Actions::Random(2), 20)],
    );
    let push_config = ArmPushConfig::default();
    let mut push = ArmPush::new(push_config.clone()).unwrap();
    let push_default = case(
        "shoal/ArmPush-v0",
        "{}",
        &[
            episode(&mut push, Some(3), Actions::Push(push_config.clone()), 50),
            episode(&mut push, None, Actions::Random(3), 50),
        ],
    );
    let ball_config = BallToNetConfig::default();
    let mut ball = BallToNet::new(ball_config.clone()).unwrap();
    let ball_default = case(
        "shoal/BallToNet-v0",
        "{}",
        &[
            episode(&mut ball, Some(5), Actions::Strike(ball_config), 50),
            episode(&mut ball, None, Actions::Random(4), 12),
        ],
    );
    format!(
        "{{\"cases\":[\n{}]}}\n",
        [worm_default, worm_five_links, push_default, ball_default].join(",\n")
    )
}

fn fixture_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../python/tests/fixtures/rust_rollouts.json")
}

#[test]
fn python_fixture_matches_the_envs() {
    let expected = fixture();
    let path = fixture_path();
    if std::env::var_os("SHOAL_WRITE_FIXTURE").is_some() {
        std::fs::write(&path, &expected).unwrap();
    }
    let committed = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    assert!(
        committed == expected,
        "{} no longer matches the envs; if the change is deliberate, rewrite it with \
         SHOAL_WRITE_FIXTURE=1 cargo test -p shoal-rl-env --test python_fixture",
        path.display()
    );
}

#[test]
fn fixture_episodes_reach_their_ends() {
    // The fixture is only a good oracle if it covers success, termination
    // and truncation, not just mid-episode steps.
    let text = fixture();
    assert!(text.contains("\"terminated\":true"), "no terminated step");
    assert!(text.contains("\"truncated\":true"), "no truncated step");
    assert!(
        text.contains("\"is_success\":4607182418800017408"),
        "no success (1.0)"
    );
}
