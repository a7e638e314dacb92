"""Hyper-parameter sweeps of ``foxhunt train``, scored on the validation split only
(issue 23; docs/LEARNING.md, "Sweeps").

Optuna does the search (TPE by default) and the early stopping (successive halving over
the validation evaluations a run makes as it trains); this module only runs trials:

- a trial's settings are the space's base INI with the sampled values written into it
  (:func:`write_config`), so the winner's INI is exactly the file its trial ran;
- each trial trains ``seeds`` runs with ``foxhunt train --config trial.ini --seed S
  --eval-every E``, one after another, reading the greedy validation Sharpe from each
  evaluation line the trainer prints; every evaluation is reported to Optuna at step
  ``seed_index * iterations + iteration``, so trials are compared at the same seed and
  iteration, and a pruned trial's run is stopped (SIGTERM: it ends after the current
  iteration, as ``foxhunt train`` does on Ctrl-C);
- the objective is the mean over seeds of the validation Sharpe at the last iteration
  (``"objective": "final"``) or of the best evaluation (``"best"``, the model
  ``best.safetensors`` keeps); the test split is never read.

The space is a JSON file (configs/sweep_ppo.json is the shipped one)::

    {"base": "quickstart.ini",            # relative to the JSON file's folder
     "seeds": [1, 2], "eval_every": 10, "objective": "final",
     "params": {"lr": {"low": 1e-4, "high": 3e-3, "log": true},
                "epochs": {"choices": [2, 4, 8]},
                "minibatch": {"low": 256, "high": 2048, "step": 256}}}

Run as ``foxhunt sweep ...`` (the CLI hands over to this module) or ``python3 -m
foxhunt.sweep ...``; the study lives in OUT/study.db (SQLite), so running the same
command again adds trials to it. Writes OUT/trials.csv and OUT/best.ini (and
``--save-best FILE``). Needs optuna (scripts/setup.sh installs it).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

# `iter 20/40 ... validation Sharpe 1.23 (best 1.50 at 10)` (src/cli/cmd_train.c)
EVAL_LINE = re.compile(r"iter\s+(\d+)/(\d+)\b.*?validation Sharpe (\S+)")
OBJECTIVES = ("final", "best")


class SweepError(Exception):
    """A space file, base config or trial that cannot be used; the message says why."""


@dataclass
class Param:
    """One searched setting: a float or int range (log scale optional) or choices."""
    name: str
    low: Optional[float] = None
    high: Optional[float] = None
    log: bool = False
    step: Optional[float] = None
    choices: Optional[list] = None

    def suggest(self, trial: Any) -> Any:
        if self.choices is not None:
            return trial.suggest_categorical(self.name, self.choices)
        # integers in the JSON ("256", not "256.0") make an integer setting
        if all(isinstance(x, int) for x in (self.low, self.high)) and (
                self.step is None or isinstance(self.step, int)):
            return trial.suggest_int(self.name, int(self.low), int(self.high),
                                     step=int(self.step or 1), log=self.log)
        return trial.suggest_float(self.name, float(self.low), float(self.high),
                                   step=self.step, log=self.log)


@dataclass
class Space:
    """A sweep's space file, validated."""
    path: Path
    base: Path
    seeds: list[int]
    eval_every: int
    objective: str
    params: list[Param] = field(default_factory=list)


def load_space(path: str | Path) -> Space:
    """Reads and checks a space JSON file; SweepError names the file and the field."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text())
    except OSError as e:
        raise SweepError(f"{path}: cannot read the sweep space: {e.strerror}") from e
    except json.JSONDecodeError as e:
        raise SweepError(f"{path}:{e.lineno}: not JSON: {e.msg}") from e
    if not isinstance(raw, dict):
        raise SweepError(f"{path}: expected a JSON object with base, seeds, params")
    unknown = set(raw) - {"base", "seeds", "eval_every", "objective", "params", "comment"}
    if unknown:
        raise SweepError(f"{path}: unknown field(s) {sorted(unknown)}; expected base, seeds, "
                         "eval_every, objective, params")
    base = raw.get("base")
    if not isinstance(base, str) or not base:
        raise SweepError(f"{path}: 'base' must name the INI the trials start from")
    base_path = (path.parent / base).resolve()
    if not base_path.is_file():
        raise SweepError(f"{path}: base config {base_path} does not exist")
    seeds = raw.get("seeds", [1])
    if (not isinstance(seeds, list) or not seeds or
            not all(isinstance(s, int) and s >= 0 for s in seeds)):
        raise SweepError(f"{path}: 'seeds' must be a non-empty list of non-negative integers")
    eval_every = raw.get("eval_every", 10)
    if not isinstance(eval_every, int) or eval_every < 1:
        raise SweepError(f"{path}: 'eval_every' must be a positive integer (iterations)")
    objective = raw.get("objective", "final")
    if objective not in OBJECTIVES:
        raise SweepError(f"{path}: 'objective' {objective!r}: expected one of {OBJECTIVES}")
    params_raw = raw.get("params")
    if not isinstance(params_raw, dict) or not params_raw:
        raise SweepError(f"{path}: 'params' must map setting names to ranges or choices")
    params = []
    for name, spec in params_raw.items():
        if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
            raise SweepError(f"{path}: params: {name!r} is not a config key (configs/*.ini)")
        if not isinstance(spec, dict):
            raise SweepError(f"{path}: params.{name}: expected an object")
        bad = set(spec) - {"low", "high", "log", "step", "choices"}
        if bad:
            raise SweepError(f"{path}: params.{name}: unknown field(s) {sorted(bad)}")
        if "choices" in spec:
            if not isinstance(spec["choices"], list) or not spec["choices"]:
                raise SweepError(f"{path}: params.{name}.choices must be a non-empty list")
            params.append(Param(name, choices=spec["choices"]))
            continue
        low, high = spec.get("low"), spec.get("high")
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (low, high)):
            raise SweepError(f"{path}: params.{name}: 'low' and 'high' must be numbers")
        if not low < high:
            raise SweepError(f"{path}: params.{name}: low {low} must be below high {high}")
        if spec.get("log") and low <= 0:
            raise SweepError(f"{path}: params.{name}: a log range needs low > 0")
        params.append(Param(name, low, high, bool(spec.get("log", False)), spec.get("step")))
    return Space(path, base_path, seeds, eval_every, objective, params)


def _format(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def write_config(base: Path, values: dict[str, Any], out: Path, header: str = "") -> None:
    """base's INI with each key of values set: in place where base sets it (its section
    kept), else in a block before the first section (foxhunt reads keys outside any
    section too). Comments of base are kept."""
    lines = base.read_text().splitlines()
    left = dict(values)
    key_line = re.compile(r"^(\s*)([A-Za-z_][A-Za-z0-9_]*)(\s*=\s*)([^#;]*?)(\s*([#;].*)?)$")
    for i, line in enumerate(lines):
        m = key_line.match(line)
        if m and m.group(2) in left:
            v = _format(left.pop(m.group(2)))
            lines[i] = f"{m.group(1)}{m.group(2)}{m.group(3)}{v}"
    first_section = next((i for i, l in enumerate(lines) if l.strip().startswith("[")), len(lines))
    block = [f"{k} = {_format(v)}" for k, v in left.items()]
    if block:
        block = ["# set by the sweep (not in the base config)"] + block + [""]
    head = [f"# {h}" for h in header.splitlines()] if header else []
    text = head + lines[:first_section] + block + lines[first_section:]
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text("\n".join(text) + "\n")
    os.replace(tmp, out)  # never a half-written config


@dataclass
class RunResult:
    """One seed's run: the validation Sharpe of each evaluation, by iteration."""
    evals: list[tuple[int, float]]
    iterations: int

    def value(self, objective: str) -> float:
        finite = [s for _, s in self.evals if math.isfinite(s)]
        if not self.evals:
            return float("nan")
        if objective == "best":
            return max(finite) if finite else float("nan")
        return self.evals[-1][1]


class Pruned(Exception):
    """The callback asked the run to stop early."""


def run_training(cmd: list[str], log_path: Path,
                 on_eval: Callable[[int, int, float], bool]) -> RunResult:
    """Runs one ``foxhunt train`` command, its output teed into log_path, calling
    on_eval(iteration, iterations, sharpe) at each validation line; when that returns
    True the run is stopped (SIGTERM) and Pruned raised. SweepError when the run fails
    (with the end of its output)."""
    evals: list[tuple[int, float]] = []
    iterations = 0
    tail: list[str] = []
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, bufsize=1)
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                log.write(line)
                tail = (tail + [line.rstrip()])[-20:]
                m = EVAL_LINE.search(line)
                if not m:
                    continue
                it, iterations = int(m.group(1)), int(m.group(2))
                try:
                    sharpe = float(m.group(3))
                except ValueError:
                    sharpe = float("nan")
                evals.append((it, sharpe))
                if on_eval(it, iterations, sharpe):
                    proc.send_signal(signal.SIGTERM)
                    proc.communicate(timeout=600)
                    raise Pruned()
            rc = proc.wait()
        except BaseException:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            raise
    if rc != 0:
        raise SweepError(f"`{' '.join(cmd)}` exited {rc}:\n" + "\n".join(tail))
    if not evals:
        raise SweepError(f"`{' '.join(cmd)}` printed no validation evaluation (is eval_every "
                         f"above its iterations?):\n" + "\n".join(tail))
    return RunResult(evals, iterations)


def read_validation_csv(path: Path) -> list[tuple[int, float]]:
    """(iteration, sharpe) rows of a run's validation.csv (src/rl/validation.c); [] when
    the file is missing or unreadable."""
    try:
        with open(path, newline="") as f:
            return [(int(row["iteration"]), float(row["sharpe"])) for row in csv.DictReader(f)]
    except (OSError, KeyError, ValueError):
        return []


@dataclass
class Sweep:
    """A sweep: where trials run and what they call."""
    space: Space
    out: Path
    foxhunt: str
    device: str
    extra: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def objective(self, trial: Any) -> float:
        import optuna
        values = {p.name: p.suggest(trial) for p in self.space.params}
        tdir = self.out / "trials" / f"{trial.number:05d}"
        tdir.mkdir(parents=True, exist_ok=False)  # a trial never reuses another's folder
        config = tdir / "trial.ini"
        write_config(self.space.base, values, config,
                     header=f"sweep trial {trial.number} of {self.space.path}")
        results = []
        for k, seed in enumerate(self.space.seeds):
            cmd = [self.foxhunt, "train", "--config", str(config), "--seed", str(seed),
                   "--eval-every", str(self.space.eval_every), "--device", self.device,
                   "--eval-at-end", "0", "--out", str(tdir / f"seed{seed}")] + self.extra

            def on_eval(it: int, iterations: int, sharpe: float, k: int = k) -> bool:
                if not math.isfinite(sharpe):
                    sharpe = -1e3  # a run whose policy never trades scores far below
                trial.report(sharpe, step=k * iterations + it)
                return trial.should_prune()

            try:
                r = run_training(cmd, tdir / f"seed{seed}.log", on_eval)
            except Pruned:
                raise optuna.TrialPruned()
            # the printed Sharpe has 2 decimals; the run's validation.csv has them all
            r.evals = read_validation_csv(tdir / f"seed{seed}" / "validation.csv") or r.evals
            results.append(r.value(self.space.objective))
            trial.set_user_attr(f"seed{seed}", results[-1])
        return float(sum(results) / len(results))


def trials_table(study: Any, path: Path) -> None:
    """Every trial: number, state, value, seconds, params, per-seed values (CSV)."""
    names = sorted({k for t in study.trials for k in t.params})
    attrs = sorted({k for t in study.trials for k in t.user_attrs})
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["trial", "state", "value", "seconds"] + names + attrs)
        for t in study.trials:
            secs = (t.datetime_complete - t.datetime_start).total_seconds() \
                if t.datetime_complete and t.datetime_start else ""
            w.writerow([t.number, t.state.name, "" if t.value is None else t.value, secs] +
                       [t.params.get(n, "") for n in names] +
                       [t.user_attrs.get(a, "") for a in attrs])


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(
        prog="foxhunt sweep",
        description="Hyper-parameter search of `foxhunt train` with Optuna, scored on the "
                    "validation split only; the winner saved as an INI.")
    ap.add_argument("--space", required=True, help="the space JSON (configs/sweep_ppo.json)")
    ap.add_argument("--out", required=True, help="the sweep's folder (study.db, trials/)")
    ap.add_argument("--trials", type=int, default=20, help="trials to add (default 20)")
    ap.add_argument("--jobs", type=int, default=1, help="trials run at once (default 1)")
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument("--sampler", default="tpe", choices=["tpe", "random"])
    ap.add_argument("--seed", type=int, default=0, help="the sampler's seed")
    ap.add_argument("--no-prune", action="store_true", help="run every trial to the end")
    ap.add_argument("--save-best", help="also write the winner's INI here")
    ap.add_argument("--foxhunt", default=os.environ.get("FOXHUNT_BIN") or "foxhunt",
                    help="the foxhunt CLI (default: $FOXHUNT_BIN, else on PATH)")
    ap.add_argument("train_args", nargs="*", help="after --: more `foxhunt train` flags")
    a = ap.parse_args(argv)
    try:
        import optuna
    except ImportError:
        print("foxhunt sweep: needs optuna (scripts/setup.sh installs it; or pip install "
              "optuna)", file=sys.stderr)
        return 2
    if a.trials < 1 or a.jobs < 1:
        print("foxhunt sweep: --trials and --jobs must be at least 1", file=sys.stderr)
        return 2
    try:
        space = load_space(a.space)
    except SweepError as e:
        print(f"foxhunt sweep: {e}", file=sys.stderr)
        return 2
    if shutil.which(a.foxhunt) is None and not Path(a.foxhunt).is_file():
        print(f"foxhunt sweep: the CLI {a.foxhunt} was not found (--foxhunt PATH)",
              file=sys.stderr)
        return 2
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = (optuna.samplers.TPESampler(seed=a.seed) if a.sampler == "tpe"
               else optuna.samplers.RandomSampler(seed=a.seed))
    pruner = (optuna.pruners.NopPruner() if a.no_prune else
              optuna.pruners.SuccessiveHalvingPruner(min_resource=space.eval_every,
                                                     reduction_factor=3))
    study = optuna.create_study(study_name="foxhunt", storage=f"sqlite:///{out / 'study.db'}",
                                load_if_exists=True, direction="maximize", sampler=sampler,
                                pruner=pruner)
    sweep = Sweep(space, out, a.foxhunt, a.device, a.train_args)

    def progress(st: Any, t: Any) -> None:
        done = [x for x in st.trials if x.state.name == "COMPLETE"]
        best = st.best_value if done else float("nan")
        v = "" if t.value is None else f" {t.value:.3f}"
        print(f"trial {t.number:4d} {t.state.name.lower():8s}{v}  params {t.params}  "
              f"(best so far {best:.3f})", flush=True)

    try:
        study.optimize(sweep.objective, n_trials=a.trials, n_jobs=a.jobs,
                       callbacks=[progress], catch=(SweepError,))
    except KeyboardInterrupt:  # Ctrl-C or a time limit's SIGINT: keep what finished
        print("foxhunt sweep: interrupted; the trials that finished are kept", flush=True)
    trials_table(study, out / "trials.csv")
    done = [t for t in study.trials if t.state.name == "COMPLETE"]
    if not done:
        print(f"foxhunt sweep: no trial completed; see {out}/trials/*/seed*.log",
              file=sys.stderr)
        return 1
    best = study.best_trial
    header = (f"the winner of the sweep in {out} (trial {best.number}: mean validation "
              f"Sharpe {best.value:.3f} over seeds {space.seeds}, objective "
              f"{space.objective}),\nfrom {space.path}; scored on the validation split only")
    write_config(space.base, best.params, out / "best.ini", header)
    if a.save_best:
        write_config(space.base, best.params, Path(a.save_best), header)
    counts = {s: sum(t.state.name == s for t in study.trials)
              for s in ("COMPLETE", "PRUNED", "FAIL")}
    print(f"{len(study.trials)} trials ({counts['COMPLETE']} complete, {counts['PRUNED']} "
          f"pruned, {counts['FAIL']} failed); best: trial {best.number}, validation Sharpe "
          f"{best.value:.3f}, {best.params}")
    print(f"written: {out / 'best.ini'}" + (f", {a.save_best}" if a.save_best else "") +
          f", {out / 'trials.csv'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
