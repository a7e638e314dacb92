#!/usr/bin/env python3
"""bench_vec_env.py — environment steps per second of foxhunt.VectorEnv from Python
beside the C vector env's own rate, so that the binding's cost is measured (issue 21).

For each N (default 1, 128, 4096) it times, REPEATS times for SECONDS each, the two
alternating (a change in the machine's load falls on both):
  - C: tests/drivers/vec_env_driver bench: a C loop over fh_api_vec_env_step (the call
    the binding makes) with actions drawn in C, and fh_api_vec_env_take_logs after each
    step as the binding does;
  - Python: VectorEnv.step in a loop with actions from a pool drawn beforehand (numpy's
    generator is not what is measured), info dicts and all.
and prints the medians, their ratio and the binding's cost per step call in
microseconds (1 / Python calls per second - 1 / C calls per second). Both use the
default configuration (the synthetic market of 20,000 bars, horizon 256, the training
split); each N is timed at every thread count of --threads (default 1 and 0: one
OpenMP thread, the env's default, and OpenMP's default, every core or OMP_NUM_THREADS).

usage: FOXHUNT_LIB=build/libfoxhunt.so python3 python/bench_vec_env.py
           [--episodes 1,128,4096] [--threads 1,0] [--seconds 2] [--repeats 3] [--driver build/vec_env_driver]
           [--markdown]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import foxhunt  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def c_rates(driver: Path, n: int, threads: int, seconds: float, repeats: int) -> list[float]:
    out = subprocess.run([str(driver), "bench", str(n), str(seconds), str(repeats),
                          f"threads={threads}"],
                         capture_output=True, text=True, check=True).stdout
    return [float(line.split()[1]) for line in out.splitlines()
            if line.startswith("steps_per_second")]


class PythonLoop:
    """VectorEnv.step in a loop over a pool of actions drawn beforehand."""

    def __init__(self, n: int, threads: int) -> None:
        self.n = n
        self.env = foxhunt.VectorEnv(n, seed=1, threads=threads)
        self.env.reset(seed=1)
        self.pool = np.random.default_rng(0).integers(0, foxhunt.N_ACTIONS, size=(64, n),
                                                      dtype=np.int32)
        self.calls = 0

    def rate(self, seconds: float) -> float:
        calls, t0 = 0, time.perf_counter()
        t1 = t0
        while t1 - t0 < seconds:
            self.env.step(self.pool[(self.calls + calls) % len(self.pool)])
            calls += 1
            t1 = time.perf_counter()
        self.calls += calls
        return calls * self.n / (t1 - t0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--episodes", default="1,128,4096")
    ap.add_argument("--threads", default="1,0", help="OpenMP threads per step (0: all)")
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--driver", type=Path,
                    default=Path(os.environ.get("FOXHUNT_DRIVER", REPO / "build" / "vec_env_driver")))
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = ap.parse_args()
    if not args.driver.is_file():
        print(f"{args.driver} not found: build it (cmake --build build) or pass --driver",
              file=sys.stderr)
        return 2
    print(f"# {foxhunt.build_info()}; {os.cpu_count()} CPUs; median of {args.repeats} x "
          f"{args.seconds:g} s", file=sys.stderr)
    rows = []
    for n in (int(x) for x in args.episodes.split(",")):
        for threads in (int(x) for x in args.threads.split(",")):
            # C and Python alternate, so that a change in the machine's load falls on both
            loop = PythonLoop(n, threads)
            c_runs, py_runs = [], []
            for _ in range(args.repeats):
                c_runs += c_rates(args.driver, n, threads, args.seconds, 1)
                py_runs.append(loop.rate(args.seconds))
            loop.env.close()
            c, py = statistics.median(c_runs), statistics.median(py_runs)
            overhead_us = (n / py - n / c) * 1e6
            rows.append((n, threads, c, py, py / c, overhead_us))
            print(f"# N {n} threads {threads}: C {[round(r) for r in c_runs]}, Python "
                  f"{[round(r) for r in py_runs]}", file=sys.stderr)
    if args.markdown:
        print("| N | threads | C env (steps/s) | Python VectorEnv (steps/s) | Python step calls/s "
              "| Python / C | binding cost per step call |")
        print("|---:|---:|---:|---:|---:|---:|---:|")
        for n, t, c, py, ratio, us in rows:
            print(f"| {n} | {t or 'all'} | {c:,.0f} | {py:,.0f} | {py / n:,.0f} | {ratio:.2f} "
                  f"| {us:.1f} µs |")
    else:
        print(f"{'N':>6} {'threads':>7} {'C steps/s':>14} {'Python steps/s':>16} "
              f"{'calls/s':>10} {'Py/C':>6} {'cost/call':>12}")
        for n, t, c, py, ratio, us in rows:
            print(f"{n:>6} {t or 'all':>7} {c:>14,.0f} {py:>16,.0f} {py / n:>10,.0f} "
                  f"{ratio:>6.2f} {us:>9.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
