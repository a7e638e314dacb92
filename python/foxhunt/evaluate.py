"""``foxhunt eval`` from Python: every policy's backtest of a checkpoint, bar by bar, as
numpy columns (pandas-ready) with the metrics and the verdict (docs/EVALUATION.md)."""

from __future__ import annotations

import ctypes
import os
import tempfile
from typing import Any, Optional, Union

import numpy as np

from . import _lib
from ._lib import Handle, check, encode, err_buffer, lib, made, text
from .checkpoint import Checkpoint


class _Eval(Handle):
    _free = "fh_api_eval_free"


class EvalResult(dict):
    """The per-bar columns of ``foxhunt eval --returns``: ``time`` (datetime64[s], UTC),
    ``close`` (the bar's close price), then for each policy (``greedy``, ``sampled``, ``buy_and_hold``, ``flat``,
    ``random``, ``oracle`` on the synthetic market, ``always_long``, and the classical
    baselines ``vol_target``, ``tsmom`` and ``ma_crossover``: docs/EVALUATION.md)
    ``<policy>_equity``, ``_return`` (equity[t] / equity[t-1] - 1), ``_exposure``,
    ``_cost`` (a share of the previous bar's equity) and ``_turnover`` of the step into
    bar t (NaN at bar 0). ``pandas.DataFrame(result).set_index("time")`` is the CLI's
    returns.csv.

    Attributes: ``metrics`` (policy -> eval.json's numbers: sharpe, sharpe_se,
    max_drawdown, ...), ``policies``, ``split``, ``periods_per_year``, ``in_sample``,
    ``verdict`` (the greedy policy against buy-and-hold).
    """

    metrics: dict[str, dict[str, float]]
    policies: list[str]
    split: str
    periods_per_year: float
    in_sample: bool
    verdict: str


def eval(checkpoint: Union[str, os.PathLike[str], Checkpoint], *,
         data: Optional[Union[str, os.PathLike[str]]] = None, split: str = "test",
         seed: int = 1, periods_per_year: float = 0.0) -> EvalResult:
    """Backtests a checkpoint as ``foxhunt eval`` does: its policy greedy and sampled
    against the baselines, over the whole ``split`` ("test", "validation", "train",
    "all") of the data it trained on (or of the CSV ``data``), with its normalisation.
    ``seed`` drives the sampled and random policies; ``periods_per_year`` <= 0 takes the
    checkpoint's setting, else the bar spacing's. A :class:`Checkpoint` object is
    evaluated through a temporary file."""
    if isinstance(checkpoint, Checkpoint):
        with tempfile.TemporaryDirectory(prefix="foxhunt_eval_") as d:
            path = os.path.join(d, "checkpoint.safetensors")
            checkpoint.save(path)
            return eval(path, data=data, split=split, seed=seed,
                        periods_per_year=periods_per_year)
    err = err_buffer()
    seed = _lib.integer(seed, "seed", 0, _lib.UINT64_MAX)
    h = lib().fh_api_eval_run(encode(checkpoint, "checkpoint path"), encode(data, "data path"),
                              encode(split, "split"), seed,
                              _lib.real(periods_per_year, "periods_per_year"), err,
                              _lib.ERR_CAP)
    ev = _Eval(made(h, err, "eval"))
    try:
        return _result(ev.handle)
    finally:
        ev.close()


def _result(h: int) -> EvalResult:
    L = lib()
    n = int(L.fh_api_eval_bar_count(h))
    time = np.empty(n, np.int64)
    check(L.fh_api_eval_time(h, time.ctypes.data), h)
    close = np.empty(n, np.float64)
    check(L.fh_api_eval_close(h, close.ctypes.data), h)
    out = EvalResult(time=time.astype("datetime64[s]"), close=close)
    out.policies, out.metrics = [], {}
    names = [text(L.fh_api_eval_metric_name(i)) for i in range(L.fh_api_eval_metric_count())]
    value = ctypes.c_double()
    for p in range(L.fh_api_eval_policy_count(h)):
        name = text(L.fh_api_eval_policy_name(h, p))
        eq = np.empty(n, np.float64)
        steps = {k: np.empty(n - 1, np.float64) for k in ("exposure", "cost", "turnover")}
        check(L.fh_api_eval_path(h, p, eq.ctypes.data, steps["exposure"].ctypes.data,
                                 steps["cost"].ctypes.data, steps["turnover"].ctypes.data), h)
        nan = np.array([np.nan])
        out[f"{name}_equity"] = eq
        out[f"{name}_return"] = np.concatenate([nan, eq[1:] / eq[:-1] - 1.0])
        out[f"{name}_exposure"] = np.concatenate([nan, steps["exposure"]])
        out[f"{name}_cost"] = np.concatenate([nan, steps["cost"] / eq[:-1]])
        out[f"{name}_turnover"] = np.concatenate([nan, steps["turnover"]])
        m: dict[str, Any] = {}
        for k in names:
            check(L.fh_api_eval_metric(h, p, encode(k, "metric"), ctypes.byref(value)), h)
            m[k] = value.value
        out.metrics[name] = m
        out.policies.append(name)
    out.split = text(L.fh_api_eval_split(h))
    out.periods_per_year = float(L.fh_api_eval_periods_per_year(h))
    out.in_sample = L.fh_api_eval_in_sample(h) == 1
    out.verdict = text(L.fh_api_eval_verdict(h))
    return out
