"""Registration, keyword arguments, episode limits and rendering."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import shoal_envs
from conftest import ENV_IDS


def test_ids_are_registered_on_import_with_default_limits():
    assert gym.spec("shoal/Worm-v0").max_episode_steps == 1000
    assert gym.spec("shoal/ArmPush-v0").max_episode_steps == 50
    assert gym.spec("shoal/BallToNet-v0").max_episode_steps == 50
    assert gym.spec("shoal/UR5Reacher-v1").max_episode_steps == 600
    assert gym.spec("shoal/Pendulum-v0").max_episode_steps == 1000


def test_registered_ids_are_the_registrys_and_each_has_a_class():
    # The Gymnasium ids come from shoal's Rust registry, with the shoal id
    # the CLI and the configs use beside each.
    pairs = dict(shoal_envs.registered_envs())
    assert pairs == {
        "shoal/Worm-v0": "worm",
        "shoal/ArmPush-v0": "arm-push",
        "shoal/BallToNet-v0": "ball-to-net",
        "shoal/UR5Reacher-v1": "ur5-reacher",
        "shoal/Pendulum-v0": "pendulum",
    }
    for env_id in pairs:
        assert gym.spec(env_id) is not None


def test_worm_kwargs_reach_the_rust_config():
    env = gym.make("shoal/Worm-v0", links=5, drag_normal=40.0)
    assert env.observation_space.shape == (12,)
    assert env.action_space.shape == (4,)
    config = env.unwrapped.config
    assert config.links == 5 and config.drag_normal == 40.0
    assert config == shoal_envs.WormConfig(links=5, drag_normal=40.0, max_episode_steps=config.max_episode_steps)


def test_arm_kwargs_take_bare_and_nested_names():
    env = gym.make("shoal/ArmPush-v0", distance_threshold=0.04, arm={"substeps": 2}, box_mass=2.0)
    config = env.unwrapped.config
    assert (config.distance_threshold, config.substeps, config.box_mass) == (0.04, 2, 2.0)
    assert config.to_dict()["arm"]["substeps"] == 2


def test_make_max_episode_steps_truncates_there():
    # gymnasium.make keeps max_episode_steps for its TimeLimit; the Rust
    # env's own limit is lifted, so a limit above the default works too.
    for limit in (7, 1200):
        env = gym.make("shoal/Worm-v0", max_episode_steps=limit)
        env.reset(seed=0)
        for k in range(1, limit + 1):
            *_, truncated, _ = env.step(np.zeros(2, dtype=np.float32))
            assert truncated == (k == limit)


def test_direct_construction_truncates_in_rust():
    env = shoal_envs.ArmPushEnv(max_episode_steps=3, terminate_on_success=False)
    env.reset(seed=0)
    flags = [env.step(np.zeros(4, dtype=np.float32))[3] for _ in range(3)]
    assert flags == [False, False, True]


@pytest.mark.parametrize("env_id,shape", [
    ("shoal/Worm-v0", (432, 720, 3)),
    ("shoal/ArmPush-v0", (440, 1000, 3)),
    ("shoal/BallToNet-v0", (440, 1000, 3)),
    ("shoal/UR5Reacher-v1", (480, 1000, 3)),
    ("shoal/Pendulum-v0", (480, 560, 3)),
])
def test_rgb_array_frames_show_the_state(env_id, shape):
    env = gym.make(env_id, render_mode="rgb_array")
    env.reset(seed=0)
    first = env.render()
    assert first.shape == shape and first.dtype == np.uint8
    assert len(np.unique(first.reshape(-1, 3), axis=0)) > 3  # not a blank picture
    for _ in range(5):
        env.step(np.ones(env.action_space.shape, dtype=np.float32))
    assert not np.array_equal(env.render(), first)
    control_dt = env.unwrapped.config.control_dt
    assert env.metadata["render_fps"] == round(1.0 / control_dt)


def test_render_before_reset_is_an_error():
    env = shoal_envs.WormEnv(render_mode="rgb_array")
    with pytest.raises(RuntimeError, match="reset"):
        env.render()


def test_type_stubs_name_what_the_extension_has():
    import ast
    from pathlib import Path

    from shoal_envs import _core

    stub = ast.parse((Path(shoal_envs.__file__).parent / "_core.pyi").read_text())
    classes = {node.name: node for node in stub.body if isinstance(node, ast.ClassDef)}
    instances = {
        "WormConfig": _core.WormConfig(),
        "ArmPushConfig": _core.ArmPushConfig(),
        "BallToNetConfig": _core.BallToNetConfig(),
        "Worm": _core.Worm(),
        "ArmPush": _core.ArmPush(),
        "BallToNet": _core.BallToNet(),
        "UR5ReacherConfig": _core.UR5ReacherConfig(),
        "PendulumConfig": _core.PendulumConfig(),
        "UR5Reacher": _core.UR5Reacher(),
        "Pendulum": _core.Pendulum(),
    }
    assert set(instances) <= set(classes)

    def lineage(name):
        """The class and the stub's classes it derives from (``Base`` or ``Base[T]``)."""
        node = classes[name]
        bases = [b.value if isinstance(b, ast.Subscript) else b for b in node.bases]
        names = [b.id for b in bases if isinstance(b, ast.Name) and b.id in classes]
        return [node] + [n for base in names for n in lineage(base)]

    for name, instance in instances.items():
        nodes = lineage(name)
        members = {
            getattr(item, "name", None) or getattr(getattr(item, "target", None), "id", None)
            for node in nodes
            for item in node.body
        } - {None, "__init__", "__eq__"}
        missing = [m for m in members if not hasattr(instance, m)]
        assert missing == [], f"{name}: stub names {missing}, the extension has no such member"
    # And every config field is in the stub.
    for name in ("WormConfig", "ArmPushConfig", "BallToNetConfig", "UR5ReacherConfig", "PendulumConfig"):
        fields = set(instances[name].to_dict()) | set(instances[name].to_dict().get("arm", {}))
        nodes = lineage(name)
        stubbed = {item.target.id for node in nodes for item in node.body if isinstance(item, ast.AnnAssign)}
        assert fields <= stubbed, f"{name}: fields missing from the stub: {fields - stubbed}"


@pytest.mark.parametrize("env_id,obs_dim,goal_dim", [
    ("shoal/UR5Reacher-v1", 6, 3),
    ("shoal/Pendulum-v0", 3, 2),
])
def test_jointed_tasks_are_goal_dicts_whose_reward_is_the_goal_test(env_id, obs_dim, goal_dim):
    env = gym.make(env_id)
    obs, _ = env.reset(seed=1)
    assert obs["observation"].shape == (obs_dim,)
    assert obs["achieved_goal"].shape == obs["desired_goal"].shape == (goal_dim,)
    goal = obs["desired_goal"]
    assert env.unwrapped.compute_reward(goal, goal, None) == 0.0
    far = goal + np.float32(1.0)
    assert env.unwrapped.compute_reward(far, goal, None) == -1.0
