"""foxhunt: RL trading agents in C11 + CUDA, from Python (docs/PYTHON.md).

- :func:`features` / :class:`Market`: OHLCV CSVs or the synthetic market, the 51
  features, the normalisation and the splits, as ``foxhunt train`` builds them;
- :class:`VectorEnv` (``gymnasium.vector.VectorEnv``) and :class:`Env`: the C
  environment, N episodes at a time;
- :func:`load_checkpoint` / :class:`Checkpoint`: checkpoints as numpy dicts under the
  design note's keys, saved back through the C writer (``foxhunt eval`` and ``foxhunt
  train --resume`` read them); :mod:`foxhunt.torch` builds PyTorch modules from them;
- :func:`eval`: ``foxhunt eval``'s backtests, per-bar columns for pandas;
- :mod:`foxhunt.gpu`: a GPU collection whose batch comes back as DLPack tensors;
- :func:`train` / :class:`Trainer`: ``foxhunt train``'s loop, with a callback per
  iteration (:mod:`foxhunt.training`);
- Gymnasium ids ``foxhunt/Trading-v0`` (``gymnasium.make``, ``gymnasium.make_vec``),
  registered on import (:mod:`foxhunt.registration`).

The package calls libfoxhunt through ctypes (``foxhunt._lib`` says where it looks).
"""

from .config import Config, config_keys
from .data import (FEATURE_WARMUP, N_ACTIONS, N_FEATURES, STATE_DIM, Features, Market,
                   feature_names, features)
from .errors import FoxhuntError, InputError

__version__ = "0.1.0"

try:  # Gymnasium ids (foxhunt.registration); the package imports without Gymnasium
    from .registration import ENV_ID, register_envs
    register_envs()
except ImportError:
    pass

__all__ = [
    "Config", "config_keys", "Market", "Features", "features", "feature_names",
    "FEATURE_WARMUP", "N_ACTIONS", "N_FEATURES", "STATE_DIM", "FoxhuntError", "InputError",
    "VectorEnv", "Env", "Checkpoint", "load_checkpoint", "save_checkpoint",
    "read_safetensors", "write_safetensors", "eval", "EvalResult", "build_info",
    "train", "Trainer", "TrainResult",
]


def __getattr__(name: str):
    """Gymnasium, the checkpoint and evaluation modules load on first use, so that
    ``import foxhunt`` needs numpy (and libfoxhunt, whose sizes foxhunt.data asks) alone."""
    if name in ("VectorEnv", "Env"):
        from . import env
        return getattr(env, name)
    if name in ("Checkpoint", "load_checkpoint", "save_checkpoint", "read_safetensors",
                "write_safetensors"):
        from . import checkpoint
        return getattr(checkpoint, name)
    if name in ("train", "Trainer", "TrainResult"):
        from . import training
        return getattr(training, name)
    if name in ("eval", "EvalResult"):
        from . import evaluate
        return getattr(evaluate, name)
    raise AttributeError(f"module 'foxhunt' has no attribute {name!r}")


def build_info() -> str:
    """The loaded libfoxhunt's version and build ("foxhunt 0.1.0 (Release, CUDA 1)") and
    its path."""
    from ._lib import lib, library_path, text
    return f"{text(lib().fh_api_build_info())} at {library_path()}"
