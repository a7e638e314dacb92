#!/usr/bin/env python3
"""bench_gpu_collect.py — the GPU collection from Python (foxhunt.gpu.GpuCollector, its
batch left on the device as DLPack tensors) beside `foxhunt bench --device cuda`'s
collection time for the same N x L (issue 21).

For each N it times REPEATS collections after one warm-up (the first compiles or loads
the kernels), fresh weights of the trainer's initialisation drawn from a small training
run's checkpoint, and prints the medians of: the device time the collector measures
(weight upload + collection, events), and the wall time of collect() seen from Python
(the ctypes call, the params' flattening, the upload). Then it runs `foxhunt bench
--device cuda --kernel fast` for the same sizes and prints its table.

usage: FOXHUNT_LIB=build/libfoxhunt.so python3 python/bench_gpu_collect.py \\
           CHECKPOINT [--episodes 128,1024,16384] [--steps 500] [--repeats 5] [--foxhunt build/foxhunt]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import foxhunt  # noqa: E402
import foxhunt.gpu as fg  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("--episodes", default="128,1024,16384")
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--foxhunt", default=str(REPO / "build" / "foxhunt"))
    args = ap.parse_args()
    ok, why = fg.available()
    if not ok:
        print(f"no GPU: {why}", file=sys.stderr)
        return 77
    ck = foxhunt.load_checkpoint(args.checkpoint)
    market = foxhunt.Market.from_checkpoint(args.checkpoint)
    cfg = foxhunt.Config.from_checkpoint(args.checkpoint)
    print(f"# {foxhunt.build_info()}")
    print(f"{'N':>6} {'L':>4} {'device ms (upload+collect)':>27} {'collect ms':>11} "
          f"{'Python wall ms':>15}")
    for n in (int(x) for x in args.episodes.split(",")):
        with fg.GpuCollector(market, n, args.steps, seed=1, config=cfg) as col:
            col.collect(ck)  # warm-up: kernels compiled or loaded, the graph captured
            dev, kern, wall = [], [], []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                col.collect(ck)
                wall.append((time.perf_counter() - t0) * 1e3)
                c_ms, t_ms = col.timing
                kern.append(c_ms)
                dev.append(t_ms)
        print(f"{n:>6} {args.steps:>4} {statistics.median(dev):>27.2f} "
              f"{statistics.median(kern):>11.2f} {statistics.median(wall):>15.2f}")
    sys.stdout.flush()
    subprocess.run([args.foxhunt, "bench", "--device", "cuda", "--kernel", "fast",
                    "--episodes", args.episodes, "--steps", str(args.steps),
                    "--repeats", str(args.repeats)], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
