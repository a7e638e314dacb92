#!/usr/bin/env bash
# setup.sh — installs everything foxhunt's build and tests need on a fresh Debian or
# Ubuntu machine (the CUDA toolkit is optional and not installed here: when it is
# present the build finds it). Safe to run again.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# libjs-dygraphs: the charting library `eval --report` embeds in its page at build time;
# valgrind: the memcheck pass of the test suite (tests/memcheck, scripts/memcheck.sh);
# python3-pip and python3-venv: `pip install ./python` (the wheel builds the library with
# the packages above; pip fetches the build backend, scikit-build-core) and its test in a
# fresh venv (python_wheel)
PACKAGES="build-essential cmake pkg-config libopenblas-dev libcjson-dev libinih-dev python3 python3-pip python3-venv libjs-dygraphs valgrind"
missing=""
for p in $PACKAGES; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "setup: installing:$missing"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
else
  echo "setup: build dependencies already installed"
fi

# Fuzzing (tests/fuzz, scripts/fuzz.sh; the ctest fuzz_* entries skip without it): clang,
# its runtime with libFuzzer (Debian 12: libclang-rt-dev -> libclang-rt-14-dev, which has
# libclang_rt.fuzzer; older Ubuntus ship it in clang's own libclang-common-N-dev) and
# LLVM's OpenMP for clang. Optional: a failure here is a note, not an error.
FUZZ_PACKAGES="clang libomp-dev"
if apt-cache show libclang-rt-dev >/dev/null 2>&1; then FUZZ_PACKAGES="$FUZZ_PACKAGES libclang-rt-dev"; fi
missing=""
for p in $FUZZ_PACKAGES; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "setup: installing (fuzzing):$missing"
  { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing; } \
    || echo "setup: note: could not install$missing (optional; the fuzz tests will skip)"
fi

# The tear sheet's browser test (tests/cli/test_report_browser.c renders `eval --report`'s
# page; it skips without a browser): Debian's headless chromium and a font for the page's
# text, without chromium's desktop recommendations. Optional: a failure here is a note.
BROWSER_PACKAGES="chromium-headless-shell fonts-liberation"
missing=""
for p in $BROWSER_PACKAGES; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "setup: installing (browser test):$missing"
  { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing; } \
    || echo "setup: note: could not install$missing (optional; the browser test will skip)"
fi

# Optional tooling: the checkpoint interop test reads our files with Python's
# safetensors package (it skips, saying so, when the package is absent).
if ! python3 -c "import safetensors, numpy" >/dev/null 2>&1; then
  python3 -m pip install -q safetensors numpy >/dev/null 2>&1 \
    || python3 -m pip install -q --break-system-packages safetensors numpy >/dev/null 2>&1 \
    || echo "setup: note: could not install Python safetensors/numpy (optional; that test will skip)"
fi
# The TensorBoard test (tests/cli/test_tensorboard.c, python/tests/test_tensorboard.py)
# reads a run's event files with the tensorboard package's own reader; it skips without it.
if ! python3 -c "import tensorboard, numpy" >/dev/null 2>&1; then
  python3 -m pip install -q tensorboard numpy >/dev/null 2>&1 \
    || python3 -m pip install -q --break-system-packages tensorboard numpy >/dev/null 2>&1 \
    || echo "setup: note: could not install tensorboard (optional; its tests will skip)"
fi
# The Python package's tests (python/tests, ctest label "python"; issue 21): pytest,
# numpy and Gymnasium. PyTorch is left out on purpose (its wheels are gigabytes): the
# tests that need it skip, saying so, and their numpy equivalents run.
if ! python3 -c "import pytest, numpy, gymnasium" >/dev/null 2>&1; then
  python3 -m pip install -q pytest numpy "gymnasium>=1.1" >/dev/null 2>&1 \
    || python3 -m pip install -q --break-system-packages pytest numpy "gymnasium>=1.1" >/dev/null 2>&1 \
    || echo "setup: note: could not install pytest/numpy/gymnasium (the python tests will skip)"
fi
# `foxhunt sweep` (python/foxhunt/sweep.py, issue 23) searches with Optuna; its tests
# (python/tests/test_sweep.py) skip without it.
if ! python3 -c "import optuna" >/dev/null 2>&1; then
  python3 -m pip install -q optuna >/dev/null 2>&1 \
    || python3 -m pip install -q --break-system-packages optuna >/dev/null 2>&1 \
    || echo "setup: note: could not install optuna (foxhunt sweep and its tests need it)"
fi
# The sweep's space-file fuzzer (tests/fuzz/fuzz_sweep_space.py, ctest fuzz_sweep_space;
# issue 32) runs under atheris, libFuzzer for Python; it skips without it.
if ! python3 -c "import atheris" >/dev/null 2>&1; then
  python3 -m pip install -q atheris >/dev/null 2>&1 \
    || python3 -m pip install -q --break-system-packages atheris >/dev/null 2>&1 \
    || echo "setup: note: could not install atheris (optional; fuzz_sweep_space will skip)"
fi
echo "setup: done"
