"""Hyper-parameter sweeps of ``foxhunt train``, scored on the validation split only
(issue 23; docs/LEARNING.md, "Sweeps").

Optuna does the search (TPE by default) and the early stopping (successive halving over
the validation evaluations a run makes as it trains); this module only runs trials:

- a trial's settings are the space's base INI with the sampled values written into it
  (:func:`render_config`: a clean INI, the base's comments left out as they describe
  its own values), so the winner's INI is exactly the file its trial ran;
- each trial trains ``seeds`` runs with ``foxhunt train --config trial.ini --seed S
  --eval-every E``, one after another, reading the greedy validation Sharpe from each
  evaluation line the trainer prints; every evaluation is reported to Optuna at step
  ``seed_index * iterations + iteration``, so trials are compared at the same seed and
  iteration, and a pruned trial's run is stopped (SIGTERM: it ends after the current
  iteration, as ``foxhunt train`` does on Ctrl-C);
- the objective is the mean over seeds of the validation Sharpe at the last iteration
  (``"objective": "final"``) or of the best evaluation (``"best"``, the model
  ``best.safetensors`` keeps); the test split is never read;
- at the end, each complete trial's scored models are backtested once more on the
  validation split for their per-bar returns, from which the sweep's probability of
  backtest overfitting is computed (foxhunt.sweep_pbo: OUT/pbo.json, ``--pbo-blocks``);
- every trial prints a line when it starts, one per seed and one when it ends, with the
  time elapsed and an estimate of the time left (foxhunt.sweep_progress).

The space is a JSON file (configs/sweep_ppo.json is the shipped one)::

    {"base": "quickstart.ini",            # relative to the JSON file's folder
     "seeds": [1, 2], "eval_every": 10, "objective": "final",
     "params": {"lr": {"low": 1e-4, "high": 3e-3, "log": true},
                "epochs": {"choices": [2, 4, 8]},
                "minibatch": {"low": 256, "high": 2048, "step": 256}}}

Run as ``foxhunt sweep ...`` (the CLI hands over to this module) or ``python3 -m
foxhunt.sweep ...``; the study lives in OUT/study.db (SQLite), so running the same
command again adds trials to it: with a sampler seed mixed from ``--seed`` and the trials
already there (:func:`sampler_seed`), after marking FAIL the trials a killed sweep left
RUNNING (:func:`fail_stale_trials`). Writes OUT/trials.csv, OUT/best.ini (and
``--save-best FILE``) and OUT/pbo.json. Needs optuna (scripts/setup.sh installs it).

Whatever the space file holds, :func:`load_space` returns a Space the trainer can run
or raises SweepError, one line naming the file (issue 32; tests/fuzz/fuzz_sweep_space.py).
"""

from __future__ import annotations

import argparse
import csv
import difflib
import json
import math
import os
import re
import shutil
import stat
import subprocess
import sys
import threading
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

# the trials' runs (sweep_runs.py), here under this module's names too
from foxhunt.sweep_runs import (EVAL_LINE, Pruned, RunResult, SweepError,  # noqa: F401
                                fail_stale_trials, owner_gone, owner_record,
                                read_validation_csv, run_training, sampler_seed)
from foxhunt import sweep_pbo
from foxhunt.pbo import MAX_BLOCKS
from foxhunt.sweep_progress import TrialProgress

OBJECTIVES = ("final", "best")


# Limits of a space file (issue 32): whatever a hostile file holds, load_space either
# returns a Space whose every value the trainer can take or raises SweepError.
SPACE_MAX_BYTES = 1 << 20
BASE_MAX_BYTES = 16 << 20   # the trainer's INI_MAX_BYTES (src/rl/train_config.c)
INI_MAX_LINE = 198          # the trainer's longest INI line (inih's 200-byte buffer)
MAX_NUMBER = 1e15           # the widest range a setting takes (initial_equity)
MIN_NONZERO = 1e-30         # below a float's smallest normal (1.2e-38) the trainer refuses
MAX_INT_DIGITS = 30         # longer integers are refused before Python converts them
MAX_TEXT = 128              # a string choice's characters
MAX_CHOICES = 1000
MAX_SEEDS = 1000
MAX_EVAL_EVERY = 1 << 24    # the trainer's eval_every range
SEED_MAX = (1 << 64) - 1    # --seed is a u64
KEY_RE = re.compile(r"[a-z][a-z0-9_]{0,63}")
# keys every trial passes as flags (Sweep.objective): a value in the INI would be ignored
SET_BY_SWEEP = {"seed": "--seed (the space's seeds)", "eval_every": "--eval-every",
                "device": "--device", "eval_at_end": "--eval-at-end 0", "out": "--out"}
# characters that would change an INI line's meaning for inih: a new line, a comment, a
# section, a second key (issue 32: a choice "1\n[run]\nout = /x" added lines)
INI_SPECIAL = set("=;#[]")


def _show(value: Any) -> str:
    """A value for a one-line message: its repr, shortened."""
    try:
        r = json.dumps(value)  # as the file writes it (true, not True); one line
    except (TypeError, ValueError, RecursionError):
        r = repr(value)
    return r if len(r) <= 60 else r[:57] + "..."


def _json_type(value: Any) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
             list: "a list", dict: "an object", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def ini_text_problem(text: str) -> Optional[str]:
    """Why text cannot be an INI value (or key) as it stands, or None: empty, too long,
    spaces at its ends (inih strips them), a control or line-separator character, or one
    of = ; # [ ] that would start a comment, a section or another key."""
    if not text:
        return "it is empty"
    if len(text) > MAX_TEXT:
        return f"it has {len(text)} characters (at most {MAX_TEXT})"
    if text != text.strip():
        return "it starts or ends with white space, which the INI reader drops"
    for c in text:
        cat = unicodedata.category(c)
        if cat[0] == "C" or cat in ("Zl", "Zp") or (cat == "Zs" and c != " "):
            return f"it holds the control character U+{ord(c):04X}"
        if c in INI_SPECIAL:
            return f"it holds {c!r}, which the INI reader would take as syntax"
    return None


def _read_text(path: Path, what: str, limit: int) -> str:
    """A regular file's UTF-8 text, or SweepError: never blocks on a FIFO or a device
    (opened non-blocking, checked to be a regular file before any read)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except ValueError:
        raise SweepError(f"{path!r}: the path holds a NUL byte; give the path of the "
                         f"{what}") from None
    except OSError as e:
        raise SweepError(f"{path}: cannot open the {what}: {e.strerror}; give the path "
                         f"of a readable {what}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = ("a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
                else "a device or socket")
        raise SweepError(f"{path}: is {kind}, not a file; give the path of the {what}")
    with os.fdopen(fd, "rb") as f:
        try:
            data = f.read(limit + 1)
        except OSError as e:
            raise SweepError(f"{path}: cannot read the {what}: {e.strerror}") from None
    if len(data) > limit:
        raise SweepError(f"{path}: larger than {limit >> 20 or 1} MiB; a {what} is a small "
                         "text file: check the path")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SweepError(f"{path}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset "
                         f"{e.start}); save the {what} as UTF-8") from None


def _check_base_ini(path: Path, text: str) -> None:
    """The base INI's lines are the trainer's (blank, comment, [section], key = value)
    and short enough for it: a trial's INI is built from them."""
    for n, line in enumerate(text.split("\n"), 1):
        s = line.strip()
        if "\0" in line:
            raise SweepError(f"{path}:{n}: a NUL byte; the base must be an INI file")
        if len(line.rstrip("\r")) > INI_MAX_LINE:
            raise SweepError(f"{path}:{n}: the line has {len(line)} characters; foxhunt's "
                             f"INI lines have at most {INI_MAX_LINE}")
        if not s or s[0] in "#;" or _SECTION_LINE.match(s) or _KEY_LINE.match(s):
            continue
        raise SweepError(f"{path}:{n}: not an INI line ({_show(s)}); expected [section] or "
                         "key = value")


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
    base_text: str = ""
    sections: dict[str, str] = field(default_factory=dict)  # key -> the trainer's section


def trainer_keys(foxhunt: str) -> Optional[dict[str, str]]:
    """The settings `foxhunt train` takes, {key: section}, read from its --help (each
    flag's help ends "[section] key (default: ...)"); None when it lists none."""
    try:
        r = subprocess.run([foxhunt, "train", "--help"], capture_output=True, text=True,
                           errors="replace", timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    keys = dict((m.group(2), m.group(1)) for m in re.finditer(
        r"\[([a-z]+)\] ([a-z][a-z0-9_]*) \(default:", r.stdout + r.stderr))
    return keys or None


def load_space(path: str | Path, keys: Optional[dict[str, str]] = None) -> Space:
    """Reads and checks a space JSON file; SweepError (one line: the file, the field,
    what is wrong, what to do) for anything else. With keys ({key: section}, as
    trainer_keys gives), each param must be one of them."""
    path = Path(path)

    def bad(where: str, what: str, todo: str) -> SweepError:
        return SweepError(f"{path}: {where}: {what}; {todo}")

    def no_constant(name: str) -> Any:
        raise bad(name, "not a number JSON allows", "write a finite number")

    def big_int(s: str) -> int:
        if len(s.lstrip("-")) > MAX_INT_DIGITS:
            raise bad(f"{s[:12]}...", f"an integer of {len(s)} digits",
                      f"write numbers within +-{MAX_NUMBER:g}")
        return int(s)

    def no_duplicates(pairs: list) -> dict:
        d: dict = {}
        for k, v in pairs:
            if k in d:
                raise bad(_show(k), "the key appears twice in one object", "keep one")
            d[k] = v
        return d

    text = _read_text(path, "sweep space (JSON)", SPACE_MAX_BYTES)
    try:
        raw = json.loads(text, parse_constant=no_constant, parse_int=big_int,
                         object_pairs_hook=no_duplicates)
    except json.JSONDecodeError as e:
        raise SweepError(f"{path}:{e.lineno}: not JSON: {e.msg}; fix the file (a JSON "
                         "object with base, seeds, params)") from None
    except RecursionError:
        raise SweepError(f"{path}: nested too deeply to read; a space is an object of "
                         "base, seeds, params") from None
    except ValueError as e:  # what json's decoder raises beyond its own errors
        raise SweepError(f"{path}: not JSON: {str(e).splitlines()[0][:80]}; fix the "
                         "file") from None
    if not isinstance(raw, dict):
        raise SweepError(f"{path}: {_json_type(raw)}, not a JSON object; write an object "
                         "with base, seeds, params (configs/sweep_ppo.json)")
    fields = ("base", "seeds", "eval_every", "objective", "params", "comment")
    unknown = sorted(set(raw) - set(fields))
    if unknown:
        raise SweepError(f"{path}: unknown field(s) {_show(unknown)}; expected base, seeds, "
                         "eval_every, objective, params")
    base = raw.get("base")
    if not isinstance(base, str) or not base or "\0" in base or len(base) > 4096:
        raise bad("base", f"{_show(base)} is not a file name",
                  "name the INI the trials start from (relative to this file's folder)")
    base_path = path.parent / base
    try:
        base_text = _read_text(base_path, "base config (INI)", BASE_MAX_BYTES)
        _check_base_ini(base_path, base_text)
    except SweepError as e:
        raise SweepError(f"{path}: base: {e}") from None
    try:
        base_path = base_path.resolve()
    except (OSError, RuntimeError):
        base_path = Path(os.path.abspath(base_path))

    seeds = raw.get("seeds", [1])
    if not isinstance(seeds, list) or not 1 <= len(seeds) <= MAX_SEEDS:
        raise bad("seeds", f"{_show(seeds)} is not a list of 1 to {MAX_SEEDS} seeds",
                  "write e.g. [1, 2]")
    for s in seeds:
        if isinstance(s, bool) or not isinstance(s, int) or not 0 <= s <= SEED_MAX:
            raise bad("seeds", f"{_show(s)} is not a seed",
                      "seeds are integers from 0 to 2^64-1")
    if len(set(seeds)) != len(seeds):
        raise bad("seeds", "a seed appears twice", "list each seed once")
    eval_every = raw.get("eval_every", 10)
    if (isinstance(eval_every, bool) or not isinstance(eval_every, int) or
            not 1 <= eval_every <= MAX_EVAL_EVERY):
        raise bad("eval_every", f"{_show(eval_every)} is not a count of iterations",
                  f"write an integer from 1 to {MAX_EVAL_EVERY}")
    objective = raw.get("objective", "final")
    if not isinstance(objective, str) or objective not in OBJECTIVES:
        raise bad("objective", f"{_show(objective)} is not an objective",
                  f"write one of {', '.join(OBJECTIVES)}")
    params_raw = raw.get("params")
    if not isinstance(params_raw, dict) or not params_raw:
        raise bad("params", "missing or empty",
                  "'params' must map setting names to ranges or choices")
    params = [_load_param(name, spec, keys, bad) for name, spec in params_raw.items()]
    return Space(path, base_path, seeds, eval_every, objective, params, base_text,
                 dict(keys or {}))


def _number(value: Any, where: str, bad: Callable[..., SweepError]) -> int | float:
    """A finite number within the trainer's ranges (no booleans)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise bad(where, f"{_json_type(value)} ({_show(value)}), not a number",
                  "write a number")
    if not math.isfinite(value) or abs(value) > MAX_NUMBER:
        raise bad(where, f"{_show(value)} is out of range",
                  f"write a number within +-{MAX_NUMBER:g}")
    if value != 0 and abs(value) < MIN_NONZERO:
        raise bad(where, f"{_show(value)} is too small for the trainer",
                  f"write 0 or a magnitude of at least {MIN_NONZERO:g}")
    return value


def _load_param(name: str, spec: Any, keys: Optional[dict[str, str]],
                bad: Callable[..., SweepError]) -> Param:
    where = f"params.{name}" if KEY_RE.fullmatch(name) else f"params {_show(name)}"
    if not KEY_RE.fullmatch(name):
        raise bad(where, "not a config key",
                  "keys are lower-case names like lr or ent_coef (foxhunt train --help)")
    if name in SET_BY_SWEEP:
        raise bad(where, f"the sweep sets it itself ({SET_BY_SWEEP[name]})",
                  "remove it from params")
    if keys is not None and name not in keys:
        near = difflib.get_close_matches(name, list(keys), n=1)
        raise bad(where, "not a setting of foxhunt train",
                  (f"did you mean {near[0]}? " if near else "") +
                  "the keys are in `foxhunt train --help`")
    if not isinstance(spec, dict):
        raise bad(where, f"{_json_type(spec)}, not an object",
                  'write {"low": .., "high": ..} or {"choices": [..]}')
    unknown = sorted(set(spec) - {"low", "high", "log", "step", "choices"})
    if unknown:
        raise bad(where, f"unknown field(s) {_show(unknown)}",
                  "expected low, high, log, step or choices")
    if "choices" in spec:
        if set(spec) != {"choices"}:
            raise bad(where, "choices with low/high/log/step", "give choices or a range")
        choices = spec["choices"]
        if not isinstance(choices, list) or not 1 <= len(choices) <= MAX_CHOICES:
            raise bad(f"{where}.choices", "must be a non-empty list",
                      f"list 1 to {MAX_CHOICES} values")
        seen = set()
        for c in choices:
            if isinstance(c, str):
                why = ini_text_problem(c)
                if why:
                    raise bad(f"{where}.choices", f"{_show(c)}: {why}",
                              "write a value the INI can hold as it is")
                ident: Any = c
            elif isinstance(c, bool):
                ident = float(c)
            else:
                ident = float(_number(c, f"{where}.choices", bad))
            if ident in seen:
                raise bad(f"{where}.choices", f"{_show(c)} appears twice (true is 1, "
                          "false is 0)", "list each value once")
            seen.add(ident)
        return Param(name, choices=list(choices))
    if "low" not in spec or "high" not in spec:
        raise bad(where, "no low and high", 'write {"low": .., "high": ..} or {"choices": '
                  "[..]}")
    low = _number(spec["low"], f"{where}.low", bad)
    high = _number(spec["high"], f"{where}.high", bad)
    if not low < high:
        raise bad(where, f"low {low} must be below high {high}", "swap or widen the range")
    log = spec.get("log", False)
    if not isinstance(log, bool):
        raise bad(f"{where}.log", f"{_show(log)} is not true or false", "write true or false")
    if log and low <= 0:
        raise bad(where, "a log range needs low > 0", "raise low or drop log")
    step = spec.get("step")
    if step is not None:
        step = _number(step, f"{where}.step", bad)
        if not 0 < step <= high - low:
            raise bad(f"{where}.step", f"{step} is not in (0, high - low]",
                      "write a positive step no larger than the range")
        if log:
            raise bad(where, "a log range with a step", "drop log or step")
        if isinstance(low, int) and isinstance(high, int) and isinstance(step, float):
            if step != int(step):
                raise bad(f"{where}.step", f"{step} is not whole", "write an integer step "
                          "for an integer range (or low/high as decimals)")
    return Param(name, low, high, log, step)


def _format(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        if not math.isfinite(value):
            raise SweepError(f"the value {value} is not finite; a setting takes finite "
                             "numbers")
        return repr(value)
    return str(value)


_SECTION_LINE = re.compile(r"^\[([^\]]*)\]\s*([;#].*)?$")
_KEY_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*[=:]")


def render_config(base_text: str, values: dict[str, Any], header: str = "",
                  sections: Optional[dict[str, str]] = None) -> str:
    """The base INI's settings with each key of values set, as a clean INI (issue 32):

    - ``header`` first (as ``#`` lines): where the file came from;
    - the base's comment lines and blank runs are dropped: they described the base's own
      values (quickstart.ini's "256 start bars per collection" under a swept episodes =
      512), and a value line the sweep set is written ``key = value`` without its old
      inline text; lines the sweep did not set are kept as they are;
    - a key the base sets (in any section, every time it appears) gets its value in place;
      one the base lacks goes into its section (``sections``: {key: section}) when the
      base has it, else in a block before the first section (foxhunt reads keys outside
      any section).

    Every key and value is checked (ini_text_problem): nothing a study holds can add a line.
    """
    vals = {}
    for k, v in values.items():
        if not isinstance(k, str) or not KEY_RE.fullmatch(k):
            raise SweepError(f"{_show(k)} is not a config key; keys are names like lr")
        text = _format(v)
        why = ini_text_problem(text)
        if why:
            raise SweepError(f"{k} = {_show(text)}: {why}; a trial's values must be plain")
        vals[k] = text
    sections = sections or {}
    body: list[str] = []
    section = ""
    section_end: dict[str, int] = {}   # section -> index after its last line in body
    placed: set[str] = set()
    for line in base_text.split("\n"):
        line = line.rstrip("\r").rstrip()
        s = line.strip()
        if not s:
            if body and body[-1] != "":
                body.append("")
            continue
        if s[0] in "#;":
            continue
        m = _SECTION_LINE.match(s)
        if m:
            if body and body[-1] != "":
                body.append("")
            section = m.group(1).strip()
            body.append(f"[{section}]")
            section_end[section] = len(body)
            continue
        m = _KEY_LINE.match(s)
        if m and m.group(1) in vals:
            placed.add(m.group(1))
            body.append(f"{m.group(1)} = {vals[m.group(1)]}")
        else:
            body.append(line)
        if section:
            section_end[section] = len(body)
    while body and body[-1] == "":
        body.pop()
    missing = [k for k in vals if k not in placed]
    top = []
    # keys the base lacks: into their own section where the base has it, inserting from
    # the bottom up so that earlier indices stay right
    by_section: dict[str, list[str]] = {}
    for k in missing:
        sec = sections.get(k)
        if sec in section_end:
            by_section.setdefault(sec, []).append(k)
        else:
            top.append(k)
    for sec in sorted(by_section, key=lambda x: section_end[x], reverse=True):
        at = section_end[sec]
        body[at:at] = [f"{k} = {vals[k]}" for k in by_section[sec]]
    head = ["# " + "".join(c if c.isprintable() else "?" for c in h)
            for h in header.splitlines()] if header else []
    block = []
    if top:
        block = ["# set by the sweep (not in the base config)"] + \
                [f"{k} = {vals[k]}" for k in top] + [""]
    if head and (block or body):
        head.append("")
    return "\n".join(head + block + body) + "\n"


def write_config(base: Path | str, values: dict[str, Any], out: Path, header: str = "",
                 sections: Optional[dict[str, str]] = None,
                 base_text: Optional[str] = None) -> None:
    """render_config of base (its text read unless base_text gives it) into out,
    atomically (a temporary file renamed: never a half-written config)."""
    if base_text is None:
        base_text = _read_text(Path(base), "base config (INI)", BASE_MAX_BYTES)
    text = render_config(base_text, values, header, sections)
    out = Path(out)
    tmp = out.parent / (out.name + ".tmp")
    # a FIFO or a device left at the temporary's name is refused, not waited on (issue
    # 32): checked by name, then opened without blocking and checked again
    if tmp.exists() and not tmp.is_file():
        raise SweepError(f"{tmp}: is not a regular file (a FIFO or a device?); remove it")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK, 0o666)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise SweepError(f"{tmp}: is not a regular file; remove it")
            f.write(text)
        os.replace(tmp, out)
    except OSError as e:
        raise SweepError(f"{out}: cannot write the config: {e.strerror}; check the "
                         "folder exists and is writable") from None


@dataclass
class Sweep:
    """A sweep: where trials run and what they call."""
    space: Space
    out: Path
    foxhunt: str
    device: str
    extra: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    progress: Optional[TrialProgress] = None

    def objective(self, trial: Any) -> float:
        for k, v in owner_record().items():
            trial.set_user_attr(k, v)
        try:
            return self._run(trial)
        except SweepError as e:
            trial.set_user_attr("error", str(e).splitlines()[0][:500])
            raise

    def _run(self, trial: Any) -> float:
        import optuna
        values = {p.name: p.suggest(trial) for p in self.space.params}
        tdir = self.out / "trials" / f"{trial.number:05d}"
        try:
            tdir.mkdir(parents=True, exist_ok=False)  # never another trial's folder
        except FileExistsError:
            raise SweepError(f"{tdir}: exists, left by another study; remove "
                             f"{self.out / 'trials'} or give a new --out") from None
        except OSError as e:
            raise SweepError(f"{tdir}: cannot make the trial's folder: {e.strerror}") from None
        config = tdir / "trial.ini"
        write_config(self.space.base, values, config,
                     header=f"sweep trial {trial.number} of {self.space.path}, on "
                            f"{self.space.base} (its comments left out)",
                     sections=self.space.sections, base_text=self.space.base_text)
        if self.progress:
            self.progress.started(trial.number, values)
        results = []
        for k, seed in enumerate(self.space.seeds):
            cmd = [self.foxhunt, "train", "--config", str(config), "--seed", str(seed),
                   "--eval-every", str(self.space.eval_every), "--device", self.device,
                   "--eval-at-end", "0", "--out", str(tdir / f"seed{seed}")] + self.extra

            def on_eval(it: int, iterations: int, sharpe: float, k: int = k,
                        seed: int = seed) -> bool:
                if self.progress:
                    self.progress.evaluation(trial.number, seed, it, iterations, sharpe)
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
            if self.progress:
                self.progress.seed_done(trial.number, seed, results[-1])
        return float(sum(results) / len(results))


def trials_table(study: Any, path: Path) -> None:
    """Every trial: number, state, value, seconds, params, per-seed values (CSV)."""
    names = sorted({k for t in study.trials for k in t.params})
    attrs = sorted({k for t in study.trials for k in t.user_attrs
                    if not k.startswith("owner_")})
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
    ap.add_argument("--seed", type=int, default=0,
                    help="the sampler's seed (default 0); a sweep that resumes a study "
                         "mixes it with the trials already there, so it draws new values")
    ap.add_argument("--no-prune", action="store_true", help="run every trial to the end")
    ap.add_argument("--save-best", help="also write the winner's INI here")
    ap.add_argument("--pbo-blocks", type=int, default=sweep_pbo.DEFAULT_BLOCKS,
                    help="blocks S the validation bars are cut into for the probability "
                         "of backtest overfitting (CSCV: C(S, S/2) splits; even, 2 to "
                         f"{MAX_BLOCKS}; default {sweep_pbo.DEFAULT_BLOCKS})")
    ap.add_argument("--no-pbo", action="store_true",
                    help="skip the validation backtests of the complete trials' models and "
                         "the probability of backtest overfitting")
    ap.add_argument("--foxhunt", default=os.environ.get("FOXHUNT_BIN") or "foxhunt",
                    help="the foxhunt CLI (default: $FOXHUNT_BIN, else on PATH)")
    ap.add_argument("train_args", nargs="*", help="after --: more `foxhunt train` flags")
    a = ap.parse_args(argv)

    def fail(msg: str) -> int:
        print(f"foxhunt sweep: {msg}", file=sys.stderr)
        return 2

    if not 1 <= a.trials <= 1_000_000 or not 1 <= a.jobs <= 1024:
        return fail("--trials must be 1 to 1000000 and --jobs 1 to 1024")
    if not 0 <= a.seed < 1 << 32:
        return fail(f"--seed {a.seed}: the sampler's seed is 0 to 2^32-1")
    if not 2 <= a.pbo_blocks <= MAX_BLOCKS or a.pbo_blocks % 2:
        return fail(f"--pbo-blocks {a.pbo_blocks}: the blocks are an even number from 2 to "
                    f"{MAX_BLOCKS} (16 is the paper's)")
    if shutil.which(a.foxhunt) is None and not Path(a.foxhunt).is_file():
        return fail(f"the CLI {a.foxhunt} was not found (--foxhunt PATH)")
    keys = trainer_keys(a.foxhunt)
    if keys is None:
        print(f"foxhunt sweep: note: {a.foxhunt} train --help lists no settings; the "
              "space's param names are not checked", file=sys.stderr)
    try:
        space = load_space(a.space, keys)
    except SweepError as e:
        return fail(str(e))
    save_best = Path(a.save_best) if a.save_best else None
    if save_best is not None and (save_best.is_dir() or not save_best.parent.is_dir()):
        return fail(f"{save_best}: --save-best needs a file path in an existing folder")
    try:
        import optuna
    except ImportError:
        return fail("needs optuna (scripts/setup.sh installs it; or pip install optuna)")
    out = Path(a.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        return fail(f"{out}: cannot make the sweep's folder: {e.strerror}; give another "
                    "--out")
    optuna.logging.set_verbosity(optuna.logging.ERROR)  # a trial's error: one line below
    pruner = (optuna.pruners.NopPruner() if a.no_prune else
              optuna.pruners.SuccessiveHalvingPruner(min_resource=space.eval_every,
                                                     reduction_factor=3))
    db = out / "study.db"
    try:
        study = optuna.create_study(study_name="foxhunt", storage=f"sqlite:///{db}",
                                    load_if_exists=True, direction="maximize",
                                    pruner=pruner)
        fail_stale_trials(study, lambda m: print(m, flush=True))
        before = len(study.trials)
    except Exception as e:  # sqlite/SQLAlchemy/Optuna raise many kinds for a bad file
        first = (str(e).splitlines() or [type(e).__name__])[0][:200]
        return fail(f"{db}: cannot open the study ({type(e).__name__}: {first}); remove "
                    "it or give another --out")
    if before == 0 and (out / "trials").is_dir() and any((out / "trials").iterdir()):
        return fail(f"{out / 'trials'}: holds trials of a study that {db} does not; "
                    "remove that folder or give another --out")
    seed = sampler_seed(a.seed, before)
    study.sampler = (optuna.samplers.TPESampler(seed=seed) if a.sampler == "tpe"
                     else optuna.samplers.RandomSampler(seed=seed))
    if before:
        print(f"resuming the study in {db}: {before} trials; sampler seed {seed} (from "
              f"--seed {a.seed} and the {before} trials)", flush=True)
    lines = TrialProgress(a.trials, a.jobs, lambda line: print(line, flush=True))
    sweep = Sweep(space, out, a.foxhunt, a.device, a.train_args, progress=lines)

    def progress(st: Any, t: Any) -> None:
        done = [x for x in st.trials if x.state.name == "COMPLETE"]
        best = (st.best_value, st.best_trial.number) if done else None
        lines.finished(t.number, t.state.name.lower(), t.value, t.params, best,
                       t.user_attrs.get("error"))

    try:
        study.optimize(sweep.objective, n_trials=a.trials, n_jobs=a.jobs,
                       callbacks=[progress], catch=(SweepError,))
    except KeyboardInterrupt:  # Ctrl-C or a time limit's SIGINT: keep what finished
        print("foxhunt sweep: interrupted; the trials that finished are kept", flush=True)
    try:
        trials_table(study, out / "trials.csv")
    except OSError as e:
        return fail(f"{out / 'trials.csv'}: cannot write: {e.strerror}")
    done = [t for t in study.trials if t.state.name == "COMPLETE"]
    if not done:
        print(f"foxhunt sweep: no trial completed; see {out}/trials/*/seed*.log",
              file=sys.stderr)
        return 1
    best = study.best_trial
    header = (f"the winner of the sweep in {out} (trial {best.number}: mean validation "
              f"Sharpe {best.value:.3f} over seeds {space.seeds}, objective "
              f"{space.objective}),\nfrom {space.path}; scored on the validation split only.\n"
              f"Settings of {space.base} with the sweep's values "
              f"({', '.join(sorted(best.params))}); its comments are left out, as they "
              "describe its own values.")
    try:
        for path in [out / "best.ini"] + ([save_best] if save_best else []):
            write_config(space.base, best.params, path, header, sections=space.sections,
                         base_text=space.base_text)
    except SweepError as e:
        return fail(str(e))
    counts = {s: sum(t.state.name == s for t in study.trials)
              for s in ("COMPLETE", "PRUNED", "FAIL")}
    print(f"{len(study.trials)} trials ({counts['COMPLETE']} complete, {counts['PRUNED']} "
          f"pruned, {counts['FAIL']} failed); best: trial {best.number}, validation Sharpe "
          f"{best.value:.3f}, {best.params}")
    if a.no_pbo:
        report = {"computed": False, "why": "--no-pbo"}
    else:
        seeds = [(t.number, sorted(int(k[4:]) for k in t.user_attrs
                                   if re.fullmatch(r"seed\d+", k))) for t in done]
        try:
            sweep_pbo.collect_returns(a.foxhunt, out, seeds, space.objective, a.jobs,
                                      lambda line: print(line, flush=True))
            report = sweep_pbo.sweep_pbo(out, [t.number for t in done], a.pbo_blocks)
        except KeyboardInterrupt:  # the trials' results are written already
            report = {"computed": False, "why": "interrupted while backtesting the "
                      "trials' models; a rerun of the sweep (which adds trials) "
                      "backtests the rest"}
    for line in sweep_pbo.pbo_lines(report):
        print(line)
    try:
        sweep_pbo.write_pbo_json(out / sweep_pbo.PBO_FILE, report)
    except (OSError, ValueError) as e:
        return fail(f"{out / sweep_pbo.PBO_FILE}: cannot write: {e}")
    print(f"written: {out / 'best.ini'}" + (f", {a.save_best}" if a.save_best else "") +
          f", {out / 'trials.csv'}, {out / sweep_pbo.PBO_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
