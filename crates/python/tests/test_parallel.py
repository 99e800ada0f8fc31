"""Parallel strategies on a Gymnasium env: threads in this interpreter,
processes that rebuild the env from its id in their own."""

from __future__ import annotations

import json
import sys
import traceback

import pytest

import shoal_envs
import shoal_test_envs  # noqa: F401  (registers the ids in this process only)
from shoal_test_envs import ReleasedInTurn

# Importable by worker processes (this directory is on sys.path under pytest).
LINE = "shoal_test_envs:shoal-test/PointLine-v0"
GOAL = "shoal_test_envs:shoal-test/PointGoal-v0"
RELEASED_IN_TURN = "shoal_test_envs:shoal-test/ReleasedInTurn-v0"
RAISES_IN_STEP = "shoal_test_envs:shoal-test/RaisesInStep-v0"


def records(run):
    """The run's records without what a clock decides."""
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    clock = ("wall_s", "steps_per_s", "sps", "time")
    return [{k: v for k, v in row.items() if not any(c in k for c in clock)} for row in rows]


STRATEGIES = [
    ("toy-ppo", LINE, "gather", {"episodes": 16}),
    ("toy-ddpg-her", GOAL, "averaging", {"episodes": 8}),
    ("toy-ddpg-her", GOAL, "pool", {"episodes": 8}),
]


@pytest.mark.parametrize(("preset", "env", "strategy", "budget"), STRATEGIES)
def test_seeded_runs_give_the_same_records_on_threads_and_processes(
    tmp_path, preset, env, strategy, budget
):
    runs = {}
    for backend in ("threads", "processes"):
        runs[backend] = shoal_envs.train(
            preset,
            env=env,
            out=tmp_path / backend,
            seed=3,
            parallel__workers=2,
            parallel__strategy=strategy,
            parallel__backend=backend,
            **budget,
        )
    threads, processes = records(runs["threads"]), records(runs["processes"])
    assert any(r.get("kind") == "iteration" for r in threads)
    assert threads == processes


def test_process_workers_start_from_this_interpreter_not_the_bare_one(tmp_path, monkeypatch):
    # A virtual environment's python resolves (through /proc/self/exe) to
    # the base interpreter, which cannot import shoal_envs: the workers must
    # be started with sys.executable, and this test would fail with
    # "No module named 'shoal_envs'" in a worker if they were not.
    run = shoal_envs.train(
        "toy-ppo",
        out=tmp_path / "own",
        episodes=8,
        parallel__workers=2,
        parallel__strategy="gather",
        parallel__backend="processes",
    )
    assert (run / "summary.json").is_file()
    assert sys.executable


def test_an_env_registered_only_in_this_process_fails_naming_the_worker(tmp_path):
    # Registered by this process's import alone: a worker's gym.make cannot
    # find the id, and the run stops with an error naming the worker.
    with pytest.raises(RuntimeError, match="worker 1"):
        shoal_envs.train(
            "toy-ppo",
            env="shoal-test/PointLine-v0",
            out=tmp_path / "missing",
            episodes=8,
            parallel__workers=2,
            parallel__strategy="gather",
            parallel__backend="processes",
        )


def train_counting_frees(env, out, workers):
    """`toy-ppo` for 8 episodes on `env` (a ReleasedInTurn) with `workers`
    threads, the count of envs made and freed starting from zero."""
    ReleasedInTurn.made = 0
    ReleasedInTurn.freed_where_closed.clear()
    shoal_envs.train(
        "toy-ppo",
        env=env,
        out=out,
        episodes=8,
        parallel__workers=workers,
        parallel__strategy="gather" if workers > 1 else "none",
        parallel__backend="threads",
    )


def assert_each_env_freed_where_closed():
    assert len(ReleasedInTurn.freed_where_closed) == ReleasedInTurn.made, "every env made was freed"
    assert all(ReleasedInTurn.freed_where_closed), ReleasedInTurn.freed_where_closed


@pytest.mark.parametrize("workers", [1, 2])
def test_every_env_is_freed_in_the_turn_that_closes_it(tmp_path, workers):
    # An env freed outside its turn (its last reference dropped without the
    # GIL, so Python frees it later on whichever thread takes the GIL next)
    # runs beside another env's call, which the turn is there to prevent
    # (MuJoCo's model freed beside its loader).
    train_counting_frees(RELEASED_IN_TURN, tmp_path / "run", workers)
    assert ReleasedInTurn.made >= workers
    assert_each_env_freed_where_closed()


@pytest.mark.parametrize("workers", [1, 2])
def test_an_env_that_raises_is_freed_in_its_turn_too(tmp_path, workers):
    # The exception kept for the caller holds the failed env in its
    # traceback's frames (`self` in `step`); kept as it was, the env would
    # outlive its close and be freed wherever Python drops the exception.
    with pytest.raises(RuntimeError, match="RaisesInStep-v0`: step") as raised:
        train_counting_frees(RAISES_IN_STEP, tmp_path / "run", workers)
    cause = raised.value.__cause__
    assert isinstance(cause, ArithmeticError)
    # The traceback still shows where the env failed.
    assert "raise ArithmeticError" in "".join(traceback.format_exception(cause))
    assert_each_env_freed_where_closed()
