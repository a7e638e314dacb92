#!/usr/bin/env python3
"""ppo_cleanrl.py — CleanRL's PPO (ppo.py, discrete actions) in PyTorch, unchanged in its
algorithm, on foxhunt's C trading environment through foxhunt.VectorEnv (issue 21).

What differs from CleanRL's file is only the plumbing: the environment is
``foxhunt.VectorEnv`` (N episodes stepped by the C env; same-step autoreset, so
``next_obs`` after a done is already the next episode's, as CleanRL assumes), the
networks are foxhunt.torch's Actor and Critic (the design note's layer names, so the
result saves as a foxhunt checkpoint), and at the end the actor is written as an
actor-only checkpoint and backtested with foxhunt.eval (the test split, against
buy-and-hold), which is what `foxhunt eval` would print.

usage: FOXHUNT_LIB=build/libfoxhunt.so python3 examples/python/ppo_cleanrl.py \\
           [--total-timesteps 500000] [--num-envs 64] [--num-steps 128] [--csv FILE] \\
           [--out ppo_actor.safetensors]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
from torch.distributions.categorical import Categorical

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
import foxhunt  # noqa: E402
import foxhunt.torch as ft  # noqa: E402


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description="CleanRL PPO on foxhunt.VectorEnv")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--csv", default=None, help="OHLCV CSV (default: the synthetic market)")
    p.add_argument("--total-timesteps", type=int, default=500_000)
    p.add_argument("--learning-rate", type=float, default=2.5e-4)
    p.add_argument("--num-envs", type=int, default=64)
    p.add_argument("--num-steps", type=int, default=128)
    p.add_argument("--anneal-lr", type=int, default=1)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--gae-lambda", type=float, default=0.95)
    p.add_argument("--num-minibatches", type=int, default=4)
    p.add_argument("--update-epochs", type=int, default=4)
    p.add_argument("--norm-adv", type=int, default=1)
    p.add_argument("--clip-coef", type=float, default=0.2)
    p.add_argument("--clip-vloss", type=int, default=1)
    p.add_argument("--ent-coef", type=float, default=0.01)
    p.add_argument("--vf-coef", type=float, default=0.5)
    p.add_argument("--max-grad-norm", type=float, default=0.5)
    p.add_argument("--target-kl", type=float, default=None)
    p.add_argument("--out", default="ppo_actor.safetensors",
                   help="actor-only checkpoint written at the end")
    a = p.parse_args()
    a.batch_size = a.num_envs * a.num_steps
    a.minibatch_size = a.batch_size // a.num_minibatches
    a.num_iterations = a.total_timesteps // a.batch_size
    return a


def layer_init(layer: nn.Linear, std: float = np.sqrt(2), bias_const: float = 0.0) -> nn.Linear:
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    """CleanRL's agent with foxhunt's shapes: actor 54-128-64-45, critic
    54-512-384-256-128-64-1, ReLU (foxhunt's layers, so the weights save as a
    checkpoint); CleanRL's orthogonal init (output gains 0.01 and 1)."""

    def __init__(self) -> None:
        super().__init__()
        self.actor, self.critic = ft.Actor(), ft.Critic()
        for net, out_std in ((self.actor, 0.01), (self.critic, 1.0)):
            layers = [m for m in net.modules() if isinstance(m, nn.Linear)]
            for layer in layers[:-1]:
                layer_init(layer)
            layer_init(layers[-1], std=out_std)

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(x)

    def get_action_and_value(self, x: torch.Tensor, action: torch.Tensor | None = None):
        logits = self.actor(x)
        probs = Categorical(logits=logits)
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(x)


def main() -> None:
    args = parse_args()
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    market = foxhunt.Market(args.csv)
    envs = foxhunt.VectorEnv(args.num_envs, market=market, seed=args.seed)
    assert isinstance(envs.single_action_space, gym.spaces.Discrete)
    agent = Agent().to(device)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    obs_shape = envs.single_observation_space.shape
    obs = torch.zeros((args.num_steps, args.num_envs) + obs_shape).to(device)
    actions = torch.zeros((args.num_steps, args.num_envs), dtype=torch.long).to(device)
    logprobs = torch.zeros((args.num_steps, args.num_envs)).to(device)
    rewards = torch.zeros((args.num_steps, args.num_envs)).to(device)
    dones = torch.zeros((args.num_steps, args.num_envs)).to(device)
    values = torch.zeros((args.num_steps, args.num_envs)).to(device)

    global_step = 0
    start_time = time.time()
    next_obs, _ = envs.reset(seed=args.seed)
    next_obs = torch.Tensor(next_obs).to(device)
    next_done = torch.zeros(args.num_envs).to(device)
    returns_seen: list[float] = []

    for iteration in range(1, args.num_iterations + 1):
        if args.anneal_lr:
            frac = 1.0 - (iteration - 1.0) / args.num_iterations
            optimizer.param_groups[0]["lr"] = frac * args.learning_rate

        for step in range(args.num_steps):
            global_step += args.num_envs
            obs[step] = next_obs
            dones[step] = next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs)
                values[step] = value.flatten()
            actions[step] = action
            logprobs[step] = logprob
            next_obs_np, reward, terminations, truncations, infos = envs.step(action.cpu().numpy())
            next_done_np = np.logical_or(terminations, truncations)
            rewards[step] = torch.tensor(reward).to(device).view(-1)
            next_obs = torch.Tensor(next_obs_np).to(device)
            next_done = torch.Tensor(next_done_np).to(device)
            if "final_info" in infos:  # the C env's log of each finished episode
                fi = infos["final_info"]
                returns_seen += fi["episode_return"][infos["_final_info"]].tolist()

        # bootstrap value if not done (CleanRL: GAE over the rollout)
        with torch.no_grad():
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages = torch.zeros_like(rewards).to(device)
            lastgaelam = 0
            for t in reversed(range(args.num_steps)):
                if t == args.num_steps - 1:
                    nextnonterminal = 1.0 - next_done
                    nextvalues = next_value
                else:
                    nextnonterminal = 1.0 - dones[t + 1]
                    nextvalues = values[t + 1]
                delta = rewards[t] + args.gamma * nextvalues * nextnonterminal - values[t]
                advantages[t] = lastgaelam = (delta + args.gamma * args.gae_lambda *
                                              nextnonterminal * lastgaelam)
            returns = advantages + values

        b_obs = obs.reshape((-1,) + obs_shape)
        b_logprobs = logprobs.reshape(-1)
        b_actions = actions.reshape(-1)
        b_advantages = advantages.reshape(-1)
        b_returns = returns.reshape(-1)
        b_values = values.reshape(-1)

        b_inds = np.arange(args.batch_size)
        clipfracs = []
        for epoch in range(args.update_epochs):
            np.random.shuffle(b_inds)
            for start in range(0, args.batch_size, args.minibatch_size):
                mb_inds = b_inds[start:start + args.minibatch_size]
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(
                    b_obs[mb_inds], b_actions.long()[mb_inds])
                logratio = newlogprob - b_logprobs[mb_inds]
                ratio = logratio.exp()
                with torch.no_grad():
                    old_approx_kl = (-logratio).mean()
                    approx_kl = ((ratio - 1) - logratio).mean()
                    clipfracs += [((ratio - 1.0).abs() > args.clip_coef).float().mean().item()]
                mb_advantages = b_advantages[mb_inds]
                if args.norm_adv:
                    mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)
                pg_loss1 = -mb_advantages * ratio
                pg_loss2 = -mb_advantages * torch.clamp(ratio, 1 - args.clip_coef, 1 + args.clip_coef)
                pg_loss = torch.max(pg_loss1, pg_loss2).mean()
                newvalue = newvalue.view(-1)
                if args.clip_vloss:
                    v_loss_unclipped = (newvalue - b_returns[mb_inds]) ** 2
                    v_clipped = b_values[mb_inds] + torch.clamp(
                        newvalue - b_values[mb_inds], -args.clip_coef, args.clip_coef)
                    v_loss_clipped = (v_clipped - b_returns[mb_inds]) ** 2
                    v_loss = 0.5 * torch.max(v_loss_unclipped, v_loss_clipped).mean()
                else:
                    v_loss = 0.5 * ((newvalue - b_returns[mb_inds]) ** 2).mean()
                entropy_loss = entropy.mean()
                loss = pg_loss - args.ent_coef * entropy_loss + v_loss * args.vf_coef
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()
            if args.target_kl is not None and approx_kl > args.target_kl:
                break

        y_pred, y_true = b_values.cpu().numpy(), b_returns.cpu().numpy()
        var_y = np.var(y_true)
        explained_var = np.nan if var_y == 0 else 1 - np.var(y_true - y_pred) / var_y
        recent = np.mean(returns_seen[-100:]) if returns_seen else float("nan")
        print(f"iter {iteration}/{args.num_iterations} step {global_step} "
              f"SPS {int(global_step / (time.time() - start_time))} "
              f"return(100) {recent:.3f} entropy {entropy_loss.item():.3f} "
              f"kl {approx_kl.item():.4f} clip {np.mean(clipfracs):.3f} ev {explained_var:.2f}")
    envs.close()

    # the actor as a foxhunt actor-only checkpoint: its weights, the market's
    # normalisation and configuration (from which foxhunt rebuilds the data)
    tensors = {k: v.detach().cpu().numpy() for k, v in agent.actor.state_dict().items()}
    mean, std = market.norm
    tensors["norm.mean"], tensors["norm.std"] = mean, std
    ck = foxhunt.Checkpoint(tensors, {"kind": "actor", "config": market.config.to_json()})
    ck.save(args.out)
    result = foxhunt.eval(args.out)
    print(f"wrote {args.out}; test split, {len(result['time'])} bars:")
    for p in result.policies:
        m = result.metrics[p]
        print(f"  {p:13s} Sharpe {m['sharpe']:6.2f} +- {m['sharpe_se']:.2f}  "
              f"return {100 * m['cumulative_return']:7.2f}%")
    print(result.verdict)


if __name__ == "__main__":
    main()
