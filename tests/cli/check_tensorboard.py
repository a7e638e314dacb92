#!/usr/bin/env python3
"""check_tensorboard.py RUN_DIR — a run directory's TensorBoard event files read back by
the `tensorboard` package's own reader (EventAccumulator, as `tensorboard --logdir`
loads a run; issue 36) against the run's other files:

- every metrics.csv cell (charts/<column>, the learner's columns losses/<column>) at
  step = its row's global_step, once per step, equal to the cell as float32 within one
  float32 ulp (the csv prints 9 significant digits of the double, which can round to
  the neighbouring float32); an empty cell has no event;
- every validation.csv row (validation/<name>, 17 digits: exactly its float32), and
  validation/best_sharpe the best Sharpe so far;
- eval.json's greedy policy (eval/<name>: exactly float32) and buy-and-hold's Sharpe and
  return, at the last global step; eval/psr a probability;
- the text summary "config" (the latest: a resume writes its own): config.json as a
  Markdown code block.

Exit 0 when all agree, 1 naming the first that does not, 77 without the package."""
import csv
import glob
import json
import math
import os
import sys

try:
    import numpy as np
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
except ImportError as e:  # the ctest entry reports a skip
    print(f"skip: {e} (pip install tensorboard)")
    sys.exit(77)


def fail(msg):
    print(f"check_tensorboard: {msg}")
    sys.exit(1)


def f32(x):
    return float(np.float32(x))


def scalars(acc, tag):
    if tag not in acc.Tags()["scalars"]:
        return {}
    events = acc.Scalars(tag)
    steps = [e.step for e in events]
    if len(steps) != len(set(steps)):
        fail(f"{tag}: a step logged twice: {steps}")
    return {e.step: e.value for e in events}


def main(run):
    files = glob.glob(os.path.join(run, "events.out.tfevents.*"))
    if not files:
        fail(f"{run}: no event file")
    acc = EventAccumulator(run, size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    own = set()
    with open(os.path.join(run, "metrics.csv")) as f:
        rows = list(csv.DictReader(f))
    if not rows:
        fail("metrics.csv has no rows")
    columns = list(rows[0].keys())
    # the learner's columns follow the 18 common ones (run_dir.c)
    own = set(columns[18:])
    for col in columns:
        tag = ("losses/" if col in own else "charts/") + col
        got = scalars(acc, tag)
        want = {int(r["global_step"]): float(r[col]) for r in rows if r[col] != ""}
        if set(got) != set(want):
            fail(f"{tag}: steps {sorted(got)}, metrics.csv has {sorted(want)}")
        for step, v in want.items():
            ulp = float(np.spacing(np.float32(abs(v)))) if v != 0 else 0.0
            if abs(got[step] - f32(v)) > ulp:
                fail(f"{tag} at step {step}: {got[step]!r}, metrics.csv {v!r}")
    n_checked = len(columns)

    path = os.path.join(run, "validation.csv")
    if os.path.exists(path):
        with open(path) as f:
            vrows = list(csv.DictReader(f))
        best = -math.inf
        names = ["sharpe", "sharpe_se", "psr", "cumulative_return", "max_drawdown",
                 "time_in_market", "turnover"]
        for name in names + ["best_sharpe"]:
            got = scalars(acc, "validation/" + name)
            for r in vrows:
                step = int(r["global_step"])
                if name == "best_sharpe":
                    s = float(r["sharpe"])
                    best = max(best, s) if math.isfinite(s) else best
                    v = best
                else:
                    v = float(r[name])
                if not math.isfinite(v):
                    if step in got:
                        fail(f"validation/{name} at {step}: {got[step]}, the csv's is {v}")
                    continue
                if got.get(step) != f32(v):
                    fail(f"validation/{name} at step {step}: {got.get(step)!r}, "
                         f"validation.csv {v!r}")
            n_checked += 1

    path = os.path.join(run, "eval.json")
    if os.path.exists(path):
        with open(path) as f:
            ev = json.load(f)
        last = int(rows[-1]["global_step"])
        greedy, bh = ev["policies"]["greedy"], ev["policies"]["buy_and_hold"]
        want = {k: greedy[k] for k in ["sharpe", "sharpe_se", "cumulative_return",
                                       "annualised_return", "max_drawdown", "costs",
                                       "time_in_market"]}
        want["buy_and_hold_sharpe"] = bh["sharpe"]
        want["buy_and_hold_return"] = bh["cumulative_return"]
        for name, v in want.items():
            got = scalars(acc, "eval/" + name)
            if v is None:  # not finite: left out of both
                if got:
                    fail(f"eval/{name}: {got}, eval.json has null")
                continue
            if got != {last: f32(v)}:
                fail(f"eval/{name}: {got}, eval.json {v!r} at step {last}")
            n_checked += 1
        psr = scalars(acc, "eval/psr")
        if list(psr) != [last] or not 0 <= psr[last] <= 1:
            fail(f"eval/psr: {psr}")

    if "config" not in acc.Tags()["tensors"]:
        fail("no config text")
    text_events = acc.Tensors("config")
    meta = acc.SummaryMetadata("config")
    if meta.plugin_data.plugin_name != "text":
        fail(f"config: plugin {meta.plugin_data.plugin_name!r}, expected text")
    with open(os.path.join(run, "config.json")) as f:
        config = f.read()
    block = "".join("    " + line for line in config.splitlines(keepends=True))
    got = text_events[-1].tensor_proto.string_val[0].decode()  # the latest (a resume's)
    if got != block:
        fail(f"config text differs from config.json:\n{got[:300]}")
    print(f"check_tensorboard: {len(files)} event file(s), {n_checked} tags agree with "
          f"metrics.csv, validation.csv, eval.json; config text = config.json")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        fail("usage: check_tensorboard.py RUN_DIR")
    sys.exit(main(sys.argv[1]))
