"""foxhunt.sweep (issue 23): the space file's checks, the trial INI writer read back by
foxhunt itself, a small real sweep on the CPU whose scores are compared with the runs'
own validation.csv, and Optuna's early stopping stopping runs, with a stand-in trainer."""

from __future__ import annotations

import csv
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
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
    ({"params": {}}, "params: missing or empty"),
    ({"params": {"lr": {"low": 2, "high": 1}}}, "low 2 must be below high 1"),
    ({"params": {"lr": {"low": 0, "high": 1, "log": True}}}, "log range needs low > 0"),
    ({"params": {"Bad-Key": {"low": 0, "high": 1}}}, "not a config key"),
    ({"params": {"lr": {"choices": []}}}, "non-empty list"),
    ({"seeds": []}, "seeds: [] is not a list"),
    ({"eval_every": 0}, "eval_every: 0 is not a count"),
    ({"objective": "test"}, "objective"),
    ({"base": "no_such.ini"}, "cannot open the base config"),
    ({"sample": 3}, "unknown field"),
])
def test_space_errors_name_file_and_field(tmp_path, fields, says):
    p = _space(tmp_path, **fields)
    with pytest.raises(sweep.SweepError) as e:
        sweep.load_space(p)
    assert str(p) in str(e.value) and says in str(e.value)


# issue 32 (a, b): hostile space files; each must give `foxhunt sweep: FILE: ...; ...`
# on one line and exit 2 (before: tracebacks, a hang on a FIFO, or lines injected into
# the trial's INI). The space is {"base": quickstart, "params": {"lr": ...}} with fields
# replaced; a str is the file's whole text.
QS = json.dumps(str(REPO / "configs" / "quickstart.ini"))
HOSTILE = [
    ('{"base": %s, "params": {"lr": {"low": NaN, "high": 1}}}' % QS, "NaN: not a number"),
    ('{"base": %s, "params": {"lr": {"low": -Infinity, "high": 1}}}' % QS, "-Infinity"),
    ('{"base": %s, "params": {"lr": {"low": 0, "high": 1e400}}}' % QS, "out of range"),
    ('{"base": %s, "params": {"episodes": {"low": 1, "high": 1%s}}}' % (QS, "0" * 5000),
     "an integer of 5001 digits"),
    ({"params": {"episodes": {"low": 1, "high": 10 ** 20}}}, "out of range"),
    ({"params": {"lr": {"low": "0.1", "high": 1}}}, "a string (\"0.1\"), not a number"),
    ({"params": {"lr": {"low": True, "high": 1}}}, "a boolean (true), not a number"),
    ({"params": {"lr": {"low": None, "high": 1}}}, "null (null), not a number"),
    ({"params": {"lr": {"low": 1e-40, "high": 1}}}, "too small"),
    ({"params": {"lr": {"low": 0.1, "high": 1, "step": "x"}}}, "step: a string"),
    ({"params": {"lr": {"low": 0.1, "high": 1, "step": -1}}}, "not in (0, high - low]"),
    ({"params": {"lr": {"low": 0.1, "high": 1, "step": 0.1, "log": True}}}, "with a step"),
    ({"params": {"lr": {"low": 0.1, "high": 1, "log": "yes"}}}, "not true or false"),
    ({"params": {"lr": {"high": 1}}}, "no low and high"),
    ({"params": {"lr": {"low": 0.1, "high": 1, "choices": [1]}}}, "choices with low"),
    ({"params": {"lr": 0.1}}, "a number, not an object"),
    ({"params": {"lr": {"choices": [None]}}}, "null (null), not a number"),
    ({"params": {"lr": {"choices": [[0.1]]}}}, "a list ([0.1]), not a number"),
    ({"params": {"lr": {"choices": [{"a": 1}]}}}, "an object"),
    ({"params": {"epochs": {"choices": [1, True]}}}, "appears twice"),
    ({"params": {"lr": {"choices": "0.1"}}}, "must be a non-empty list"),
    ({"params": {"learning_rate": {"low": 0.1, "high": 1}}}, "not a setting of foxhunt"),
    ({"params": {"lrr": {"low": 0.1, "high": 1}}}, "did you mean lr?"),
    ({"params": {"seed": {"low": 1, "high": 5}}}, "the sweep sets it itself"),
    ({"params": {"out": {"choices": ["a", "b"]}}}, "the sweep sets it itself"),
    ({"params": {"Lr\u00e9": {"low": 0.1, "high": 1}}}, "not a config key"),
    ({"params": []}, "params: missing or empty"),
    ({"seeds": [True]}, "true is not a seed"),
    ({"seeds": [-1]}, "-1 is not a seed"),
    ({"seeds": [2 ** 64]}, "is not a seed"),
    ({"seeds": [1, 1]}, "appears twice"),
    ({"seeds": "1"}, "is not a list"),
    ({"eval_every": True}, "true is not a count"),
    ({"eval_every": 1.5}, "1.5 is not a count"),
    ({"objective": ["final"]}, "is not an objective"),
    ({"base": 7}, "base: 7 is not a file name"),
    ({"base": "a\u0000b"}, "is not a file name"),
    ({"base": "."}, "is a directory"),
    ('{"base": %s, "comment": %s}' % (QS, "[" * 100000 + "]" * 100000), "nested too deeply"),
    ('{"base": %s, "base": %s}' % (QS, QS), "appears twice"),
    ("[1, 2]", "a list, not a JSON object"),
    ("null", "null, not a JSON object"),
    ("", "not JSON"),
    (b'{"base": "\xff"}', "not UTF-8 text (byte 0xff at offset 10)"),
    # (b) INI-breaking characters in a choice: nothing may add a line to a trial's INI
    ({"params": {"algo": {"choices": ["ppo\n[run]\nout = /tmp/x"]}}}, "U+000A"),
    ({"params": {"algo": {"choices": ["ppo\rout = /tmp/x"]}}}, "U+000D"),
    ({"params": {"algo": {"choices": ["ppo\u0000"]}}}, "U+0000"),
    ({"params": {"algo": {"choices": ["ppo\u2028x"]}}}, "U+2028"),
    ({"params": {"algo": {"choices": ["\ud800"]}}}, "U+D800"),
    ({"params": {"data": {"choices": ["a.csv ; b"]}}}, "';'"),
    ({"params": {"data": {"choices": ["x = y"]}}}, "'='"),
    ({"params": {"data": {"choices": ["#x"]}}}, "'#'"),
    ({"params": {"data": {"choices": ["[run]"]}}}, "'['"),
    ({"params": {"data": {"choices": [" a.csv"]}}}, "white space"),
    ({"params": {"data": {"choices": [""]}}}, "it is empty"),
    ({"params": {"data": {"choices": ["a" * 200]}}}, "200 characters"),
]


@pytest.mark.parametrize("content, says", HOSTILE, ids=[f"h{i}" for i in range(len(HOSTILE))])
def test_hostile_space_is_one_line_error(tmp_path, capsys, foxhunt_bin, content, says):
    p = tmp_path / "space.json"
    if isinstance(content, dict):
        raw = {"base": str(REPO / "configs" / "quickstart.ini"),
               "params": {"lr": {"low": 1e-4, "high": 3e-3}}}
        raw.update(content)
        p.write_text(json.dumps(raw))
    else:
        p.write_bytes(content if isinstance(content, bytes) else content.encode())
    rc = sweep.main(["--space", str(p), "--out", str(tmp_path / "o"),
                     "--foxhunt", str(foxhunt_bin)])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.startswith(f"foxhunt sweep: {p}") and err.count("\n") == 1, err
    assert says in err and "; " in err, err
    assert not (tmp_path / "o").exists(), "nothing is written for a bad space"


def test_space_path_directory_fifo_device(tmp_path, foxhunt_bin):
    """The CLI itself (the C hands over to python): a directory, a FIFO (before: a
    hang) and a device are one-line errors, promptly."""
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    for path, says in [(tmp_path, "is a directory"), (fifo, "is a FIFO"),
                       (Path("/dev/null"), "is a device"),
                       (tmp_path / "none.json", "No such file")]:
        r = subprocess.run([str(foxhunt_bin), "sweep", "--space", str(path), "--out",
                            str(tmp_path / "o")], capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and says in r.stderr, r.stderr
        assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr


def test_render_config_refuses_injection_from_the_study():
    """Values come from the study (a database an older sweep wrote): the INI writer
    checks them too, so no value adds a line."""
    for bad in ["1\n[run]\nout = /x", "a=b", "x;y", float("nan"), float("inf")]:
        with pytest.raises(sweep.SweepError):
            sweep.render_config("[ppo]\nlr = 1\n", {"lr": bad})
    with pytest.raises(sweep.SweepError):
        sweep.render_config("[ppo]\nlr = 1\n", {"lr\nout": 1})


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
    """Keys the base sets are replaced in their section, others go into their own
    section (the trainer's --help says which) or, where the base has none, before the
    first section; the base's comments are left out; foxhunt's own parser (the run's
    config.json) must read every value."""
    values = {"lr": 0.00123, "ent_coef": 0.017, "epochs": 3, "reward_scale": 1.7}
    ini = tmp_path / "t.ini"
    keys = sweep.trainer_keys(str(foxhunt_bin))
    assert keys and keys["lr"] == "ppo" and keys["reward_scale"] == "env"
    sweep.write_config(REPO / "configs" / "quickstart.ini", values, ini, header="test",
                       sections=keys)
    text = ini.read_text()
    assert text.count("lr =") == 1 and text.count("epochs =") == 1
    assert "quickstart.ini" not in text and "memorises" not in text, text
    lines = text.splitlines()
    assert lines.index("ent_coef = 0.017") > lines.index("[ppo]")
    assert lines.index("reward_scale = 1.7") < lines.index("[run]")
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
    no run evaluated the test split; the validation returns kept for the PBO give the
    runs' own validation Sharpe."""
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
    # the PBO's matrix (issue 34): each seed's column of validation_returns.csv is the
    # per-bar return of the model the objective scored; its Sharpe (population standard
    # deviation, annualised) is the trainer's own final validation Sharpe
    for r in rows:
        path = out / "trials" / f"{int(r['trial']):05d}" / "validation_returns.csv"
        lines = path.read_text().splitlines()
        periods = float(lines[0].split("=")[1].split(";")[0])
        table = list(csv.DictReader(lines[1:]))
        for s in (1, 2):
            x = [float(t[f"seed{s}"]) for t in table]
            mean = sum(x) / len(x)
            sd = (sum((v - mean) ** 2 for v in x) / len(x)) ** 0.5
            final = float(_read_csv(out / "trials" / f"{int(r['trial']):05d}" /
                                    f"seed{s}" / "validation.csv")[-1]["sharpe"])
            assert mean / sd * periods ** 0.5 == pytest.approx(final, rel=1e-9, abs=1e-9)
    pbo = json.loads((out / "pbo.json").read_text())
    assert pbo["computed"] and pbo["configurations"] == 3 and pbo["blocks"] == 16
    winner = (out / "trials" / f"{int(best['trial']):05d}" / "trial.ini").read_text()
    body = lambda t: [l for l in t.splitlines() if not l.startswith("#")]
    assert body((tmp_path / "w.ini").read_text()) == body(winner)
    assert body((out / "best.ini").read_text()) == body(winner)


FAKE_TRAINER = r'''#!{python}
"""Stands in for `foxhunt train`: 12 evaluations whose validation Sharpe is -1000 * lr
(so low lr wins), one every $FAKE_SLEEP s (0.05), logged as foxhunt prints them; --help
lists lr as foxhunt does. FAKE_HANG=FILE: after the first evaluation it makes FILE and
waits until its parent (the sweep) is gone."""
import os, sys, time, re
args = sys.argv[1:]
if "--help" in args:
    print("  --lr VALUE   Adam learning rate [ppo] lr (default: 0.0003)")
    sys.exit(0)
cfg = open(args[args.index("--config") + 1]).read()
lr = float(re.search(r"^\s*lr\s*=\s*(\S+)", cfg, re.M).group(1))
parent = os.getppid()
for it in range(1, 13):
    time.sleep(float(os.environ.get("FAKE_SLEEP", "0.05")))
    print(f"iter {{it:3d}}/12  1 steps/s  validation Sharpe {{-1000 * lr:.4f}} (best 0 at 1)",
          flush=True)
    if os.environ.get("FAKE_HANG"):
        open(os.environ["FAKE_HANG"], "w").close()
    while os.environ.get("FAKE_HANG") and os.getppid() == parent:
        time.sleep(0.05)
    if os.getppid() != parent:
        sys.exit(1)
'''


def _fake(tmp_path: Path) -> Path:
    fake = tmp_path / "fake_foxhunt"
    fake.write_text(FAKE_TRAINER.format(python=sys.executable))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    return fake


def test_pruning_stops_poor_runs(tmp_path):
    """With successive halving, poor trials are pruned and their trainer is stopped
    before its last evaluation; the winner is the lowest lr tried."""
    fake = _fake(tmp_path)
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


def _lrs(out: Path) -> list[float]:
    return [float(r["lr"]) for r in _read_csv(out / "trials.csv")]


def test_resumed_sweep_draws_new_values(tmp_path, monkeypatch):
    """Issue 32 (d): the same command again continues the search instead of replaying
    the first run's values (before: trial 3 = trial 0, the sampler's seed fixed); a new
    sweep with the same --seed repeats the first run exactly."""
    monkeypatch.setenv("FAKE_SLEEP", "0")
    fake = _fake(tmp_path)
    space = _space(tmp_path, eval_every=1, params={"lr": {"low": 1e-4, "high": 1e-2}})
    args = ["--space", str(space), "--trials", "3", "--sampler", "random", "--seed", "3",
            "--no-prune", "--foxhunt", str(fake)]
    assert sweep.main(args + ["--out", str(tmp_path / "a")]) == 0
    assert sweep.main(args + ["--out", str(tmp_path / "a")]) == 0
    lrs = _lrs(tmp_path / "a")
    assert len(lrs) == 6 and len(set(lrs)) == 6, lrs
    assert sweep.main(args + ["--out", str(tmp_path / "b")]) == 0
    assert _lrs(tmp_path / "b") == lrs[:3]


def test_killed_sweep_trial_is_failed_on_the_next_run(tmp_path):
    """Issue 32 (c): a sweep killed (SIGKILL) mid-trial leaves the trial RUNNING in the
    study; the next run marks it FAIL, says so, and goes on (before: RUNNING forever)."""
    fake = _fake(tmp_path)
    space = _space(tmp_path, eval_every=1)
    out = tmp_path / "sw"
    started = tmp_path / "started"
    env = dict(os.environ, FAKE_HANG=str(started), FAKE_SLEEP="0",
               PYTHONPATH=str(REPO / "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-m", "foxhunt.sweep", "--space", str(space), "--out", str(out),
           "--trials", "1", "--no-prune", "--foxhunt", str(fake)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    try:
        while not started.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the trial never ran"
            time.sleep(0.05)
    finally:  # the stand-in trainer ends when the sweep does
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    r = subprocess.run(cmd, env=dict(env, FAKE_HANG=""), capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "trial 0 was left RUNNING" in r.stdout and "marked FAIL" in r.stdout, r.stdout
    rows = _read_csv(out / "trials.csv")
    assert [x["state"] for x in rows] == ["FAIL", "COMPLETE"], rows
    assert "left RUNNING" in rows[0]["error"]


def test_best_ini_drops_the_base_comments(tmp_path, monkeypatch):
    """Issue 32 (e): best.ini is a clean INI: its own header, the settings; none of the
    base's comments (before: "256 start bars per collection" above a swept episodes =
    512, and the base's own header, under the winner's)."""
    monkeypatch.setenv("FAKE_SLEEP", "0")
    base = tmp_path / "base.ini"
    base.write_text("# base.ini - my own header\n[run]\n# 256 episodes: the quick one\n"
                    "episodes = 256\n\n[ppo]\n; lr 0.001 is the quickstart's\nlr = 0.001 "
                    "; inline\ngamma = 0.9\n")
    fake = _fake(tmp_path)
    space = _space(tmp_path, base=str(base), eval_every=1,
                   params={"lr": {"low": 1e-4, "high": 1e-2}})
    out = tmp_path / "sw"
    assert sweep.main(["--space", str(space), "--out", str(out), "--trials", "2",
                       "--no-prune", "--foxhunt", str(fake), "--save-best",
                       str(tmp_path / "w.ini")]) == 0
    best = min(_lrs(out))
    for ini in (out / "best.ini", tmp_path / "w.ini"):
        text = ini.read_text()
        assert text.startswith("# the winner of the sweep in"), text
        for stale in ("my own header", "the quick one", "quickstart's", "inline"):
            assert stale not in text, text
        body = [l for l in text.splitlines() if l and not l.startswith("#")]
        assert body == ["[run]", "episodes = 256", "[ppo]", f"lr = {best!r}",
                        "gamma = 0.9"], body


def test_write_config_refuses_a_fifo_at_its_temporary(tmp_path):
    """Issue 32: a FIFO left at OUT.tmp must be refused at once, not block the sweep's
    last step (Path.write_text opened it and waited for a reader)."""
    out = tmp_path / "best.ini"
    os.mkfifo(tmp_path / "best.ini.tmp")
    result = {}

    def write():
        try:
            sweep.write_config(REPO / "configs" / "quickstart.ini", {"lr": 0.001}, out)
            result["error"] = None
        except sweep.SweepError as e:
            result["error"] = str(e)

    t = threading.Thread(target=write, daemon=True)
    t.start()
    t.join(20)
    assert not t.is_alive(), "write_config blocked on a FIFO at best.ini.tmp"
    assert result["error"] and "best.ini.tmp" in result["error"] and "regular" in result["error"]
    assert not out.exists()
