//! A user's Gymnasium env as a shoal env, so shoal's learners and runtime
//! train it: env kinds `gymnasium` (a flat `Box` observation) and
//! `gymnasium-goal` (Gymnasium-Robotics' goal API: a `Dict` observation of
//! `observation`, `achieved_goal` and `desired_goal`, and
//! `compute_reward(achieved, desired, info)`).
//!
//! The env is built with `gymnasium.make(id, **kwargs)`, so a config file
//! names it by its Gymnasium id and a run directory can rebuild it for
//! evaluation, and a worker process of the processes backend can rebuild
//! it in its own interpreter. Every call into an env goes through
//! [`with_python`]: one at a time in a process, so worker threads queue on
//! it as they would on the GIL, and no env's constructor or step runs
//! beside another's even where the env itself releases the GIL (MuJoCo's
//! model loader does, and is not thread-safe).
//!
//! A Python exception inside the env becomes [`Error::Env`] with its text;
//! the exception itself is kept ([`take_env_error`], its frames' locals
//! cleared inside the turn) so `shoal_envs.train` raises it as the cause,
//! traceback and all.

use std::sync::{Condvar, Mutex, PoisonError};

use numpy::{PyArrayMethods, PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use serde::{Deserialize, Serialize};
use shoal_rl_core::{Env, Error, GoalEnv, Info, Result, Space, Step};
use shoal_rl_registry::{EnvEntry, FromSettings};

use crate::config::to_py;

/// The keys of a goal env's observation, in shoal's flat order.
const GOAL_KEYS: [&str; 3] = ["observation", "achieved_goal", "desired_goal"];

/// Most observation or action components taken from a Python env.
const MAX_COMPONENTS: usize = 1 << 20;

/// The last exception a Gymnasium env raised, kept for the caller of `train`
/// (the runtime carries only its text).
static LAST_ENV_ERROR: Mutex<Option<PyErr>> = Mutex::new(None);

/// Whether a thread is inside a Python env call ([`with_python`]), and the
/// signal that it left.
static ENV_CALL_BUSY: Mutex<bool> = Mutex::new(false);
static ENV_CALL_FREE: Condvar = Condvar::new();

/// This thread's turn to call into a Python env; the next waiting thread's
/// comes when it drops. (A flag under a mutex rather than the mutex's own
/// guard, which must stay on the thread that took it: the turn is taken
/// with the GIL released and used with it held.)
struct EnvCallTurn;

impl EnvCallTurn {
    fn take() -> Self {
        let mut busy = ENV_CALL_BUSY.lock().unwrap_or_else(PoisonError::into_inner);
        while *busy {
            busy = ENV_CALL_FREE
                .wait(busy)
                .unwrap_or_else(PoisonError::into_inner);
        }
        *busy = true;
        EnvCallTurn
    }
}

impl Drop for EnvCallTurn {
    fn drop(&mut self) {
        *ENV_CALL_BUSY.lock().unwrap_or_else(PoisonError::into_inner) = false;
        ENV_CALL_FREE.notify_one();
    }
}

/// A Python thread state kept for the life of a thread Python did not
/// start (a training or worker thread of shoal's), so that every call
/// into Python from it runs on one thread state. Without it each
/// `Python::attach` makes a thread state and the next deletes it, while a
/// pybind11 extension (MuJoCo's) that released the GIL inside a call can
/// hold on to one that is gone and crash reacquiring the GIL.
struct KeptThreadState {
    gil: pyo3::ffi::PyGILState_STATE,
    saved: *mut pyo3::ffi::PyThreadState,
}

impl KeptThreadState {
    /// Keeps a thread state for this thread, unless it holds the GIL now
    /// (a Python thread, whose thread state lives as long as it does).
    fn keep() -> Option<Self> {
        // SAFETY: the interpreter is initialised (this module was imported);
        // `PyGILState_Ensure` gives this thread a thread state and the GIL,
        // and `PyEval_SaveThread` releases the GIL at once, keeping the
        // thread state until `drop` takes the GIL back and releases it.
        unsafe {
            if pyo3::ffi::PyGILState_Check() == 1 {
                return None;
            }
            let gil = pyo3::ffi::PyGILState_Ensure();
            let saved = pyo3::ffi::PyEval_SaveThread();
            Some(KeptThreadState { gil, saved })
        }
    }
}

impl Drop for KeptThreadState {
    fn drop(&mut self) {
        // SAFETY: the pair `keep` made on this thread (thread-locals are
        // dropped on their own thread), undone in reverse order.
        unsafe {
            if pyo3::ffi::Py_IsInitialized() != 0 {
                pyo3::ffi::PyEval_RestoreThread(self.saved);
                pyo3::ffi::PyGILState_Release(self.gil);
            }
        }
    }
}

thread_local! {
    static THREAD_STATE: std::cell::OnceCell<KeptThreadState> =
        const { std::cell::OnceCell::new() };
}

/// Runs `call` with the GIL, alone among this process's env calls, on a
/// thread state that lives as long as the thread ([`KeptThreadState`]).
/// The turn is taken before the GIL, with the GIL released while it waits,
/// so a thread holding the turn and waiting for the GIL never waits on one
/// holding the GIL and waiting for the turn.
fn with_python<T>(call: impl for<'py> FnOnce(Python<'py>) -> T) -> T {
    THREAD_STATE.with(|kept| {
        if kept.get().is_none()
            && let Some(state) = KeptThreadState::keep()
        {
            let _ = kept.set(state);
        }
    });
    let _turn = Python::attach(|py| py.detach(EnvCallTurn::take));
    Python::attach(call)
}

/// Takes the exception behind the latest [`Error::Env`], if any.
pub fn take_env_error() -> Option<PyErr> {
    LAST_ENV_ERROR.lock().ok()?.take()
}

/// Runs one call into an env in its turn ([`with_python`]). A Python
/// exception becomes [`Error::Env`] naming the env and what it was doing,
/// and is kept for `train` to raise ([`take_env_error`]); both inside the
/// turn, so the exception it replaces is freed there too.
fn env_call<T>(
    id: &str,
    what: &str,
    call: impl for<'py> FnOnce(Python<'py>) -> PyResult<T>,
) -> Result<T> {
    with_python(|py| call(py).map_err(|error| keep_env_error(py, id, what, error)))
}

/// `error` as [`Error::Env`]; the exception is kept with its frames'
/// locals cleared ([`release_frames`]).
fn keep_env_error(py: Python<'_>, id: &str, what: &str, error: PyErr) -> Error {
    let message = error.to_string().replace('\n', " ");
    release_frames(py, &error);
    let replaced = LAST_ENV_ERROR
        .lock()
        .ok()
        .and_then(|mut slot| slot.replace(error));
    // Freed here, with the GIL and in the turn, not under the slot's lock.
    drop(replaced);
    Error::Env(format!("gymnasium env `{id}`: {what}: {message}"))
}

/// Most exceptions of one chain (`__cause__`, `__context__`) whose frames
/// [`release_frames`] clears.
const MAX_CHAINED_EXCEPTIONS: usize = 16;

/// Clears the locals of every frame in `error`'s traceback and its chained
/// exceptions' (`traceback.clear_frames`), keeping the traceback's lines.
/// Those locals hold the env itself (`self` in its `step`, the half-built
/// env in `gymnasium.make`): kept with the exception, the env would outlive
/// its `close` and be freed wherever Python drops the exception, outside
/// any turn, beside another env's call.
fn release_frames(py: Python<'_>, error: &PyErr) {
    let Ok(clear_frames) = py
        .import("traceback")
        .and_then(|module| module.getattr("clear_frames"))
    else {
        return;
    };
    let mut tracebacks: Vec<Bound<'_, PyAny>> = error
        .traceback(py)
        .map(Bound::into_any)
        .into_iter()
        .collect();
    let mut exceptions = vec![error.value(py).clone().into_any()];
    for _ in 0..MAX_CHAINED_EXCEPTIONS {
        let Some(exception) = exceptions.pop() else {
            break;
        };
        for link in ["__traceback__", "__cause__", "__context__"] {
            match exception.getattr(link) {
                Ok(value) if value.is_none() => {}
                Ok(value) if link == "__traceback__" => tracebacks.push(value),
                Ok(value) => exceptions.push(value),
                Err(_) => {}
            }
        }
    }
    for traceback in tracebacks {
        // Frames still running refuse (RuntimeError); these have all returned.
        let _ = clear_frames.call1((traceback,));
    }
}

/// Settings of the `gymnasium` and `gymnasium-goal` env kinds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GymSettings {
    /// The Gymnasium id `gymnasium.make` takes (`Pendulum-v1`, or
    /// `my_package:MyEnv-v0` to import the module that registers it).
    pub id: String,
    /// Keyword arguments of `gymnasium.make`.
    pub kwargs: toml::Table,
}

/// A Gymnasium env with a flat `Box` observation and a bounded `Box` action.
pub struct GymEnv {
    id: String,
    env: Py<PyAny>,
    observation_space: Space,
    action_space: Space,
    /// The action's shape in Python (a `Box` may be more than 1-D).
    action_shape: Vec<usize>,
    /// Widths of `observation`, `achieved_goal`, `desired_goal` for a goal
    /// env; `None` for a flat one.
    goal_layout: Option<[usize; 3]>,
    /// The error of a failed `reset` (which cannot return one), reported by
    /// the next `step`.
    failed_reset: Option<Error>,
}

/// A Gymnasium-Robotics goal env: [`GymEnv`] with the goal API.
pub struct GymGoalEnv(GymEnv);

/// A `gymnasium.spaces.Box`'s bounds, flattened, and its shape.
fn box_bounds(space: &Bound<'_, PyAny>) -> PyResult<(Vec<f32>, Vec<f32>, Vec<usize>)> {
    let py = space.py();
    let gym_box = py.import("gymnasium.spaces")?.getattr("Box")?;
    if !space.is_instance(&gym_box)? {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "shoal trains continuous Box spaces, not {}",
            space.str()?
        )));
    }
    let numpy = py.import("numpy")?;
    let flat = |name: &str| -> PyResult<Vec<f32>> {
        let array = numpy.call_method1("ravel", (space.getattr(name)?,))?;
        let array = numpy.call_method1("asarray", (array, "float32"))?;
        let view: PyReadonlyArrayDyn<'_, f32> = array.extract()?;
        Ok(view.as_array().iter().copied().collect())
    };
    let shape: Vec<usize> = space.getattr("shape")?.extract()?;
    let (low, high) = (flat("low")?, flat("high")?);
    if low.len() > MAX_COMPONENTS {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "a space of {} components is more than shoal takes ({MAX_COMPONENTS})",
            low.len()
        )));
    }
    Ok((low, high, shape))
}

impl GymEnv {
    /// `gymnasium.make(id, **kwargs)`, checked: a `Box` action with finite
    /// bounds, a `Box` observation (flat) or the goal `Dict` (`goal`).
    fn make(settings: &GymSettings, goal: bool) -> Result<Self> {
        let id = settings.id.clone();
        if id.is_empty() {
            return Err(Error::Config(
                "env.id must name a Gymnasium env (`Pendulum-v1`, `my_package:MyEnv-v0`)".into(),
            ));
        }
        let kwargs = serde_json::to_value(&settings.kwargs)
            .map_err(|e| Error::Config(format!("env.kwargs: {e}")))?;
        env_call(
            &settings.id,
            "building it",
            |py| -> PyResult<Result<Self>> {
                let kwargs = to_py(py, &kwargs)?;
                let kwargs = kwargs.cast_into::<PyDict>()?;
                let env = py
                    .import("gymnasium")?
                    .call_method("make", (&id,), Some(&kwargs))?;
                let (low, high, action_shape) = box_bounds(&env.getattr("action_space")?)?;
                if let Some(i) =
                    (0..low.len()).find(|&i| !(low[i].is_finite() && high[i].is_finite()))
                {
                    return Ok(Err(Error::Config(format!(
                        "gymnasium env `{id}`: action component {i} is bounded by [{}, {}]; shoal's \
                     learners need finite action bounds",
                        low[i], high[i]
                    ))));
                }
                let action_space = Space::new(low, high);
                let observation = env.getattr("observation_space")?;
                let (observation_space, goal_layout) = if goal {
                    let mut low = Vec::new();
                    let mut high = Vec::new();
                    let mut widths = [0; 3];
                    for (width, key) in widths.iter_mut().zip(GOAL_KEYS) {
                        let part = observation.get_item(key).map_err(|_| {
                            pyo3::exceptions::PyTypeError::new_err(format!(
                                "a goal env's observation space is a Dict with `{}`; got {}",
                                GOAL_KEYS.join("`, `"),
                                observation.str().map(|s| s.to_string()).unwrap_or_default()
                            ))
                        })?;
                        let (l, h, _) = box_bounds(&part)?;
                        *width = l.len();
                        low.extend(l);
                        high.extend(h);
                    }
                    if widths[1] != widths[2] || widths[1] == 0 {
                        return Ok(Err(Error::Config(format!(
                            "gymnasium env `{id}`: achieved_goal has {} components and desired_goal \
                         {}; they must be equal and non-empty",
                            widths[1], widths[2]
                        ))));
                    }
                    (Space::new(low, high), Some(widths))
                } else {
                    let (low, high, _) = box_bounds(&observation)?;
                    (Space::new(low, high), None)
                };
                Ok(Ok(GymEnv {
                    id: id.clone(),
                    env: env.unbind(),
                    observation_space,
                    action_space,
                    action_shape,
                    goal_layout,
                    failed_reset: None,
                }))
            },
        )?
    }

    /// A Python observation (a `Box` array, or the goal `Dict`) as shoal's
    /// flat vector, checked against the space's width.
    fn flat_obs(&self, obs: &Bound<'_, PyAny>) -> PyResult<Vec<f32>> {
        let numpy = obs.py().import("numpy")?;
        let mut flat = Vec::with_capacity(self.observation_space.dim());
        let mut push = |part: Bound<'_, PyAny>| -> PyResult<()> {
            let array = numpy.call_method1("asarray", (part, "float32"))?;
            let view: PyReadonlyArrayDyn<'_, f32> = array.extract()?;
            flat.extend(view.as_array().iter().copied());
            Ok(())
        };
        match self.goal_layout {
            Some(_) => {
                for key in GOAL_KEYS {
                    push(obs.get_item(key)?)?;
                }
            }
            None => push(obs.clone())?,
        }
        if flat.len() != self.observation_space.dim() {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "observation has {} components, the observation space {}",
                flat.len(),
                self.observation_space.dim()
            )));
        }
        Ok(flat)
    }

    /// A goal vector (or rows of them) as a numpy array for `compute_reward`.
    fn goal_array<'py>(&self, py: Python<'py>, values: &[f32]) -> PyResult<Bound<'py, PyAny>> {
        let goal = self.goal_layout.map_or(1, |w| w[1]);
        let array = numpy::PyArray1::from_slice(py, values);
        if values.len() == goal {
            Ok(array.into_any())
        } else {
            Ok(array.reshape([values.len() / goal, goal])?.into_any())
        }
    }
}

impl Env for GymEnv {
    fn observation_space(&self) -> &Space {
        &self.observation_space
    }

    fn action_space(&self) -> &Space {
        &self.action_space
    }

    fn reset(&mut self, seed: Option<u64>) -> Vec<f32> {
        let result = env_call(&self.id, "reset", |py| -> PyResult<Vec<f32>> {
            let kwargs = PyDict::new(py);
            kwargs.set_item("seed", seed)?;
            let out = self.env.bind(py).call_method("reset", (), Some(&kwargs))?;
            let (obs, _info): (Bound<'_, PyAny>, Bound<'_, PyAny>) = out.extract()?;
            self.flat_obs(&obs)
        });
        match result {
            Ok(obs) => {
                self.failed_reset = None;
                obs
            }
            Err(e) => {
                // `reset` cannot fail in shoal's Env: the error waits for the
                // next step, and the observation is NaN so nothing learns from it.
                self.failed_reset = Some(e);
                vec![f32::NAN; self.observation_space.dim()]
            }
        }
    }

    fn step(&mut self, action: &[f32]) -> Result<Step> {
        if let Some(error) = self.failed_reset.take() {
            return Err(error);
        }
        let action = self.action_space.validate(action, true)?;
        let step = env_call(&self.id, "step", |py| -> PyResult<Step> {
            let array =
                numpy::PyArray1::from_slice(py, &action).reshape(self.action_shape.clone())?;
            let out = self.env.bind(py).call_method1("step", (array,))?;
            let out = out.cast_into::<PyTuple>()?;
            if out.len() != 5 {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "step returned {} values; Gymnasium's API returns 5 (obs, reward, \
                     terminated, truncated, info)",
                    out.len()
                )));
            }
            let obs = self.flat_obs(&out.get_item(0)?)?;
            let reward: f64 = out.get_item(1)?.extract()?;
            let terminated: bool = out.get_item(2)?.is_truthy()?;
            let truncated: bool = out.get_item(3)?.is_truthy()?;
            let mut info = Info::new();
            if let Ok(info_dict) = out.get_item(4)?.cast_into::<PyDict>()
                && let Some(flag) = info_dict.get_item("is_success")?
            {
                info.insert("is_success", if flag.is_truthy()? { 1.0 } else { 0.0 });
            }
            Ok(Step {
                obs,
                reward: reward as f32,
                terminated,
                truncated,
                info,
            })
        })?;
        if !step.reward.is_finite() {
            return Err(Error::Env(format!(
                "gymnasium env `{}`: step returned the reward {}",
                self.id, step.reward
            )));
        }
        Ok(step)
    }
}

impl Drop for GymEnv {
    /// Closes the Python env (its windows, files, simulators) and frees it,
    /// both in one turn. Were the last reference dropped after the turn,
    /// without the GIL, Python would free the env later on whichever thread
    /// next took the GIL, beside another env's call (MuJoCo freeing a model
    /// beside its loader), which the turn is there to prevent.
    fn drop(&mut self) {
        with_python(|py| {
            let env = std::mem::replace(&mut self.env, py.None());
            let _ = env.bind(py).call_method0("close");
            drop(env);
        });
    }
}

impl FromSettings for GymEnv {
    type Settings = GymSettings;
    fn from_settings(settings: GymSettings) -> Result<Self> {
        GymEnv::make(&settings, false)
    }
}

impl Env for GymGoalEnv {
    fn observation_space(&self) -> &Space {
        self.0.observation_space()
    }

    fn action_space(&self) -> &Space {
        self.0.action_space()
    }

    fn reset(&mut self, seed: Option<u64>) -> Vec<f32> {
        self.0.reset(seed)
    }

    fn step(&mut self, action: &[f32]) -> Result<Step> {
        self.0.step(action)
    }
}

impl GymGoalEnv {
    /// `env.unwrapped.compute_reward(achieved, desired, {})` on rows of
    /// goals, vectorised as Gymnasium-Robotics' envs are.
    fn python_rewards(&self, achieved: &[f32], desired: &[f32]) -> Result<Vec<f32>> {
        let env = &self.0;
        let rows = achieved.len() / self.goal_dim();
        env_call(&env.id, "compute_reward", |py| -> PyResult<Vec<f32>> {
            let unwrapped = env.env.bind(py).getattr("unwrapped")?;
            let info = PyDict::new(py);
            let out = unwrapped.call_method1(
                "compute_reward",
                (
                    env.goal_array(py, achieved)?,
                    env.goal_array(py, desired)?,
                    info,
                ),
            )?;
            let numpy = py.import("numpy")?;
            let out =
                numpy.call_method1("ravel", (numpy.call_method1("asarray", (out, "float32"))?,))?;
            let view: PyReadonlyArrayDyn<'_, f32> = out.extract()?;
            if view.len() != rows {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "compute_reward returned {} rewards for {rows} goals",
                    view.len()
                )));
            }
            Ok(view.as_array().iter().copied().collect())
        })
    }
}

impl GoalEnv for GymGoalEnv {
    fn goal_dim(&self) -> usize {
        self.0.goal_layout.map_or(0, |w| w[1])
    }

    /// The env's own `compute_reward`. shoal's `GoalEnv` cannot fail here,
    /// so a failing `compute_reward` gives NaN, which the learner refuses
    /// on its next update; the exception is kept for `train` to raise.
    fn compute_reward(&self, achieved: &[f32], desired: &[f32]) -> f32 {
        self.python_rewards(achieved, desired)
            .map_or(f32::NAN, |r| r[0])
    }

    fn compute_rewards(&self, achieved: &[f32], desired: &[f32]) -> Vec<f32> {
        self.python_rewards(achieved, desired)
            .unwrap_or_else(|_| vec![f32::NAN; achieved.len() / self.goal_dim().max(1)])
    }

    /// Success is a reward of 0 or more: the −1/0 convention of
    /// Gymnasium-Robotics' sparse tasks (steps report `info["is_success"]`,
    /// which is used where there is one).
    fn is_success(&self, achieved: &[f32], desired: &[f32]) -> bool {
        self.compute_reward(achieved, desired) >= 0.0
    }
}

impl FromSettings for GymGoalEnv {
    type Settings = GymSettings;
    fn from_settings(settings: GymSettings) -> Result<Self> {
        GymEnv::make(&settings, true).map(GymGoalEnv)
    }
}

/// The registry entries of the two kinds.
pub fn entries() -> [EnvEntry; 2] {
    [
        EnvEntry::plain::<GymEnv>(
            "gymnasium",
            "a Gymnasium env of one's own with Box observations and actions (gymnasium.make(id))",
        ),
        EnvEntry::goal::<GymGoalEnv>(
            "gymnasium-goal",
            "a Gymnasium-Robotics goal env of one's own (Dict observation, compute_reward)",
        ),
    ]
}
