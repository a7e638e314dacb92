#!/usr/bin/env python3
"""check_walkforward.py DIR FOLDS SEEDS FIRST_SEED — `foxhunt walkforward` checked by an
independent recomputation (issue 20), in plain Python (no numpy):
- each fold's test segment starts on the previous segment's last bar, and the stitched
  returns_seed<s>.csv is every fold's returns.csv joined: the same times, each policy's
  step returns equal to the fold's (1e-9), costs the same share of equity;
- the stitched path's Sharpe, drawdown, turnover, ... agree with eval_seed<s>.json
  (tests/cli/check_returns.py does that part);
- walkforward.json's deflated Sharpe of each seed's greedy path equals the formula of
  Bailey and Lopez de Prado recomputed from the CSV (statistics.NormalDist), with the
  variance of the seeds' per-step Sharpe ratios, to 1e-6;
- the classical baselines (issue 34): each fold's choice in walkforward.json is its
  grid's highest validation Sharpe, the fold's baseline returns are the same for every
  seed, and each stitched baseline's deflated Sharpe is the formula recomputed from the
  CSV with the most trials any fold tried and the folds' mean variance of their grid's
  per-step validation Sharpe ratios (recomputed from the grid's Sharpes); walkforward.md
  shows them per fold, the settings chosen, and in the stitched table.
Exit 0 when all agree, 1 naming the first that does not."""
import csv
import json
import math
import os
import statistics
import subprocess
import sys

REL = 1e-9


def close(a, b, rel=REL):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-12)


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def sharpe_stats(returns):
    T = len(returns)
    mean = sum(returns) / T
    var = sum((r - mean) ** 2 for r in returns) / T
    sd = math.sqrt(var)
    skew = sum((r - mean) ** 3 for r in returns) / T / sd ** 3
    kurt = sum((r - mean) ** 4 for r in returns) / T / var ** 2
    return mean / sd, T, skew, kurt


def main() -> int:
    out, folds, seeds, first = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    here = os.path.dirname(os.path.abspath(__file__))
    wf = json.load(open(os.path.join(out, "walkforward.json")))
    per_step = []
    for s in range(seeds):
        seed = first + s
        stitched = read(os.path.join(out, f"returns_seed{seed}.csv"))
        parts = [read(os.path.join(out, f"fold{k + 1}_seed{seed}", "returns.csv"))
                 for k in range(folds)]
        for k in range(1, folds):
            if parts[k][0]["time"] != parts[k - 1][-1]["time"]:
                print(f"seed {seed}: fold {k + 1} does not start on fold {k}'s last bar")
                return 1
        joined = [r for p in parts[:-1] for r in p[:-1]] + parts[-1]
        if [r["time"] for r in joined] != [r["time"] for r in stitched]:
            print(f"seed {seed}: the stitched times are not the folds' joined")
            return 1
        policies = [c[:-len("_equity")] for c in stitched[0] if c.endswith("_equity")]
        row = 0
        for p in parts:
            for j in range(1, len(p)):
                row += 1
                for name in policies:
                    want = float(p[j][f"{name}_equity"]) / float(p[j - 1][f"{name}_equity"])
                    got = float(stitched[row][f"{name}_equity"]) / float(stitched[row - 1][f"{name}_equity"])
                    if not close(got, want):
                        print(f"seed {seed} {name} row {row}: step return {got - 1} != fold's {want - 1}")
                        return 1
                    want_c = float(p[j][f"{name}_cost"])
                    got_c = float(stitched[row][f"{name}_cost"])
                    if not (close(got_c, want_c) or abs(got_c - want_c) < 1e-15):
                        print(f"seed {seed} {name} row {row}: cost share {got_c} != fold's {want_c}")
                        return 1
        rc = subprocess.call([sys.executable, os.path.join(here, "check_returns.py"),
                              os.path.join(out, f"returns_seed{seed}.csv"),
                              os.path.join(out, f"eval_seed{seed}.json")])
        if rc != 0:
            print(f"seed {seed}: the stitched returns disagree with eval_seed{seed}.json")
            return 1
        greedy = [float(r["greedy_return"]) for r in stitched[1:]]
        per_step.append(sharpe_stats(greedy))
    if seeds > 1:
        n = seeds
        var = statistics.variance([p[0] for p in per_step])
        nd = statistics.NormalDist()
        g = 0.5772156649015329
        sr0 = math.sqrt(var) * ((1 - g) * nd.inv_cdf(1 - 1 / n) + g * nd.inv_cdf(1 - 1 / (n * math.e)))
        for s, (sr, T, skew, kurt) in enumerate(per_step):
            dsr = nd.cdf((sr - sr0) * math.sqrt(T - 1) / math.sqrt(1 - skew * sr + (kurt - 1) / 4 * sr * sr))
            got = wf["stitched"][s]["greedy_deflated_sharpe"]
            if not abs(got - dsr) <= 1e-6:
                print(f"seed {first + s}: deflated Sharpe {got} != recomputed {dsr}")
                return 1
            print(f"seed {first + s}: stitched greedy per-step Sharpe {sr:.5f}, DSR {dsr:.4f}: as walkforward.json")
    if len(wf["fold_results"]) != folds or any(len(f["runs"]) != seeds for f in wf["fold_results"]):
        print("walkforward.json does not hold every fold and seed")
        return 1
    if check_deployed(out, wf, folds, seeds, first):
        return 1
    if check_ensemble(wf, folds, seeds):
        return 1
    return check_baselines(out, wf, folds, seeds, first)


def check_ensemble(wf, folds, seeds):
    """The seed ensemble (issue 34 item 3): present exactly with 2 seeds or more; each fold
    gated on the ensemble's own validation PSR(0) as a single model is; its gated path the
    ungated one when every fold trades and flat (no return, no cost) when none does.
    (Its votes are checked against constant-action networks in test_ensemble.) 1 on a
    failure."""
    ens = wf.get("ensemble")
    if (ens is not None) != (seeds >= 2):
        print(f"{seeds} seeds, yet the ensemble is {'present' if ens else 'absent'}")
        return 1
    if ens is None:
        return 0
    min_psr = wf["deploy_min_psr"]
    traded = []
    for k, v in enumerate(ens["validation"]):
        psr = v.get("psr")
        want = min_psr <= 0 or ("sharpe" in v and psr is not None and psr >= min_psr)
        if v["deployed"] != want or v["fold"] != k + 1:
            print(f"ensemble fold {k + 1}: deployed {v['deployed']}, the gate says {want} (PSR {psr})")
            return 1
        if want:
            traded.append(k + 1)
    if len(ens["validation"]) != folds or ens["deployed"]["folds_traded"] != traded:
        print(f"ensemble: folds traded {ens['deployed']['folds_traded']} != {traded}")
        return 1
    dep, ung = ens["deployed"], ens["ungated"]
    if len(traded) == folds and (dep["sharpe"] != ung["sharpe"] or dep["costs"] != ung["costs"]):
        print(f"ensemble: every fold deployed, yet gated {dep} differs from ungated {ung}")
        return 1
    if not traded and (dep["cumulative_return"] != 0 or dep["costs"] != 0):
        print(f"ensemble: no fold deployed, yet its gated path is not flat: {dep}")
        return 1
    print(f"ensemble: ungated Sharpe {ung['sharpe']:.3f}, gated on folds {traded or 'none'}: "
          f"{dep['sharpe']:.3f}; the gate as recomputed")
    return 0


def check_deployed(out, wf, folds, seeds, first):
    """The deployment gate (issue 34): each run deployed exactly when its validation PSR(0)
    clears deploy_min_psr (0: always), and each seed's deployed path is the folds' greedy
    paths where deployed and flat elsewhere: its cumulative return the product of the
    deployed folds' greedy growth, recomputed from the folds' returns.csv. 1 on a failure."""
    min_psr = wf["deploy_min_psr"]
    for s in range(seeds):
        seed = first + s
        growth, traded = 1.0, []
        for k in range(folds):
            run = wf["fold_results"][k]["runs"][s]
            psr = run.get("validation_psr")
            want = min_psr <= 0 or ("validation_sharpe" in run and psr is not None and psr >= min_psr)
            if run["deployed"] != want:
                print(f"seed {seed} fold {k + 1}: deployed {run['deployed']}, the gate says {want} "
                      f"(validation PSR {psr}, deploy_min_psr {min_psr})")
                return 1
            if want:
                traded.append(k + 1)
                part = read(os.path.join(out, f"fold{k + 1}_seed{seed}", "returns.csv"))
                growth *= float(part[-1]["greedy_equity"]) / float(part[0]["greedy_equity"])
        dep = wf["stitched"][s]["deployed"]
        if dep["folds_traded"] != traded:
            print(f"seed {seed}: folds traded {dep['folds_traded']} != {traded}")
            return 1
        if not close(dep["cumulative_return"], growth - 1, 1e-9) and abs(dep["cumulative_return"] - (growth - 1)) > 1e-12:
            print(f"seed {seed}: deployed cumulative return {dep['cumulative_return']} != recomputed {growth - 1}")
            return 1
        greedy = wf["stitched"][s]["policies"]["greedy"]
        if len(traded) == folds and dep["sharpe"] != greedy["sharpe"]:
            print(f"seed {seed}: every fold deployed, yet the deployed Sharpe {dep['sharpe']} is not greedy's {greedy['sharpe']}")
            return 1
        print(f"seed {seed}: deployed on folds {traded or 'none'} (deploy_min_psr {min_psr}): "
              f"cumulative return {dep['cumulative_return']:.6f} as recomputed")
    return 0


BASELINES = ("vol_target", "tsmom", "ma_crossover")


def dsr_of(returns, n, var):
    sr, T, skew, kurt = sharpe_stats(returns)
    nd = statistics.NormalDist()
    g = 0.5772156649015329
    sr0 = 0.0
    if n > 1 and var > 0:
        sr0 = math.sqrt(var) * ((1 - g) * nd.inv_cdf(1 - 1 / n) + g * nd.inv_cdf(1 - 1 / (n * math.e)))
    return nd.cdf((sr - sr0) * math.sqrt(T - 1) / math.sqrt(1 - skew * sr + (kurt - 1) / 4 * sr * sr))


def check_baselines(out, wf, folds, seeds, first):
    ppy = json.load(open(os.path.join(out, f"eval_seed{first}.json")))["periods_per_year"]
    trials, variance = {b: 1 for b in BASELINES}, {b: 0.0 for b in BASELINES}
    for k, f in enumerate(wf["fold_results"]):
        for b in BASELINES:
            c = f["baselines"][b]
            sharpes = [t["validation_sharpe"] for t in c["grid"]]
            if c["chosen_on"] == "validation":
                best = c["grid"][sharpes.index(max(sharpes))]["description"]
                if c["parameters"]["description"] != best or c["trials"] != len(sharpes):
                    print(f"fold {k + 1} {b}: chose {c['parameters']['description']}, the best on validation is {best}")
                    return 1
            per_step = [x / math.sqrt(ppy) for x in sharpes]
            trials[b] = max(trials[b], c["trials"])
            variance[b] += (statistics.variance(per_step) if len(per_step) > 1 else 0.0) / folds
            # the baselines do not depend on the seed
            eq = [[r[f"{b}_equity"] for r in read(os.path.join(out, f"fold{k + 1}_seed{first + s}", "returns.csv"))]
                  for s in range(seeds)]
            if any(e != eq[0] for e in eq):
                print(f"fold {k + 1} {b}: the seeds' baseline paths differ")
                return 1
    stitched = read(os.path.join(out, f"returns_seed{first}.csv"))
    md = open(os.path.join(out, "walkforward.md")).read()
    for b in BASELINES:
        ret = [float(r[f"{b}_return"]) for r in stitched[1:]]
        want = dsr_of(ret, trials[b], variance[b])
        got = wf["stitched"][0]["policies"][b]["deflated_sharpe"]
        if not abs(got - want) <= 1e-6:
            print(f"{b}: stitched deflated Sharpe {got} != recomputed {want} ({trials[b]} trials, variance {variance[b]})")
            return 1
        if f"| {b} | (" not in md or f" {b} |" not in md.split("### Stitched")[0]:
            print(f"walkforward.md lacks {b} in the per-fold or the stitched table")
            return 1
        print(f"{b}: stitched DSR {got:.4f} over {trials[b]} trials: as recomputed")
    if "settings each fold chose" not in md:
        print("walkforward.md lacks the baselines' chosen settings")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
