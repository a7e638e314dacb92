"""foxhunt.eval against `foxhunt eval --returns --json`: the same columns, bit for bit
(the CLI writes %.17g, which reads back to the same double; empty cells at bar 0 are
NaN), the same metrics (to the 15 digits eval.json prints) and verdict, for the test and validation splits, on the data the
checkpoint trained on and on another CSV; and a Checkpoint object evaluated directly."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest

import foxhunt
from conftest import SHARED_DATA, run


def read_returns(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    cols = {}
    for j, name in enumerate(header):
        if name == "time":
            cols[name] = np.array([np.datetime64(r[j].replace(" ", "T").rstrip("Z"), "s") for r in body])
        else:
            cols[name] = np.array([float(r[j]) if r[j] else math.nan for r in body])
    return cols


def compare_with_cli(tmp_path, foxhunt_bin, checkpoint, *, split="test", data=None, seed=1):
    cli_flags = ["--split", split, "--seed", str(seed)]
    if data is not None:
        cli_flags += ["--data", data]
    run([foxhunt_bin, "eval", "--checkpoint", checkpoint, "--returns", tmp_path / "r.csv",
         "--json", tmp_path / "e.json", *cli_flags])
    cli = read_returns(tmp_path / "r.csv")
    report = json.loads((tmp_path / "e.json").read_text())
    res = foxhunt.eval(checkpoint, split=split, data=data, seed=seed)
    assert list(res) == list(cli), "columns differ from returns.csv"
    for k in cli:
        a, b = res[k], cli[k]
        assert a.shape == b.shape, k
        if k == "time":
            assert np.array_equal(a, b)
            continue
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        assert same.all(), (f"{k}: first difference at bar {np.flatnonzero(~same)[0]}: "
                            f"{a[~same][0]!r} vs CLI {b[~same][0]!r}")
    assert res.split == report["split"] == split
    assert res.verdict == report["verdict"]
    assert res.periods_per_year == report["periods_per_year"]
    assert res.in_sample == report["in_sample"]
    assert res.policies == list(report["policies"])
    for p, m in report["policies"].items():
        for key, v in m.items():
            if key == "risk":  # a section, not a metric: tests/cli/check_risk.py checks it
                continue
            got = res.metrics[p][key]
            # eval.json's numbers are cJSON's text, 15 significant digits
            assert (v is None and not math.isfinite(got)) or math.isclose(got, v, rel_tol=1e-14,
                                                                          abs_tol=1e-300), \
                f"{p}.{key}: {got} vs eval.json {v}"
    return res


def test_eval_equals_the_cli_on_the_test_split(tmp_path, foxhunt_bin, checkpoint):
    res = compare_with_cli(tmp_path, foxhunt_bin, checkpoint)
    assert "oracle" in res.policies  # the synthetic market's
    assert len(res["time"]) == 480  # the small market's test split
    assert not res.in_sample


def test_eval_equals_the_cli_on_validation_with_another_seed(tmp_path, foxhunt_bin, checkpoint):
    res = compare_with_cli(tmp_path, foxhunt_bin, checkpoint, split="validation", seed=9)
    assert res.split == "validation"


def test_eval_on_other_data_equals_the_cli(tmp_path, foxhunt_bin, checkpoint):
    spy = SHARED_DATA / "spy_daily.csv"
    if not spy.is_file():
        pytest.skip(f"{spy} not present")
    res = compare_with_cli(tmp_path, foxhunt_bin, checkpoint, data=spy)
    assert "oracle" not in res.policies and res.periods_per_year == 252


def test_a_checkpoint_object_evaluates_like_its_file(checkpoint):
    ck = foxhunt.load_checkpoint(checkpoint)
    a = foxhunt.eval(ck)
    b = foxhunt.eval(checkpoint)
    assert all(np.array_equal(a[k], b[k], equal_nan=k != "time") for k in b)
    ck.tensors["policy_output.bias"][7] += 5.0  # action 7: target exposure -0.75
    c = foxhunt.eval(ck)
    assert not np.array_equal(c["greedy_equity"], b["greedy_equity"])


def test_eval_errors(tmp_path, checkpoint):
    with pytest.raises(foxhunt.InputError, match="split"):
        foxhunt.eval(checkpoint, split="holdout")
    with pytest.raises(foxhunt.InputError, match="missing.safetensors"):
        foxhunt.eval(tmp_path / "missing.safetensors")
    with pytest.raises(foxhunt.InputError, match="nope.csv"):
        foxhunt.eval(checkpoint, data=tmp_path / "nope.csv")


def test_eval_refuses_non_finite_periods_and_wrapping_seeds(checkpoint):
    """Issue 32: periods_per_year NaN was taken as "<= 0: the checkpoint's" without a word
    and infinity annualised every figure; a seed of -1 became 2**64 - 1 in ctypes."""
    for v in (float("nan"), float("inf"), 1e9):
        with pytest.raises(foxhunt.InputError, match=r"periods_per_year = (nan|inf|1e\+09); "):
            foxhunt.eval(checkpoint, periods_per_year=v)
    with pytest.raises(foxhunt.InputError, match="periods_per_year = 'x'; expected a number"):
        foxhunt.eval(checkpoint, periods_per_year="x")
    for seed in (-1, 2**64):
        with pytest.raises(foxhunt.InputError, match=rf"seed = {seed} is outside \[0, "):
            foxhunt.eval(checkpoint, seed=seed)
    with pytest.raises(foxhunt.InputError, match=r"split 'test\\x00' holds a NUL"):
        foxhunt.eval(checkpoint, split="test\0")
