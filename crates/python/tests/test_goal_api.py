"""Gymnasium-Robotics' goal API: Dict observations, vectorised compute_reward, is_success."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from conftest import GOAL_IDS, f32


@pytest.mark.parametrize("env_id", GOAL_IDS)
def test_observation_is_a_goal_dict(env_id):
    env = gym.make(env_id)
    obs, _ = env.reset(seed=0)
    assert set(obs) == {"observation", "achieved_goal", "desired_goal"}
    assert obs["observation"].shape == (25,) and obs["achieved_goal"].shape == (3,)
    assert all(v.dtype == np.float32 for v in obs.values())
    assert obs in env.observation_space


@pytest.mark.parametrize("env_id", GOAL_IDS)
def test_vectorised_compute_reward_equals_every_step_reward(env_id):
    env = gym.make(env_id, terminate_on_success=False)
    rng = np.random.default_rng(3)
    achieved, desired, rewards, successes = [], [], [], []
    for seed in range(4):
        obs, _ = env.reset(seed=seed)
        done = False
        while not done:
            obs, reward, terminated, truncated, info = env.step(
                rng.uniform(-1, 1, 4).astype(np.float32)
            )
            achieved.append(obs["achieved_goal"])
            desired.append(obs["desired_goal"])
            rewards.append(reward)
            successes.append(info["is_success"])
            # Per step, compute_reward on the step's goals is the step's reward.
            assert env.unwrapped.compute_reward(obs["achieved_goal"], obs["desired_goal"], info) == reward
            done = terminated or truncated
    batch = env.unwrapped.compute_reward(np.array(achieved), np.array(desired), {})
    assert batch.shape == (len(rewards),) and batch.dtype == np.float32
    np.testing.assert_array_equal(batch, np.array(rewards, dtype=np.float32))
    # is_success is 1.0 exactly when the sparse reward is 0.
    np.testing.assert_array_equal(np.array(successes) == 1.0, np.array(rewards) == 0.0)


def test_compute_reward_against_hand_computed_distances():
    env = gym.make("shoal/ArmPush-v0").unwrapped
    origin = np.zeros(3, dtype=np.float32)
    # Threshold 0.05 m: 3-4-0 cm away is 5 cm → not within; 3-3.9 cm is.
    near = np.array([0.03, 0.039, 0.0], dtype=np.float32)  # 4.92 cm
    far = np.array([0.03, 0.041, 0.0], dtype=np.float32)  # 5.08 cm
    assert env.compute_reward(near, origin, None) == 0.0
    assert env.compute_reward(far, origin, None) == -1.0
    assert isinstance(env.compute_reward(near, origin, None), np.float32)
    # Any leading shape: (2, 2, 3) goals give (2, 2) rewards.
    a = np.stack([np.stack([near, far]), np.stack([far, near])])
    np.testing.assert_array_equal(env.compute_reward(a, np.zeros_like(a), None), [[0, -1], [-1, 0]])
    # The threshold is the env's setting.
    wide = gym.make("shoal/ArmPush-v0", distance_threshold=0.06).unwrapped
    assert wide.compute_reward(far, origin, None) == 0.0


def test_compute_reward_rejects_mismatched_goals():
    env = gym.make("shoal/ArmPush-v0").unwrapped
    with pytest.raises(ValueError, match="same shape"):
        env.compute_reward(np.zeros((4, 3)), np.zeros((5, 3)), None)
    with pytest.raises(ValueError, match="ending in 3"):
        env.compute_reward(np.zeros(2), np.zeros(2), None)


def test_success_terminates_the_episode_with_is_success(rollouts):
    # Goals never start solved, so replay the fixture's scripted push, which
    # reaches its goal: the last step is terminated, reward 0, is_success 1.
    episode = next(c for c in rollouts if c["id"] == "shoal/ArmPush-v0")["episodes"][0]
    env = gym.make("shoal/ArmPush-v0")
    env.reset(seed=episode["seed"])
    for step in episode["steps"]:
        obs, reward, terminated, truncated, info = env.step(f32(step["action"]))
    assert terminated and not truncated
    assert info["is_success"] == 1.0 and reward == 0.0
