"""The DLPack hand-over of foxhunt.gpu without a GPU: the capsule it builds around a
DLManagedTensor (foxhunt.gpu.dltensor_capsule, what DLPackTensor.__dlpack__ returns) is
one numpy.from_dlpack consumes, and the tensor's deleter runs exactly once whether a
consumer took the capsule (then the consumer calls it) or not (then the capsule's
destructor does). Here the tensor is a host buffer described in Python; on a GPU,
tests/test_gpu.py checks the collector's own."""

from __future__ import annotations

import ctypes
import gc

import numpy as np
import pytest

import foxhunt.gpu as fg

DL_CPU = 1
Deleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(fg.DLManagedTensor))


class HostProducer:
    """A producer of one DLPack tensor over a numpy array, counting deleter calls."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array
        self.deleted = 0
        self.shape = (ctypes.c_int64 * array.ndim)(*array.shape)
        self.strides = (ctypes.c_int64 * array.ndim)(*(s // array.itemsize for s in array.strides))
        self.deleter = Deleter(self._delete)
        m = fg.DLManagedTensor()
        m.dl_tensor.data = array.ctypes.data
        m.dl_tensor.device.device_type, m.dl_tensor.device.device_id = DL_CPU, 0
        m.dl_tensor.ndim = array.ndim
        code = 2 if array.dtype.kind == "f" else 0
        m.dl_tensor.dtype.code, m.dl_tensor.dtype.bits, m.dl_tensor.dtype.lanes = code, 32, 1
        m.dl_tensor.shape = self.shape
        m.dl_tensor.strides = self.strides
        m.deleter = self.deleter
        self.managed = m

    def _delete(self, _ptr) -> None:
        self.deleted += 1

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        return fg.dltensor_capsule(ctypes.addressof(self.managed))

    def __dlpack_device__(self):
        return (DL_CPU, 0)


def test_a_consumer_reads_the_tensor_and_calls_the_deleter_once():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)[:, :5]  # a row pitch, as states have
    p = HostProducer(a)
    b = np.from_dlpack(p)
    assert b.shape == (4, 5) and np.array_equal(b, a)
    assert b.ctypes.data == a.ctypes.data, "the consumer copied"
    assert p.deleted == 0
    del b
    gc.collect()
    assert p.deleted == 1


def test_a_capsule_nobody_took_releases_its_tensor():
    p = HostProducer(np.zeros(3, np.int32))
    cap = p.__dlpack__()
    assert p.deleted == 0
    del cap
    gc.collect()
    assert p.deleted == 1


def test_gpu_collector_without_a_gpu_says_why():
    ok, why = fg.available()
    if ok:
        pytest.skip("this machine has a GPU: tests/test_gpu.py covers it")
    assert why
    with pytest.raises(fg.InputError, match="GPU collection"):
        fg.GpuCollector(num_envs=4, num_steps=4, synthetic_bars=1500)
