"""Env steps/s through Python: shoal's envs against Gymnasium's MuJoCo Swimmer-v5 and FetchPush-v4.

Run by hand (not in CI), in a virtual environment of its own:

    python3 -m venv /tmp/bench && . /tmp/bench/bin/activate
    pip install ./crates/python "gymnasium[mujoco]" gymnasium-robotics
    # FetchPush-v4 with mujoco 4: see docs/benchmarks.md for the one-line patch.
    python benches/python/env_throughput.py --seconds 5 --rounds 3 \
        --shoal-bin target/release/shoal

Every env is made with ``gymnasium.make`` (default wrappers: TimeLimit,
OrderEnforcing, PassiveEnvChecker) and timed with Gymnasium's own
``gymnasium.utils.performance.benchmark_step`` (random actions from
``action_space.sample()``, resets included). The envs take turns, round
after round, so a change in machine load hits all of them alike; the
median and range over the rounds are printed, with the ratios, as JSON and
as a Markdown table. Each env is timed twice: with benchmark_step, and
with the same loop on actions sampled before the clock starts (sampling
costs as much as a shoal step). ``raw`` rows step shoal's Rust classes
directly (``shoal_envs.Worm`` …, no Gymnasium wrappers) to show what the
wrappers cost; ``--shoal-bin`` adds ``shoal bench-env`` (Rust, no Python) to the run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import time

import gymnasium as gym
import numpy as np
from gymnasium.utils.performance import benchmark_step

import shoal_envs


def gym_env(env_id: str):
    def make():
        if env_id.startswith("Fetch"):
            import gymnasium_robotics

            gym.register_envs(gymnasium_robotics)
        return gym.make(env_id)

    return make


def presampled_steps_per_s(env, seconds: float, seed: int, raw: bool = False) -> float:
    """benchmark_step's loop with the actions sampled before the clock starts.

    ``action_space.sample()`` costs 10–20 µs a call, as much as a shoal step,
    so benchmark_step partly times numpy; this loop times the env (and its
    wrappers) alone. ``raw`` envs are shoal's Rust classes: ``reset(seed)``
    positionally, no Gymnasium in the way.
    """
    rng = np.random.default_rng(seed)
    if raw:
        low, high = env.action_low, env.action_high
        env.reset(seed)
    else:
        low, high = env.action_space.low, env.action_space.high
        env.reset(seed=seed)
    actions = rng.uniform(low, high, (4096, len(low))).astype(env_dtype(env, raw))
    steps, start = 0, time.time()
    while True:
        _, _, terminated, truncated, _ = env.step(actions[steps % 4096])
        steps += 1
        if terminated or truncated:
            env.reset()
        end = time.time()
        if end - start > seconds:
            return steps / (end - start)


def env_dtype(env, raw: bool):
    return np.float32 if raw else env.action_space.dtype


def bench_env_rust(shoal_bin: str, env: str) -> float:
    out = subprocess.run(
        [shoal_bin, "bench-env", env], check=True, capture_output=True, text=True
    ).stdout
    record = json.loads(out)
    return float(record["steps_per_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="timing per env per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--shoal-bin", help="the release `shoal` binary, for bench-env rows")
    parser.add_argument("--skip-fetch", action="store_true", help="leave FetchPush-v4 out")
    args = parser.parse_args()

    ids = ["shoal/Worm-v0", "Swimmer-v5", "shoal/ArmPush-v0", "shoal/BallToNet-v0"]
    if not args.skip_fetch:
        ids.append("FetchPush-v4")
    cases: dict[str, callable] = {}
    for env_id in ids:
        cases[f"{env_id} benchmark_step"] = (
            lambda env_id=env_id: benchmark_step(gym_env(env_id)(), args.seconds, args.seed)
        )
        cases[f"{env_id} presampled"] = (
            lambda env_id=env_id: presampled_steps_per_s(gym_env(env_id)(), args.seconds, args.seed)
        )
    for name, env_class in [("Worm", shoal_envs.Worm), ("ArmPush", shoal_envs.ArmPush)]:
        cases[f"raw shoal_envs.{name} presampled"] = (
            lambda env_class=env_class: presampled_steps_per_s(env_class(), args.seconds, args.seed, raw=True)
        )
    if args.shoal_bin:
        cases["shoal bench-env worm (Rust)"] = lambda: bench_env_rust(args.shoal_bin, "worm")
        cases["shoal bench-env arm-push (Rust)"] = lambda: bench_env_rust(args.shoal_bin, "arm-push")

    load_before = os.getloadavg()
    results: dict[str, list[float]] = {name: [] for name in cases}
    for r in range(args.rounds):
        for name, run in cases.items():
            results[name].append(run())
            print(f"round {r + 1}/{args.rounds}  {name:32s} {results[name][-1]:10.0f} steps/s", flush=True)
    load_after = os.getloadavg()

    median = {name: statistics.median(v) for name, v in results.items()}
    ratios = {}
    pairs = [("shoal/Worm-v0", "Swimmer-v5"), ("shoal/ArmPush-v0", "FetchPush-v4")]
    for ours, theirs in pairs:
        for method in ("benchmark_step", "presampled"):
            if f"{theirs} {method}" in median:
                ratios[f"{ours} / {theirs} ({method})"] = (
                    median[f"{ours} {method}"] / median[f"{theirs} {method}"]
                )
    report = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "load_avg_1m_before_after": [round(load_before[0], 2), round(load_after[0], 2)],
        "seconds_per_env_per_round": args.seconds,
        "rounds": args.rounds,
        "steps_per_s": {name: {"median": round(median[name]), "min": round(min(v)), "max": round(max(v))}
                        for name, v in results.items()},
        "ratios": {k: round(v, 1) for k, v in ratios.items()},
    }
    print(json.dumps(report, indent=2))
    print("\n| env | steps/s (median) | range |\n|---|---|---|")
    for name, v in results.items():
        print(f"| {name} | {median[name]:,.0f} | {min(v):,.0f}–{max(v):,.0f} |")
    for k, v in ratios.items():
        print(f"\n{k}: {v:.1f}×")


if __name__ == "__main__":
    main()
