"""SB3's TD3 on a Gymnasium MuJoCo task with RL Zoo's MuJoCo settings,
traced as shoal's TD3 logs itself, to set the two side by side.

    python benches/python/sb3_td3_trace.py SEED STEPS OUT_JSONL [ENV_ID]

Every 1 000 env steps after the 10 000 random ones it writes one JSON
line: the first critic's mean Q(s, a) on a replay batch of 256 (shoal's
`charts/q_mean`), the share of the actor's outputs on that batch within
1 % of a bound (`|a| >= 0.98`, shoal's `charts/actor_at_bound`), the
critic's squared error against its TD3 target, and the batch's mean
reward; every 5 000 steps also the mean return of 5 deterministic
evaluation episodes. PyTorch runs on one thread, so one core each.
"""

import json
import sys

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from stable_baselines3 import TD3
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.noise import NormalActionNoise
from stable_baselines3.common.vec_env import DummyVecEnv

AT_BOUND = 0.98
GAMMA = 0.99


def main() -> None:
    seed, steps, out_path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    env_id = sys.argv[4] if len(sys.argv) > 4 else "Hopper-v5"
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    env = DummyVecEnv([lambda: Monitor(gym.make(env_id))])
    actions = env.action_space.shape[0]
    # rl-baselines3-zoo hyperparams/td3.yml, the MuJoCo defaults.
    model = TD3("MlpPolicy", env, learning_starts=10_000, learning_rate=1e-3, batch_size=256,
                train_freq=1, gradient_steps=1, gamma=GAMMA,
                action_noise=NormalActionNoise(np.zeros(actions), 0.1 * np.ones(actions)),
                policy_kwargs=dict(net_arch=[400, 300]), seed=seed, device="cpu")
    env.seed(seed)
    eval_env = gym.make(env_id)
    out = open(out_path, "w")

    def evaluate(episodes: int = 5) -> float:
        returns = []
        for i in range(episodes):
            obs, _ = eval_env.reset(seed=10_000 + seed + i)
            done, total = False, 0.0
            while not done:
                action, _ = model.predict(obs, deterministic=True)
                obs, reward, terminated, truncated, _ = eval_env.step(action)
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
        return float(np.mean(returns))

    class Trace(BaseCallback):
        def _on_step(self) -> bool:
            t = self.num_timesteps
            if t % 1000 or t <= 10_000:
                return True
            batch = self.model.replay_buffer.sample(256)
            with torch.no_grad():
                q = self.model.critic.q1_forward(batch.observations, batch.actions)
                pi = self.model.actor(batch.observations)
                noise = (torch.randn_like(batch.actions) * 0.2).clamp(-0.5, 0.5)
                next_actions = (self.model.actor_target(batch.next_observations) + noise).clamp(-1, 1)
                next_q = torch.min(*self.model.critic_target(batch.next_observations, next_actions))
                target = batch.rewards + (1 - batch.dones) * GAMMA * next_q
            record = {
                "env_steps": t,
                "q_mean": q.mean().item(),
                "actor_at_bound": (pi.abs() >= AT_BOUND).float().mean().item(),
                "critic_mse": F.mse_loss(q, target).item(),
                "reward_mean": batch.rewards.mean().item(),
            }
            if t % 5000 == 0:
                record["eval_return"] = evaluate()
            out.write(json.dumps(record) + "\n")
            out.flush()
            return True

    model.learn(total_timesteps=steps, callback=Trace())


if __name__ == "__main__":
    main()
