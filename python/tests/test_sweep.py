"""foxhunt.sweep (issue 23): the space file's checks, the trial INI writer read back by
foxhunt itself, a small real sweep on the CPU whose scores are compared with the runs'
own validation.csv, and Optuna's early stopping stopping runs, with a stand-in trainer."""

from __future__ import annotations

import csv
import json
import os
import stat
import sys
from pathlib import Path

import pytest

from foxhunt import sweep

optuna = pytest.importorskip("optuna", reason="optuna is not installed (scripts/setup.sh "
                                               "installs it)")

REPO = Path(__file__).resolve().parents[2]
TINY = ["--episodes", "16", "--steps", "16", "--iterations", "4", "--minibatch", "64",
        "--synthetic-bars", "3000"]


def _space(tmp_path: Path, **fields) -> Path:
    raw = {"base": str(REPO / "configs" / "quickstart.ini"), "seeds": [1], "eval_every": 2,
           "params": {"lr": {"low": 1e-4, "high": 3e-3, "log": True}}}
    raw.update(fields)
    p = tmp_path / "space.json"
    p.write_text(json.dumps(raw))
    return p


@pytest.mark.parametrize("fields, says", [
    ({"params": {}}, "'params' must map"),
    ({"params": {"lr": {"low": 2, "high": 1}}}, "low 2 must be below high 1"),
    ({"params": {"lr": {"low": 0, "high": 1, "log": True}}}, "log range needs low > 0"),
    ({"params": {"Bad-Key": {"low": 0, "high": 1}}}, "not a config key"),
    ({"params": {"lr": {"choices": []}}}, "non-empty list"),
    ({"seeds": []}, "'seeds' must be"),
    ({"eval_every": 0}, "'eval_every' must be"),
    ({"objective": "test"}, "'objective'"),
    ({"base": "no_such.ini"}, "does not exist"),
    ({"sample": 3}, "unknown field"),
])
def test_space_errors_name_file_and_field(tmp_path, fields, says):
    p = _space(tmp_path, **fields)
    with pytest.raises(sweep.SweepError) as e:
        sweep.load_space(p)
    assert str(p) in str(e.value) and says in str(e.value)


def test_space_bad_json_gives_line(tmp_path):
    p = tmp_path / "s.json"
    p.write_text('{\n "base": "x",\n "seeds": [1,,]\n}')
    with pytest.raises(sweep.SweepError, match=r"s\.json:3: not JSON"):
        sweep.load_space(p)


def test_shipped_space_loads():
    s = sweep.load_space(REPO / "configs" / "sweep_ppo.json")
    assert s.base == (REPO / "configs" / "quickstart.ini").resolve()
    assert len(s.params) >= 8 and s.objective == "final"


def test_write_config_read_back_by_foxhunt(tmp_path, foxhunt_bin):
    """Keys the base sets are replaced in their section, others go before the first
    section; foxhunt's own parser (the run's config.json) must read every value."""
    values = {"lr": 0.00123, "ent_coef": 0.017, "epochs": 3, "reward_scale": 1.7}
    ini = tmp_path / "t.ini"
    sweep.write_config(REPO / "configs" / "quickstart.ini", values, ini, header="test")
    text = ini.read_text()
    assert text.count("lr =") == 1 and text.count("epochs =") == 1
    run = tmp_path / "run"
    import subprocess
    r = subprocess.run([str(foxhunt_bin), "train", "--config", str(ini), "--iterations", "1",
                        "--episodes", "8", "--steps", "8", "--minibatch", "32",
                        "--synthetic-bars", "3000", "--device", "cpu", "--eval-at-end", "0",
                        "--out", str(run)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    cfg = json.loads((run / "config.json").read_text())
    flat = {}
    stack = [cfg]
    while stack:  # config.json may nest by section
        d = stack.pop()
        for k, v in d.items():
            (stack.append(v) if isinstance(v, dict) else flat.__setitem__(k, v))
    for k, v in values.items():
        assert flat[k] == pytest.approx(v, rel=1e-6), (k, flat.get(k))


def _read_csv(p: Path) -> list[dict]:
    with open(p, newline="") as f:
        return list(csv.DictReader(f))


def test_small_sweep_scores_are_the_runs_validation(tmp_path, foxhunt_bin):
    """3 trials x 2 seeds, no pruning: each trial's value is the mean of its runs' final
    validation Sharpe as their validation.csv holds it; the winner's INI is its trial's;
    no run evaluated the test split."""
    space = _space(tmp_path, seeds=[1, 2], params={
        "lr": {"low": 1e-4, "high": 3e-3, "log": True}, "epochs": {"choices": [1, 2]},
        "gamma": {"low": 0.8, "high": 0.99}})
    out = tmp_path / "sw"
    rc = sweep.main(["--space", str(space), "--out", str(out), "--trials", "3",
                     "--device", "cpu", "--sampler", "random", "--no-prune", "--seed", "7",
                     "--foxhunt", str(foxhunt_bin), "--save-best", str(tmp_path / "w.ini"),
                     "--"] + TINY)
    assert rc == 0
    rows = _read_csv(out / "trials.csv")
    assert [r["state"] for r in rows] == ["COMPLETE"] * 3
    best = max(rows, key=lambda r: float(r["value"]))
    for r in rows:
        tdir = out / "trials" / f"{int(r['trial']):05d}"
        finals = [float(_read_csv(tdir / f"seed{s}" / "validation.csv")[-1]["sharpe"])
                  for s in (1, 2)]
        assert float(r["value"]) == pytest.approx(sum(finals) / 2, abs=1e-9)
        assert 1e-4 <= float(r["lr"]) <= 3e-3 and 0.8 <= float(r["gamma"]) <= 0.99
        for s in (1, 2):
            assert not (tdir / f"seed{s}" / "eval.json").exists(), "the test split was read"
    winner = (out / "trials" / f"{int(best['trial']):05d}" / "trial.ini").read_text()
    body = lambda t: [l for l in t.splitlines() if not l.startswith("#")]
    assert body((tmp_path / "w.ini").read_text()) == body(winner)
    assert body((out / "best.ini").read_text()) == body(winner)


FAKE_TRAINER = r'''#!{python}
"""Stands in for `foxhunt train`: 12 evaluations whose validation Sharpe is -1000 * lr
(so low lr wins), one every 0.05 s, logged as foxhunt prints them."""
import sys, time, re
args = sys.argv[1:]
cfg = open(args[args.index("--config") + 1]).read()
lr = float(re.search(r"^\s*lr\s*=\s*(\S+)", cfg, re.M).group(1))
for it in range(1, 13):
    time.sleep(0.05)
    print(f"iter {{it:3d}}/12  1 steps/s  validation Sharpe {{-1000 * lr:.4f}} (best 0 at 1)",
          flush=True)
'''


def test_pruning_stops_poor_runs(tmp_path):
    """With successive halving, poor trials are pruned and their trainer is stopped
    before its last evaluation; the winner is the lowest lr tried."""
    fake = tmp_path / "fake_foxhunt"
    fake.write_text(FAKE_TRAINER.format(python=sys.executable))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    space = _space(tmp_path, eval_every=1, params={"lr": {"low": 1e-4, "high": 1e-2,
                                                          "log": True}})
    out = tmp_path / "sw"
    rc = sweep.main(["--space", str(space), "--out", str(out), "--trials", "12",
                     "--sampler", "random", "--seed", "3", "--foxhunt", str(fake)])
    assert rc == 0
    rows = _read_csv(out / "trials.csv")
    pruned = [r for r in rows if r["state"] == "PRUNED"]
    complete = [r for r in rows if r["state"] == "COMPLETE"]
    assert pruned and complete
    for r in pruned:  # stopped early: fewer than 12 evaluations in its log
        log = (out / "trials" / f"{int(r['trial']):05d}" / "seed1.log").read_text()
        assert log.count("validation Sharpe") < 12
    best = min(float(r["lr"]) for r in complete)
    assert float(max(complete, key=lambda r: float(r["value"]))["lr"]) == best
