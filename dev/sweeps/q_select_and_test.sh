#!/usr/bin/env bash
# q_select_and_test.sh SWEEP_OUTPUT POINTS_FILE PREFIX... — the selection rule of the
# Q-learning sweeps, applied without a human in the loop: for each PREFIX (e.g. "c0_pqn"'s
# family "pqn"), the point of POINTS_FILE whose name contains _PREFIX and whose mean
# VALIDATION Sharpe in SWEEP_OUTPUT (q_learning_sweep.sh's table) is highest, then the
# learning test on the TEST split with that point's settings, seeds 1-3 (BIN, as the sweep).
set -uo pipefail
table=${1:?sweep output} points=${2:?points file}
shift 2
BIN=${BIN:-build-u/tests/rl/test_learning}
export FOXHUNT_SOURCE_DIR=${FOXHUNT_SOURCE_DIR:-$PWD}
rc=0
for family in "$@"; do
  best=$(grep "_${family}" "$table" | grep -v '(-)' |
         sed -E 's/^([^ ]+) .*\((-?[0-9.]+)\)$/\2 \1/' | sort -g | tail -1 | awk '{print $2}')
  [ -n "$best" ] || { echo "$family: no finished point"; rc=1; continue; }
  args=$(awk -v n="$best" '$1 == n { $1 = ""; print }' "$points")
  echo "== $family: chosen on validation: $best ($args); the learning test on the test split"
  # shellcheck disable=SC2086
  "$BIN" $args seeds=3 || rc=1
done
exit $rc
