"""foxhunt.pbo (issue 34, item 4): the probability of backtest overfitting by CSCV,
against a case worked by hand, a brute-force implementation written here another way
(pure Python: rows joined per split, statistics.pstdev, ranks by sorting), and two
statistical cases (noise only: PBO 1/2; one configuration with an edge: PBO 0)."""

from __future__ import annotations

import itertools
import math
import statistics

import numpy as np
import pytest

from foxhunt import pbo

LN3 = math.log(3.0)


def _blocks_of_pairs(means: list[list[float]]) -> np.ndarray:
    """Each configuration's block b is the two rows 0.01 * (mean_b - 1), 0.01 *
    (mean_b + 1): (2 * S, N)."""
    cols = [[0.01 * (m + d) for m in ms for d in (-1, 1)] for ms in means]
    return np.array(cols).T


def test_hand_worked_case():
    """N = 3, S = 4 (6 splits), two rows a block: block b of a configuration is m_b +- 1
    (times 0.01). Two blocks joined (4 rows m1 +- 1, m2 +- 1) have mean m = (m1 + m2)/2
    and, with h = (m1 - m2) / 2, population variance (4h^2 + 4) / 4, so
    Sharpe = m / sqrt(h^2 + 1):
        A = [1, 1, 1, 1]:   every pair 1
        B = [3, 3, -1, -1]: {0,1} 3, {2,3} -1, the four mixed pairs 1/sqrt(5) = 0.447
        C = [-1, 3, 3, -1]: {1,2} 3, {0,3} -1, the four mixed pairs 0.447
    IS  -> best -> OOS Sharpe A / B / C -> rank of best, logit:
        {0,1} -> B  -> {2,3}: 1 /    -1 / .447 -> 1, ln(1/3)
        {0,2} -> A  -> {1,3}: 1 /  .447 / .447 -> 3, ln 3
        {0,3} -> A  -> {1,2}: 1 /  .447 /    3 -> 2, 0
        {1,2} -> C  -> {0,3}: 1 /  .447 /   -1 -> 1, ln(1/3)
        {1,3} -> A  -> {0,2}: 1 /  .447 / .447 -> 3, ln 3
        {2,3} -> A  -> {0,1}: 1 /     3 / .447 -> 2, 0
    PBO = 4/6 (logit <= 0 counts); median logit 0; the IS-best loses OOS in 2 of 6."""
    m = _blocks_of_pairs([[1, 1, 1, 1], [3, 3, -1, -1], [-1, 3, 3, -1]])
    r = pbo.pbo_cscv(m, blocks=4)
    assert (r.configs, r.blocks, r.splits, r.rows_per_block) == (3, 4, 6, 2)
    assert r.chosen.tolist() == [1, 0, 0, 2, 0, 0]
    np.testing.assert_allclose(r.logits, [-LN3, LN3, 0, -LN3, LN3, 0], atol=1e-12)
    assert r.pbo == pytest.approx(4 / 6, abs=1e-15)
    assert r.median_logit == pytest.approx(0.0, abs=1e-12)
    assert r.prob_oos_loss == pytest.approx(2 / 6, abs=1e-15)
    np.testing.assert_allclose(r.is_sharpe, [3, 1, 1, 3, 1, 1], rtol=1e-12)
    np.testing.assert_allclose(r.oos_sharpe, [-1, 1, 1, -1, 1, 1], rtol=1e-12)


def _sharpe_ref(x: list[float]) -> float:
    mean, sd = statistics.fmean(x), statistics.pstdev(x)
    if sd == 0 or sd <= pbo.ZERO_STD * abs(mean):
        return 0.0 if mean == 0 else math.copysign(math.inf, mean)
    return mean / sd


def _cscv_ref(m: np.ndarray, s: int) -> list[tuple[int, float, float, float]]:
    """Per split: (chosen, rank, IS Sharpe, OOS Sharpe), one split at a time."""
    t, n = m.shape
    rows = t // s
    cols = [[float(v) for v in m[t - rows * s:, j]] for j in range(n)]
    out = []
    for is_blocks in itertools.combinations(range(s), s // 2):
        oos_blocks = [b for b in range(s) if b not in is_blocks]

        def rows_of(col, blocks):
            return [v for b in blocks for v in col[b * rows:(b + 1) * rows]]

        sr_is = [_sharpe_ref(rows_of(c, is_blocks)) for c in cols]
        sr_oos = [_sharpe_ref(rows_of(c, oos_blocks)) for c in cols]
        best = sr_is.index(max(sr_is))
        order = sorted(sr_oos)
        at = [i + 1 for i, v in enumerate(order) if v == sr_oos[best]]
        out.append((best, sum(at) / len(at), sr_is[best], sr_oos[best]))
    return out


@pytest.mark.parametrize("seed, t, n, s", [(1, 41, 2, 2), (2, 37, 3, 4), (3, 60, 5, 6),
                                           (4, 83, 8, 8), (5, 90, 6, 10)])
def test_matches_brute_force(seed, t, n, s):
    """Random returns (T not a multiple of S: the oldest rows are left out), with two
    columns that never trade (Sharpe 0, tied) and one constant positive column (+inf)
    where N allows: chosen column and rank equal, Sharpe ratios within 1e-9."""
    rng = np.random.default_rng(seed)
    m = rng.standard_t(4, size=(t, n)) * 0.01 + rng.normal(0, 0.002, size=n)
    if n >= 5:
        m[:, 1] = m[:, 3] = 0.0
    if n >= 8:
        m[:, 6] = 0.0007
    r = pbo.pbo_cscv(m, blocks=s)
    ref = _cscv_ref(m, s)
    assert r.splits == len(ref) == math.comb(s, s // 2)
    assert r.rows_used == (t // s) * s
    assert r.chosen.tolist() == [x[0] for x in ref]
    ranks = np.array([x[1] for x in ref])
    w = ranks / (n + 1)
    np.testing.assert_allclose(r.logits, np.log(w / (1 - w)), rtol=0, atol=1e-12)
    np.testing.assert_allclose(r.is_sharpe, [x[2] for x in ref], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(r.oos_sharpe, [x[3] for x in ref], rtol=1e-9, atol=1e-12)
    assert r.pbo == np.mean(2 * ranks <= n + 1)


def test_ties():
    """Two identical columns and their mirror image: where the copies win IS, the first
    copy is chosen (never the second) and its OOS rank is shared with the other copy
    (2.5 of 3 when they beat the mirror OOS: logit ln(5/3); 1.5 otherwise: ln(3/5)).
    All columns equal: every rank is the median, logit 0, PBO 1."""
    rng = np.random.default_rng(7)
    z = rng.normal(0.0005, 0.01, size=64)
    r = pbo.pbo_cscv(np.stack([z, z, -z], axis=1), blocks=8)
    assert set(r.chosen.tolist()) <= {0, 2} and 0 in r.chosen and 2 in r.chosen
    copies = r.chosen == 0
    expect = np.where(r.oos_sharpe[copies] > 0, math.log(5 / 3), math.log(3 / 5))
    np.testing.assert_allclose(r.logits[copies], expect, atol=1e-12)
    np.testing.assert_allclose(np.abs(r.logits[~copies]), LN3, atol=1e-12)
    same = pbo.pbo_cscv(np.stack([z] * 4, axis=1), blocks=4)
    assert same.pbo == 1.0 and np.all(same.logits == 0) and np.all(same.chosen == 0)


def test_noise_gives_one_half():
    """N configurations of pure noise: the IS-best's OOS rank is uniform on 1..N, so
    E[PBO] = P(rank <= (N+1)/2) = 1/2 for N even and (N+1)/(2N) for N odd (the median
    rank counts as overfit). The splits of one matrix are far from independent, so the
    mean is over R = 400 matrices; a PBO lies in [0, 1], its standard deviation is at
    most 1/2, and the mean's at most 0.5/sqrt(400) = 0.025: tolerance 4 x 0.025 = 0.1.
    (N = 3's 2/3 is 0.167 away from 1/2: the two cases tell the tie rule apart.)"""
    rng = np.random.default_rng(11)
    for n, expect in [(10, 0.5), (3, 2 / 3)]:
        vals = [pbo.pbo_cscv(rng.normal(0, 0.01, size=(160, n)), blocks=8).pbo
                for _ in range(400)]
        assert abs(np.mean(vals) - expect) <= 0.1, (n, np.mean(vals))


def test_one_edge_among_noise_gives_zero():
    """One configuration with a per-period Sharpe of 0.5 among 9 of noise (T = 320,
    S = 8: 160 rows a half; a noise column's half-sample Sharpe has standard error
    1/sqrt(160) = 0.08, so the edge wins IS and ranks first OOS in practically every
    split): PBO <= 0.02 on each of 20 matrices, median logit ln 10 (rank 10 of 10: w =
    10/11), and the IS-best never loses OOS."""
    rng = np.random.default_rng(12)
    for _ in range(20):
        m = rng.normal(0, 0.01, size=(320, 10))
        m[:, 4] += 0.005
        r = pbo.pbo_cscv(m, blocks=8)
        assert r.pbo <= 0.02, r.pbo
        assert np.mean(r.chosen == 4) >= 0.98
        assert r.median_logit == pytest.approx(math.log(10), abs=1e-12)
        assert r.prob_oos_loss == 0.0


def test_degradation_line():
    """The line through (IS, OOS) Sharpe pairs, against numpy's polyfit; None when the
    IS Sharpe ratios do not vary."""
    rng = np.random.default_rng(5)
    r = pbo.pbo_cscv(rng.normal(0, 0.01, size=(200, 6)), blocks=10, scale=math.sqrt(252))
    slope, intercept, r2 = r.degradation()
    ps, pi = np.polyfit(r.is_sharpe, r.oos_sharpe, 1)
    assert slope == pytest.approx(ps, rel=1e-9) and intercept == pytest.approx(pi, abs=1e-9)
    assert r2 == pytest.approx(np.corrcoef(r.is_sharpe, r.oos_sharpe)[0, 1] ** 2, rel=1e-9)
    unscaled = pbo.pbo_cscv(rng.normal(0, 0.01, size=(200, 6)), blocks=10)
    assert unscaled.scale == 1.0
    # a constant positive column wins every split with IS Sharpe +inf: no line
    flat = pbo.pbo_cscv(np.stack([np.zeros(40), np.zeros(40), np.full(40, 1e-3)], axis=1),
                        blocks=4)
    assert np.all(flat.chosen == 2) and np.all(np.isinf(flat.is_sharpe))
    assert flat.degradation() is None and flat.summary()["degradation"] is None


@pytest.mark.parametrize("m, s, says", [
    (np.zeros(10), 2, "1 dimension"),
    (np.zeros((10, 1)), 2, "1 configuration(s)"),
    (np.zeros((10, 3)), 3, "S must be an even integer"),
    (np.zeros((10, 3)), 0, "S must be an even integer"),
    (np.zeros((10, 3)), 22, "S must be an even integer"),
    (np.zeros((10, 3)), True, "S must be an even integer"),
    (np.zeros((10, 3)), 6, "10 rows cannot make 6 blocks; use at most 4 blocks"),
    (np.zeros((3, 3)), 2, "3 rows cannot make 2 blocks; give a longer history"),
    (np.array([[0.0, 1.0], [np.nan, 0.0], [0, 0], [0, 0]]), 2, "first at row 1, column 0"),
])
def test_refusals(m, s, says):
    with pytest.raises(pbo.PboError) as e:
        pbo.pbo_cscv(m, blocks=s)
    assert says in str(e.value).replace(" of at least 2 rows", "")
