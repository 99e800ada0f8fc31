"""What the bridge into Python costs on a MuJoCo task: a step as shoal's trainer makes it against MuJoCo's own step in a Python loop.

    python benches/python/mujoco_bridge.py --env-id HalfCheetah-v5 --rounds 2

For each round, in turn:

- `loop`: the env stepped in a plain Python loop (actions drawn before the
  loop), as a user's own script steps it: MuJoCo plus Gymnasium's
  wrappers, µs per step;
- `ppo` and `sac`: `mujoco-ppo` and `mujoco-sac` trained on the same env
  by `shoal_envs.train`, the env wrapped in a clock that times, inside
  Python, each call of the env's `step` (`inside`) and the gap from one
  step's return to the next step's call (`between`: shoal's side of a
  step, the trip through the bridge both ways and the policy's action, and
  for SAC its update after every step).

`inside` against `loop` is what being called from shoal adds to the env's
own step (GIL hand-over, caches); the median `between` of PPO, whose
updates come once per 2 048 steps, is the bridge and the policy together,
an upper bound on the bridge. `step_to_step` is the training env's µs per
step from its first step to its last, resets aside. Needs the MuJoCo
extra (docs/python.md); one process on an otherwise idle core.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import gymnasium as gym

import shoal_envs

TIMED_ID = "shoal-bench/StepClock-v0"


class StepClock(gym.Wrapper):
    """Times each `step` of the env it wraps and the gaps between steps."""

    clocks: list[StepClock] = []

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.inside: list[float] = []
        self.between: list[float] = []
        self.returned_at: float | None = None
        StepClock.clocks.append(self)

    def reset(self, **kwargs):
        self.returned_at = None
        return self.env.reset(**kwargs)

    def step(self, action):
        called_at = time.perf_counter()
        if self.returned_at is not None:
            self.between.append(called_at - self.returned_at)
        out = self.env.step(action)
        self.returned_at = time.perf_counter()
        self.inside.append(self.returned_at - called_at)
        return out


def make_timed(inner: str) -> gym.Env:
    return StepClock(gym.make(inner))


def python_loop_us(env_id: str, steps: int, seed: int) -> float:
    env = gym.make(env_id)
    env.action_space.seed(seed)
    actions = [env.action_space.sample() for _ in range(steps)]
    env.reset(seed=seed)
    start = time.perf_counter()
    for action in actions:
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            env.reset()
    elapsed = time.perf_counter() - start
    env.close()
    return 1e6 * elapsed / steps


def shoal_run(preset: str, env_id: str, steps: int, out: Path, **overrides) -> dict[str, float]:
    StepClock.clocks.clear()
    shoal_envs.train(
        preset,
        env=TIMED_ID,
        env_kwargs={"inner": env_id},
        out=out,
        steps=steps,
        seed=0,
        train__eval_every=10**9,
        train__final_eval_episodes=1,
        **overrides,
    )
    # The first env that steps trains: the envs made to check the config
    # never step, and the evaluation's come after training.
    clock = next(c for c in StepClock.clocks if c.inside)
    return {
        "inside": 1e6 * statistics.mean(clock.inside),
        "between_median": 1e6 * statistics.median(clock.between),
        "between_mean": 1e6 * statistics.mean(clock.between),
        "step_to_step": 1e6 * (sum(clock.inside) + sum(clock.between)) / len(clock.inside),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env-id", default="HalfCheetah-v5")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--ppo-steps", type=int, default=20_480)
    parser.add_argument("--sac-steps", type=int, default=4_000)
    args = parser.parse_args()
    gym.register(TIMED_ID, entry_point=make_timed)
    rows: dict[str, list[dict[str, float]]] = {"loop": [], "ppo": [], "sac": []}
    with tempfile.TemporaryDirectory() as scratch:
        for round_ in range(args.rounds):
            rows["loop"].append({"inside": python_loop_us(args.env_id, args.ppo_steps, round_)})
            rows["ppo"].append(
                shoal_run("mujoco-ppo", args.env_id, args.ppo_steps, Path(scratch) / f"ppo-{round_}")
            )
            # SAC learns from step 1 000: the rest of its steps carry an update.
            rows["sac"].append(
                shoal_run(
                    "mujoco-sac",
                    args.env_id,
                    args.sac_steps,
                    Path(scratch) / f"sac-{round_}",
                    algo__warmup_steps=1_000,
                )
            )
            print(json.dumps({k: v[-1] for k, v in rows.items()}))
    print(f"{args.env_id}, µs per env step, median of {args.rounds} rounds (each round's values in brackets)")
    for name, values in rows.items():
        cells = []
        for key in ("inside", "between_median", "between_mean", "step_to_step"):
            if key in values[0]:
                column = [v[key] for v in values]
                cells.append(f"{key} {statistics.median(column):8.1f} {[round(c, 1) for c in column]}")
        print(f"{name:>5}: " + "  ".join(cells))


if __name__ == "__main__":
    main()
