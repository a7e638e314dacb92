"""Weights & Biases from a foxhunt run (issue 36): a :func:`foxhunt.train` callback that
logs each iteration's metrics row to a W&B run, under the names and steps of the run's
TensorBoard event file (src/rl/run_tensorboard.h): ``charts/<column>`` for the columns
every learner has, ``losses/<column>`` for the learner's own, at step = the row's
``global_step`` (CleanRL's x axis).

    import wandb, foxhunt
    from foxhunt.wandb_hook import wandb_callback
    wandb.init(project="foxhunt")
    foxhunt.train("configs/quickstart.ini", callback=wandb_callback())
    wandb.finish()

The validation and final-evaluation numbers are in the event file only: upload a
finished run directory, event files and all, with ``wandb sync --sync-tensorboard
runs/NAME`` (docs/LEARNING.md, "TensorBoard"). wandb is imported only when no run is
given, so this module loads without it.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional

# the last of the columns every learner has (run_dir.c's COMMON_COLUMNS); the learner's
# own follow it in the row
LAST_COMMON_COLUMN = "action_entropy"


def tags(row: dict) -> dict:
    """The row's finite values under their TensorBoard tags (``charts/`` then, after
    ``action_entropy``, ``losses/``); a non-finite value (an empty csv cell) is left out."""
    out, group = {}, "charts"
    for name, value in row.items():
        if value is not None and math.isfinite(value):
            out[f"{group}/{name}"] = value
        if name == LAST_COMMON_COLUMN:
            group = "losses"
    return out


def wandb_callback(run: Any = None,
                   then: Optional[Callable[[dict], Optional[bool]]] = None) -> Callable:
    """A callback for :func:`foxhunt.train` / :meth:`foxhunt.Trainer.learn` that calls
    ``run.log(tags(row), step=row["global_step"], commit=True)`` each iteration (committed
    at once: the run's summary holds the latest row); ``run`` defaults to ``wandb.run``
    (call ``wandb.init`` first). ``then(row)``, when given, runs after it and its
    ``False`` stops the run, as a callback's does."""
    if run is None:
        import wandb  # only here: the module imports without wandb
        run = wandb.run
        if run is None:
            raise RuntimeError("wandb_callback: no W&B run; call wandb.init(...) first or "
                               "pass run=")

    def callback(row: dict) -> Optional[bool]:
        run.log(tags(row), step=int(row["global_step"]), commit=True)
        return then(row) if then is not None else None

    return callback
