#!/usr/bin/env bash
# q_learning_sweep.sh — many short test_learning runs in parallel on a many-core machine
# (the device machine's 16 CPU cores), scored on the VALIDATION split only (issue 18's
# DQN/PQN settings; the test split is read once, for the chosen point).
#
# usage: BIN=build-carry/tests/rl/test_learning OUT=dir JOBS=8 THREADS=2 SEEDS="1 2" \
#        dev/sweeps/q_learning_sweep.sh POINTS_FILE
# POINTS_FILE: one point a line, "name key=value key=value ..." (test_learning overrides;
# a config=FILE.ini goes first, as test_learning takes it only as its first argument).
# Prints one line per point: the validation Sharpe of each seed and their mean.
set -euo pipefail
points=${1:?points file}
BIN=${BIN:-build-u/tests/rl/test_learning}
OUT=${OUT:-/tmp/q_sweep}
JOBS=${JOBS:-8}
THREADS=${THREADS:-2}
SEEDS=${SEEDS:-"1 2"}
mkdir -p "$OUT"
export FOXHUNT_SOURCE_DIR=${FOXHUNT_SOURCE_DIR:-$PWD}
jobs_file=$OUT/jobs.txt
: > "$jobs_file"
while read -r name rest; do
    [[ -z "$name" || "$name" == \#* ]] && continue
    for s in $SEEDS; do
        echo "$name $s $rest" >> "$jobs_file"
    done
done < "$points"
run_one() {
    local name=$1 seed=$2
    shift 2
    "$BIN" "$@" seeds=1 first_seed="$seed" threads="$THREADS" > "$OUT/$name.seed$seed.log" 2>&1 || true
}
export -f run_one
export BIN OUT THREADS
xargs -P "$JOBS" -L 1 bash -c 'run_one "$@"' _ < "$jobs_file"
printf '%-28s %s\n' point "validation Sharpe by seed (mean)"
while read -r name rest; do
    [[ -z "$name" || "$name" == \#* ]] && continue
    vals=() sum=0 n=0
    for s in $SEEDS; do
        v=$(grep -o 'greedy Sharpe [-0-9.nan]*' "$OUT/$name.seed$s.log" 2>/dev/null | tail -1 | awk '{print $3}')
        v=${v:-fail}
        vals+=("$v")
        if [[ "$v" != fail && "$v" != nan ]]; then sum=$(awk -v a="$sum" -v b="$v" 'BEGIN{print a+b}'); n=$((n+1)); fi
    done
    mean=$(awk -v a="$sum" -v n="$n" 'BEGIN{if(n) printf "%.2f", a/n; else print "-"}')
    printf '%-28s %s (%s)\n' "$name" "${vals[*]}" "$mean"
done < "$points"
