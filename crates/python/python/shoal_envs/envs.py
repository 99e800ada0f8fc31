"""Gymnasium environments around shoal's Rust envs (``shoal/Worm-v0``, ``shoal/ArmPush-v0``, ``shoal/BallToNet-v0``).

Each class is a thin ``gymnasium.Env`` subclass: spaces, seeding through
``super().reset(seed=seed)``, and the Gymnasium-Robotics goal API. Every
reset and step is one call into Rust, so observations and rewards are the
Rust env's to the bit.

Seeding: ``reset(seed=s)`` re-seeds the Rust env with ``s`` (as shoal's
``Env::reset(Some(s))``); ``reset()`` continues its random stream (shoal's
``reset(None)``); the very first ``reset()`` without a seed draws the Rust
seed from ``self.np_random``, which Gymnasium seeds from the OS.
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium
import numpy as np
from gymnasium import spaces

from shoal_envs import _core

__all__ = ["WormEnv", "ArmPushEnv", "BallToNetEnv"]

# The longest episode a shoal env accepts (shoal_rl_env::MAX_EPISODE_STEPS):
# with Gymnasium's TimeLimit in charge, the Rust limit is lifted to it.
_NO_LIMIT = 1_000_000


class _ShoalEnv(gymnasium.Env):
    """What the environments share: seeding, stepping, rendering, closing."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["rgb_array"], "render_fps": 25}

    _config_class: ClassVar[type]
    _env_class: ClassVar[type]

    def __init__(self, render_mode: str | None = None, **config: Any) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}"
            )
        if config.get("max_episode_steps", 0) is None:
            config["max_episode_steps"] = _NO_LIMIT
        self.config = self._config_class(**config)
        self._env = self._env_class(self.config, render=render_mode == "rgb_array")
        self.render_mode = render_mode
        self.metadata = {**self.metadata, "render_fps": round(1.0 / self.config.control_dt)}
        self.action_space = spaces.Box(
            self._env.action_low, self._env.action_high, dtype=np.float32
        )
        self._seeded = False

    def _rust_seed(self, seed: int | None) -> int | None:
        if seed is not None:
            return seed
        if not self._seeded:
            # Gymnasium has just seeded np_random from the OS; take the Rust
            # env's seed from it so unseeded runs differ.
            return int(self.np_random.integers(0, 2**64, dtype=np.uint64))
        return None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        obs = self._env.reset(self._rust_seed(seed))
        self._seeded = True
        return obs, {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        return self._env.step(np.asarray(action, dtype=np.float32))

    def render(self) -> np.ndarray | None:
        if self.render_mode is None:
            gymnasium.logger.warn(
                "render() was called without a render_mode; make the env with render_mode='rgb_array'"
            )
            return None
        return self._env.render()

    def close(self) -> None:
        self._env.close()


class WormEnv(_ShoalEnv):
    """``shoal/Worm-v0``: shoal's planar swimmer (Rust ``worm-v1``), Swimmer-like.

    Keyword arguments are the fields of :class:`shoal_envs.WormConfig`
    (``links``, ``drag_normal``, ``max_episode_steps``, …). The observation
    is ``Box(-inf, inf, (2·links + 2,), float32)``: heading, joint angles,
    head velocity, head and joint angular velocities; the action
    ``Box(-1, 1, (links − 1,), float32)`` sets the joint servo targets;
    the reward is forward speed minus ``1e-4·|a|²``. ``info`` holds
    ``reward_forward``, ``reward_ctrl``, ``x_position``, ``x_velocity``.
    """

    _config_class = _core.WormConfig
    _env_class = _core.Worm

    def __init__(self, render_mode: str | None = None, **config: Any) -> None:
        super().__init__(render_mode, **config)
        n = self._env.observation_dim
        self.observation_space = spaces.Box(-np.inf, np.inf, (n,), dtype=np.float32)


class _GoalEnv(_ShoalEnv):
    """A goal task with Gymnasium-Robotics' conventions: Dict observations,
    a vectorised ``compute_reward`` and ``is_success`` in ``info``."""

    def __init__(self, render_mode: str | None = None, **config: Any) -> None:
        super().__init__(render_mode, **config)
        n, g = self._env.observation_dim, self._env.goal_dim
        box = lambda dim: spaces.Box(-np.inf, np.inf, (dim,), dtype=np.float32)  # noqa: E731
        self.observation_space = spaces.Dict(
            {
                "observation": box(n - 2 * g),
                "achieved_goal": box(g),
                "desired_goal": box(g),
            }
        )

    def compute_reward(
        self, achieved_goal: Any, desired_goal: Any, info: Any = None
    ) -> np.ndarray | np.float32:
        """The sparse reward (0 when the goal is reached, −1 otherwise) for
        goals of shape ``(..., goal_dim)``; ``info`` is unused (the reward is a pure
        function of the goals). One pair gives a ``np.float32``, a batch an
        array of shape ``achieved_goal.shape[:-1]``."""
        achieved = np.asarray(achieved_goal, dtype=np.float32)
        desired = np.asarray(desired_goal, dtype=np.float32)
        rewards = self._env.compute_rewards(achieved, desired)
        if achieved.ndim == 1:
            return rewards[0]
        return rewards.reshape(achieved.shape[:-1])


class ArmPushEnv(_GoalEnv):
    """``shoal/ArmPush-v0``: push a box to a goal (Rust ``arm-push-v1``), FetchPush-like.

    Keyword arguments are the fields of :class:`shoal_envs.ArmPushConfig`,
    the shared arm settings by their bare names (``distance_threshold``,
    ``terminate_on_success``, …) or as ``arm={...}``. Observations are
    Dicts of ``observation`` (25), ``achieved_goal`` (box centre, 3) and
    ``desired_goal`` (3), float32; the action ``Box(-1, 1, (4,), float32)``
    moves the gripper; the reward is 0 within 5 cm of the goal, else −1.
    The episode terminates on success (``terminate_on_success=True``).
    """

    _config_class = _core.ArmPushConfig
    _env_class = _core.ArmPush


class BallToNetEnv(_GoalEnv):
    """``shoal/BallToNet-v0``: strike a ball into a net (Rust ``ball-to-net-v1``).

    Keyword arguments are the fields of :class:`shoal_envs.BallToNetConfig`
    (and the shared arm settings, as for :class:`ArmPushEnv`); spaces and
    rewards are those of :class:`ArmPushEnv`, the achieved goal is the
    ball's centre.
    """

    _config_class = _core.BallToNetConfig
    _env_class = _core.BallToNet


class UR5ReacherEnv(_GoalEnv):
    """``shoal/UR5Reacher-v1``: turn a UR5's three main joints to goal angles
    (Rust ``ur5-reacher``), the HAC paper's reacher on the paper's model.

    Keyword arguments are the fields of :class:`shoal_envs.UR5ReacherConfig`
    (``arm_model``, ``servo_gain``, ``joint_damping``, ``angle_threshold``, …).
    Observations are Dicts of ``observation`` (3 joint angles and 3 joint
    velocities), ``achieved_goal`` (the 3 angles) and ``desired_goal`` (3),
    float32; the action ``Box(-1, 1, (3,), float32)`` sets the joints'
    servo speeds (``arm_model="torque"``: the torques of shoal's first arm, v0);
    the reward is 0 when every angle is within 10° of the goal's, else −1.
    The episode terminates on success.
    """

    _config_class = _core.UR5ReacherConfig
    _env_class = _core.UR5Reacher


class PendulumEnv(_GoalEnv):
    """``shoal/Pendulum-v0``: swing a torque-limited pendulum up to a goal
    angle and velocity (Rust ``pendulum``), the HAC paper's inverted pendulum.

    Keyword arguments are the fields of :class:`shoal_envs.PendulumConfig`.
    Observations are Dicts of ``observation`` (cos θ, sin θ, θ̇),
    ``achieved_goal`` (θ, θ̇) and ``desired_goal`` (2), float32, with θ = 0
    upright; the action ``Box(-1, 1, (1,), float32)`` sets the torque; the
    reward is 0 within 9.5° and 0.6 rad/s of the goal, else −1. The episode
    terminates on success.
    """

    _config_class = _core.PendulumConfig
    _env_class = _core.Pendulum


def _registered(cls: type[_ShoalEnv]):
    """The entry point ``gymnasium.make`` calls: episodes are cut by Gymnasium's
    ``TimeLimit`` (the registered default, or ``make(..., max_episode_steps=N)``),
    so the Rust env's own limit is lifted."""

    def make(**kwargs: Any) -> _ShoalEnv:
        kwargs["max_episode_steps"] = None
        return cls(**kwargs)

    make.__name__ = make.__qualname__ = f"make_{cls.__name__}"
    # gymnasium.make reads render modes off the entry point (for
    # render_mode="human" or "rgb_array_list" it adds its own wrappers).
    make.metadata = cls.metadata  # type: ignore[attr-defined]
    return make


make_worm = _registered(WormEnv)
make_arm_push = _registered(ArmPushEnv)
make_ball_to_net = _registered(BallToNetEnv)
make_ur5_reacher = _registered(UR5ReacherEnv)
make_pendulum = _registered(PendulumEnv)
