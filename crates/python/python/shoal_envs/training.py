"""Training with shoal, and acting with what it trained, from Python.

``train`` runs shoal's trainer (what ``shoal train`` runs) in this process
and returns the run directory, which holds what a run of the binary holds:
``config.toml``, ``metrics.jsonl``, TensorBoard scalars, checkpoints (the
best one kept as ``best``) and ``summary.json``::

    import gymnasium as gym
    import shoal_envs

    run = shoal_envs.train("worm-ppo", episodes=50, out="runs/worm-ppo-py")
    policy = shoal_envs.load_policy(run, checkpoint="best")
    returns = policy.rollout(gym.make("shoal/Worm-v0"), episodes=3, seed=0)

``train(preset, env="Pendulum-v1")`` trains the preset's algorithm on a
Gymnasium env of one's own instead of the preset's env: continuous ``Box``
actions with finite bounds, a ``Box`` observation, or for presets that
train a goal task (the ``*-her`` and HAC presets) Gymnasium-Robotics' goal API (a ``Dict``
observation of ``observation``, ``achieved_goal`` and ``desired_goal``, and
``compute_reward(achieved_goal, desired_goal, info)`` vectorised over rows).
Each reset and step of such an env is a call into Python; see the Python
page of the docs for what that costs against shoal's own envs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np

from shoal_envs import _core

__all__ = ["TrainedPolicy", "load_policy", "packaged_presets", "train"]

_GOAL_KEYS = ("observation", "achieved_goal", "desired_goal")


def train(
    preset: str,
    *,
    env: str | None = None,
    env_kwargs: dict[str, Any] | None = None,
    out: str | os.PathLike[str] | None = None,
    resume: str | os.PathLike[str] | None = None,
    seed: int | None = None,
    episodes: int | None = None,
    steps: int | None = None,
    progress: bool = False,
    **overrides: Any,
) -> Path | None:
    """Trains ``preset`` (a preset name or a ``config.toml`` path) and returns the run directory.

    The names are the ``shoal`` binary's presets and this package's own
    for Gymnasium's tasks (``packaged_presets()``: ``mujoco-ppo``,
    ``mujoco-sac`` and ``mujoco-td3`` for the MuJoCo locomotion tasks,
    each on its default task unless ``env`` names another).

    ``env``: a Gymnasium id (``"Pendulum-v1"``, ``"my_package:MyEnv-v0"``)
    trained instead of the preset's env, made with ``gymnasium.make(env,
    **env_kwargs)``. ``steps`` is a budget in env steps (SB3's
    ``total_timesteps``), ``episodes`` one in episodes. Other keywords
    override settings by the names ``shoal config PRESET`` prints, with
    ``__`` for the dots: ``algo__gamma=0.9`` sets ``algo.gamma``
    (``**{"algo.gamma": 0.9}`` works too). ``resume`` continues a run
    directory (pass ``""`` as ``preset`` to take its own config). Ctrl-C
    stops the run cleanly at the end of the episode in progress, then raises
    ``KeyboardInterrupt``; ``train(..., resume=run)`` continues it.

    Several workers (``parallel__workers=4, parallel__strategy="averaging"``)
    run on ``parallel__backend="threads"`` in this process, or on
    ``"processes"``: workers started with this interpreter
    (``sys.executable``) and this ``sys.path``, each rebuilding the env
    from its id, as Stable-Baselines3's ``SubprocVecEnv`` does (an env
    registered by a script's own ``gymnasium.register`` call is not seen
    there: give its module, ``"my_module:MyEnv-v0"``). Under MPI
    (``mpirun -n 4 python train.py``, the package built with its ``mpi``
    feature, ``parallel__backend="mpi"``) every rank calls ``train``; rank
    0 returns the run directory and the others ``None``.
    """
    run = _core.train(
        _packaged_preset(preset),
        env=env,
        env_kwargs=env_kwargs,
        out=None if out is None else os.fspath(out),
        resume=None if resume is None else os.fspath(resume),
        seed=seed,
        episodes=episodes,
        steps=steps,
        progress=progress,
        **overrides,
    )
    return None if run is None else Path(run)


# Presets for Gymnasium's tasks (``mujoco-ppo``), shipped with this package:
# the ``shoal`` binary's presets train its own envs, which need no Python.
_PRESETS = Path(__file__).parent / "presets"


def packaged_presets() -> list[str]:
    """The presets this package adds to the ``shoal`` binary's, for Gymnasium's tasks."""
    return sorted(path.stem for path in _PRESETS.glob("*.toml"))


def _packaged_preset(preset: str | os.PathLike[str]) -> str:
    """A packaged preset's file in place of its name; anything else as given."""
    source = os.fspath(preset)
    if source in packaged_presets():
        return os.fspath(_PRESETS / f"{source}.toml")
    return source


def _flat(obs: Any) -> np.ndarray:
    """A Gymnasium observation as shoal's flat float32 layout (goal dicts concatenated in order)."""
    if isinstance(obs, dict):
        return np.concatenate(
            [np.asarray(obs[key], dtype=np.float32).reshape(-1) for key in _GOAL_KEYS]
        )
    return np.asarray(obs, dtype=np.float32)


class TrainedPolicy:
    """A policy loaded from a shoal run directory (see :func:`load_policy`)."""

    def __init__(self, core: _core.TrainedPolicyCore) -> None:
        self._core = core

    def act(self, obs: Any, deterministic: bool = True) -> np.ndarray:
        """The action for one observation (or rows of flat observations), float32.

        ``obs`` is what the env returns: a flat array, or a goal env's dict.
        ``deterministic=False`` draws the action as the learner explored
        (PPO's and REINFORCE's distributions; DDPG's actor is deterministic
        either way).
        """
        return self._core.act(_flat(obs), deterministic)

    def predict(
        self,
        observation: Any,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
    ) -> tuple[np.ndarray, None]:
        """Stable-Baselines3's ``predict``: ``(action, None)``; shoal's policies keep no state."""
        return self.act(observation, deterministic), None

    @property
    def config(self) -> str:
        """The run's resolved configuration, as its ``config.toml`` holds it."""
        return self._core.config

    @property
    def eval_seed(self) -> int:
        """The run's first evaluation seed: its evaluation episode ``i`` resets with ``eval_seed + i``."""
        return self._core.eval_seed

    @property
    def gym_id(self) -> str | None:
        """The Gymnasium id of the env the policy was trained on, if it has one."""
        return self._core.gym_id

    def make_env(self, **kwargs: Any) -> gymnasium.Env:
        """``gymnasium.make`` of the env the policy was trained on, with the run's settings."""
        if self.gym_id is None:
            raise ValueError(
                f"the run's env `{self._core.env_kind}` has no Gymnasium id; make it with shoal's Rust API"
            )
        settings = json.loads(self._core.env_settings)
        if self._core.env_kind.startswith("gymnasium"):
            settings = settings.get("kwargs", {})
        return gymnasium.make(self.gym_id, **{**settings, **kwargs})

    def rollout(
        self,
        env: gymnasium.Env | None = None,
        episodes: int = 1,
        seed: int | None = None,
        deterministic: bool = True,
    ) -> list[float]:
        """Plays ``episodes`` episodes in ``env`` (default :meth:`make_env`) and returns their returns.

        Episode ``i`` resets with ``seed + i`` (default: the run's
        evaluation seeds, so the returns are those of the run's own
        evaluation of this checkpoint).
        """
        if env is None:
            env = self.make_env()
        first = self.eval_seed if seed is None else seed
        returns = []
        for episode in range(episodes):
            obs, _ = env.reset(seed=first + episode)
            total, done = 0.0, False
            while not done:
                obs, reward, terminated, truncated, _ = env.step(self.act(obs, deterministic))
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
        return returns


def load_policy(
    run_dir: str | os.PathLike[str], checkpoint: str | int = "best", seed: int = 0
) -> TrainedPolicy:
    """The policy of a run's checkpoint: ``"best"`` (the best evaluation), ``"latest"`` or a number.

    ``seed`` seeds the draws of ``act(obs, deterministic=False)``. A HAC run
    has no stateless policy and is refused with a ``ValueError``.
    """
    return TrainedPolicy(_core.TrainedPolicyCore(os.fspath(run_dir), str(checkpoint), seed))
