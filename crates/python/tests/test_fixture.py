"""Observations and rewards equal the Rust envs' to the bit.

The fixture is written by crates/env/tests/python_fixture.rs, which also
fails when the fixture no longer matches the Rust envs, so it cannot rot.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from conftest import f32, flat

import shoal_envs


def same_bits(a, b) -> bool:
    a, b = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


def replay(env, case_episodes):
    """Replays the fixture's actions; asserts every number bit-equal."""
    for e, episode in enumerate(case_episodes):
        obs, _ = env.reset(seed=episode["seed"])
        assert same_bits(flat(obs), f32(episode["reset_obs"])), f"episode {e}: reset obs"
        for k, step in enumerate(episode["steps"]):
            obs, reward, terminated, truncated, info = env.step(f32(step["action"]))
            where = f"episode {e} step {k}"
            assert same_bits(flat(obs), f32(step["obs"])), f"{where}: obs"
            assert np.float32(reward).view(np.uint32) == step["reward"], f"{where}: reward"
            assert (terminated, truncated) == (step["terminated"], step["truncated"]), where
            for key, value_bits in step["info"].items():
                assert np.float64(info[key]).view(np.uint64) == value_bits, f"{where}: info[{key}]"


def test_fixture_covers_every_env(rollouts):
    assert {case["id"] for case in rollouts} == {
        "shoal/Worm-v0",
        "shoal/ArmPush-v0",
        "shoal/BallToNet-v0",
    }


def test_gymnasium_envs_match_the_rust_envs_bit_for_bit(rollouts):
    for case in rollouts:
        env = gym.make(case["id"], **case["config"])
        replay(env, case["episodes"])
        env.close()


def test_raw_classes_match_the_rust_envs_bit_for_bit(rollouts):
    raw = {
        "shoal/Worm-v0": (shoal_envs.Worm, shoal_envs.WormConfig),
        "shoal/ArmPush-v0": (shoal_envs.ArmPush, shoal_envs.ArmPushConfig),
        "shoal/BallToNet-v0": (shoal_envs.BallToNet, shoal_envs.BallToNetConfig),
    }
    for case in rollouts:
        env_class, config_class = raw[case["id"]]
        env = env_class(config_class(**case["config"]))
        for episode in case["episodes"]:
            assert same_bits(flat(env.reset(episode["seed"])), f32(episode["reset_obs"]))
            for step in episode["steps"]:
                obs, reward, *_ = env.step(f32(step["action"]))
                assert same_bits(flat(obs), f32(step["obs"]))
                assert np.float32(reward).view(np.uint32) == step["reward"]


def test_a_changed_action_is_detected(rollouts):
    # The comparison can fail: moving the first action one ulp changes the rollout.
    case = next(c for c in rollouts if c["id"] == "shoal/ArmPush-v0")
    episode = case["episodes"][0]
    env = gym.make(case["id"])
    env.reset(seed=episode["seed"])
    differs = False
    for k, step in enumerate(episode["steps"]):
        action = f32(step["action"])
        if k == 0:
            toward = np.float32(0 if action[0] != 0 else 1)
            action[0] = np.nextafter(action[0], toward, dtype=np.float32)
        obs, _, terminated, truncated, _ = env.step(action)
        differs |= not same_bits(flat(obs), f32(step["obs"]))
        if terminated or truncated:
            break
    assert differs
