"""The probability of backtest overfitting of a sweep (foxhunt.sweep; issue 34, item 4;
docs/WALKFORWARD.md, "The probability of backtest overfitting").

The matrix M (foxhunt.pbo): one column per complete trial (configuration), one row per
bar of the validation split, the split the sweep chooses on: the per-bar return of the
greedy policy of the model each seed's objective scored (final.safetensors for
``"objective": "final"``, best.safetensors for ``"best"``), backtested by ``foxhunt eval
--split validation``, averaged over the trial's seeds. The trainer's own
``validation.csv`` holds one Sharpe ratio per evaluation, not the bars, hence the extra
backtest, run when the sweep ends for the complete trials only (pruned ones are not
configurations the search could pick; ~1 s a run on 10,000 bars, on the CPU). A trial
keeps its column in ``trials/NNNNN/validation_returns.csv`` (time, one column per seed;
the first line a comment with the periods a year), so a resumed sweep backtests only
the trials it has not yet, a study's older trials included.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

from foxhunt.pbo import PboError, pbo_cscv

RETURNS_FILE = "validation_returns.csv"
PBO_FILE = "pbo.json"
DEFAULT_BLOCKS = 16
MATRIX = ("per-bar returns of each complete trial's greedy policy on the validation "
          "split (the model its objective scored, mean over its seeds)")
_PERIODS = re.compile(r"(\d+(?:\.\d+)?) periods/year")
_HEADER = re.compile(r"^# periods_per_year=([0-9.eE+]+);")


def run_validation_returns(foxhunt: str, run_dir: Path, objective: str,
                           log_path: Path) -> tuple[list[str], list[float], float] | str:
    """Backtests a finished run's scored model on its validation split with ``foxhunt
    eval``: (times, greedy returns, periods a year), or why not (one line; the eval's
    output then kept in log_path)."""
    model = run_dir / ("best.safetensors" if objective == "best" else "final.safetensors")
    tmp = run_dir / "validation_returns.tmp.csv"
    cmd = [foxhunt, "eval", "--checkpoint", str(model), "--split", "validation",
           "--returns", str(tmp), "--device", "cpu"]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                           timeout=1800, stdin=subprocess.DEVNULL)
        out, rc = r.stdout + r.stderr, r.returncode
    except (OSError, subprocess.SubprocessError) as e:
        out, rc = f"{type(e).__name__}: {e}", -1
    try:
        why = None
        m = _PERIODS.search(out)
        if rc != 0 or m is None or not tmp.is_file():
            why = f"foxhunt eval exited {rc}" if rc else "foxhunt eval wrote no returns"
        else:
            times, rets = _greedy_column(tmp)
            if not rets:
                why = f"{tmp.name}: no greedy_return rows"
    except (OSError, ValueError, KeyError) as e:
        why = f"cannot read the eval's returns: {e}"
    finally:
        tmp.unlink(missing_ok=True)
    if why:
        log_path.write_text(" ".join(cmd) + "\n" + out)
        return f"{why} (see {log_path})"
    return times, rets, float(m.group(1))


def _greedy_column(path: Path) -> tuple[list[str], list[float]]:
    """time and greedy_return of an eval returns CSV; its first row (the start, no
    return) left out. ValueError for a value that is not a finite number."""
    times, rets = [], []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            v = row["greedy_return"]
            if v == "" and not times:
                continue
            x = float(v)
            if not math.isfinite(x):
                raise ValueError(f"greedy_return {v!r} at {row['time']}")
            times.append(row["time"])
            rets.append(x)
    return times, rets


def write_trial_returns(path: Path, times: list[str], by_seed: dict[int, list[float]],
                        periods: float) -> None:
    """One trial's validation returns (time, seed<s>, ...) written atomically."""
    tmp = path.parent / (path.name + ".tmp")
    with open(tmp, "w", newline="") as f:
        f.write(f"# periods_per_year={periods!r}; greedy per-bar returns on the validation "
                "split (foxhunt eval --split validation), one column per seed\n")
        w = csv.writer(f)
        w.writerow(["time"] + [f"seed{s}" for s in by_seed])
        for i, t in enumerate(times):
            w.writerow([t] + [repr(by_seed[s][i]) for s in by_seed])
    os.replace(tmp, path)


def trial_returns(foxhunt: str, tdir: Path, seeds: list[int], objective: str) -> Optional[str]:
    """Writes tdir's validation_returns.csv from its seeds' runs unless it is there;
    None, or why it could not (one line)."""
    path = tdir / RETURNS_FILE
    if path.is_file():
        return None
    if not seeds:
        return "no seed's value recorded"
    by_seed: dict[int, list[float]] = {}
    times: list[str] = []
    periods = 0.0
    for s in seeds:
        got = run_validation_returns(foxhunt, tdir / f"seed{s}", objective,
                                     tdir / f"seed{s}_eval.log")
        if isinstance(got, str):
            return f"seed {s}: {got}"
        if by_seed and got[0] != times:
            return f"seed {s} was validated on other bars than seed {seeds[0]}"
        times, by_seed[s], periods = got
    try:
        write_trial_returns(path, times, by_seed, periods)
    except OSError as e:
        return f"{path}: cannot write: {e.strerror}"
    return None


def collect_returns(foxhunt: str, out: Path, trials: list[tuple[int, list[int]]],
                    objective: str, jobs: int, log: Callable[[str], None]) -> None:
    """The validation returns of the complete trials ((number, seeds)) that lack them,
    `jobs` backtests at a time; a trial that cannot have them is named, with why."""
    todo = [(n, seeds) for n, seeds in trials
            if not (out / "trials" / f"{n:05d}" / RETURNS_FILE).is_file()]
    if not todo:
        return
    runs = sum(len(seeds) for _, seeds in todo)
    log(f"PBO: backtesting {runs} model(s) of {len(todo)} complete trial(s) on the "
        "validation split")
    with ThreadPoolExecutor(max(1, jobs)) as ex:
        whys = list(ex.map(lambda t: trial_returns(foxhunt, out / "trials" / f"{t[0]:05d}",
                                                   t[1], objective), todo))
    for (n, _), why in zip(todo, whys):
        if why:
            log(f"  trial {n} is left out of the PBO: {why}")


def read_trial_returns(path: Path) -> tuple[list[str], np.ndarray, float]:
    """(times, the mean over seeds of each bar's return, periods a year) of a file
    write_trial_returns wrote; ValueError or OSError for another."""
    with open(path, newline="") as f:
        m = _HEADER.match(f.readline())
        if not m:
            raise ValueError("no '# periods_per_year=' first line")
        rows = list(csv.reader(f))
    if len(rows) < 2 or rows[0][0] != "time" or len(rows[0]) < 2:
        raise ValueError("no time,seed<s> header and rows")
    times = [r[0] for r in rows[1:]]
    vals = np.array([[float(x) for x in r[1:]] for r in rows[1:]])
    if vals.shape[1] != len(rows[0]) - 1 or not np.all(np.isfinite(vals)):
        raise ValueError("a row of the wrong length or a value that is not finite")
    return times, vals.mean(axis=1), float(m.group(1))


def sweep_pbo(out: Path, complete: list[int], blocks: int) -> dict[str, Any]:
    """The PBO of the complete trials (their numbers) of the sweep in out, as a dict
    (pbo.json): the numbers of foxhunt.pbo's summary and what M is, or computed false
    and why not."""
    report: dict[str, Any] = {"computed": False, "method": "CSCV (Bailey, Borwein, Lopez "
                              "de Prado and Zhu, 2017)", "matrix": MATRIX, "blocks": blocks,
                              "complete_trials": len(complete)}
    cols, used, missing = [], [], []
    ref: Optional[tuple[int, list[str]]] = None
    periods = 0.0
    for n in complete:
        path = out / "trials" / f"{n:05d}" / RETURNS_FILE
        try:
            times, col, periods_n = read_trial_returns(path)
        except FileNotFoundError:
            missing.append(n)
            continue
        except (OSError, ValueError) as e:
            report["why"] = f"{path}: {e}; remove the file to leave the trial out"
            return report
        if ref is None:
            ref, periods = (n, times), periods_n
        elif times != ref[1]:
            report["why"] = (f"trials {ref[0]} and {n} were validated on different bars "
                             f"({len(ref[1])} from {ref[1][0]}, {len(times)} from "
                             f"{times[0] if times else '-'}): a swept setting moves the "
                             "validation split, and PBO compares configurations on the "
                             "same bars")
            return report
        cols.append(col)
        used.append(n)
    report.update(configurations=len(used), trials=used, without_returns=missing)
    if missing:
        report["without_returns_note"] = ("complete trials whose models could not be "
                                          "backtested (see trials/NNNNN/seed*_eval.log)")
    if len(used) < 2:
        report["why"] = (f"{len(used)} configuration(s) with validation returns "
                         f"({len(complete)} complete trial(s)"
                         + (f", {len(missing)} without returns" if missing else "")
                         + "); PBO needs at least 2: run more trials")
        return report
    try:
        res = pbo_cscv(np.stack(cols, axis=1), blocks=blocks, scale=math.sqrt(periods))
    except PboError as e:
        report["why"] = f"{e} (--pbo-blocks)"
        return report
    report.update(computed=True, periods_per_year=periods,
                  validation={"from": ref[1][0], "to": ref[1][-1], "bars": len(ref[1])},
                  **res.summary())
    report["configurations"] = len(used)
    return report


def pbo_lines(report: dict[str, Any]) -> list[str]:
    """The summary's lines for the terminal."""
    if not report.get("computed"):
        return [f"PBO not computed: {report.get('why', 'unknown')}"]
    r = report
    head = (f"probability of backtest overfitting (CSCV, docs/WALKFORWARD.md): PBO "
            f"{r['pbo']:.2f} over {r['configurations']} configurations (complete trials), "
            f"{r['blocks']} blocks of {r['rows_per_block']} validation bars, "
            f"{r['splits']} splits")
    body = (f"  median logit {r['median_logit']:.2f}; the in-sample best lost money on the "
            f"held-out blocks in {100 * r['prob_oos_loss']:.0f}% of splits")
    d = r.get("degradation")
    if d:
        body += (f"; held-out Sharpe = {d['slope']:.2f} x in-sample Sharpe "
                 f"{'+' if d['intercept'] >= 0 else '-'} {abs(d['intercept']):.2f} "
                 f"(R^2 {d['r2']:.2f})")
    lines = [head, body]
    if r["without_returns"]:
        lines.append(f"  left out: trials {r['without_returns']} (no validation returns; "
                     "see trials/NNNNN/seed*_eval.log)")
    if r["pbo"] > 0.5:
        lines.append("  PBO above 0.5: the configuration best on part of the validation "
                     "bars does worse than the median one on the rest more often than "
                     "not; the sweep's choice is worse than chance out of sample")
    return lines


def write_pbo_json(path: Path, report: dict[str, Any]) -> None:
    """pbo.json, atomically."""
    tmp = path.parent / (path.name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(report, f, indent=1, allow_nan=False)
        f.write("\n")
    os.replace(tmp, path)
