#!/usr/bin/env python3
"""compare_metrics.py OLD NEW — whether two metrics.csv files hold the same rows in every
column but the timing ones, bit for bit as printed (%.9g). Columns are matched by name;
a Q learner's columns written before issue 33 under PPO's names are mapped to their own
(value_loss -> td_loss, explained_variance -> epsilon); PPO-only columns an old Q run
wrote as 0 (policy_loss, entropy, approx_kl, ...) must be 0 there. Exit 0 when equal."""
import csv
import sys

TIMING = {"collect_seconds", "update_seconds", "steps_per_second", "collect_steps_per_second"}
Q_RENAMED = {"value_loss": "td_loss", "explained_variance": "epsilon"}


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def main() -> int:
    old, new = rows(sys.argv[1]), rows(sys.argv[2])
    if len(old) != len(new) or not old:
        print(f"{len(old)} rows against {len(new)}")
        return 1
    q = "epsilon" in new[0] and "epsilon" not in old[0]
    compared = 0
    for i, (a, b) in enumerate(zip(old, new)):
        for col, value in a.items():
            if col in TIMING:
                continue
            name = Q_RENAMED.get(col, col) if q else col
            if name not in b:
                if q and float(value or 0) == 0.0:
                    continue  # a PPO column an old Q run filled with 0
                print(f"row {i + 1}: column {col} is missing from the new file")
                return 1
            if b[name] != value:
                print(f"row {i + 1}: {col} {value} against {name} {b[name]}")
                return 1
            compared += 1
    print(f"{len(old)} rows identical ({compared} values compared)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
