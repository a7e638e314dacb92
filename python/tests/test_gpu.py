"""foxhunt.gpu: a PPO collection on the GPU handed over as DLPack tensors (issue 21).

Skips, saying why, where libfoxhunt has no CUDA or the machine no GPU. On a GPU:
- the batch (read back with to_host, and through DLPack with PyTorch where installed)
  equals `foxhunt collect --device cuda` of the same checkpoint, seed and N x L (the same
  kernels, plan and streams: only the download differs): the episodes bit for bit, the
  networks' outputs to 1e-5 (each process picks its GEMM algorithms by timing);
- the DLPack tensors alias the collector's device memory (no copy: PyTorch's data
  pointer is the collector's), have the documented shapes, strides and dtypes, and
  outlive the collector's handle until released;
- a second collection continues the episodes (it differs from the first), as training.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import foxhunt
import foxhunt.gpu as fg
from conftest import run

ok, why = fg.available()
if not ok:
    pytest.skip(f"no GPU collection here: {why}", allow_module_level=True)

N, L, SEED = 64, 48, 11


@pytest.fixture(scope="module")
def setup(checkpoint, tmp_path_factory, foxhunt_bin):
    out = tmp_path_factory.mktemp("gpu") / "batch.safetensors"
    run([foxhunt_bin, "collect", "--device", "cuda", "--checkpoint", checkpoint, "--episodes",
         str(N), "--steps", str(L), "--seed", str(SEED), "--out", out])
    ref, meta = foxhunt.read_safetensors(out)
    assert meta["device"] != "cpu"
    ck = foxhunt.load_checkpoint(checkpoint)
    market = foxhunt.Market.from_checkpoint(checkpoint)
    col = fg.GpuCollector(market, N, L, seed=SEED, config=foxhunt.Config.from_checkpoint(checkpoint))
    return ck, col, ref


# What the episodes did (states, actions, dones, bars, exposures) is equal bit for bit;
# what the matmuls computed (values, log-probs, rewards with curiosity, advantages,
# returns) to 1e-5: a process that finds no algorithm file (src/cuda/gemm_cache.c) for
# this GPU times the GEMM algorithms and may pick another one for a shape than a process
# that ran before it, which sums in another order (seen on the H200 before the file
# existed: values 6e-8 apart in 2677 of 3072 samples, the actions identical).
EXACT = {"states", "actions", "dones", "bars", "exposures"}
TOL = 1e-5


def test_batch_equals_foxhunt_collect(setup):
    ck, col, ref = setup
    batch = col.collect(ck)
    assert EXACT <= set(batch), sorted(batch)
    for name, t in batch.items():
        got = t.numpy()
        want = ref[name]
        assert got.dtype == want.dtype and got.shape == want.shape, name
        if name in EXACT:
            bad = np.argwhere(got.view(np.uint32) != want.view(np.uint32))
        else:
            g, w = got.astype(np.float64), want.astype(np.float64)
            bad = np.argwhere(~(np.abs(g - w) <= TOL + TOL * np.abs(w)))
        assert len(bad) == 0, (f"{name}: {len(bad)} elements differ from foxhunt collect's, "
                               f"first at {tuple(bad[0])}: {got[tuple(bad[0])]} vs "
                               f"{want[tuple(bad[0])]}")
    collect_ms, total_ms = col.timing
    assert 0 < collect_ms <= total_ms


def test_dlpack_struct_describes_the_device_buffer(setup):
    ck, col, _ = setup
    col.collect(ck)
    L_ = foxhunt._lib.lib()
    ptr = ctypes.c_void_p()
    assert L_.fh_api_gpu_tensor(col._c.handle, b"states", ctypes.byref(ptr)) == 0
    m = ctypes.cast(ptr, ctypes.POINTER(fg.DLManagedTensor)).contents
    t = m.dl_tensor
    assert t.device.device_type == fg.DL_CUDA and t.ndim == 3
    assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (2, 32, 1)
    assert [t.shape[i] for i in range(3)] == [N, L, foxhunt.STATE_DIM]
    pitch = t.strides[1]
    assert pitch >= foxhunt.STATE_DIM and [t.strides[0], t.strides[2]] == [L * pitch, 1]
    m.deleter(ctypes.cast(ptr, ctypes.POINTER(fg.DLManagedTensor)))
    assert L_.fh_api_gpu_tensor(col._c.handle, b"nope", ctypes.byref(ptr)) == 2


def test_pytorch_reads_the_batch_without_a_copy(setup):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: the DLPack "
                                                "hand-over to it is not exercised")
    ck, col, _ = setup
    batch = col.collect(ck)
    host = {k: v.numpy() for k, v in batch.items()}
    states = torch.from_dlpack(batch["states"])
    assert states.is_cuda and states.shape == (N, L, foxhunt.STATE_DIM)
    assert states.dtype == torch.float32
    assert np.array_equal(states.cpu().numpy(), host["states"])
    for name in ("actions", "log_probs", "advantages", "dones"):
        t = torch.from_dlpack(batch[name])
        assert np.array_equal(t.cpu().numpy(), host[name]), name
    # no copy: the tensor is the collector's buffer
    ptr = ctypes.c_void_p()
    L_ = foxhunt._lib.lib()
    L_.fh_api_gpu_tensor(col._c.handle, b"states", ctypes.byref(ptr))
    managed = ctypes.cast(ptr, ctypes.POINTER(fg.DLManagedTensor))
    assert states.data_ptr() == managed.contents.dl_tensor.data
    managed.contents.deleter(managed)
    # a second collection continues the episodes, into the same buffer
    col.collect(ck)
    assert not torch.equal(states.cpu(), torch.from_numpy(host["states"]))


def test_tensors_outlive_the_collector_handle(checkpoint):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    ck = foxhunt.load_checkpoint(checkpoint)
    col = fg.GpuCollector(foxhunt.Market.from_checkpoint(checkpoint), 8, 16, seed=1,
                          config=foxhunt.Config.from_checkpoint(checkpoint))
    batch = col.collect(ck)
    want = batch["rewards"].numpy()
    rewards = torch.from_dlpack(batch["rewards"])
    col.close()
    torch.cuda.synchronize()
    assert np.array_equal(rewards.cpu().numpy(), want)
    del rewards  # the deleter frees the collector now


def test_bad_weights_are_refused(setup):
    ck, col, _ = setup
    with pytest.raises(foxhunt.InputError, match="missing tensor"):
        col.collect({})
    # issue 32: a NaN or infinity in any network is refused by the C API, naming the
    # element's tensor, instead of a batch of NaN; a float64 beyond float32 before the cast
    for key, at, where in [("value_layer_2.bias", 5, r"value_layer_2.bias\[5\]"),
                           ("policy_output.weight", (3, 7), r"policy_output.weight\[3, 7\]"),
                           ("fc2.bias", 0, r"fc2.bias\[0\]")]:
        bad = ck.copy()
        bad.tensors[key][at] = np.inf
        with pytest.raises(foxhunt.InputError,
                           match=rf"GPU collect: the \w+( model)?'s params: element \d+ "
                                 rf"\({where}\) is inf; every param must be finite"):
            col.collect(bad)
    big = dict(ck.tensors, **{"fc1.bias": np.full(64, 1e39)})
    with pytest.raises(foxhunt.InputError, match=r"'fc1.bias': element 0 = 1e\+39 is beyond"):
        col.collect(big)
    for kw, message in [({"num_envs": 2**32 + 8}, "num_envs = 4294967304 is outside"),
                        ({"seed": -1}, "seed = -1 is outside")]:
        with pytest.raises(foxhunt.InputError, match=message):
            fg.GpuCollector(col.market, **{"num_envs": 8, "num_steps": 4, **kw})
    # the refused collections left the collector usable
    col.collect(ck)
