"""The progress lines of a sweep (foxhunt.sweep; issue 36, item 8: "the shipped search
space on the CPU printed nothing for 10 minutes"). Each trial prints a line when it
starts, one per seed run and one when it ends, each flushed at once, and, when a trial
has printed nothing for HEARTBEAT_S seconds (a long run on the CPU), its latest
validation evaluation:

    trial 3/20 (#2) started: lr 0.00021, epochs 4, gamma 0.864; elapsed 4.1 min
    trial 3/20 (#2) seed 1: iteration 40/80, validation Sharpe 0.871 (35 s into the trial)
    trial 3/20 (#2) seed 1: validation Sharpe 1.234 (41 s into the trial)
    trial 3/20 (#2) complete: 1.234 in 83 s (best so far 1.500, #1): lr 0.00021, ...;
        elapsed 5.5 min, about 23 min left

i/N counts the trials this sweep started (--trials is N), #k is the study's trial
number (its folder trials/0000k). The time left is the trials still to run times the
mean duration of those that ended in this sweep (pruned ones included, as the rest will
be pruned as often), divided by --jobs. Lines of trials run at once (--jobs) interleave;
each names its trial.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any, Callable, Optional

HEARTBEAT_S = 30.0   # a trial's evaluations are printed at most this often



def format_seconds(s: float) -> str:
    """A duration as a person reads it: 41 s, 5.5 min, 2.3 h."""
    if not math.isfinite(s) or s < 0:
        return "?"
    if s < 100:
        return f"{s:.0f} s"
    if s < 100 * 60:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


def format_params(values: dict[str, Any]) -> str:
    """A trial's values, short: floats to 3 significant digits, in the space's order."""
    parts = []
    for k, v in values.items():
        if isinstance(v, float):
            parts.append(f"{k} {v:.3g}")
        else:
            parts.append(f"{k} {v}")
    return ", ".join(parts)


class TrialProgress:
    """Counts and times the trials of one sweep run and prints their lines; safe to call
    from the trials' threads (--jobs)."""

    def __init__(self, total: int, jobs: int, write: Callable[[str], None],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.total, self.jobs = total, max(1, jobs)
        self.write, self.clock = write, clock
        self.start = clock()
        self.lock = threading.Lock()
        self.index: dict[int, int] = {}         # study trial number -> i (1-based)
        self.began: dict[int, float] = {}       # study trial number -> clock at start
        self.last_line: dict[int, float] = {}   # study trial number -> clock at its last line
        self.durations: list[float] = []        # of the trials that ended

    def _name(self, number: int) -> str:
        if number not in self.index:            # a trial that failed before it started
            self.index[number] = len(self.index) + 1
        return f"trial {self.index[number]}/{self.total} (#{number})"

    def started(self, number: int, values: dict[str, Any]) -> None:
        with self.lock:
            self.began[number] = self.last_line[number] = self.clock()
            line = (f"{self._name(number)} started: {format_params(values)}; elapsed "
                    f"{format_seconds(self.clock() - self.start)}")
        self.write(line)

    def evaluation(self, number: int, seed: int, iteration: int, iterations: int,
                   sharpe: float) -> None:
        """A validation evaluation of a trial's run: printed when the trial has printed
        nothing for HEARTBEAT_S seconds."""
        with self.lock:
            now = self.clock()
            if now - self.last_line.get(number, now) < HEARTBEAT_S:
                return
            self.last_line[number] = now
            line = (f"{self._name(number)} seed {seed}: iteration {iteration}/{iterations}, "
                    f"validation Sharpe {sharpe:.3f} "
                    f"({format_seconds(now - self.began.get(number, now))}"
                    " into the trial)")
        self.write(line)

    def seed_done(self, number: int, seed: int, value: float, note: str = "") -> None:
        with self.lock:
            self.last_line[number] = self.clock()
            secs = self.clock() - self.began.get(number, self.start)
            line = (f"{self._name(number)} seed {seed}: validation Sharpe {value:.3f} "
                    f"({format_seconds(secs)} into the trial)" + (f"; {note}" if note else ""))
        self.write(line)

    def time_left(self) -> Optional[float]:
        """Seconds until the sweep's last trial ends, estimated; None before any ended."""
        if not self.durations:
            return None
        left = max(0, self.total - len(self.durations))
        return left * (sum(self.durations) / len(self.durations)) / self.jobs

    def finished(self, number: int, state: str, value: Optional[float],
                 params: dict[str, Any], best: Optional[tuple[float, int]],
                 error: Optional[str] = None) -> None:
        """A trial ended: state (Optuna's, lower case: complete, pruned, fail), its value
        when complete, the study's best (value, number) so far, its error when it failed."""
        with self.lock:
            now = self.clock()
            secs = now - self.began.get(number, now)
            self.durations.append(secs)
            state = {"fail": "failed"}.get(state, state)
            result = (f"{state} in {format_seconds(secs)}" if value is None else
                      f"{state}: {value:.3f} in {format_seconds(secs)}")
            best_txt = "" if best is None else f" (best so far {best[0]:.3f}, #{best[1]})"
            left = self.time_left()
            eta = ("done" if len(self.durations) >= self.total else
                   f"about {format_seconds(left)} left" if left is not None else "")
            values = f": {format_params(params)}" if params else ""
            line = (f"{self._name(number)} {result}{best_txt}{values}; elapsed "
                    f"{format_seconds(now - self.start)}, {eta}")
            if error:
                line += f"\n  error: {error}"
        self.write(line)
