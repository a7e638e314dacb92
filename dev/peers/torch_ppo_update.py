#!/usr/bin/env python3
"""torch_ppo_update.py — the PyTorch peer of foxhunt's PPO update (issue 35).

Times, on one CUDA GPU, the PPO update alone (no collection) over a random batch of the
right shapes, written as a PyTorch user would write it at its fastest: foxhunt's two
networks, CleanRL's loss, and four formulations of the minibatch step, each timed:

  eager             the step as plain PyTorch, fused Adam
  compiled          the loss (gather, both forwards, the loss; AOTAutograd compiles its
                    backward) through torch.compile
  graphed           each minibatch step (gather, forward, loss, backward, clip, Adam with
                    capturable=True, fused=True) captured once as a CUDA graph and replayed
  compiled+graphed  both: the target formulation of issue 35

It prints a line per formulation and, per configuration, the fastest one: the update's
median milliseconds (CUDA events around all epochs) and TFLOP/s under the FLOP model of
`foxhunt bench --train` (6 x (actor + critic MACs) x epochs x samples). What it does
per minibatch is foxhunt's CPU reference update (src/rl/ppo_update.c, src/nn/ppo_loss.c)
at its defaults (src/rl/train_config.c): per epoch a random permutation cut into
minibatches; log-softmax, the taken action's log-prob, entropy, ratio, advantages
normalised per minibatch (unbiased std + 1e-8), clipped surrogate (0.2), CleanRL's
clipped value loss x vf_coef 0.5, entropy x 0.01, one loss, one backward, the global
gradient norm of actor + critic clipped to 0.5, Adam (lr 3e-4, eps 1e-5). foxhunt keeps
an Adam per network with the same settings and step count; one torch Adam over both
parameter lists is the same arithmetic. Not timed here: foxhunt's curiosity fit (one
epoch of a 35-64-32 MLP, included in foxhunt's update time) and its non-finite checks.

Before timing, a float64 self-check (fails loudly): the loss and its statistics for one
minibatch against a numpy re-computation of CleanRL's formulas (ppo_reference.py), and
two clipped Adam steps against torch.optim.Adam's single-tensor reference and a numpy
Adam; each formulation's first three steps are then compared with the eager steps from
the same weights. Every stage fails soft: an error is printed and the next stage runs.

  python3 dev/peers/torch_ppo_update.py [--configs spec,throughput] [--repeats 5]
      [--formulations eager,compiled,graphed,compiled+graphed] [--bf16] [--json OUT]
  python3 dev/peers/torch_ppo_update.py --self-test-numpy   # no torch, no GPU needed
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import json
import math
import os
import statistics
import sys
import time
import traceback

try:
    import numpy as np
except ImportError:  # ctest's peer_reference: skipped (77), not failed, without numpy
    print("SKIP: numpy is not installed (scripts/setup.sh installs it)")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ppo_reference import (  # noqa: E402: beside this file
    ACTOR_DIMS, ACTOR_OUTPUT_GAIN, CRITIC_DIMS, CRITIC_OUTPUT_GAIN, HIDDEN_GAIN, N_ACTIONS,
    STAT_NAMES, STATE_DIM, Hyper, np_clip_adam_step, np_mlp_forward, np_ppo_loss,
    self_test_numpy, update_flop)


@dataclasses.dataclass(frozen=True)
class Config:
    name: str
    episodes: int
    steps: int
    epochs: int
    minibatch: int
    precision: str  # fp32 or tf32 (bf16 rows are --bf16's, on top of the configuration)

    @property
    def samples(self) -> int:
        return self.episodes * self.steps

    @property
    def minibatches(self) -> int:
        return self.samples // self.minibatch

    def describe(self) -> str:
        return (f"N {self.episodes} x L {self.steps} ({self.samples:,} samples), "
                f"{self.epochs} epochs x minibatch {self.minibatch}, {self.precision}")


# The two of issue 35, each in the other precision, and a tiny one for smoke tests (any
# device: `--device cpu --configs tiny --compile-mode default`).
CONFIGS = {
    "spec": Config("spec", 128, 500, 10, 512, "fp32"),
    "spec-tf32": Config("spec-tf32", 128, 500, 10, 512, "tf32"),
    "throughput": Config("throughput", 4096, 128, 2, 16384, "tf32"),
    "throughput-fp32": Config("throughput-fp32", 4096, 128, 2, 16384, "fp32"),
    "tiny": Config("tiny", 8, 64, 2, 128, "fp32"),
}
FORMULATIONS = ("eager", "compiled", "graphed", "compiled+graphed")
# Each formulation's first steps against eager's from the same weights, as relative norms
# of differences: the first step's (clipped) gradient, and the parameters' change after
# PARITY_STEPS steps. A wrong step (a lost gradient, no update) is off by ~1. Rounding
# (reordered sums, TF32, bf16) is amplified where the batch's terms cancel in a gradient,
# and Adam's update of an element with a gradient near zero flips sign with it: on the
# CPU's tiny configuration bf16 against fp32 eager gave 0.086 (gradient) and 0.22
# (update), hence its loose bounds, which a lost actor gradient (about 0.2 of the update's
# norm) would pass: the bf16 rows are checked coarsely.
PARITY_TOL = {"fp32": (1e-3, 1e-2), "tf32": (5e-2, 0.25), "bf16": (0.3, 0.6)}  # (grad, update)
PARITY_STEPS = 3



# ---- the torch side (imported only when timing or checking) ----

def torch_modules():
    import torch
    from torch import nn

    def build_net(dims, out_gain, dtype, device):
        """foxhunt's MLP: Linear layers, ReLU between, orthogonal init (CleanRL's gains)."""
        layers = []
        for i in range(len(dims) - 1):
            lin = nn.Linear(dims[i], dims[i + 1], dtype=dtype, device=device)
            last = i == len(dims) - 2
            nn.init.orthogonal_(lin.weight, out_gain if last else HIDDEN_GAIN)
            nn.init.zeros_(lin.bias)
            layers.append(lin)
            if not last:
                layers.append(nn.ReLU())
        return nn.Sequential(*layers)

    class PPOLoss(nn.Module):
        """CleanRL's loss of one minibatch, gathered by index from the whole batch:
        returns the loss and its statistics (STAT_NAMES order), no host sync."""

        def __init__(self, actor, critic, hp: Hyper, bf16: bool):
            super().__init__()
            self.actor, self.critic, self.hp, self.bf16 = actor, critic, hp, bf16

        def forward(self, idx, b_obs, b_actions, b_logp, b_adv, b_returns, b_values):
            hp = self.hp
            obs = b_obs.index_select(0, idx)
            if self.bf16:  # bf16 matmuls, fp32 loss; no weight-cast cache (CUDA graphs)
                with torch.autocast(obs.device.type, dtype=torch.bfloat16, cache_enabled=False):
                    logits, values = self.actor(obs), self.critic(obs)
                logits, values = logits.float(), values.float()
            else:
                logits, values = self.actor(obs), self.critic(obs)
            values = values.view(-1)
            actions = b_actions.index_select(0, idx)
            old_logp = b_logp.index_select(0, idx)
            adv = b_adv.index_select(0, idx)
            returns = b_returns.index_select(0, idx)
            old_values = b_values.index_select(0, idx)
            # Categorical(logits=...) by hand: its argument validation syncs with the host
            logp = torch.log_softmax(logits, dim=-1)
            newlogp = logp.gather(1, actions.view(-1, 1)).view(-1)
            entropy = -(logp.exp() * logp).sum(-1)
            logratio = newlogp - old_logp
            ratio = logratio.exp()
            if hp.norm_adv:
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)
            pg_loss = torch.max(-adv * ratio,
                                -adv * torch.clamp(ratio, 1 - hp.clip, 1 + hp.clip)).mean()
            if hp.clip_vloss:
                unclipped = (values - returns) ** 2
                v_clipped = old_values + torch.clamp(values - old_values, -hp.clip, hp.clip)
                v_loss = 0.5 * torch.max(unclipped, (v_clipped - returns) ** 2).mean()
            else:
                v_loss = 0.5 * ((values - returns) ** 2).mean()
            ent = entropy.mean()
            loss = pg_loss - hp.ent_coef * ent + hp.vf_coef * v_loss
            with torch.no_grad():
                approx_kl = ((ratio - 1) - logratio).mean()
                old_approx_kl = (-logratio).mean()
                clipfrac = ((ratio - 1).abs() > hp.clip).to(logits.dtype).mean()
                stats = torch.stack([pg_loss.detach(), v_loss.detach(), ent.detach(), approx_kl,
                                     old_approx_kl, clipfrac, loss.detach()])
            return loss, stats

    return torch, build_net, PPOLoss


def set_matmul_precision(torch, precision: str) -> None:
    """fp32: IEEE matmuls; tf32 (and bf16 rows' fp32 parts): TF32. Only the legacy setter:
    mixing it with torch.backends.*.fp32_precision makes some versions' Inductor raise."""
    torch.set_float32_matmul_precision("highest" if precision == "fp32" else "high")


class Stepper:
    """One formulation's networks, optimiser and minibatch step."""

    def __init__(self, torch, build_net, PPOLoss, batch, init_params, formulation: str,
                 minibatch: int, hp: Hyper, bf16: bool, compile_mode: str):
        self.torch, self.hp, self.formulation, self.batch = torch, hp, formulation, batch
        device = batch[0].device
        self.actor = build_net(ACTOR_DIMS, ACTOR_OUTPUT_GAIN, torch.float32, device)
        self.critic = build_net(CRITIC_DIMS, CRITIC_OUTPUT_GAIN, torch.float32, device)
        self.params = list(self.actor.parameters()) + list(self.critic.parameters())
        self.load(init_params)
        self.graphed = formulation.endswith("graphed")
        self.opt = torch.optim.Adam(self.params, lr=hp.lr, betas=hp.betas, eps=hp.adam_eps,
                                    fused=True, capturable=self.graphed)
        module = PPOLoss(self.actor, self.critic, hp, bf16)
        if formulation.startswith("compiled"):
            torch._dynamo.reset()  # nothing compiled under another precision is reused
            module = torch.compile(module, mode=compile_mode, dynamic=False)
        self.loss_fn = module
        # the minibatch's indices: one static buffer for every formulation, so that
        # the compiled function and the graph always see the same tensor
        self.idx = torch.zeros(minibatch, dtype=torch.int64, device=device)
        self.sums = torch.zeros(len(STAT_NAMES) + 1, dtype=torch.float32, device=device)
        self.graph = None

    def load(self, init_params) -> None:
        with self.torch.no_grad():
            for p, p0 in zip(self.params, init_params):
                p.copy_(p0)

    def reset(self, init_params) -> None:
        """Back to the initial weights and a fresh Adam, in place (a graph keeps its
        addresses)."""
        self.load(init_params)
        for state in self.opt.state.values():
            for value in state.values():
                if self.torch.is_tensor(value):
                    value.zero_()
        self.sums.zero_()

    def body(self) -> None:
        """Loss, backward, clip, Adam, the statistics summed on the device."""
        torch = self.torch
        loss, stats = self.loss_fn(self.idx, *self.batch)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(self.params, self.hp.max_grad_norm, foreach=True)
        self.sums.add_(torch.cat([stats.float(), norm.float().view(1)]))
        self.opt.step()

    def setup(self, warmup_steps: int = 3) -> None:
        """Compiles (first calls) and captures: torch.cuda.graph's whole-network recipe,
        warm-up on a side stream, grads set to None so the graph allocates them."""
        torch = self.torch
        n, on_gpu = self.batch[0].shape[0], self.idx.device.type == "cuda"
        if self.graphed and not on_gpu:
            raise RuntimeError("CUDA graphs need a CUDA device")
        gen = torch.Generator(device=self.idx.device)
        gen.manual_seed(12345)
        side = torch.cuda.Stream() if on_gpu else None
        if on_gpu:
            side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side) if on_gpu else contextlib.nullcontext():
            for _ in range(warmup_steps):
                self.idx.copy_(torch.randperm(n, device=self.idx.device, generator=gen)[
                    :self.idx.numel()])
                self.opt.zero_grad(set_to_none=True)
                self.body()
        if on_gpu:
            torch.cuda.current_stream().wait_stream(side)
            torch.cuda.synchronize()
        if self.graphed:
            self.opt.zero_grad(set_to_none=True)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.body()
            torch.cuda.synchronize()

    def step(self, indices) -> None:
        self.idx.copy_(indices)
        if self.graph is not None:
            self.graph.replay()
        else:
            self.opt.zero_grad(set_to_none=True)
            self.body()

    def update(self, cfg: Config, gen) -> None:
        """One PPO update: per epoch a permutation, cut into minibatches."""
        torch = self.torch
        n, m = cfg.samples, cfg.minibatch
        for _ in range(cfg.epochs):
            perm = torch.randperm(n, device=self.idx.device, generator=gen)
            for start in range(0, n, m):
                self.step(perm[start:start + m])

    def flat_params(self):
        return self.torch.cat([p.detach().reshape(-1).double() for p in self.params])

    def flat_grads(self):
        """The last step's clipped gradient (a graph's own buffers when graphed)."""
        return self.torch.cat([p.grad.detach().reshape(-1).double() for p in self.params])


def make_batch(torch, build_net, cfg: Config, seed: int, device):
    """A random batch with foxhunt's shapes; old log-probs and values are the initial
    networks' (so the ratios start near 1, as in training). Returns (batch, init_params)."""
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    torch.manual_seed(seed)
    actor = build_net(ACTOR_DIMS, ACTOR_OUTPUT_GAIN, torch.float32, device)
    critic = build_net(CRITIC_DIMS, CRITIC_OUTPUT_GAIN, torch.float32, device)
    n = cfg.samples
    obs = torch.randn(n, STATE_DIM, device=device, generator=gen)
    actions = torch.randint(0, N_ACTIONS, (n,), device=device, generator=gen)
    adv = torch.randn(n, device=device, generator=gen)
    returns = torch.randn(n, device=device, generator=gen)
    logp = torch.empty(n, device=device)
    values = torch.empty(n, device=device)
    with torch.no_grad():
        for s in range(0, n, 65536):
            e = min(n, s + 65536)
            lp = torch.log_softmax(actor(obs[s:e]), dim=-1)
            logp[s:e] = lp.gather(1, actions[s:e].view(-1, 1)).view(-1)
            values[s:e] = critic(obs[s:e]).view(-1)
    init = [p.detach().clone() for p in list(actor.parameters()) + list(critic.parameters())]
    return (obs, actions, logp, adv, returns, values), init


# ---- the float64 self-check of the torch code ----

def torch_self_check(hp: Hyper) -> list:
    """The script's loss and clipped Adam step in float64 against the numpy references and
    torch.optim.Adam's single-tensor reference; returns the failures (empty: passed)."""
    torch, build_net, PPOLoss = torch_modules()
    import copy
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    fails = []

    def check(what, err, tol):
        ok = err <= tol
        print(f"  {'ok  ' if ok else 'FAIL'} {what}: relative error {err:.3g} (tolerance {tol:g})")
        if not ok:
            fails.append(what)

    f64 = torch.float64
    torch.manual_seed(7)
    actor = build_net(ACTOR_DIMS, ACTOR_OUTPUT_GAIN, f64, device)
    critic = build_net(CRITIC_DIMS, CRITIC_OUTPUT_GAIN, f64, device)
    n, m = 96, 32
    gen = torch.Generator(device=device)
    gen.manual_seed(7)
    obs = torch.randn(n, STATE_DIM, dtype=f64, device=device, generator=gen)
    actions = torch.randint(0, N_ACTIONS, (n,), device=device, generator=gen)
    # old log-probs off the current ones by up to +-0.5, so that some ratios are clipped
    with torch.no_grad():
        lp = torch.log_softmax(actor(obs), -1).gather(1, actions.view(-1, 1)).view(-1)
        old_logp = lp + (torch.rand(n, dtype=f64, device=device, generator=gen) - 0.5)
        old_values = critic(obs).view(-1) + 0.5 * torch.randn(n, dtype=f64, device=device,
                                                                generator=gen)
    adv = torch.randn(n, dtype=f64, device=device, generator=gen)
    returns = torch.randn(n, dtype=f64, device=device, generator=gen)
    batch = (obs, actions, old_logp, adv, returns, old_values)
    idx = torch.randperm(n, device=device, generator=gen)[:m]
    loss_mod = PPOLoss(actor, critic, hp, bf16=False)
    loss, stats = loss_mod(idx, *batch)

    print(f"self-check (torch {torch.__version__}, float64 on {device}): the loss of one minibatch")
    np_b = [t.detach().cpu().numpy() for t in batch]
    sel = idx.cpu().numpy()

    def layers_of(net):
        lins = [mod for mod in net if isinstance(mod, torch.nn.Linear)]
        return [(lin.weight.detach().cpu().numpy(), lin.bias.detach().cpu().numpy())
                for lin in lins]

    o = np_b[0][sel]
    ref = np_ppo_loss(np_mlp_forward(layers_of(actor), o),
                      np_mlp_forward(layers_of(critic), o)[:, 0], np_b[1][sel], np_b[2][sel],
                      np_b[3][sel], np_b[4][sel], np_b[5][sel], hp)
    got = stats.detach().cpu().numpy()
    for i, name in enumerate(STAT_NAMES):
        check(f"{name} ({got[i]:.6g})", abs(got[i] - ref[name]) / max(abs(ref[name]), 1e-12),
              1e-6)
    check("loss returned", abs(loss.item() - ref["loss"]) / max(abs(ref["loss"]), 1e-12), 1e-6)
    if not 0 < ref["clipfrac"] < 1:
        print(f"  FAIL the check's minibatch clips {ref['clipfrac']:.2f} of its ratios: "
              "it should exercise both branches")
        fails.append("clipfrac coverage")

    print("self-check: two clipped Adam steps (fused) against torch.optim.Adam (single tensor) "
          "and numpy")
    params = list(actor.parameters()) + list(critic.parameters())
    ref_actor, ref_critic = copy.deepcopy(actor), copy.deepcopy(critic)
    ref_params = list(ref_actor.parameters()) + list(ref_critic.parameters())
    np_params = [p.detach().cpu().numpy().copy() for p in params]
    np_m = [np.zeros_like(p) for p in np_params]
    np_v = [np.zeros_like(p) for p in np_params]
    before = torch.cat([p.detach().reshape(-1) for p in params])
    try:
        opt = torch.optim.Adam(params, lr=hp.lr, betas=hp.betas, eps=hp.adam_eps, fused=True)
    except (RuntimeError, ValueError) as e:  # fused Adam on a CPU-only old torch
        print(f"  (fused Adam not available on {device}: {e}; the check uses foreach)")
        opt = torch.optim.Adam(params, lr=hp.lr, betas=hp.betas, eps=hp.adam_eps, foreach=True)
    ref_opt = torch.optim.Adam(ref_params, lr=hp.lr, betas=hp.betas, eps=hp.adam_eps,
                               foreach=False, fused=False)
    ref_mod = PPOLoss(ref_actor, ref_critic, hp, bf16=False)
    max_norm = None
    for t in (1, 2):
        idx_t = idx if t == 1 else torch.randperm(n, device=device, generator=gen)[:m]
        opt.zero_grad(set_to_none=True)
        loss_mod(idx_t, *batch)[0].backward()
        if max_norm is None:  # a bound that the first step's norm exceeds, so clipping acts
            g = torch.cat([p.grad.reshape(-1) for p in params])
            max_norm = 0.25 * g.norm().item()
        np_grads = [p.grad.detach().cpu().numpy().copy() for p in params]  # before the clip
        norm = torch.nn.utils.clip_grad_norm_(params, max_norm, foreach=True)
        opt.step()
        ref_opt.zero_grad(set_to_none=True)
        ref_mod(idx_t, *batch)[0].backward()
        torch.nn.utils.clip_grad_norm_(ref_params, max_norm, foreach=False)
        ref_opt.step()
        np_norm = np_clip_adam_step(np_params, np_grads, np_m, np_v, t, hp, max_norm)
        check(f"step {t}: gradient norm {norm.item():.6g} (clip at {max_norm:.4g})",
              abs(norm.item() - np_norm) / np_norm, 1e-6)
    after = torch.cat([p.detach().reshape(-1) for p in params])
    ref_after = torch.cat([p.detach().reshape(-1) for p in ref_params])
    np_after = torch.from_numpy(np.concatenate([p.reshape(-1) for p in np_params])).to(device)
    upd = after - before
    check("parameter update against torch.optim.Adam",
          ((upd - (ref_after - before)).norm() / upd.norm()).item(), 1e-6)
    check("parameter update against numpy", ((upd - (np_after - before)).norm() /
                                             upd.norm()).item(), 1e-6)
    check("largest element of the update against numpy",
          ((upd - (np_after - before)).abs().max() / upd.abs().max()).item(), 1e-6)
    return fails


# ---- timing ----

def time_formulation(torch, mods, cfg: Config, formulation: str, bf16: bool, batch, init,
                     reference_updates, args, hp: Hyper) -> dict:
    """Sets up, checks against eager's first steps, warms up and times one formulation."""
    build_net, PPOLoss = mods
    precision = "bf16" if bf16 else cfg.precision
    row = {"config": cfg.name, "episodes": cfg.episodes, "steps": cfg.steps,
           "samples": cfg.samples, "epochs": cfg.epochs, "minibatch": cfg.minibatch,
           "precision": precision, "formulation": formulation, "status": "failed"}
    stepper = None
    try:
        t0 = time.perf_counter()
        stepper = Stepper(torch, build_net, PPOLoss, batch, init, formulation, cfg.minibatch,
                          hp, bf16, args.compile_mode)
        stepper.setup()
        row["setup_s"] = time.perf_counter() - t0
        if reference_updates is not None:
            stepper.reset(init)
            ref = reference_updates
            for k, idx in enumerate(ref["indices"]):
                stepper.step(idx)
                if k == 0:
                    grad = stepper.flat_grads()
            upd = stepper.flat_params() - ref["init"]
            row["parity_grad"] = ((grad - ref["grad"]).norm() / ref["grad"].norm()).item()
            row["parity_rel"] = ((upd - ref["delta"]).norm() / ref["delta"].norm()).item()
            tol_grad, tol_update = PARITY_TOL[precision]
            row["parity_ok"] = bool(row["parity_grad"] <= tol_grad and
                                    row["parity_rel"] <= tol_update)
        gen = torch.Generator(device=batch[0].device)
        gen.manual_seed(args.seed)
        for _ in range(args.warmup):
            stepper.update(cfg, gen)
        synchronize(torch)
        times, walls = [], []
        on_gpu = batch[0].device.type == "cuda"
        if on_gpu:
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
        for _ in range(args.repeats):
            stepper.sums.zero_()
            w0 = time.perf_counter()
            if on_gpu:
                start.record()
            stepper.update(cfg, gen)
            if on_gpu:
                end.record()
                end.synchronize()
            walls.append((time.perf_counter() - w0) * 1e3)
            times.append(start.elapsed_time(end) if on_gpu else walls[-1])
        sums = (stepper.sums / (cfg.epochs * cfg.minibatches)).tolist()
        row["last_update_means"] = dict(zip(STAT_NAMES + ("grad_norm",), sums))
        if not all(math.isfinite(x) for x in sums):
            raise RuntimeError(f"non-finite statistics after the timed updates: {sums}")
        ms = statistics.median(times)
        row.update(status="ok", update_ms=ms, update_ms_all=times,
                   wall_ms=statistics.median(walls),
                   tflops=update_flop(cfg.epochs, cfg.samples) / (ms * 1e-3) / 1e12)
    except Exception as e:  # noqa: BLE001: every stage fails soft, the run goes on
        row["error"] = f"{type(e).__name__}: {e}"[:2000]
        traceback.print_exc(file=sys.stderr)
    finally:
        del stepper
        try:  # a failed capture can leave an error behind: report it, let the next run
            synchronize(torch)
        except Exception as e:  # noqa: BLE001
            print(f"after {formulation}: {type(e).__name__}: {e}", file=sys.stderr)
    return row


def synchronize(torch) -> None:
    """Waits for the GPU and returns its cached memory (nothing to do on the CPU)."""
    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


def print_row(row: dict) -> None:
    head = f"{row['config']:<16s} {row['precision']:<4s} {row['formulation']:<16s}"
    if row["status"] != "ok":
        print(f"{head} FAILED: {row.get('error', '?')}", flush=True)
        return
    parity = ("parity -" if "parity_rel" not in row else
              f"parity grad {row['parity_grad']:.1e} update {row['parity_rel']:.1e} "
              f"{'ok' if row['parity_ok'] else 'FAIL'}")
    times = row["update_ms_all"]
    print(f"{head} update {row['update_ms']:9.2f} ms (min {min(times):.2f}, max {max(times):.2f};"
          f" host {row['wall_ms']:.2f})  {row['tflops']:7.3f} TFLOP/s  {parity}"
          f"  setup {row['setup_s']:.1f} s", flush=True)


def eager_reference(torch, mods, cfg, batch, init, hp):
    """Eager's first PARITY_STEPS updates from the initial weights, at the configuration's
    precision: what every formulation's first steps are compared with."""
    build_net, PPOLoss = mods
    gen = torch.Generator(device=batch[0].device)
    gen.manual_seed(99)
    indices = [torch.randperm(cfg.samples, device=batch[0].device, generator=gen)[
        :cfg.minibatch].clone() for _ in range(PARITY_STEPS)]
    ref = Stepper(torch, build_net, PPOLoss, batch, init, "eager", cfg.minibatch, hp,
                  False, "default")
    start = ref.flat_params()
    for k, idx in enumerate(indices):
        ref.step(idx)
        if k == 0:
            grad = ref.flat_grads()
    delta = ref.flat_params() - start
    del ref
    return {"indices": indices, "init": start, "grad": grad, "delta": delta}


def run_config(torch, mods, cfg: Config, args, hp: Hyper, on_row) -> list:
    set_matmul_precision(torch, cfg.precision)
    print(f"== {cfg.name}: {cfg.describe()}; {update_flop(cfg.epochs, cfg.samples) / 1e12:.3f} "
          f"TFLOP per update; matmul precision {torch.get_float32_matmul_precision()}",
          flush=True)
    if cfg.samples % cfg.minibatch:
        print(f"{cfg.name}: {cfg.samples} samples are not a whole number of minibatches of "
              f"{cfg.minibatch} (the graph has one shape); skipped")
        return []
    batch, init = make_batch(torch, mods[0], cfg, args.seed, torch.device(args.device))
    reference = None
    try:
        reference = eager_reference(torch, mods, cfg, batch, init, hp)
    except Exception:  # noqa: BLE001
        print(f"{cfg.name}: the eager reference steps failed; formulations run unchecked",
              file=sys.stderr)
        traceback.print_exc(file=sys.stderr)
    rows = []
    runs = [(f, False) for f in args.formulations]
    if args.bf16:
        runs += [(f, True) for f in args.formulations if f.endswith("graphed")]
    for formulation, bf16 in runs:
        row = time_formulation(torch, mods, cfg, formulation, bf16, batch, init, reference,
                               args, hp)
        print_row(row)
        rows.append(row)
        on_row(row)
    del batch, init, reference
    synchronize(torch)
    return rows


def best_rows(rows: list) -> dict:
    """Per configuration and precision, the fastest formulation that ran and whose first
    steps matched eager's."""
    best = {}
    for r in rows:
        if r["status"] != "ok" or not r.get("parity_ok", True):
            continue
        key = f"{r['config']}/{r['precision']}"
        if key not in best or r["update_ms"] < best[key]["update_ms"]:
            best[key] = r
    return best


def write_json(path: str, doc: dict) -> None:
    """Whole or not at all: a temporary file renamed over the target."""
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--configs", default="spec,throughput",
                   help=f"comma-separated, of {', '.join(CONFIGS)} (default: spec,throughput)")
    p.add_argument("--formulations", default=",".join(FORMULATIONS),
                   help=f"comma-separated, of {', '.join(FORMULATIONS)} (default: all)")
    p.add_argument("--repeats", type=int, default=5, help="timed updates, median (default 5)")
    p.add_argument("--warmup", type=int, default=1,
                   help="untimed whole updates after compile and capture (default 1)")
    p.add_argument("--bf16", action="store_true",
                   help="also the graphed formulations under bf16 autocast (fp32 loss, "
                        "fp32 master weights and Adam)")
    p.add_argument("--compile-mode", default="max-autotune-no-cudagraphs",
                   help="torch.compile's mode (default max-autotune-no-cudagraphs; "
                        "'default' compiles faster)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--device", default="cuda",
                   help="cuda (default) or cpu: a smoke test of the code, no graphs")
    p.add_argument("--json", metavar="OUT", help="also write the rows as JSON")
    p.add_argument("--skip-self-check", action="store_true",
                   help="time without the float64 self-check first")
    p.add_argument("--self-test-numpy", action="store_true",
                   help="check the numpy references against hand-computed values and exit")
    a = p.parse_args(argv)
    a.configs = [c for c in a.configs.split(",") if c]
    a.formulations = [f for f in a.formulations.split(",") if f]
    for c in a.configs:
        if c not in CONFIGS:
            p.error(f"--configs: unknown '{c}' (known: {', '.join(CONFIGS)})")
    for f in a.formulations:
        if f not in FORMULATIONS:
            p.error(f"--formulations: unknown '{f}' (known: {', '.join(FORMULATIONS)})")
    if a.repeats < 1 or a.warmup < 0:
        p.error("--repeats must be at least 1 and --warmup at least 0")
    return a


def main(argv) -> int:
    args = parse_args(argv)
    if args.self_test_numpy:
        return self_test_numpy()
    hp = Hyper()
    try:
        torch, build_net, PPOLoss = torch_modules()
    except ImportError as e:
        print(f"torch_ppo_update.py: cannot import torch ({e}); install PyTorch with CUDA, "
              "or run --self-test-numpy", file=sys.stderr)
        return 2
    self_check = "skipped"
    if not args.skip_self_check:
        try:
            fails = torch_self_check(hp)
        except Exception as e:  # noqa: BLE001: the check could not run (not a mismatch)
            traceback.print_exc(file=sys.stderr)
            fails = None
            self_check = f"could not run: {type(e).__name__}: {e}"[:500]
            print(f"SELF-CHECK {self_check}; timing goes on, each formulation still checked "
                  "against eager's steps", file=sys.stderr)
        if fails:
            print(f"SELF-CHECK FAILED ({', '.join(fails)}): the peer's update is not CleanRL's; "
                  "nothing timed", file=sys.stderr)
            return 1
        if fails is not None:
            self_check = "passed"
    if args.device == "cuda" and not torch.cuda.is_available():
        print("torch_ppo_update.py: no CUDA device (torch.cuda.is_available() is False); "
              "the peer times GPU updates (--device cpu only smoke-tests the code)",
              file=sys.stderr)
        return 2
    gpu = torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu"
    print(f"torch {torch.__version__} (CUDA {torch.version.cuda}), {gpu}; compile mode "
          f"{args.compile_mode}; medians of {args.repeats} updates after {args.warmup} "
          f"warm-up update(s)", flush=True)
    print(f"parity: each formulation against eager from the same weights, relative norms of "
          f"the differences of the first step's gradient and of the parameters' change after "
          f"{PARITY_STEPS} steps (tolerances (grad, update): {PARITY_TOL})")
    rows = []
    header = {"torch": torch.__version__, "cuda": torch.version.cuda, "device": gpu,
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "self_check": self_check, "compile_mode": args.compile_mode, "repeats": args.repeats, "warmup": args.warmup,
              "flop_model": "6 x (actor 17,984 + critic 363,584 MACs) x epochs x samples"}

    def save(row):  # after every row: a run cut short by a time limit keeps what it measured
        rows.append(row)
        if args.json:
            write_json(args.json, dict(header, rows=rows, best=best_rows(rows)))

    if args.json:  # a path that cannot be written fails now, not after the timing
        try:
            write_json(args.json, dict(header, rows=[], best={}))
        except OSError as e:
            print(f"torch_ppo_update.py: --json {args.json}: {e}", file=sys.stderr)
            return 2
    for name in args.configs:
        try:
            run_config(torch, (build_net, PPOLoss), CONFIGS[name], args, hp, save)
        except Exception:  # noqa: BLE001: one configuration's failure leaves the others
            print(f"{name}: failed before its formulations ran", file=sys.stderr)
            traceback.print_exc(file=sys.stderr)
    best = best_rows(rows)
    print("== fastest formulation per configuration (update: all epochs, CUDA events):")
    for key, r in best.items():
        cfg = CONFIGS[r["config"]]
        print(f"peer {key}: {cfg.describe()}: update {r['update_ms']:.2f} ms, "
              f"{r['tflops']:.3f} TFLOP/s ({r['formulation']})")
    if args.json:
        write_json(args.json, dict(header, rows=rows, best=best))
    return 0 if best else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
