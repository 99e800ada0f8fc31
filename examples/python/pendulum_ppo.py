"""Gymnasium's Pendulum-v1 trained by shoal's PPO from Python, with its learning curve.

    python examples/python/pendulum_ppo.py --seed 0 --steps 200000 --out runs/pendulum-ppo-s0

Settings are RL Baselines3 Zoo's for PPO on Pendulum-v1 (gamma 0.9,
GAE 0.95, Adam 1e-3, 10 epochs, minibatches of about 64 steps, rollouts of
about 4 096 steps), on shoal's Beta policy instead of Zoo's gSDE Gaussian.
Prints one line per evaluation: env steps and the mean evaluation return.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import shoal_envs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=200_000)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    run = shoal_envs.train(
        "worm-ppo",
        env="Pendulum-v1",
        seed=args.seed,
        steps=args.steps,
        out=args.out,
        algo__gamma=0.9,
        algo__gae_lambda=0.95,
        algo__learning_rate=1e-3,
        algo__epochs=10,
        algo__episodes_per_rollout=20,  # 20 x 200 steps = 4 000 steps
        algo__minibatches=64,  # about 64 steps each
        train__eval_every=50,
        train__eval_episodes=10,
        train__final_eval_episodes=20,
        train__checkpoint_every=250,
    )
    for line in (run / "metrics.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["kind"] == "eval":
            print(f"{record['env_steps']:>8} env steps  return {record['eval/return_mean']:9.1f}")
    summary = json.loads((run / "summary.json").read_text())
    print(f"final: {summary['eval_return_mean']:.1f} over {summary['eval_episodes']} episodes, run {run}")


if __name__ == "__main__":
    main()
