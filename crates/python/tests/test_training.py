"""Training from Python: shoal's presets, a user's own Gymnasium envs, and the policies they leave."""

from __future__ import annotations

import json
import signal
import threading
import _thread

import gymnasium as gym
import numpy as np
import pytest

import shoal_envs
from shoal_test_envs import PointLine


class Explodes(PointLine):
    def step(self, action):
        raise ArithmeticError("the user's env broke at step time")


gym.register("shoal-test/Explodes-v0", entry_point=Explodes)
gym.register("shoal-test/Discrete-v0", entry_point="gymnasium.envs.classic_control:CartPoleEnv")


def summary(run):
    return json.loads((run / "summary.json").read_text())


def test_a_worm_policy_trained_from_python_rolls_out_in_gymnasium_as_the_run_evaluated_it(tmp_path):
    run = shoal_envs.train(
        "worm-ppo",
        out=tmp_path / "worm",
        episodes=4,
        train__eval_every=2,
        train__eval_episodes=1,
        train__final_eval_episodes=2,
        **{"algo.episodes_per_rollout": 2},
    )
    assert (run / "checkpoints").is_dir()
    latest = shoal_envs.load_policy(run, checkpoint="latest")
    assert latest.gym_id == "shoal/Worm-v0"
    # The run's final evaluation played the latest policy on evaluation
    # seeds; the same seeds in Gymnasium's env give the same returns.
    returns = latest.rollout(gym.make("shoal/Worm-v0"), episodes=2)
    assert np.mean(returns) == pytest.approx(summary(run)["eval_return_mean"], rel=1e-6)

    best = shoal_envs.load_policy(run, checkpoint="best", seed=3)
    env = best.make_env()
    obs, _ = env.reset(seed=0)
    deterministic = best.act(obs)
    assert deterministic.dtype == np.float32 and deterministic.shape == env.action_space.shape
    assert np.array_equal(best.act(obs), deterministic)
    drawn = [best.act(obs, deterministic=False) for _ in range(3)]
    assert all(env.action_space.contains(a) for a in drawn)
    assert not np.array_equal(drawn[0], drawn[1]), "sampled actions vary"
    again = shoal_envs.load_policy(run, checkpoint="best", seed=3)
    assert np.array_equal(again.act(obs, deterministic=False), drawn[0]), "seeded draws repeat"
    rows = np.stack([obs, obs])
    assert best.act(rows).shape == (2, deterministic.shape[0])
    assert np.array_equal(best.predict(obs)[0], deterministic)


def test_ppo_learns_a_users_own_gymnasium_env(tmp_path):
    run = shoal_envs.train(
        "toy-ppo", env="shoal-test/PointLine-v0", out=tmp_path / "line", seed=1
    )
    saved = (run / "config.toml").read_text()
    assert 'kind = "gymnasium"' in saved and 'id = "shoal-test/PointLine-v0"' in saved
    assert 'preset = "ppo-shoal-test-PointLine-v0"' in saved, "named for what it trains"
    policy = shoal_envs.load_policy(run, checkpoint="latest")
    learned = np.mean(policy.rollout(episodes=20, seed=100))
    env = gym.make("shoal-test/PointLine-v0")
    still = []
    for episode in range(20):
        env.reset(seed=100 + episode)
        total, done = 0.0, False
        while not done:
            _, reward, terminated, truncated, _ = env.step(np.zeros(1, np.float32))
            total, done = total + reward, terminated or truncated
        still.append(total)
    # Standing still costs the mean distance to the target every step.
    assert learned > 0.5 * np.mean(still), (learned, np.mean(still))


def test_ddpg_with_her_learns_a_users_own_goal_env(tmp_path):
    run = shoal_envs.train(
        "toy-ddpg-her", env="shoal-test/PointGoal-v0", out=tmp_path / "goal", seed=2
    )
    assert 'kind = "gymnasium-goal"' in (run / "config.toml").read_text()
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    evals = [r for r in records if r.get("kind") == "eval"]
    assert evals, "the run evaluated"
    # A random walk of 50 steps of 0.1 rarely ends within 0.1 of a goal in
    # the square; the learned actor reaches most goals.
    assert summary(run)["eval_success_rate"] >= 0.5, summary(run)


def test_a_sac_policy_loads_acts_with_its_mean_and_samples_its_gaussian(tmp_path):
    run = shoal_envs.train(
        "toy-ddpg-her",
        env="shoal-test/PointGoal-v0",
        out=tmp_path / "sac",
        seed=1,
        episodes=6,
        train__eval_every=6,
        train__eval_episodes=2,
        train__final_eval_episodes=2,
        # The keys toy-ddpg-her leaves out take SAC's defaults.
        algo__kind="sac",
    )
    saved = (run / "config.toml").read_text()
    # SAC's actor is not a setting of `sac` (it is always Gaussian), so
    # the saved table leaves it out.
    assert 'kind = "sac"' in saved and "n_critics = 2" in saved and "actor = " not in saved
    policy = shoal_envs.load_policy(run, checkpoint="latest", seed=4)
    # The run's final evaluation acted with tanh of the Gaussian's mean on
    # its evaluation seeds; the loaded policy repeats those returns.
    returns = policy.rollout(episodes=2)
    assert np.mean(returns) == pytest.approx(summary(run)["eval_return_mean"], rel=1e-6)
    env = policy.make_env()
    obs, _ = env.reset(seed=0)
    mean = policy.act(obs)
    assert np.array_equal(policy.act(obs), mean)
    drawn = [policy.act(obs, deterministic=False) for _ in range(3)]
    assert all(env.action_space.contains(a) for a in drawn)
    assert not np.array_equal(drawn[0], drawn[1]) and not np.array_equal(drawn[0], mean)
    again = shoal_envs.load_policy(run, checkpoint="latest", seed=4)
    assert np.array_equal(again.act(obs, deterministic=False), drawn[0]), "seeded draws repeat"


def test_a_users_env_that_raises_stops_the_run_with_its_exception_as_the_cause(tmp_path):
    with pytest.raises(RuntimeError, match="the environment failed: gymnasium env `shoal-test/Explodes-v0`: step") as raised:
        shoal_envs.train("toy-ppo", env="shoal-test/Explodes-v0", out=tmp_path / "x")
    assert isinstance(raised.value.__cause__, ArithmeticError)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ("shoal-test/Discrete-v0", "shoal trains continuous Box spaces, not Discrete(2)"),
        ("shoal-test/NoSuchEnv-v0", "NoSuchEnv"),
    ],
)
def test_envs_shoal_cannot_train_are_refused_in_one_line(tmp_path, env, message):
    with pytest.raises(RuntimeError, match="the environment failed") as raised:
        shoal_envs.train("toy-ppo", env=env, out=tmp_path / "refused")
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)
    assert not (tmp_path / "refused").exists(), "nothing is written for a refused config"


def test_unknown_settings_and_presets_are_value_errors(tmp_path):
    with pytest.raises(ValueError, match="algo.gamm"):
        shoal_envs.train("toy-ppo", out=tmp_path / "a", algo__gamm=0.9)
    with pytest.raises(ValueError, match="unknown preset"):
        shoal_envs.train("toy-ppq", out=tmp_path / "b")
    with pytest.raises(ValueError, match="no stateless policy"):
        run = shoal_envs.train("toy-hac", out=tmp_path / "hac", episodes=2)
        shoal_envs.load_policy(run)


def test_ctrl_c_stops_training_cleanly_and_the_run_resumes(tmp_path):
    # Ctrl-C as a terminal delivers it. A process started in the background
    # of a script inherits SIGINT ignored, and `interrupt_main` then does
    # nothing at all: the run would train all its episodes.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        out = tmp_path / "stopped"
        timer = threading.Timer(1.0, _thread.interrupt_main)
        timer.start()
        with pytest.raises(KeyboardInterrupt, match="checkpoint written; resume") as raised:
            shoal_envs.train("toy-ppo", env="shoal-test/PointLine-v0", out=out, episodes=200_000)
        timer.cancel()
    finally:
        signal.signal(signal.SIGINT, previous)
    stopped_at = int(str(raised.value).split()[2])
    run = shoal_envs.train("", resume=out, episodes=stopped_at + 8)
    assert run == out
    assert summary(run)["episodes"] == stopped_at + 8


def test_a_multi_worker_averaging_run_resumes_from_python_with_its_own_batch(tmp_path):
    # The saved config holds the batch the four workers shared (16 / 4);
    # resuming must not split it again, as `shoal train --resume` does not.
    run = shoal_envs.train(
        "toy-ddpg-her",
        out=tmp_path / "four",
        episodes=40,
        parallel__workers=4,
        parallel__strategy="averaging",
        parallel__backend="threads",
    )
    saved = (run / "config.toml").read_text()
    resumed = shoal_envs.train("", resume=run, episodes=80)
    assert resumed == run
    assert (run / "config.toml").read_text().replace("40", "80") == saved.replace("40", "80")
    assert summary(run)["episodes"] >= 80
