#!/usr/bin/env python3
"""ncu_sum.py CSV [STEPS] — an ncu --csv profile summed per kernel: launches, microseconds
per step (the profile's total over STEPS, the minibatch steps it covers), share of the
kernels' time, DRAM megabytes per step and the kernel's achieved DRAM bandwidth, when the
profile has gpu__time_duration.sum and dram__bytes_{read,write}.sum (the metrics
dev/cuda/logs/2026-12-02-s20-device-call.sh asks for). Kernel names are cut at their
argument list. Accepts .csv or .csv.gz."""
import collections
import csv
import gzip
import re
import sys

TIME_US = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}
BYTES = {"byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9}


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        rows = [line for line in f if line.startswith('"')]
    per = collections.defaultdict(lambda: collections.defaultdict(float))
    launches = collections.defaultdict(set)
    for row in csv.DictReader(rows):
        name = re.sub(r"\(.*", "", row["Kernel Name"])[:60]
        unit, metric = row["Metric Unit"], row["Metric Name"]
        value = float(row["Metric Value"].replace(",", ""))
        if metric.startswith("gpu__time"):
            value *= TIME_US[unit]
        elif "bytes" in metric:
            value *= BYTES[unit]
        per[name][metric] += value
        launches[name].add(row["ID"])
    return per, launches


def main(argv):
    if len(argv) not in (1, 2):
        print(__doc__, file=sys.stderr)
        return 2
    per, launches = load(argv[0])
    steps = float(argv[1]) if len(argv) > 1 else 1.0
    total_us = sum(d["gpu__time_duration.sum"] for d in per.values())
    print(f"{'kernel':60s} {'n':>4s} {'us/step':>9s} {'share':>6s} {'MB/step':>8s} {'GB/s':>6s}")
    total_bytes = 0.0
    for name, d in sorted(per.items(), key=lambda kv: -kv[1]["gpu__time_duration.sum"]):
        us = d["gpu__time_duration.sum"]
        b = d.get("dram__bytes_read.sum", 0.0) + d.get("dram__bytes_write.sum", 0.0)
        total_bytes += b
        print(f"{name:60s} {len(launches[name]):4d} {us / steps:9.1f} {100 * us / total_us:5.1f}% "
              f"{b / steps / 1e6:8.2f} {b / (us * 1e-6) / 1e9 if us else 0:6.0f}")
    print(f"total: {total_us / steps:.1f} us/step, {total_bytes / steps / 1e6:.1f} MB/step, "
          f"{total_bytes / (total_us * 1e-6) / 1e9:.0f} GB/s over the kernels' time")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
