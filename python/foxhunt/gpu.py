"""A foxhunt PPO collection on the GPU, from Python, its batch handed over as DLPack
tensors (no copy through the host): ``torch.from_dlpack(batch["states"])`` is a CUDA
tensor over the collector's own buffer.

    import foxhunt, foxhunt.gpu, torch
    ck = foxhunt.load_checkpoint("runs/x/final.safetensors")
    market = foxhunt.Market.from_checkpoint("runs/x/final.safetensors")
    col = foxhunt.gpu.GpuCollector(market, 1024, 500, seed=1, config=foxhunt.Config.from_checkpoint(...))
    batch = col.collect(ck)                     # or a dict of tensors, numpy or torch
    states = torch.from_dlpack(batch["states"])  # (1024, 500, 54) float32 on the GPU

The collection is the trainer's (gpu_ppo_collector: actor, sampling, environment,
critic, curiosity, GAE, one CUDA graph); episodes carry over from one collection to the
next, as in training. Tensors alias the collector's buffers: the next collect()
overwrites what they show (clone to keep a batch), and the buffers live until the
collector is closed and every tensor taken from them has been released.
"""

from __future__ import annotations

import ctypes
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char_p, c_int32, c_int64, c_uint8,
                    c_uint16, c_uint64, c_void_p)
from typing import Any, Mapping, Optional, Union

import numpy as np

from . import _lib
from ._lib import Handle, check, encode, err_buffer, lib, made, text
from .checkpoint import Checkpoint
from .config import Config
from .data import STATE_DIM, Market
from .errors import InputError
from .nets import flat_params, net_tensors

DL_CUDA = 2  # DLDeviceType kDLCUDA


# ---- DLPack's unversioned ABI (src/capi/dlpack_abi.h) ----
class _DLDevice(Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class _DLDataType(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class _DLTensor(Structure):
    _fields_ = [("data", c_void_p), ("device", _DLDevice), ("ndim", c_int32),
                ("dtype", _DLDataType), ("shape", POINTER(c_int64)),
                ("strides", POINTER(c_int64)), ("byte_offset", c_uint64)]


class DLManagedTensor(Structure):
    pass


DLManagedTensor._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", c_void_p),
                            ("deleter", CFUNCTYPE(None, POINTER(DLManagedTensor)))]

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [c_void_p, c_char_p, c_void_p]
_capsule_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_valid.restype = ctypes.c_int
_capsule_valid.argtypes = [c_void_p, c_char_p]
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = c_void_p
_capsule_pointer.argtypes = [c_void_p, c_char_p]


@CFUNCTYPE(None, c_void_p)
def _capsule_destructor(capsule: int) -> None:
    """A capsule no consumer took (still named "dltensor") releases its tensor; one a
    consumer took was renamed "used_dltensor" and the consumer calls the deleter."""
    if _capsule_valid(capsule, b"dltensor"):
        ptr = _capsule_pointer(capsule, b"dltensor")
        managed = ctypes.cast(ptr, POINTER(DLManagedTensor))
        managed.contents.deleter(managed)


def dltensor_capsule(managed: int) -> Any:
    """A "dltensor" PyCapsule over a DLManagedTensor* (what ``__dlpack__`` returns); a
    capsule no consumer takes releases its tensor when it is destroyed."""
    return _capsule_new(managed, b"dltensor", ctypes.cast(_capsule_destructor, c_void_p).value)


def available() -> tuple[bool, str]:
    """(True, "") when libfoxhunt has CUDA and a GPU is usable, else (False, why)."""
    why = ctypes.create_string_buffer(1024)
    ok = lib().fh_api_gpu_available(why, len(why)) == 1
    return ok, "" if ok else why.value.decode("utf-8", "replace")


class _CCollector(Handle):
    _free = "fh_api_gpu_collector_free"


class DLPackTensor:
    """One tensor of the last collection, exported with the DLPack protocol
    (``__dlpack__`` / ``__dlpack_device__``: ``torch.from_dlpack``, ``cupy.from_dlpack``,
    ``jax.dlpack.from_dlpack``). ``numpy()`` copies it to the host instead."""

    def __init__(self, collector: "GpuCollector", name: str, shape: tuple[int, ...],
                 dtype: np.dtype) -> None:
        self._collector, self.name, self.shape, self.dtype = collector, name, shape, dtype

    def __dlpack__(self, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                   copy: Optional[bool] = None) -> Any:
        # the collect() that made the batch returned after its stream finished: any
        # consumer stream may read it at once, so `stream` needs no synchronisation
        if copy:
            raise BufferError("foxhunt's GPU batch is exported without a copy")
        h = self._collector._c.handle
        ptr = c_void_p()
        check(lib().fh_api_gpu_tensor(h, encode(self.name, "tensor name"),
                                      ctypes.byref(ptr)), h)
        return dltensor_capsule(ptr.value)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (DL_CUDA, self._collector.device_id)

    def numpy(self) -> np.ndarray:
        """A host copy, (N, L) or (N, L, 54) for states."""
        out = np.empty(self.shape, self.dtype)
        h = self._collector._c.handle
        check(lib().fh_api_gpu_tensor_to_host(h, encode(self.name, "tensor name"),
                                              out.ctypes.data, out.nbytes), h)
        return out

    def __repr__(self) -> str:
        return f"foxhunt.gpu.DLPackTensor({self.name}, {self.shape}, {self.dtype}, cuda)"


def _host(v: Any) -> np.ndarray:
    """A numpy array of v (a torch tensor on any device, or array-like), its dtype kept:
    flat_params converts it to float32, refusing what a float32 cannot hold."""
    if hasattr(v, "detach"):
        v = v.detach().to("cpu").numpy()
    return np.asarray(v)


class GpuCollector:
    """N episodes x L steps of PPO experience collected on the GPU (module docstring).

    ``market``: the data (its training split is collected on; default: a new
    :class:`Market` from ``config`` and the keys given); ``config``: the environment,
    gamma, gae_lambda and precision (default: the market's); ``seed``: episode i streams
    (seed, i) as `foxhunt collect --seed` does; ``kernel``: "fast" (default) or
    "reference". Raises :class:`foxhunt.InputError` saying why without a GPU.
    """

    def __init__(self, market: Optional[Market] = None, num_envs: int = 128,
                 num_steps: int = 500, *, seed: int = 0, config: Optional[Config] = None,
                 kernel: str = "fast", **values: Any) -> None:
        ok, why = available()
        if not ok:
            raise InputError(f"GPU collection: {why}")
        if market is None:
            market = Market(config=config, **values)
        elif values:
            config = (config or market.config).copy(**values)
        self.market = market
        self.num_envs = _lib.integer(num_envs, "num_envs", 1, _lib.INT_MAX)
        self.num_steps = _lib.integer(num_steps, "num_steps", 1, _lib.INT_MAX)
        seed = _lib.integer(seed, "seed", 0, _lib.UINT64_MAX)
        err = err_buffer()
        h = lib().fh_api_gpu_collector_create(market.handle, config.handle if config else None,
                                              self.num_envs, self.num_steps, seed,
                                              encode(kernel, "kernel"), err, _lib.ERR_CAP)
        self._c = _CCollector(made(h, err, "GPU collector"))
        self.device_id = 0  # fh_device_select("cuda") takes the first GPU

    def collect(self, weights: Union[Checkpoint, Mapping[str, Any]]) -> dict[str, DLPackTensor]:
        """One collection with the actor's, critic's and curiosity model's weights (a
        Checkpoint, or a mapping of the design note's keys to numpy or torch tensors);
        returns the batch: states (N, L, 54), actions, log_probs, values, advantages,
        returns, rewards, dones, exposures, bars (N, L)."""
        tensors = weights.tensors if isinstance(weights, Checkpoint) else weights
        nets = ("actor", "critic", "curiosity")
        host = {t.key: _host(tensors[t.key]) for net in nets for t in net_tensors(net)
                if t.key in tensors}
        flats = [np.ascontiguousarray(flat_params(host, net)) for net in nets]
        h = self._c.handle
        check(lib().fh_api_gpu_collect(h, *(x for f in flats for x in (f.ctypes.data, f.size))),
              h)
        return self.batch()

    def batch(self) -> dict[str, DLPackTensor]:
        """The last collection's tensors (DLPack)."""
        out = {}
        n, L = self.num_envs, self.num_steps
        for i in range(lib().fh_api_gpu_tensor_count()):
            name = text(lib().fh_api_gpu_tensor_name(i))
            shape = (n, L, STATE_DIM) if name == "states" else (n, L)
            dtype = np.dtype(np.int32 if name in ("actions", "dones", "bars") else np.float32)
            out[name] = DLPackTensor(self, name, shape, dtype)
        return out

    @property
    def timing(self) -> tuple[float, float]:
        """The last collection's device milliseconds: (collection, with the weights'
        upload)."""
        a, b = ctypes.c_double(), ctypes.c_double()
        h = self._c.handle
        check(lib().fh_api_gpu_timing(h, ctypes.byref(a), ctypes.byref(b)), h)
        return a.value, b.value

    def close(self) -> None:
        self._c.close()

    def __enter__(self) -> "GpuCollector":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
