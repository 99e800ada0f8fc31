"""A preset as it ships on the Gymnasium MuJoCo tasks, one row per run.

    python benches/python/mujoco_table.py PRESET ENV_ID STEPS SEED [OUT_CSV [KEY=VALUE ...]]

Trains PRESET (e.g. `worm-ppo`) on the Gymnasium env ENV_ID (e.g.
`Swimmer-v5`, or `gymnasium_robotics:FetchReach-v4` with the module that
registers it) for STEPS env steps with seed SEED, in a run directory of
its own under `runs/mujoco/`, and appends one CSV row (`COLUMNS`):
preset, env, settings, seed, env steps, the final evaluation's mean return
(deterministic policy) and success rate (goal tasks such as Fetch; empty
elsewhere), its episodes, the wall seconds, the machine, the matrix
kernels and the commit.
Needs the MuJoCo extra (docs/python.md). Run it one process per core;
`benches/python/suite.py` runs the whole benchmark table this way.

KEY=VALUE pairs set config keys as `shoal train --set` does
(`algo.gamma=0.99`), the value read as JSON where it parses (numbers,
true/false, lists) and as a string otherwise; the row records them.
"""

from __future__ import annotations

import csv
import json
import pathlib
import platform
import subprocess
import sys
import time


def override(assignment: str) -> tuple[str, object]:
    key, _, raw = assignment.partition("=")
    if not key or not raw:
        sys.exit(f"expected KEY=VALUE, got {assignment!r}")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key.replace(".", "__"), value


COLUMNS = [
    "preset", "env", "settings", "seed", "env_steps", "final_return", "final_success",
    "eval_episodes", "wall_s", "machine", "kernels", "commit",
]
"""The columns of a result row: what `tests/docs_results.rs` reads back."""


def cpu_models() -> list[str]:
    """The model name of each core, as /proc/cpuinfo gives them (none elsewhere)."""
    try:
        lines = pathlib.Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return []
    return [l.split(":", 1)[1].strip() for l in lines if l.startswith("model name")]


def machine() -> str:
    """The CPU model and its core count."""
    models = cpu_models()
    return f"{models[0]}, {len(models)} cores" if models else platform.machine()


def commit() -> str:
    """The checkout's short commit, with `+` when it has uncommitted changes
    (the package is assumed built from it: `pip install ./crates/python`)."""
    def git(*args: str) -> str:
        # The checkout this script lives in, wherever it is run from.
        here = pathlib.Path(__file__).resolve().parent
        return subprocess.run(
            ["git", *args], cwd=here, capture_output=True, text=True
        ).stdout.strip()
    head = git("rev-parse", "--short", "HEAD")
    return head + ("+" if git("status", "--porcelain", "--untracked-files=no") else "")


def train_row(preset: str, env_id: str, steps: int, seed: int, settings: list[str]) -> dict:
    """Trains one seed and returns its result row (`COLUMNS`)."""
    import shoal_envs  # here, so the helpers above load without the package

    overrides = dict(override(a) for a in settings)
    name = preset.rsplit("/", 1)[-1].removesuffix(".toml")
    # `module:Env-v0` ids (Gymnasium-Robotics' Fetch) name the run by the env alone.
    suffix = "-".join([env_id.rsplit(":", 1)[-1], *settings]).replace("/", "_")
    run_dir = pathlib.Path("runs/mujoco") / f"{name}-{suffix}-s{seed}"
    # The checkout as the run starts: commits made while it trains are not its.
    built_from = commit()
    start = time.perf_counter()
    shoal_envs.train(preset, env=env_id, steps=steps, seed=seed, out=str(run_dir), **overrides)
    wall = time.perf_counter() - start
    summary = json.loads((run_dir / "summary.json").read_text())
    return {
        "preset": preset,
        "env": env_id,
        "settings": " ".join(settings),
        "seed": seed,
        "env_steps": summary["env_steps"],
        "final_return": round(summary["eval_return_mean"], 1),
        "final_success": summary.get("eval_success_rate"),
        "eval_episodes": summary.get("eval_episodes"),
        "wall_s": round(wall, 1),
        "machine": machine(),
        "kernels": summary.get("matmul_kernels"),
        "commit": built_from,
    }


def append_row(path: pathlib.Path, row: dict) -> None:
    """Appends `row` to the CSV at `path` under that file's own header
    (a report's file may hold columns of its own, left empty here)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists() or path.stat().st_size == 0
    header = COLUMNS
    if not new:
        with path.open(newline="") as f:
            header = next(csv.reader(f))
    with path.open("a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=header, extrasaction="ignore", restval="")
        if new:
            writer.writeheader()
        writer.writerow(row)


def main() -> None:
    preset, env_id, steps, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    out_csv = pathlib.Path(sys.argv[5] if len(sys.argv) > 5 else "runs/mujoco/rows.csv")
    row = train_row(preset, env_id, steps, seed, sys.argv[6:])
    append_row(out_csv, row)
    print(json.dumps(row))


if __name__ == "__main__":
    main()
