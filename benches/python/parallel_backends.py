"""Two workers on a Gymnasium env: threads (one interpreter, env calls in
turn) against processes (an interpreter each), against one worker.

    python benches/python/parallel_backends.py [EPISODES] [ROUNDS]

Trains `push-ddpg-her` on Gymnasium-Robotics' FetchPush-v4 for EPISODES
episodes (default 80; with two workers, each runs half) in each layout,
the layouts in turn, ROUNDS times (default 3), and prints each layout's
median wall time per episode and its speed-up over one worker. Needs the
MuJoCo extra (docs/python.md). Compare ratios from one call on one idle
machine only.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time

import shoal_envs

ENV = "gymnasium_robotics:FetchPush-v4"
LAYOUTS = {
    "1 worker": {},
    "2 threads": {"parallel__workers": 2, "parallel__backend": "threads"},
    "2 processes": {"parallel__workers": 2, "parallel__backend": "processes"},
}


def main() -> None:
    episodes = int(sys.argv[1]) if len(sys.argv) > 1 else 80
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    seconds: dict[str, list[float]] = {name: [] for name in LAYOUTS}
    for _ in range(rounds):
        for name, layout in LAYOUTS.items():
            strategy = {"parallel__strategy": "averaging"} if layout else {}
            with tempfile.TemporaryDirectory() as scratch:
                start = time.perf_counter()
                shoal_envs.train(
                    "push-ddpg-her",
                    env=ENV,
                    out=f"{scratch}/run",
                    seed=0,
                    episodes=episodes,
                    train__eval_every=episodes,
                    train__final_eval_episodes=1,
                    **layout,
                    **strategy,
                )
                seconds[name].append(time.perf_counter() - start)
    one = statistics.median(seconds["1 worker"])
    print(f"{episodes} episodes of FetchPush-v4, push-ddpg-her, median of {rounds}")
    for name, runs in seconds.items():
        median = statistics.median(runs)
        print(
            f"{name:12} {1000 * median / episodes:7.1f} ms/episode"
            f"  speed-up {one / median:4.2f}  (runs {', '.join(f'{s:.1f}' for s in runs)} s)"
        )


if __name__ == "__main__":
    main()
