#!/usr/bin/env python3
"""dlpack_vs_collect.py CHECKPOINT FOXHUNT — where foxhunt.gpu's batch and `foxhunt collect
--device cuda` differ, tensor by tensor, for the fast and the reference kernels (a
diagnostic for python/tests/test_gpu.py)."""
import subprocess
import sys
import tempfile

import numpy as np

import foxhunt
import foxhunt.gpu as fg

ck_path, fh = sys.argv[1], sys.argv[2]
N, L, SEED = 64, 48, 11
ck = foxhunt.load_checkpoint(ck_path)
market = foxhunt.Market.from_checkpoint(ck_path)
cfg = foxhunt.Config.from_checkpoint(ck_path)
batches = {}
with tempfile.TemporaryDirectory() as d:
    for kernel in ("fast", "reference"):
        out = f"{d}/{kernel}.safetensors"
        subprocess.run([fh, "collect", "--device", "cuda", "--kernel", kernel, "--checkpoint",
                        ck_path, "--episodes", str(N), "--steps", str(L), "--seed", str(SEED),
                        "--out", out], check=True, capture_output=True)
        batches["cli-" + kernel] = foxhunt.read_safetensors(out)[0]
        col = fg.GpuCollector(market, N, L, seed=SEED, config=cfg, kernel=kernel)
        batches["api-" + kernel] = {k: t.numpy().copy() for k, t in col.collect(ck).items()}
        del col


def compare(a, b):
    print(f"== {a} against {b}")
    for name, x in batches[a].items():
        y = batches[b].get(name)
        if y is None:
            continue
        bad = np.argwhere(x.view(np.uint32) != y.view(np.uint32))
        if len(bad) == 0:
            print(f"  {name:12s} identical")
            continue
        diff = np.abs(x.astype(np.float64) - y.astype(np.float64))
        line = f"  {name:12s} {len(bad):7d} differ, max |d| {diff.max():.3g}, first {tuple(bad[0])}"
        if name == "states":
            line += f", state columns {sorted(set(int(i) for i in bad[:, 2]))}"
            first_step = {}
            for e, s, _ in bad:
                first_step.setdefault(int(e), int(s))
            line += f", episodes {len(first_step)}, first steps {sorted(first_step.values())[:10]}"
        print(line)


compare("api-fast", "cli-fast")
compare("api-reference", "cli-reference")
compare("cli-fast", "cli-reference")
compare("api-fast", "api-reference")
