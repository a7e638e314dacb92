"""foxhunt.train / foxhunt.Trainer (python/foxhunt/training.py, capi.h's fh_api_trainer_*;
issue 36) against `foxhunt train`, the independent side: the same configuration and seed
on the CPU is deterministic, so for every learner (ppo, dqn, pqn, constant) the rows the
callback receives and the API run's metrics.csv equal the CLI's metrics.csv cell for cell
(the four timing columns aside), and the final checkpoints' tensors are equal bit for
bit. A callback that returns False after k iterations leaves k rows and an
interrupted.safetensors that loads and resumes (through the CLI) into the uninterrupted
run's rows; an exception in a callback stops the run the same way and is raised; bad
configurations are refused with the CLI's messages."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

import foxhunt

from conftest import run

# columns that measure time, not what was computed
TIMING = {"collect_seconds", "update_seconds", "steps_per_second", "collect_steps_per_second"}

COMMON = {"synthetic_bars": 3000, "episodes": 8, "steps": 32, "iterations": 3,
          "minibatch": 64, "epochs": 2, "device": "cpu", "threads": 1, "eval_at_end": 0,
          "seed": 5, "horizon": 40}
Q = {"learning_starts": 128, "replay_ratio": 0.03125, "replay_capacity": 1000,
     "target_update_every": 5}
LEARNERS = {"ppo": {}, "dqn": Q, "pqn": {}, "constant": {}}


def flags(keys: dict) -> list[str]:
    out = []
    for k, v in keys.items():
        out += ["--" + k.replace("_", "-"), str(v)]
    return out


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def same_cell(api: float, cli: str) -> bool:
    """A callback value against a csv cell: the csv prints %.9g, empty when not finite."""
    if cli == "":
        return not math.isfinite(api)
    return f"{api:.9g}" == cli


def assert_rows_equal(api_rows: list[dict], cli_rows: list[dict], what: str) -> None:
    assert len(api_rows) == len(cli_rows), f"{what}: {len(api_rows)} rows, CLI {len(cli_rows)}"
    for i, (a, c) in enumerate(zip(api_rows, cli_rows)):
        assert list(a) == list(c), f"{what}: columns {list(a)} != CLI's {list(c)}"
        for k in c:
            if k in TIMING:
                continue
            av = a[k]
            ok = same_cell(float(av), c[k]) if not isinstance(av, str) else av == c[k]
            assert ok, f"{what}: row {i + 1} column {k}: API {av!r}, CLI {c[k]!r}"


@pytest.mark.parametrize("algo", sorted(LEARNERS))
def test_api_equals_cli(tmp_path, foxhunt_bin, algo):
    keys = {"algo": algo, **COMMON, **LEARNERS[algo]}
    cli_out, api_out = tmp_path / "cli", tmp_path / "api"
    run([foxhunt_bin, "train", *flags(keys), "--out", cli_out])
    seen = []
    res = foxhunt.train(keys, callback=seen.append, out=str(api_out))
    assert res.out == api_out and res.iteration == 3 and not res.stopped
    assert res.checkpoint == api_out / "final.safetensors"
    cli_rows = read_csv(cli_out / "metrics.csv")
    assert_rows_equal(seen, cli_rows, f"{algo}: callback rows")
    assert res.metrics == seen
    assert_rows_equal(read_csv(api_out / "metrics.csv"), cli_rows, f"{algo}: metrics.csv")
    assert isinstance(seen[0]["iteration"], int) and seen[-1]["iteration"] == 3
    # the same run directory's files (an event file's name carries its creation time)
    names = lambda d: sorted("events.out.tfevents.*" if p.name.startswith("events.out.")
                             else p.name for p in d.iterdir() if not p.name.startswith("."))
    assert names(api_out) == names(cli_out)
    a = foxhunt.load_checkpoint(api_out / "final.safetensors")
    c = foxhunt.load_checkpoint(cli_out / "final.safetensors")
    assert sorted(a.tensors) == sorted(c.tensors)
    for k in c.tensors:
        assert np.array_equal(a.tensors[k], c.tensors[k]), f"{algo}: tensor {k} differs"


def test_callback_stop_leaves_a_checkpoint(tmp_path, foxhunt_bin):
    keys = {**COMMON, "iterations": 4}
    full = foxhunt.train(keys, out=str(tmp_path / "full"))
    out = tmp_path / "stopped"
    with foxhunt.Trainer(keys, out=str(out)) as t:
        assert t.iteration == 0 and (out / "config.json").is_file()
        res = t.learn(lambda row: row["iteration"] < 2)
    assert res.stopped and res.iteration == 2
    assert res.checkpoint == out / "interrupted.safetensors"
    assert not (out / "final.safetensors").exists()
    assert len(read_csv(out / "metrics.csv")) == 2
    ck = foxhunt.load_checkpoint(res.checkpoint)  # every whole-file check of eval
    assert ck.iteration == 2
    # the CLI resumes it into the uninterrupted run's rows
    run([foxhunt_bin, "train", "--resume", res.checkpoint, "--iterations", "4",
         "--threads", "1", "--eval-at-end", "0", "--out", out])
    assert_rows_equal(read_csv(out / "metrics.csv"), read_csv(full.out / "metrics.csv"), "resumed")


def test_resume_through_the_api(tmp_path):
    keys = {**COMMON, "iterations": 4}
    full = foxhunt.train(keys, out=str(tmp_path / "full"))
    out = tmp_path / "part"
    part = foxhunt.train(keys, out=str(out), callback=lambda row: row["iteration"] < 1)
    assert part.stopped and part.iteration == 1
    rest = foxhunt.train(resume=str(part.checkpoint), out=str(out))
    assert rest.iteration == 4 and [r["iteration"] for r in rest.metrics] == [2, 3, 4]
    assert_rows_equal(read_csv(out / "metrics.csv"), read_csv(full.out / "metrics.csv"), "API resume")


def test_callback_exception_stops_and_raises(tmp_path):
    out = tmp_path / "raised"

    def boom(row):
        raise RuntimeError(f"stop at {row['iteration']}")

    with pytest.raises(RuntimeError, match="stop at 1"):
        foxhunt.train(COMMON, callback=boom, out=str(out))
    assert (out / "interrupted.safetensors").is_file()
    assert foxhunt.load_checkpoint(out / "interrupted.safetensors").iteration == 1


def test_ini_and_keys(tmp_path):
    ini = tmp_path / "small.ini"
    ini.write_text("[run]\nsynthetic_bars = 3000\nepisodes = 8\nsteps = 32\niterations = 2\n"
                   "threads = 1\neval_at_end = 0\n[ppo]\nminibatch = 64\n")
    res = foxhunt.train(ini, out=str(tmp_path / "ini"), iterations=1)  # keys win over the file
    assert res.iteration == 1
    cfg = foxhunt.Config.from_checkpoint(res.checkpoint)
    assert cfg.get("episodes") == "8" and cfg.get("minibatch") == "64"
    bad = tmp_path / "bad.ini"
    bad.write_text("[run]\nepisodes = 8\nnot_a_key = 1\n")
    with pytest.raises(foxhunt.InputError, match=r"bad\.ini:3"):
        foxhunt.train(bad, out=str(tmp_path / "bad"))


def test_refusals(tmp_path):
    with pytest.raises(foxhunt.InputError, match="unknown configuration key"):
        foxhunt.train(COMMON, not_a_key=1)
    with pytest.raises(foxhunt.InputError, match="--gpus K"):
        foxhunt.Trainer(COMMON, gpus=2, out=str(tmp_path / "g"))
    with pytest.raises(foxhunt.InputError, match="expected an INI"):
        foxhunt.train(42)
    out = tmp_path / "once"
    with foxhunt.Trainer(COMMON, out=str(out), iterations=1) as t:
        t.learn()
        with pytest.raises(foxhunt.InputError, match="already ran"):
            t.learn()
        # the directory is locked while the trainer lives
        with pytest.raises(foxhunt.InputError, match="lock|another run|in use"):
            foxhunt.Trainer(COMMON, out=str(out), force=True)
    # a finished run's directory: refused without force, moved aside with it
    with pytest.raises(foxhunt.InputError, match="--force"):
        foxhunt.Trainer(COMMON, out=str(out))
    res = foxhunt.train(COMMON, out=str(out), iterations=1, force=True)
    assert res.iteration == 1 and any(p.name.startswith("superseded-") for p in out.iterdir())
