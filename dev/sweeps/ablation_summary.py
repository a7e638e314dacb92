#!/usr/bin/env python3
"""ablation_summary.py OUT [--plot FILE.png] — the table of dev/sweeps/ablation_ppo.sh's runs
(markdown on stdout) and, with --plot, the learning curves: mean greedy validation Sharpe
over seeds against training steps, and the policy's entropy, for a few variants.

Per variant: greedy Sharpe of the final model on the validation split (mean +- standard
error over seeds), on the test split (mean, min, by seed), and of the model the
validation backtests chose (best.safetensors) on the test split. Differences are against
the "sweep" row (configs/ppo_sweep.ini as shipped)."""
import argparse
import csv
import json
import math
import sys
from pathlib import Path


def greedy_sharpe(path: Path) -> float:
    return json.loads(path.read_text())["policies"]["greedy"]["sharpe"]


def mean_se(xs):
    n = len(xs)
    m = sum(xs) / n
    if n < 2:
        return m, float("nan")
    var = sum((x - m) ** 2 for x in xs) / (n - 1)
    return m, math.sqrt(var / n)


def load(out: Path):
    rows = {}
    for vdir in sorted(p for p in out.iterdir() if p.is_dir()):
        seeds = sorted(vdir.glob("seed*"), key=lambda p: int(p.name[4:]))
        runs = []
        for s in seeds:
            try:
                runs.append({
                    "seed": int(s.name[4:]),
                    "val": greedy_sharpe(s / "val.json"),
                    "test": greedy_sharpe(s / "test.json"),
                    "best_test": greedy_sharpe(s / "best_test.json"),
                    "curve": list(csv.DictReader(open(s / "validation.csv"))),
                    "metrics": list(csv.DictReader(open(s / "metrics.csv"))),
                })
            except (OSError, KeyError, ValueError) as e:
                print(f"skipping {s}: {e}", file=sys.stderr)
        if runs:
            rows[vdir.name] = runs
    return rows


def table(rows) -> str:
    base_val = mean_se([r["val"] for r in rows["sweep"]])[0] if "sweep" in rows else None
    base_test = mean_se([r["test"] for r in rows["sweep"]])[0] if "sweep" in rows else None
    out = ["| variant | seeds | validation (final) | d val | test (final): mean / min | d test "
           "| test by seed | test (model chosen on validation) |",
           "|---|---|---|---|---|---|---|---|"]
    order = sorted(rows, key=lambda k: (k != "sweep", k != "quickstart", k.startswith("+"), k))
    for name in order:
        runs = rows[name]
        v, vse = mean_se([r["val"] for r in runs])
        t, tse = mean_se([r["test"] for r in runs])
        b, _ = mean_se([r["best_test"] for r in runs])
        dv = "" if base_val is None or name == "sweep" else f"{v - base_val:+.2f}"
        dt = "" if base_test is None or name == "sweep" else f"{t - base_test:+.2f}"
        by_seed = " / ".join(f"{r['test']:.2f}" for r in runs)
        out.append(f"| {name} | {len(runs)} | {v:.2f} +- {vse:.2f} | {dv} | "
                   f"{t:.2f} +- {tse:.2f} / {min(r['test'] for r in runs):.2f} | {dt} | "
                   f"{by_seed} | {b:.2f} |")
    return "\n".join(out)


def plot(rows, path: Path, names):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for name in names:
        if name not in rows:
            continue
        runs = rows[name]
        # validation curves: the evaluations every 5 iterations, averaged over seeds
        steps = [int(r["global_step"]) for r in runs[0]["curve"]]
        n = min(len(r["curve"]) for r in runs)
        mean = [sum(float(r["curve"][i]["sharpe"]) for r in runs) / len(runs) for i in range(n)]
        ax1.plot([s / 1e6 for s in steps[:n]], mean, marker="o", ms=3,
                 label=f"{name} ({len(runs)} seeds)")
        m = min(len(r["metrics"]) for r in runs)
        steps_m = [int(r["global_step"]) for r in runs[0]["metrics"][:m]]
        ent = [sum(float(r["metrics"][i]["action_entropy"]) for r in runs) / len(runs)
               for i in range(m)]
        ax2.plot([s / 1e6 for s in steps_m], ent, label=name)
    ax1.set_xlabel("training steps (millions)")
    ax1.set_ylabel("greedy validation Sharpe (mean over seeds)")
    ax1.axhline(0, color="grey", lw=0.5)
    ax1.legend(fontsize=8)
    ax2.set_xlabel("training steps (millions)")
    ax2.set_ylabel("sampled actions' entropy (nats)")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--plot", type=Path)
    ap.add_argument("--curves", default="sweep,quickstart,reward_scale=100,+iterations=160,"
                    "+episodes=2048")
    a = ap.parse_args()
    rows = load(a.out)
    if not rows:
        sys.exit(f"{a.out}: no finished runs")
    print(table(rows))
    if a.plot:
        plot(rows, a.plot, a.curves.split(","))


if __name__ == "__main__":
    main()
