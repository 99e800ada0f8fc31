"""A short shoal run's TensorBoard scalars, read back with TensorBoard's own
event reader: the same numbers, at the same env steps, as metrics.jsonl.

The run is made by the `shoal` binary named by SHOAL_BIN (CI points it at
the one its Rust tests built)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator


def shoal_binary() -> str:
    binary = os.environ.get("SHOAL_BIN")
    assert binary, "set SHOAL_BIN to a built shoal binary (target/debug/shoal)"
    return binary


def test_a_short_runs_scalars_read_back_with_tensorboard(tmp_path: Path):
    run = tmp_path / "run"
    subprocess.run(
        [
            shoal_binary(),
            "train",
            "toy-reinforce",
            "--out",
            str(run),
            "--quiet",
            "--set",
            "train.episodes=24",
            "--set",
            "train.eval_every=8",
        ],
        check=True,
        capture_output=True,
    )
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    episodes = [r for r in records if r["kind"] == "episode"]
    assert len(episodes) == 24

    events = EventAccumulator(str(run / "tensorboard"))
    events.Reload()
    tags = events.Tags()["scalars"]
    assert "charts/episodic_return" in tags
    assert "eval/return_mean" in tags

    returns = events.Scalars("charts/episodic_return")
    assert [e.step for e in returns] == [r["env_steps"] for r in episodes]
    np.testing.assert_allclose(
        [e.value for e in returns],
        [r["charts/episodic_return"] for r in episodes],
        rtol=1e-6,
    )
    evals = [r for r in records if r["kind"] == "eval"]
    assert [e.step for e in events.Scalars("eval/return_mean")] == [r["env_steps"] for r in evals]
