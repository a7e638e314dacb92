"""Market data: OHLCV bars (a CSV, or the synthetic market), the 51 causal features,
their normalisation and the train / validation / test splits, built by the same C code
``foxhunt train`` builds them with (docs/FEATURES.md, docs/EVALUATION.md)."""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from . import _lib
from ._lib import Handle, check, encode, err_buffer, lib, made, text
from .config import Config
from .errors import InputError

# The sizes are the library's (foxhunt/shapes.h), asked once at import, never copied.
N_FEATURES = _lib.size("n_features")
STATE_DIM = _lib.size("state_dim")
N_ACTIONS = _lib.size("n_actions")
FEATURE_WARMUP = 200  # bars before the features are defined (FH_FEATURE_WARMUP)
SPLITS = ("train", "validation", "test", "all")


def feature_names() -> list[str]:
    """The 51 feature names, in column order (docs/FEATURES.md)."""
    return [text(lib().fh_api_feature_name(i)) for i in range(N_FEATURES)]


def _addr(a: Optional[np.ndarray]) -> Optional[int]:
    return None if a is None else a.ctypes.data


class Market(Handle):
    """The data of a run, as ``foxhunt train`` builds it from a configuration.

    ``Market()`` is the synthetic market of the defaults (seed 42, 20,000 hourly bars);
    ``Market("spy.csv")`` a CSV (Yahoo or kline style); keyword arguments are
    configuration keys (``synthetic_bars=5000``, ``train_fraction=0.8``,
    ``split_gap=0``, ``horizon=128``, ...; see :class:`foxhunt.Config`). ``norm`` =
    ``(mean, std)`` (51 each, e.g. a checkpoint's ``norm.mean`` and ``norm.std``)
    applies those statistics instead of fitting them on the training split.
    """

    _free = "fh_api_market_free"

    def __init__(self, csv: Optional[str | os.PathLike[str]] = None, *,
                 config: Optional[Config] = None,
                 norm: Optional[tuple[np.ndarray, np.ndarray]] = None, **values: Any) -> None:
        cfg = config.copy() if config is not None else Config()
        if csv is not None:
            cfg.set("data", os.fspath(csv))
        cfg.update(values)
        mean = std = None
        if norm is not None:
            mean = np.ascontiguousarray(norm[0], dtype=np.float32)
            std = np.ascontiguousarray(norm[1], dtype=np.float32)
            if mean.shape != (N_FEATURES,) or std.shape != (N_FEATURES,):
                raise InputError(f"norm: mean {mean.shape} and std {std.shape}; each "
                                      f"holds the {N_FEATURES} features' statistics")
        err = err_buffer()
        h = lib().fh_api_market_load(cfg.handle, _addr(mean), _addr(std), err, _lib.ERR_CAP)
        super().__init__(made(h, err, "market"))
        self.config = cfg

    @classmethod
    def from_checkpoint(cls, path: str | os.PathLike[str],
                        csv: Optional[str | os.PathLike[str]] = None) -> "Market":
        """The data a checkpoint was trained on, normalised with its statistics (as
        ``foxhunt eval`` rebuilds it); ``csv`` evaluates it on other data."""
        from .checkpoint import load_checkpoint
        ck = load_checkpoint(path)
        cfg = Config.from_checkpoint(path)
        return cls(csv, config=cfg, norm=(ck.tensors["norm.mean"], ck.tensors["norm.std"]))

    @property
    def description(self) -> str:
        return text(lib().fh_api_market_description(self.handle))

    @property
    def n_bars(self) -> int:
        """Raw bars, before the warm-up is dropped."""
        return int(lib().fh_api_market_bar_count(self.handle))

    @property
    def n_rows(self) -> int:
        """Rows the environment reads: bars after the 200-bar warm-up."""
        return int(lib().fh_api_market_row_count(self.handle))

    @property
    def is_synthetic(self) -> bool:
        return lib().fh_api_market_is_synthetic(self.handle) == 1

    def bars(self) -> dict[str, np.ndarray]:
        """The raw OHLCV bars: time (Unix seconds, int64), open, high, low, close,
        volume (float64)."""
        n = self.n_bars
        out = {"time": np.empty(n, np.int64)}
        for k in ("open", "high", "low", "close", "volume"):
            out[k] = np.empty(n, np.float64)
        check(lib().fh_api_market_bars(self.handle, *(_addr(out[k]) for k in
                                       ("time", "open", "high", "low", "close", "volume"))),
              self.handle)
        return out

    def rows(self) -> dict[str, np.ndarray]:
        """What the environment reads, row i = bar i + 200: features (rows, 51) float32
        normalised and clipped to +-5, close and sigma (float32), time (int64 Unix
        seconds), and on the synthetic market expected_return (float64, the oracle's
        signal)."""
        n = self.n_rows
        out = {"features": np.empty((n, N_FEATURES), np.float32),
               "close": np.empty(n, np.float32), "sigma": np.empty(n, np.float32),
               "time": np.empty(n, np.int64)}
        er = np.empty(n, np.float64) if self.is_synthetic else None
        check(lib().fh_api_market_rows(self.handle, _addr(out["features"]),
                                       _addr(out["close"]), _addr(out["sigma"]),
                                       _addr(out["time"]), _addr(er)), self.handle)
        if er is not None:
            out["expected_return"] = er
        return out

    def raw_features(self) -> tuple[np.ndarray, np.ndarray]:
        """Unnormalised features of every bar, (n_bars, 51), and sigma (n_bars); rows
        below the 200-bar warm-up are 0."""
        n = self.n_bars
        f = np.empty((n, N_FEATURES), np.float32)
        s = np.empty(n, np.float32)
        check(lib().fh_api_market_raw_features(self.handle, _addr(f), _addr(s)), self.handle)
        return f, s

    @property
    def norm(self) -> tuple[np.ndarray, np.ndarray]:
        """The z-score statistics applied: (mean, std), 51 each."""
        mean = np.empty(N_FEATURES, np.float32)
        std = np.empty(N_FEATURES, np.float32)
        check(lib().fh_api_market_norm(self.handle, _addr(mean), _addr(std)), self.handle)
        return mean, std

    def split(self, name: str) -> slice:
        """The rows of a split ("train", "validation", "test", "all") as a slice."""
        b, e = ctypes.c_int64(), ctypes.c_int64()
        check(lib().fh_api_market_split(self.handle, encode(name, "split"), ctypes.byref(b),
                                        ctypes.byref(e)), self.handle)
        return slice(b.value, e.value)

    @property
    def splits(self) -> dict[str, slice]:
        return {name: self.split(name) for name in SPLITS}

    def __repr__(self) -> str:
        return f"foxhunt.Market({self.description!r})" if self._h else "foxhunt.Market(closed)"


@dataclass
class Features:
    """The 51 features of a market, row by row (``foxhunt.features``).

    ``time`` (datetime64[s], UTC) and every array have one row per bar from the 200th
    on; ``features`` is (rows, 51) float32; ``splits`` maps each split to its rows.
    ``to_dict()`` gives pandas-ready columns: ``pandas.DataFrame(f.to_dict())``.
    """

    time: np.ndarray
    features: np.ndarray
    sigma: np.ndarray
    close: np.ndarray
    names: list[str]
    normalized: bool
    norm_mean: np.ndarray
    norm_std: np.ndarray
    splits: dict[str, slice]
    description: str
    expected_return: Optional[np.ndarray] = field(default=None)

    def to_dict(self) -> dict[str, np.ndarray]:
        """Columns: time, the 51 features by name, sigma, close."""
        out: dict[str, np.ndarray] = {"time": self.time}
        for j, name in enumerate(self.names):
            out[name] = self.features[:, j]
        out["sigma"] = self.sigma
        out["close"] = self.close
        return out


def features(csv: Optional[str | os.PathLike[str]] = None, synthetic: bool = True, *,
             normalize: bool = True, market: Optional[Market] = None,
             **values: Any) -> Features:
    """The 51 causal features of a CSV, or of the synthetic market when ``csv`` is None.

    ``normalize=True`` gives what the environment sees (z-scored with the training
    split's statistics, clipped to +-5); ``False`` the raw values (``foxhunt
    features`` without ``--normalize``). Keyword arguments are configuration keys:
    ``synthetic_seed``, ``synthetic_bars``, ``train_fraction``, ``validation_fraction``,
    ``split_gap``, ... (the splits and the normalisation follow ``foxhunt train``'s).
    ``market``: an existing :class:`Market` instead.
    """
    if market is None:
        if csv is None and not synthetic:
            raise InputError("features: give csv=PATH, or synthetic=True for the "
                                  "built-in synthetic market")
        market = Market(csv, **values)
    elif csv is not None or values:
        raise InputError("features: market= is the data already; csv and "
                              "configuration keys describe another")
    rows = market.rows()
    if normalize:
        feats, sigma = rows["features"], rows["sigma"]
    else:
        raw, raw_sigma = market.raw_features()
        feats, sigma = raw[FEATURE_WARMUP:], raw_sigma[FEATURE_WARMUP:]
    mean, std = market.norm
    return Features(time=rows["time"].astype("datetime64[s]"), features=feats, sigma=sigma,
                    close=rows["close"], names=feature_names(), normalized=normalize,
                    norm_mean=mean, norm_std=std, splits=market.splits,
                    description=market.description,
                    expected_return=rows.get("expected_return"))
