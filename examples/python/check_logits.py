#!/usr/bin/env python3
"""check_logits.py — loads a foxhunt checkpoint into PyTorch and checks that its
modules reproduce foxhunt's own numbers: the log-probabilities of the sampled actions
and the critic's values of one `foxhunt collect` batch made with the same checkpoint
(issue 21).

usage: FOXHUNT_LIB=build/libfoxhunt.so python3 examples/python/check_logits.py \\
           CHECKPOINT [--foxhunt build/foxhunt] [--episodes 8] [--steps 64]

Prints the largest absolute difference of each and exits 1 beyond 1e-5 (both sides
compute in float32: they agree to ~1e-7).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))
import foxhunt  # noqa: E402
import foxhunt.torch as ft  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("--foxhunt", default=str(REPO / "build" / "foxhunt"))
    ap.add_argument("--episodes", type=int, default=8)
    ap.add_argument("--steps", type=int, default=64)
    args = ap.parse_args()

    nets = ft.from_checkpoint(args.checkpoint)       # {"actor": Actor, "critic": Critic, ...}
    print("modules:", {k: sum(p.numel() for p in m.parameters()) for k, m in nets.items()})

    with tempfile.TemporaryDirectory() as d:
        batch_path = Path(d) / "batch.safetensors"
        subprocess.run([args.foxhunt, "collect", "--checkpoint", args.checkpoint,
                        "--episodes", str(args.episodes), "--steps", str(args.steps),
                        "--device", "cpu", "--out", str(batch_path)],
                       check=True, stdout=subprocess.DEVNULL)
        batch, _ = foxhunt.read_safetensors(batch_path)

    states = torch.from_numpy(batch["states"].reshape(-1, foxhunt.STATE_DIM))
    actions = torch.from_numpy(batch["actions"].reshape(-1).astype(np.int64))
    with torch.no_grad():
        logits = nets["actor"](states)
        logp = torch.log_softmax(logits, dim=-1).gather(1, actions[:, None])[:, 0]
        values = nets["critic"](states)[:, 0]
    d_logp = np.abs(logp.numpy().astype(np.float64) - batch["log_probs"].reshape(-1)).max()
    d_val = np.abs(values.numpy().astype(np.float64) - batch["values"].reshape(-1)).max()
    print(f"{len(actions)} samples: max |log pi(a|s) - foxhunt's| = {d_logp:.2e}, "
          f"max |V(s) - foxhunt's| = {d_val:.2e}")
    print("greedy actions of the first 8 states:", logits[:8].argmax(-1).tolist())
    ok = d_logp <= 1e-5 and d_val <= 1e-5
    print("OK: PyTorch reproduces foxhunt's actor and critic" if ok else "MISMATCH beyond 1e-5")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
