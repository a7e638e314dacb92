"""foxhunt.features and foxhunt.Market against `foxhunt features` (the CLI writes %.9g,
which reads back to the same float32: the comparison is exact), on the synthetic market
and on the real CSVs of ../shared/data when present; and the data's errors."""

from __future__ import annotations

import numpy as np
import pytest

import foxhunt
from conftest import SHARED_DATA, run


def read_cli_features(path):
    """`foxhunt features`'s CSV: time (datetime64[s]), the 51 features and sigma (float32)."""
    lines = path.read_text().splitlines()
    header = lines[0].split(",")
    rows = [line.split(",") for line in lines[1:]]
    time = np.array([np.datetime64(r[0].replace(" ", "T"), "s") for r in rows])
    values = np.array([[np.float32(v) for v in r[1:]] for r in rows], dtype=np.float32)
    return header, time, values[:, :foxhunt.N_FEATURES], values[:, foxhunt.N_FEATURES]


def assert_exact(python: np.ndarray, cli: np.ndarray, what: str) -> None:
    assert python.shape == cli.shape, f"{what}: shape {python.shape} vs CLI {cli.shape}"
    bad = np.argwhere(python.view(np.uint32) != cli.view(np.uint32))
    assert len(bad) == 0, (f"{what}: {len(bad)} values differ, first at {tuple(bad[0])}: "
                           f"{python[tuple(bad[0])]!r} vs CLI {cli[tuple(bad[0])]!r}")


def test_raw_features_equal_the_cli(tmp_path, foxhunt_bin):
    out = tmp_path / "f.csv"
    run([foxhunt_bin, "features", "--seed", "7", "--bars", "2500", "--out", out])
    header, time, feats, sigma = read_cli_features(out)
    f = foxhunt.features(synthetic_seed=7, synthetic_bars=2500, normalize=False)
    assert header == ["time", *f.names, "sigma"]
    assert np.array_equal(f.time, time)
    assert_exact(f.features, feats, "raw features")
    assert_exact(f.sigma, sigma, "sigma")
    assert f.features.shape == (2500 - foxhunt.FEATURE_WARMUP, foxhunt.N_FEATURES)


def test_normalized_features_equal_the_cli(tmp_path, foxhunt_bin):
    out = tmp_path / "f.csv"
    run([foxhunt_bin, "features", "--seed", "3", "--bars", "3000", "--normalize",
         "--train-fraction", "0.7", "--out", out])
    _, time, feats, sigma = read_cli_features(out)
    # `features --normalize` fits on the first 70% with no validation split and no gap
    f = foxhunt.features(synthetic_seed=3, synthetic_bars=3000, train_fraction=0.7,
                         validation_fraction=0, split_gap=0)
    assert np.array_equal(f.time, time)
    assert_exact(f.features, feats, "normalised features")
    assert np.abs(f.features).max() <= 5.0
    train = f.features[f.splits["train"]]
    np.testing.assert_allclose(train.mean(axis=0)[np.abs(train).max(axis=0) < 5], 0, atol=0.05)


@pytest.mark.parametrize("name", ["spy_daily.csv", "btcusdt_1h.csv"])
def test_real_csv_equals_the_cli(tmp_path, foxhunt_bin, name):
    csv = SHARED_DATA / name
    if not csv.is_file():
        pytest.skip(f"{csv} not present")
    out = tmp_path / "f.csv"
    run([foxhunt_bin, "features", "--data", csv, "--out", out])
    _, time, feats, sigma = read_cli_features(out)
    f = foxhunt.features(csv, normalize=False)
    assert np.array_equal(f.time, time)
    assert_exact(f.features, feats, f"{name} raw features")
    assert_exact(f.sigma, sigma, f"{name} sigma")
    m = foxhunt.Market(csv)
    assert not m.is_synthetic and m.description.startswith(str(csv))
    bars = m.bars()
    assert len(bars["close"]) == m.n_bars == m.n_rows + foxhunt.FEATURE_WARMUP
    assert (bars["low"] <= bars["close"]).all() and (bars["close"] <= bars["high"]).all()
    assert np.array_equal(bars["close"][foxhunt.FEATURE_WARMUP:].astype(np.float32),
                          m.rows()["close"])


def test_splits_and_normalisation_follow_the_configuration():
    m = foxhunt.Market(synthetic_bars=4000, train_fraction=0.6, validation_fraction=0.2,
                       split_gap=250)
    s = m.splits
    assert s["all"] == slice(0, m.n_rows)
    assert s["train"].start == 0
    assert s["validation"].start - s["train"].stop == 250
    assert s["test"].start - s["validation"].stop == 250
    assert s["test"].stop == m.n_rows
    rows = m.rows()
    raw, _ = m.raw_features()
    mean, std = m.norm
    train_raw = raw[foxhunt.FEATURE_WARMUP:][s["train"]].astype(np.float64)
    np.testing.assert_allclose(mean, train_raw.mean(axis=0), rtol=1e-4, atol=1e-5)
    z = np.clip((raw[foxhunt.FEATURE_WARMUP:] - mean) / std, -5, 5)
    np.testing.assert_allclose(rows["features"], z, atol=2e-5)
    assert "expected_return" in rows and rows["expected_return"].shape == (m.n_rows,)
    # given statistics are applied instead of fitted
    m2 = foxhunt.Market(synthetic_bars=4000, norm=(mean + 1, std * 2))
    np.testing.assert_allclose(m2.rows()["features"],
                               np.clip((raw[foxhunt.FEATURE_WARMUP:] - mean - 1) / (2 * std),
                                       -5, 5), atol=2e-5)


def test_features_to_dict_is_pandas_ready():
    f = foxhunt.features(synthetic_bars=1500)
    d = f.to_dict()
    assert list(d) == ["time", *f.names, "sigma", "close"]
    assert all(len(v) == len(f.time) for v in d.values())


def test_data_errors_name_the_fault(tmp_path):
    with pytest.raises(foxhunt.InputError, match="nope.csv"):
        foxhunt.features(tmp_path / "nope.csv")
    bad = tmp_path / "bad.csv"
    bad.write_text("timestamp,open,high,low,close,volume\n2020-01-01 00:00:00,1,2,0.5,x,1\n")
    with pytest.raises(foxhunt.InputError, match="bad.csv:2"):
        foxhunt.features(bad)
    with pytest.raises(foxhunt.InputError, match="synthetic_bars"):
        foxhunt.features(synthetic_bars=10)
    with pytest.raises(foxhunt.InputError, match="give csv"):
        foxhunt.features(synthetic=False)
    F = foxhunt.N_FEATURES
    with pytest.raises(foxhunt.InputError, match="norm"):
        foxhunt.Market(synthetic_bars=1500, norm=(np.zeros(F), np.zeros(F)))
    with pytest.raises(foxhunt.InputError, match="split"):
        foxhunt.Market(synthetic_bars=1500).split("holdout")


def test_market_of_several_assets_is_refused():
    """A Market is one asset's bars: `data` naming several CSVs (training on several
    assets, issue 34) is refused with what to do, not a Market with no bars."""
    spy, btc = SHARED_DATA / "spy_daily.csv", SHARED_DATA / "btcusdt_1h.csv"
    if not spy.is_file() or not btc.is_file():
        pytest.skip(f"{spy} or {btc} not present")
    with pytest.raises(foxhunt.InputError, match="one Market per CSV"):
        foxhunt.Market(f"{spy},{btc}")
