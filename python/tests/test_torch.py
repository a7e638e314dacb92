"""foxhunt.torch: checkpoints into PyTorch modules and back (skipped, saying so, where
PyTorch is not installed; test_checkpoint.py and test_networks.py are the numpy
equivalents and always run).

- the modules' state_dict keys are the design note's keys;
- C -> PyTorch -> C: a checkpoint taken into modules and saved back unchanged is the
  same file byte for byte;
- the modules' float32 log pi(a|s) and V(s) on a `foxhunt collect` batch equal foxhunt's
  within |a - b| <= 1e-5 + 1e-5 |b| (both float32: ~1e-7 apart);
- a training step in PyTorch saved back is read by `foxhunt eval` and resumed by
  `foxhunt train --resume`.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="PyTorch is not installed (pip install torch); the numpy equivalents "
                    "of these tests (test_checkpoint.py, test_networks.py) ran instead")
import foxhunt  # noqa: E402
import foxhunt.torch as ft  # noqa: E402
from conftest import SMALL, run  # noqa: E402
from safetensors_ref import parse  # noqa: E402


def test_state_dict_keys_are_the_checkpoint_keys(checkpoint):
    ck = foxhunt.load_checkpoint(checkpoint)
    nets = ft.from_checkpoint(ck)
    assert set(nets) == {"actor", "critic", "curiosity"}
    for name, module in nets.items():
        keys = [t.key for t in foxhunt.nets.net_tensors(name)]
        assert list(module.state_dict()) == keys
        for k in keys:
            assert module.state_dict()[k].numpy().tobytes() == ck.tensors[k].tobytes()


def test_round_trip_through_pytorch_is_byte_identical(checkpoint, tmp_path):
    ck = foxhunt.load_checkpoint(checkpoint)
    nets = ft.from_checkpoint(checkpoint)
    out = tmp_path / "torch_rt.safetensors"
    ft.to_checkpoint(ck, **nets).save(out)
    assert out.read_bytes() == checkpoint.read_bytes()


def test_pytorch_log_probs_and_values_equal_foxhunts(checkpoint, tmp_path, foxhunt_bin):
    batch_path = tmp_path / "b.safetensors"
    run([foxhunt_bin, "collect", "--checkpoint", checkpoint, "--episodes", "5", "--steps",
         "32", "--seed", "4", "--device", "cpu", "--out", batch_path])
    batch, _ = foxhunt.read_safetensors(batch_path)
    nets = ft.from_checkpoint(checkpoint)
    states = torch.from_numpy(batch["states"].reshape(-1, foxhunt.STATE_DIM))
    actions = torch.from_numpy(batch["actions"].reshape(-1).astype(np.int64))
    with torch.no_grad():
        logp = torch.log_softmax(nets["actor"](states), dim=-1)
        taken = logp.gather(1, actions[:, None])[:, 0].double().numpy()
        values = nets["critic"](states)[:, 0].double().numpy()
    for got, want, what in ((taken, batch["log_probs"], "log pi(a|s)"),
                            (values, batch["values"], "V(s)")):
        want = want.reshape(-1).astype(np.float64)
        bad = np.flatnonzero(np.abs(got - want) > 1e-5 + 1e-5 * np.abs(want))
        assert len(bad) == 0, (f"{what}: {len(bad)} beyond 1e-5, first at {bad[0]}: "
                               f"{got[bad[0]]} vs foxhunt {want[bad[0]]}")


def test_a_pytorch_update_is_evaluated_and_resumed(checkpoint, tmp_path, foxhunt_bin):
    ck = foxhunt.load_checkpoint(checkpoint)
    nets = ft.from_checkpoint(ck)
    torch.manual_seed(0)
    opt = torch.optim.SGD(nets["actor"].parameters(), lr=1e-3)
    x = torch.randn(64, foxhunt.STATE_DIM)
    loss = -torch.log_softmax(nets["actor"](x), -1)[:, 3].mean()
    loss.backward()
    opt.step()
    path = tmp_path / "trained_in_torch.safetensors"
    ft.to_checkpoint(ck, actor=nets["actor"], reset_optimizer=True).save(path)
    got, _, _ = parse(path)
    w = nets["actor"].policy_layer_0.weight.detach().numpy()
    assert got["policy_layer_0.weight"].tobytes() == w.tobytes()
    assert got["policy_layer_0.weight"].tobytes() != ck.tensors["policy_layer_0.weight"].tobytes()
    assert got["adam.step.actor"][0] == 0 and not got["adam.v.policy_output.bias"].any()
    run([foxhunt_bin, "eval", "--checkpoint", path])
    run([foxhunt_bin, "train", "--resume", path, "--iterations", "3", "--threads", "1",
         "--out", tmp_path / "r"])


def test_wrong_modules_are_refused(checkpoint):
    ck = foxhunt.load_checkpoint(checkpoint)
    with pytest.raises(foxhunt.InputError, match="actor="):
        ft.to_checkpoint(ck, actor=ft.Critic())
    with pytest.raises(foxhunt.InputError):
        ft.load_module(ft.QNet(), ck)


def test_torch_actions_step_the_env_and_are_range_checked():
    """Issue 32: actions as a torch tensor (an argmax is int64, on any device) step as the
    same numpy ints do, and out-of-range ones are refused rather than wrapped to int32."""
    pytest.importorskip("gymnasium", reason="foxhunt.VectorEnv needs gymnasium")
    env = foxhunt.VectorEnv(3, seed=1, **SMALL)
    ref = foxhunt.VectorEnv(3, seed=1, **SMALL)
    env.reset(seed=1)
    ref.reset(seed=1)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    with pytest.raises(foxhunt.InputError, match=r"action\[1\] = 4294967299 is outside"):
        env.step(torch.tensor([0, 2**32 + 3, 2], device=device))
    with pytest.raises(foxhunt.InputError, match=r"action\[0\] = 1.0 \(float"):
        env.step(torch.ones(3, device=device))
    a = torch.tensor([4, 40, 22], device=device)
    assert env.step(a)[0].tobytes() == ref.step(np.array([4, 40, 22]))[0].tobytes()
    single = foxhunt.Env(seed=1, **SMALL)
    single.reset(seed=1)
    with pytest.raises(foxhunt.InputError, match=r"action = 4294967299 is outside"):
        single.step(torch.tensor(2**32 + 3, device=device))
    single.step(torch.tensor(3, device=device))  # one action, a 0-d tensor, is taken
