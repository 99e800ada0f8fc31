"""Every algorithm trains a few hundred steps on a MuJoCo env through
``shoal_envs.train``, on one learner, two threads and two processes.

Each of these once ended the interpreter with a segmentation fault: a
MuJoCo model loaded on a training thread whose Python thread state an
earlier call had deleted (one learner), or two models loaded at once
(threads). They need ``gymnasium[mujoco]`` and ``gymnasium-robotics``
(CI installs both)."""

from __future__ import annotations

import json

import pytest

mujoco = pytest.importorskip("mujoco")
pytest.importorskip("gymnasium_robotics")

import shoal_envs  # noqa: E402

# Process workers rebuild the env from its id: the Fetch ids need their module.
FETCH_REACH = "gymnasium_robotics:FetchReach-v4"
# Short swimmer episodes, so a few hundred steps hold several.
SWIMMER = ("Swimmer-v5", {"max_episode_steps": 100})
SMALL_TD3 = {
    "algo__learning_starts": 1,
    "algo__hidden": [32, 32],
    "algo__batch_size": 32,
    "algo__train_every": "episode",
}

ALGORITHMS = {
    "ppo": ("worm-ppo", SWIMMER, "gather", {}),
    "reinforce": ("worm-reinforce", SWIMMER, "gather", {}),
    "td3": ("worm-td3", SWIMMER, "averaging", SMALL_TD3),
    "sac": ("worm-sac", SWIMMER, "averaging", SMALL_TD3),
    "ddpg": ("worm-td3", SWIMMER, "averaging", {**SMALL_TD3, "algo__kind": "ddpg"}),
    "ddpg-her": ("push-ddpg-her", (FETCH_REACH, {}), "averaging", {}),
    "hac": ("push-hac", (FETCH_REACH, {}), "averaging", {}),
}
LAYOUTS = [(1, "threads"), (2, "threads"), (2, "processes")]


@pytest.mark.parametrize(("workers", "backend"), LAYOUTS, ids=lambda v: str(v))
@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_each_algorithm_trains_on_a_mujoco_env(tmp_path, algorithm, workers, backend):
    preset, (env, env_kwargs), strategy, settings = ALGORITHMS[algorithm]
    run = shoal_envs.train(
        preset,
        env=env,
        env_kwargs=env_kwargs,
        out=tmp_path / "run",
        steps=400,
        parallel__workers=workers,
        parallel__strategy=strategy if workers > 1 else "none",
        parallel__backend=backend,
        **settings,
    )
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    trained = [r for r in rows if r.get("kind") in ("update", "iteration", "episode")]
    assert trained, "the run recorded training"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["workers"] == workers


def mujoco_extra() -> list[str]:
    """The requirements of the package's `mujoco` extra, as pyproject.toml pins them."""
    import pathlib
    import tomllib

    pyproject = pathlib.Path(__file__).parents[1] / "pyproject.toml"
    with pyproject.open("rb") as f:
        return tomllib.load(f)["project"]["optional-dependencies"]["mujoco"]


def test_the_mujoco_extra_pins_the_versions_installed_here():
    from importlib.metadata import version

    for requirement in mujoco_extra():
        name, _, pinned = requirement.partition("==")
        name = name.split("[")[0]
        assert pinned, f"{requirement}: the extra pins exact versions"
        assert version(name) == pinned, f"{name} {version(name)} installed, the extra pins {pinned}"


def benchmark_env_ids() -> list[str]:
    """The Gymnasium ids of the benchmark suite (docs/results.toml's `[[gymnasium]]` rows)."""
    import pathlib
    import tomllib

    results = pathlib.Path(__file__).parents[3] / "docs" / "results.toml"
    with results.open("rb") as f:
        return sorted({row["env"] for row in tomllib.load(f)["gymnasium"]})


@pytest.mark.parametrize("env_id", benchmark_env_ids())
def test_each_env_of_the_benchmark_suite_is_made_and_steps(env_id):
    import gymnasium as gym

    env = gym.make(env_id)
    try:
        obs, _ = env.reset(seed=0)
        obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        assert env.observation_space.contains(obs)
        assert isinstance(float(reward), float)
    finally:
        env.close()


def test_the_packaged_mujoco_ppo_preset_trains_hopper_in_step_sized_rollouts(tmp_path):
    import tomllib

    assert "mujoco-ppo" in shoal_envs.packaged_presets()
    small = {"algo__steps_per_rollout": 128, "algo__minibatches": 4}
    run = shoal_envs.train("mujoco-ppo", out=tmp_path / "hopper", steps=300, **small)
    config = tomllib.loads((run / "config.toml").read_text())
    assert (config["env"]["kind"], config["env"]["id"]) == ("gymnasium", "Hopper-v5")
    assert config["algo"]["kind"] == "ppo"
    # Another task through env=, the preset's settings kept.
    run = shoal_envs.train("mujoco-ppo", env="Walker2d-v5", out=tmp_path / "walker", steps=300, **small)
    config = tomllib.loads((run / "config.toml").read_text())
    assert config["env"]["id"] == "Walker2d-v5"
    shipped = tomllib.loads(
        (shoal_envs.training._PRESETS / "mujoco-ppo.toml").read_text()
    )
    assert shipped["algo"]["steps_per_rollout"] == 2048
    assert config["train"]["env_steps"] == 300


def test_the_packaged_mujoco_sac_preset_warms_up_in_env_steps(tmp_path):
    import tomllib

    assert "mujoco-sac" in shoal_envs.packaged_presets()
    run = shoal_envs.train(
        "mujoco-sac", env="Hopper-v5", out=tmp_path / "run", steps=300,
        algo__warmup_steps=200, algo__hidden=[32, 32], algo__batch_size=32,
    )
    config = tomllib.loads((run / "config.toml").read_text())
    assert (config["algo"]["kind"], config["algo"]["learning_starts"]) == ("sac", 0)
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    trained = [r for r in rows if "losses/critic" in r]
    assert trained, "it trained once the warm-up was over"
    assert all(r["env_steps"] > 200 for r in trained)


def test_the_packaged_mujoco_td3_preset_is_the_zoos_td3_with_tanhs_own_gradient(tmp_path):
    import tomllib

    assert "mujoco-td3" in shoal_envs.packaged_presets()
    run = shoal_envs.train(
        "mujoco-td3", out=tmp_path / "run", steps=300,
        algo__warmup_steps=200, algo__hidden=[32, 32], algo__batch_size=32,
    )
    config = tomllib.loads((run / "config.toml").read_text())
    assert config["env"]["id"] == "Hopper-v5"
    algo = config["algo"]
    assert (algo["kind"], algo["bound_gradient"], algo["policy_delay"]) == ("td3", "tanh", 2)
    assert (algo["gamma"], algo["noise_eps"], algo["learning_starts"]) == (0.99, 0.1, 0)
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    trained = [r for r in rows if "losses/critic" in r]
    assert trained, "it trained once the warm-up was over"
    assert all(r["env_steps"] > 200 for r in trained)
