//! shoal-rl-registry: the one table of shoal's environments.
//!
//! Every env has one entry ([`EnvEntry`]): its id (the `env.kind` of a
//! config, the name `shoal bench-env` and the docs use), its Gymnasium id in
//! the Python package, whether it is goal-conditioned, a builder from its
//! settings, the scene `shoal render` draws, and the reference return a run
//! reports beside its own (the worm's gait). The CLI, the runtime's factories
//! and the Python package read envs from here and nowhere else, so adding an
//! env is its module plus one entry.
//!
//! A run's env is an [`EnvConfig`]: the id and the settings as a TOML table,
//! exactly as `config.toml` holds them. A registry is a plain value: the
//! built-in one is [`EnvRegistry::builtin`], and a program adds its own envs
//! with [`EnvRegistry::with`]; nothing is registered globally. The same
//! [`Registry`] type holds shoal-rl-train's algorithms and strategies.
//!
//! ```
//! use shoal_rl_core::Env;
//! use shoal_rl_registry::{EnvConfig, EnvRegistry};
//!
//! let envs = EnvRegistry::builtin();
//! let worm = EnvConfig::new("worm", &shoal_rl_env::WormConfig::default().links(5)).unwrap();
//! let env = envs.make_env(&worm).unwrap();
//! assert_eq!(env.action_space().dim(), 4);
//! assert_eq!(envs.get("arm-push").unwrap().python_id, Some("shoal/ArmPush-v0"));
//! assert!(envs.get("arm-pusj").unwrap_err().to_string().contains("unknown env `arm-pusj`"));
//! ```
#![deny(missing_docs)]

use std::fmt;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::json;
use shoal_rl_core::docs::FieldDoc;
use shoal_rl_core::{Env, Error, GoalEnv, Result};
use shoal_rl_eval::{ArmLayout, ChainTask, Reference};

/// An env that can be built from settings: what an entry needs of it.
pub trait FromSettings: Sized + 'static {
    /// Its settings, a serde type with defaults that refuses unknown keys.
    type Settings: Serialize + DeserializeOwned + Default;
    /// The env for these settings (checking them).
    fn from_settings(settings: Self::Settings) -> Result<Self>;

    /// The documented fields of its settings struct, or of a struct nested
    /// in it, by type name (`shoal config` comments every key with them);
    /// none by default.
    fn settings_docs(_type_name: &str) -> Option<Vec<FieldDoc>> {
        None
    }
}

macro_rules! from_settings {
    ($($env:ty => $settings:ty),* $(,)?) => {$(
        impl FromSettings for $env {
            type Settings = $settings;
            fn from_settings(settings: $settings) -> Result<Self> {
                <$env>::new(settings)
            }
            fn settings_docs(type_name: &str) -> Option<Vec<FieldDoc>> {
                shoal_rl_env::config_docs(type_name)
            }
        }
    )*};
}

from_settings!(
    shoal_rl_env::Worm => shoal_rl_env::WormConfig,
    shoal_rl_env::PointReach => shoal_rl_env::PointReachConfig,
    shoal_rl_env::ArmPush => shoal_rl_env::ArmPushConfig,
    shoal_rl_env::BallToNet => shoal_rl_env::BallToNetConfig,
    shoal_rl_env::PointGoal => shoal_rl_env::PointGoalConfig,
    shoal_rl_env::Ur5Reacher => shoal_rl_env::Ur5ReacherConfig,
    shoal_rl_env::InvertedPendulum => shoal_rl_env::InvertedPendulumConfig,
);

/// How an entry builds its env: a plain env or a goal-conditioned one (which
/// every goal algorithm needs, and every algorithm can use as a plain env).
#[derive(Clone, Copy)]
pub enum Builder {
    /// An env with a reward only.
    Plain(fn(&toml::Table) -> Result<Box<dyn Env>>),
    /// An env with goals, success and HER's reward function.
    Goal(fn(&toml::Table) -> Result<Box<dyn GoalEnv>>),
}

/// What `shoal render` draws for an env.
#[derive(Clone, Debug)]
pub enum Scene {
    /// The worm from above, from its outline.
    Worm(shoal_rl_env::WormConfig),
    /// A table seen from above with the gripper, the object and the goal
    /// (and a HAC agent's subgoals).
    Arm(ArmLayout),
    /// A jointed task's links with the goal pose (and a HAC agent's subgoal poses).
    Chain(ChainTask),
}

/// One env of the registry.
#[derive(Clone, Copy)]
pub struct EnvEntry {
    /// The env's one name: `env.kind` in configs, `shoal bench-env`'s
    /// argument, the docs' name.
    pub id: &'static str,
    /// Its Gymnasium id in the Python package, if it has one there.
    pub python_id: Option<&'static str>,
    /// One line on what the task is.
    pub about: &'static str,
    /// Builds the env from its settings.
    pub builder: Builder,
    /// Its default settings, as a TOML table.
    pub defaults: fn() -> toml::Table,
    /// Reads the settings as the env's typed struct, naming the first key or
    /// value it refuses, without building the env.
    pub check: fn(&toml::Table) -> Result<()>,
    /// Every settings key with its doc comment (`arm.substeps`, …).
    pub key_docs: fn() -> Vec<(String, String)>,
    /// What `shoal render` draws, from the settings; `None`: not renderable.
    pub scene: Option<fn(&toml::Table) -> Result<Scene>>,
    /// The task's reference performance for a seed (the worm's best
    /// travelling wave), if it has one; `None` from the function when the
    /// search finds nothing for these settings.
    pub reference: Option<fn(&toml::Table, u64) -> Option<Reference>>,
}

impl fmt::Debug for EnvEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnvEntry")
            .field("id", &self.id)
            .field("python_id", &self.python_id)
            .field("goal", &self.is_goal())
            .finish_non_exhaustive()
    }
}

impl EnvEntry {
    /// An entry for a plain env `E` under `id`, without Python id, scene
    /// or reference (add them with the builder methods).
    pub fn plain<E: FromSettings + Env>(id: &'static str, about: &'static str) -> Self {
        let builder = Builder::Plain(|table| Ok(Box::new(E::from_settings(settings_of(table)?)?)));
        Self::of::<E>(id, about, builder)
    }

    /// An entry for a goal-conditioned env `E` under `id`.
    pub fn goal<E: FromSettings + GoalEnv>(id: &'static str, about: &'static str) -> Self {
        let builder = Builder::Goal(|table| Ok(Box::new(E::from_settings(settings_of(table)?)?)));
        Self::of::<E>(id, about, builder)
    }

    fn of<E: FromSettings>(id: &'static str, about: &'static str, builder: Builder) -> Self {
        EnvEntry {
            id,
            python_id: None,
            about,
            builder,
            defaults: || table_of(&E::Settings::default()).expect("default settings are TOML"),
            check: |table| settings_of::<E::Settings>(table).map(drop),
            key_docs: || {
                let full = std::any::type_name::<E::Settings>();
                let name = full.rsplit("::").next().unwrap_or(full);
                shoal_rl_core::docs::key_docs(&E::settings_docs, name)
            },
            scene: None,
            reference: None,
        }
    }

    /// With its Gymnasium id in the Python package.
    pub fn python_id(mut self, id: &'static str) -> Self {
        self.python_id = Some(id);
        self
    }

    /// With the scene `shoal render` draws.
    pub fn scene(mut self, scene: fn(&toml::Table) -> Result<Scene>) -> Self {
        self.scene = Some(scene);
        self
    }

    /// With a reference performance.
    pub fn reference(mut self, reference: fn(&toml::Table, u64) -> Option<Reference>) -> Self {
        self.reference = Some(reference);
        self
    }

    /// Whether the env is goal-conditioned (success rates, HER, HAC).
    pub fn is_goal(&self) -> bool {
        matches!(self.builder, Builder::Goal(_))
    }
}

/// An env's settings as their typed struct; a key the struct lacks is an
/// error naming it (serde's "unknown field", which `--set` reports as an
/// unknown key).
pub fn settings_of<S: DeserializeOwned>(table: &toml::Table) -> Result<S> {
    typed_settings(table, "env")
}

/// A settings table as its typed struct, errors prefixed by `what`
/// ("env", "algo"): the one reader of an env's and an algorithm's
/// settings.
pub fn typed_settings<S: DeserializeOwned>(table: &toml::Table, what: &str) -> Result<S> {
    toml::Value::Table(table.clone())
        .try_into()
        .map_err(|e: toml::de::Error| {
            Error::Config(format!("{what} settings: {}", e.message().trim()))
        })
}

/// Typed settings as the TOML table a config holds. Goes through the text:
/// converting the value directly widens an `f32` to `f64` bit for bit
/// (`0.04` becomes `0.03999999910593033`).
pub fn table_of<S: Serialize>(settings: &S) -> Result<toml::Table> {
    let text = toml::to_string(settings)
        .map_err(|e| Error::Config(format!("env settings are not TOML: {e}")))?;
    Ok(toml::from_str(&text).expect("TOML written by toml parses"))
}

/// One entry of a [`Registry`]: an env, an algorithm or a strategy. The
/// registry finds entries by [`Entry::name`] and starts from
/// [`Entry::builtin`]; everything else an entry knows is its own.
pub trait Entry: Clone {
    /// What one entry is called in errors (`env`, `algorithm`).
    const WHAT: &'static str;
    /// What several are called in errors (`envs`, `algorithms`).
    const PLURAL: &'static str;
    /// Said after the list of names when a name is unknown.
    const HINT: &'static str = "";
    /// The name configs give it.
    fn name(&self) -> &'static str;
    /// One line for `--help`.
    fn about(&self) -> &'static str;
    /// shoal's own entries, in the order `--help` lists them.
    fn builtin() -> Vec<Self>;
}

/// A table of entries by name, for envs ([`EnvRegistry`]), algorithms and
/// strategies alike. A plain value: nothing is registered globally, and
/// cloning shares the table.
pub struct Registry<E> {
    entries: Arc<Vec<E>>,
}

impl<E> Clone for Registry<E> {
    fn clone(&self) -> Self {
        Registry {
            entries: Arc::clone(&self.entries),
        }
    }
}

impl<E: Entry> fmt::Debug for Registry<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

/// Two registries are equal when they name the same entries in the same
/// order (entries hold functions, which do not compare).
impl<E: Entry> PartialEq for Registry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.names() == other.names()
    }
}

impl<E: Entry> Default for Registry<E> {
    fn default() -> Self {
        Self::builtin()
    }
}

impl<E: Entry> Registry<E> {
    /// No entries.
    pub fn empty() -> Self {
        Registry {
            entries: Arc::new(Vec::new()),
        }
    }

    /// shoal's own entries.
    pub fn builtin() -> Self {
        E::builtin().into_iter().fold(Self::empty(), Self::with)
    }

    /// This registry with `entry` added, or replacing the entry of its name.
    #[must_use]
    pub fn with(self, entry: E) -> Self {
        let mut entries = self.entries.as_ref().clone();
        entries.retain(|e| e.name() != entry.name());
        entries.push(entry);
        Registry {
            entries: Arc::new(entries),
        }
    }

    /// Every entry, in registration order.
    pub fn entries(&self) -> &[E] {
        &self.entries
    }

    /// Every name, in registration order.
    pub fn names(&self) -> Vec<&'static str> {
        self.entries.iter().map(Entry::name).collect()
    }

    /// The entry of `name`, or an error listing the names there are.
    pub fn get(&self, name: &str) -> Result<&E> {
        self.entries
            .iter()
            .find(|e| e.name() == name)
            .ok_or_else(|| {
                Error::Config(format!(
                    "unknown {} `{name}` ({}: {}){}",
                    E::WHAT,
                    E::PLURAL,
                    self.names().join(", "),
                    E::HINT
                ))
            })
    }
}

/// The envs a config's `env.kind` names.
pub type EnvRegistry = Registry<EnvEntry>;

impl Entry for EnvEntry {
    const WHAT: &'static str = "env";
    const PLURAL: &'static str = "envs";

    fn name(&self) -> &'static str {
        self.id
    }

    fn about(&self) -> &'static str {
        self.about
    }

    fn builtin() -> Vec<Self> {
        vec![
            EnvEntry::plain::<shoal_rl_env::Worm>(
                "worm",
                "planar multi-link swimmer in a viscous medium: swim forward",
            )
            .python_id("shoal/Worm-v0")
            .scene(|table| Ok(Scene::Worm(settings_of(table)?)))
            .reference(worm_gait),
            EnvEntry::goal::<shoal_rl_env::ArmPush>(
                "arm-push",
                "a gripper pushes a box to a goal on a table",
            )
            .python_id("shoal/ArmPush-v0")
            .scene(arm_scene::<shoal_rl_env::ArmPushConfig>),
            EnvEntry::goal::<shoal_rl_env::BallToNet>(
                "ball-to-net",
                "a gripper strikes a ball into a net",
            )
            .python_id("shoal/BallToNet-v0")
            .scene(arm_scene::<shoal_rl_env::BallToNetConfig>),
            EnvEntry::goal::<shoal_rl_env::Ur5Reacher>(
                "ur5-reacher",
                "the HAC paper's servo-driven 3-joint UR5 arm turns its joints to goal angles",
            )
            .python_id("shoal/UR5Reacher-v1")
            .scene(|table| {
                let reacher: shoal_rl_env::Ur5ReacherConfig = settings_of(table)?;
                Ok(Scene::Chain((&reacher).into()))
            }),
            EnvEntry::goal::<shoal_rl_env::InvertedPendulum>(
                "pendulum",
                "swing a torque-limited pendulum up to a goal angle and speed (HAC paper)",
            )
            .python_id("shoal/Pendulum-v0")
            .scene(|table| {
                let pendulum: shoal_rl_env::InvertedPendulumConfig = settings_of(table)?;
                Ok(Scene::Chain((&pendulum).into()))
            }),
            EnvEntry::plain::<shoal_rl_env::PointReach>(
                "point-reach",
                "toy: move a point to a fixed target (fast tests)",
            ),
            EnvEntry::goal::<shoal_rl_env::PointGoal>(
                "point-goal",
                "toy: move a point to a goal (fast tests of goal algorithms)",
            ),
        ]
    }
}

/// What only an env registry does: check settings and build envs.
impl Registry<EnvEntry> {
    /// Checks `env`'s id and settings (keys and types) without building it.
    pub fn check(&self, env: &EnvConfig) -> Result<()> {
        (self.get(&env.kind)?.check)(&env.settings)
    }

    /// The configured env.
    pub fn make_env(&self, env: &EnvConfig) -> Result<Box<dyn Env>> {
        match self.get(&env.kind)?.builder {
            Builder::Plain(build) => build(&env.settings),
            Builder::Goal(build) => Ok(Box::new(build(&env.settings)?)),
        }
    }

    /// The configured goal-conditioned env.
    pub fn make_goal_env(&self, env: &EnvConfig) -> Result<Box<dyn GoalEnv>> {
        match self.get(&env.kind)?.builder {
            Builder::Goal(build) => build(&env.settings),
            Builder::Plain(_) => Err(Error::Config(format!(
                "env `{}` is not goal-conditioned; goal algorithms need one of: {}",
                env.kind,
                self.goal_ids().join(", ")
            ))),
        }
    }

    /// The ids of the goal-conditioned envs, in registration order.
    pub fn goal_ids(&self) -> Vec<&'static str> {
        self.entries
            .iter()
            .filter(|e| e.is_goal())
            .map(|e| e.id)
            .collect()
    }

    /// Whether `env` is goal-conditioned.
    pub fn is_goal(&self, env: &EnvConfig) -> Result<bool> {
        Ok(self.get(&env.kind)?.is_goal())
    }
}

/// The table scene of an arm task, as its settings lay it out.
fn arm_scene<S>(table: &toml::Table) -> Result<Scene>
where
    S: DeserializeOwned,
    for<'a> &'a S: Into<ArmLayout>,
{
    Ok(Scene::Arm((&settings_of::<S>(table)?).into()))
}

/// The worm's best travelling wave on this seed: the return its gait
/// search finds, and the wave in `summary.json`.
fn worm_gait(table: &toml::Table, seed: u64) -> Option<Reference> {
    let worm: shoal_rl_env::WormConfig = settings_of(table).ok()?;
    let gait = shoal_rl_env::try_best_travelling_wave(&worm, seed).ok()?;
    Some(Reference {
        name: "gait".into(),
        episode_return: gait.episode_return,
        summary_fields: vec![
            ("gait_speed".into(), gait.speed.into()),
            (
                "gait".into(),
                json!({"amplitude": gait.amplitude, "omega": gait.omega, "phase": gait.phase}),
            ),
        ],
    })
}

/// A run's env: its registry id and its settings, as `config.toml` holds
/// them (`[env]` with `kind = "worm"` beside the worm's settings).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EnvConfig {
    /// The env's registry id.
    pub kind: String,
    /// Its settings (keys its typed settings struct knows; absent keys take
    /// their defaults).
    #[serde(flatten)]
    pub settings: toml::Table,
}

impl EnvConfig {
    /// The env `kind` with typed settings.
    pub fn new<S: Serialize>(kind: &str, settings: &S) -> Result<Self> {
        Ok(EnvConfig {
            kind: kind.into(),
            settings: table_of(settings)?,
        })
    }

    /// The settings as their typed struct.
    pub fn settings<S: DeserializeOwned>(&self) -> Result<S> {
        settings_of(&self.settings)
    }
}

/// The README's example, compiled and run with the doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_rl_eval::ArmObject;

    fn arm_layout<S: Serialize>(kind: &str, settings: &S) -> ArmLayout {
        let envs = EnvRegistry::builtin();
        let env = EnvConfig::new(kind, settings).unwrap();
        match (envs.get(kind).unwrap().scene.unwrap())(&env.settings).unwrap() {
            Scene::Arm(layout) => layout,
            _ => panic!("{kind} is an arm task"),
        }
    }

    #[test]
    fn arm_layouts_follow_the_task_configs() {
        // The ball's defaults (BallToNetConfig docs): a 0.9 × 0.7 m table,
        // a cylindrical gripper of radius 0.02 and half height 0.03, a ball
        // of radius 0.025, success within 0.05 m.
        let ball = arm_layout("ball-to-net", &shoal_rl_env::BallToNetConfig::default());
        assert_eq!(ball.table_half_extents, [0.45, 0.35]);
        assert_eq!(ball.table_height, 0.4);
        assert_eq!(ball.object, ArmObject::Ball { radius: 0.025 });
        assert_eq!(
            (ball.gripper_radius, ball.gripper_half_height),
            (0.02, 0.03)
        );
        assert_eq!(ball.goal_radius, 0.05);
        // A changed config changes the drawing.
        let mut wide = shoal_rl_env::BallToNetConfig::default();
        wide.arm.table_half_extents = [0.6, 0.4];
        wide.arm.distance_threshold = 0.08;
        let wide = arm_layout("ball-to-net", &wide);
        assert_eq!(
            (wide.table_half_extents, wide.goal_radius),
            ([0.6, 0.4], 0.08)
        );
        // Push: FetchPush's 0.5 × 0.7 m table, a block gripper of half
        // extents [0.02, 0.02, 0.03], a box of half size 0.025.
        let push = arm_layout("arm-push", &shoal_rl_env::ArmPushConfig::default());
        assert_eq!(push.table_half_extents, [0.25, 0.35]);
        assert_eq!(push.object, ArmObject::Box { half_size: 0.025 });
        assert_eq!(
            (push.gripper_radius, push.gripper_half_height),
            (0.02, 0.03)
        );
    }
}
