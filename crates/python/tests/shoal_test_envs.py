"""Small Gymnasium envs of the test suite, in a module of their own so
that worker processes of the processes backend can import them by id
(``"shoal_test_envs:shoal-test/PointLine-v0"``): importing it registers them."""

from __future__ import annotations

import threading

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class PointLine(gym.Env):
    """A point on [-1, 1] moved onto a target: reward −distance, 20 steps (Python's twin of shoal's point-reach)."""

    def __init__(self) -> None:
        self.observation_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, (1,), np.float32)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.x, self.target, self.t = 0.0, float(self.np_random.uniform(-1, 1)), 0
        return np.array([self.x, self.target], np.float32), {}

    def step(self, action):
        self.x = float(np.clip(self.x + 0.2 * float(action[0]), -1.0, 1.0))
        self.t += 1
        obs = np.array([self.x, self.target], np.float32)
        return obs, -abs(self.x - self.target), False, self.t >= 20, {}


class PointGoal(gym.Env):
    """A point in the unit square moved onto a goal: Gymnasium-Robotics' goal API, sparse −1/0 reward."""

    def __init__(self) -> None:
        box = lambda n: spaces.Box(-1.0, 1.0, (n,), np.float32)  # noqa: E731
        self.observation_space = spaces.Dict(
            {"observation": box(2), "achieved_goal": box(2), "desired_goal": box(2)}
        )
        self.action_space = box(2)
        self.calls = 0

    def _obs(self):
        pos = self.pos.astype(np.float32)
        return {"observation": pos, "achieved_goal": pos.copy(), "desired_goal": self.goal.copy()}

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.pos = self.np_random.uniform(-1, 1, 2).astype(np.float32)
        self.goal = self.np_random.uniform(-1, 1, 2).astype(np.float32)
        return self._obs(), {}

    def compute_reward(self, achieved_goal, desired_goal, info):
        distance = np.linalg.norm(np.asarray(achieved_goal) - np.asarray(desired_goal), axis=-1)
        return -(distance >= 0.1).astype(np.float32)

    def step(self, action):
        self.pos = np.clip(self.pos + 0.1 * np.asarray(action, np.float32), -1, 1)
        obs = self._obs()
        reward = float(self.compute_reward(obs["achieved_goal"], obs["desired_goal"], {}))
        success = reward == 0.0
        return obs, reward, success, False, {"is_success": success}


class ReleasedInTurn(PointLine):
    """PointLine that records whether it was freed where it was closed.

    shoal lets one env call run at a time in a process, even where the env
    releases the GIL (MuJoCo's model loader and stepping do). Freeing an
    env is such a call: MuJoCo frees its model there. ``freed_where_closed``
    gets one entry per env freed: whether ``__del__`` ran on the thread of
    the ``close`` just before it, i.e. inside the same turn."""

    made = 0
    freed_where_closed: list[bool] = []

    def __init__(self) -> None:
        super().__init__()
        ReleasedInTurn.made += 1

    def close(self):
        self.closed_on = threading.get_ident()
        super().close()

    def __del__(self):
        ReleasedInTurn.freed_where_closed.append(
            getattr(self, "closed_on", None) == threading.get_ident()
        )


class RaisesInStep(ReleasedInTurn):
    """ReleasedInTurn whose third step raises: the exception's traceback
    holds the env (``self`` in ``step``'s frame)."""

    def step(self, action):
        if self.t == 2:
            raise ArithmeticError("the env's own failure")
        return super().step(action)


gym.register("shoal-test/PointLine-v0", entry_point=PointLine, max_episode_steps=20)
gym.register("shoal-test/PointGoal-v0", entry_point=PointGoal, max_episode_steps=50)
gym.register("shoal-test/ReleasedInTurn-v0", entry_point=ReleasedInTurn, max_episode_steps=20)
gym.register("shoal-test/RaisesInStep-v0", entry_point=RaisesInStep, max_episode_steps=20)
