#!/usr/bin/env python3
"""side_by_side_table.py OUTDIR — issue 35's table from side_by_side.sh's files:
OUTDIR/foxhunt_<config>.log (`foxhunt bench --train --device cuda --algos ppo` output) and
OUTDIR/peer_<config>.json (torch_ppo_update.py --json), for config in spec, throughput,
throughput-bf16 (foxhunt --precision bf16 against the peer's --bf16 rows of throughput).

Prints one markdown table: configuration | foxhunt update ms | peer update ms (formulation)
| ratio, ratio = peer / foxhunt (above 1: foxhunt's update is faster). foxhunt's figure is
its device-event time of the update ("upd dev ms", which includes the curiosity fit), or
the host's when that is nan. A missing or failed side leaves its cell saying why, and the
exit status is 1; the table is printed either way.

  python3 dev/peers/side_by_side_table.py OUTDIR
  python3 dev/peers/side_by_side_table.py --self-test   # the parser on a bench row
"""

from __future__ import annotations

import json
import math
import os
import sys

# name: (label, N, L, epochs, minibatch, precision, the peer's row: torch_ppo_update.py's
# CONFIGS name/precision)
CONFIGS = {
    "spec": ("SPEC defaults (N 128 x L 500, 10 epochs x minibatch 512), fp32", 128, 500, 10,
             512, "fp32", "spec/fp32"),
    "throughput": ("throughput (N 4096 x L 128, 2 epochs x 16,384), TF32", 4096, 128, 2,
                   16384, "tf32", "throughput/tf32"),
    "throughput-bf16": ("throughput (N 4096 x L 128, 2 epochs x 16,384), bf16", 4096, 128, 2,
                        16384, "bf16", "throughput/bf16"),
}
# `foxhunt bench --train`'s columns (src/cli/bench_train.c): algo device upd N L epochs|rr
# mb prec iter collect update upd_dev tflops %ceil steps/s
COL_N, COL_L, COL_EPOCHS, COL_MB, COL_PREC, COL_UPDATE, COL_UPD_DEV, COL_TFLOPS = (
    3, 4, 5, 6, 7, 10, 11, 12)


def parse_bench(text: str, cfg) -> dict:
    """The `ppo cuda` row of a bench --train output, checked against the configuration."""
    _, n, l, epochs, mb, prec, _ = cfg
    for line in text.splitlines():
        f = line.split()
        if len(f) < 15 or f[0] != "ppo" or f[1] != "cuda":
            continue
        got = (int(f[COL_N]), int(f[COL_L]), int(f[COL_EPOCHS]), int(f[COL_MB]), f[COL_PREC])
        if got != (n, l, epochs, mb, prec):
            raise ValueError(f"the ppo cuda row is for N, L, epochs, minibatch, precision "
                             f"{got}, not {(n, l, epochs, mb, prec)}")
        dev = float(f[COL_UPD_DEV])
        return {"update_ms": dev if math.isfinite(dev) else float(f[COL_UPDATE]),
                "timer": "device events" if math.isfinite(dev) else "host",
                "tflops": float(f[COL_TFLOPS])}
    raise ValueError("no 'ppo cuda' row (did the bench run on a GPU?)")


def foxhunt_cell(outdir: str, name: str, cfg):
    path = os.path.join(outdir, f"foxhunt_{name}.log")
    try:
        with open(path, encoding="utf-8") as f:
            row = parse_bench(f.read(), cfg)
    except (OSError, ValueError) as e:
        return None, f"– ({os.path.basename(path)}: {e})"
    return row, f"{row['update_ms']:.1f} ms ({row['tflops']:.2f} TFLOP/s)"


def peer_cell(outdir: str, name: str, key: str):
    path = os.path.join(outdir, f"peer_{name}.json")
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        row = doc["best"][key]
    except (OSError, ValueError, KeyError) as e:
        return None, f"– ({os.path.basename(path)}: {type(e).__name__} {e})"
    return row, f"{row['update_ms']:.1f} ms ({row['tflops']:.2f} TFLOP/s, {row['formulation']})"


def table(outdir: str) -> tuple[str, int]:
    lines = ["| configuration | foxhunt update ms | peer update ms (formulation) | ratio |",
             "|---|---|---|---|"]
    missing = 0
    for name, cfg in CONFIGS.items():
        fox, fox_text = foxhunt_cell(outdir, name, cfg)
        if not os.path.exists(os.path.join(outdir, f"foxhunt_{name}.log")) and \
                name == "throughput-bf16":
            continue  # not run (side_by_side.sh's default configurations)
        peer, peer_text = peer_cell(outdir, name, cfg[6])
        ratio = (f"{peer['update_ms'] / fox['update_ms']:.2f}×" if fox and peer else "–")
        missing += fox is None or peer is None
        lines.append(f"| {cfg[0]} | {fox_text} | {peer_text} | {ratio} |")
        bf16, bf16_text = peer_cell(outdir, name, cfg[6].split("/")[0] + "/bf16")
        if bf16 and cfg[5] != "bf16":  # the peer's --bf16 rows, if run
            lines.append(f"| the same, the peer in bf16 | – | {bf16_text} | – |")
    lines.append("")
    lines.append("ratio: peer / foxhunt (above 1: foxhunt's update is faster); foxhunt's time "
                 "includes its curiosity fit, the peer's does not.")
    return "\n".join(lines), 1 if missing else 0


def self_test() -> int:
    """parse_bench on a row as bench_train.c prints it (a CPU row with nan beside it)."""
    text = ("algo device   upd        N     L epochs|rr     mb prec    iter ms collect ms  "
            "update ms upd dev ms upd TFLOP/s  % ceil  train steps/s\n"
            "ppo  cpu      cpu      128   500        10    512 fp32   17762.00    7431.00"
            "    9933.00        nan      0.1475       -           3603\n"
            "ppo  cuda     gpu      128   500        10    512 fp32     218.00       2.40"
            "     215.60     214.90       6.818   13.4%         293611\n")
    fails = 0
    row = parse_bench(text, CONFIGS["spec"])
    if row != {"update_ms": 214.9, "timer": "device events", "tflops": 6.818}:
        print(f"FAIL spec row: {row}")
        fails += 1
    nan_row = text.replace("214.90", "   nan")
    row = parse_bench(nan_row, CONFIGS["spec"])
    if row["update_ms"] != 215.6 or row["timer"] != "host":
        print(f"FAIL host fallback: {row}")
        fails += 1
    try:
        parse_bench(text, CONFIGS["throughput"])
        print("FAIL a spec row was taken for the throughput configuration")
        fails += 1
    except ValueError:
        pass
    print("self-test: " + ("FAILED" if fails else "all passed"))
    return 1 if fails else 0


def main(argv) -> int:
    if argv == ["--self-test"]:
        return self_test()
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    text, rc = table(argv[0])
    print(text)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
