#!/usr/bin/env python3
"""summarize.py — issue 34 item 3: one line per asset of a variant's walk-forwards
(walkforward.json files), validation first (what a variant is kept or dropped by), then
the test numbers, reported once per variant.

  python3 dev/walkforward/summarize.py NAME FILE.json [FILE.json ...]

Validation: the chosen models' validation Sharpe over folds x seeds (mean ± se), how
many runs the gate let trade, the seed ensemble's validation Sharpe over the folds, and
the best classical baseline's (each fold's chosen setting's validation Sharpe, mean over
folds). Test (stitched): each seed's deployed (gated) and ungated greedy Sharpe, the
ensemble's, buy-and-hold's, the best baseline's (the best of three on test: the issue's
bar) and that of the baseline with the best validation Sharpe (the one a user would pick)."""
import json
import math
import os
import sys

BASELINES = ("vol_target", "tsmom", "ma_crossover")


def mean_se(xs):
    xs = [x for x in xs if x is not None and math.isfinite(x)]
    if not xs:
        return float("nan"), float("nan")
    m = sum(xs) / len(xs)
    if len(xs) < 2:
        return m, float("nan")
    v = sum((x - m) ** 2 for x in xs) / (len(xs) - 1)
    return m, math.sqrt(v / len(xs))


def baseline_validation(fold, name):
    b = fold.get("baselines", {}).get(name)
    if not b:
        return None
    for key in ("validation_sharpe", "chosen_validation_sharpe"):
        if key in b:
            return b[key]
    grid = b.get("grid") or []
    vals = [g.get("validation_sharpe") for g in grid if g.get("validation_sharpe") is not None]
    return max(vals) if vals else None


def main():
    name, files = sys.argv[1], sys.argv[2:]
    print(f"## {name}\n")
    print("| asset | val. Sharpe (folds x seeds) | gate open | ensemble val. | best baseline val. "
          "| test deployed (seeds) | test ungated (seeds) | ensemble test ungated / gated "
          "| buy-and-hold | best baseline test | val.-chosen baseline test |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for path in files:
        wf = json.load(open(path))
        asset = os.path.basename(path).rsplit(".", 1)[0]
        runs = [r for f in wf["fold_results"] for r in f["runs"]]
        vm, vse = mean_se([r.get("validation_sharpe") for r in runs])
        opened = sum(1 for r in runs if r.get("deployed"))
        ens = wf.get("ensemble")
        ev = mean_se([v.get("sharpe") for v in ens["validation"]])[0] if ens else float("nan")
        best_b, best_bv = None, -1e9
        for b in BASELINES:
            m = mean_se([baseline_validation(f, b) for f in wf["fold_results"]])[0]
            if math.isfinite(m) and m > best_bv:
                best_b, best_bv = b, m
        st = wf["stitched"]
        dep = " / ".join(f"{s['deployed']['sharpe']:.2f}" for s in st)
        ung = " / ".join(f"{s['policies']['greedy']['sharpe']:.2f}" for s in st)
        et = (f"{ens['ungated']['sharpe']:.2f} / {ens['deployed']['sharpe']:.2f} "
              f"(folds {ens['deployed']['folds_traded'] or 'none'})") if ens else "-"
        p0 = st[0]["policies"]
        bh = p0["buy_and_hold"]["sharpe"]
        bt = max((p0[b]["sharpe"], b) for b in BASELINES if b in p0)
        print(f"| {asset} | {vm:.2f} ± {vse:.2f} | {opened}/{len(runs)} | {ev:.2f} | "
              f"{best_b} {best_bv:.2f} | {dep} | {ung} | {et} | {bh:.2f} | {bt[1]} {bt[0]:.2f} | "
              f"{best_b} {p0[best_b]['sharpe']:.2f} |")
    print()


if __name__ == "__main__":
    main()
