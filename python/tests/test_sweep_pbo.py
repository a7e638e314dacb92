"""foxhunt sweep's probability of backtest overfitting (issue 34, item 4) and its
progress lines (issue 36, item 8), with a stand-in for `foxhunt train` and `foxhunt
eval` whose validation returns are known here: pbo.json must be foxhunt.pbo over the
matrix rebuilt in this file from the stand-in's formula; too few configurations, too
few bars, bad --pbo-blocks, failed backtests and moved validation splits are said, not
crashed on; the lines come as the trials run, with the time left estimated. The real
trainer's returns are checked against its own validation.csv in test_sweep.py."""

from __future__ import annotations

import csv
import json
import math
import os
import queue
import random
import re
import stat
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from foxhunt import pbo, sweep, sweep_progress

optuna = pytest.importorskip("optuna", reason="optuna is not installed (scripts/setup.sh "
                                               "installs it)")

REPO = Path(__file__).resolve().parents[2]
PERIODS = 252.0

FAKE = r'''#!{python}
"""Stands in for `foxhunt train` (4 evaluations of Sharpe -1000 * lr, final.safetensors
holding lr and seed) and `foxhunt eval --split validation --returns F` (FAKE_BARS bars,
400 by default, of N(0, 0.01) returns drawn by random.Random("<lr> <seed>"), after a
first row without a return, as foxhunt writes them). FAKE_COUNTER=FILE: each eval adds
one bar more than the last. FAKE_EVAL_FAIL=1: eval exits 1. FAKE_GATE=FILE: train
waits for FILE before its first evaluation."""
import os, random, re, sys, time
args = sys.argv[1:]
if "--help" in args:
    print("  --lr VALUE   Adam learning rate [ppo] lr (default: 0.0003)")
    sys.exit(0)
def arg(name):
    return args[args.index(name) + 1]
if args[0] == "train":
    lr = re.search(r"^\s*lr\s*=\s*(\S+)", open(arg("--config")).read(), re.M).group(1)
    os.makedirs(arg("--out"))
    with open(os.path.join(arg("--out"), "final.safetensors"), "w") as f:
        f.write(lr + " " + arg("--seed"))
    while os.environ.get("FAKE_GATE") and not os.path.exists(os.environ["FAKE_GATE"]):
        time.sleep(0.02)
    for it in range(1, 5):
        print(f"iter {{it}}/4  validation Sharpe {{-1000 * float(lr):.4f}} (best 0 at 1)",
              flush=True)
    sys.exit(0)
if os.environ.get("FAKE_EVAL_FAIL"):
    print("error: the stand-in's eval fails", file=sys.stderr)
    sys.exit(1)
lr, seed = open(arg("--checkpoint")).read().split()
bars = int(os.environ.get("FAKE_BARS", "400"))
counter = os.environ.get("FAKE_COUNTER")
if counter:
    n = int(open(counter).read()) if os.path.exists(counter) else 0
    open(counter, "w").write(str(n + 1))
    bars += n
rng = random.Random(lr + " " + seed)
with open(arg("--returns"), "w") as f:
    f.write("time,greedy_equity,greedy_return,sampled_return\n")
    f.write("2020-01-01T00:00:00Z,10000,,\n")
    for t in range(bars):
        f.write(f"2020-01-01T{{t:05d}},1,{{rng.gauss(0, 0.01)!r}},0\n")
print(f"evaluation: validation split, {{bars}} bars from a to b, {PERIODS} periods/year")
'''


def _fake(tmp_path: Path) -> Path:
    p = tmp_path / "fake_foxhunt"
    p.write_text(FAKE.format(python=sys.executable, PERIODS=PERIODS))
    p.chmod(p.stat().st_mode | stat.S_IEXEC)
    return p


def _space(tmp_path: Path, seeds=(1, 2)) -> Path:
    p = tmp_path / "space.json"
    p.write_text(json.dumps({"base": str(REPO / "configs" / "quickstart.ini"),
                             "seeds": list(seeds), "eval_every": 1,
                             "params": {"lr": {"low": 1e-4, "high": 3e-3, "log": True}}}))
    return p


def _sweep(tmp_path, monkeypatch, capsys, trials, *extra, env=None, seeds=(1, 2)):
    for k, v in (env or {}).items():
        monkeypatch.setenv(k, v)
    out = tmp_path / "sw"
    rc = sweep.main(["--space", str(_space(tmp_path, seeds)), "--out", str(out),
                     "--trials", str(trials), "--sampler", "random", "--seed", "5",
                     "--no-prune", "--foxhunt", str(_fake(tmp_path))] + list(extra))
    cap = capsys.readouterr()
    return rc, out, cap.out, cap.err


def _rebuilt_matrix(out: Path, seeds=(1, 2), bars=400) -> np.ndarray:
    """(bars, trials): the stand-in's returns, rebuilt from each trial's lr, mean over
    seeds (in float64 as the sweep reads them)."""
    with open(out / "trials.csv", newline="") as f:
        rows = sorted(csv.DictReader(f), key=lambda r: int(r["trial"]))
    cols = []
    for r in rows:
        per_seed = []
        for s in seeds:
            rng = random.Random(f"{r['lr']} {s}")
            per_seed.append([rng.gauss(0, 0.01) for _ in range(bars)])
        cols.append(np.mean(np.array(per_seed), axis=0))
    return np.stack(cols, axis=1)


def test_pbo_json_is_cscv_of_the_trials_validation_returns(tmp_path, monkeypatch, capsys):
    rc, out, stdout, _ = _sweep(tmp_path, monkeypatch, capsys, 4, "--pbo-blocks", "8")
    assert rc == 0, stdout
    rep = json.loads((out / "pbo.json").read_text())
    ref = pbo.pbo_cscv(_rebuilt_matrix(out), blocks=8, scale=math.sqrt(PERIODS))
    assert rep["computed"] is True and rep["trials"] == list(range(4))
    assert (rep["configurations"], rep["blocks"], rep["splits"]) == (4, 8, 70)
    assert rep["validation"]["bars"] == 400 and rep["periods_per_year"] == PERIODS
    assert rep["pbo"] == ref.pbo and rep["median_logit"] == ref.median_logit
    assert rep["prob_oos_loss"] == ref.prob_oos_loss
    assert rep["degradation"]["slope"] == pytest.approx(ref.degradation()[0], rel=1e-12)
    line = next(l for l in stdout.splitlines() if l.startswith("probability of backtest"))
    assert f"PBO {ref.pbo:.2f} over 4 configurations" in line, line
    assert "8 blocks of 50 validation bars, 70 splits" in line, line
    assert "pbo.json" in stdout.splitlines()[-1]
    # each trial's file: one column a seed, the first (return-less) row left out
    with open(out / "trials" / "00000" / "validation_returns.csv") as f:
        assert f.readline().startswith(f"# periods_per_year={PERIODS!r};")
        assert next(csv.reader(f)) == ["time", "seed1", "seed2"]


@pytest.mark.parametrize("case, says", [
    ("few bars", "PBO not computed: 30 rows cannot make 16 blocks of at least 2 rows; "
                 "use at most 14 blocks (--pbo-blocks)"),
    ("eval fails", "PBO not computed: 0 configuration(s) with validation returns (2 "
                   "complete trial(s), 2 without returns)"),
    ("moved bars", "trials 0 and 1 were validated on different bars (400 from "),
])
def test_pbo_not_computed_says_why(tmp_path, monkeypatch, capsys, case, says):
    trials, env, seeds = 2, {}, (1,)
    if case == "few bars":
        env = {"FAKE_BARS": "30"}
    elif case == "eval fails":   # two seeds: the second is not backtested
        env, seeds = {"FAKE_EVAL_FAIL": "1"}, (1, 2)
    else:
        env = {"FAKE_COUNTER": str(tmp_path / "count")}
    rc, out, stdout, stderr = _sweep(tmp_path, monkeypatch, capsys, trials, env=env,
                                     seeds=seeds)
    assert rc == 0 and "Traceback" not in stdout + stderr, stdout + stderr
    assert says in stdout, stdout
    rep = json.loads((out / "pbo.json").read_text())
    assert rep["computed"] is False and says.split("PBO not computed: ")[-1] in rep["why"]
    assert (out / "best.ini").is_file() and (out / "trials.csv").is_file()
    if case == "eval fails":
        log = (out / "trials" / "00000" / "seed1_eval.log").read_text()
        assert "eval --checkpoint" in log and "the stand-in's eval fails" in log
        assert "trial 1 is left out of the PBO: seed 1: foxhunt eval exited 1 (see " in stdout
        assert not (out / "trials" / "00000" / "seed2_eval.log").exists()


def test_seeds_on_other_bars_leave_the_trial_out(tmp_path, monkeypatch, capsys):
    """A trial whose seeds were validated on different bars has no column."""
    rc, out, stdout, _ = _sweep(tmp_path, monkeypatch, capsys, 2,
                                env={"FAKE_COUNTER": str(tmp_path / "count")})
    assert rc == 0
    assert stdout.count("is left out of the PBO: seed 2 was validated on other bars than "
                        "seed 1") == 2, stdout
    assert not list(out.glob("trials/*/validation_returns.csv"))
    assert "PBO not computed: 0 configuration(s)" in stdout


def test_resumed_sweep_backtests_only_new_trials(tmp_path, monkeypatch, capsys):
    """One trial: no PBO (one configuration), said. The returns are backtested when a
    sweep ends, for the complete trials that lack them: a rerun adding trials backtests
    only those (and a study's older trials, here one whose file was removed, as a sweep
    from before the PBO left them); the PBO covers them all. --no-pbo backtests nothing
    and says so."""
    one = {"seeds": (1,)}
    rc, out, stdout, _ = _sweep(tmp_path, monkeypatch, capsys, 1, **one)
    says = ("PBO not computed: 1 configuration(s) with validation returns (1 complete "
            "trial(s)); PBO needs at least 2: run more trials")
    assert rc == 0 and says in stdout, stdout
    assert json.loads((out / "pbo.json").read_text())["why"] in says
    (out / "trials" / "00000" / "validation_returns.csv").unlink()
    rc, out, stdout, _ = _sweep(tmp_path, monkeypatch, capsys, 2, **one)
    assert rc == 0 and "PBO: backtesting 3 model(s) of 3 complete trial(s)" in stdout
    rep = json.loads((out / "pbo.json").read_text())
    assert rep["computed"] and rep["trials"] == [0, 1, 2]
    ref = pbo.pbo_cscv(_rebuilt_matrix(out, seeds=(1,)), 16, math.sqrt(PERIODS))
    assert rep["pbo"] == ref.pbo and rep["median_logit"] == ref.median_logit
    rc, out, stdout, _ = _sweep(tmp_path, monkeypatch, capsys, 1, "--no-pbo", **one)
    assert rc == 0 and "PBO: backtesting" not in stdout
    assert "PBO not computed: --no-pbo" in stdout
    assert json.loads((out / "pbo.json").read_text()) == {"computed": False,
                                                          "why": "--no-pbo"}
    assert not (out / "trials" / "00003" / "validation_returns.csv").exists()


@pytest.mark.parametrize("blocks", ["3", "0", "22", "-2"])
def test_bad_pbo_blocks_is_refused_before_any_trial(tmp_path, monkeypatch, capsys, blocks):
    rc, out, _, stderr = _sweep(tmp_path, monkeypatch, capsys, 2, "--pbo-blocks", blocks)
    assert rc == 2 and stderr.count("\n") == 1, stderr
    assert f"--pbo-blocks {blocks}: the blocks are an even number from 2 to 20" in stderr
    assert not out.exists()


def test_progress_lines(tmp_path, monkeypatch, capsys):
    """Per trial: started (i/N, its number, its values), one line a seed, and its end
    (result, duration, best so far, values, elapsed, time left; 'done' at the last)."""
    rc, _, stdout, _ = _sweep(tmp_path, monkeypatch, capsys, 3)
    assert rc == 0
    lines = [l for l in stdout.splitlines() if l.startswith("trial ")]
    seed = (r"trial {i}/3 \(#{n}\) seed %d: validation Sharpe -?[0-9.]+ "
            r"\(\d+ s into the trial\)")
    pat = [r"trial {i}/3 \(#{n}\) started: lr [0-9.e-]+; elapsed \d+ s", seed % 1, seed % 2,
           r"trial {i}/3 \(#{n}\) complete: -?[0-9.]+ in \d+ s \(best so far -?[0-9.]+, "
           r"#\d\): lr [0-9.e-]+; elapsed \d+ s, {eta}"]
    expect = [p.format(i=i + 1, n=i, eta="done" if i == 2 else r"about \d+ s left")
              for i in range(3) for p in pat]
    assert len(lines) == len(expect), lines
    for line, p in zip(lines, expect):
        assert re.fullmatch(p, line), (line, p)


def test_progress_lines_are_flushed_as_the_trial_runs(tmp_path):
    """Through a pipe (block-buffered unless flushed), the start line arrives while the
    trial's trainer still waits (issue 36: ten minutes of nothing)."""
    gate = tmp_path / "gate"
    env = dict(os.environ, FAKE_GATE=str(gate),
               PYTHONPATH=str(REPO / "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-m", "foxhunt.sweep", "--space", str(_space(tmp_path, (1,))),
           "--out", str(tmp_path / "sw"), "--trials", "1", "--no-prune",
           "--foxhunt", str(_fake(tmp_path))]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    got: "queue.Queue[str]" = queue.Queue()
    threading.Thread(target=lambda: [got.put(l) for l in proc.stdout], daemon=True).start()
    try:
        first = got.get(timeout=60)
        assert first.startswith("trial 1/1 (#0) started: lr "), first
        assert proc.poll() is None and not gate.exists()
    finally:
        gate.touch()
        assert proc.wait(timeout=60) == 0


def test_evaluations_printed_when_a_trial_was_quiet():
    """A run's validation evaluations are printed only after HEARTBEAT_S (30 s) without
    a line of that trial (a long CPU run), with a stand-in clock."""
    now = [0.0]
    said: list[str] = []
    p = sweep_progress.TrialProgress(2, 1, said.append, clock=lambda: now[0])
    p.started(0, {"lr": 0.001})
    for t, it in [(10, 10), (31, 20), (40, 30)]:
        now[0] = t
        p.evaluation(0, 1, it, 80, 0.5 + it / 100)
    now[0] = 50.0
    p.seed_done(0, 1, 1.25)
    for t, it in [(70, 10), (81, 20)]:
        now[0] = t
        p.evaluation(0, 2, it, 80, float("nan"))
    assert said[1:] == [
        "trial 1/2 (#0) seed 1: iteration 20/80, validation Sharpe 0.700 (31 s into the "
        "trial)",
        "trial 1/2 (#0) seed 1: validation Sharpe 1.250 (50 s into the trial)",
        "trial 1/2 (#0) seed 2: iteration 20/80, validation Sharpe nan (81 s into the "
        "trial)"]


def test_time_left_estimate():
    """Trials left x the mean duration of those that ended / jobs, with a stand-in
    clock: 1 of 6 trials ended after 10 s, 2 jobs: 5 x 10 / 2 = 25 s; 2 after 10 s and
    30 s: 4 x 20 / 2 = 40 s; a third failed at once: 3 x 40/3 / 2 = 20 s."""
    now = [100.0]
    said: list[str] = []
    p = sweep_progress.TrialProgress(6, 2, said.append, clock=lambda: now[0])
    assert p.time_left() is None
    p.started(0, {"lr": 0.000123456, "epochs": 4})
    p.started(1, {"lr": 0.002, "epochs": 2})
    now[0] = 110.0
    p.finished(0, "complete", 1.5, {"lr": 0.000123456, "epochs": 4}, (1.5, 0))
    now[0] = 130.0
    p.finished(1, "pruned", None, {"lr": 0.002, "epochs": 2}, (1.5, 0))
    assert p.time_left() == pytest.approx(40.0)
    assert said[0] == "trial 1/6 (#0) started: lr 0.000123, epochs 4; elapsed 0 s"
    assert said[2] == ("trial 1/6 (#0) complete: 1.500 in 10 s (best so far 1.500, #0): "
                       "lr 0.000123, epochs 4; elapsed 10 s, about 25 s left")
    assert said[3] == ("trial 2/6 (#1) pruned in 30 s (best so far 1.500, #0): lr 0.002, "
                       "epochs 2; elapsed 30 s, about 40 s left")
    p.finished(7, "fail", None, {}, None, error="boom")   # failed before it started
    assert said[4] == ("trial 3/6 (#7) failed in 0 s; elapsed 30 s, about 20 s left\n"
                       "  error: boom")
    assert [sweep_progress.format_seconds(s) for s in (41, 330, 8280, -1)] == \
        ["41 s", "5.5 min", "2.3 h", "?"]
