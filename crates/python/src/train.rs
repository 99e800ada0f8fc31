//! Training and trained policies from Python.
//!
//! `train` runs shoal's trainer (the library `shoal train` is) in this
//! process: a preset with overrides, on shoal's env or on a Gymnasium env
//! of the caller's (env kinds `gymnasium` and `gymnasium-goal`, see
//! [`crate::gym`]). It returns the run directory, which holds what a run of
//! the binary holds. `TrainedPolicy` loads a run's checkpoint and acts on
//! numpy arrays.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use numpy::{PyArray1, PyArray2, PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::exceptions::{PyKeyboardInterrupt, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use shoal_rl_core::rand::rngs::StdRng;
use shoal_rl_core::{Error, StopFlag, rng_from_seed};
use shoal_rl_eval::CheckpointSelector;
use shoal_rl_parallel::{Backend, ProcessConfig};
use shoal_rl_registry::EnvRegistry;
use shoal_rl_train::config::{EnvConfig, RunConfig};
use shoal_rl_train::{Plan, Registries, TrainedPolicy};

use crate::config::from_py;
use crate::gym::{GymSettings, take_env_error};
use crate::to_py_err;

/// shoal's envs, algorithms and strategies, plus the two Gymnasium kinds.
fn registries() -> Registries {
    let envs = crate::gym::entries()
        .into_iter()
        .fold(EnvRegistry::builtin(), EnvRegistry::with);
    Registries::default().envs(envs)
}

/// A shoal error as a Python exception; an env's own exception becomes the
/// cause, so its traceback shows.
fn raise(py: Python<'_>, error: Error) -> PyErr {
    let cause = matches!(error, Error::Env(_))
        .then(take_env_error)
        .flatten();
    let raised = to_py_err(error);
    if let Some(cause) = cause {
        raised.set_cause(py, Some(cause));
    }
    raised
}

/// A keyword's value as the TOML literal a `--set key=value` takes.
fn toml_literal(key: &str, value: &Bound<'_, PyAny>) -> PyResult<String> {
    let json = from_py(value).map_err(|why| PyValueError::new_err(format!("{key}: {why}")))?;
    let value = toml::Value::try_from(json)
        .map_err(|e| PyValueError::new_err(format!("{key}: not a TOML value: {e}")))?;
    Ok(value.to_string())
}

/// Trains `preset` (a preset name or a config.toml path) in this process
/// and returns the run directory.
///
/// `env` replaces the preset's env with a Gymnasium env of one's own,
/// made by `gymnasium.make(env, **env_kwargs)` (a goal env with HER for an
/// algorithm that needs goals). Overrides are keyword arguments named as
/// `shoal config` prints the keys, with `__` for the dots
/// (`algo__gamma=0.9`), or given as `**{"algo.gamma": 0.9}`.
#[pyfunction]
#[pyo3(signature = (
    preset, *, env=None, env_kwargs=None, out=None, resume=None, seed=None,
    episodes=None, steps=None, progress=false, **overrides
))]
#[allow(clippy::too_many_arguments)]
pub fn train(
    py: Python<'_>,
    preset: &str,
    env: Option<String>,
    env_kwargs: Option<&Bound<'_, PyDict>>,
    out: Option<PathBuf>,
    resume: Option<PathBuf>,
    seed: Option<u64>,
    episodes: Option<u64>,
    steps: Option<u64>,
    progress: bool,
    overrides: Option<&Bound<'_, PyDict>>,
) -> PyResult<Option<PathBuf>> {
    let mut sets = Vec::new();
    if let Some(seed) = seed {
        sets.push(format!("seed={seed}"));
    }
    if let Some(episodes) = episodes {
        sets.push(format!("train.episodes={episodes}"));
    }
    if let Some(steps) = steps {
        // Every episode takes a step, so the episode budget never ends it first.
        sets.push(format!("train.env_steps={steps}"));
        sets.push(format!("train.episodes={steps}"));
    }
    for (key, value) in overrides.into_iter().flat_map(|d| d.iter()) {
        let key: String = key.extract()?;
        let key = key.replace("__", ".");
        sets.push(format!("{key}={}", toml_literal(&key, &value)?));
    }
    let registries = registries();
    let source = match (&resume, preset) {
        (Some(dir), "") => shoal_rl_eval::RunDir::new(dir)
            .config()
            .to_string_lossy()
            .into_owned(),
        _ => preset.to_string(),
    };
    // A Gymnasium env takes the place of the source's before the overrides,
    // so they may name its keys; the library keeps the order of the rest
    // (a switched `algo.kind` read with the source, worker rules for
    // presets only).
    let env_kwargs = match (&env, env_kwargs) {
        (Some(_), Some(kwargs)) => {
            let json = from_py(kwargs.as_any())
                .map_err(|why| PyValueError::new_err(format!("env_kwargs: {why}")))?;
            toml::Table::try_from(json)
                .map_err(|e| PyValueError::new_err(format!("env_kwargs: {e}")))?
        }
        _ => toml::Table::new(),
    };
    let cfg = registries
        .resolve_with(&source, &sets, |cfg| match env {
            Some(id) => gymnasium_env(&registries, cfg, id, env_kwargs),
            None => Ok(()),
        })
        .map_err(|e| raise(py, e))?;

    let stop = StopFlag::new();
    let workers = worker_processes(py, &cfg, &out, &resume)?;
    let mut plan = Plan::new(cfg).stop(stop.clone());
    plan.options.out = out;
    plan.options.resume = resume;
    plan.options.quiet = !progress;
    plan.options.worker_processes = workers;
    run_watched(py, &plan, &stop)
}

/// Puts the Gymnasium env `id` (made with `kwargs`) in `cfg`'s place: a goal
/// env where the preset trains a goal task (HER, subgoals), a plain one
/// where it trains a plain env. The run is named for what it trains
/// (`ppo-Pendulum-v1`, in `runs/` and on plots), not for the preset's env.
fn gymnasium_env(
    registries: &Registries,
    cfg: &mut RunConfig,
    id: String,
    kwargs: toml::Table,
) -> Result<(), Error> {
    let kind = if registries.is_goal_task(cfg)? {
        "gymnasium-goal"
    } else {
        "gymnasium"
    };
    let name: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    cfg.preset = format!("{}-{name}", cfg.algo.kind());
    cfg.env = EnvConfig::new(kind, &GymSettings { id, kwargs })?;
    Ok(())
}

/// The environment variable that hands a worker process its run: the
/// resolved config and the run's `out`/`resume`, as JSON.
const WORKER_RUN_VAR: &str = "SHOAL_PY_WORKER_RUN";

/// A worker process's run, as rank 0 hands it over.
#[derive(serde::Serialize, serde::Deserialize)]
struct WorkerRun {
    config: String,
    out: Option<PathBuf>,
    resume: Option<PathBuf>,
}

/// How the processes backend starts workers from Python: this interpreter
/// (`sys.executable`, as `multiprocessing` does; the re-run of the current
/// executable that `shoal train` uses would start the bare interpreter
/// behind a virtual environment) running `shoal_envs._worker`, with this
/// process's `sys.path`, so an env module the caller can import (`env =
/// "my_module:MyEnv-v0"`) is importable there too.
fn worker_processes(
    py: Python<'_>,
    cfg: &RunConfig,
    out: &Option<PathBuf>,
    resume: &Option<PathBuf>,
) -> PyResult<Option<ProcessConfig>> {
    if cfg.parallel.backend != Backend::Processes || cfg.parallel.workers < 2 {
        return Ok(None);
    }
    let sys = py.import("sys")?;
    let executable: Option<String> = sys.getattr("executable")?.extract()?;
    let Some(executable) = executable.filter(|e| !e.is_empty()) else {
        return Err(PyValueError::new_err(
            "parallel.backend = \"processes\" starts workers with sys.executable, which this \
             interpreter does not set",
        ));
    };
    let path: Vec<String> = sys.getattr("path")?.extract()?;
    let separator: String = py.import("os")?.getattr("pathsep")?.extract()?;
    let run = WorkerRun {
        config: cfg.to_toml(),
        out: out.clone(),
        resume: resume.clone(),
    };
    let run = serde_json::to_string(&run).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(Some(
        ProcessConfig::default()
            .program(executable)
            .args(["-m", "shoal_envs._worker"])
            .env("PYTHONPATH", path.join(&separator))
            .env(WORKER_RUN_VAR, run),
    ))
}

/// The body of `python -m shoal_envs._worker`: one worker of a run that a
/// `train` call in another process started on the processes backend.
#[pyfunction]
pub fn _run_worker(py: Python<'_>) -> PyResult<()> {
    let run = std::env::var(WORKER_RUN_VAR).map_err(|_| {
        PyValueError::new_err(format!(
            "{WORKER_RUN_VAR} is not set: shoal_envs._worker is started by a `train` call \
             on the processes backend, not by hand"
        ))
    })?;
    let run: WorkerRun = serde_json::from_str(&run)
        .map_err(|e| PyValueError::new_err(format!("{WORKER_RUN_VAR}: {e}")))?;
    let cfg = registries()
        .from_toml(&run.config, WORKER_RUN_VAR)
        .map_err(|e| raise(py, e))?;
    let stop = StopFlag::new();
    let mut plan = Plan::new(cfg).stop(stop.clone()).quiet();
    plan.options.out = run.out;
    plan.options.resume = run.resume;
    run_watched(py, &plan, &stop).map(|_| ())
}

/// Runs `plan` on a thread of its own while this one watches for Ctrl-C:
/// Python only sees signals on the main thread, between calls. A Gymnasium
/// env takes the GIL for each call; it is free meanwhile. The run
/// directory on rank 0, `None` on a worker.
fn run_watched(py: Python<'_>, plan: &Plan, stop: &StopFlag) -> PyResult<Option<PathBuf>> {
    let interrupted = AtomicBool::new(false);
    let outcome = std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("shoal-train".into())
            .spawn_scoped(scope, || registries().run(plan))
            .map_err(|e| PyValueError::new_err(format!("cannot start the training thread: {e}")))?;
        while !worker.is_finished() {
            py.detach(|| std::thread::sleep(Duration::from_millis(50)));
            if py.check_signals().is_err() && !interrupted.swap(true, Ordering::SeqCst) {
                stop.request();
            }
        }
        Ok::<_, PyErr>(worker.join())
    })?;
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(panic) => std::panic::resume_unwind(panic),
    };
    match outcome {
        Ok(run) => Ok(run.map(|(dir, _summary)| dir)),
        Err(Error::Interrupted(message)) if interrupted.load(Ordering::SeqCst) => {
            Err(PyKeyboardInterrupt::new_err(message))
        }
        Err(error) => Err(raise(py, error)),
    }
}

/// A trained policy loaded from a run directory (`load_policy`).
#[pyclass(unsendable, module = "shoal_envs._core")]
pub struct TrainedPolicyCore {
    policy: TrainedPolicy,
    rng: StdRng,
}

#[pymethods]
impl TrainedPolicyCore {
    /// Checkpoint `checkpoint` ("best", "latest" or a number) of the run in
    /// `run_dir`; `seed` seeds sampled actions.
    #[new]
    #[pyo3(signature = (run_dir, checkpoint="best", seed=0))]
    fn new(py: Python<'_>, run_dir: PathBuf, checkpoint: &str, seed: u64) -> PyResult<Self> {
        let which = CheckpointSelector::parse(checkpoint);
        let policy = registries()
            .load_policy(&run_dir, &which)
            .map_err(|e| raise(py, e))?;
        Ok(TrainedPolicyCore {
            policy,
            rng: rng_from_seed(seed),
        })
    }

    /// Actions for one observation (1-D) or a batch of rows (2-D), float32:
    /// the deterministic action, or one drawn as the learner explored.
    #[pyo3(signature = (obs, deterministic=true))]
    fn act<'py>(
        &mut self,
        py: Python<'py>,
        obs: PyReadonlyArrayDyn<'py, f32>,
        deterministic: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let shape = obs.shape().to_vec();
        let values: Vec<f32> = obs.as_array().iter().copied().collect();
        let mut one = |row: &[f32]| -> PyResult<Vec<f32>> {
            let action = if deterministic {
                self.policy.act(row)
            } else {
                self.policy.sample(row, &mut self.rng)
            };
            action.map_err(|e| raise(py, e))
        };
        match shape.as_slice() {
            [_] => Ok(PyArray1::from_vec(py, one(&values)?).into_any()),
            [rows, width] if *width > 0 => {
                let actions = values
                    .chunks_exact(*width)
                    .map(&mut one)
                    .collect::<PyResult<Vec<_>>>()?;
                debug_assert_eq!(actions.len(), *rows);
                Ok(PyArray2::from_vec2(py, &actions)?.into_any())
            }
            _ => Err(PyValueError::new_err(format!(
                "obs must be one observation (1-D) or rows of them (2-D), got shape {shape:?}"
            ))),
        }
    }

    /// The run's resolved config, as `config.toml` holds it.
    #[getter]
    fn config(&self) -> String {
        self.policy.config().to_toml()
    }

    /// The first seed of the run's evaluations: evaluation episode `i`
    /// resets its env with `eval_seed + i`.
    #[getter]
    fn eval_seed(&self) -> u64 {
        shoal_rl_train::eval_seed(self.policy.config())
    }

    /// The env kind the policy was trained on (`worm`, `gymnasium`, …).
    #[getter]
    fn env_kind(&self) -> String {
        self.policy.config().env.kind.clone()
    }

    /// The run's env settings as a JSON object string.
    #[getter]
    fn env_settings(&self) -> PyResult<String> {
        serde_json::to_string(&self.policy.config().env.settings)
            .map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// The Gymnasium id of the env the policy was trained on, where it has one.
    #[getter]
    fn gym_id(&self) -> Option<String> {
        let config = self.policy.config();
        match config.env.kind.as_str() {
            "gymnasium" | "gymnasium-goal" => config
                .env
                .settings
                .get("id")
                .and_then(|v| v.as_str())
                .map(str::to_string),
            kind => registries()
                .envs
                .get(kind)
                .ok()
                .and_then(|entry| entry.python_id)
                .map(str::to_string),
        }
    }
}
