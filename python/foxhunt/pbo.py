"""The probability of backtest overfitting (PBO) by combinatorially symmetric
cross-validation (CSCV): Bailey, Borwein, López de Prado and Zhu, "The Probability of
Backtest Overfitting", Journal of Computational Finance 20(4), 2017 (issue 34, item 4;
docs/WALKFORWARD.md, "The probability of backtest overfitting").

Given M, T rows of per-period returns by N configurations (the columns a search chose
among), :func:`pbo_cscv` cuts the rows into S contiguous blocks of equal length (S even;
the first T mod S rows, the oldest, are left out) and, for each of the C(S, S/2) ways to
take S/2 blocks as in-sample (IS) and the rest as out-of-sample (OOS):

- picks n*, the configuration with the highest IS Sharpe ratio (ties: the lowest column,
  as numpy's argmax);
- ranks n*'s OOS Sharpe among the N OOS Sharpe ratios, 1 the worst and N the best, ties
  sharing their mean rank (so N equal values all rank (N + 1) / 2);
- takes w = rank / (N + 1) and the logit l = ln(w / (1 - w)).

PBO is the fraction of splits with l <= 0: n* did no better than the median
configuration out of sample. A Sharpe ratio here is mean / standard deviation of the
rows' returns (the population's, divided by n, as src/rl/backtest_metrics.c computes a
backtest's), per period; a column with no variance has Sharpe 0 when its mean is 0 (a
policy that never trades) and +-inf otherwise.

Pure numpy; the splits are evaluated from per-block sums, a chunk of splits at a time, so
S = 16 (12,870 splits, the paper's choice) over hundreds of configurations takes well
under a second.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

MAX_BLOCKS = 20              # C(20, 10) = 184,756 splits; more is slow and adds nothing
MIN_ROWS_PER_BLOCK = 2       # a block's standard deviation needs two rows
SPLITS_PER_CHUNK = 2048      # bounds the memory of one pass: (chunk, N) floats
ZERO_STD = 1e-12             # std <= ZERO_STD * |mean| is no variance (rounding of a constant)


class PboError(ValueError):
    """M or S cannot give a PBO; the message says what is wrong and what to do."""


@dataclass(frozen=True)
class PboResult:
    """CSCV's result; per-split arrays are in itertools.combinations order of the IS
    blocks."""
    pbo: float                 # fraction of splits with logit <= 0
    configs: int               # N
    blocks: int                # S
    splits: int                # C(S, S/2)
    rows_used: int             # T - (T mod S)
    rows_per_block: int
    logits: np.ndarray         # (splits,) l of n*
    chosen: np.ndarray         # (splits,) n*, a column index
    is_sharpe: np.ndarray      # (splits,) n*'s IS Sharpe (per period, times `scale`)
    oos_sharpe: np.ndarray     # (splits,) n*'s OOS Sharpe
    scale: float = 1.0         # the Sharpe ratios' factor (sqrt(periods a year), or 1)

    @property
    def median_logit(self) -> float:
        return float(np.median(self.logits))

    @property
    def prob_oos_loss(self) -> float:
        """The fraction of splits where n* has a negative OOS Sharpe ratio."""
        return float(np.mean(self.oos_sharpe < 0))

    def degradation(self) -> Optional[tuple[float, float, float]]:
        """The paper's performance degradation: the least-squares line OOS Sharpe =
        slope x IS Sharpe + intercept over the splits, and its R^2; None when the IS
        Sharpe ratios do not vary (or are not finite)."""
        ok = np.isfinite(self.is_sharpe) & np.isfinite(self.oos_sharpe)
        x, y = self.is_sharpe[ok], self.oos_sharpe[ok]
        if x.size < 2 or np.ptp(x) <= 1e-12 * max(1.0, float(np.abs(x).max())):
            return None
        xc, yc = x - x.mean(), y - y.mean()
        slope = float((xc @ yc) / (xc @ xc))
        intercept = float(y.mean() - slope * x.mean())
        ss = float(yc @ yc)
        r2 = 1.0 - float(((yc - slope * xc) ** 2).sum()) / ss if ss > 0 else 1.0
        return slope, intercept, r2

    def summary(self) -> dict[str, Any]:
        """The numbers a report shows (JSON-ready)."""
        d = self.degradation()
        return {
            "pbo": self.pbo, "configurations": self.configs, "blocks": self.blocks,
            "splits": self.splits, "rows_used": self.rows_used,
            "rows_per_block": self.rows_per_block, "median_logit": self.median_logit,
            "logit_quartiles": [float(q) for q in np.quantile(self.logits, [0.25, 0.75])],
            "prob_oos_loss": self.prob_oos_loss,
            "sharpe_scale": self.scale,
            "median_is_sharpe": _finite_median(self.is_sharpe),
            "median_oos_sharpe": _finite_median(self.oos_sharpe),
            "degradation": None if d is None else
            {"slope": d[0], "intercept": d[1], "r2": d[2]},
        }


def _finite_median(x: np.ndarray) -> Optional[float]:
    f = x[np.isfinite(x)]
    return float(np.median(f)) if f.size else None


def _sharpe(s1: np.ndarray, s2: np.ndarray, n: int, mu: np.ndarray) -> np.ndarray:
    """Sharpe ratios of rows whose centred sums are s1, s2 (x - mu, (x - mu)^2) over n
    rows; centring keeps the variance accurate for returns far smaller than 1."""
    mean_c = s1 / n
    var = np.maximum((s2 - s1 * mean_c) / n, 0.0)
    mean = mean_c + mu
    std = np.sqrt(var)
    flat = std <= ZERO_STD * np.abs(mean)
    with np.errstate(divide="ignore", invalid="ignore"):
        sr = mean / std
        no_var = np.where(mean == 0, 0.0, np.sign(mean) * np.inf)
    return np.where(flat, no_var, sr)


def _mid_rank(values: np.ndarray, pick: np.ndarray) -> np.ndarray:
    """Per row of values (splits, N), the rank (1 = lowest) of the column pick[row],
    ties sharing their mean rank."""
    v = values[np.arange(values.shape[0]), pick][:, None]
    below = (values < v).sum(axis=1)
    equal = (values == v).sum(axis=1)
    return below + (equal + 1) / 2.0


def pbo_cscv(returns: Any, blocks: int = 16, scale: float = 1.0) -> PboResult:
    """PBO by CSCV of returns (T rows of per-period returns, N configuration columns)
    cut into `blocks` (S) blocks; `scale` multiplies the reported Sharpe ratios (e.g.
    sqrt(periods a year)) and changes no rank. PboError for what cannot give one."""
    m = np.asarray(returns, dtype=np.float64)
    if m.ndim != 2:
        raise PboError(f"the performance matrix has {m.ndim} dimension(s); give a 2-D array "
                       "of rows (periods) by columns (configurations)")
    t, n = m.shape
    if n < 2:
        raise PboError(f"{n} configuration(s): PBO measures a choice among at least 2; run "
                       "more trials")
    bad = np.argwhere(~np.isfinite(m))
    if bad.size:
        r, c = bad[0]
        raise PboError(f"the performance matrix holds {len(bad)} value(s) that are not "
                       f"finite (first at row {r}, column {c}: {m[r, c]}); give finite "
                       "returns")
    if isinstance(blocks, bool) or not isinstance(blocks, (int, np.integer)) or \
            blocks < 2 or blocks % 2 or blocks > MAX_BLOCKS:
        raise PboError(f"{blocks!r} blocks: S must be an even integer from 2 to "
                       f"{MAX_BLOCKS} (16 is the paper's)")
    s = int(blocks)
    rows = t // s
    if rows < MIN_ROWS_PER_BLOCK:
        most = 2 * (t // (2 * MIN_ROWS_PER_BLOCK))
        raise PboError(f"{t} rows cannot make {s} blocks of at least {MIN_ROWS_PER_BLOCK} "
                       "rows" + (f"; use at most {most} blocks" if most >= 2 else
                                 "; give a longer history"))
    if not (isinstance(scale, (int, float)) and math.isfinite(scale) and scale > 0):
        raise PboError(f"scale {scale!r}: give a positive finite factor")
    used = m[t - rows * s:]                       # (S * rows, N): the oldest rows left out
    mu = used.mean(axis=0)                        # (N,)
    centred = (used - mu).reshape(s, rows, n)     # (S, rows, N)
    b1 = centred.sum(axis=1)                      # (S, N)
    b2 = (centred ** 2).sum(axis=1)               # (S, N)
    tot1, tot2 = b1.sum(axis=0), b2.sum(axis=0)   # (N,)
    half = rows * (s // 2)

    combos = itertools.combinations(range(s), s // 2)
    ranks, chosen, is_sr, oos_sr = [], [], [], []
    while True:
        chunk = list(itertools.islice(combos, SPLITS_PER_CHUNK))
        if not chunk:
            break
        pick = np.zeros((len(chunk), s))          # (splits, S) 1 = an IS block
        for i, c in enumerate(chunk):
            pick[i, list(c)] = 1.0
        i1, i2 = pick @ b1, pick @ b2             # (splits, N)
        sr_is = _sharpe(i1, i2, half, mu)
        sr_oos = _sharpe(tot1 - i1, tot2 - i2, half, mu)
        best = np.argmax(sr_is, axis=1)           # (splits,) the first of equal maxima
        ranks.append(_mid_rank(sr_oos, best))
        chosen.append(best)
        at = np.arange(len(chunk))
        is_sr.append(sr_is[at, best] * scale)
        oos_sr.append(sr_oos[at, best] * scale)
    rank = np.concatenate(ranks)
    w = rank / (n + 1)
    lg = np.log(w / (1.0 - w))
    # l <= 0 is rank <= (N + 1) / 2, decided on the ranks (exact halves) not on a log
    return PboResult(pbo=float(np.mean(2 * rank <= n + 1)), configs=n, blocks=s,
                     splits=lg.size,
                     rows_used=rows * s, rows_per_block=rows, logits=lg,
                     chosen=np.concatenate(chosen), is_sharpe=np.concatenate(is_sr),
                     oos_sharpe=np.concatenate(oos_sr), scale=float(scale))
