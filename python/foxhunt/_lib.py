"""Loading libfoxhunt and declaring its C API (include/foxhunt/capi.h) for ctypes.

Why ctypes: it is in the standard library, needs no compiler when the package is
installed, and the API is coarse (one call steps N episodes), so its per-call cost is
small next to the work (docs/PYTHON.md measures it). Every prototype of capi.h is
declared once, in ``_PROTOTYPES`` below; ``tests/test_capi_header.py`` checks that the
table and the header name the same functions.

Where the library is looked for, in order:

1. ``FOXHUNT_LIB``: the path of ``libfoxhunt.so`` (or of the directory holding it);
2. the library the wheel bundles beside this file (``pip install ./python`` builds it);
3. the build tree of the checkout this package sits in: ``<repo>/build/libfoxhunt.so``
   (the README's build directory: an editable install or ``PYTHONPATH=python``);
4. the installed library: the dynamic linker's search (``ctypes.util.find_library``),
   then ``<prefix>/lib`` for the prefixes ``/usr/local``, ``/usr`` and ``sys.prefix``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import operator
import os
import sys
from ctypes import (POINTER, c_char_p, c_double, c_int, c_int64, c_size_t,
                    c_uint64, c_void_p)
from pathlib import Path
from typing import Any, Optional

import numpy as np

from .errors import FoxhuntError, InputError

API_MAJOR = 1
STATUS_OK, STATUS_FAILURE, STATUS_INPUT = 0, 1, 2
ERR_CAP = 4096

_H = c_void_p  # every handle is opaque
# capi.h: fh_api_train_callback(n, names, values, user) -> 0 stops the run
TRAIN_CALLBACK = ctypes.CFUNCTYPE(c_int, c_int, POINTER(c_char_p), POINTER(c_double),
                                  c_void_p)
_P = c_void_p  # arrays pass as their address (numpy's .ctypes.data)

# name: (restype, argtypes), in capi.h's order
_PROTOTYPES: dict[str, tuple[Any, list[Any]]] = {
    "fh_api_version": (c_int, []),
    "fh_api_build_info": (c_char_p, []),
    "fh_api_size": (c_int, [c_char_p]),
    "fh_api_last_error": (c_char_p, [_H]),
    # configuration
    "fh_api_config_new": (_H, [c_char_p, c_size_t]),
    "fh_api_config_from_checkpoint": (_H, [c_char_p, c_char_p, c_size_t]),
    "fh_api_config_from_json": (_H, [c_char_p, c_char_p, c_size_t]),
    "fh_api_config_free": (None, [_H]),
    "fh_api_config_set": (c_int, [_H, c_char_p, c_char_p]),
    "fh_api_config_get": (c_int, [_H, c_char_p, c_char_p, c_size_t]),
    "fh_api_config_to_json": (c_int, [_H, c_char_p, c_size_t, POINTER(c_size_t)]),
    "fh_api_config_load_ini": (c_int, [_H, c_char_p]),
    "fh_api_config_validate": (c_int, [_H]),
    "fh_api_config_key_count": (c_int, []),
    "fh_api_config_key_name": (c_char_p, [c_int]),
    "fh_api_config_key_section": (c_char_p, [c_int]),
    "fh_api_config_key_help": (c_char_p, [c_int]),
    # market
    "fh_api_market_load": (_H, [_H, _P, _P, c_char_p, c_size_t]),
    "fh_api_market_free": (None, [_H]),
    "fh_api_market_description": (c_char_p, [_H]),
    "fh_api_market_bar_count": (c_int64, [_H]),
    "fh_api_market_row_count": (c_int64, [_H]),
    "fh_api_market_bars": (c_int, [_H, _P, _P, _P, _P, _P, _P]),
    "fh_api_market_rows": (c_int, [_H, _P, _P, _P, _P, _P]),
    "fh_api_market_raw_features": (c_int, [_H, _P, _P]),
    "fh_api_market_norm": (c_int, [_H, _P, _P]),
    "fh_api_market_split": (c_int, [_H, c_char_p, POINTER(c_int64), POINTER(c_int64)]),
    "fh_api_market_is_synthetic": (c_int, [_H]),
    "fh_api_feature_name": (c_char_p, [c_int]),
    # vector env
    "fh_api_vec_env_create": (_H, [_H, _H, c_char_p, c_int, c_uint64, c_char_p, c_size_t]),
    "fh_api_vec_env_free": (None, [_H]),
    "fh_api_vec_env_size": (c_int, [_H]),
    "fh_api_vec_env_seed": (c_int, [_H, c_uint64, _P]),
    "fh_api_vec_env_reset": (c_int, [_H, _P]),
    "fh_api_vec_env_observe": (c_int, [_H, _P]),
    "fh_api_vec_env_step": (c_int, [_H, _P, _P, _P, _P, _P, _P]),
    "fh_api_vec_env_step_active": (c_int, [_H, _P, _P, _P, _P, _P, _P, _P]),
    "fh_api_vec_env_set_threads": (c_int, [_H, c_int]),
    "fh_api_vec_env_threads": (c_int, [_H]),
    "fh_api_vec_env_set_curiosity": (c_int, [_H, _P, c_int64]),
    "fh_api_vec_env_portfolio": (c_int, [_H, _P, _P, _P, _P]),
    "fh_api_observation_bounds": (c_int, [_P, _P]),
    "fh_api_episode_log_size": (c_size_t, []),
    "fh_api_vec_env_take_logs": (c_int64, [_H, _P, c_int64]),
    # tensors and checkpoints
    "fh_api_tensors_new": (_H, [c_char_p, c_size_t]),
    "fh_api_tensors_read": (_H, [c_char_p, c_char_p, c_size_t]),
    "fh_api_checkpoint_load": (_H, [c_char_p, c_char_p, c_size_t]),
    "fh_api_tensors_free": (None, [_H]),
    "fh_api_tensors_count": (c_int64, [_H]),
    "fh_api_tensors_info": (c_int, [_H, c_int64, POINTER(c_char_p), POINTER(c_int),
                                    POINTER(c_int), _P, POINTER(c_size_t)]),
    "fh_api_tensors_copy": (c_int, [_H, c_int64, _P, c_size_t]),
    "fh_api_tensors_set": (c_int, [_H, c_char_p, c_int, c_int, _P, _P, c_size_t]),
    "fh_api_tensors_meta_count": (c_int64, [_H]),
    "fh_api_tensors_meta_at": (c_int, [_H, c_int64, POINTER(c_char_p), POINTER(c_char_p)]),
    "fh_api_tensors_set_meta": (c_int, [_H, c_char_p, c_char_p]),
    "fh_api_tensors_write": (c_int, [_H, c_char_p]),
    "fh_api_checkpoint_save": (c_int, [_H, c_char_p]),
    # network tables
    "fh_api_net_param_count": (c_int, [c_char_p]),
    "fh_api_net_tensor_count": (c_int, [c_char_p]),
    "fh_api_net_tensor": (c_int, [c_char_p, c_int, c_char_p, c_size_t, POINTER(c_int), _P,
                                  POINTER(c_int64)]),
    # evaluation
    "fh_api_eval_run": (_H, [c_char_p, c_char_p, c_char_p, c_uint64, c_double, c_char_p,
                             c_size_t]),
    "fh_api_eval_free": (None, [_H]),
    "fh_api_eval_policy_count": (c_int, [_H]),
    "fh_api_eval_policy_name": (c_char_p, [_H, c_int]),
    "fh_api_eval_bar_count": (c_int64, [_H]),
    "fh_api_eval_time": (c_int, [_H, _P]),
    "fh_api_eval_close": (c_int, [_H, _P]),
    "fh_api_eval_path": (c_int, [_H, c_int, _P, _P, _P, _P]),
    "fh_api_eval_metric_count": (c_int, []),
    "fh_api_eval_metric_name": (c_char_p, [c_int]),
    "fh_api_eval_metric": (c_int, [_H, c_int, c_char_p, POINTER(c_double)]),
    "fh_api_eval_split": (c_char_p, [_H]),
    "fh_api_eval_periods_per_year": (c_double, [_H]),
    "fh_api_eval_in_sample": (c_int, [_H]),
    "fh_api_eval_verdict": (c_char_p, [_H]),
    # GPU collection
    "fh_api_gpu_available": (c_int, [c_char_p, c_size_t]),
    "fh_api_gpu_collector_create": (_H, [_H, _H, c_int, c_int, c_uint64, c_char_p, c_char_p,
                                         c_size_t]),
    "fh_api_gpu_collector_free": (None, [_H]),
    "fh_api_gpu_collect": (c_int, [_H, _P, c_int64, _P, c_int64, _P, c_int64]),
    "fh_api_gpu_tensor_count": (c_int, []),
    "fh_api_gpu_tensor_name": (c_char_p, [c_int]),
    "fh_api_gpu_tensor": (c_int, [_H, c_char_p, POINTER(c_void_p)]),
    "fh_api_gpu_tensor_to_host": (c_int, [_H, c_char_p, _P, c_size_t]),
    "fh_api_gpu_timing": (c_int, [_H, POINTER(c_double), POINTER(c_double)]),
    # training
    "fh_api_trainer_create": (_H, [_H, c_int, c_char_p, c_size_t]),
    "fh_api_trainer_free": (None, [_H]),
    "fh_api_trainer_out": (c_char_p, [_H]),
    "fh_api_trainer_iteration": (c_int64, [_H]),
    "fh_api_trainer_checkpoint": (c_char_p, [_H]),
    "fh_api_trainer_best_checkpoint": (c_char_p, [_H]),
    "fh_api_trainer_stopped": (c_int, [_H]),
    "fh_api_trainer_run": (c_int, [_H, TRAIN_CALLBACK, c_void_p]),
}

_lib: Optional[ctypes.CDLL] = None
_lib_path: Optional[str] = None


def _candidates() -> list[tuple[str, Path]]:
    """Where to look, in order, each with why it is looked at."""
    found: list[tuple[str, Path]] = []
    env = os.environ.get("FOXHUNT_LIB")
    if env:
        p = Path(env)
        found.append(("FOXHUNT_LIB", p / "libfoxhunt.so" if p.is_dir() else p))
        return found  # an explicit choice is never second-guessed
    found.append(("the wheel", Path(__file__).resolve().parent / "libfoxhunt.so"))
    repo = Path(__file__).resolve().parents[2]
    if (repo / "CMakeLists.txt").is_file() and (repo / "include" / "foxhunt").is_dir():
        found.append(("the build tree", repo / "build" / "libfoxhunt.so"))
    name = ctypes.util.find_library("foxhunt")
    if name:
        found.append(("the dynamic linker's search", Path(name)))
    for prefix in ("/usr/local", "/usr", sys.prefix):
        for libdir in ("lib", "lib64"):
            found.append((f"{prefix}/{libdir}", Path(prefix) / libdir / "libfoxhunt.so"))
    return found


def library_path() -> str:
    """The path of the libfoxhunt this process uses (loading it if needed)."""
    lib()
    assert _lib_path is not None
    return _lib_path


def lib() -> ctypes.CDLL:
    """libfoxhunt, loaded and declared on first use."""
    global _lib, _lib_path
    if _lib is not None:
        return _lib
    tried = []
    for why, path in _candidates():
        if path.name != "libfoxhunt.so" and "/" not in str(path):
            target = str(path)  # a bare soname from find_library
        elif path.is_file():
            target = str(path)
        else:
            tried.append(f"{path} ({why}: absent)")
            continue
        try:
            handle = ctypes.CDLL(target)
        except OSError as e:
            tried.append(f"{path} ({why}: {e})")
            continue
        _declare(handle, target)
        _lib, _lib_path = handle, target
        return handle
    raise FoxhuntError(
        "libfoxhunt not found: install the package with its library (pip install ./python), "
        "build it (cmake -S . -B build && cmake --build build), install it (cmake --install "
        "build), or set FOXHUNT_LIB to the path of libfoxhunt.so. Looked at: "
        + "; ".join(tried))


def _declare(handle: ctypes.CDLL, path: str) -> None:
    version = handle.fh_api_version()
    if version // 1000 != API_MAJOR:
        raise FoxhuntError(f"{path}: C API version {version // 1000}.{version % 1000}; this "
                           f"package speaks {API_MAJOR}.x: use the library and the package "
                           "of the same foxhunt checkout")
    for name, (restype, argtypes) in _PROTOTYPES.items():
        try:
            fn = getattr(handle, name)
        except AttributeError as e:
            raise FoxhuntError(f"{path} lacks {name}: the library is older than this "
                               "package; rebuild it") from e
        fn.restype = restype
        fn.argtypes = argtypes


def size(name: str) -> int:
    """One of the library's sizes (foxhunt/shapes.h) by name (capi.h: fh_api_size)."""
    value = lib().fh_api_size(name.encode())
    if value < 0:
        raise FoxhuntError(f"libfoxhunt knows no size {name!r}")
    return int(value)


def text(b: Optional[bytes]) -> str:
    """A C string from the library as str ("" for NULL)."""
    return b.decode("utf-8", "replace") if b else ""


def raise_for(status: int, message: str) -> None:
    """Raises the exception for a non-zero status."""
    if status == STATUS_OK:
        return
    if status == STATUS_INPUT:
        raise InputError(message)
    raise FoxhuntError(message)


def check(status: int, handle: Optional[int]) -> None:
    """Raises with the handle's last error when status is not OK."""
    if status != STATUS_OK:
        raise_for(status, text(lib().fh_api_last_error(handle)))


def err_buffer() -> ctypes.Array:
    """A buffer for a constructor's error message."""
    return ctypes.create_string_buffer(ERR_CAP)


def made(handle: Optional[int], err: ctypes.Array, what: str) -> int:
    """A constructor's handle, or the InputError carrying its message."""
    if not handle:
        msg = err.value.decode("utf-8", "replace") or f"{what}: failed"
        # constructors report input faults (files, values) far more than anything
        # else; the message says which
        raise InputError(msg)
    return handle


def encode(s: Optional[str | bytes | os.PathLike[str]], what: str = "text") -> Optional[bytes]:
    """A str or path as the C API's UTF-8 bytes (None stays NULL); ``what`` names it in
    the error. The C API reads NUL-terminated strings and cannot see past a NUL, so text
    holding one is refused here: "a\\0b" would otherwise name "a" (issue 32)."""
    if s is None:
        return None
    if isinstance(s, (bytes, os.PathLike)):
        b = os.fsencode(s)
    else:
        try:
            b = str(s).encode("utf-8")
        except UnicodeEncodeError as e:
            raise InputError(f"{what} {s!r}: {e.reason} at character {e.start} (the library "
                             "takes UTF-8 text)") from None
    if b"\0" in b:
        at = b.index(0)
        raise InputError(f"{what} {s!r} holds a NUL character at byte {at}; the library's "
                         f"text ends at a NUL, so it would read "
                         f"{b[:at].decode('utf-8', 'replace')!r}: remove the NUL")
    return b


def integer(value: Any, what: str, low: int, high: int) -> int:
    """value as a Python int in [low, high] (the C parameter's range, or narrower), or the
    InputError saying so. ctypes converts an int to a C int, int64 or uint64 by keeping
    its low bits: 2**32 + 1 episodes would be 1 and seed -1 would be 2**64 - 1."""
    if isinstance(value, (bool, np.bool_)):
        raise InputError(f"{what} = {value!r}; expected an int in [{low}, {high}]")
    try:
        v = operator.index(value)
    except TypeError:
        raise InputError(f"{what} = {value!r} ({type(value).__name__}); expected an int in "
                         f"[{low}, {high}]") from None
    if not low <= v <= high:
        raise InputError(f"{what} = {v} is outside [{low}, {high}]")
    return v


def real(value: Any, what: str) -> float:
    """value as a float, or the InputError saying it is not a number. NaN and infinity
    pass: the C API refuses them where it takes the value, naming the setting."""
    if isinstance(value, (str, bytes)):
        raise InputError(f"{what} = {value!r}; expected a number")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise InputError(f"{what} = {value!r}; expected a number") from None


INT_MAX = (1 << 31) - 1
UINT64_MAX = (1 << 64) - 1


class Handle:
    """Owns one C handle and frees it with ``_free`` once (close() or garbage)."""

    _free: str = ""

    def __init__(self, handle: int) -> None:
        self._h: Optional[int] = handle

    @property
    def handle(self) -> int:
        if not self._h:
            raise FoxhuntError(f"{type(self).__name__} is closed")
        return self._h

    def close(self) -> None:
        """Frees the C handle (safe to call twice)."""
        h, self._h = self._h, None
        if h and _lib is not None:
            getattr(_lib, self._free)(h)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: nothing left to free into
            pass
