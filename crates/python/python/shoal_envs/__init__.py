"""shoal's environments as Gymnasium environments, simulated in Rust.

Importing this package registers ``shoal/Worm-v0``, ``shoal/ArmPush-v0``,
``shoal/BallToNet-v0``, ``shoal/UR5Reacher-v1`` and ``shoal/Pendulum-v0``
with Gymnasium::

    import gymnasium as gym
    import shoal_envs

    env = gym.make("shoal/ArmPush-v0", render_mode="rgb_array")
    obs, info = env.reset(seed=0)

``gym.make("shoal_envs:shoal/Worm-v0")`` imports the package itself. The
raw Rust envs (``Worm``, ``ArmPush``, ``BallToNet``, ``UR5Reacher``,
``Pendulum``) and their configs are re-exported here too.

``train`` runs shoal's trainer in this process, on a preset's env or on a
Gymnasium env of one's own, and ``load_policy`` loads what it trained::

    run = shoal_envs.train("worm-ppo", episodes=50)
    policy = shoal_envs.load_policy(run, checkpoint="best")
    action = policy.act(obs)
"""

from __future__ import annotations

import gymnasium

from shoal_envs._core import (
    ArmPush,
    ArmPushConfig,
    BallToNet,
    BallToNetConfig,
    Pendulum,
    PendulumConfig,
    UR5Reacher,
    UR5ReacherConfig,
    Worm,
    WormConfig,
    registered_envs,
)
from shoal_envs.envs import ArmPushEnv, BallToNetEnv, PendulumEnv, UR5ReacherEnv, WormEnv
from shoal_envs.training import TrainedPolicy, load_policy, packaged_presets, train

__all__ = [
    "ArmPush",
    "ArmPushConfig",
    "ArmPushEnv",
    "BallToNet",
    "BallToNetConfig",
    "BallToNetEnv",
    "Pendulum",
    "PendulumConfig",
    "PendulumEnv",
    "TrainedPolicy",
    "UR5Reacher",
    "UR5ReacherConfig",
    "UR5ReacherEnv",
    "Worm",
    "WormConfig",
    "WormEnv",
    "load_policy",
    "packaged_presets",
    "register_envs",
    "registered_envs",
    "train",
]

__version__ = "0.1.0"

# shoal id → (entry point, config class whose default episode length
# Gymnasium's TimeLimit uses). The Gymnasium ids come from shoal's registry.
_CLASSES = {
    "worm": ("shoal_envs.envs:make_worm", WormConfig),
    "arm-push": ("shoal_envs.envs:make_arm_push", ArmPushConfig),
    "ball-to-net": ("shoal_envs.envs:make_ball_to_net", BallToNetConfig),
    "ur5-reacher": ("shoal_envs.envs:make_ur5_reacher", UR5ReacherConfig),
    "pendulum": ("shoal_envs.envs:make_pendulum", PendulumConfig),
}


def register_envs() -> None:
    """Registers the shoal ids with Gymnasium (done on import; repeat calls do nothing)."""
    for env_id, shoal_id in registered_envs():
        entry_point, config = _CLASSES[shoal_id]
        if env_id not in gymnasium.registry:
            gymnasium.register(
                id=env_id,
                entry_point=entry_point,
                max_episode_steps=config().max_episode_steps,
            )


register_envs()
