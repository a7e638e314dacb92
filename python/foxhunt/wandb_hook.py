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

The validation and final-evaluation numbers (and the CLI's runs, walk-forward folds)
are in the run directory's event files: :func:`log_run_dir` replays them into a W&B run
afterwards. ``wandb.init(sync_tensorboard=True)`` does not see them: it patches
Python's TensorBoard writers, and foxhunt writes from C. wandb is imported only when no
run is given, so this module loads without it (docs/LEARNING.md, "TensorBoard").
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


def _current_run(run: Any) -> Any:
    if run is not None:
        return run
    import wandb  # only here: the module imports without wandb
    if wandb.run is None:
        raise RuntimeError("no W&B run: call wandb.init(...) first or pass run=")
    return wandb.run


def wandb_callback(run: Any = None,
                   then: Optional[Callable[[dict], Optional[bool]]] = None) -> Callable:
    """A callback for :func:`foxhunt.train` / :meth:`foxhunt.Trainer.learn` that calls
    ``run.log(tags(row), step=row["global_step"], commit=True)`` each iteration (committed
    at once: the run's summary holds the latest row); ``run`` defaults to ``wandb.run``
    (call ``wandb.init`` first). ``then(row)``, when given, runs after it and its
    ``False`` stops the run, as a callback's does."""
    run = _current_run(run)

    def callback(row: dict) -> Optional[bool]:
        run.log(tags(row), step=int(row["global_step"]), commit=True)
        return then(row) if then is not None else None

    return callback


def log_run_dir(run_dir: str, run: Any = None) -> int:
    """Every scalar of a run directory's TensorBoard event files (read by the
    ``tensorboard`` package, which applies a resume's restart marker) logged to the W&B
    run (default ``wandb.run``), one ``run.log`` per step in step order, and the
    ``config`` text (config.json) as ``run.config["foxhunt"]``. Returns the number of
    steps logged."""
    import json

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run = _current_run(run)
    acc = EventAccumulator(str(run_dir), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    by_step: dict[int, dict] = {}
    for tag in acc.Tags()["scalars"]:
        for e in acc.Scalars(tag):
            by_step.setdefault(e.step, {})[tag] = e.value
    for step in sorted(by_step):
        run.log(by_step[step], step=step, commit=True)
    if "config" in acc.Tags()["tensors"]:
        text = acc.Tensors("config")[-1].tensor_proto.string_val[0].decode()
        config = "\n".join(line[4:] for line in text.splitlines())  # the code block's indent
        run.config.update({"foxhunt": json.loads(config)}, allow_val_change=True)
    return len(by_step)
