"""Milliseconds per env step of SAC (or TD3) while it learns: shoal, SB3 and SBX.

    python benches/python/off_policy_step_time.py RUNNER [--env-id HalfCheetah-v5]
        [--algo sac] [--random-steps 1000] [--learning-steps 3000] [--seed 0]

RUNNER is `shoal` (the preset `worm-sac` or `worm-td3` through
`shoal_envs.train`), `sb3` (Stable-Baselines3, PyTorch on one thread) or
`sbx` (the `sbx-rl` package, JAX on one thread). Each takes RL Baselines3
Zoo's MuJoCo settings: 256 x 256 networks for SAC and 400 x 300 for TD3,
batch 256, one gradient step per env step after `--random-steps`
uniformly random ones. The time counted is
that of the learning steps only (env step, action, replay and update), with
no evaluation inside it. Prints one JSON line.

One runner per process, so runs can alternate (`for r in shoal sb3 sbx;
...`) and a profiler can take one alone (`perf record -g python ...`). The
env's episodes must last a fixed number of steps (HalfCheetah, Swimmer):
shoal counts its random start in episodes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

from mujoco_table import cpu_models


def one_thread() -> None:
    """PyTorch and JAX on one thread, as shoal's single learner runs."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault(
        "XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    )


def time_shoal(args: argparse.Namespace) -> float:
    import gymnasium as gym
    import shoal_envs

    probe = gym.make(args.env_id)
    episode = probe.spec.max_episode_steps
    probe.close()
    if args.random_steps % episode or args.learning_steps % episode:
        sys.exit(f"shoal counts its random start in episodes: give multiples of {episode} steps")
    with tempfile.TemporaryDirectory() as out:
        run = shoal_envs.train(
            f"worm-{args.algo}",
            env=args.env_id,
            out=Path(out) / "run",
            seed=args.seed,
            steps=args.random_steps + args.learning_steps,
            algo__gamma=0.99,
            algo__learning_starts=args.random_steps // episode,
            train__eval_every=10**9,
            train__final_eval_episodes=1,
        )
        episodes = [
            json.loads(line)
            for line in (run / "metrics.jsonl").read_text().splitlines()
            if '"kind":"episode"' in line
        ]
    start = next(e for e in episodes if e["env_steps"] == args.random_steps)
    return (episodes[-1]["wall_s"] - start["wall_s"]) / (episodes[-1]["env_steps"] - args.random_steps)


def time_baselines(args: argparse.Namespace) -> float:
    import gymnasium as gym

    if args.runner == "sb3":
        import torch
        from stable_baselines3 import SAC, TD3
        from stable_baselines3.common.callbacks import BaseCallback

        torch.set_num_threads(1)
    else:
        from sbx import SAC, TD3
        from stable_baselines3.common.callbacks import BaseCallback

    class LearningClock(BaseCallback):
        start = None

        def _on_step(self) -> bool:
            if self.num_timesteps == args.random_steps:
                self.start = time.perf_counter()
            return True

    env = gym.make(args.env_id)
    model = (SAC if args.algo == "sac" else TD3)(
        "MlpPolicy",
        env,
        learning_starts=args.random_steps,
        batch_size=256,
        buffer_size=1_000_000,
        gamma=0.99,
        # The shoal presets' networks: SB3's SAC default and TD3's (the paper's).
        policy_kwargs={"net_arch": [256, 256] if args.algo == "sac" else [400, 300]},
        seed=args.seed,
        verbose=0,
    )
    clock = LearningClock()
    model.learn(args.random_steps + args.learning_steps, callback=clock)
    return (time.perf_counter() - clock.start) / args.learning_steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runner", choices=["shoal", "sb3", "sbx"])
    parser.add_argument("--env-id", default="HalfCheetah-v5")
    parser.add_argument("--algo", choices=["sac", "td3"], default="sac")
    parser.add_argument("--random-steps", type=int, default=1000)
    parser.add_argument("--learning-steps", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    one_thread()
    seconds = time_shoal(args) if args.runner == "shoal" else time_baselines(args)
    print(json.dumps({
        "runner": args.runner,
        "algo": args.algo,
        "env": args.env_id,
        "ms_per_learning_step": round(seconds * 1000, 2),
        "learning_steps": args.learning_steps,
        "cpu": (cpu_models() or [platform.machine()])[0],
    }))


if __name__ == "__main__":
    main()
