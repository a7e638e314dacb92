"""The networks in numpy: their tensor tables (from the C library's own descriptors),
flat parameter buffers in the layout the kernels use (shapes.h), and a float64
reference forward pass.

Networks (docs/CHECKPOINTS.md): ``actor`` 54 -> 128 -> 64 -> 45 (ReLU hidden, raw
logits), ``critic`` 54 -> 512 -> 384 -> 256 -> 128 -> 64 -> 1 (ReLU hidden),
``curiosity`` 35 -> 64 -> 32 (ReLU hidden), ``qnet`` 54 -> 256 -> 128 -> 45 (LeakyReLU
0.01 hidden), ``pqn`` the same with a LayerNorm (eps 1e-5) before each hidden
activation. Weights are [out, in]: y = x W^T + b.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Mapping

import numpy as np

from ._lib import encode, lib
from .errors import InputError

NETS = ("actor", "critic", "curiosity", "qnet", "pqn")
LEAKY_SLOPE = 0.01  # FH_QNET_LEAKY_SLOPE
LN_EPS = 1e-5       # FH_PQN_LN_EPS


@dataclass(frozen=True)
class TensorSpec:
    """One tensor of a network: its checkpoint key, shape and offset in the flat buffer."""

    key: str
    shape: tuple[int, ...]
    offset: int

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))


@lru_cache(maxsize=None)
def net_tensors(net: str) -> tuple[TensorSpec, ...]:
    """The network's tensor table, in layout order (the C library's fh_net_tensors)."""
    L = lib()
    n = L.fh_api_net_tensor_count(encode(net, "network"))
    if n < 0:
        raise InputError(f"unknown network {net!r}; one of {', '.join(NETS)}")
    key = ctypes.create_string_buffer(128)
    rank, shape, offset = ctypes.c_int(), (ctypes.c_int * 2)(), ctypes.c_int64()
    out = []
    for i in range(n):
        L.fh_api_net_tensor(encode(net, "network"), i, key, len(key), ctypes.byref(rank),
                            ctypes.addressof(shape), ctypes.byref(offset))
        out.append(TensorSpec(key.value.decode(), tuple(shape[:rank.value]), offset.value))
    return tuple(out)


def param_count(net: str) -> int:
    return int(lib().fh_api_net_param_count(encode(net, "network")))


def layer_names(net: str) -> list[str]:
    """The linear layers' names in order ("policy_layer_0", ..., "policy_output")."""
    return [t.key[:-len(".weight")] for t in net_tensors(net)
            if t.key.endswith(".weight") and len(t.shape) == 2]


def float32_values(values: Any, what: str) -> np.ndarray:
    """values as a float32 array (same shape), or the InputError naming the first that is
    not a real number or that a float32 cannot hold (1e39 would become infinity). NaN
    and infinity given as such pass: the C API refuses them where it takes the params,
    naming the element's tensor."""
    a = np.asarray(values)
    if a.dtype.kind not in "fiu":
        raise InputError(f"{what}: dtype {a.dtype}; expected real numbers (float32)")
    with np.errstate(over="ignore"):
        out = a.astype(np.float32)
    over = np.isinf(out) & np.isfinite(a)
    if over.any():
        i = int(np.flatnonzero(over)[0])
        raise InputError(f"{what}: element {i} = {a.reshape(-1)[i].item()!r} is beyond float32's "
                         f"range (+-{float(np.finfo(np.float32).max):.4g})")
    return out


def flat_params(tensors: Mapping[str, np.ndarray], net: str) -> np.ndarray:
    """The network's params as one float32 buffer in shapes.h's layout (what the GPU
    collector and fh_api_vec_env_set_curiosity take)."""
    flat = np.empty(param_count(net), np.float32)
    for t in net_tensors(net):
        if t.key not in tensors:
            raise InputError(f"{net}: missing tensor {t.key!r}")
        a = float32_values(tensors[t.key], f"{net}: tensor {t.key!r}")
        if a.shape != t.shape:
            raise InputError(f"{net}: tensor {t.key!r} has shape {a.shape}; expected {t.shape}")
        flat[t.offset:t.offset + t.size] = a.reshape(-1)
    return flat


def unflatten(flat: np.ndarray, net: str) -> dict[str, np.ndarray]:
    """The inverse of :func:`flat_params`: key -> float32 array."""
    flat = np.asarray(flat, np.float32).reshape(-1)
    if flat.size != param_count(net):
        raise InputError(f"{net}: {flat.size} params; the network has {param_count(net)}")
    return {t.key: flat[t.offset:t.offset + t.size].reshape(t.shape).copy()
            for t in net_tensors(net)}


def forward(tensors: Mapping[str, np.ndarray], net: str, x: np.ndarray,
            dtype: type = np.float64) -> np.ndarray:
    """The network's output for inputs x (B, in), computed in ``dtype`` (float64: a
    reference for foxhunt's float32 forward)."""
    layers = layer_names(net)
    h = np.asarray(x, dtype)
    for i, name in enumerate(layers):
        w = np.asarray(tensors[name + ".weight"], dtype)
        b = np.asarray(tensors[name + ".bias"], dtype)
        h = h @ w.T + b
        if i == len(layers) - 1:
            break
        if net == "pqn":
            g = np.asarray(tensors[f"q_norm_{i}.weight"], dtype)
            beta = np.asarray(tensors[f"q_norm_{i}.bias"], dtype)
            mean = h.mean(axis=-1, keepdims=True)
            var = ((h - mean) ** 2).mean(axis=-1, keepdims=True)
            h = g * (h - mean) / np.sqrt(var + LN_EPS) + beta
        if net in ("qnet", "pqn"):
            h = np.where(h > 0, h, LEAKY_SLOPE * h)
        else:
            h = np.maximum(h, 0)
    return h


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise log-probabilities, max-subtracted."""
    z = logits - logits.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def actor_logits(tensors: Mapping[str, np.ndarray], states: np.ndarray) -> np.ndarray:
    """Logits (B, 45) of the actor for states (B, 54), float64."""
    return forward(tensors, "actor", states)


def critic_values(tensors: Mapping[str, np.ndarray], states: np.ndarray) -> np.ndarray:
    """Values (B,) of the critic for states (B, 54), float64."""
    return forward(tensors, "critic", states)[..., 0]
