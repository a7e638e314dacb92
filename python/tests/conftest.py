"""Shared fixtures of the Python package's tests.

ctest (python/CMakeLists.txt) sets FOXHUNT_LIB, FOXHUNT_BIN (the CLI) and FOXHUNT_DRIVER
(tests/drivers/vec_env_driver) for the build under test; run by hand, pytest falls back
to <repo>/build. A test that needs a missing program skips saying which.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED_DATA = REPO.parent / "shared" / "data"

# a small market keeps every test in seconds: 3000 synthetic bars (2800 rows after the
# warm-up: train 1680, validation 240, test 480 with the default gaps)
SMALL = {"synthetic_bars": 3000}

if "FOXHUNT_LIB" not in os.environ and (REPO / "build" / "libfoxhunt.so").exists():
    os.environ["FOXHUNT_LIB"] = str(REPO / "build" / "libfoxhunt.so")


def _program(env: str, default: Path) -> Path:
    p = Path(os.environ.get(env, default))
    if not p.is_file():
        pytest.skip(f"{p} not found: build it (cmake --build build) or set {env}")
    return p


@pytest.fixture(scope="session")
def foxhunt_bin() -> Path:
    """The foxhunt CLI of the build under test."""
    return _program("FOXHUNT_BIN", REPO / "build" / "foxhunt")


@pytest.fixture(scope="session")
def driver_bin() -> Path:
    """tests/drivers/vec_env_driver of the build under test."""
    return _program("FOXHUNT_DRIVER", REPO / "build" / "vec_env_driver")


def run(cmd: list, **kw) -> subprocess.CompletedProcess:
    """Runs a command, failing the test with its output when it exits non-zero."""
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if p.returncode != 0:
        pytest.fail(f"{' '.join(map(str, cmd))} exited {p.returncode}\n"
                    f"stdout:\n{p.stdout[-3000:]}\nstderr:\n{p.stderr[-3000:]}")
    return p


# One short training run shared by the checkpoint, eval and network tests: 8 episodes x
# 64 steps, 2 iterations, on the small synthetic market, CPU.
TRAIN_FLAGS = ["--synthetic-bars", "3000", "--episodes", "8", "--steps", "64",
               "--iterations", "2", "--minibatch", "128", "--epochs", "2", "--device", "cpu",
               "--threads", "1", "--eval-at-end", "0", "--seed", "5"]


@pytest.fixture(scope="session")
def trained(tmp_path_factory, foxhunt_bin) -> Path:
    """A run directory of a tiny `foxhunt train` (final.safetensors in it)."""
    out = tmp_path_factory.mktemp("run") / "run"
    run([foxhunt_bin, "train", *TRAIN_FLAGS, "--out", out])
    return out


@pytest.fixture(scope="session")
def checkpoint(trained) -> Path:
    return trained / "final.safetensors"
