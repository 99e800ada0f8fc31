"""A preset as it ships on the Gymnasium MuJoCo tasks, one row per run.

    python benches/python/mujoco_table.py PRESET ENV_ID STEPS SEED [OUT_CSV [KEY=VALUE ...]]

Trains PRESET (e.g. `worm-ppo`) on the Gymnasium env ENV_ID (e.g.
`Swimmer-v5`, or `gymnasium_robotics:FetchReach-v4` with the module that
registers it) for STEPS env steps with seed SEED, in a run directory of
its own under `runs/mujoco/`, and appends one CSV row: preset, env, seed,
steps, the final evaluation's mean return (deterministic policy) and
success rate (goal tasks such as Fetch; empty elsewhere), its episodes,
the wall seconds, and the run directory. Needs the MuJoCo extra
(docs/python.md). Run it one process per core.

KEY=VALUE pairs set config keys as `shoal train --set` does
(`algo.gamma=0.99`), the value read as JSON where it parses (numbers,
true/false, lists) and as a string otherwise; the row records them.
"""

from __future__ import annotations

import csv
import json
import pathlib
import sys
import time

import shoal_envs


def override(assignment: str) -> tuple[str, object]:
    key, _, raw = assignment.partition("=")
    if not key or not raw:
        sys.exit(f"expected KEY=VALUE, got {assignment!r}")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key.replace(".", "__"), value


def main() -> None:
    preset, env_id, steps, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    out_csv = pathlib.Path(sys.argv[5] if len(sys.argv) > 5 else "runs/mujoco/rows.csv")
    assignments = sys.argv[6:]
    overrides = dict(override(a) for a in assignments)
    name = preset.rsplit("/", 1)[-1].removesuffix(".toml")
    # `module:Env-v0` ids (Gymnasium-Robotics' Fetch) name the run by the env alone.
    run_dir = pathlib.Path("runs/mujoco") / f"{name}-{env_id.rsplit(':', 1)[-1]}-s{seed}"
    start = time.perf_counter()
    shoal_envs.train(preset, env=env_id, steps=steps, seed=seed, out=str(run_dir), **overrides)
    wall = time.perf_counter() - start
    summary = json.loads((run_dir / "summary.json").read_text())
    row = {
        "preset": preset,
        "env": env_id,
        "seed": seed,
        "env_steps": summary["env_steps"],
        "final_return": round(summary["eval_return_mean"], 1),
        "final_success": summary.get("eval_success_rate"),
        "eval_episodes": summary.get("eval_episodes"),
        "wall_s": round(wall),
        "run": str(run_dir),
        "overrides": " ".join(assignments),
    }
    out_csv.parent.mkdir(parents=True, exist_ok=True)
    new = not out_csv.exists()
    with out_csv.open("a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(row))
        if new:
            writer.writeheader()
        writer.writerow(row)
    print(json.dumps(row))


if __name__ == "__main__":
    main()
