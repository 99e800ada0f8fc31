//! An env registered by a program that uses shoal as a library trains by its
//! name, alone and under a parallel strategy, through the same config
//! resolution and runtime as `shoal train`; a registry without it refuses
//! the name.

mod common;

use serde::{Deserialize, Serialize};
use shoal_rl::config::{EnvConfig, RunConfig};
use shoal_rl::core::{Env, Result, Space, Step};
use shoal_rl::registry::EnvRegistry;
use shoal_rl::registry::{EnvEntry, FromSettings};
use shoal_rl::train::{Plan, Registries, preset, resolve};

use common::scratch;

/// A point on a line, pushed by the action towards `target`; the reward is
/// minus the distance left.
struct Corridor {
    settings: CorridorSettings,
    space: Space,
    x: f32,
    t: usize,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct CorridorSettings {
    target: f32,
    max_episode_steps: usize,
}

impl Default for CorridorSettings {
    fn default() -> Self {
        CorridorSettings {
            target: 1.0,
            max_episode_steps: 20,
        }
    }
}

impl FromSettings for Corridor {
    type Settings = CorridorSettings;
    fn from_settings(settings: CorridorSettings) -> Result<Self> {
        Ok(Corridor {
            settings,
            space: Space::uniform(1, -1.0, 1.0),
            x: 0.0,
            t: 0,
        })
    }
}

impl Env for Corridor {
    fn observation_space(&self) -> &Space {
        &self.space
    }
    fn action_space(&self) -> &Space {
        &self.space
    }
    fn reset(&mut self, _seed: Option<u64>) -> Vec<f32> {
        (self.x, self.t) = (0.0, 0);
        vec![self.x]
    }
    fn step(&mut self, action: &[f32]) -> Result<Step> {
        self.x += 0.1 * action[0].clamp(-1.0, 1.0);
        self.t += 1;
        let mut step = Step::new(vec![self.x], -(self.x - self.settings.target).abs());
        step.truncated = self.t >= self.settings.max_episode_steps;
        Ok(step)
    }
}

fn registry() -> Registries {
    let envs = EnvRegistry::builtin().with(EnvEntry::plain::<Corridor>(
        "corridor",
        "a point pushed along a line to a target",
    ));
    Registries::default().envs(envs)
}

/// toy-reinforce's config on the corridor, as a file.
fn corridor_config(dir: &std::path::Path) -> String {
    let mut cfg = preset("toy-reinforce").unwrap();
    cfg.env = EnvConfig::new("corridor", &CorridorSettings::default()).unwrap();
    let path = dir.join("corridor.toml");
    std::fs::write(&path, cfg.to_toml()).unwrap();
    path.to_string_lossy().into_owned()
}

fn plan(cfg: RunConfig, out: std::path::PathBuf) -> Plan {
    Plan::new(cfg).out(out).quiet()
}

#[test]
fn a_registered_env_trains_by_name_alone_and_in_parallel() {
    let dir = scratch("registry");
    let source = corridor_config(&dir);
    let budget = [
        "train.episodes=160",
        "train.eval_every=80",
        "env.target=0.5",
    ]
    .map(String::from);
    let cfg = registry().resolve(&source, &budget).unwrap();
    let settings: CorridorSettings = cfg.env.settings().unwrap();
    assert_eq!((cfg.env.kind.as_str(), settings.target), ("corridor", 0.5));

    let (run_dir, summary) = registry()
        .run(&plan(cfg.clone(), dir.join("alone")))
        .unwrap()
        .unwrap();
    assert_eq!(summary.episodes, 160);
    let saved = std::fs::read_to_string(run_dir.join("config.toml")).unwrap();
    assert!(saved.contains("kind = \"corridor\"") && saved.contains("target = 0.5"));
    // The best return is 0 (at the target from the first step on); doing
    // nothing earns −0.5 a step, −10 an episode.
    let eval = summary.eval_return_mean.unwrap();
    assert!(eval > -10.0 && eval <= 0.0, "eval return {eval}");

    // The same env under gradient averaging on two threads.
    let parallel = registry()
        .with_overrides(
            &cfg,
            &[
                "parallel.workers=2".into(),
                "parallel.strategy=\"averaging\"".into(),
            ],
        )
        .unwrap();
    let (_, summary) = registry()
        .run(&plan(parallel, dir.join("averaging")))
        .unwrap()
        .unwrap();
    assert_eq!(summary.episodes, 160);
}

#[test]
fn a_registry_without_the_env_refuses_its_name_and_its_keys_are_checked() {
    let dir = scratch("registry-refusals");
    let source = corridor_config(&dir);
    let unknown = resolve(&source, &[]).unwrap_err().to_string();
    assert!(unknown.contains("unknown env `corridor`"), "{unknown}");
    assert!(unknown.contains("worm, arm-push"), "{unknown}");
    let typo = registry()
        .resolve(&source, &["env.targt=1".into()])
        .unwrap_err()
        .to_string();
    assert!(typo.contains("unknown key `env.targt`"), "{typo}");
    let wrong_type = registry()
        .resolve(&source, &["env.target=\"far\"".into()])
        .unwrap_err()
        .to_string();
    assert!(wrong_type.contains("env.target"), "{wrong_type}");
    assert!(!dir.join("runs").exists());
}
