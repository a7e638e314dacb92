"""foxhunt's networks as PyTorch modules, built from and saved back into checkpoints.

This is the one module of the package that imports torch (on import of
``foxhunt.torch``; the rest of the package never does). Each module registers its layers
under the design note's names, so ``module.state_dict()`` keys are the checkpoint's keys
(``policy_layer_0.weight``, ..., ``value_output.bias``, ``fc1.weight``, ...)::

    import foxhunt, foxhunt.torch as ft
    ck = foxhunt.load_checkpoint("runs/x/final.safetensors")
    nets = ft.from_checkpoint(ck)                 # {"actor": Actor, "critic": ..., ...}
    logits = nets["actor"](torch.from_numpy(obs))
    ... train ...
    ft.to_checkpoint(ck, **nets).save("edited.safetensors")   # foxhunt eval / --resume

Tensors move between numpy and torch as float32 without rounding, so a checkpoint taken
into PyTorch and saved back unchanged is bit-identical.
"""

from __future__ import annotations

import os
from typing import Optional, Union

import numpy as np
import torch
from torch import nn

from .checkpoint import Checkpoint, load_checkpoint
from .errors import InputError
from .nets import LEAKY_SLOPE, LN_EPS, net_tensors


class FoxhuntMLP(nn.Module):
    """A foxhunt network: linear layers named as in a checkpoint, ReLU between them
    (LeakyReLU 0.01 for the Q-networks, with LayerNorm before it for PQN), the last
    layer linear."""

    net: str = ""

    def __init__(self) -> None:
        super().__init__()
        if not self.net:
            raise TypeError("use Actor, Critic, Curiosity, QNet or PQN")
        # modules registered in the table's order, so state_dict() lists the checkpoint's
        # keys in the checkpoint's order
        self._layers: list[str] = []
        self._norms: list[str] = []
        for t in net_tensors(self.net):
            if not t.key.endswith(".weight"):
                continue
            name = t.key[:-len(".weight")]
            if len(t.shape) == 2:
                out_dim, in_dim = t.shape
                setattr(self, name, nn.Linear(in_dim, out_dim))
                self._layers.append(name)
            else:  # a LayerNorm's gamma (PQN)
                setattr(self, name, nn.LayerNorm(t.shape[0], eps=LN_EPS))
                self._norms.append(name)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, name in enumerate(self._layers):
            x = getattr(self, name)(x)
            if i == len(self._layers) - 1:
                break
            if self._norms:
                x = getattr(self, self._norms[i])(x)
            if self.net in ("qnet", "pqn"):
                x = nn.functional.leaky_relu(x, LEAKY_SLOPE)
            else:
                x = torch.relu(x)
        return x


class Actor(FoxhuntMLP):
    """54 -> 128 -> 64 -> 45 logits."""
    net = "actor"


class Critic(FoxhuntMLP):
    """54 -> 512 -> 384 -> 256 -> 128 -> 64 -> 1 value."""
    net = "critic"


class Curiosity(FoxhuntMLP):
    """35 -> 64 -> 32: the next bar's features 0..31 predicted."""
    net = "curiosity"


class QNet(FoxhuntMLP):
    """DQN's 54 -> 256 -> 128 -> 45 Q-values."""
    net = "qnet"


class PQN(FoxhuntMLP):
    """PQN's Q-network (LayerNorm before each hidden LeakyReLU)."""
    net = "pqn"


MODULES = {"actor": Actor, "critic": Critic, "curiosity": Curiosity, "qnet": QNet, "pqn": PQN}


def _present(ck: Checkpoint, net: str) -> bool:
    if net == "qnet" and "q_norm_0.weight" in ck.tensors:
        return False
    return all(t.key in ck.tensors for t in net_tensors(net))


def load_module(module: FoxhuntMLP, ck: Checkpoint) -> FoxhuntMLP:
    """Copies the checkpoint's tensors of module's network into it (strict: every key)."""
    state = {}
    for t in net_tensors(module.net):
        if t.key not in ck.tensors:
            raise InputError(f"the checkpoint has no {t.key!r} (network {module.net})")
        state[t.key] = torch.from_numpy(np.array(ck.tensors[t.key], np.float32, copy=True))
    module.load_state_dict(state, strict=True)
    return module


def from_checkpoint(ck: Union[Checkpoint, str, os.PathLike[str]],
                    device: Optional[Union[str, torch.device]] = None) -> dict[str, FoxhuntMLP]:
    """The networks a checkpoint holds, as modules: {"actor": Actor, ...} (a PPO
    checkpoint: actor, critic, curiosity; an actor-only one: the actor; DQN/PQN: the
    Q-network and curiosity)."""
    if not isinstance(ck, Checkpoint):
        ck = load_checkpoint(ck)
    out = {}
    for net, cls in MODULES.items():
        if _present(ck, net):
            m = load_module(cls(), ck)
            out[net] = m.to(device) if device is not None else m
    if not out:
        raise InputError("the checkpoint holds none of foxhunt's networks")
    return out


def to_checkpoint(ck: Checkpoint, reset_optimizer: bool = False,
                  **modules: FoxhuntMLP) -> Checkpoint:
    """A copy of ck with the modules' weights in place of its own (``actor=``,
    ``critic=``, ...). Adam's moments stay as they were unless ``reset_optimizer``,
    which drops them for those networks (the save writes a fresh optimiser's zeros)."""
    out = ck.copy()
    for net, module in modules.items():
        if net not in MODULES or not isinstance(module, FoxhuntMLP) or module.net != net:
            raise InputError(f"{net}=: expected a foxhunt.torch.{MODULES.get(net, Actor).__name__}")
        state = module.state_dict()
        for t in net_tensors(net):
            v = state[t.key].detach().to("cpu", torch.float32).contiguous().numpy()
            out.tensors[t.key] = v.copy()
            if reset_optimizer:
                out.tensors.pop("adam.m." + t.key, None)
                out.tensors.pop("adam.v." + t.key, None)
        if reset_optimizer:
            out.tensors.pop("adam.step." + net, None)
    return out
