"""Seeding as Gymnasium does it: reset(seed=...) fixes the episode, reset() continues."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from conftest import ENV_IDS, flat


def rollout(env, seed, steps=15, action_seed=0):
    rng = np.random.default_rng(action_seed)
    obs, _ = env.reset(seed=seed)
    out = [flat(obs)]
    for _ in range(steps):
        obs, reward, terminated, truncated, _ = env.step(
            rng.uniform(-1, 1, env.action_space.shape).astype(np.float32)
        )
        out.append(np.append(flat(obs), reward))
        if terminated or truncated:
            break
    return out


def identical(a, b):
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_same_seed_same_episode_across_instances(env_id):
    a, b = gym.make(env_id), gym.make(env_id)
    assert identical(rollout(a, 7), rollout(b, 7))


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_different_seeds_differ(env_id):
    env = gym.make(env_id)
    assert not identical(rollout(env, 7), rollout(env, 8))


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_reset_without_seed_continues_the_stream(env_id):
    a, b = gym.make(env_id), gym.make(env_id)
    rollout(a, 21)
    rollout(b, 21)
    # The second episodes continue the same stream: equal to each other,
    # different from the first.
    second_a, second_b = rollout(a, None), rollout(b, None)
    assert identical(second_a, second_b)
    assert not identical(second_a, rollout(gym.make(env_id), 21))


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_unseeded_envs_start_differently(env_id):
    # The first reset() without a seed takes the Rust seed from np_random,
    # which Gymnasium seeds from the OS: two envs do not share an episode.
    a, b = gym.make(env_id), gym.make(env_id)
    assert not np.array_equal(flat(a.reset()[0]), flat(b.reset()[0]))


def test_reset_seeds_np_random_through_super():
    env = gym.make("shoal/Worm-v0")
    env.reset(seed=5)
    first = env.unwrapped.np_random.bit_generator.state
    env.reset(seed=5)
    assert env.unwrapped.np_random.bit_generator.state == first
