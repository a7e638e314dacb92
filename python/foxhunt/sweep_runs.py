"""The runs of a sweep's trials (foxhunt.sweep; issue 23): one ``foxhunt train`` run
with its validation evaluations read as it prints them, the run's validation.csv, and
who owns a RUNNING trial (so that a rerun can mark FAIL those a killed sweep left)."""

from __future__ import annotations

import csv
import hashlib
import math
import os
import re
import signal
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

class SweepError(Exception):
    """A space file, base config or trial that cannot be used; the message (one line)
    says which file, what is wrong and what to do."""


# `iter 20/40 ... validation Sharpe 1.23 (best 1.50 at 10)` (src/cli/cmd_train.c)
EVAL_LINE = re.compile(r"iter\s+(\d+)/(\d+)\b.*?validation Sharpe (\S+)")


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
    with open(log_path, "w", buffering=1) as log:  # line by line: a log to tail
        try:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True, errors="replace", bufsize=1,
                                    stdin=subprocess.DEVNULL)
        except OSError as e:
            raise SweepError(f"{cmd[0]}: cannot run the trainer: {e.strerror}; give "
                             "--foxhunt PATH of a foxhunt binary") from None
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
    last = next((t for t in reversed(tail) if t.strip()), "")
    if rc != 0:
        raise SweepError(f"{log_path}: the trainer exited {rc}: {last[:300]}; see the log")
    if not evals:
        raise SweepError(f"{log_path}: the trainer printed no validation evaluation (is "
                         "eval_every above its iterations?); see the log")
    return RunResult(evals, iterations)


def read_validation_csv(path: Path) -> list[tuple[int, float]]:
    """(iteration, sharpe) rows of a run's validation.csv (src/rl/validation.c); [] when
    the file is missing or unreadable."""
    try:
        with open(path, newline="") as f:
            return [(int(row["iteration"]), float(row["sharpe"])) for row in csv.DictReader(f)]
    except (OSError, KeyError, ValueError):
        return []


def _proc_start(pid: int) -> str:
    """The start time of process pid (Linux /proc, clock ticks since boot): with the
    pid, it names one process even after the pid is reused; "" where unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return ""


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return ""


def owner_record() -> dict[str, Any]:
    """Who runs a trial: recorded in its user attrs when it starts (issue 32)."""
    pid = os.getpid()
    return {"owner_host": socket.gethostname(), "owner_boot": _boot_id(),
            "owner_pid": pid, "owner_start": _proc_start(pid)}


def owner_gone(attrs: dict[str, Any]) -> Optional[str]:
    """Why a RUNNING trial's owner (owner_record) is known to be gone, or None when it
    may still run: on another host, or a trial with no record (an older sweep's)."""
    pid = attrs.get("owner_pid")
    if not isinstance(pid, int) or attrs.get("owner_host") != socket.gethostname():
        return None
    where = f"process {pid} on {attrs.get('owner_host')}"
    boot = attrs.get("owner_boot")
    if boot and _boot_id() and boot != _boot_id():
        return f"{where} ran before the machine restarted"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return f"{where} is gone (killed?)"
    except OSError:
        pass  # e.g. EPERM: a process of another user holds the pid
    started = attrs.get("owner_start")
    if started and _proc_start(pid) and _proc_start(pid) != started:
        return f"{where} is gone (killed?; its pid now belongs to another process)"
    return None


def fail_stale_trials(study: Any, log: Callable[[str], None]) -> list[int]:
    """Marks FAIL the RUNNING trials whose owner is gone (a sweep killed mid-trial, by
    SIGKILL or a machine's end), saying so; their numbers. Trials that may still run
    elsewhere are reported and left alone."""
    import optuna
    failed = []
    for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        why = owner_gone(t.user_attrs)
        if why is None:
            host = t.user_attrs.get("owner_host")
            log(f"foxhunt sweep: note: trial {t.number} is RUNNING" +
                (f" in process {t.user_attrs.get('owner_pid')} on {host}" if host else
                 " with no record of its process (an older sweep's)") +
                "; left as it is")
            continue
        try:
            study._storage.set_trial_user_attr(t._trial_id, "error", f"left RUNNING: {why}")
            study._storage.set_trial_state_values(t._trial_id,
                                                  optuna.trial.TrialState.FAIL)
        except optuna.exceptions.UpdateFinishedTrialError:
            continue  # another sweep on this study got there first
        failed.append(t.number)
        log(f"foxhunt sweep: trial {t.number} was left RUNNING: {why}; marked FAIL")
    return failed


def sampler_seed(seed: int, trials_before: int) -> int:
    """The sampler's seed for a run that finds trials_before trials in the study: --seed
    itself for a new study (reproducible), else a mix of both, so that a resumed sweep
    draws new parameters instead of replaying the first run's (issue 32)."""
    if trials_before == 0:
        return seed
    h = hashlib.sha256(f"foxhunt sweep {seed} {trials_before}".encode()).digest()
    return int.from_bytes(h[:4], "little")
