#!/usr/bin/env bash
# python_gpu.sh — issue 21's GPU part, on a machine with a GPU and PyTorch (scripts/gpu-check.sh
# step python_gpu): the Python package's tests (test_gpu.py: the DLPack batch against
# `foxhunt collect --device cuda`; test_torch.py: checkpoints through PyTorch; the rest),
# the DLPack collection's timing beside `foxhunt bench`, and the examples.
#
#   BUILD=BUILD OUT=DIR [PY_TESTS="FILES"] [PY_TESTS_ONLY=1] bash scripts/python_gpu.sh
#
# pytest and gymnasium come from wheels in .deps/wheels (pip download here; the GPU machine
# has no registry) when the machine lacks them; they go to a private folder on PYTHONPATH.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:?build folder with foxhunt, libfoxhunt.so, vec_env_driver}
OUT=${OUT:-/tmp/foxhunt-python-gpu}
mkdir -p "$OUT"
if ! python3 -c 'import pytest, gymnasium' 2>/dev/null; then
  [ -d .deps/wheels ] || { echo "no pytest/gymnasium and no .deps/wheels"; exit 1; }
  python3 -m pip install -q --no-index --no-deps --target /tmp/fh-pylib .deps/wheels/*.whl || exit 1
  export PYTHONPATH=/tmp/fh-pylib:${PYTHONPATH:-}
fi
export PYTHONPATH=$PWD/python:${PYTHONPATH:-}
export FOXHUNT_LIB=$PWD/$BUILD/libfoxhunt.so FOXHUNT_BIN=$PWD/$BUILD/foxhunt
export FOXHUNT_DRIVER=$PWD/$BUILD/vec_env_driver
# a carried build is not where its rpath says: the driver finds libfoxhunt beside it
export LD_LIBRARY_PATH=$PWD/$BUILD:${LD_LIBRARY_PATH:-}
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available())'
rc=0
echo "== pytest python/tests (the GPU and PyTorch files included)"
python3 -m pytest -q -rs -p no:cacheprovider ${PY_TESTS:-python/tests --ignore=python/tests/test_sweep.py} \
  2>&1 | tee "$OUT/pytest.log" | tail -25
[ "${PIPESTATUS[0]}" = 0 ] || rc=1
[ -n "${PY_TESTS_ONLY:-}" ] && exit $rc
echo "== a checkpoint for the timing and the examples"
"$FOXHUNT_BIN" train --device cuda --episodes 256 --steps 64 --iterations 2 --eval-at-end 0 \
  --out /tmp/fh-py-ck --force >"$OUT/train_ck.log" 2>&1 || { tail "$OUT/train_ck.log"; exit 1; }
CK=/tmp/fh-py-ck/final.safetensors
echo "== dev/cuda/dlpack_vs_collect.py (where the DLPack batch and foxhunt collect differ)"
"$FOXHUNT_BIN" train --synthetic-bars 3000 --episodes 8 --steps 64 --iterations 2 --minibatch 128 \
  --epochs 2 --device cpu --threads 1 --eval-at-end 0 --seed 5 --out /tmp/fh-py-small --force >/dev/null
python3 dev/cuda/dlpack_vs_collect.py /tmp/fh-py-small/final.safetensors "$FOXHUNT_BIN" 2>&1 | tee "$OUT/dlpack_vs_collect.log" | tail -40
echo "== bench_gpu_collect.py (DLPack collection) beside foxhunt bench"
python3 python/bench_gpu_collect.py "$CK" --foxhunt "$FOXHUNT_BIN" --repeats 5 \
  2>&1 | tee "$OUT/bench_gpu_collect.log" | tail -20
[ "${PIPESTATUS[0]}" = 0 ] || rc=1
echo "== examples/python/check_logits.py"
python3 examples/python/check_logits.py "$CK" --foxhunt "$FOXHUNT_BIN" 2>&1 | tail -5
[ "${PIPESTATUS[0]}" = 0 ] || rc=1
echo "== examples/python/ppo_cleanrl.py (a short run)"
python3 examples/python/ppo_cleanrl.py --total-timesteps 65536 --out /tmp/fh-py-cleanrl.safetensors \
  2>&1 | tee "$OUT/ppo_cleanrl.log" | tail -8
[ "${PIPESTATUS[0]}" = 0 ] || rc=1
exit $rc
