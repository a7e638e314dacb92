#!/usr/bin/env bash
# wheel_check.sh — the README's install line, as a user runs it (issue 36): in a fresh
# venv, `pip install ./python` from the repository's root builds libfoxhunt with CMake
# (scikit-build-core, python/pyproject.toml) and bundles it in the wheel; then, from
# outside the checkout and with no FOXHUNT_LIB, `import foxhunt` must load the bundled
# library, step gymnasium.make_vec("foxhunt/Trading-v0") and train two iterations through
# foxhunt.train. `pip wheel ./python` must write a wheel holding foxhunt/libfoxhunt.so.
#
# The venv sees the system's site-packages only for numpy and Gymnasium, which
# scripts/setup.sh installs (so the test downloads no numpy); pip still fetches
# scikit-build-core into its isolated build environment, so without a reachable package
# index the test skips (exit 77) saying so. ctest: python_wheel, labels python, slow.
# usage: wheel_check.sh REPO_ROOT
set -euo pipefail
repo=$(cd "$1" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/fh_wheel.XXXXXX")
trap 'rm -rf "$work"' EXIT
unset FOXHUNT_LIB PYTHONPATH

if ! python3 -c "import numpy, gymnasium" 2>/dev/null; then
  echo "SKIP: numpy or gymnasium missing (bash scripts/setup.sh installs them)"; exit 77
fi
python3 -m venv --system-site-packages "$work/venv"
pip="$work/venv/bin/pip"
if ! "$pip" download -q --no-deps -d "$work/probe" "scikit-build-core>=0.10" >/dev/null 2>&1; then
  echo "SKIP: no package index reachable: pip fetches scikit-build-core to build the wheel"
  exit 77
fi

cd "$repo"
start=$(date +%s)
"$pip" install ./python > "$work/install.log" 2>&1 || { tail -40 "$work/install.log"; exit 1; }
echo "pip install ./python: $(( $(date +%s) - start )) s"

cd "$work"  # not the checkout: its python/foxhunt must not be the one imported
"$work/venv/bin/python" - "$work" <<'EOF'
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np

import foxhunt
from foxhunt import _lib

venv = Path(sys.argv[1]) / "venv"
pkg = Path(foxhunt.__file__).resolve().parent
lib = Path(_lib.library_path()).resolve()
print(foxhunt.build_info())
assert venv.resolve() in pkg.parents, f"foxhunt imported from {pkg}, not the venv"
assert lib == pkg / "libfoxhunt.so", f"loaded {lib}, not the wheel's library"

env = gym.make_vec("foxhunt/Trading-v0", num_envs=8, seed=1, synthetic_bars=3000)
assert isinstance(env, foxhunt.VectorEnv)
obs, _ = env.reset(seed=1)
for _ in range(50):
    obs, r, term, trunc, info = env.step(np.arange(8, dtype=np.int32))
assert obs.shape == (8, foxhunt.STATE_DIM) and np.isfinite(obs).all() and np.isfinite(r).all()
env.close()

rows = []
res = foxhunt.train(synthetic_bars=3000, episodes=8, steps=32, minibatch=64, iterations=2,
                    device="cpu", threads=1, eval_at_end=0, seed=1,
                    out=str(Path(sys.argv[1]) / "run"), callback=rows.append)
assert res.iteration == 2 and [r["iteration"] for r in rows] == [1, 2], rows
assert (res.out / "metrics.csv").is_file() and res.checkpoint.name == "final.safetensors"
print("imported from the wheel, stepped make_vec, trained", res.iteration, "iterations")
EOF

cd "$repo"
"$pip" wheel -q --no-deps -w "$work/wheels" ./python > "$work/wheel.log" 2>&1 \
  || { tail -40 "$work/wheel.log"; exit 1; }
"$work/venv/bin/python" - "$work/wheels" <<'EOF'
import sys, zipfile
from pathlib import Path
wheels = list(Path(sys.argv[1]).glob("foxhunt-*.whl"))
assert len(wheels) == 1, wheels
names = zipfile.ZipFile(wheels[0]).namelist()
assert "foxhunt/libfoxhunt.so" in names and "foxhunt/env.py" in names, names
print(f"pip wheel ./python: {wheels[0].name} holds foxhunt/libfoxhunt.so")
EOF
echo "PASS"
