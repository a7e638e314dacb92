"""Training from Python (issue 36): ``foxhunt train``'s one loop (src/rl/train_loop.c)
through the C API's trainer (capi.h: fh_api_trainer_*), in the manner of SB3's
``model.learn(callback=...)``.

    run = foxhunt.train("configs/quickstart.ini", iterations=3, out="runs/q",
                        callback=lambda row: row["mean_episode_return"] < 1)

The configuration is the CLI's settings table: an INI file (``--config``'s format), a
:class:`foxhunt.Config`, a dict, and keys as keyword arguments over it (flags win, as on
the command line). Every learner (``algo``: ppo, dqn, pqn, constant) runs, into the same
run directory ``foxhunt train`` writes. A callback gets each iteration's metrics.csv row
as a dict (after the row is written) and stops the run by returning ``False``: the loop
then writes ``interrupted.safetensors``, from which ``resume=`` continues. Ctrl-C
(KeyboardInterrupt) reaches Python at the next callback and stops the run the same way
before it is raised again.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Union

from . import _lib
from ._lib import TRAIN_CALLBACK, Handle, check, encode, err_buffer, lib, made, text
from .config import Config
from .errors import InputError

FORCE, ALLOW_OTHER_DATA = 1, 2  # capi.h: FH_API_TRAIN_FORCE, FH_API_TRAIN_ALLOW_OTHER_DATA

Callback = Callable[[dict], Optional[bool]]
ConfigLike = Union[Config, dict, str, os.PathLike, None]


@dataclass
class TrainResult:
    """What a run left: its directory, the last checkpoint (``final.safetensors``, or
    ``interrupted.safetensors`` when a callback stopped it), the iteration reached,
    best.safetensors when the validation chose one, and every row the callbacks saw."""

    out: Path
    checkpoint: Path
    iteration: int
    stopped: bool
    best_checkpoint: Optional[Path] = None
    metrics: list = field(default_factory=list)


def make_config(config: ConfigLike = None, **keys: Any) -> Config:
    """A :class:`Config` as ``foxhunt train`` resolves its flags: ``resume``'s checkpoint
    configuration (when a key or the dict gives ``resume`` and config is not a Config),
    then the INI file or dict, then ``keys``. A Config is copied, keys set over it."""
    if isinstance(config, Config):
        c = config.copy()
        c.update(keys)
        return c
    if config is not None and not isinstance(config, (dict, str, os.PathLike)):
        raise InputError(f"config = {config!r} ({type(config).__name__}); expected an INI "
                         "file's path, a foxhunt.Config or a dict of keys")
    resume = keys.get("resume") or (config.get("resume") if isinstance(config, dict) else None)
    c = Config.from_checkpoint(resume) if resume else Config()
    if isinstance(config, dict):
        c.update(config)
    elif config is not None:
        check(lib().fh_api_config_load_ini(c.handle, encode(config, "config file")), c.handle)
    c.update(keys)
    return c


class Trainer(Handle):
    """One training run: ``Trainer(config, **keys)`` validates the configuration,
    builds the learner and opens (and locks) the run directory, writing config.json, as
    ``foxhunt train`` does before its first iteration; :meth:`learn` runs it. Close it
    (or use ``with``) to release the directory's lock. ``force`` and
    ``allow_other_data`` are the CLI's ``--force`` and ``--allow-other-data``."""

    _free = "fh_api_trainer_free"

    def __init__(self, config: ConfigLike = None, *, force: bool = False,
                 allow_other_data: bool = False, **keys: Any) -> None:
        self.config = make_config(config, **keys)
        flags = (FORCE if force else 0) | (ALLOW_OTHER_DATA if allow_other_data else 0)
        err = err_buffer()
        super().__init__(made(lib().fh_api_trainer_create(self.config.handle, flags, err,
                                                          _lib.ERR_CAP), err, "trainer"))

    def __enter__(self) -> "Trainer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def out(self) -> Path:
        """The run directory."""
        return Path(text(lib().fh_api_trainer_out(self.handle)))

    @property
    def iteration(self) -> int:
        """The iteration reached (the checkpoint's when resuming, before a run)."""
        return int(lib().fh_api_trainer_iteration(self.handle))

    def learn(self, callback: Optional[Callback] = None) -> TrainResult:
        """Runs the iterations left, calling ``callback(row)`` after each with its
        metrics.csv row as a dict (NaN where the csv cell is empty); a callback that
        returns ``False`` stops the run after that iteration (``None`` goes on). An
        exception in the callback stops the run too (its checkpoint written) and is
        raised here. Once per trainer."""
        rows: list[dict] = []
        raised: list[BaseException] = []

        def on_row(n: int, names: Any, values: Any, _user: Any) -> int:
            # nothing may escape a ctypes callback (it would be printed and dropped):
            # any exception, KeyboardInterrupt too, stops the run and is raised after it
            try:
                row = {names[i].decode(): values[i] for i in range(n)}
                for k in ("iteration", "global_step", "episodes_finished"):
                    if k in row and math.isfinite(row[k]):
                        row[k] = int(row[k])
                rows.append(row)
                return 0 if callback is not None and callback(row) is False else 1
            except BaseException as e:
                raised.append(e)
                return 0

        c_callback = TRAIN_CALLBACK(on_row)  # kept alive for the call
        h = self.handle
        status = lib().fh_api_trainer_run(h, c_callback, None)
        if raised:
            raise raised[0]
        check(status, h)
        best = text(lib().fh_api_trainer_best_checkpoint(h))
        return TrainResult(out=self.out, checkpoint=Path(text(lib().fh_api_trainer_checkpoint(h))),
                           iteration=self.iteration,
                           stopped=bool(lib().fh_api_trainer_stopped(h)),
                           best_checkpoint=Path(best) if best else None, metrics=rows)


def train(config: ConfigLike = None, callback: Optional[Callback] = None, *,
          force: bool = False, allow_other_data: bool = False, **keys: Any) -> TrainResult:
    """Trains as ``foxhunt train --config CONFIG --key value ...`` does (without its
    closing test-split evaluation: ``foxhunt.eval(result.checkpoint)``); returns the
    :class:`TrainResult`. ``callback(row)`` after each iteration; ``False`` stops."""
    with Trainer(config, force=force, allow_other_data=allow_other_data, **keys) as t:
        return t.learn(callback)

