"""The C API itself (include/foxhunt/capi.h): the binding's prototype table names every
function the header declares, and every entry refuses bad arguments (NULL and freed
handles, handles of another kind, unknown names, wrong sizes) with a message instead of
crashing."""

from __future__ import annotations

import ctypes
import re

import numpy as np
import pytest

import foxhunt
from foxhunt import _lib
from conftest import REPO, SMALL

L = _lib.lib()


def test_prototypes_match_the_header():
    header = re.sub(r"/\*.*?\*/", "", (REPO / "include" / "foxhunt" / "capi.h").read_text(),
                    flags=re.S)
    declared = set(re.findall(r"\b(fh_api_\w+)\s*\(", header))
    assert declared == set(_lib._PROTOTYPES), (
        f"in capi.h only: {sorted(declared - set(_lib._PROTOTYPES))}; "
        f"in _lib.py only: {sorted(set(_lib._PROTOTYPES) - declared)}")


def test_version_and_build_info():
    assert L.fh_api_version() // 1000 == _lib.API_MAJOR
    assert foxhunt.build_info().startswith("foxhunt ")
    assert L.fh_api_episode_log_size() == 80  # the struct capi.h documents


def shapes_h() -> dict[str, int]:
    """foxhunt/shapes.h's integer sizes, each #define's formula evaluated in Python."""
    text = re.sub(r"/\*.*?\*/", "", (REPO / "include" / "foxhunt" / "shapes.h").read_text(),
                  flags=re.S)
    values: dict[str, int] = {}
    for name, expr in re.findall(r"^#define (FH_\w+) (.+?)\s*$", text, flags=re.M):
        expr = re.sub(r"\bFH_\w+\b", lambda m: str(values[m.group(0)]), expr)
        if re.fullmatch(r"[0-9()+*\- ]+", expr):  # integers only (not the float slope)
            values[name] = eval(expr)  # noqa: S307 (digits, parentheses, + - * alone)
    return values


def test_sizes_are_shapes_h():
    shapes = shapes_h()
    want = {"state_dim": "FH_STATE_DIM", "n_actions": "FH_N_ACTIONS",
            "n_features": "FH_N_MARKET_FEATURES",
            "n_portfolio_features": "FH_N_PORTFOLIO_FEATURES",
            "n_exposures": "FH_N_EXPOSURES", "n_urgencies": "FH_N_URGENCIES"}
    for name, macro in want.items():
        assert L.fh_api_size(name.encode()) == shapes[macro], name
    assert shapes["FH_STATE_DIM"] == shapes["FH_N_MARKET_FEATURES"] + \
        shapes["FH_N_PORTFOLIO_FEATURES"]
    assert (foxhunt.N_FEATURES, foxhunt.STATE_DIM, foxhunt.N_ACTIONS) == (
        shapes["FH_N_MARKET_FEATURES"], shapes["FH_STATE_DIM"], shapes["FH_N_ACTIONS"])
    assert L.fh_api_size(b"no_such_size") == -1 and L.fh_api_size(None) == -1
    # capi.h's copies for C callers (the library's build asserts them too)
    header = (REPO / "include" / "foxhunt" / "capi.h").read_text()
    for api, macro in (("FH_API_STATE_DIM", "FH_STATE_DIM"), ("FH_API_N_ACTIONS", "FH_N_ACTIONS"),
                       ("FH_API_N_FEATURES", "FH_N_MARKET_FEATURES")):
        m = re.search(rf"^#define {api} (\d+)", header, flags=re.M)
        assert m and int(m.group(1)) == shapes[macro], api


def last(h) -> str:
    return _lib.text(L.fh_api_last_error(h))


def test_null_and_stale_handles_are_refused():
    buf = np.zeros(foxhunt.STATE_DIM * 4, np.float32)
    assert L.fh_api_vec_env_observe(None, buf.ctypes.data) == _lib.STATUS_INPUT
    assert "invalid handle" in last(None)
    assert L.fh_api_config_set(None, b"horizon", b"5") == _lib.STATUS_INPUT
    assert L.fh_api_market_bar_count(None) == -1
    assert L.fh_api_tensors_count(None) == -1
    assert L.fh_api_vec_env_take_logs(None, buf.ctypes.data, 1) == -1
    # a handle of another kind
    cfg = foxhunt.Config()
    assert L.fh_api_vec_env_observe(cfg.handle, buf.ctypes.data) == _lib.STATUS_INPUT
    assert L.fh_api_market_row_count(cfg.handle) == -1
    # freeing twice, or NULL, is harmless
    L.fh_api_config_free(None)
    L.fh_api_tensors_free(None)
    L.fh_api_vec_env_free(None)


def test_constructors_report_through_the_buffer():
    err = ctypes.create_string_buffer(256)
    assert not L.fh_api_market_load(None, None, None, err, len(err))
    assert b"invalid handle" in err.value
    cfg = foxhunt.Config(**SMALL)
    mean = np.zeros(foxhunt.N_FEATURES, np.float32)
    assert not L.fh_api_market_load(cfg.handle, mean.ctypes.data, None, err, len(err))
    assert b"both norm_mean and norm_std" in err.value
    assert not L.fh_api_tensors_read(b"/nonexistent/x.safetensors", err, len(err))
    assert b"/nonexistent/x.safetensors" in err.value
    assert not L.fh_api_eval_run(None, None, b"test", 1, 0.0, err, len(err))
    assert b"NULL" in err.value
    tiny = ctypes.create_string_buffer(8)  # a short buffer truncates, NUL-terminated
    assert not L.fh_api_tensors_read(b"/nonexistent/x.safetensors", tiny, len(tiny))
    assert len(tiny.value) == 7
    market = foxhunt.Market(**SMALL)
    assert not L.fh_api_vec_env_create(market.handle, None, b"train", 0, 1, err, len(err))
    assert b"0 episodes" in err.value
    assert not L.fh_api_vec_env_create(market.handle, None, None, 2, 1, err, len(err))
    assert b"split" in err.value


def test_config_keys_values_and_json():
    cfg = foxhunt.Config(horizon=77, half_spread=2e-4, data="", eval_at_end=False)
    assert cfg["horizon"] == "77" and cfg["env.horizon"] == "77"
    assert cfg.to_dict()["env"]["horizon"] == 77
    assert foxhunt.Config.from_json(cfg.to_json()).to_json() == cfg.to_json()
    with pytest.raises(foxhunt.InputError, match="unknown configuration key"):
        cfg.set("ppo.horizon", 5)
    with pytest.raises(foxhunt.InputError, match="horizon"):
        cfg.set("horizon", -1)
    with pytest.raises(foxhunt.InputError, match="algo"):
        cfg.set("algo", "sac")
    with pytest.raises(foxhunt.InputError):
        foxhunt.Config.from_json("{not json")
    keys = list(foxhunt.config_keys())
    assert ("env", "horizon") in [(s, k) for s, k, _ in keys]
    assert L.fh_api_config_key_name(-1) is None and L.fh_api_config_key_name(10**6) is None


def test_floats_taken_must_be_finite_and_text_whole():
    """Issue 32: the C API refuses NaN and infinity where it takes a float (curiosity
    params, eval's periods_per_year; config values already were), and a \\u0000 in a
    saved config; the binding refuses text holding a NUL, which the C side cannot see."""
    err = ctypes.create_string_buffer(512)
    for v in (float("nan"), float("inf"), -float("inf"), 1e9):
        assert not L.fh_api_eval_run(b"/nonexistent/x.safetensors", None, b"test", 1, v, err,
                                     len(err))
        assert b"periods_per_year = " in err.value and b"/nonexistent" not in err.value, err.value
    market = foxhunt.Market(**SMALL)
    env = L.fh_api_vec_env_create(market.handle, None, b"train", 2, 1, err, len(err))
    p = np.zeros(4384, np.float32)
    assert L.fh_api_vec_env_set_curiosity(env, p.ctypes.data, p.size) == 0
    p[2240 + 64 + 65] = np.nan  # fc2.weight[1, 1]
    assert L.fh_api_vec_env_set_curiosity(env, p.ctypes.data, p.size) == _lib.STATUS_INPUT
    assert "element 2369 (fc2.weight[1, 1]) is nan" in last(env)
    L.fh_api_vec_env_free(env)
    for key, value in [("horizon\0x", 5), ("horizon", "5\0x"), ("data", "a.csv\0b.csv")]:
        with pytest.raises(foxhunt.InputError, match="holds a NUL character"):
            foxhunt.Config(**{key: value})
    assert foxhunt.Config(data=b"runs/a.csv")["data"] == "runs/a.csv"  # not "b'runs/a.csv'"
    for setting in ("cur_coef", "half_spread", "gamma"):
        for bad in (float("nan"), float("inf")):
            with pytest.raises(foxhunt.InputError, match=f"{setting} = '.*': expected a finite"):
                foxhunt.Config(**{setting: bad})
    with pytest.raises(foxhunt.InputError, match=r"NUL character \(\\u0000\) in a string"):
        foxhunt.Config.from_json('{"run": {"data": "a.csv\\u0000b.csv"}}')


def test_tensor_entries_check_names_dtypes_and_sizes():
    err = ctypes.create_string_buffer(256)
    t = L.fh_api_tensors_new(err, len(err))
    data = np.arange(6, dtype=np.float32)
    shape = (ctypes.c_int64 * 8)(2, 3)
    assert L.fh_api_tensors_set(t, b"x", 0, 2, ctypes.addressof(shape), data.ctypes.data, 24) == 0
    assert L.fh_api_tensors_set(t, b"x", 9, 2, ctypes.addressof(shape), data.ctypes.data, 24) == 2
    assert "dtype 9" in last(t)
    assert L.fh_api_tensors_set(t, b"y", 0, 2, ctypes.addressof(shape), data.ctypes.data, 20) == 2
    assert "20 bytes given" in last(t)
    assert L.fh_api_tensors_set(t, b"__metadata__", 0, 0, None, data.ctypes.data, 4) == 2
    assert L.fh_api_tensors_set(t, None, 0, 0, None, data.ctypes.data, 4) == 2
    assert L.fh_api_tensors_set(t, b"z", 0, 9, ctypes.addressof(shape), data.ctypes.data, 4) == 2
    out = np.empty(6, np.float32)
    assert L.fh_api_tensors_copy(t, 0, out.ctypes.data, 24) == 0 and np.array_equal(out, data)
    assert L.fh_api_tensors_copy(t, 0, out.ctypes.data, 8) == 2
    assert L.fh_api_tensors_copy(t, 5, out.ctypes.data, 24) == 2 and "outside" in last(t)
    assert L.fh_api_tensors_info(t, -1, None, None, None, None, None) == 2
    assert L.fh_api_tensors_set_meta(t, b"", b"v") == 2
    assert L.fh_api_tensors_write(t, None) == 2
    L.fh_api_tensors_free(t)
    # a checkpoint save refuses part of a network, naming the missing tensor
    t = L.fh_api_tensors_new(err, len(err))
    w = np.zeros((128, foxhunt.STATE_DIM), np.float32)
    shape = (ctypes.c_int64 * 8)(128, foxhunt.STATE_DIM)
    assert L.fh_api_tensors_set(t, b"policy_layer_0.weight", 0, 2, ctypes.addressof(shape),
                                w.ctypes.data, w.nbytes) == 0
    assert L.fh_api_checkpoint_save(t, b"/tmp/fh_never.safetensors") == 2
    assert 'missing tensor "policy_layer_0.bias"' in last(t)
    assert "not saved" in last(t)
    L.fh_api_tensors_free(t)


def test_net_tables():
    assert L.fh_api_net_param_count(b"actor") == 18221
    assert L.fh_api_net_param_count(b"critic") == 364929
    assert L.fh_api_net_param_count(b"curiosity") == 4384
    assert L.fh_api_net_param_count(b"nope") == -1 and L.fh_api_net_tensor_count(None) == -1
    key = ctypes.create_string_buffer(64)
    assert L.fh_api_net_tensor(b"actor", 6, key, 64, None, None, None) == 2
    assert L.fh_api_net_tensor(b"actor", 0, key, 64, None, None, None) == 0
    assert key.value == b"policy_layer_0.weight"
