#!/usr/bin/env python3
"""ppo_reference.py — foxhunt's PPO sizes and settings, the FLOP model of `foxhunt bench
--train`, and float64 numpy references of CleanRL's loss and of a clipped Adam step,
written from CleanRL's ppo.py and torch.optim.Adam's documented update, independently of
torch_ppo_update.py's torch code, which they check (issue 35). Needs numpy only.

  python3 dev/peers/ppo_reference.py   # the references against hand-computed values
"""

from __future__ import annotations

import dataclasses
import math
import sys

try:
    import numpy as np
except ImportError:  # ctest's peer_reference: skipped (77), not failed, without numpy
    print("SKIP: numpy is not installed (scripts/setup.sh installs it)")
    sys.exit(77)

# ---- foxhunt's sizes (include/foxhunt/shapes.h) and defaults (src/rl/train_config.c) ----
STATE_DIM = 54
N_ACTIONS = 45
ACTOR_DIMS = (STATE_DIM, 128, 64, N_ACTIONS)
CRITIC_DIMS = (STATE_DIM, 512, 384, 256, 128, 64, 1)
ACTOR_OUTPUT_GAIN, CRITIC_OUTPUT_GAIN, HIDDEN_GAIN = 0.01, 1.0, math.sqrt(2.0)


@dataclasses.dataclass(frozen=True)
class Hyper:
    """fh_train_config_default's PPO settings."""
    clip: float = 0.2
    vf_coef: float = 0.5
    ent_coef: float = 0.01
    max_grad_norm: float = 0.5
    clip_vloss: bool = True
    norm_adv: bool = True
    lr: float = 3e-4
    adam_eps: float = 1e-5
    betas: tuple = (0.9, 0.999)


# ---- the FLOP model of `foxhunt bench --train` (src/cli/bench_train.c) ----

def net_macs(dims) -> int:
    """Multiply-accumulates of one forward pass for one sample."""
    return sum(dims[i] * dims[i + 1] for i in range(len(dims) - 1))


def update_flop(epochs: int, samples: int) -> float:
    """6 FLOP per MAC (forward 2, input and weight gradients 2 each) per sample and epoch."""
    return 6.0 * (net_macs(ACTOR_DIMS) + net_macs(CRITIC_DIMS)) * epochs * samples


# ---- float64 numpy references, written from CleanRL's ppo.py independently of the torch code ----

def np_mlp_forward(layers, x):
    """layers: [(W (out, in), b (out,)), ...]; ReLU on every hidden layer."""
    h = x
    for i, (w, b) in enumerate(layers):
        h = h @ w.T + b
        if i < len(layers) - 1:
            h = np.maximum(h, 0.0)
    return h


def np_ppo_loss(logits, values, actions, old_logp, adv, returns, old_values, hp: Hyper):
    """CleanRL's loss for one minibatch, float64; returns a dict of the loss and its stats."""
    logits = np.asarray(logits, np.float64)
    z = logits - logits.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    newlogp = logp[np.arange(len(actions)), actions]
    entropy = -(np.exp(logp) * logp).sum(axis=1)
    logratio = newlogp - old_logp
    ratio = np.exp(logratio)
    if hp.norm_adv:
        adv = (adv - adv.mean()) / (adv.std(ddof=1) + 1e-8)
    pg_loss = np.maximum(-adv * ratio, -adv * np.clip(ratio, 1 - hp.clip, 1 + hp.clip)).mean()
    if hp.clip_vloss:
        unclipped = (values - returns) ** 2
        v_clipped = old_values + np.clip(values - old_values, -hp.clip, hp.clip)
        v_loss = 0.5 * np.maximum(unclipped, (v_clipped - returns) ** 2).mean()
    else:
        v_loss = 0.5 * ((values - returns) ** 2).mean()
    ent = entropy.mean()
    return {"loss": pg_loss - hp.ent_coef * ent + hp.vf_coef * v_loss, "pg_loss": pg_loss,
            "v_loss": v_loss, "entropy": ent, "approx_kl": ((ratio - 1) - logratio).mean(),
            "old_approx_kl": (-logratio).mean(),
            "clipfrac": (np.abs(ratio - 1) > hp.clip).mean()}


STAT_NAMES = ("pg_loss", "v_loss", "entropy", "approx_kl", "old_approx_kl", "clipfrac", "loss")


def np_clip_adam_step(params, grads, m, v, t, hp: Hyper, max_norm):
    """Global-norm clip (torch's: coef = max_norm / (norm + 1e-6), at most 1) then Adam
    step t (1-based), float64, in place on params, m, v; returns the norm before clipping."""
    norm = math.sqrt(sum(float((g * g).sum()) for g in grads))
    coef = min(1.0, max_norm / (norm + 1e-6))
    b1, b2 = hp.betas
    for p, g, mi, vi in zip(params, grads, m, v):
        g = g * coef
        mi *= b1
        mi += (1 - b1) * g
        vi *= b2
        vi += (1 - b2) * g * g
        p -= hp.lr * (mi / (1 - b1 ** t)) / (np.sqrt(vi / (1 - b2 ** t)) + hp.adam_eps)
    return norm


def close(a, b, rtol, atol=1e-12) -> bool:
    return abs(a - b) <= atol + rtol * abs(b)


def self_test_numpy() -> int:
    """The numpy parts against hand-computed values; 0 when all pass."""
    fails = []

    def check(what, got, want, rtol=1e-12, atol=1e-15):
        ok = close(got, want, rtol, atol)
        print(f"  {'ok  ' if ok else 'FAIL'} {what}: {got!r} (expected {want!r})")
        if not ok:
            fails.append(what)

    print("self-test (numpy): FLOP model")
    check("actor MACs", net_macs(ACTOR_DIMS), 6912 + 8192 + 2880)            # 17,984
    check("critic MACs", net_macs(CRITIC_DIMS),
          27648 + 196608 + 98304 + 32768 + 8192 + 64)                       # 363,584
    check("SPEC update FLOP", update_flop(10, 128 * 500), 1_465_221_120_000)
    check("throughput update FLOP", update_flop(2, 4096 * 128), 2_400_618_283_008)

    print("self-test (numpy): CleanRL's loss on three rows, by hand")
    hp = Hyper()
    # probabilities: row 0 (1/3, 1/3, 1/3); row 1 (1/4, 3/4, ~0); row 2 (1/4, 1/2, 1/4)
    logits = np.array([[0.0, 0.0, 0.0], [0.0, math.log(3.0), -1e3],
                       [0.0, math.log(2.0), 0.0]])
    actions = np.array([2, 1, 1])
    ratios = (1.5, 0.6, 1.1)  # the old log-probs are chosen to give these
    old_logp = np.array([-math.log(3.0) - math.log(1.5), math.log(0.75) - math.log(0.6),
                         math.log(0.5) - math.log(1.1)])
    adv = np.array([1.0, -1.0, 0.0])   # mean 0, unbiased std 1: normalised +-a and 0
    values = np.array([1.0, 0.5, 0.2])
    old_values = np.array([0.5, 0.1, 0.2])
    returns = np.array([0.0, 1.0, 0.2])
    got = np_ppo_loss(logits, values, actions, old_logp, adv, returns, old_values, hp)
    a = 1.0 / (1.0 + 1e-8)
    # row 0: A = +a, ratio 1.5: max(-1.5a, -1.2a) = -1.2a; row 1: A = -a, ratio 0.6:
    # max(0.6a, 0.8a) = 0.8a; row 2: A = 0
    pg = (-1.2 * a + 0.8 * a) / 3
    # row 0: (1-0)^2 = 1 against (0.5+0.2-0)^2 = 0.49: 1; row 1: (0.5-1)^2 = 0.25 against
    # (0.1+0.2-1)^2 = 0.49: 0.49; row 2: 0
    vl = 0.5 * (1.0 + 0.49 + 0.0) / 3
    ent = (math.log(3.0) - (0.25 * math.log(0.25) + 0.75 * math.log(0.75))
           + 1.5 * math.log(2.0)) / 3
    check("pg_loss", got["pg_loss"], pg)
    check("v_loss", got["v_loss"], vl)
    check("entropy", got["entropy"], ent, rtol=1e-9)  # the -1e3 logit's mass, e^-1000, is 0
    check("loss", got["loss"], pg - 0.01 * ent + 0.5 * vl, rtol=1e-9)
    logs = [math.log(r) for r in ratios]
    check("approx_kl", got["approx_kl"], sum(r - 1 - lr for r, lr in zip(ratios, logs)) / 3)
    check("old_approx_kl", got["old_approx_kl"], -sum(logs) / 3)
    check("clipfrac", got["clipfrac"], 2 / 3)  # 1.5 and 0.6 are outside [0.8, 1.2]
    got = np_ppo_loss(logits, values, actions, old_logp, adv, returns, old_values,
                      dataclasses.replace(hp, clip_vloss=False))
    check("v_loss unclipped", got["v_loss"], 0.5 * (1.0 + 0.25 + 0.0) / 3)

    print("self-test (numpy): clipped Adam, by hand")
    p = [np.array([1.0, -2.0]), np.array([0.5])]
    g = [np.array([3.0, 0.0]), np.array([4.0])]              # norm 5
    m = [np.zeros(2), np.zeros(1)]
    v = [np.zeros(2), np.zeros(1)]
    norm = np_clip_adam_step(p, g, m, v, 1, hp, 0.5)
    check("grad norm", norm, 5.0)
    c = 0.5 / (5.0 + 1e-6)
    # step 1: m_hat = g, v_hat = g^2, so p -= lr g / (|g| + eps) on the clipped g
    check("p[0][0]", p[0][0], 1.0 - 3e-4 * (3 * c) / (3 * c + 1e-5))
    check("p[0][1]", p[0][1], -2.0)
    check("p[1][0]", p[1][0], 0.5 - 3e-4 * (4 * c) / (4 * c + 1e-5))
    check("m[1][0]", m[1][0], 0.1 * 4 * c)
    check("v[1][0]", v[1][0], 0.001 * (4 * c) ** 2)
    norm = np_clip_adam_step(p, [np.array([0.0, 0.0]), np.array([0.1])], m, v, 2, hp, 0.5)
    check("grad norm, unclipped", norm, 0.1)
    m2, v2 = 0.9 * 0.1 * 4 * c + 0.1 * 0.1, 0.999 * 0.001 * (4 * c) ** 2 + 0.001 * 0.01
    want = 0.5 - 3e-4 * (4 * c) / (4 * c + 1e-5) - 3e-4 * (m2 / 0.19) / (
        math.sqrt(v2 / (1 - 0.999 ** 2)) + 1e-5)
    check("p[1][0] after step 2", p[1][0], want)
    print("self-test (numpy): " + ("FAILED: " + ", ".join(fails) if fails else "all passed"))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(self_test_numpy())
