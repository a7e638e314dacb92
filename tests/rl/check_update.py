#!/usr/bin/env python3
"""check_update.py — an independent check of `foxhunt update` (issue 17), in numpy.

usage: check_update.py C.safetensors B.safetensors C2.safetensors [--same-weights]

C is the checkpoint the update started from, B the collection (`foxhunt collect`) it
ran on, C2 what it wrote. Nothing of foxhunt's code is used: the files are read with
the `safetensors` package, and this script re-implements from the documentation
(docs/CHECKPOINTS.md, include/foxhunt/batch_file.h) and from CleanRL's ppo.py:

  - the sample order: every row of update.minibatch_order is a permutation of N*L, and
    equals a re-draw from C's ppo.update_rng (PCG32 XSH-RR): first one key per configured
    epoch, key = (hi << 32) | lo from two draws, then epoch e's position p visits the
    keyed Feistel permutation of [0, N*L) (8 rounds of a splitmix64 finaliser over the
    smallest even-bit domain >= N*L, cycle-walked into range); after the epochs' keys and
    the curiosity fit's (curiosity_epochs more) the stream is C2's ppo.update_rng;
  - the actor's and the critic's forward passes (weights [out, in], y = x W^T + b, ReLU
    after every layer but the last) over the first minibatch (the first M samples of
    epoch 0's order), in float64, from C's float32 weights;
  - CleanRL's PPO loss on that minibatch: advantages normalised per minibatch with
    (A - mean) / (std + 1e-8), std unbiased (torch's .std(), ddof = 1); ratio =
    exp(new logp - old logp); pg_loss = mean(max(-A r, -A clip(r, 1 - c, 1 + c)));
    v_loss = 0.5 mean(max((V - R)^2, (V_old + clip(V - V_old, -c, c) - R)^2)) when
    clip_vloss, else 0.5 mean((V - R)^2); entropy of the categorical over the 45
    actions; approx_kl = mean((r - 1) - log r), old_approx_kl = mean(-log r), clip
    fraction = mean(|r - 1| > c); loss = pg_loss - ent_coef entropy + vf_coef v_loss
    (ent_coef the iteration's: with anneal_ent, (1 - (K - 1) / iterations) ent_coef);
  - the explained variance of B (1 - var(R - V) / var(R)), the record's bookkeeping
    (rows = epochs_run * ceil(N*L / M), epoch and minibatch columns, the learning rate).
The backward pass is not re-implemented (the gradient norm is only checked finite).

Tolerance. foxhunt computes in float32 (sgemm forward, float log-softmax, a float ratio
per sample; sums in double, the surrogate and value losses rounded to float at the end);
this reference computes in float64 from the same float32 inputs. Each float32 layer
rounds at ~6e-8 relative, so logits and values differ by ~1e-7 relative and each log
probability by up to ~2.4e-7 absolute (|log p| ~ 4 at 2^-24): a term's error is ~1e-7
of the size of its SUMMANDS. The check allows 1e-5 of that size: |foxhunt - numpy| <=
1e-5 * max(|numpy|, scale), scale = the mean absolute summand: mean|max(-A r, -A
clip(r))| for pg_loss, mean|log r| for old_approx_kl, and for loss that scale plus
ent_coef entropy plus vf_coef v_loss. The two signed means (pg_loss, old_approx_kl) can
cancel to far below their summands (old_approx_kl = 8.8e-4 from summands of ~0.1 in
the test), where the plain relative difference grows by the same factor (2.3e-5 there)
while agreeing to ~1e-7 of the summands; the non-negative terms (value loss, entropy,
approx_kl, clip fraction) are plain relative. With --same-weights (B was collected with
C's own networks, the trainer's case) every ratio is 1 up to that rounding, so approx_kl
(~1e-14) and old_approx_kl (~1e-8) are rounding noise in BOTH implementations: those two
are compared with an absolute 1e-6 instead. Prints, per term, the plain relative
difference and the difference relative to the scale. Exit 0 pass, 1 fail, 77 without numpy
or safetensors. """
import json
import sys

try:
    import numpy as np
    from safetensors import safe_open
    from safetensors.numpy import load_file
except ImportError as e:  # the C runner skips on 77
    print(f"check_update.py: {e}", file=sys.stderr)
    sys.exit(77)

MASK64 = (1 << 64) - 1
PCG_MULT = 6364136223846793005
RTOL = 1e-5
NOISE_ATOL = 1e-6
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def metadata(path):
    with safe_open(path, framework="np") as f:
        return f.metadata() or {}


class Pcg32:
    def __init__(self, state, inc):
        self.state, self.inc = int(state), int(inc)

    def next(self):
        old = self.state
        self.state = (old * PCG_MULT + self.inc) & MASK64
        xorshifted = (((old >> 18) ^ old) >> 27) & 0xFFFFFFFF
        rot = old >> 59
        return ((xorshifted >> rot) | (xorshifted << ((-rot) & 31))) & 0xFFFFFFFF


GOLDEN_GAMMA = 0x9E3779B97F4A7C15
ORDER_ROUNDS = 8


def epoch_key(rng):
    """An epoch's key: two PCG32 draws, the first the high 32 bits."""
    hi = rng.next()
    lo = rng.next()
    return ((hi << 32) | lo) & MASK64


def splitmix_finalise(z):
    z &= MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def keyed_order(key, n):
    """The whole order of an epoch: position i visits a balanced Feistel network (8 rounds
    over h-bit halves, h the smallest with 4^h >= n; round r's function is
    mix(right ^ mix(key + golden * (r + 1))) masked to h bits), re-applied until the
    result is below n (cycle walking)."""
    h = 1
    while (1 << (2 * h)) < n:
        h += 1
    mask = (1 << h) - 1
    round_mixes = [splitmix_finalise((key + GOLDEN_GAMMA * (r + 1)) & MASK64)
                   for r in range(ORDER_ROUNDS)]
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        x = i
        while True:
            left, right = x >> h, x & mask
            for rm in round_mixes:
                left, right = right, left ^ (splitmix_finalise(right ^ rm) & mask)
            x = (left << h) | right
            if x < n:
                break
        out[i] = x
    return out


def mlp(x, ck, layers):
    h = x.astype(np.float64)
    for k, name in enumerate(layers):
        w = ck[name + ".weight"].astype(np.float64)
        b = ck[name + ".bias"].astype(np.float64)
        h = h @ w.T + b
        if k < len(layers) - 1:
            h = np.maximum(h, 0.0)
    return h


ACTOR = ["policy_layer_0", "policy_layer_1", "policy_output"]
CRITIC = ["value_layer_0", "value_layer_1", "value_layer_2", "value_layer_3",
          "value_layer_4", "value_output"]


def main(argv):
    same_weights = "--same-weights" in argv
    paths = [a for a in argv[1:] if not a.startswith("--")]
    if len(paths) != 3:
        print(__doc__.splitlines()[2], file=sys.stderr)
        return 2
    c_path, b_path, c2_path = paths
    ck, batch, out = load_file(c_path), load_file(b_path), load_file(c2_path)
    meta_b, meta2 = metadata(b_path), metadata(c2_path)
    check(meta_b.get("format") == "foxhunt.collection", "B's format")
    check(meta2.get("format") == "foxhunt.checkpoint", "C2's format")
    cfg = json.loads(metadata(c_path)["config"])
    ppo = cfg["ppo"]
    N, L = batch["actions"].shape
    NL = N * L
    M = int(ppo["minibatch"])
    clip = float(ppo["clip"])

    # ---- the sample orders ----
    order = out["update.minibatch_order"]
    records = out["update.minibatch_records"]
    cols = meta2["update.minibatch_records.columns"].split(",")
    stats = dict(zip(meta2["update.stats.columns"].split(","), out["update.stats"]))
    epochs_run = int(stats["epochs_run"])
    check(order.shape == (epochs_run, NL), f"order shape {order.shape}, expected ({epochs_run}, {NL})")
    for e in range(order.shape[0]):
        check(np.array_equal(np.sort(order[e]), np.arange(NL)), f"epoch {e}'s order is not a permutation of {NL}")
    state, inc = (int(v) for v in ck["ppo.update_rng"])
    rng = Pcg32(state, inc)
    # every PPO epoch's key before the first epoch (a target-KL stop draws them all),
    # then the curiosity fit's
    keys = [epoch_key(rng) for _ in range(int(ppo["epochs"]))]
    for e in range(epochs_run):
        check(np.array_equal(keyed_order(keys[e], NL), order[e]), f"epoch {e}'s order differs from C's stream")
    for _ in range(int(ppo["curiosity_epochs"])):
        epoch_key(rng)
    after = out["ppo.update_rng"]
    check(int(after[0]) == rng.state and int(after[1]) == rng.inc,
          "C2's ppo.update_rng is not C's advanced by the epochs' and the curiosity fit's draws")

    # ---- the record's bookkeeping ----
    per_epoch = -(-NL // M)
    check(records.shape == (epochs_run * per_epoch, len(cols)),
          f"records shape {records.shape}, expected ({epochs_run * per_epoch}, {len(cols)})")
    col = {name: i for i, name in enumerate(cols)}
    expect_epoch = np.repeat(np.arange(epochs_run), per_epoch)
    expect_mb = np.tile(np.arange(per_epoch), epochs_run)
    check(np.array_equal(records[:, col["epoch"]], expect_epoch), "epoch column")
    check(np.array_equal(records[:, col["minibatch"]], expect_mb), "minibatch column")
    sizes = np.minimum(M, NL - expect_mb * M)
    check(np.array_equal(records[:, col["samples"]], sizes), "samples column")
    lr = float(meta2["update.lr"])
    check(np.all(records[:, col["lr"]] == np.float32(lr)), "lr column is not the update's lr as a float")
    check(np.all(np.isfinite(records)), "a record is not finite")
    check(int(out["run.iteration"][0]) == int(meta2["update.iteration"]), "run.iteration")
    check(int(stats["minibatches"]) == records.shape[0], "stats.minibatches")
    for name in ["policy_loss", "value_loss", "entropy", "approx_kl", "old_approx_kl",
                 "clip_fraction", "grad_norm"]:
        mean = records[:, col[name if name != "clip_fraction" else "clip_fraction"]].mean()
        check(abs(mean - stats[name]) <= 1e-12 * max(1.0, abs(mean)), f"stats.{name} is not the records' mean")
    v = batch["values"].astype(np.float64).ravel()
    R = batch["returns"].astype(np.float64).ravel()
    ev = 1.0 - np.var(R - v) / np.var(R)
    rel_ev = abs(ev - stats["explained_variance"]) / abs(ev)
    check(rel_ev <= RTOL, f"explained variance {stats['explained_variance']} vs {ev}")

    # ---- the first minibatch, CleanRL's loss ----
    idx = order[0, :M]
    x = batch["states"].reshape(NL, -1)[idx]
    actions = batch["actions"].ravel()[idx]
    old_logp = batch["log_probs"].ravel()[idx].astype(np.float64)
    adv = batch["advantages"].ravel()[idx].astype(np.float64)
    ret = R[idx]
    old_v = v[idx]
    logits = mlp(x, ck, ACTOR)
    logp_all = logits - logits.max(axis=1, keepdims=True)
    logp_all = logp_all - np.log(np.exp(logp_all).sum(axis=1, keepdims=True))
    new_logp = logp_all[np.arange(len(idx)), actions]
    entropy = -(np.exp(logp_all) * logp_all).sum(axis=1).mean()
    newv = mlp(x, ck, CRITIC)[:, 0]
    if ppo["norm_adv"]:
        adv = (adv - adv.mean()) / (adv.std(ddof=1) + 1e-8)
    logratio = new_logp - old_logp
    ratio = np.exp(logratio)
    approx_kl = ((ratio - 1) - logratio).mean()
    old_approx_kl = (-logratio).mean()
    clipfrac = (np.abs(ratio - 1.0) > clip).mean()
    pg_loss = np.maximum(-adv * ratio, -adv * np.clip(ratio, 1 - clip, 1 + clip)).mean()
    if ppo["clip_vloss"]:
        v_clipped = old_v + np.clip(newv - old_v, -clip, clip)
        v_loss = 0.5 * np.maximum((newv - ret) ** 2, (v_clipped - ret) ** 2).mean()
    else:
        v_loss = 0.5 * ((newv - ret) ** 2).mean()
    # the iteration's entropy coefficient: with anneal_ent, linear to 0 as anneal_lr's lr
    ent_coef = float(ppo["ent_coef"])
    if int(ppo.get("anneal_ent", 0)):
        ent_coef *= 1.0 - (int(meta2["update.iteration"]) - 1) / float(cfg["run"]["iterations"])
    loss = pg_loss - ent_coef * entropy + float(ppo["vf_coef"]) * v_loss
    reference = {"policy_loss": pg_loss, "value_loss": v_loss, "entropy": entropy,
                 "approx_kl": approx_kl, "old_approx_kl": old_approx_kl,
                 "clip_fraction": clipfrac, "loss": loss}
    pg_scale = np.abs(np.maximum(-adv * ratio, -adv * np.clip(ratio, 1 - clip, 1 + clip))).mean()
    scale = {"policy_loss": pg_scale, "old_approx_kl": np.abs(logratio).mean(),
             "loss": pg_scale + ent_coef * entropy + float(ppo["vf_coef"]) * v_loss}
    noise = {"approx_kl", "old_approx_kl"} if same_weights else set()
    row = records[0]
    print(f"first minibatch ({M} of {NL} samples{', B collected with C' if same_weights else ''}):")
    for name, ref in reference.items():
        got = row[col[name]]
        diff = abs(got - ref)
        rel = diff / abs(ref) if ref != 0 else (0.0 if diff == 0 else float("inf"))
        size = max(abs(ref), scale.get(name, 0.0))
        rel_scale = diff / size if size > 0 else (0.0 if diff == 0 else float("inf"))
        if name in noise:
            ok = diff <= NOISE_ATOL
            how = f"abs diff {diff:.3e} (<= {NOISE_ATOL:g}: ratio 1, rounding noise)"
        else:
            ok = rel_scale <= RTOL
            how = f"rel diff {rel:.3e}, of its scale {rel_scale:.3e}"
        print(f"  {name:14s} foxhunt {got: .10e}  numpy {ref: .10e}  {how}")
        check(ok, f"first minibatch {name}: foxhunt {got!r}, numpy {ref!r}")
    print(f"  explained variance rel diff {rel_ev:.3e}; grad norm {row[col['grad_norm']]:.6g} (finite)")
    if failures:
        print(f"check_update.py: {len(failures)} check(s) failed", file=sys.stderr)
        return 1
    print("check_update.py: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
