//! `shoal_envs._core`: shoal's environments (worm, arm push, ball to net, UR5 reacher,
//! pendulum) as Python classes, shoal's trainer (`train`), and trained
//! policies (`TrainedPolicyCore`).
//!
//! The classes here are the raw environments: `reset(seed)` and
//! `step(action)` call the Rust env directly, so observations and rewards
//! are the Rust env's to the bit. The Gymnasium classes (`shoal/Worm-v0`,
//! …) are thin Python subclasses of `gymnasium.Env` around them, in
//! `python/shoal_envs/envs.py`.
//!
//! Every shoal error becomes a Python exception carrying shoal's message:
//! a bad action or setting is a `ValueError`, stepping an ended episode a
//! `RuntimeError`, an unknown setting name a `TypeError`.

mod config;
mod gym;
mod render;
mod train;

/// The README, whose code blocks are Python and shell: rustdoc compiles
/// none of them, but its Rust blocks would be, if it gained any.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

use numpy::{PyArray1, PyArrayMethods, PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::exceptions::{PyAttributeError, PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde::Serialize;
use serde::de::DeserializeOwned;
use shoal_rl_core::{Env, Error, GoalEnv, Step};

use crate::config::{override_config, to_json, to_py};
use crate::render::Recording;

/// A shoal error as the Python exception a caller expects, with shoal's message.
pub(crate) fn to_py_err(error: Error) -> PyErr {
    let message = error.to_string();
    match error {
        Error::ActionShape { .. }
        | Error::NonFiniteAction { .. }
        | Error::ActionOutOfBounds { .. }
        | Error::Config(_)
        | Error::Shape(_) => PyValueError::new_err(message),
        Error::Interrupted(_) => pyo3::exceptions::PyKeyboardInterrupt::new_err(message),
        Error::Io { .. } | Error::File { .. } => PyOSError::new_err(message),
        _ => PyRuntimeError::new_err(message),
    }
}

/// What the bindings need of a shoal env beyond [`Env`].
trait Task: Env + Send + Sync + Sized + 'static {
    /// Its settings.
    type Config: Serialize + DeserializeOwned + Default + Clone + PartialEq + Send + Sync;
    /// Name used in error messages.
    const TASK: &'static str;
    /// The env for validated settings.
    fn build(config: Self::Config) -> shoal_rl_core::Result<Self>;
    /// Checks settings, naming the first problem.
    fn validate(config: &Self::Config) -> shoal_rl_core::Result<()>;
    /// An empty recording for `render`.
    fn recording(config: &Self::Config) -> Recording;
    /// Adds the state after a reset or step to `recording`.
    fn record(&self, obs: &[f32], recording: &mut Recording);
    /// An observation as Python sees it.
    fn obs_to_py<'py>(py: Python<'py>, obs: Vec<f32>) -> PyResult<Bound<'py, PyAny>>;
}

impl Task for shoal_rl_env::Worm {
    type Config = shoal_rl_env::WormConfig;
    const TASK: &'static str = "worm";
    fn build(config: Self::Config) -> shoal_rl_core::Result<Self> {
        shoal_rl_env::Worm::new(config)
    }
    fn validate(config: &Self::Config) -> shoal_rl_core::Result<()> {
        config.validate()
    }
    fn recording(_: &Self::Config) -> Recording {
        Recording::Worm(Vec::new())
    }
    fn record(&self, _: &[f32], recording: &mut Recording) {
        recording.push_worm(self.outline());
    }
    fn obs_to_py<'py>(py: Python<'py>, obs: Vec<f32>) -> PyResult<Bound<'py, PyAny>> {
        Ok(PyArray1::from_vec(py, obs).into_any())
    }
}

/// A goal task's flat observation, with goals of `goal_dim`, as
/// Gymnasium-Robotics' dict.
fn goal_obs_to_py<'py>(
    py: Python<'py>,
    mut obs: Vec<f32>,
    goal_dim: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let n = obs.len().checked_sub(2 * goal_dim).ok_or_else(|| {
        to_py_err(Error::Shape(format!(
            "goal observation of length {}",
            obs.len()
        )))
    })?;
    let desired = obs.split_off(n + goal_dim);
    let achieved = obs.split_off(n);
    let dict = PyDict::new(py);
    dict.set_item("observation", PyArray1::from_vec(py, obs))?;
    dict.set_item("achieved_goal", PyArray1::from_vec(py, achieved))?;
    dict.set_item("desired_goal", PyArray1::from_vec(py, desired))?;
    Ok(dict.into_any())
}

/// The Task impl of a goal task: its goal size, and how it records frames
/// for `render` (`$recording` from the config, `$push` per observation).
macro_rules! goal_task {
    ($env:ty, $config:ty, $name:literal, $goal_dim:expr, $recording:ident, $push:ident) => {
        impl Task for $env {
            type Config = $config;
            const TASK: &'static str = $name;
            fn build(config: Self::Config) -> shoal_rl_core::Result<Self> {
                <$env>::new(config)
            }
            fn validate(config: &Self::Config) -> shoal_rl_core::Result<()> {
                config.validate()
            }
            fn recording(config: &Self::Config) -> Recording {
                Recording::$recording(config.into())
            }
            fn record(&self, obs: &[f32], recording: &mut Recording) {
                recording.$push(obs);
            }
            fn obs_to_py<'py>(py: Python<'py>, obs: Vec<f32>) -> PyResult<Bound<'py, PyAny>> {
                goal_obs_to_py(py, obs, $goal_dim)
            }
        }
    };
}

goal_task!(
    shoal_rl_env::ArmPush,
    shoal_rl_env::ArmPushConfig,
    "arm push",
    shoal_rl_env::arm::GOAL_DIM,
    arm,
    push_arm
);
goal_task!(
    shoal_rl_env::BallToNet,
    shoal_rl_env::BallToNetConfig,
    "ball to net",
    shoal_rl_env::arm::GOAL_DIM,
    arm,
    push_arm
);
goal_task!(
    shoal_rl_env::Ur5Reacher,
    shoal_rl_env::Ur5ReacherConfig,
    "ur5 reacher",
    3,
    chain,
    push_chain
);
goal_task!(
    shoal_rl_env::InvertedPendulum,
    shoal_rl_env::InvertedPendulumConfig,
    "pendulum",
    2,
    chain,
    push_chain
);

/// The state every env class holds: the env (gone once closed) and, when
/// rendering, the episode's frames.
struct Inner<T: Task> {
    env: Option<T>,
    config: T::Config,
    recording: Option<Recording>,
}

impl<T: Task> Inner<T> {
    fn new(config: T::Config, render: bool) -> PyResult<Self> {
        let env = T::build(config.clone()).map_err(to_py_err)?;
        Ok(Inner {
            recording: render.then(|| T::recording(&config)),
            env: Some(env),
            config,
        })
    }

    fn env(&self) -> PyResult<&T> {
        self.env.as_ref().ok_or_else(closed)
    }

    fn reset(&mut self, seed: Option<u64>) -> PyResult<Vec<f32>> {
        let env = self.env.as_mut().ok_or_else(closed)?;
        let obs = env.reset(seed);
        if let Some(recording) = &mut self.recording {
            recording.clear();
            env.record(&obs, recording);
        }
        Ok(obs)
    }

    fn step(&mut self, py: Python<'_>, action: PyReadonlyArrayDyn<'_, f32>) -> PyResult<Step> {
        if action.ndim() != 1 {
            return Err(PyValueError::new_err(format!(
                "action must be a 1-D array, got shape {:?}",
                action.shape()
            )));
        }
        let action: Vec<f32> = match action.as_slice() {
            Ok(slice) => slice.to_vec(),
            Err(_) => action.as_array().iter().copied().collect(),
        };
        let env = self.env.as_mut().ok_or_else(closed)?;
        // The physics runs without the interpreter lock, so Python threads
        // can step other envs meanwhile.
        let step = py.detach(|| env.step(&action)).map_err(to_py_err)?;
        if let Some(recording) = &mut self.recording {
            env.record(&step.obs, recording);
        }
        Ok(step)
    }

    /// `(obs, reward, terminated, truncated, info)` as Gymnasium's `step` returns it.
    fn step_to_py<'py>(py: Python<'py>, step: Step) -> PyResult<Bound<'py, PyAny>> {
        let info = PyDict::new(py);
        for (key, value) in step.info.iter() {
            info.set_item(key, value)?;
        }
        let obs = T::obs_to_py(py, step.obs)?;
        (
            obs,
            f64::from(step.reward),
            step.terminated,
            step.truncated,
            info,
        )
            .into_pyobject(py)
            .map(Bound::into_any)
    }

    fn render<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.env()?;
        let recording = self.recording.as_ref().ok_or_else(|| {
            PyRuntimeError::new_err("this env was made without render=True; it has nothing to draw")
        })?;
        if recording.is_empty() {
            return Err(PyRuntimeError::new_err(
                "nothing to render before the first reset",
            ));
        }
        let image = py.detach(|| recording.draw()).map_err(to_py_err)?;
        Ok(PyArray1::from_vec(py, image.rgb)
            .reshape([image.height, image.width, 3])?
            .into_any())
    }
}

fn closed() -> PyErr {
    PyRuntimeError::new_err("the environment is closed")
}

/// A field of a config's JSON by name, also among the nested `arm` fields.
fn config_field<'py, C: Serialize>(
    py: Python<'py>,
    config: &C,
    name: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let json = to_json(config);
    let value = json.get(name).or_else(|| json.get("arm")?.get(name));
    match value {
        Some(value) => to_py(py, value),
        None => Err(PyAttributeError::new_err(format!(
            "config has no field `{name}`"
        ))),
    }
}

/// Defines the Python config class `$config` for `$task`'s settings.
macro_rules! config_class {
    ($config:ident, $name:literal, $task:ty) => {
        #[doc = concat!("Settings of `", $name, "` (shoal's `", stringify!($task), "` config).")]
        #[pyclass(module = "shoal_envs._core", name = $name, frozen, eq)]
        #[derive(Clone, PartialEq)]
        struct $config {
            inner: <$task as Task>::Config,
        }

        #[pymethods]
        impl $config {
            /// The defaults, overridden by the keyword arguments; validated.
            #[new]
            #[pyo3(signature = (**kwargs))]
            fn new(kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
                let base = <<$task as Task>::Config>::default();
                Self::checked(override_config(<$task as Task>::TASK, &base, kwargs)?)
            }

            /// A copy with the fields named in the keyword arguments replaced.
            #[pyo3(signature = (**kwargs))]
            fn replace(&self, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
                Self::checked(override_config(<$task as Task>::TASK, &self.inner, kwargs)?)
            }

            /// Every field as a dict (the shared arm settings nested under `arm`).
            fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                to_py(py, &to_json(&self.inner))
            }

            fn __getattr__<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
                config_field(py, &self.inner, name)
            }

            fn __repr__(&self) -> String {
                format!("{}({})", $name, to_json(&self.inner))
            }
        }

        impl $config {
            fn checked(inner: <$task as Task>::Config) -> PyResult<Self> {
                <$task as Task>::validate(&inner).map_err(to_py_err)?;
                Ok($config { inner })
            }
        }
    };
}

/// Defines the Python env class `$class` around `$task`; `$extra` holds
/// methods only this class has.
macro_rules! env_class {
    ($class:ident, $name:literal, $task:ty, $config:ident, { $($extra:tt)* }) => {
        #[doc = concat!("shoal's `", stringify!($task), "` environment, stepped directly.")]
        #[pyclass(module = "shoal_envs._core", name = $name)]
        struct $class {
            inner: Inner<$task>,
        }

        #[pymethods]
        impl $class {
            /// An env with `config` (the defaults when omitted); `render`
            /// keeps the frames `render()` draws.
            #[new]
            #[pyo3(signature = (config = None, *, render = false))]
            fn new(config: Option<PyRef<'_, $config>>, render: bool) -> PyResult<Self> {
                let config = config.map(|c| c.inner.clone()).unwrap_or_default();
                Ok($class { inner: Inner::new(config, render)? })
            }

            /// The settings this env was built with.
            #[getter]
            fn config(&self) -> $config {
                $config { inner: self.inner.config.clone() }
            }

            /// Lower bounds of the action.
            #[getter]
            fn action_low<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<f32>>> {
                Ok(PyArray1::from_slice(py, &self.inner.env()?.action_space().low))
            }

            /// Upper bounds of the action.
            #[getter]
            fn action_high<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<f32>>> {
                Ok(PyArray1::from_slice(py, &self.inner.env()?.action_space().high))
            }

            /// Length of the flat observation vector.
            #[getter]
            fn observation_dim(&self) -> PyResult<usize> {
                Ok(self.inner.env()?.observation_space().dim())
            }

            /// Starts an episode: `seed` re-seeds the env, `None` continues its random stream.
            #[pyo3(signature = (seed = None))]
            fn reset<'py>(&mut self, py: Python<'py>, seed: Option<u64>) -> PyResult<Bound<'py, PyAny>> {
                let obs = self.inner.reset(seed)?;
                <$task as Task>::obs_to_py(py, obs)
            }

            /// One control step with a float32 action of the action space's
            /// length: `(obs, reward, terminated, truncated, info)`.
            fn step<'py>(
                &mut self,
                py: Python<'py>,
                action: PyReadonlyArrayDyn<'_, f32>,
            ) -> PyResult<Bound<'py, PyAny>> {
                let step = self.inner.step(py, action)?;
                Inner::<$task>::step_to_py(py, step)
            }

            /// The current state as an RGB array of shape (height, width, 3).
            fn render<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                self.inner.render(py)
            }

            /// Frees the simulation; later calls other than `close` raise. Idempotent.
            fn close(&mut self) {
                self.inner.env = None;
                self.inner.recording = None;
            }

            /// Whether `close` was called.
            #[getter]
            fn closed(&self) -> bool {
                self.inner.env.is_none()
            }

            $($extra)*
        }
    };
}

/// Defines a goal task's env class: the common methods plus the goal API.
macro_rules! goal_env_class {
    ($class:ident, $name:literal, $task:ty, $config:ident) => {
        env_class!($class, $name, $task, $config, {
            /// Length of the achieved and desired goals.
            #[getter]
            fn goal_dim(&self) -> PyResult<usize> {
                Ok(self.inner.env()?.goal_dim())
            }

            /// Rewards for rows of achieved and desired goals (float32 arrays
            /// of equal shape `(..., goal_dim)`), as a flat float32 array.
            fn compute_rewards<'py>(
                &self,
                py: Python<'py>,
                achieved: PyReadonlyArrayDyn<'_, f32>,
                desired: PyReadonlyArrayDyn<'_, f32>,
            ) -> PyResult<Bound<'py, PyArray1<f32>>> {
                let env = self.inner.env()?;
                let g = env.goal_dim();
                if achieved.shape() != desired.shape() || achieved.shape().last() != Some(&g) {
                    return Err(PyValueError::new_err(format!(
                        "achieved_goal {:?} and desired_goal {:?} must have the same shape, ending in {g}",
                        achieved.shape(),
                        desired.shape()
                    )));
                }
                let flat = |a: &PyReadonlyArrayDyn<'_, f32>| -> Vec<f32> {
                    a.as_array().iter().copied().collect()
                };
                let rewards = env.compute_rewards(&flat(&achieved), &flat(&desired));
                Ok(PyArray1::from_vec(py, rewards))
            }
        });
    };
}

config_class!(WormConfig, "WormConfig", shoal_rl_env::Worm);
config_class!(ArmPushConfig, "ArmPushConfig", shoal_rl_env::ArmPush);
config_class!(BallToNetConfig, "BallToNetConfig", shoal_rl_env::BallToNet);
config_class!(
    Ur5ReacherConfig,
    "UR5ReacherConfig",
    shoal_rl_env::Ur5Reacher
);
config_class!(
    PendulumConfig,
    "PendulumConfig",
    shoal_rl_env::InvertedPendulum
);

env_class!(Worm, "Worm", shoal_rl_env::Worm, WormConfig, {
    /// x-coordinate of the worm's centre of mass, m (0 at the start of an episode).
    #[getter]
    fn x_position(&self) -> PyResult<f32> {
        Ok(self.inner.env()?.x_position())
    }
});
goal_env_class!(ArmPush, "ArmPush", shoal_rl_env::ArmPush, ArmPushConfig);
goal_env_class!(
    BallToNet,
    "BallToNet",
    shoal_rl_env::BallToNet,
    BallToNetConfig
);

goal_env_class!(
    Ur5Reacher,
    "UR5Reacher",
    shoal_rl_env::Ur5Reacher,
    Ur5ReacherConfig
);
goal_env_class!(
    Pendulum,
    "Pendulum",
    shoal_rl_env::InvertedPendulum,
    PendulumConfig
);

/// `(Gymnasium id, shoal id)` of every env in shoal's registry that has a
/// Gymnasium id: the ids the package registers come from the one table the
/// CLI and the docs use.
#[pyfunction]
fn registered_envs() -> Vec<(&'static str, &'static str)> {
    shoal_rl_registry::EnvRegistry::builtin()
        .entries()
        .iter()
        .filter_map(|entry| Some((entry.python_id?, entry.id)))
        .collect()
}

/// shoal's environments, stepped in Rust.
#[pymodule]
#[pyo3(name = "_core")]
fn core_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(registered_envs, m)?)?;
    m.add_function(wrap_pyfunction!(train::train, m)?)?;
    m.add_function(wrap_pyfunction!(train::_run_worker, m)?)?;
    m.add_class::<train::TrainedPolicyCore>()?;
    m.add_class::<WormConfig>()?;
    m.add_class::<ArmPushConfig>()?;
    m.add_class::<BallToNetConfig>()?;
    m.add_class::<Worm>()?;
    m.add_class::<ArmPush>()?;
    m.add_class::<BallToNet>()?;
    m.add_class::<Ur5ReacherConfig>()?;
    m.add_class::<PendulumConfig>()?;
    m.add_class::<Ur5Reacher>()?;
    m.add_class::<Pendulum>()?;
    Ok(())
}
