"""Gymnasium's own checker passes on every env, with no warning about the API."""

from __future__ import annotations

import re
import warnings

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

from conftest import ENV_IDS

# The one warning check_env gives: a recommendation about unbounded Box
# observation spaces, which MuJoCo's Swimmer-v5 and FetchPush-v4 get too
# (their observations are unbounded as well). Anything else fails the test.
UNBOUNDED = re.compile(r"A Box observation space (minimum|maximum) value is -?infinity")


def checked(env: gym.Env) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env)
    return [str(w.message) for w in caught if not UNBOUNDED.search(str(w.message))]


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_check_env_passes_without_api_warnings(env_id):
    env = gym.make(env_id)
    assert checked(env.unwrapped) == []
    env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_check_env_passes_when_rendering(env_id):
    env = gym.make(env_id, render_mode="rgb_array")
    assert checked(env.unwrapped) == []
    env.close()


def test_the_filter_only_hides_the_unbounded_space_hint():
    # A broken env must still be reported: an action space that is not
    # normalised gives a warning the filter keeps.
    env = gym.make("shoal/Worm-v0").unwrapped
    env.action_space = gym.spaces.Box(-2.0, 3.0, env.action_space.shape, dtype=env.action_space.dtype)
    kept = checked(env)
    assert any("symmetric and normalized" in m for m in kept), kept
