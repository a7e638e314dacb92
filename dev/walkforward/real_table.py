#!/usr/bin/env python3
"""real_table.py — issue 34's table for one asset from a walk-forward's printed tables
(walkforward.md, or the log that ends with them): the agent gated, ungated and as a seed
ensemble (ungated, gated), each classical baseline, buy-and-hold and flat, with Sharpe ±
standard error, PSR(0), DSR, costs (share of equity) and turnover per year. Seeds are
joined "s1 / s2 / s3" in one cell.

  python3 dev/walkforward/real_table.py ASSET FILE [ASSET FILE ...]"""
import re
import sys


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def parse(text):
    """The stitched table's rows by policy (a list per seed), the deployed rows by seed and
    the ensemble rows, from walkforward.md's text."""
    stitched, deployed, ensemble = {}, [], {}
    section = None
    for line in text.splitlines():
        if line.startswith("### "):
            section = line
            continue
        if not line.startswith("| ") or line.startswith("| policy") or line.startswith("| seed"):
            continue
        c = cells(line)
        if section and section.startswith("### Stitched") and len(c) == 10:
            stitched.setdefault(c[0], []).append(
                {"sharpe": c[2], "turnover": c[6], "costs": c[7], "psr": c[8], "dsr": c[9]})
        elif section and section.startswith("### The deployed") and len(c) == 9:
            deployed.append({"folds": c[1], "sharpe": c[2], "costs": c[5], "turnover": c[6],
                             "psr": c[7], "dsr": ""})
        elif section and section.startswith("### The seed ensemble") and len(c) == 9:
            ensemble[c[0]] = {"folds": c[1], "sharpe": c[2], "costs": c[5], "turnover": c[6],
                              "psr": c[7], "dsr": ""}
    return stitched, deployed, ensemble


def join(rows, key):
    vals = [r[key] or "–" for r in rows]
    if all(v == "–" for v in vals):
        return "–"
    if key == "sharpe":  # "0.85 ± 0.78" per seed: one standard error for all
        se = {v.split("±")[1].strip() for v in vals if "±" in v}
        if len(se) != 1:  # each seed's own
            return " / ".join(vals)
        return " / ".join(v.split("±")[0].strip() for v in vals) + f" ± {se.pop()}"
    return " / ".join(vals)


def main():
    args = sys.argv[1:]
    print("| asset | policy | Sharpe ± se | PSR(0) | DSR | costs | turnover/yr |")
    print("|---|---|---|---|---|---|---|")
    for asset, path in zip(args[::2], args[1::2]):
        stitched, deployed, ensemble = parse(open(path).read())
        rows = []
        if deployed:
            folds = "; ".join(d["folds"] for d in deployed)
            rows.append((f"agent, gated (folds traded: {folds})", deployed))
        if "greedy" in stitched:
            rows.append(("agent, ungated", stitched["greedy"]))
        for name in ("ensemble (ungated)", "ensemble (gated)"):
            if name in ensemble:
                label = name.replace("ensemble", "seed ensemble")
                if "gated)" in name and "ungated" not in name:
                    label += f" (folds traded: {ensemble[name]['folds']})"
                rows.append((label, [ensemble[name]]))
        for name in ("vol_target", "tsmom", "ma_crossover", "buy_and_hold"):
            if name in stitched:
                rows.append((name.replace("_", "-") if name == "buy_and_hold" else name,
                             stitched[name][:1]))
        for label, r in rows:
            print(f"| {asset} | {label} | {join(r, 'sharpe')} | {join(r, 'psr')} | "
                  f"{join(r, 'dsr')} | {join(r, 'costs')} | {join(r, 'turnover')} |")
        print(f"| {asset} | flat | 0 | – | – | 0 | 0 |")


if __name__ == "__main__":
    main()
