#!/usr/bin/env python3
"""check_returns.py RETURNS.csv EVAL.json — `foxhunt eval --returns` checked by an
independent recomputation (issue 20): from the per-bar CSV alone, in plain Python (no
numpy), each policy's Sharpe (mean over population std of the step returns, times
sqrt(periods per year)), cumulative return, maximum drawdown (from the equity column,
the initial equity included), turnover (sum of the turnover column), costs (sum of the
cost column, already a share of the equity of the moment), time in market (share of
steps with a non-zero exposure) and round trips must equal eval.json's to 1e-9
relative (the CSV prints 17 significant digits); each row's return must be its equity
over the previous row's minus 1. Exit 0 when all agree, 1 naming the first that does
not. The close column must be a positive price on every row, and each policy's risk
section (VaR, CVaR, alpha, beta, best and worst periods, yearly returns, the worst
drawdowns) must match check_risk.py's recomputation."""
import csv
import json
import math
import sys

from check_risk import check_policy

REL = 1e-9


def close(a, b):
    return abs(a - b) <= REL * max(abs(a), abs(b), 1e-12) or (a == 0 and abs(b) < 1e-15)


def round_trips(exposure):
    trips, sign_open = 0, 0
    for x in exposure + [0.0]:
        sign = 0 if abs(x) <= 1e-12 else (1 if x > 0 else -1)
        if sign_open != 0 and sign != sign_open:
            trips += 1
            sign_open = 0
        if sign != 0 and sign_open == 0:
            sign_open = sign
    return trips


def main() -> int:
    with open(sys.argv[1], newline="") as f:
        rows = list(csv.DictReader(f))
    with open(sys.argv[2]) as f:
        ev = json.load(f)
    ppy = ev["periods_per_year"]
    if len(rows) != ev["bars"]:
        print(f"{len(rows)} rows for {ev['bars']} bars")
        return 1
    failures = 0
    # a stitched walk-forward path has no close column; eval's and train's have one
    if "close" in rows[0] and not all(float(r["close"]) > 0 for r in rows):
        print("the close column is missing a positive price")
        return 1
    times = [r["time"] for r in rows]
    bench = ([float(r["buy_and_hold_return"]) for r in rows[1:]]
             if "buy_and_hold" in ev["policies"] else None)
    for name, m in ev["policies"].items():
        equity = [float(r[f"{name}_equity"]) for r in rows]
        ret = [float(r[f"{name}_return"]) for r in rows[1:]]
        expo = [float(r[f"{name}_exposure"]) for r in rows[1:]]
        cost = [float(r[f"{name}_cost"]) for r in rows[1:]]
        turn = [float(r[f"{name}_turnover"]) for r in rows[1:]]
        T = len(ret)
        for t in range(T):
            if not close(ret[t], equity[t + 1] / equity[t] - 1.0):
                print(f"{name}: row {t + 1}: return {ret[t]!r} is not equity over equity - 1")
                return 1
        mean = sum(ret) / T
        sd = math.sqrt(sum((r - mean) ** 2 for r in ret) / T)
        peak, max_dd = equity[0], 0.0
        for e in equity[1:]:
            peak = max(peak, e)
            max_dd = max(max_dd, 1.0 - e / peak)
        got = {
            "sharpe": mean / sd * math.sqrt(ppy) if sd > 0 else 0.0,
            "cumulative_return": equity[-1] / equity[0] - 1.0,
            "max_drawdown": max_dd,
            "turnover": sum(turn),
            "costs": sum(cost),
            "time_in_market": sum(1 for x in expo if abs(x) > 1e-12) / T,
            "round_trips": round_trips(expo),
        }
        for key, value in got.items():
            want = m[key] if m[key] is not None else 0.0
            if not close(value, want):
                print(f"{name}: {key}: recomputed {value!r}, eval.json {want!r}")
                failures += 1
        for text in check_policy(name, m, times, equity, ret, bench, ppy):
            print(text)
            failures += 1
        print(f"{name}: Sharpe {got['sharpe']:.6f}, max drawdown {got['max_drawdown']:.6f}, "
              f"turnover {got['turnover']:.3f}, costs {got['costs']:.6f}, "
              f"{got['round_trips']} round trips: as eval.json")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
