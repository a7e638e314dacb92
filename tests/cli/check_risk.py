"""check_risk.py — the risk section of eval.json (docs/EVALUATION.md, "Risk") recomputed
in plain Python from returns.csv alone, for check_returns.py: historical VaR (the 5%
quantile, linear interpolation as numpy's default percentile) and CVaR (the mean at or
below it), beta (covariance over the benchmark's variance) and annualised alpha against
buy-and-hold, the best and worst UTC day, month and year (compounded step returns, a
step in the period of the bar it ends at), each year's return, the five deepest
drawdowns (peak, valley, recovery, depth, days) and the longest drawdown in days.
numpy, when installed, cross-checks the quantile and the covariance."""
import datetime
import math

REL = 1e-9


def close(a, b, rel=REL):
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-12) or abs(a - b) < 1e-15


def percentile(xs, q):
    s = sorted(xs)
    pos = q * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (pos - lo) * (s[hi] - s[lo])


def seconds(when):
    return datetime.datetime.strptime(when, "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def periods(times, ret, width):
    """{prefix: compounded return} over the steps, keyed by the end bar's time[:width]."""
    out = {}
    for t, r in zip(times[1:], ret):
        out[t[:width]] = out.get(t[:width], 1.0) * (1.0 + r)
    return {k: v - 1.0 for k, v in out.items()}


def drawdowns(times, equity):
    found, peak, cur = [], 0, None
    for t, e in enumerate(equity):
        if e >= equity[peak]:
            if cur:
                cur["end"], cur["recovered"] = t, True
                found.append(cur)
                cur = None
            peak = t
            continue
        if cur is None:
            cur = {"start": peak, "valley": t}
        if e < equity[cur["valley"]]:
            cur["valley"] = t
    if cur:
        cur["end"], cur["recovered"] = len(equity) - 1, False
        found.append(cur)
    for d in found:
        d["depth"] = 1.0 - equity[d["valley"]] / equity[d["start"]]
        d["days"] = (seconds(times[d["end"]]) - seconds(times[d["start"]])) / 86400.0
    longest = max((d["days"] for d in found), default=0.0)
    return sorted(found, key=lambda d: -d["depth"])[:5], longest


def check_policy(name, m, times, equity, ret, bench_ret, ppy):
    """Failures (texts) of one policy's eval.json risk section against the CSV."""
    risk, bad = m.get("risk"), []
    if risk is None:
        return [f"{name}: eval.json has no risk section"]
    var = percentile(ret, 0.05)
    tail = [r for r in ret if r <= var]
    got = {"var_95": var, "cvar_95": sum(tail) / len(tail)}
    if bench_ret is not None:
        mb, mr = sum(bench_ret) / len(ret), sum(ret) / len(ret)
        vb = sum((b - mb) ** 2 for b in bench_ret)
        if vb > 1e-24 * len(ret):
            beta = sum((r - mr) * (b - mb) for r, b in zip(ret, bench_ret)) / vb
            got["beta"], got["alpha"] = beta, (mr - beta * mb) * ppy
    for key, width in (("day", 10), ("month", 7), ("year", 4)):
        p = periods(times, ret, width)
        got[f"best_{key}"], got[f"worst_{key}"] = max(p.values()), min(p.values())
    for key, value in got.items():
        # alpha and beta: sums of products of returns, rounded differently from the C loop
        if not close(value, risk[key], 1e-7 if key in ("alpha", "beta") else REL):
            bad.append(f"{name}: risk.{key}: recomputed {value!r}, eval.json {risk[key]!r}")
    years = periods(times, ret, 4)
    if set(years) != set(risk["yearly_returns"]) or not all(
            close(v, risk["yearly_returns"][k]) for k, v in years.items()):
        bad.append(f"{name}: yearly returns {years} against eval.json {risk['yearly_returns']}")
    want, longest = drawdowns(times, equity)
    have = risk["worst_drawdowns"]
    if len(want) != len(have):
        bad.append(f"{name}: {len(want)} drawdowns recomputed, eval.json lists {len(have)}")
    for k, (w, h) in enumerate(zip(want, have)):
        same = (times[w["start"]] == h["start"] and times[w["valley"]] == h["valley"] and
                times[w["end"]] == h["end"] and w["recovered"] == h["recovered"] and
                close(w["depth"], h["depth"]) and close(w["days"], h["days"]))
        if not same:
            bad.append(f"{name}: drawdown {k + 1}: recomputed {w}, eval.json {h}")
    if not close(longest, m["max_drawdown_days"]):
        bad.append(f"{name}: max_drawdown_days: recomputed {longest}, eval.json "
                   f"{m['max_drawdown_days']}")
    try:  # an independent library's quantile and covariance, where it is installed
        import numpy as np
        if not close(float(np.percentile(ret, 5)), got["var_95"], 1e-12):
            bad.append(f"{name}: numpy's 5% percentile {np.percentile(ret, 5)!r} differs")
        if "beta" in got:
            c = np.cov(ret, bench_ret, bias=True)
            if not close(float(c[0, 1] / c[1, 1]), got["beta"], 1e-7):
                bad.append(f"{name}: numpy's beta {c[0, 1] / c[1, 1]!r} differs")
    except ImportError:
        pass
    return bad
