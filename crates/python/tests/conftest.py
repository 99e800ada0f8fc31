"""Shared helpers of the shoal-envs test suite."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import shoal_envs  # noqa: F401  (registers the ids)

ENV_IDS = [
    "shoal/Worm-v0",
    "shoal/ArmPush-v0",
    "shoal/BallToNet-v0",
    "shoal/UR5Reacher-v1",
    "shoal/Pendulum-v0",
]
GOAL_IDS = ["shoal/ArmPush-v0", "shoal/BallToNet-v0"]
FIXTURE = Path(__file__).parent / "fixtures" / "rust_rollouts.json"


def f32(bits: list[int]) -> np.ndarray:
    """float32 values from their bit patterns."""
    return np.array(bits, dtype=np.uint32).view(np.float32)


def flat(obs) -> np.ndarray:
    """A goal env's Dict observation as shoal's flat layout; a Box one as is."""
    if isinstance(obs, dict):
        return np.concatenate([obs["observation"], obs["achieved_goal"], obs["desired_goal"]])
    return obs


@pytest.fixture(scope="session")
def rollouts() -> list[dict]:
    return json.loads(FIXTURE.read_text())["cases"]
