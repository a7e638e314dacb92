"""The TensorBoard event file of a run trained from Python (issue 36) and the W&B hook
(python/foxhunt/wandb_hook.py). The independent side is the rows the training callback
receives (the doubles metrics.csv prints): the `tensorboard` package's own reader
(EventAccumulator) must give every finite cell, at step = the row's global_step, as
exactly that double rounded to float32 (an event's simple_value is a float); a
non-finite one has no event. The W&B hooks are checked against a recording stand-in
for a run (the callback: each row's tags and values exactly, the step, ``then``
stopping the run; log_run_dir: a CLI run directory's every scalar, validation and the
final evaluation included, against eval.json, in step order, and its config) and, when
the wandb package is installed, against wandb itself in offline mode (its summary holds
the last values exactly). Skips without tensorboard / wandb, saying so."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import json

import foxhunt
from foxhunt.wandb_hook import LAST_COMMON_COLUMN, log_run_dir, tags, wandb_callback

from conftest import run as run_command

KEYS = {"synthetic_bars": 3000, "episodes": 8, "steps": 64, "iterations": 4,
        "minibatch": 64, "epochs": 2, "device": "cpu", "threads": 1, "eval_at_end": 0,
        "seed": 3, "eval_every": 2}


def event_files(run: Path) -> list[Path]:
    return sorted(run.glob("events.out.tfevents.*"))


@pytest.mark.parametrize("algo", ["ppo", "dqn"])
def test_event_file_holds_every_row(tmp_path: Path, algo: str) -> None:
    event_accumulator = pytest.importorskip(
        "tensorboard.backend.event_processing.event_accumulator",
        reason="the tensorboard package is not installed (pip install tensorboard)")
    keys = dict(KEYS, algo=algo)
    if algo == "dqn":
        keys.update(learning_starts=128, replay_capacity=1000, replay_ratio=0.03125)
    result = foxhunt.train(None, out=str(tmp_path / "run"), **keys)
    assert len(event_files(result.out)) == 1
    acc = event_accumulator.EventAccumulator(str(result.out),
                                             size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    scalars = set(acc.Tags()["scalars"])
    columns = list(result.metrics[0])
    own = columns[columns.index(LAST_COMMON_COLUMN) + 1:]
    assert own, "the learner has columns of its own"
    for name in columns:
        tag = ("losses/" if name in own else "charts/") + name
        want = {r["global_step"]: np.float32(r[name]) for r in result.metrics
                if math.isfinite(r[name])}
        got = {e.step: np.float32(e.value) for e in acc.Scalars(tag)} if tag in scalars else {}
        assert got == want, f"{tag}: {got} != the callback's {want}"
    # validation every 2 iterations: at global steps 2 and 4 iterations in
    steps = [e.step for e in acc.Scalars("validation/best_sharpe")] \
        if "validation/best_sharpe" in scalars else []
    per_iteration = result.metrics[0]["global_step"]
    assert steps in ([], [2 * per_iteration, 4 * per_iteration])  # [] only when all flat
    assert [e.step for e in acc.Scalars("validation/turnover")] == \
        [2 * per_iteration, 4 * per_iteration]
    assert "config" in acc.Tags()["tensors"]


def test_tensorboard_off(tmp_path: Path) -> None:
    result = foxhunt.train(None, out=str(tmp_path / "run"), tensorboard=0,
                           **dict(KEYS, iterations=1, eval_every=0))
    assert event_files(result.out) == []


class RecordingConfig(dict):
    def update(self, values: dict, allow_val_change: bool = False) -> None:
        super().update(values)


class RecordingRun:
    """A stand-in for a wandb Run: what log() and config.update() were given."""

    def __init__(self) -> None:
        self.logged: list[tuple[dict, int, bool]] = []
        self.config = RecordingConfig()

    def log(self, data: dict, step: int, commit: bool) -> None:
        self.logged.append((dict(data), step, commit))


def test_wandb_callback_logs_each_row(tmp_path: Path) -> None:
    run = RecordingRun()
    seen = []
    result = foxhunt.train(None, out=str(tmp_path / "run"),
                           callback=wandb_callback(run, then=lambda r: seen.append(r) or
                                                   r["iteration"] < 2),
                           **dict(KEYS, eval_every=0))
    assert result.stopped and result.iteration == 2 and len(seen) == 2
    assert [s for _, s, _ in run.logged] == [r["global_step"] for r in result.metrics]
    assert all(commit for _, _, commit in run.logged)
    for (data, _, _), row in zip(run.logged, result.metrics):
        names = list(row)
        split = names.index(LAST_COMMON_COLUMN) + 1
        want = {("charts/" if i < split else "losses/") + k: v
                for i, (k, v) in enumerate(row.items()) if math.isfinite(v)}
        assert data == want
    assert tags({"a": float("nan"), LAST_COMMON_COLUMN: 1.0, "b": 2.0}) == \
        {f"charts/{LAST_COMMON_COLUMN}": 1.0, "losses/b": 2.0}


def test_wandb_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wandb = pytest.importorskip("wandb", reason="the wandb package is not installed "
                                "(pip install wandb): the hook's W&B side is untested here")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_SILENT", "true")
    run = wandb.init(project="foxhunt-test")
    try:
        result = foxhunt.train(None, out=str(tmp_path / "run"), callback=wandb_callback(),
                               **dict(KEYS, iterations=2, eval_every=0))
        last = result.metrics[-1]
        assert run.summary["_step"] == last["global_step"]
        for tag, value in tags(last).items():
            assert run.summary[tag] == value, tag
    finally:
        run.finish()
    assert list(tmp_path.glob("wandb/offline-run-*/run-*.wandb"))


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory: pytest.TempPathFactory, foxhunt_bin: Path) -> Path:
    """A CLI run with validation and the final evaluation (its event file has them)."""
    out = tmp_path_factory.mktemp("cli") / "run"
    run_command([foxhunt_bin, "train", "--synthetic-bars", "3000", "--episodes", "8",
                 "--steps", "64", "--iterations", "4", "--minibatch", "64", "--epochs", "2",
                 "--device", "cpu", "--threads", "1", "--eval-every", "2", "--out", out])
    return out


def test_log_run_dir_replays_the_event_file(cli_run: Path) -> None:
    pytest.importorskip("tensorboard", reason="the tensorboard package is not installed")
    run = RecordingRun()
    n = log_run_dir(str(cli_run), run)
    steps = [s for _, s, _ in run.logged]
    assert n == len(steps) == 4 and steps == sorted(steps)  # one log per iteration's step
    ev = json.loads((cli_run / "eval.json").read_text())
    last = run.logged[-1][0]
    assert last["eval/sharpe"] == np.float32(ev["policies"]["greedy"]["sharpe"])
    assert last["eval/buy_and_hold_return"] == \
        np.float32(ev["policies"]["buy_and_hold"]["cumulative_return"])
    assert "validation/sharpe" in run.logged[1][0] and "validation/sharpe" in last
    with open(cli_run / "metrics.csv") as f:
        header = f.readline().strip().split(",")
    assert {k.split("/", 1)[1] for k in run.logged[0][0] if "/" in k} >= \
        {c for c in header if c not in ("mean_episode_return", "mean_episode_length")}
    assert run.config["foxhunt"] == json.loads((cli_run / "config.json").read_text())


def test_log_run_dir_offline(cli_run: Path, tmp_path: Path,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("tensorboard", reason="the tensorboard package is not installed")
    wandb = pytest.importorskip("wandb", reason="the wandb package is not installed")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_SILENT", "true")
    run = wandb.init(project="foxhunt-test")
    try:
        log_run_dir(str(cli_run))
        ev = json.loads((cli_run / "eval.json").read_text())
        assert run.summary["eval/sharpe"] == np.float32(ev["policies"]["greedy"]["sharpe"])
        assert run.config["foxhunt"]["run"]["iterations"] == 4
    finally:
        run.finish()
