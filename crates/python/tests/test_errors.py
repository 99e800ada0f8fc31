"""Bad input raises a Python exception with shoal's message; the interpreter never crashes."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import shoal_envs
from conftest import ENV_IDS


@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_action_is_a_value_error(env_id, bad):
    env = gym.make(env_id)
    env.reset(seed=0)
    action = np.zeros(env.action_space.shape, dtype=np.float32)
    action[-1] = bad
    with pytest.raises(ValueError, match=f"action component {action.size - 1} is not finite"):
        env.step(action)
    # The env is still usable afterwards: the bad action changed nothing.
    env.step(np.zeros(env.action_space.shape, dtype=np.float32))


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_wrong_length_action_is_a_value_error(env_id):
    env = gym.make(env_id)
    env.reset(seed=0)
    n = env.action_space.shape[0]
    with pytest.raises(ValueError, match=f"action has {n + 1} components, the action space has {n}"):
        env.step(np.zeros(n + 1, dtype=np.float32))
    with pytest.raises(ValueError, match=r"1-D array, got shape \[1, %d\]" % n):
        env.step(np.zeros((1, n), dtype=np.float32))


def test_out_of_range_action_without_clipping_is_a_value_error():
    env = gym.make("shoal/ArmPush-v0", clip_actions=False)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"action component 2 = 1.5 is outside \[-1, 1\]"):
        env.step(np.array([0, 0, 1.5, 0], dtype=np.float32))


def test_step_before_reset_and_after_the_end_is_a_runtime_error():
    env = shoal_envs.WormEnv(max_episode_steps=2)
    with pytest.raises(RuntimeError, match="call reset first"):
        env.step(np.zeros(2, dtype=np.float32))
    env.reset(seed=0)
    env.step(np.zeros(2, dtype=np.float32))
    *_, truncated, _ = env.step(np.zeros(2, dtype=np.float32))
    assert truncated
    with pytest.raises(RuntimeError, match="call reset first"):
        env.step(np.zeros(2, dtype=np.float32))


def test_unknown_keyword_is_a_type_error_naming_it():
    with pytest.raises(TypeError, match="unknown keyword argument `lnks`"):
        gym.make("shoal/Worm-v0", lnks=5)
    with pytest.raises(TypeError, match="unknown keyword argument `box_size`"):
        gym.make("shoal/ArmPush-v0", box_size=0.1)
    with pytest.raises(TypeError, match="unknown keyword argument `nope`"):
        gym.make("shoal/ArmPush-v0", arm={"nope": 1})


def test_bad_values_are_value_errors_with_shoals_message():
    with pytest.raises(ValueError, match="worm: links must be between 2 and 64, got 1"):
        gym.make("shoal/Worm-v0", links=1)
    with pytest.raises(ValueError, match="links: invalid type: string"):
        gym.make("shoal/Worm-v0", links="three")
    with pytest.raises(ValueError, match="density: must be finite"):
        gym.make("shoal/Worm-v0", density=float("nan"))
    with pytest.raises(ValueError, match="substeps must be between 1 and 1000, got 0"):
        gym.make("shoal/BallToNet-v0", substeps=0)
    with pytest.raises(ValueError, match="render_mode"):
        shoal_envs.WormEnv(render_mode="ansi")


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_close_is_idempotent_and_final(env_id):
    env = gym.make(env_id)
    env.reset(seed=0)
    env.close()
    env.close()
    with pytest.raises(RuntimeError, match="closed"):
        env.unwrapped.reset(seed=0)


def test_render_without_render_mode_warns_and_returns_none():
    env = gym.make("shoal/Worm-v0")
    env.reset(seed=0)
    with pytest.warns(UserWarning, match="render_mode"):
        assert env.unwrapped.render() is None
