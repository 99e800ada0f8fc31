"""One SB3 PPO update timed as shoal's criterion bench times its own
(`cargo bench -p shoal-rl-algo --bench ppo_update`): a 2 048-step rollout on
`shoal/Worm-v0`, 10 epochs of 32 minibatches (64 rows), 64 × 64 tanh
policy and value networks, one torch thread. shoal's rollout is two whole
1 000-step episodes (2 000 rows in 32 minibatches), 2 % fewer rows.

    python3 -m venv .venv-bench && . .venv-bench/bin/activate
    pip install ./crates/python stable-baselines3
    python benches/python/ppo_update.py --repeats 20

Prints the median and range of the update's wall time in ms as JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import gymnasium as gym
import shoal_envs  # noqa: F401  (registers shoal/Worm-v0)
import torch
from stable_baselines3 import PPO


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    torch.set_num_threads(1)
    model = PPO(
        "MlpPolicy", gym.make("shoal/Worm-v0"), n_steps=2048, batch_size=64, n_epochs=10,
        gamma=0.9999, seed=0, device="cpu",
    )
    # Fill the rollout buffer once; every timed update learns from it.
    model.learn(total_timesteps=2048)
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        model.train()
        times.append(1000 * (time.perf_counter() - start))
    print(json.dumps({
        "update_ms_median": statistics.median(times),
        "update_ms_min": min(times),
        "update_ms_max": max(times),
        "repeats": args.repeats,
    }))


if __name__ == "__main__":
    main()
