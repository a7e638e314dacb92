"""Checkpoints and safetensors files as numpy dicts.

A :class:`Checkpoint` is ``tensors`` (name -> numpy array, under the design note's keys:
``policy_layer_0.weight`` ... ``value_output.bias``, ``fc1.weight`` ..., ``adam.m.*``,
``norm.mean``, ``run.iteration``, ``env.episodes``, ...; docs/CHECKPOINTS.md) and
``metadata`` (the ``__metadata__`` strings: ``format``, ``config``, ``data.*``, ...).
:func:`load_checkpoint` reads one with the checks foxhunt applies to its own;
:meth:`Checkpoint.save` writes it back through the C writer ``foxhunt train`` uses, so
``foxhunt eval`` and ``foxhunt train --resume`` read it like one of theirs, and a
checkpoint loaded and saved unchanged comes back byte for byte.
"""

from __future__ import annotations

import ctypes
import json
import os
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from . import _lib
from ._lib import Handle, check, encode, err_buffer, lib, made, text
from .errors import InputError

# fh_dtype (safetensors.h) <-> numpy, little-endian
DTYPES = {0: np.dtype("<f4"), 1: np.dtype("<f8"), 2: np.dtype("<i4"), 3: np.dtype("<i8"),
          4: np.dtype("<u8"), 5: np.dtype("u1")}
MAX_RANK = 8


class _Tensors(Handle):
    _free = "fh_api_tensors_free"


def _from_handle(t: _Tensors) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    L, h = lib(), t.handle
    tensors: dict[str, np.ndarray] = {}
    name, dtype, rank = ctypes.c_char_p(), ctypes.c_int(), ctypes.c_int()
    nbytes = ctypes.c_size_t()
    shape = (ctypes.c_int64 * MAX_RANK)()
    for i in range(L.fh_api_tensors_count(h)):
        check(L.fh_api_tensors_info(h, i, ctypes.byref(name), ctypes.byref(dtype),
                                    ctypes.byref(rank), ctypes.addressof(shape),
                                    ctypes.byref(nbytes)), h)
        arr = np.empty(tuple(shape[:rank.value]), DTYPES[dtype.value])
        check(L.fh_api_tensors_copy(h, i, arr.ctypes.data, nbytes.value), h)
        tensors[text(name.value)] = arr
    metadata: dict[str, str] = {}
    key, value = ctypes.c_char_p(), ctypes.c_char_p()
    for i in range(L.fh_api_tensors_meta_count(h)):
        check(L.fh_api_tensors_meta_at(h, i, ctypes.byref(key), ctypes.byref(value)), h)
        metadata[text(key.value)] = text(value.value)
    return tensors, metadata


def _to_handle(tensors: dict[str, Any], metadata: dict[str, str]) -> _Tensors:
    err = err_buffer()
    t = _Tensors(made(lib().fh_api_tensors_new(err, _lib.ERR_CAP), err, "tensors"))
    L, h = lib(), t.handle
    for name, value in tensors.items():
        arr = np.asarray(value)
        code = next((c for c, dt in DTYPES.items()
                     if arr.dtype.kind == dt.kind and arr.dtype.itemsize == dt.itemsize), None)
        if code is None:
            raise InputError(f"tensor {name!r}: dtype {arr.dtype}; a safetensors file of "
                             "foxhunt holds float32, float64, int32, int64, uint64 or uint8")
        if arr.ndim > MAX_RANK:
            raise InputError(f"tensor {name!r}: rank {arr.ndim} (at most {MAX_RANK})")
        arr = arr.astype(DTYPES[code], order="C", copy=False)  # keeps rank 0, unlike ascontiguousarray
        shape = (ctypes.c_int64 * MAX_RANK)(*arr.shape)
        check(L.fh_api_tensors_set(h, encode(name, "tensor name"), code, arr.ndim,
                                   ctypes.addressof(shape), arr.ctypes.data, arr.nbytes), h)
    for k, v in metadata.items():
        check(L.fh_api_tensors_set_meta(h, encode(k, "metadata key"),
                                        encode(v, f"metadata {k!r}: value")), h)
    return t


@dataclass
class Checkpoint:
    """A foxhunt checkpoint as numpy arrays (``tensors``) and strings (``metadata``)."""

    tensors: dict[str, np.ndarray]
    metadata: dict[str, str] = field(default_factory=dict)

    @property
    def config(self) -> Optional[dict[str, Any]]:
        """The run's resolved configuration (``metadata["config"]``, parsed), or None."""
        c = self.metadata.get("config")
        return json.loads(c) if c else None

    @property
    def actor_only(self) -> bool:
        """True for an actor-only checkpoint (``foxhunt export --actor``)."""
        return self.metadata.get("kind") == "actor"

    @property
    def iteration(self) -> Optional[int]:
        it = self.tensors.get("run.iteration")
        return None if it is None else int(it[0])

    def copy(self) -> "Checkpoint":
        return Checkpoint({k: v.copy() for k, v in self.tensors.items()}, dict(self.metadata))

    def save(self, path: str | os.PathLike[str]) -> None:
        """Writes the checkpoint through foxhunt's checkpoint writer (atomic: PATH.tmp
        then renamed). Networks are found by their keys; a network given without its
        Adam state (``adam.m.*``, ``adam.v.*``, ``adam.step.NET``) gets a fresh
        optimiser's zeros. Refused (nothing written): part of a network, a wrong dtype or
        shape (named), a NaN or infinity, more than 16 extra tensors, a ``kind`` other
        than ``"actor"``."""
        save_checkpoint(path, self)

    def __repr__(self) -> str:
        kind = "actor-only" if self.actor_only else "full"
        return (f"foxhunt.Checkpoint({kind}, {len(self.tensors)} tensors, iteration "
                f"{self.iteration})")


def load_checkpoint(path: str | os.PathLike[str]) -> Checkpoint:
    """Reads a checkpoint: every check ``foxhunt eval`` makes of the file (format and
    version, ``kind``, every float finite, ``norm.std > 0``, the data identity), then
    every tensor and metadata string."""
    err = err_buffer()
    h = lib().fh_api_checkpoint_load(encode(path, "path"), err, _lib.ERR_CAP)
    t = _Tensors(made(h, err, "checkpoint"))
    try:
        tensors, metadata = _from_handle(t)
    finally:
        t.close()
    return Checkpoint(tensors, metadata)


def save_checkpoint(path: str | os.PathLike[str], checkpoint: Checkpoint | dict[str, Any],
                    metadata: Optional[dict[str, str]] = None) -> None:
    """Writes a :class:`Checkpoint` (or a tensors dict and its metadata) as a foxhunt
    checkpoint; see :meth:`Checkpoint.save`."""
    if isinstance(checkpoint, Checkpoint):
        tensors, meta = checkpoint.tensors, dict(checkpoint.metadata)
        meta.update(metadata or {})
    else:
        tensors, meta = checkpoint, dict(metadata or {})
    t = _to_handle(tensors, meta)
    try:
        check(lib().fh_api_checkpoint_save(t.handle, encode(path, "path")), t.handle)
    finally:
        t.close()


def read_safetensors(path: str | os.PathLike[str]) -> tuple[dict[str, np.ndarray],
                                                            dict[str, str]]:
    """Any safetensors file (a ``foxhunt collect`` batch, a checkpoint, ...), validated by
    foxhunt's reader: (tensors, metadata)."""
    err = err_buffer()
    h = lib().fh_api_tensors_read(encode(path, "path"), err, _lib.ERR_CAP)
    t = _Tensors(made(h, err, "safetensors"))
    try:
        return _from_handle(t)
    finally:
        t.close()


def write_safetensors(path: str | os.PathLike[str], tensors: dict[str, Any],
                      metadata: Optional[dict[str, str]] = None) -> None:
    """Writes tensors (in order) and metadata as a safetensors file, atomically."""
    t = _to_handle(tensors, dict(metadata or {}))
    try:
        check(lib().fh_api_tensors_write(t.handle, encode(path, "path")), t.handle)
    finally:
        t.close()
