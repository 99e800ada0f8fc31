"""Stable-Baselines3 and shoal trained side by side on the same tasks, same machine.

Run by hand (not in CI), in a virtual environment of its own:

    python3 -m venv /tmp/bench && . /tmp/bench/bin/activate
    pip install ./crates/python stable-baselines3      # pulls torch (CPU is used)
    cargo build --release                              # target/release/shoal

    # Arm push: SB3 DDPG + HerReplayBuffer against `shoal train push-ddpg-her`
    # (or --algo sac: SB3 SAC + HER against docs/experiments/configs/push-sac-her.toml)
    python benches/python/sb3_vs_shoal.py push --seeds 0 1 2 --episodes 6000 \\
        --shoal-bin target/release/shoal --out runs/sb3-vs-shoal
    # Worm: SB3 TD3 (or --algo sac, ppo) with RL Zoo's Swimmer settings against
    # `shoal train worm-reinforce` (or --shoal-preset worm-td3, worm-sac, worm-ppo), both
    # evaluated every --worm-eval-every env steps
    python benches/python/sb3_vs_shoal.py worm --seeds 0 1 2 --env-steps 1000000 \\
        --algo ppo --shoal-preset worm-ppo --eval-episodes 5 \\
        --shoal-bin target/release/shoal --out runs/sb3-vs-shoal

    # 10^6 worm steps of SB3 TD3/SAC take about 7 hours here: SB3 saves its
    # model and replay buffer every --checkpoint-every env steps, and the
    # same command with --resume continues both runners where they stopped
    # (shoal's run exactly, SB3's from its save: see `Checkpoint`)
    python benches/python/sb3_vs_shoal.py worm --seeds 0 --algo td3 --shoal-preset worm-td3 \
        --eval-episodes 5 --shoal-bin target/release/shoal --out runs/sb3-vs-shoal --resume

    # On two cores, one runner per core at the same time (what
    # docs/benchmarks.md reports): SB3 alone on core 0, shoal alone on 1.
    python benches/python/sb3_vs_shoal.py push --seeds 0 --cores 0 --out runs/s &
    python benches/python/sb3_vs_shoal.py push --seeds 0 --cores 1 --skip-sb3 \\
        --shoal-bin target/release/shoal --out runs/s

Every run writes ``<out>/<task>/<runner>-seed<N>.jsonl``: one record per
evaluation with ``env_steps``, ``wall_s`` (since the start of training,
evaluations included, as shoal's own ``wall_s``), ``eval_return_mean`` and
``eval_success_rate``; ``summary.md`` then tabulates, per runner and seed,
the env steps and wall time to the target (success 0.9 on push; on the
worm, the return of the best travelling-wave gait that shoal's run of the
same seed found, ``gait_return`` in its ``summary.json``, as ``shoal train``
measures the worm; 200 without a shoal run) and the training throughput
in env steps/s. Both
runners get the same CPU cores (``--cores``); torch runs one thread
(``--threads``), as shoal's single learner does.

SB3 DDPG + HER is set up with push-ddpg-her's values (shoal's ``DdpgConfig``
defaults, OpenAI baselines' HER): actor and critic 3 × 256, Adam 1e-3,
batch 256, γ 0.98, τ = 1 − polyak = 0.05 once per round of 40 gradient
steps (SB3 would apply it after every step), buffer 10⁶, HER ``future`` with
k = 4, Gaussian noise 0.2, a uniformly random action with probability 0.3,
and 40 gradient steps after every 2 episodes (20 per episode, as shoal);
observations and goals normalised and clipped to ±5 (``VecNormalize``, as
shoal's normalisers). What SB3's DDPG lacks and shoal has: the actor's
action L2 penalty (1.0), critic targets clipped to [−1/(1−γ), 0], and
relabelled transitions that reach their goal marked terminal;
``--sb3-baselines-extras`` gives it the first two (runner
``sb3-ddpg-her-extras``).

SB3 SAC + HER (``--algo sac`` on push) gets push-sac-her's values the same
way: the networks, batch, schedule, γ, buffer and HER of DDPG above, twin
critics, the temperature learned toward an entropy of −|A| from α = 1, no
random actions and no added noise (SAC samples its policy), and the
targets moved by τ = 0.05 once per round (``target_update_interval`` = 40:
SB3 moves them at the round's first gradient step, shoal after its last).
RL Zoo trains Fetch push with TQC (sb3-contrib) at batch 2 048 on 3 × 512
networks, one gradient step per env step: some 50× the arithmetic per
episode of these settings, days of CPU for 6 000 episodes, so it is not
offered here.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np

import shoal_envs  # noqa: F401  (registers shoal/ ids)

PUSH_TARGET_SUCCESS = 0.9
ACTION_L2 = 1.0  # baselines' action_l2, shoal's DdpgConfig::action_l2
WORM_FALLBACK_TARGET_RETURN = 200.0


# --------------------------------------------------------------- SB3 ----

def sb3_push(
    seed: int, episodes: int, eval_every: int, eval_episodes: int, log, baselines_extras: bool = False,
    algo: str = "ddpg",
) -> None:
    """SB3 DDPG (or SAC) + HerReplayBuffer on shoal/ArmPush-v0 with
    push-ddpg-her's (push-sac-her's) hyperparameters; ``baselines_extras``
    adds baselines' critic-target clipping and action L2 penalty, which
    SB3's DDPG does not have."""
    import torch
    from stable_baselines3 import DDPG, SAC, HerReplayBuffer
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.noise import NormalActionNoise
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    class RandomEpsDDPG(DDPG):
        """DDPG whose behaviour action is uniformly random with probability
        ``random_eps`` (baselines' ``random_eps``; SB3 has no such option),
        and whose target networks move once per training round, as in
        baselines and shoal.

        SB3 moves the targets by ``tau`` after *every* gradient step; with
        40 steps a round and τ = 0.05 they would move 1 − 0.95⁴⁰ = 87 % of
        the way to the trained networks each round, against baselines' and
        shoal's 5 %: a different algorithm, and one that did not learn push
        at all in 6 000 episodes (docs/benchmarks.md)."""

        random_eps = 0.3

        def train(self, gradient_steps: int, batch_size: int = 100) -> None:
            from stable_baselines3.common.utils import polyak_update

            if baselines_extras:
                self._train_as_baselines(gradient_steps, batch_size)
            else:
                tau, self.tau = self.tau, 0.0  # SB3's per-step updates become no-ops
                try:
                    super().train(gradient_steps, batch_size)
                finally:
                    self.tau = tau
            polyak_update(self.critic.parameters(), self.critic_target.parameters(), self.tau)
            polyak_update(self.actor.parameters(), self.actor_target.parameters(), self.tau)

        def _train_as_baselines(self, gradient_steps: int, batch_size: int) -> None:
            """SB3's DDPG step plus what baselines' (and shoal's) has: critic
            targets clipped to [−1/(1−γ), 0] and the actor's action L2
            penalty (1.0 on actions scaled to [−1, 1])."""
            import torch.nn.functional as F

            self.policy.set_training_mode(True)
            self._update_learning_rate([self.actor.optimizer, self.critic.optimizer])
            for _ in range(gradient_steps):
                self._n_updates += 1
                data = self.replay_buffer.sample(batch_size, env=self._vec_normalize_env)
                with torch.no_grad():
                    next_q = self.critic_target.q1_forward(
                        data.next_observations, self.actor_target(data.next_observations)
                    )
                    target = data.rewards + (1 - data.dones) * self.gamma * next_q
                    target = target.clamp(-1.0 / (1.0 - self.gamma), 0.0)
                critic_loss = F.mse_loss(self.critic.q1_forward(data.observations, data.actions), target)
                self.critic.optimizer.zero_grad()
                critic_loss.backward()
                self.critic.optimizer.step()
                actions = self.actor(data.observations)
                actor_loss = (
                    -self.critic.q1_forward(data.observations, actions).mean()
                    + ACTION_L2 * actions.pow(2).mean()
                )
                self.actor.optimizer.zero_grad()
                actor_loss.backward()
                self.actor.optimizer.step()

        def _sample_action(self, learning_starts, action_noise=None, n_envs=1):
            action, buffer_action = super()._sample_action(learning_starts, action_noise, n_envs)
            replace = np.random.random(n_envs) < self.random_eps
            if replace.any():
                uniform = np.array([self.action_space.sample() for _ in range(n_envs)])
                action[replace] = uniform[replace]
                buffer_action[replace] = self.policy.scale_action(uniform[replace])
            return action, buffer_action

    np.random.seed(seed)
    torch.manual_seed(seed)
    env = VecNormalize(
        DummyVecEnv([lambda: Monitor(gym.make("shoal/ArmPush-v0"), info_keywords=("is_success",))]),
        norm_obs=True, norm_reward=False, clip_obs=5.0, gamma=0.98,
    )
    env.seed(seed)
    shared = dict(
        learning_rate=1e-3,
        buffer_size=1_000_000,
        learning_starts=0,
        batch_size=256,
        tau=0.05,
        gamma=0.98,
        train_freq=(2, "episode"),
        gradient_steps=40,
        replay_buffer_class=HerReplayBuffer,
        replay_buffer_kwargs=dict(n_sampled_goal=4, goal_selection_strategy="future"),
        seed=seed,
        device="cpu",
    )
    if algo == "sac":
        model = SAC(
            "MultiInputPolicy",
            env,
            ent_coef="auto_1.0",
            target_update_interval=40,
            policy_kwargs=dict(net_arch=[256, 256, 256], n_critics=2),
            **shared,
        )
    else:
        model = RandomEpsDDPG(
            "MultiInputPolicy",
            env,
            action_noise=NormalActionNoise(np.zeros(4), 0.2 * np.ones(4)),
            policy_kwargs=dict(net_arch=[256, 256, 256]),
            **shared,
        )
    eval_env = VecNormalize(
        DummyVecEnv([lambda: gym.make("shoal/ArmPush-v0")]),
        norm_obs=True, norm_reward=False, clip_obs=5.0, training=False,
    )
    _learn(model, env, eval_env, episodes, eval_every, eval_episodes, seed, log)


# rl-baselines3-zoo hyperparams/ppo.yml at commit 22e3ff2 (its v4 entries;
# the v5 tasks have none): HalfCheetah and Hopper tuned, Walker2d and Ant
# the "mujoco-defaults" (SB3's PPO defaults under VecNormalize), Swimmer
# tuned (and used for shoal's worm).
_ZOO_TUNED_POLICY = dict(log_std_init=-2, ortho_init=False, activation_fn="relu",
                         net_arch=dict(pi=[256, 256], vf=[256, 256]))
ZOO_PPO = {
    "HalfCheetah": dict(n_envs=1, policy_kwargs=_ZOO_TUNED_POLICY, settings=dict(
        batch_size=64, n_steps=512, gamma=0.98, learning_rate=2.0633e-05, ent_coef=0.000401762,
        clip_range=0.1, n_epochs=20, gae_lambda=0.92, max_grad_norm=0.8, vf_coef=0.58096)),
    "Hopper": dict(n_envs=1, policy_kwargs=_ZOO_TUNED_POLICY, settings=dict(
        batch_size=32, n_steps=512, gamma=0.999, learning_rate=9.80828e-05, ent_coef=0.00229519,
        clip_range=0.2, n_epochs=5, gae_lambda=0.99, max_grad_norm=0.7, vf_coef=0.835671)),
    "Walker2d": dict(n_envs=1, settings={}),
    "Ant": dict(n_envs=1, settings={}),
    "Swimmer": dict(n_envs=4, settings=dict(
        gamma=0.9999, n_steps=1024, batch_size=256, learning_rate=6e-4, gae_lambda=0.98)),
}


def sb3_worm(seed: int, algo: str, env_steps: int, eval_every_steps: int, eval_episodes: int, log,
             checkpoint: Checkpoint | None = None, env_id: str = "shoal/Worm-v0",
             gamma: float | None = None) -> None:
    """SB3 TD3, SAC or PPO with RL Zoo's Swimmer-v4 hyperparameters on shoal/Worm-v0
    (or ``env_id``, a Gymnasium MuJoCo env such as HalfCheetah-v5: TD3 and
    SAC keep the Swimmer entry, ``gamma`` replacing its discount, as the
    Zoo's other MuJoCo entries have 0.99; PPO takes the task's own entry,
    ``ZOO_PPO``).

    With ``checkpoint`` (TD3 and SAC), the model and its replay buffer are
    saved every ``checkpoint.every`` env steps, and a run that finds a saved
    one continues from it."""
    import torch
    from stable_baselines3 import PPO, SAC, TD3
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.noise import NormalActionNoise
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    torch.manual_seed(seed)
    eval_env = DummyVecEnv([lambda: gym.make(env_id)])
    if algo == "td3":
        # rl-baselines3-zoo hyperparams/td3.yml, Swimmer-v4 (mujoco defaults, gamma 0.9999).
        env = DummyVecEnv([lambda: Monitor(gym.make(env_id))])
        actions = env.action_space.shape[0]
        model = TD3(
            "MlpPolicy", env, learning_starts=10_000, learning_rate=1e-3, batch_size=256,
            train_freq=1, gradient_steps=1, gamma=gamma or 0.9999,
            action_noise=NormalActionNoise(np.zeros(actions), 0.1 * np.ones(actions)),
            policy_kwargs=dict(net_arch=[400, 300]), seed=seed, device="cpu",
        )
    elif algo == "sac":
        # rl-baselines3-zoo hyperparams/sac.yml, Swimmer-v4 (mujoco defaults,
        # gamma 0.999): SB3's SAC defaults otherwise (256 x 256, Adam 3e-4,
        # batch 256, tau 0.005, one gradient step per env step, ent_coef auto).
        env = DummyVecEnv([lambda: Monitor(gym.make(env_id))])
        model = SAC(
            "MlpPolicy", env, learning_starts=10_000, gamma=gamma or 0.999, seed=seed, device="cpu",
        )
    else:
        # rl-baselines3-zoo hyperparams/ppo.yml: the task's own entry
        # (`ZOO_PPO`), Swimmer's for shoal's worm; normalize, whose
        # discount RL Zoo sets to the entry's gamma.
        zoo = ZOO_PPO.get(env_id.split("/")[-1].split("-")[0], ZOO_PPO["Swimmer"])
        settings = dict(zoo["settings"])
        policy_kwargs = dict(zoo.get("policy_kwargs", {}))
        if "activation_fn" in policy_kwargs:
            policy_kwargs["activation_fn"] = {"relu": torch.nn.ReLU}[policy_kwargs["activation_fn"]]
        env = VecNormalize(
            DummyVecEnv([lambda: Monitor(gym.make(env_id)) for _ in range(zoo["n_envs"])]),
            gamma=settings.get("gamma", 0.99),
        )
        eval_env = VecNormalize(eval_env, training=False, norm_reward=False)
        model = PPO("MlpPolicy", env, seed=seed, device="cpu", policy_kwargs=policy_kwargs or None,
                    **settings)
    env.seed(seed)
    progress = None
    if checkpoint is not None:
        model, progress = checkpoint.restore(model, env)
    # Worm episodes are 1000 steps: evaluate every eval_every_steps.
    _learn(model, env, eval_env, None, eval_every_steps, eval_episodes, seed, log, env_steps=env_steps,
           checkpoint=checkpoint, progress=progress)


class Checkpoint:
    """An SB3 off-policy run saved as ``<dir>/model.zip``, ``replay.pkl`` and
    ``progress.json`` (env steps, episodes, last evaluation, wall time and
    the log's line count), written to a fresh directory and renamed over
    the old one, so a run stopped at any moment leaves the last whole save.

    A resumed SB3 run is not the uninterrupted one step for step: the
    env starts a new episode (saves fall on episode ends, as worm episodes
    are 1 000 steps and ``every`` is a multiple of 1 000), and torch's and
    numpy's generators are not saved. It is the same learner with the same
    buffer, optimiser moments and update count, as RL Zoo's
    ``--trained-agent`` continues one."""

    def __init__(self, directory: Path, every: int, log_path: Path):
        self.directory, self.every, self.log_path = directory, every, log_path

    def restore(self, model, env):
        """``(model, progress)``: the saved model and its progress, or
        ``model`` as given and ``None`` without a save."""
        old = self.directory.with_name(self.directory.name + ".old")
        if old.is_dir() and not self.directory.exists():
            old.rename(self.directory)  # stopped between save()'s two renames
        progress_file = self.directory / "progress.json"
        if not progress_file.is_file():
            self.log_path.write_text("")
            return model, None
        progress = json.loads(progress_file.read_text())
        model = type(model).load(self.directory / "model.zip", env=env, device="cpu")
        model.load_replay_buffer(self.directory / "replay.pkl")
        # The saved model holds the old env's last observation: without it,
        # learn() resets the new env (SB3 would step it unreset).
        model._last_obs = None
        # Evaluations logged after the save are logged again by the resumed run.
        lines = self.log_path.read_text().splitlines()[: progress["log_lines"]]
        self.log_path.write_text("".join(line + "\n" for line in lines))
        print(f"{self.directory}: resumed at {progress['env_steps']} env steps", flush=True)
        return model, progress

    def save(self, model, progress: dict) -> None:
        import shutil

        fresh = self.directory.with_name(self.directory.name + ".new")
        if fresh.exists():
            shutil.rmtree(fresh)
        fresh.mkdir(parents=True)
        model.save(fresh / "model.zip")
        model.save_replay_buffer(fresh / "replay.pkl")
        progress = dict(progress, log_lines=len(self.log_path.read_text().splitlines()))
        (fresh / "progress.json").write_text(json.dumps(progress))
        old = self.directory.with_name(self.directory.name + ".old")
        if self.directory.exists():
            self.directory.rename(old)
        fresh.rename(self.directory)
        if old.exists():
            shutil.rmtree(old)


def _learn(model, env, eval_env, episodes, eval_every, eval_episodes, seed, log, env_steps=None,
           checkpoint: Checkpoint | None = None, progress: dict | None = None) -> None:
    """Trains ``model``, evaluating its deterministic policy every ``eval_every``
    episodes (``episodes`` budget) or env steps (``env_steps`` budget);
    ``progress`` is a restored checkpoint's, to continue from."""
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import VecNormalize

    progress = progress or {"env_steps": 0, "episodes": 0, "evaluated_at": 0, "wall_s": 0.0}
    # wall_s counts the time spent training, across resumptions.
    start = time.perf_counter() - progress["wall_s"]

    def evaluate(env_steps_now: int, episodes_now: int) -> None:
        if isinstance(env, VecNormalize):
            eval_env.obs_rms = env.obs_rms
        returns, successes = [], []
        eval_env.seed(10_000 + seed)  # evaluation episodes of their own
        obs = eval_env.reset()
        while len(returns) < eval_episodes:
            ret, done = 0.0, False
            while not done:
                action, _ = model.predict(obs, deterministic=True)
                obs, reward, dones, infos = eval_env.step(action)
                ret += float(reward[0])
                done = bool(dones[0])
            returns.append(ret)
            successes.append(float(infos[0].get("is_success", np.nan)))
        log({
            "env_steps": env_steps_now,
            "episodes": episodes_now,
            "wall_s": time.perf_counter() - start,
            "eval_return_mean": statistics.fmean(returns),
            "eval_success_rate": None if np.isnan(successes).any() else statistics.fmean(successes),
        })

    class Every(BaseCallback):
        def __init__(self):
            super().__init__()
            self.episodes = progress["episodes"]
            self.evaluated_at = progress["evaluated_at"]
            self.saved_at = progress["env_steps"]

        def progress(self) -> int:
            return self.episodes if env_steps is None else self.num_timesteps

        def _on_rollout_start(self) -> None:
            # Here the last step is in the buffer and its gradient step
            # taken: a save holds whole steps.
            if checkpoint is not None and self.num_timesteps >= self.saved_at + checkpoint.every:
                self.saved_at = self.num_timesteps
                checkpoint.save(self.model, {
                    "env_steps": self.num_timesteps,
                    "episodes": self.episodes,
                    "evaluated_at": self.evaluated_at,
                    "wall_s": time.perf_counter() - start,
                })

        def _on_step(self) -> bool:
            self.episodes += int(np.sum(self.locals["dones"]))
            if self.progress() >= self.evaluated_at + eval_every:
                self.evaluated_at = self.progress()
                evaluate(self.num_timesteps, self.episodes)
            return env_steps is not None or self.episodes < episodes

    if progress.get("finished"):
        return
    callback = Every()
    # An episode budget ends through the callback (episodes may end early
    # on success, so 50 steps each is an upper bound).
    total = env_steps if env_steps is not None else episodes * 50
    # learn() adds num_timesteps to a budget it does not reset.
    model.learn(total_timesteps=total - progress["env_steps"], callback=callback,
                reset_num_timesteps=progress["env_steps"] == 0)
    if callback.progress() > callback.evaluated_at:
        evaluate(callback.num_timesteps, callback.episodes)
    if checkpoint is not None:
        checkpoint.save(model, {
            "env_steps": callback.num_timesteps,
            "episodes": callback.episodes,
            "evaluated_at": callback.progress(),
            "wall_s": time.perf_counter() - start,
            "finished": True,
        })


# ------------------------------------------------------------- shoal ----

def shoal_rl_run(shoal_bin: str, preset: str, seed: int, out: Path, sets: list[str], log,
                 resume: bool = False) -> None:
    """`shoal train preset` in a fresh run directory (or, with ``resume``,
    `shoal train --resume` of the one there); its eval records, converted."""
    run_dir = out / f"shoal-rl-run-{Path(preset).stem}-seed{seed}"
    summary = run_dir / "summary.json"
    if resume and summary.is_file() and not json.loads(summary.read_text()).get("interrupted"):
        cmd = None  # finished
    elif resume and (run_dir / "checkpoints" / "latest").exists():
        # The run's config holds the sets; a resumed shoal run repeats the
        # uninterrupted one exactly.
        cmd = [shoal_bin, "train", "--resume", str(run_dir), "--quiet"]
    else:
        if run_dir.exists():
            import shutil

            shutil.rmtree(run_dir)
        cmd = [shoal_bin, "train", preset, "--seed", str(seed), "--out", str(run_dir), "--quiet"]
        for s in sets:
            cmd += ["--set", s]
    if cmd is not None:
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["kind"] == "eval":
            log({
                "env_steps": record["env_steps"],
                "episodes": record["episode"],
                "wall_s": record["wall_s"],
                "eval_return_mean": record.get("eval/return_mean"),
                "eval_success_rate": record.get("eval/success_rate"),
            })


# ----------------------------------------------------------- summary ----

def worm_target(out: Path, seed: str) -> float:
    """The worm's target return for ``seed``: the best travelling-wave
    gait's return that a shoal run of that seed found, else a fallback."""
    for summary in sorted(out.glob(f"shoal-rl-run-worm*-seed{seed}/summary.json")):
        gait = json.loads(summary.read_text()).get("gait_return")
        if gait is not None:
            return float(gait)
    return WORM_FALLBACK_TARGET_RETURN


# The evaluation record's key each task is judged by.
METRIC = {"push": "eval_success_rate", "worm": "eval_return_mean"}


def load_runs(out: Path, task: str) -> list[tuple[str, str, list[dict]]]:
    """Every ``<runner>-seed<N>.jsonl`` under ``<out>/<task>`` with records,
    as (runner, seed, records), in file-name order."""
    runs = []
    for path in sorted((out / task).glob("*.jsonl")):
        records = [json.loads(l) for l in path.read_text().splitlines()]
        if records:
            runner, seed = path.stem.rsplit("-seed", 1)
            runs.append((runner, seed, records))
    return runs


def summarise(out: Path, task: str, runs: list[tuple[str, str, list[dict]]]) -> str:
    key = METRIC[task]
    rows = []
    for runner, seed, records in runs:
        last = records[-1]
        target = PUSH_TARGET_SUCCESS if task == "push" else worm_target(out, seed)
        hit = next((r for r in records if r[key] is not None and r[key] >= target), None)
        rows.append(
            f"| {runner}-seed{seed} | {last['env_steps']:,} | {last['wall_s']:.0f} | "
            f"{last['env_steps'] / last['wall_s']:.0f} | {last[key]:.2f} | {target:g} | "
            + (f"{hit['env_steps']:,} / {hit['wall_s']:.0f} s |" if hit else "not reached |")
        )
    head = (
        f"| run | env steps | wall s | env steps/s | final {'success' if task == 'push' else 'return'} "
        "| target | to target (steps / wall) |\n"
        "|---|---|---|---|---|---|---|"
    )
    return head + "\n" + "\n".join(rows) + "\n"


def plot(out: Path, task: str, runs: list[tuple[str, str, list[dict]]]) -> Path | None:
    """``<out>/<task>/curves.png``: each runner's evaluations against env
    steps and against wall time, one line per seed (needs matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no curves.png", file=sys.stderr)
        return None
    key = METRIC[task]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    colours: dict[str, str] = {}
    for runner, _seed, records in runs:
        first_of_runner = runner not in colours
        colour = colours.setdefault(runner, f"C{len(colours)}")
        ys = [r[key] for r in records]
        for ax, xs in zip(axes, ([r["env_steps"] for r in records], [r["wall_s"] / 60 for r in records])):
            ax.plot(xs, ys, color=colour, alpha=0.8, label=runner if first_of_runner else None)
    axes[0].set_xlabel("env steps")
    axes[1].set_xlabel("wall time, minutes (one core each)")
    axes[0].set_ylabel("eval success rate" if task == "push" else "eval return")
    for ax in axes:
        ax.grid(alpha=0.3)
        if task == "push":
            ax.axhline(PUSH_TARGET_SUCCESS, color="grey", linestyle=":", linewidth=1)
    if task == "push":
        axes[0].set_ylim(-0.02, 1.02)
    axes[0].legend()
    fig.suptitle(f"{task}: Stable-Baselines3 and shoal side by side, one line per seed")
    fig.tight_layout()
    path = out / task / "curves.png"
    fig.savefig(path, dpi=110)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", choices=["push", "worm"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--episodes", type=int, default=6000, help="push: training episodes (preset: 6000)")
    parser.add_argument("--eval-every", type=int, default=500, help="push: episodes between evaluations")
    parser.add_argument("--env-steps", type=int, default=1_000_000, help="worm: SB3 env steps")
    parser.add_argument("--env-id", default="shoal/Worm-v0",
                        help="worm: SB3's Gymnasium env instead (1 000-step episodes, e.g. HalfCheetah-v5; "
                             "shoal's side of it: benches/python/mujoco_table.py)")
    parser.add_argument("--gamma", type=float, help="worm, TD3 and SAC: SB3's discount instead of the Swimmer entry's")
    parser.add_argument("--worm-eval-every", type=int, default=20_000, help="worm: SB3 env steps between evaluations")
    parser.add_argument("--eval-episodes", type=int, default=20)
    parser.add_argument("--algo", choices=["ddpg", "td3", "sac", "ppo"],
                        help="SB3 algorithm: push ddpg (default) or sac; worm td3 (default), sac or ppo")
    parser.add_argument("--shoal-preset", default="worm-reinforce",
                        help="worm: the shoal preset (worm-reinforce, worm-ppo, worm-td3, worm-sac, ...)")
    parser.add_argument("--shoal-bin", help="release `shoal` binary; without it only SB3 runs")
    parser.add_argument("--shoal-set", action="append", default=[], help="extra --set for shoal train")
    parser.add_argument("--skip-sb3", action="store_true")
    parser.add_argument("--sb3-baselines-extras", action="store_true",
                        help="push: give SB3's DDPG baselines' critic-target clipping and action L2 penalty")
    parser.add_argument("--cores", type=int, nargs="+", help="CPU cores for both runners (default: all)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (default 1: shoal's learner uses one core; more threads "
                             "on a busy machine made SB3 many times slower)")
    parser.add_argument("--out", type=Path, default=Path("runs/sb3-vs-shoal"))
    parser.add_argument("--resume", action="store_true",
                        help="worm, TD3 and SAC: continue the runs in <out> from their last saves "
                             "(shoal's exactly, SB3's from its model and buffer); without it, runs start afresh")
    parser.add_argument("--checkpoint-every", type=int, default=50_000,
                        help="worm, TD3 and SAC: SB3 env steps between saves (a multiple of 1 000)")
    parser.add_argument("--report-only", action="store_true",
                        help="train nothing: rewrite summary.md and curves.png from <out>/<task>")
    args = parser.parse_args()
    algos = {"push": ("ddpg", "sac"), "worm": ("td3", "sac", "ppo")}[args.task]
    args.algo = args.algo or algos[0]
    if args.algo not in algos:
        parser.error(f"--algo {args.algo} is not offered for {args.task} (choose from {', '.join(algos)})")
    if args.sb3_baselines_extras and args.algo != "ddpg":
        parser.error("--sb3-baselines-extras applies to SB3's DDPG only")
    if args.resume and (args.task != "worm" or args.algo == "ppo"):
        parser.error("--resume applies to worm with --algo td3 or sac")
    if args.checkpoint_every <= 0 or args.checkpoint_every % 1000:
        parser.error("--checkpoint-every must be a positive multiple of 1000 (worm episodes are 1000 steps)")
    if args.env_id != "shoal/Worm-v0" and (args.task != "worm" or args.shoal_bin):
        parser.error("--env-id runs SB3 alone on the worm task; shoal's runs: benches/python/mujoco_table.py")
    if args.report_only:
        report(args.out, args.task)
        return

    if args.cores:
        os.sched_setaffinity(0, args.cores)  # inherited by shoal's process too
    import torch

    torch.set_num_threads(args.threads)
    (args.out / args.task).mkdir(parents=True, exist_ok=True)

    def logger(name: str, fresh: bool = True):
        path = args.out / args.task / f"{name}.jsonl"
        if fresh:
            path.write_text("")

        def log(record: dict) -> None:
            with path.open("a") as f:
                f.write(json.dumps(record) + "\n")
            print(f"{name}: {record}", flush=True)

        return log

    for seed in args.seeds:
        if args.task == "push":
            if not args.skip_sb3:
                name = f"sb3-{args.algo}-her" + ("-extras" if args.sb3_baselines_extras else "")
                sb3_push(seed, args.episodes, args.eval_every, args.eval_episodes, logger(f"{name}-seed{seed}"),
                         baselines_extras=args.sb3_baselines_extras, algo=args.algo)
            if args.shoal_bin:
                sets = [
                    f"train.episodes={args.episodes}",
                    f"train.eval_every={args.eval_every}",
                    f"train.eval_episodes={args.eval_episodes}",
                    f"train.final_eval_episodes={args.eval_episodes}",
                    f"train.checkpoint_every={args.episodes}",
                    # The preset relabels with `final` since 2026-11-24;
                    # SB3 is set up with `future`, k = 4, as OpenAI baselines.
                    'algo.her.strategy="future"',
                    *args.shoal_set,
                ]
                # TD3 and SAC + HER on push are experiment configs, trained by path.
                source = ("push-ddpg-her" if args.algo == "ddpg" else str(
                    Path(__file__).resolve().parents[2] / "docs" / "experiments" / "configs"
                    / f"push-{args.algo}-her.toml"))
                shoal_rl_run(args.shoal_bin, source, seed, args.out, sets,
                             logger(f"shoal-{args.algo}-her-seed{seed}"))
        else:
            if not args.skip_sb3:
                env_name = "" if args.env_id == "shoal/Worm-v0" else f"{args.env_id}-"
                name = f"sb3-{args.algo}-{env_name}seed{seed}"
                checkpoint = None
                if args.algo != "ppo":
                    checkpoint = Checkpoint(args.out / args.task / f"{name}.save", args.checkpoint_every,
                                            args.out / args.task / f"{name}.jsonl")
                    if not args.resume and checkpoint.directory.exists():
                        import shutil

                        shutil.rmtree(checkpoint.directory)
                sb3_worm(seed, args.algo, args.env_steps, args.worm_eval_every, args.eval_episodes,
                         logger(name, fresh=checkpoint is None), checkpoint=checkpoint,
                         env_id=args.env_id, gamma=args.gamma)
            if args.shoal_bin:
                # Worm episodes are 1 000 steps: the same budget and
                # evaluation points as SB3's, in episodes.
                sets = [
                    f"train.episodes={args.env_steps // 1000}",
                    f"train.eval_every={max(1, args.worm_eval_every // 1000)}",
                    f"train.eval_episodes={args.eval_episodes}",
                    *args.shoal_set,
                ]
                runner = args.shoal_preset.removeprefix("worm-")
                shoal_rl_run(args.shoal_bin, args.shoal_preset, seed, args.out, sets,
                             logger(f"shoal-{runner}-seed{seed}"), resume=args.resume)

    report(args.out, args.task)


def report(out: Path, task: str) -> None:
    runs = load_runs(out, task)
    if not runs:
        sys.exit(f"{out / task}: no runs to report")
    table = summarise(out, task, runs)
    (out / task / "summary.md").write_text(table)
    print(table)
    plot(out, task, runs)


if __name__ == "__main__":
    sys.exit(main())
