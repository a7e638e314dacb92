"""The networks in numpy (foxhunt.nets) against foxhunt's own forward passes.

`foxhunt collect --checkpoint C` (on the CPU, and on the GPU where there is one) writes a batch with the states it acted on, the actions
it sampled, their log-probabilities and the critic's values. The float64 numpy MLP from
C's float32 weights must give log pi(a|s) and V(s) equal to foxhunt's (float32 sgemm,
float log-softmax) within |a - b| <= 1e-5 + 1e-5 |b| on every sample (foxhunt's float32
rounding is ~1e-7 relative per layer: tests/rl/check_update.py works it out). The flat
layout the kernels use is checked against the batch's weights.hash: FNV-1a 64 over the
actor's then the critic's flat params, computed here independently of the C code.
"""

from __future__ import annotations

import numpy as np
import pytest

import foxhunt
from foxhunt import nets
from conftest import run

ATOL = RTOL = 1e-5
FNV_OFFSET, FNV_PRIME, MASK64 = 0xcbf29ce484222325, 0x100000001b3, (1 << 64) - 1


@pytest.fixture(scope="module", params=["cpu", "cuda"])
def collection(request, checkpoint, tmp_path_factory, foxhunt_bin):
    """A collection by the CPU path, and by the GPU's where there is one (the GPU collector
    acts with the device update's copy of the weights: it must be the checkpoint's)."""
    if request.param == "cuda":
        import foxhunt.gpu as fg
        ok, why = fg.available()
        if not ok:
            pytest.skip(f"no GPU collection here: {why}")
    out = tmp_path_factory.mktemp("collect") / "batch.safetensors"
    run([foxhunt_bin, "collect", "--checkpoint", checkpoint, "--episodes", "6", "--steps",
         "40", "--seed", "17", "--device", request.param, "--out", out])
    return foxhunt.read_safetensors(out)


def assert_close(got: np.ndarray, want: np.ndarray, what: str) -> None:
    err = np.abs(got - want)
    bound = ATOL + RTOL * np.abs(want)
    bad = np.flatnonzero(err > bound)
    assert len(bad) == 0, (f"{what}: {len(bad)} of {err.size} beyond 1e-5; first at sample "
                           f"{bad[0]}: {got.flat[bad[0]]!r} vs foxhunt {want.flat[bad[0]]!r}")


def test_numpy_log_probs_and_values_equal_foxhunts(checkpoint, collection):
    batch, meta = collection
    assert meta["format"] == "foxhunt.collection"
    ck = foxhunt.load_checkpoint(checkpoint)
    states = batch["states"].reshape(-1, foxhunt.STATE_DIM)
    actions = batch["actions"].reshape(-1)
    logp = nets.log_softmax(nets.actor_logits(ck.tensors, states))
    taken = logp[np.arange(len(actions)), actions]
    assert_close(taken, batch["log_probs"].reshape(-1).astype(np.float64), "log pi(a|s)")
    assert_close(nets.critic_values(ck.tensors, states),
                 batch["values"].reshape(-1).astype(np.float64), "V(s)")
    # not a vacuous comparison: the policy is not uniform and the values vary
    assert np.ptp(taken) > 1e-3 and np.ptp(batch["values"]) > 1e-4


def fnv1a(data: bytes, h: int = FNV_OFFSET) -> int:
    for byte in data:
        h = ((h ^ byte) * FNV_PRIME) & MASK64
    return h


def test_flat_layout_matches_the_collection_weights_hash(checkpoint, collection):
    _, meta = collection
    ck = foxhunt.load_checkpoint(checkpoint)
    actor = nets.flat_params(ck.tensors, "actor")
    critic = nets.flat_params(ck.tensors, "critic")
    assert actor.size == 18221 and critic.size == 364929
    assert f"{fnv1a(critic.tobytes(), fnv1a(actor.tobytes())):016x}" == meta["weights.hash"]
    back = nets.unflatten(actor, "actor")
    for k, v in back.items():
        assert v.tobytes() == ck.tensors[k].tobytes(), k


def test_network_tables():
    assert [t.key for t in nets.net_tensors("curiosity")] == [
        "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert nets.layer_names("critic") == [f"value_layer_{i}" for i in range(5)] + ["value_output"]
    assert nets.net_tensors("pqn")[2].key == "q_norm_0.weight"
    with pytest.raises(foxhunt.InputError, match="unknown network"):
        nets.net_tensors("policy")
    with pytest.raises(foxhunt.InputError, match="missing tensor"):
        nets.flat_params({}, "actor")
