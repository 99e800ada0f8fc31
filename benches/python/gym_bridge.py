"""What a Gymnasium env costs shoal's trainer against its native env: the same worm, both ways.

    python benches/python/gym_bridge.py --episodes 20 --rounds 2

Trains `worm-ppo` for EPISODES episodes on shoal's native `worm` and on
`shoal/Worm-v0` through Gymnasium (env kind `gymnasium`: every reset and
step a call into Python and back), alternating, ROUNDS times each, and
prints the wall time per env step of each (from the runs' summaries) and
their ratio. Same physics, same learner: the difference is the bridge.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

import shoal_envs


def per_step_us(run: Path) -> float:
    summary = json.loads((run / "summary.json").read_text())
    return 1e6 * summary["wall_s"] / summary["env_steps"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    times: dict[str, list[float]] = {"native": [], "gymnasium": []}
    with tempfile.TemporaryDirectory() as scratch:
        for round_ in range(args.rounds):
            for name, env in [("native", None), ("gymnasium", "shoal/Worm-v0")]:
                run = shoal_envs.train(
                    "worm-ppo",
                    env=env,
                    episodes=args.episodes,
                    out=Path(scratch) / f"{name}-{round_}",
                    train__eval_every=10**9,
                    train__final_eval_episodes=1,
                )
                times[name].append(per_step_us(run))
    for name, values in times.items():
        print(f"{name:>10}: {statistics.median(values):7.1f} µs per env step {values}")
    ratio = statistics.median(times["gymnasium"]) / statistics.median(times["native"])
    print(f"gymnasium / native: {ratio:.2f}x")


if __name__ == "__main__":
    main()
